"""Argument checks shared by every tool: bad input gets a message naming the valid values."""

from __future__ import annotations

import re
import unicodedata

from ..errors import BadArgument, shown

__all__ = ["MAX_LIMIT", "MAX_NAME", "check_choice", "check_int", "clean_text", "shown"]

MAX_NAME = 500
MAX_LIMIT = 500  # the most rows any limit= may ask for
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def clean_text(value: object, arg: str, example: str, max_len: int = MAX_NAME) -> str:
    if not isinstance(value, str):
        raise BadArgument(f"{arg} must be a string such as {example!r}, not {type(value).__name__}")
    text = value.strip()
    if not text:
        raise BadArgument(f"{arg} is empty; give a name such as {example!r}")
    if len(text) > max_len:
        raise BadArgument(f"{arg} is {len(text):,} characters long; the limit is {max_len}. "
                          f"Give a name such as {example!r}")
    if _CONTROL.search(text):
        raise BadArgument(f"{arg} contains control characters; give a plain name such as {example!r}")
    if any(unicodedata.category(ch) == "Cs" for ch in text):
        raise BadArgument(f"{arg} contains invalid unicode (lone surrogates)")
    return text


def check_choice(value: object, arg: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise BadArgument(f"{arg} {shown(value)} is not valid; choose one of: {', '.join(choices)}")
    return value.strip().lower()


def check_int(value: object, arg: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadArgument(f"{arg} must be an integer from {lo} to {hi}, not {shown(value)}")
    if not lo <= value <= hi:
        raise BadArgument(f"{arg} {value} is out of range; give an integer from {lo} to {hi}")
    return value
