"""Structured files (pipeline YAML, manifests, index.json) checked by pydantic models.

A model states the shape; a wrong file fails with one line ``FILE: key.path: message``.
The scalar types are strict (YAML ``k: "4"`` is not a number, ``true`` is not 1).
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any

from pydantic import (
    AllowInfNan,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
)

from bitextmine.errors import BitextmineError

Int = StrictInt
Bool = StrictBool
Str = StrictStr
Float = Annotated[float, Strict(), AllowInfNan(False)]  # an int is accepted; a bool, a string or NaN is not
Count = Annotated[StrictInt, Field(ge=0, le=2**53)]  # lines, documents, pairs: more is a damaged file


class Model(BaseModel):
    """A frozen section of a structured file: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


_KINDS = {"int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
          "float_type": "a number", "float_parsing": "a number", "bool_type": "true or false",
          "bool_parsing": "true or false", "string_type": "a string", "dict_type": "a mapping",
          "model_type": "a mapping", "model_attributes_type": "a mapping", "list_type": "a list",
          "tuple_type": "a list", "finite_number": "a finite number"}


def _unwrap(annotation: Any) -> Any:
    """``X | None`` and ``Annotated[X, ...]`` -> ``X``; containers are kept."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        else:
            return annotation


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The model class that the key path ``loc`` leads to (to list its known keys)."""
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            if part not in current.model_fields:
                return None
            current = current.model_fields[part].annotation
        elif typing.get_origin(current) in (dict, list, tuple):
            args = [a for a in typing.get_args(current) if a is not Ellipsis]
            current = args[-1] if typing.get_origin(current) is dict else args[0]
        else:
            return None
    current = _unwrap(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def describe(model: type[BaseModel], error: dict) -> str:
    """One pydantic error -> ``key.path: message``."""
    loc = tuple(error["loc"])
    kind = error["type"]
    if loc and loc[-1] == "[key]":  # a mapping key outside the allowed ones
        loc = loc[:-1]
        where = ".".join(str(p) for p in loc)
        return f"{where}: unknown key; {error['msg'][0].lower()}{error['msg'][1:]}"
    where = ".".join(str(p) for p in loc) or "(top level)"
    if kind == "extra_forbidden":
        parent = _model_at(model, loc[:-1])
        known = f" (known: {', '.join(parent.model_fields)})" if parent else ""
        return f"{where}: unknown key{known}"
    if kind == "missing":
        return f"{where}: missing key"
    if kind in _KINDS:
        value = error.get("input")
        return f"{where}: must be {_KINDS[kind]}, not {type(value).__name__} {value!r}"
    message = error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return f"{where}: {message}"


def parse(model: type[BaseModel], data: Any, path, what: str = "") -> Any:
    """``model`` built from ``data`` (read from ``path``), or one error naming file and key."""
    if not isinstance(data, dict):
        found = "empty" if data is None else f"a {type(data).__name__}"
        raise BitextmineError(f"{what or 'the file'} must be a mapping of keys, not {found}", path=path)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise BitextmineError(describe(model, e.errors(include_url=False)[0]), path=path) from None
