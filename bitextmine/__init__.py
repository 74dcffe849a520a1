"""bitextmine: mine parallel sentences from monolingual corpora.

The Python API is ``bitextmine.api`` (``from bitextmine import api``): embed, mine, score,
filter and evaluate lists of sentences. Importing ``bitextmine`` loads nothing else: the API
and the stages are imported on first use.
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    if name == "api":  # `import bitextmine; bitextmine.api.mine(...)` without importing it first
        from importlib import import_module

        return import_module("bitextmine.api")
    raise AttributeError(f"module 'bitextmine' has no attribute {name!r}")
