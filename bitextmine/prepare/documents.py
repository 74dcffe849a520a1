"""What the readers yield: documents, the counts of what was read, and how to read."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Document:
    text: str
    id: str  # never empty: the input's own id, else the line (row, record) where it starts
    url: str  # may be empty
    line: int  # where it starts in the input, for messages


@dataclass
class ReadCounts:
    documents: int = 0
    bad: int = 0  # records left out with errors="skip"
    not_text: int = 0  # WARC records that hold no text (requests, metadata, HTML responses)
    bad_examples: list[str] = field(default_factory=list)  # the first few, as the error would have said

    def to_dict(self) -> dict:
        return {"documents": self.documents, "bad": self.bad, "not_text": self.not_text,
                "bad_examples": self.bad_examples}


@dataclass(frozen=True)
class ReadOptions:
    format: str = "auto"  # auto, text, jsonl, parquet, warc
    text_documents: str = "line"  # plain text: a document per line, or per paragraph (blank lines between)
    field: str = "text"  # JSONL field, Parquet column
    id_field: str | None = "id"
    url_field: str | None = "url"
    errors: str = "strict"  # or skip
