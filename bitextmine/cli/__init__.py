"""The ``bitextmine`` command: one thin typer module per verb, composed here.

Commands only parse options, call the library and write results. Library code raises
``BitextmineError``; ``main`` turns it into one line on stderr and exit status 1
(usage errors exit 2).
"""

from __future__ import annotations

import logging
import signal
import sys

import click
import typer

from bitextmine import __version__
from bitextmine.cli import calibrate, doctor, embed, evaluate, filter, index, mine, report, run, score_pairs, train
from bitextmine.errors import BitextmineError

app = typer.Typer(
    name="bitextmine",
    help="Mine parallel sentences (bitext) from monolingual corpora.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(embed.app)
app.add_typer(index.app)
app.add_typer(mine.app)
app.add_typer(filter.app)
app.add_typer(score_pairs.app)
app.add_typer(report.app)
app.add_typer(calibrate.app)
app.add_typer(doctor.app)
app.add_typer(run.app)
app.add_typer(evaluate.app, name="eval")
app.add_typer(train.app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"bitextmine {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Mine parallel sentences (bitext) from monolingual corpora.

    Pipeline: embed -> index -> mine -> filter; eval measures the result.
    """


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (it may be redirected later)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def setup_logging(quiet: bool) -> None:
    """Messages to stderr; --quiet keeps warnings and errors only."""
    logger = logging.getLogger("bitextmine")
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("bitextmine: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.INFO)


def main(argv: list[str] | None = None) -> int:
    # `bitextmine mine ... | head` should end quietly, not with a BrokenPipeError
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        result = app(args=argv, prog_name="bitextmine", standalone_mode=False)
        return result if isinstance(result, int) else 0
    except BitextmineError as e:
        print(f"bitextmine: error: {e}", file=sys.stderr)
        return 1
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.ClickException as e:  # usage errors: unknown option, missing argument
        e.show()
        return e.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        print("bitextmine: interrupted", file=sys.stderr)
        return 130


def entry_point() -> None:
    sys.exit(main())
