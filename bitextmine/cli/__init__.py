"""The ``bitextmine`` command: one thin typer module per verb, composed here.

Commands only parse options, call the library and write results. Library code raises
``BitextmineError``; ``main`` turns it into one line on stderr and exit status 1. Usage
errors (an unknown option, a bad value) are typer's: the usage line, the error, exit 2.
The verbs import the library inside their functions, so that `bitextmine --help` and a usage
error take 0.15 s, not the library's 0.75 s (ARCHITECTURE.md, start-up).
"""

from __future__ import annotations

import logging
import signal
import sys
import warnings
from typing import Annotated

import typer

from bitextmine import __version__
from bitextmine.cli import (
    adapt,
    calibrate,
    doctor,
    embed,
    evaluate,
    filter,
    index,
    mine,
    prepare,
    report,
    run,
    score_pairs,
    train,
)
from bitextmine.cli.logs import setup_logging
from bitextmine.cli.options import Group, Interrupted, echo
from bitextmine.errors import BitextmineError, BitextmineWarning, Terminated, printable

app = typer.Typer(
    name="bitextmine",
    cls=Group,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    rich_markup_mode="rich",
    epilog="""\b
Example (the bundled German-English sample):
    bitextmine embed examples/de-en/de.txt -o out/de
    bitextmine embed examples/de-en/en.txt -o out/en
    bitextmine mine --src out/de --tgt out/en -o out/pairs.tsv""",
)
for verb in (prepare, embed, index, mine, filter, score_pairs, report, calibrate, doctor, run, train, adapt):
    app.add_typer(verb.app)
app.add_typer(evaluate.app, name="eval")


def _version(value: bool) -> None:
    if value:
        echo(f"bitextmine {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Mine parallel sentences (bitext) from monolingual corpora.

    Pipeline: prepare -> embed -> index -> mine -> filter; eval measures, adapt trains on the pools.
    """


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") convention
    return 1


def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
    """Our warnings as messages (``bitextmine: ...``); other packages' as Python shows them."""
    if issubclass(category, BitextmineWarning):
        logging.getLogger("bitextmine").warning("%s", message)
    else:
        _default(message, category, filename, lineno, file, line)


def main(argv: list[str] | None = None) -> int:
    """Run ``bitextmine ARGV``; return the exit status (the process's signals left as they are)."""
    try:
        with warnings.catch_warnings():  # --strict turns ours into errors for this command only
            warnings.simplefilter("always", BitextmineWarning)
            warnings.showwarning = _show_warning
            setup_logging(quiet=True)  # warnings have their handler from the start; a verb may say more
            # standalone mode: typer itself reports usage errors (exit 2), --help and --version
            app(args=argv, prog_name="bitextmine")
    except SystemExit as e:
        return _exit_status(e.code)
    except BitextmineError as e:
        print(f"bitextmine: error: {e}", file=sys.stderr)
        return 1
    except BitextmineWarning as e:
        print(f"bitextmine: error: {e} (--strict)", file=sys.stderr)
        return 1
    except OSError as e:  # a file the library opened: missing, unwritable, a full disk
        where = f"{printable(str(e.filename))}: " if e.filename else ""
        print(f"bitextmine: error: {where}{(e.strerror or str(e)).lower()}", file=sys.stderr)
        return 1
    except (Interrupted, KeyboardInterrupt) as e:
        status = Interrupted.of(e).status
        print(f"bitextmine: {'terminated' if status == 128 + signal.SIGTERM else 'interrupted'}", file=sys.stderr)
        return status
    return 0


def _terminated(signum, frame):
    raise Terminated


def entry_point() -> None:
    # `bitextmine mine ... | head` should end quietly, not with a BrokenPipeError; set here, for
    # the process, not in main(): a caller running main() in-process (tests) keeps Python's own
    # SIGPIPE handling, without which a write to a dead worker's pipe would kill it
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # SIGTERM (timeout, Slurm, Kubernetes) ends a command as Ctrl-C does: its temporary files
    # and locks go, status 143; where it was inherited as ignored, it stays so
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminated)
    sys.exit(main())
