"""The filter options, declared once for ``bitextmine filter`` and ``bitextmine mine --filter``."""

from __future__ import annotations

import functools
import inspect
from typing import Annotated, Any

import typer

from bitextmine import defaults
from bitextmine.choices import Dedup, FilterRule
from bitextmine.cli.options import finite, given_flags, language_code, usage_error

FILTER_PANEL = "Filter rules"
_FILTER_OPTIONS = {  # parameter -> (annotated type, default)
    "skip": (Annotated[list[FilterRule] | None, typer.Option(
        "--skip", metavar="RULE", rich_help_panel=FILTER_PANEL, show_default=False,
        help="Switch a rule off (repeatable): " + ", ".join(r.value for r in FilterRule) + ".")], None),
    "min_chars": (Annotated[int, typer.Option(metavar="N", min=0, rich_help_panel=FILTER_PANEL,
                                              help="Shortest side, in characters.")], defaults.FILTER_MIN_CHARS),
    "max_chars": (Annotated[int, typer.Option(metavar="N", min=0, rich_help_panel=FILTER_PANEL,
                                              help="Longest side, in characters.")], defaults.FILTER_MAX_CHARS),
    "min_tokens": (Annotated[int, typer.Option(metavar="N", min=0, rich_help_panel=FILTER_PANEL,
                                               help="Fewest tokens per side (CJK/Thai: characters).")],
                   defaults.FILTER_MIN_TOKENS),
    "max_side_tokens": (Annotated[int, typer.Option("--max-side-tokens", metavar="N", min=0,
                                                    rich_help_panel=FILTER_PANEL, help="Most tokens per side.")],
                        defaults.FILTER_MAX_TOKENS),
    "max_ratio": (Annotated[float, typer.Option(metavar="X", min=1.0, callback=finite, rich_help_panel=FILTER_PANEL,
                                                help="Longest/shortest side, in characters (CJK: three each).")],
                  defaults.FILTER_MAX_LENGTH_RATIO),
    "min_letters": (Annotated[float, typer.Option(metavar="X", min=0.0, max=1.0, rich_help_panel=FILTER_PANEL,
                                                  help="Smallest share of letters per side.")],
                    defaults.FILTER_MIN_LETTER_SHARE),
    "near_copy": (Annotated[float, typer.Option(metavar="X", min=0.0, max=1.0, rich_help_panel=FILTER_PANEL,
                                                help="Word overlap (Jaccard) that makes the sides near copies.")],
                  defaults.FILTER_NEAR_COPY_JACCARD),
    "boilerplate": (Annotated[int, typer.Option(metavar="N", min=2, rich_help_panel=FILTER_PANEL,
                                                help="A side seen this many times in the input is boilerplate.")],
                    defaults.FILTER_BOILERPLATE_COUNT),
    "dedup": (Annotated[Dedup, typer.Option(rich_help_panel=FILTER_PANEL,
                                            help="Deduplicate on normalised text by pair, src, tgt or both sides.")],
              Dedup(defaults.FILTER_DEDUP)),
    "max_score": (Annotated[float | None, typer.Option(
        metavar="X", callback=finite, rich_help_panel=FILTER_PANEL, show_default=False,
        help="Score cap: drop suspiciously high scores, mostly duplicates (default: off).")], None),
    "src_lang": (Annotated[str | None, typer.Option(
        metavar="LANG", rich_help_panel=FILTER_PANEL, show_default=False, callback=language_code,
        help="Source language (ISO 639-1 or -3); turns language ID on.")], None),
    "tgt_lang": (Annotated[str | None, typer.Option(
        metavar="LANG", rich_help_panel=FILTER_PANEL, show_default=False, callback=language_code,
        help="Target language; turns language ID on.")], None),
}


def _filter_config(skip, dedup, **rest):
    """The settings checked together (a minimum above its maximum, an unknown language): a usage error."""
    from bitextmine.errors import BitextmineError
    from bitextmine.filter import FilterConfig

    try:
        return FilterConfig(skip=tuple(rule.value for rule in skip or ()), dedup=dedup.value, **rest)
    except BitextmineError as e:
        raise usage_error(e.message) from None


def with_filter_options(func):
    """Give a command the filter options; it receives them as one ``filter_cfg: FilterConfig``.

    The options are declared once (above) for ``filter`` and ``mine --filter``; the
    ``FilterConfig`` checks their values.
    """
    signature = inspect.signature(func, eval_str=True)
    own = [p for p in signature.parameters.values() if p.name not in ("filter_cfg", "filter_given")]
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=default)
             for name, (kind, default) in _FILTER_OPTIONS.items()]

    wants_given = "filter_given" in signature.parameters  # ``mine``: its filter options need --filter
    if wants_given:  # typer hands the command's context to a parameter of this type
        added.append(inspect.Parameter("filter_context", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context))

    @functools.wraps(func)
    def wrapper(**kwargs: Any):
        chosen = {name: kwargs.pop(name) for name in _FILTER_OPTIONS}
        if wants_given:  # the filter options given on the command line, by flag
            kwargs["filter_given"] = given_flags(kwargs.pop("filter_context"), _FILTER_OPTIONS)
        return func(**kwargs, filter_cfg=_filter_config(**chosen))

    parameters = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + added
    wrapper.__signature__ = signature.replace(parameters=parameters)
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
    return wrapper
