"""bitextmine: mine parallel sentences from monolingual corpora.

The Python API is ``bitextmine.api`` (``from bitextmine import api``): embed, mine, score,
filter and evaluate lists of sentences. ARCHITECTURE.md maps the packages.
"""

from importlib import import_module

__version__ = "0.1.0"


def __getattr__(name: str):
    # `import bitextmine; bitextmine.api.mine(...)` without importing it first. Not imported here:
    # every command imports this package, and the API brings the stages with it (numpy, FAISS's
    # callers, pydantic: 0.4 s more for `bitextmine --help`, python -X importtime)
    if name == "api":
        return import_module("bitextmine.api")
    raise AttributeError(f"module 'bitextmine' has no attribute {name!r}")
