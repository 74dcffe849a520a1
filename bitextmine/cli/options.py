"""What the commands share: option types, JSON and table output (the filter options: ``filter_options``).

Options are declared once here as ``Annotated`` types, so that every verb spells, checks
and documents them alike: ``--json FILE`` (``-`` for stdout), ``-q/--quiet``, ``--device``,
``--score`` and the closed choices of ``bitextmine.choices``.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import math
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from bitextmine import defaults
from bitextmine.choices import Retrieval, Score
from bitextmine.errors import Terminated


def _plain_metavars(params: list) -> list:
    """Help shows flags without a metavar and arguments by their metavar alone.

    Typer versions differ here: some print Python types (``<bool>``, ``<str>``,
    ``<list[str]>``) beside them, from ``display_type_rich`` (0.29) or from the type's
    ``get_metavar`` (0.28).
    """
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        if param.param_type_name != "argument" or param.metavar is None or getattr(param, "_plain", False):
            continue
        param._plain = True
        param.display_type_rich = lambda ctx: None
        if getattr(param, "type", None) is not None:
            param.type = copy.copy(param.type)
            param.type.get_metavar = lambda *args, **kwargs: ""
    return params


# the options of LASER's mine_bitexts.py that users bring, and where bitextmine has them
LASER_OPTIONS = {
    "--margin": "--score ratio, distance, or cosine (LASER's absolute)",
    "--neighborhood": "-k",
    "--mode": "the verb: bitextmine mine mines, bitextmine score-pairs scores given pairs",
    "--gpu": "--device cuda, or auto to use a GPU when there is one",
    "--unify": "nothing to give, identical sentences are always searched once",
    "--encoding": "nothing to give, text is read as UTF-8 (--errors replace maps invalid bytes)",
}


def reflowed(help_text: str | None) -> str | None:
    """Help prose with the docstring's line breaks joined, paragraph by paragraph.

    Typer 0.29 keeps single line breaks after the first paragraph, so text wrapped in the
    source wraps again at the terminal's width into ragged lines. Paragraphs that start
    with ``\\b`` (examples) keep their lines.
    """
    if not help_text:
        return help_text
    paragraphs = inspect.cleandoc(help_text).split("\n\n")
    return "\n\n".join(
        p if p.startswith("\b") else " ".join(line.strip() for line in p.splitlines()) for p in paragraphs
    )


class _ReflowedHelp:
    """A command or group whose help prose is ``reflowed``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.help = reflowed(self.help)


class Command(_ReflowedHelp, TyperCommand):
    help_panel: str | None = None  # the help panel --help is listed in (None: Options)

    def get_params(self, ctx):
        return _plain_metavars(super().get_params(ctx))

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None and self.help_panel:
            option.rich_help_panel = self.help_panel
        return option

    def parse_args(self, ctx, args):
        """An unknown option that LASER users know is answered with bitextmine's name for it."""
        try:
            return super().parse_args(ctx, args)
        except Exception as e:
            name = getattr(e, "option_name", None)
            if type(e).__name__ == "NoSuchOption" and name in LASER_OPTIONS:
                e.message = f"No such option: {name} (LASER's; here: {LASER_OPTIONS[name]})"
                e.possibilities = []
            raise


class Group(_ReflowedHelp, TyperGroup):
    """A group of verbs: plain metavars, and Ctrl-C carried out as ``Interrupted``."""

    def get_params(self, ctx):
        return _plain_metavars(super().get_params(ctx))

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            raise Interrupted.of(e) from None


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM) inside a command, carried past the typer versions' differing handling of it."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signum)
        self.status = 128 + signum  # as a shell reports a command the signal ended

    @classmethod
    def of(cls, interrupt: BaseException) -> Interrupted:
        if isinstance(interrupt, Interrupted):
            return interrupt
        return cls(signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT)


def command(app: typer.Typer, name: str | None = None, help_panel: str | None = None, **kwargs):
    """``app.command`` with this package's command class; ``help_panel``: where --help is listed."""
    cls = type("PanelledCommand", (Command,), {"help_panel": help_panel}) if help_panel else Command
    return app.command(name, cls=cls, **kwargs)


