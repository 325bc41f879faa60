"""Extractor output keyed by fact class names, for tests that read facts by name."""

from __future__ import annotations

from typing import Any

from torchtalk.model import FACT_TABLES, FileProblems
from torchtalk.model.facts import ref_fields

# Fact types by the name tests use for them, and the local references each holds.
ROW_TYPES: dict[str, type] = {cls.__name__: cls for cls in FACT_TABLES.values()}
REFS: dict[str, dict[str, str]] = {name: ref_fields(cls) for name, cls in ROW_TYPES.items() if ref_fields(cls)}


def named(facts: dict[Any, list[Any]]) -> dict[str, list[Any]]:
    return {("errors" if k is FileProblems else k.__name__): v for k, v in facts.items()}
