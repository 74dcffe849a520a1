"""An encoder from another package, plugged in through the ``bitextmine.encoders`` entry points:
it declares its own languages and mining thresholds, and `mine` uses them."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.conftest import EXAMPLES, read_lines

TOY = '''
import zlib

import numpy as np

from bitextmine.encoders.base import Encoder, MiningThresholds


class ToyEncoder(Encoder):
    """Character bigrams hashed into 64 dimensions: texts that share their letters are near."""

    name = "toy"
    dim = 64
    languages = ("de", "en")
    mining_thresholds = MiningThresholds({"cosine": 0.85, "ratio": 1.5}, "by hand, for a test")

    @property
    def identity(self):
        return self.declared_identity(version="toy-encoder==0.1", weights_sha256="7" * 64)

    def tokenize(self, texts):
        return [[zlib.crc32(t[i:i + 2].lower().encode()) % self.dim for i in range(len(t) - 1)] for t in texts]

    def embed_token_batch(self, batch):
        rows = np.zeros((len(batch), self.dim), dtype=np.float32)
        for row, ids in zip(rows, batch):
            np.add.at(row, ids, 1.0)
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)


class PlainToyEncoder(ToyEncoder):
    """The same vectors from an encoder that declares nothing."""

    name = "toy-plain"
    languages = None
    mining_thresholds = None


def factory(argument, device, precision):
    return ToyEncoder(device=device, precision=precision)


def plain_factory(argument, device, precision):
    return PlainToyEncoder(device=device, precision=precision)
'''


@pytest.fixture
def toy_plugin(tmp_path, monkeypatch):
    """A package ``toy-encoder`` installed on ``sys.path``: its module and its dist-info with the entry point."""
    site = tmp_path / "site"
    (site / "toy_encoder-0.1.dist-info").mkdir(parents=True)
    (site / "toy_encoder.py").write_text(textwrap.dedent(TOY), encoding="utf-8")
    (site / "toy_encoder-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-encoder\n"
                                                                  "Version: 0.1\n", encoding="utf-8")
    (site / "toy_encoder-0.1.dist-info" / "entry_points.txt").write_text(
        "[bitextmine.encoders]\ntoy = toy_encoder:factory\ntoy-plain = toy_encoder:plain_factory\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    yield "toy"


def test_a_plugin_encoder_declares_the_thresholds_mine_falls_back_to(cli, tmp_path, toy_plugin):
    """German against English: the toy finds no translation, so `mine` says so and falls back to
    the threshold the plugin declares (the sets record it): the declared 0.85 cosine keeps
    nothing; an encoder that declares nothing keeps nothing (LASER's 0.6 is not used)."""
    from bitextmine.embed.corpus import EmbeddingCorpus
    from bitextmine.mine.thresholds import fixed_threshold

    for name in ("de", "en"):
        (tmp_path / f"{name}.txt").write_text("".join(f"{x}\n" for x in read_lines(EXAMPLES / f"{name}.txt")[:300]),
                                               encoding="utf-8")

    def mine(encoder: str) -> tuple[int, dict, float]:
        for side in ("de", "en"):
            result = cli("embed", tmp_path / f"{side}.txt", "-o", tmp_path / encoder / side, "--encoder", encoder,
                         "--device", "cpu", "-q")
            assert result.exit_code == 0, result.stderr
        out = tmp_path / encoder / "pairs.tsv"
        result = cli("mine", "--src", tmp_path / encoder / "de", "--tgt", tmp_path / encoder / "en", "-o", out,
                     "--score", "cosine", "--device", "cpu", "-q")
        assert result.exit_code == 0, result.stderr
        identities = [EmbeddingCorpus.load([tmp_path / encoder / side]).encoder for side in ("de", "en")]
        return (len(out.read_text(encoding="utf-8").splitlines()), json.loads(out.with_suffix(".tsv.json").read_text()),
                fixed_threshold("cosine", *identities))

    pairs, sidecar, fixed = mine("toy")
    assert sidecar["encoder"]["languages"] == ["de", "en"]
    assert sidecar["encoder"]["mining_thresholds"] == {"scores": {"cosine": 0.85, "ratio": 1.5},
                                                       "measured": "by hand, for a test"}
    # no group of translations: the threshold the encoder declares, which keeps none of them
    assert pairs == 0 and sidecar["parameters"]["threshold"] == 0.85
    assert sidecar["parameters"]["threshold_source"].startswith("encoder default (fixed)")
    assert "show no group of translations" in sidecar["threshold_warning"]
    assert fixed == (0.85, "encoder default (fixed)")
    plain_pairs, plain, plain_fixed = mine("toy-plain")
    assert "mining_thresholds" not in plain["encoder"] and "languages" not in plain["encoder"]
    assert plain_fixed == (0.6, "LASER-scale default (fixed)")
    # an encoder that declares none: nothing kept, rather than LASER's threshold
    assert plain_pairs == 0 and plain["parameters"]["threshold"] is None
    assert "no translations found" in plain["threshold_warning"]


def test_a_plugin_encoder_is_listed_and_loaded_by_its_kind(toy_plugin):
    from bitextmine.encoders import check_encoder_spec, load_encoder
    from bitextmine.mine.thresholds import fixed_threshold

    assert check_encoder_spec("toy") == "toy"
    identity = load_encoder("toy").identity
    assert identity.languages == ("de", "en")
    assert fixed_threshold("ratio", identity) == (1.5, "encoder default (fixed)")
    assert fixed_threshold("distance", identity)[1] == "LASER-scale default (fixed)"  # a score it left out
