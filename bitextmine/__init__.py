"""bitextmine: mine parallel sentences from monolingual corpora."""

__version__ = "0.1.0"
