"""The rules the layout keeps (ARCHITECTURE.md), checked on the source: sizes, layers and
their imports, and what each layer may know of the others."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "bitextmine"
# bottom to top: a module imports from its own package or from a lower layer, never sideways or up
LAYERS = [
    {"bitextmine", "errors", "defaults"},
    {"choices"},
    {"devices", "progress", "io"},
    {"languages"},
    {"encoders", "filter"},
    {"embed", "prepare"},
    {"index"},
    {"mine"},
    {"evaluate", "train"},
    {"adapt"},
    {"launch"},
    {"doctor", "api"},
    {"cli"},
    {"__main__"},
]
LAYER = {unit: i for i, units in enumerate(LAYERS) for unit in units}
ENCODER_FREE = ("mine", "evaluate", "index", "embed")  # they ask an encoder's identity, never its name
ENCODER_NAMES = re.compile(r"usem3|use-m3|universal sentence encoder|labse", re.IGNORECASE)


def module_name(path: Path) -> str:
    name = ".".join(path.relative_to(REPO).with_suffix("").parts)
    return name.removesuffix(".__init__")


@cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def unit(module: str) -> str:
    """The package (or top-level module) of ``bitextmine`` a module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def resolve(name: str) -> str | None:
    """The module of ours that ``name`` (a module, or a name inside one) is."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name or None


@cache
def imports() -> dict[str, set[str]]:
    """Every import of our own modules, at the top or inside a function (both are structure)."""
    found: dict[str, set[str]] = {}
    for module, path in modules().items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(resolve(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bitextmine"):
                targets.update(resolve(f"{node.module}.{alias.name}") for alias in node.names)
        found[module] = {t for t in targets if t and t != module}
    return found


def function_bodies(source: str):
    """(name, lines of its body, docstring included) of every function in ``source``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.end_lineno - node.body[0].lineno + 1


def test_every_package_of_ours_has_a_layer():
    assert {unit(m) for m in modules()} <= set(LAYER), {unit(m) for m in modules()} - set(LAYER)


def test_package_inits_only_re_export_in_a_few_lines():
    long = {m: n for m, path in modules().items() if path.name == "__init__.py" and unit(m) != "cli"
            and (n := len(path.read_text(encoding="utf-8").splitlines())) > 60}
    assert not long, long
    for module, path in modules().items():  # names from submodules, and nothing defined
        if path.name == "__init__.py" and unit(module) != "cli":
            tree = ast.parse(path.read_text(encoding="utf-8"))
            defined = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
            defined += [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name != "__getattr__"]
            assert not defined, (module, defined)


def test_no_module_over_500_lines_and_no_function_body_over_80():
    long = {m: n for m, path in modules().items() if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500}
    assert not long, long
    bodies = {f"{m}.{name}": n for m, path in modules().items()
              for name, n in function_bodies(path.read_text(encoding="utf-8")) if n > 80}
    assert not bodies, bodies


def test_no_import_cycle():
    graph, done, path = imports(), set(), []

    def visit(module: str) -> None:
        if module in path:
            raise AssertionError("import cycle: " + " -> ".join([*path[path.index(module):], module]))
        if module in done:
            return
        path.append(module)
        for target in sorted(graph[module]):
            visit(target)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)


def test_imports_go_down_the_layers_only():
    upward = sorted(f"{m} -> {t}" for m, targets in imports().items() for t in targets
                    if unit(t) != unit(m) and LAYER[unit(t)] >= LAYER[unit(m)])
    assert not upward, upward


def test_mining_evaluation_indexing_and_embedding_never_name_an_encoder():
    named = [f"{m}:{i}" for m, path in modules().items() if unit(m) in ENCODER_FREE
             for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if ENCODER_NAMES.search(line)]
    assert not named, named


def test_encoders_import_nothing_from_the_filter():
    assert not {f"{m} -> {t}" for m, targets in imports().items() if unit(m) == "encoders"
                for t in targets if unit(t) == "filter"}


def test_the_train_command_is_thin():
    assert len((PACKAGE / "cli" / "train.py").read_text(encoding="utf-8").splitlines()) <= 120


@pytest.mark.parametrize("where", ["bitextmine", "tests"])
def test_nothing_imports_the_benchmarks_and_the_package_no_tests(where):
    forbidden = ("benchmarks",) if where == "tests" else ("benchmarks", "tests")
    found = []
    for path in sorted((REPO / where).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] in forbidden]
    assert not found, found


def test_the_checks_see_a_violation():
    """The rules above fail on code that breaks them (a check that cannot fail checks nothing)."""
    body = "\n".join(["def f():", *["    x = 1"] * 81])
    assert [n for _, n in function_bodies(body)] == [81]
    assert ENCODER_NAMES.search("if identity.name == 'usem3':")
    assert LAYER["mine"] >= LAYER["index"] and LAYER["encoders"] == LAYER["filter"]