# --- checks the parser runs (a bad value is a usage error, exit 2) -------------------------

def finite(value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def length_ratio_value(value: float) -> float:
    """--length-ratio checked as ``MineConfig`` checks it, as a usage error."""
    from bitextmine.errors import BitextmineError
    from bitextmine.mine.config import check_length_ratio

    try:
        check_length_ratio(value)
    except BitextmineError as e:
        raise typer.BadParameter(e.message.removeprefix("--length-ratio ")) from None
    return value


def device_spec(value: str) -> str:
    from bitextmine.devices import check_device_spec
    from bitextmine.errors import BitextmineError

    try:
        return check_device_spec(value)
    except BitextmineError as e:
        raise typer.BadParameter(e.message) from None


def encoder_name(value: str | None) -> str | None:
    """An encoder of a known kind (``usem3``, ``ckpt:DIR``, ``hf:NAME``, a plugin), or None."""
    from bitextmine.encoders import check_encoder_spec
    from bitextmine.errors import BitextmineError

    if value is None:
        return None
    try:
        return check_encoder_spec(value)
    except BitextmineError as e:
        raise typer.BadParameter(e.message) from None


def encoder_option(help: str = "usem3, ckpt:DIR, hf:NAME_OR_DIR, or a plugin name.", **more):
    return Annotated[str, typer.Option(metavar="NAME", callback=encoder_name, help=help, **more)]


def language_code(value: str | None) -> str | None:
    """An ISO 639 code the language tables know (checked before any work), or None."""
    from bitextmine.errors import BitextmineError
    from bitextmine.languages import language_key

    if value is None:
        return None
    try:
        language_key(value, "--lang")
    except BitextmineError as e:
        raise typer.BadParameter(e.message.removeprefix("--lang: ")) from None
    return value


def named(value):
    """A path the user names for writing: an empty one ('') would mean the working directory."""
    if value is not None and not str(value).strip():
        raise typer.BadParameter("is empty: name a file or directory (- for standard output, where it can be)")
    return value


def named_directory(value):
    """A directory the user names for writing: not '' (see ``named``), not standard output."""
    if named(value) == "-":
        raise typer.BadParameter("is a directory here: standard output (-) cannot hold it; name a directory")
    return value


def share(value: float | None) -> float | None:
    """A share strictly between 0 and 1 (0.9 for 90 %)."""
    if value is not None and not 0 < value < 1:
        raise typer.BadParameter(f"is a share in (0, 1), such as 0.9 for 90%, not {value:g}")
    return value


def usage_error(message: str, option: str | None = None) -> typer.BadParameter:
    """An error in how the command was called: reported with the usage line, exit status 2."""
    return typer.BadParameter(message, param_hint=option)


# --- options shared by several verbs -------------------------------------------------------

def quiet_option(**more):
    return Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars, info messages or FAISS warnings.",
                                        **more)]


Quiet = quiet_option()


def _strict(value: bool) -> bool:
    """--strict: this command's warnings about its input are errors (raised where they arise,
    before an output is renamed into place; ``main`` restores the filters afterwards)."""
    if value:
        import warnings

        from bitextmine.errors import BitextmineWarning

        warnings.simplefilter("error", BitextmineWarning)
    return value


def strict_option(warnings_of: str):
    """--strict, its help naming the warnings this command gives (``warnings_of``)."""
    return Annotated[bool, typer.Option(
        "--strict", callback=_strict,
        help=f"Treat a warning about the input ({warnings_of}) as an error: exit 1, write nothing.")]
JSON_HELP = "Write the results as JSON to FILE (- for standard output)."


def json_option(help: str = JSON_HELP, **more):
    return Annotated[str | None, typer.Option("--json", metavar="FILE", help=help, show_default=False,
                                              callback=named, **more)]


def output_option(help: str, metavar: str = "FILE", **more):
    """``-o/--output``: a file (or ``-``) or, with metavar DIR, a directory to write; '' is refused."""
    return Annotated[str, typer.Option("--output", "-o", metavar=metavar, show_default=False,
                                       callback=named_directory if metavar == "DIR" else named, help=help, **more)]


