"""How facts are declared: what every fact row has, and which fields point at other rows.

Extractors are pure functions ``(relpath, bytes) -> FileFacts``: the facts of one
file, as frozen dataclasses of this package. Two kinds of fields are special, and
the store's row codec (``store/codec.py``) reads these markers:

- ``ref(target)``: the index of another fact of the *same file* (a call inside a
  function holds its function's position in the file's ``CppSymbol`` list). The
  store turns it into that row's id; read back, it holds the id, or -1 for none.
- ``stored_id()`` / ``stored_path()``: filled by the store when a fact is read back
  (the row id, and the path of the file it came from), never written by extractors.
  Every fact has them, so every fact read from the index has a ``loc``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any

NO_REF = -1  # a ref field that points at nothing (a call at namespace scope, a row of no table)
REF = "ref"
STORED = "stored"


def ref(target: str) -> Any:
    """A field holding the position of a ``target`` fact of the same file (-1: none)."""
    return field(metadata={REF: target})


def stored_id() -> Any:
    return field(default=0, compare=False, metadata={STORED: "id"})


def stored_path() -> Any:
    return field(default="", compare=False, metadata={STORED: "path"})


def check_line(cls_name: str, line: int, end_line: int | None = None) -> None:
    """Every line number is 1-based; an end is never before its start."""
    if line < 1:
        raise ValueError(f"{cls_name}: line {line} is not a 1-based line number")
    if end_line is not None and end_line < line:
        raise ValueError(f"{cls_name}: end line {end_line} is before line {line}")


def check_enum(cls_name: str, name: str, value: object, enum: type) -> None:
    """Kinds are enum members, never bare strings: a typo must fail where it is made."""
    if not isinstance(value, enum):
        raise TypeError(f"{cls_name}.{name} must be a {enum.__name__}, not {value!r}")


def ref_fields(cls: type) -> dict[str, str]:
    return {f.name: f.metadata[REF] for f in dataclasses.fields(cls) if REF in f.metadata}


def stored_fields(cls: type) -> dict[str, str]:
    return {f.name: f.metadata[STORED] for f in dataclasses.fields(cls) if STORED in f.metadata}
