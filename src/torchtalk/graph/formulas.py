"""The calls of a derivatives.yaml formula, each with the op overloads it can mean.

Note [Formula calls]
~~~~~~~~~~~~~~~~~~~~
A formula is C++ that torchgen pastes into Functions.cpp, written against the entry's arguments (``self``,
``exponent``), the incoming ``grad`` and ``result``, and their forward-mode ``*_t`` / primal ``*_p`` names. Its calls
are read from the text: a name followed by ``(``, a free function (``at::`` or bare) or a method (``x.f(``), with its
arguments split at the top-level commas. An argument is typed when the text shows its type: a number literal, a
``M_PI``-style constant, an argument of the entry's op (its schema type), ``grad``/``result`` and the ``_t``/``_p``
names of Tensor arguments; anything else is unknown. The op overloads a call means are those whose C++ signature
takes that many arguments and whose parameters the known types can bind (``overloads.score``): ``.pow(2)`` is
``pow.Tensor_Scalar``, never ``pow.Tensor_Tensor``; ``.sum(0)`` is ``sum.dim_IntList``; ``sqrt(M_PI)`` is the C
library's (a number binds no Tensor), no op at all. A method on an argument whose type is no Tensor is that type's
(``weight.conj()`` for a Scalar ``weight``: ``c10::Scalar::conj``), no op either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import Op, Variant
from ..store.reader import Index
from .cpp_types import Ty, close_bracket, split_args
from .op_spellings import op_named
from .overloads import op_signature, schema_type, score
from .registry import OpRegistry

_NAME = re.compile(r"([A-Za-z_]\w*)\s*\(")
_RECEIVER = re.compile(r"([A-Za-z_]\w*)\s*\.\s*$")
_INT = re.compile(r"-?\d+[lLuU]*")
_FLOAT = re.compile(r"-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?[fF]?")
_CONSTANT = re.compile(r"M_[A-Z0-9_]+")
_TENSOR = Ty("at::Tensor")
_KEEP = 3  # overloads kept for a call the known types do not decide


@dataclass(frozen=True)
class FormulaCall:
    name: str
    method: bool
    ops: tuple[str, ...]  # the overloads it can mean; () when it is no op's
    op_name: bool = True  # an op has this name (False: a helper's, a FunctionsManual function, or the language's)


def formula_calls(ix: Index, reg: OpRegistry, text: str, op: Op | None) -> list[FormulaCall]:
    """The calls of formula ``text`` of ``op``'s entry, in order (Note [Formula calls])."""
    env = _environment(op)
    out: list[FormulaCall] = []
    for m in _NAME.finditer(text):
        name, start = m.group(1), m.start()
        before = text[:start].rstrip()
        method = before.endswith(".")
        if before.endswith("::") and not re.search(r"(?<![\w:])at::$", before):
            continue  # std::sqrt(, c10::..., a class's static function: no op
        args_text = _parenthesized(text, m.end() - 1)
        args = [a.strip() for a in split_args(args_text)] if args_text.strip() else []
        if method:
            recv = _RECEIVER.search(before)
            recv_ty = env.get(recv.group(1)) if recv else None
            if recv_ty is not None and recv_ty != _TENSOR:
                out.append(FormulaCall(name, True, ()))  # a Scalar's or a number's method
                continue
            candidates = [o for o in reg.by_name.get(name, []) if Variant.METHOD in o.variants and not o.is_out]
        else:
            candidates = [reg.by_full[f] for f in op_named(reg, name)]
        if not candidates:
            if not method:
                out.append(FormulaCall(name, False, (), op_name=False))
            continue
        out.append(FormulaCall(name, method, _fitting(ix, candidates, [_type(a, env) for a in args], method)))
    return out


def _fitting(ix: Index, candidates: list[Op], args: list[Ty | None], method: bool) -> tuple[str, ...]:
    """The overloads that take these arguments: their number, then their known types (the best scores)."""
    sized = [o for o in candidates if (sig := op_signature(o, method))[1] <= len(args) <= len(sig[0])]
    if not any(a is not None for a in args):
        return tuple(o.full_name for o in (sized or candidates)[:_KEEP])
    scored = [(s, o) for o in sized if (s := score(ix, args, op_signature(o, method)[0])) is not None]
    if not scored:
        return ()  # the known types bind no overload: the C library's (sqrt(M_PI)) or a helper's
    best = max(s for s, _o in scored)
    return tuple(o.full_name for s, o in scored if s == best)[:_KEEP]


def _environment(op: Op | None) -> dict[str, Ty | None]:
    """The names a formula of ``op``'s entry uses, with the types they have."""
    env: dict[str, Ty | None] = {"grad": _TENSOR, "result": _TENSOR, "grad_output": _TENSOR}
    for a in op.schema.arguments if op is not None else ():
        ty = schema_type(a.type)
        env[a.name] = ty
        if ty == _TENSOR:
            env[f"{a.name}_t"] = env[f"{a.name}_p"] = _TENSOR
    return env


def _type(arg: str, env: dict[str, Ty | None]) -> Ty | None:
    if _INT.fullmatch(arg):
        return Ty("int64_t")
    if _FLOAT.fullmatch(arg) or _CONSTANT.fullmatch(arg):
        return Ty("double")
    if arg in ("true", "false"):
        return Ty("bool")
    return env.get(arg)


def _parenthesized(text: str, open_at: int) -> str:
    """The text between the parenthesis at ``open_at`` and the one that closes it (to the end if none does)."""
    close = close_bracket(text, open_at, limit=len(text))
    return text[open_at + 1:close] if close >= 0 else text[open_at + 1:]