def device_option(help: str = "auto (the first visible GPU, else the CPU), cpu, cuda or cuda:N.", **more):
    return Annotated[str, typer.Option(metavar="auto|cpu|cuda[:N]", callback=device_spec, help=help, **more)]


def target_precision_option(help: str, **more):
    """``--target-precision``: one range on every verb, (0, 1) as the library checks it."""
    return Annotated[float, typer.Option(metavar="P", callback=share, help=help, **more)]


def k_option(**more):
    return Annotated[int, typer.Option("-k", "--k", metavar="N", min=1, help="Neighbours that define the margin.",
                                       **more)]


def score_option(**more):
    return Annotated[Score, typer.Option(
        "--score", help="ratio or distance margin, or plain cosine (absolute is the same as cosine).", **more)]


def retrieval_option(**more):
    return Annotated[Retrieval, typer.Option(
        help="max: greedy one-to-one over both directions; union, intersect (mutual best), fwd or bwd.", **more)]


MarginAlias = Annotated[Score | None, typer.Option("--margin", hidden=True, help="Old name of --score.")]


def score_of(score: Score, margin_alias: Score | None) -> str:
    """The score to use: the hidden old option ``--margin`` where given, unless ``--score``
    names another than the default (two scores asked for are a usage error)."""
    if margin_alias is not None and score.value not in (margin_alias.value, defaults.SCORE):
        raise usage_error(f"--score {score.value} and --margin {margin_alias.value} (the old name of --score) "
                          "disagree: give one", "--score")
    return (margin_alias or score).value


def given_flags(ctx: typer.Context, names) -> list[str]:
    """The flags of the parameters ``names`` that the command line gave (not their defaults)."""
    return [param.opts[0] for param in ctx.command.params
            if param.name in names and getattr(ctx.get_parameter_source(param.name), "name", "") == "COMMANDLINE"]


# --- writing results -----------------------------------------------------------------------

def check_json_output(json_out: str | None, inputs: list, outputs: list = ()) -> None:
    """``--json FILE`` checked before any work: neither an input nor inside one (an artifact
    directory the command reads or writes counts as one, and an embedding set's text files
    too), nor another of its outputs, and its place writable."""
    if json_out is not None:
        from bitextmine.errors import BitextmineError
        from bitextmine.io.atomic import check_writable, refuse_overwriting_inputs

        if json_out != "-" and Path(json_out).is_dir():
            raise BitextmineError("is a directory: --json writes a file", path=json_out)
        given = [str(i) for i in inputs if i is not None]
        refuse_overwriting_inputs([json_out, *outputs], [*given, *_embedded_texts(given)])
        check_writable(json_out)


def _embedded_texts(inputs: list[str]) -> list[str]:
    """The text files behind the embedding sets among ``inputs`` (read when pairs are written)."""
    from bitextmine.embed.embedding_set import EmbeddingSet
    from bitextmine.errors import BitextmineError

    texts = []
    for path in inputs:
        if os.path.isdir(path) and EmbeddingSet.exists(path):
            try:
                texts += [s.source for s in EmbeddingSet.load(path).shards if s.source != "-"]
            except BitextmineError:
                pass  # the command itself says what is wrong with the set
    return texts


def to_stdout(path: str | None) -> bool:
    """``-``, or a name of the file standard output is (/dev/stdout, /dev/fd/1, a file that
    stdout is redirected to): what is written there lands in the same stream."""
    if path is None:
        return False
    if path == "-":
        return True
    if os.path.realpath(path) == os.devnull:  # what goes there mixes with nothing
        return False
    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):  # no such file; stdout closed or not a file
        return False


def json_to_stdout(*paths: str | None) -> bool:
    return any(to_stdout(path) for path in paths)


def refuse_second_stdout(output: str, taken: str, option: str, other: str | None) -> None:
    """A second output (``option``) into the standard output ``output`` already fills: a usage error."""
    if to_stdout(output) and to_stdout(other):
        raise usage_error(f"{taken} to standard output: give {option} a file", option)


