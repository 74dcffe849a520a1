"""Sentence encoders behind one interface (``base``), looked up by name (``registry``);
what a recorded identity declares (``declarations``).

``usem3`` (the default, ``usem3``), ``ckpt:DIR`` (``checkpoint``, networks in
``transformer``), ``hf:NAME`` (``huggingface``) and plugins registered under the
``bitextmine.encoders`` entry points; tokenizers in ``pieces``, vocabulary extension in
``vocabulary``. Each encoder declares its languages and mining thresholds on its identity.
"""

from bitextmine.encoders.base import Encoder, EncoderIdentity, MiningThresholds
from bitextmine.encoders.declarations import shared_thresholds, with_declarations
from bitextmine.encoders.registry import BUILTIN, EncoderFactory, check_encoder_spec, load_encoder

__all__ = ["BUILTIN", "Encoder", "EncoderFactory", "EncoderIdentity", "MiningThresholds", "check_encoder_spec",
           "load_encoder", "shared_thresholds", "with_declarations"]
