"""What ``adapt`` leaves on disk: each round a checkpoint, so that a killed run resumes.

    OUT/config.json, model.safetensors, sentencepiece.model
                                  the encoder of the best round (``--encoder ckpt:OUT``)
    OUT/adapt_log.jsonl           one line per round: pairs, their change, the estimate, minutes
    OUT/rounds/round-NNN.tsv      the pairs round NNN mined and kept (score, source, target): the
                                  training pairs of round NNN+1
    OUT/state/run.json            the run's settings and pools, checked on --resume
    OUT/state/round-NNN.json      round NNN's record; written last, so a round with one is whole
    OUT/state/round-NNN.npz       its pairs as rows of the pools
    OUT/state/round-NNN.safetensors   its head's weights (round 000: the starting encoder's)
    OUT/state/*.npy, *.json       sentence features of the pools and replay pairs (``features``)

A round is done once its record exists; a run killed during a round does that round
again. No pickle: tensors in safetensors, arrays in .npz, the rest JSON.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import (
    atomic_path,
    atomic_text_writer,
    prepare_output_dir,
    refuse_other_files,
    remove_stale_temporaries,
    save_json,
)

log = logging.getLogger(__name__)

LOG = "adapt_log.jsonl"
STATE = "state"
ROUNDS = "rounds"
RUN = "run.json"


@dataclass
class RoundRecord:
    """One round, as the log prints it. Round 0 is the starting encoder (nothing trained)."""

    round: int
    pairs: int  # mined at the round's threshold
    kept: int  # of those, what the filter kept: the next round's training pairs
    added: int  # kept pairs the previous round did not keep
    dropped: int  # kept pairs of the previous round this one does not keep
    threshold: float | None  # None: mine chose none (it found no translations)
    threshold_reason: str
    # the best F1 over thresholds that the no-gold estimate sees on the whole pools; from round 1
    # on it is self-scored (see self_scored_share) and flatters the round
    estimated_f1: float | None
    trained_pairs: int  # pairs the round's model was trained on (0 for round 0)
    # share of this round's kept pairs that its model was trained on: those are scored by a
    # model trained on them (self-confirmation), so their scores and the estimate flatter them
    self_scored_share: float
    # the estimate on the pools without the sentences of every pair trained on so far (the
    # held-out pools), with this round's model and with the previous round's: what the
    # training did to sentences it never saw as pairs
    held_out_f1: float | None = None
    held_out_f1_before: float | None = None
    held_out_sentences: tuple[int, int] = (0, 0)
    # how mine chose the threshold (adaptive, fallback, none: no translations found, nothing kept)
    threshold_source: str = ""
    # False where the estimate saw no group of translations (nothing kept, or the encoder's own
    # threshold): no pairs are trained on, as where mine keeps none
    translations_seen: bool = True
    # round 0: the share of the source sentences held out (--held-out, raised where round 0's
    # estimate counts too few translations for the held-out pools to show some); None: --held-out
    held_out_share: float | None = None
    losses: dict = field(default_factory=dict)  # the mean of each loss over the round's last steps
    seconds: float = 0.0  # this round
    minutes_total: float = 0.0  # since the command started, this round included

    def line(self) -> str:
        """The progress line of the round."""
        def f1(value: float | None) -> str:
            return "n/a" if value is None else f"{100 * value:.1f}"

        if not self.round:
            return (f"round 0: {self.kept} pairs kept of {self.pairs} mined, estimated F1 {f1(self.estimated_f1)}, "
                    f"{self.seconds / 60:.1f} min ({self.minutes_total:.1f} total)")
        return (f"round {self.round}: {self.kept} pairs kept of {self.pairs} mined (+{self.added} -{self.dropped}), "
                f"trained on {self.trained_pairs}; estimated F1 {f1(self.estimated_f1)} self-scored "
                f"({100 * self.self_scored_share:.0f} % of the pairs were trained on), held out "
                f"{f1(self.held_out_f1_before)} -> {f1(self.held_out_f1)}; {self.seconds / 60:.1f} min "
                f"({self.minutes_total:.1f} total)")


class AdaptState:
    """The rounds in ``out_dir``; only what a whole round left counts."""

    def __init__(self, out_dir: Path):
        self.out_dir = Path(out_dir)
        self.state = self.out_dir / STATE

    def _path(self, number: int, suffix: str) -> Path:
        return self.state / f"round-{number:03d}{suffix}"

    def rounds(self) -> list[RoundRecord]:
        """The finished rounds, 0, 1, ... up to the first one missing a file."""
        done = []
        while all(self._path(len(done), s).is_file() for s in (".json", ".npz", ".safetensors")):
            path = self._path(len(done), ".json")
            data = _read_state(path)
            try:
                data["held_out_sentences"] = tuple(data.get("held_out_sentences", (0, 0)))
                done.append(RoundRecord(**data))
            except (TypeError, ValueError) as e:
                raise _damaged(path, e) from None
        return done

    def check_run(self, run: dict, resume: bool, restart_on_change: bool = False) -> bool:
        """Whether a run in ``out_dir`` is continued; refuses to mix two runs, or with
        ``restart_on_change`` (a pipeline's task, whose settings or pools changed) clears the old
        one. A folder of other files is refused, so that a checkpoint (the encoder adapted
        from, say) is never written over."""
        saved = self.state / RUN
        if not saved.is_file():
            refuse_other_files(self.out_dir, "adapt run", "give an empty or new -o")
            if resume and not restart_on_change:
                log.warning("%s: no adapt run to resume: starting one", self.out_dir)
            return False
        if not resume:
            raise BitextmineError("already holds an adapt run: use --resume to continue it, or another -o",
                                  path=self.out_dir)
        before = _read_state(saved)
        run = json.loads(json.dumps(run))  # as it was saved: tuples are lists
        if before != run:
            changed = sorted(k for k in {*before, *run} if before.get(k) != run.get(k))
            if restart_on_change:
                log.info("%s: encoder, pools or settings changed (%s): adapting again", self.out_dir,
                         ", ".join(changed))
                self.clear()
                return False
            raise BitextmineError(f"--resume with different encoder, pools or settings ({', '.join(changed)})",
                                  path=self.out_dir)
        return True

    def clear(self) -> None:
        """Everything a run left in ``out_dir`` (the folder is this run's: it held its run.json)."""
        for path in self.out_dir.iterdir():
            if path.name.startswith("."):
                continue  # the lock held now
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()

    def start(self, run: dict) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        save_json(self.state / RUN, run)

    def save_round(self, record: RoundRecord, head: dict[str, torch.Tensor], pairs: dict[str, np.ndarray],
                   texts: tuple[list[str], list[str]]) -> None:
        """The round's pairs and head, then its record (what makes the round count as done)."""
        from bitextmine.encoders.checkpoint import save_tensors

        with atomic_path(self._path(record.round, ".npz")) as tmp, open(tmp, "wb") as f:
            np.savez(f, **pairs)
        save_tensors(head, self._path(record.round, ".safetensors"))
        (self.out_dir / ROUNDS).mkdir(parents=True, exist_ok=True)
        with atomic_text_writer(self.out_dir / ROUNDS / f"round-{record.round:03d}.tsv") as out:
            for score, s, t in zip(pairs["score"].tolist(), pairs["src"].tolist(), pairs["tgt"].tolist(), strict=True):
                out.write(f"{score:.6f}\t{texts[0][s].replace(chr(9), ' ')}\t{texts[1][t].replace(chr(9), ' ')}\n")
        save_json(self._path(record.round, ".json"), asdict(record))
        self._log(record)

    def _log(self, record: RoundRecord) -> None:
        """The log again from the round records, so that a redone round is not logged twice."""
        lines = [json.dumps(asdict(r)) + "\n" for r in self.rounds()]
        with atomic_path(self.out_dir / LOG) as tmp:
            tmp.write_text("".join(lines), encoding="utf-8")

    def pairs(self, number: int) -> dict[str, np.ndarray]:
        path = self._path(number, ".npz")
        try:
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
            raise _damaged(path, e) from None

    def head(self, number: int) -> dict[str, torch.Tensor]:
        from bitextmine.encoders.checkpoint import load_tensors

        return load_tensors(self._path(number, ".safetensors"))


def _damaged(path: Path, error: BaseException) -> BitextmineError:
    return BitextmineError(f"damaged adapt state ({error}); remove the folder's state/ to adapt again from the "
                           "start", path=path)


def _read_state(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        raise _damaged(path, e) from None
    if not isinstance(data, dict):
        raise _damaged(path, "not a JSON object")
    return data


@contextlib.contextmanager
def claimed_output(out_dir: Path) -> Iterator[AdaptState]:
    """Hold ``out_dir`` for the run (``DIR/.bitextmine.lock``); temporaries a killed run left are
    removed; a directory this run made and left empty is removed on failure."""
    from bitextmine.io.lock import output_lock

    created = prepare_output_dir(out_dir)
    try:
        with output_lock(out_dir, directory=True):
            for directory in (out_dir, out_dir / STATE, out_dir / ROUNDS):
                if directory.is_dir():
                    remove_stale_temporaries(directory)
            yield AdaptState(out_dir)
    except BaseException:
        if created and out_dir.is_dir() and not any(out_dir.iterdir()):
            out_dir.rmdir()
        raise


__all__ = ["AdaptState", "RoundRecord", "claimed_output"]