def echo(message: str, err: bool = False) -> None:
    """``typer.echo``; a full disk behind standard output (``> /dev/full``) is named as
    standard output, which has no file name of its own to put in the error."""
    if err:
        typer.echo(message, err=True)
        return
    from bitextmine.io.atomic import standard_output_errors_named

    with standard_output_errors_named():
        typer.echo(message)  # click flushes: the error is met here, not at exit


def print_table(header: list[str], rows: list[list[Any]], title: str | None = None, err: bool = False) -> None:
    """A table on a terminal; tab-separated lines (header first) when piped, for other tools:
    pure TSV, the title on stderr. Cells that name files are printed with control characters
    escaped, and a tab or newline in a cell would break the columns, so they are escaped too."""
    from bitextmine.errors import printable

    stream = sys.stderr if err else sys.stdout
    cells = [[printable(str(c)) for c in row] for row in rows]
    title = printable(title) if title else title
    if not stream.isatty():
        from bitextmine.io.atomic import standard_output_errors_named

        if title:
            print(title, file=sys.stderr)
        with standard_output_errors_named() if stream is sys.stdout else contextlib.nullcontext():
            stream.write("".join("\t".join(row) + "\n" for row in [header, *cells]))
            stream.flush()
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(*header, title=title, title_justify="left")
    for column in table.columns[1:]:
        column.justify = "right"
    for row in cells:
        table.add_row(*row)
    Console(file=stream, markup=False, highlight=False).print(table)


# --- declared settings as options (train/settings.py) ------------------------------------------

_CHECKS = {"encoder": encoder_name, "device": device_spec}


def setting_option(setting, panel: str) -> tuple[Any, Any]:
    """(annotated type, default) of the option of a declared setting (``train.settings.Setting``)."""
    kind = Path if setting.names == "file" else setting.choices or setting.type
    default = False if setting.inverted else setting.default
    if setting.choices is not None and default is not None:
        default = setting.choices(default)
    numeric = setting.type in (int, float)
    option = typer.Option(
        setting.flags, metavar=setting.metavar, help=setting.help, rich_help_panel=panel,
        min=setting.least if numeric else None, max=setting.most if numeric else None,
        callback=_CHECKS.get(setting.names) or (finite if setting.type is float else None),
        show_default=default is not None and setting.type is not bool)  # a flag's default: not given
    return Annotated[kind | None if default is None else kind, option], default


def setting_value(setting, given):
    """A setting's value from what its option received."""
    if setting.inverted:
        return not given
    if given is None:
        return None
    return given.value if setting.choices is not None else str(given) if setting.names == "file" else given


def _panel(parameter: inspect.Parameter, panels: list[str]) -> int:
    """Where a parameter's help panel comes among ``panels`` (its options are listed in that order)."""
    found = [getattr(m, "rich_help_panel", None) for m in getattr(parameter.annotation, "__metadata__", ())]
    return panels.index(found[0]) if found and found[0] in panels else len(panels)


def with_settings(settings, panels: dict[str, str]):
    """Give a command an option for each declared setting; it receives their values as one dict
    ``settings`` (setting name -> value, as ``TrainConfig`` takes it). Options are listed panel
    by panel (``panels``: setting panel -> title, in order), the command's own among them."""
    declared = [s for s in settings if s.option]

    def decorate(func):
        signature = inspect.signature(func, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "settings"]
        added = [inspect.Parameter(s.name, inspect.Parameter.KEYWORD_ONLY,
                                   annotation=(option := setting_option(s, panels[s.panel]))[0], default=option[1])
                 for s in declared]

        @functools.wraps(func)
        def wrapper(**kwargs: Any):
            chosen = {s.name: setting_value(s, kwargs.pop(s.name)) for s in declared}
            return func(**kwargs, settings=chosen)

        titles = list(panels.values())
        parameters = sorted([p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + added,
                            key=lambda p: _panel(p, titles))
        wrapper.__signature__ = signature.replace(parameters=parameters)
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        return wrapper

    return decorate
