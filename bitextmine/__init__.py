"""bitextmine: mine parallel sentences from monolingual corpora.

The Python API is ``bitextmine.api`` (``from bitextmine import api``): embed, mine, score,
filter and evaluate lists of sentences. ARCHITECTURE.md maps the packages.
"""

from importlib import import_module

__version__ = "0.1.0"


def __getattr__(name: str):
    # `import bitextmine; bitextmine.api.mine(...)` without importing it first. Not imported here:
    # every command imports this package, and the API brings the stages with it (numpy, pydantic:
    # `bitextmine --help` would take 0.75 s instead of 0.15 s; ARCHITECTURE.md, start-up)
    if name == "api":
        return import_module("bitextmine.api")
    raise AttributeError(f"module 'bitextmine' has no attribute {name!r}")
