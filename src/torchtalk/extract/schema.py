"""Parse ATen function schemas (``add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor``).

A small reading of torchgen's FunctionSchema grammar: enough to show arguments,
defaults, kwarg-only and out arguments and aliasing annotations. Frozen
dataclasses so that a parsed schema can be shared and compared safely.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ANNOT = re.compile(r"^(?P<base>[A-Za-z_][\w]*)\((?P<annot>[a-z0-9!|*\s\->]+)\)(?P<rest>.*)$")


class SchemaError(ValueError):
    """A func string that does not follow the schema grammar."""


@dataclass(frozen=True)
class Argument:
    name: str
    type: str  # as written, with the alias annotation removed: "Tensor", "int[1]", "Scalar?"
    default: str | None
    annotation: str  # "a!", "a", "" ; "!" means the argument is written to
    kwarg_only: bool
    out: bool

    @property
    def is_write(self) -> bool:
        return "!" in self.annotation


@dataclass(frozen=True)
class Return:
    name: str
    type: str
    annotation: str


@dataclass(frozen=True)
class FunctionSchema:
    name: str  # base name, "add_" keeps the in-place underscore
    overload: str
    arguments: tuple[Argument, ...]
    returns: tuple[Return, ...]

    @property
    def full_name(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name

    @property
    def is_inplace(self) -> bool:
        # torchgen: an in-place op's base name ends with "_" (but not dunder methods like __iand__).
        return self.name.endswith("_") and not self.name.endswith("__")

    @property
    def is_out(self) -> bool:
        return any(a.out for a in self.arguments)


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside brackets and quotes."""
    parts, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    tail = "".join(cur).strip()
    if tail or parts:
        parts.append(tail)
    return parts


def _split_type(type_text: str) -> tuple[str, str]:
    """'Tensor(a!)' -> ('Tensor', 'a!'); 'Tensor(a!)[]' -> ('Tensor[]', 'a!')."""
    m = _ANNOT.match(type_text)
    if not m:
        return type_text, ""
    return m.group("base") + m.group("rest"), m.group("annot").strip()


def _parse_argument(text: str, kwarg_only: bool) -> Argument:
    decl, eq, default = text.partition("=")
    decl = decl.strip()
    type_text, _, name = decl.rpartition(" ")
    if not type_text or not name:
        raise SchemaError(f"argument {text!r} has no type or no name")
    typ, annot = _split_type(type_text.strip())
    return Argument(
        name=name,
        type=typ,
        default=default.strip() if eq else None,
        annotation=annot,
        kwarg_only=kwarg_only,
        out=kwarg_only and "!" in annot,
    )


def _parse_returns(text: str) -> tuple[Return, ...]:
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    out = []
    for part in split_top(text):
        if not part:
            continue
        bits = part.rsplit(" ", 1)
        if len(bits) == 2 and re.fullmatch(r"[A-Za-z_]\w*", bits[1]) and not bits[0].endswith(","):
            typ_text, name = bits
        else:
            typ_text, name = part, ""
        typ, annot = _split_type(typ_text.strip())
        out.append(Return(name=name, type=typ, annotation=annot))
    return tuple(out)


def parse_schema(func: str) -> FunctionSchema:
    """Parse a ``func:`` string; raises SchemaError naming what is wrong."""
    func = " ".join(func.split())
    head, paren, rest = func.partition("(")
    if not paren:
        raise SchemaError(f"no argument list in {func!r}")
    # The argument list ends at the ")" that closes the first "(".
    depth, end = 1, -1
    for i, ch in enumerate(rest):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                end = i
                break
    if end < 0:
        raise SchemaError(f"unbalanced parentheses in {func!r}")
    args_text, tail = rest[:end], rest[end + 1 :].strip()
    if not tail.startswith("->"):
        raise SchemaError(f"no '->' returns in {func!r}")
    name, _, overload = head.strip().partition(".")
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise SchemaError(f"bad op name {name!r} in {func!r}")
    args: list[Argument] = []
    kwarg_only = False
    for part in split_top(args_text):
        if not part:
            continue
        if part == "*":
            kwarg_only = True
            continue
        args.append(_parse_argument(part, kwarg_only))
    return FunctionSchema(name=name, overload=overload, arguments=tuple(args), returns=_parse_returns(tail[2:]))
