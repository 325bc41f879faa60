"""How facts are declared: what every fact row has, and which fields point at other rows.

Extractors are pure functions ``(relpath, bytes) -> FileFacts``: the facts of one
file, as frozen dataclasses of this package. Two kinds of fields are special, and
the store's row codec (``store/codec.py``) reads these markers:

- ``Annotated[int, Ref(target)]``: the index of another fact of the *same file* (a
  call inside a function holds its function's position in the file's ``CppSymbol``
  list). The store turns it into that row's id; read back, it holds the id, or -1.
- ``Annotated[int, Stored.ID]`` / ``Annotated[str, Stored.PATH]``: filled by the store
  when a fact is read back (the row id, and the path of the file it came from), never
  written by extractors. Every fact has them, so every fact read back has a ``loc``.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any

NO_REF = -1  # a ref field that points at nothing (a call at namespace scope, a row of no table)


@dataclass(frozen=True)
class Ref:
    """``Annotated[int, Ref("CppSymbol")]``: the position of a fact of that type in the same file."""

    target: str


class Stored:
    """``Annotated[..., Stored.ID]`` / ``Stored.PATH``: filled by the store when a fact is read back."""

    ID = "id"
    PATH = "path"


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


def _extras(cls: type) -> dict[str, tuple[Any, ...]]:
    hints = typing.get_type_hints(cls, include_extras=True)
    return {f.name: getattr(hints[f.name], "__metadata__", ()) for f in dataclasses.fields(cls)}


def ref_fields(cls: type) -> dict[str, str]:
    """Field name -> the fact type it points at, for the ref fields of a fact type."""
    return {name: m.target for name, extras in _extras(cls).items() for m in extras if isinstance(m, Ref)}


def stored_fields(cls: type) -> dict[str, str]:
    """Field name -> what the store fills in (Stored.ID / Stored.PATH)."""
    return {name: m for name, extras in _extras(cls).items() for m in extras if m in (Stored.ID, Stored.PATH)}
