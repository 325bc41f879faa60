"""A place in the source tree: what every answer cites."""

from __future__ import annotations

from dataclasses import dataclass

GENERATED_PREFIX = "<generated>/"  # code the build would generate; TorchTalk runs the generators into its cache


@dataclass(frozen=True, slots=True, order=True)
class Loc:
    path: str  # relative to the source root, or "<generated>/..."
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def in_generated(self) -> bool:
        return self.path.startswith(GENERATED_PREFIX)
