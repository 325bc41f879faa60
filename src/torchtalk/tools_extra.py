"""Tools of the C++, Python and test layers (registered after the op-registry tools)."""

from __future__ import annotations


def extra_tools() -> list:
    return []
