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

An operator with a Tensor operand is a call too (Note [Tensor operators] in model/schema.py): ``grad * (tensor2 *
value).conj()`` calls ``mul`` twice, ``self <= max`` calls ``le``, ``-grad`` calls ``neg``, ``2.0 / x`` calls
``empty_like``, ``fill_`` and ``div_``. An operand is a Tensor when the text shows it (a Tensor name of the
environment, a Tensor method op called on one, an op called with a Tensor, a parenthesized expression with such an
operand); an operator between operands of which none is known to be a Tensor (``self.dim() - 1``, ``2.0 /
sqrt(M_PI)``) is left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import TENSOR_BINARY_OPERATORS, TENSOR_UNARY_OPERATORS, Op, Variant
from ..store.reader import Index
from .cpp_lookup import methods, return_type
from .cpp_text import close_bracket, split_args, template_brackets
from .cpp_types import Ty
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
    operators = _Operators(ix, reg, env)
    out: list[tuple[int, FormulaCall]] = []
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
                out.append((start, FormulaCall(name, True, ())))  # a Scalar's or a number's method
                continue
            candidates = [o for o in reg.by_name.get(_op_name(reg, name), []) if Variant.METHOD in o.variants
                          and not o.is_out]
            if candidates and all(o.manual_cpp_binding for o in candidates) and _inline(ix, reg, name):
                # A_p.is_complex(): TensorBase's hand-written method (manual_cpp_binding), no call of the op
                out.append((start, FormulaCall(name, True, ())))
                continue
        else:
            candidates = [reg.by_full[f] for f in op_named(reg, _op_name(reg, name))]
        if not candidates:
            if not method:
                out.append((start, FormulaCall(name, False, (), op_name=False)))
            continue
        typed = [operators._type(a) for a in args]
        out.append((start, FormulaCall(name, method, _fitting(ix, candidates, typed, method))))
    out += operators.calls(text)
    return [c for _at, c in sorted(out, key=lambda pc: pc[0])]


def _inline(ix: Index, reg: OpRegistry, name: str) -> bool:
    """Whether Tensor's C++ method ``name`` is hand-written and calls no op: TensorBase::is_complex reads the dtype;
    contiguous() and conj() call ops (``__dispatch_contiguous``, ``_conj``) when they must."""
    ids = [s.id for s in methods(ix, _TENSOR, name)[1]]
    callees = {r[0] for r in ix.q(f"SELECT DISTINCT callee FROM cpp_call WHERE caller IN ({','.join('?' * len(ids))})",
                                  ids)} if ids else set()
    return bool(ids) and not any(c in reg.by_name or c.startswith("__dispatch_") for c in callees)


def _op_name(reg: OpRegistry, name: str) -> str:
    """The op a C++ API name calls: ``select_symint`` is ``select`` taking SymInts (torchgen's _symint
    variants of an op with SymInt arguments; 31 formula lines call them: self.select_symint(dim, index))."""
    return name.removesuffix("_symint") if name.endswith("_symint") and name not in reg.by_name else name


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


_OPERATOR = re.compile(r"<=|>=|==|!=|&&|\|\||<<|>>|->|::|[-+*/%&|^<>~!?:,;=(\[{]")
_EXPONENT = re.compile(r"(?<![\w.])\d+(\.\d*)?[eE]$")
_BEFORE_UNARY = "(,=?:[{!<>+-*/%&|^~"
_STRING_LIT = re.compile(r'"(?:[^"\\]|\\.)*"')


class _Operators:
    """The operators of a formula that are ops (Note [Formula calls], Note [Tensor operators])."""

    def __init__(self, ix: Index, reg: OpRegistry, env: dict[str, Ty | None]):
        self.ix, self.reg, self.env = ix, reg, env

    def calls(self, text: str) -> list[tuple[int, FormulaCall]]:
        s = _STRING_LIT.sub(lambda m: " " * len(m.group()), text)
        out: list[tuple[int, FormulaCall]] = []
        angles = template_brackets(s)  # std::get<0>, std::vector<c10::SymInt>: no comparison
        for m in _OPERATOR.finditer(s):
            tok, at = m.group(), m.start()
            if at in angles or tok in "+-" and _EXPONENT.search(s, 0, at):  # 1e-5 is a number
                continue
            prev = s[:at].rstrip()
            if tok in TENSOR_UNARY_OPERATORS and (not prev or prev[-1] in _BEFORE_UNARY or prev.endswith("return")):
                if self._type(s[m.end():_operand_end(s, m.end())]) == _TENSOR and (
                        ops := self._methods(TENSOR_UNARY_OPERATORS[tok], [])):
                    out.append((at, FormulaCall(f"operator{tok}", True, ops)))
                continue
            if tok not in TENSOR_BINARY_OPERATORS or not prev or prev[-1] in _BEFORE_UNARY:
                continue
            lt, rt = self._type(_left(s, at, tok)), self._type(_right(s, m.end(), tok))
            tensor_left, scalar_left = TENSOR_BINARY_OPERATORS[tok]
            if lt == _TENSOR or (lt is None and rt == _TENSOR):
                ops = self._methods(tensor_left, [rt])
            elif rt == _TENSOR:  # a number or a Scalar on the left: y.mul(x), empty_like(y).fill_(x).sub_(y)
                ops = tuple(o for name in scalar_left for o in self._methods(
                    name, [] if name == "empty_like" else [_TENSOR] if name == tensor_left + "_" else [lt]))
            else:
                continue
            if ops:  # no overload takes these operands: the operator is no op's (a number's, a helper's type's)
                out.append((at, FormulaCall(f"operator{tok}", True, ops)))
        return out

    def _methods(self, name: str, args: list[Ty | None]) -> tuple[str, ...]:
        ops = [o for o in self.reg.by_name.get(name, []) if not o.is_out]
        if methods := [o for o in ops if Variant.METHOD in o.variants]:
            return _fitting(self.ix, methods, args, True)
        return _fitting(self.ix, ops, [_TENSOR, *args], False) if ops else ()  # at::empty_like(y, ...)

    def _type(self, expr: str) -> Ty | None:
        """The type of an operand or an expression when its text shows it (a Tensor, a number), else None."""
        e = expr.strip()
        while e[:1] in ("-", "~", "!") and len(e) > 1:
            e = e[1:].lstrip()
        known = _type(e, self.env)
        if known is not None or not e:
            return known
        parts = _top_level(e)
        if len(parts) > 1:  # a Tensor operand makes the operator an op; numbers make a number
            kinds = [self._type(p) for p in parts]
            if _TENSOR in kinds:
                return _TENSOR
            return Ty("double") if all(k is not None for k in kinds) else None
        ty: Ty | None
        if e.startswith("("):
            close = close_bracket(e, 0, limit=len(e))
            if close < 0:
                return None
            ty, pos = self._type(e[1:close]), close + 1
        elif head := re.match(r"(?:(?:at|std)::)?([A-Za-z_]\w*)\s*(\()?", e):
            pos = head.end()
            if head.group(2):  # f(...): an op's (what it returns), the C library's for numbers, or unknown
                close = close_bracket(e, pos - 1, limit=len(e))
                if close < 0:
                    return None
                args = [self._type(a) for a in split_args(e[pos:close])]
                numbers = bool(args) and all(a is not None and a.name in _CPP_NUMBERS for a in args)  # sqrt(M_PI): C's
                name = _op_name(self.reg, head.group(1))
                ty = _DOUBLE if numbers else (_returns(self.reg.by_name[name]) if name in self.reg.by_name
                                              else self._helper_returns(name))
                pos = close + 1
            else:
                ty = self.env.get(head.group(1))
        else:
            return None
        while ty == _TENSOR and (meth := re.match(r"\s*\.\s*([A-Za-z_]\w*)\s*\(", e[pos:])):
            close = close_bracket(e, pos + meth.end() - 1, limit=len(e))
            if close < 0:
                return None
            ty = self._method_returns(meth.group(1))
            pos = close + 1
        return ty if not e[pos:].strip() else None

    def _helper_returns(self, name: str) -> Ty | None:
        """What a FunctionsManual helper returns (``maybe_multiply``: at::Tensor), when all its declarations agree
        on a Tensor (Note [Formula calls]: ``self_t + maybe_multiply(other_t, alpha)`` is add.Tensor)."""
        memo: dict[str, Ty | None] = self.ix.cached("formula_helper_returns", dict)
        if name not in memo:
            rets = {r[0] for r in self.ix.q("SELECT ret FROM cpp_symbol WHERE name = ? AND qualname LIKE ?",
                                              (name, f"torch::autograd::generated::details::{name}"))}
            memo[name] = _TENSOR if rets and rets <= {"Tensor", "at::Tensor"} else None
        return memo[name]

    def _method_returns(self, name: str) -> Ty | None:
        """What a Tensor's method returns: an op's result, or at::TensorBase's C++ method's (``dim()``, ``numel()``,
        ``sym_numel()``: numbers; ``sizes()``, ``options()``: not known here)."""
        if name in self.reg.by_name:
            return _returns(self.reg.by_name[name])
        defs = methods(self.ix, _TENSOR, name)[1]
        rets = {s.ret for s in defs}
        if rets == {"Tensor"}:
            return _TENSOR
        if rets and rets <= _CPP_NUMBERS:
            return Ty("int64_t")
        # one declared type, as C++ resolves it (scalar_type(): c10::ScalarType binds to(ScalarType), not
        # to(Tensor)); a reference's or a template's is left unknown
        types = {return_type(self.ix, s, _TENSOR) for s in defs}
        (ty,) = types if len(types) == 1 else (None,)
        return ty if ty is not None and not ty.args and not ty.ptr else None


_NUMBERS = frozenset({"int", "SymInt", "float", "bool"})
_CPP_NUMBERS = frozenset({"int64_t", "c10::SymInt", "SymInt", "double", "float", "bool", "int", "size_t"})
_DOUBLE = Ty("double")


def _returns(ops: list[Op]) -> Ty | None:
    """What every overload of an op returns, when one Tensor or one number (else None: not known)."""
    kinds = {o.schema.returns[0].type if len(o.schema.returns) == 1 else "" for o in ops}
    if kinds == {"Tensor"}:
        return _TENSOR
    return Ty("int64_t") if kinds and kinds <= _NUMBERS else None


def _top_level(text: str) -> list[str]:
    """The operands of an expression's top-level binary operators."""
    out, depth, start = [], 0, 0
    for m in re.finditer(r"<=|>=|==|!=|[-+*/%&|^<>()\[\]{}]", text):
        tok, i = m.group(), m.start()
        if tok in "([{":
            depth += 1
        elif tok in ")]}":
            depth -= 1
        elif depth == 0 and text[:i].strip() and text[:i].rstrip()[-1] not in _BEFORE_UNARY:
            out.append(text[start:i])
            start = m.end()
    out.append(text[start:])
    return [o for o in out if o.strip()]


# C++'s precedence of the binary operators a formula uses (smaller binds tighter)
_PRECEDENCE = {"*": 5, "/": 5, "%": 5, "+": 6, "-": 6, "<": 9, "<=": 9, ">": 9, ">=": 9, "==": 10, "!=": 10, "&": 11,
               "^": 12, "|": 13}
_TRAILING_OPERATOR = re.compile(r"(<=|>=|==|!=|[-+*/%&|^<>])\s*$")
_LEADING_OPERATOR = re.compile(r"\s*(<=|>=|==|!=|[-+*/%&|^<>])(?![=&|])")


def _left(s: str, at: int, tok: str) -> str:
    """The left operand of the operator ``tok`` at ``at``: a name, a number, a call, a parenthesized group, a method
    chain, and what operators of its precedence or tighter make of them (``grad * self`` in ``grad * self / x``)."""
    start = _unary_start(s, _operand_start(s, at))
    while (m := _TRAILING_OPERATOR.search(s, 0, start)) and _PRECEDENCE[m.group(1)] <= _PRECEDENCE[tok] and (
            not (before := s[:m.start()].rstrip()) or before[-1] not in _BEFORE_UNARY):
        if not before:
            break
        start = _unary_start(s, _operand_start(s, m.start()))
    return s[start:at]


def _unary_start(s: str, start: int) -> int:
    """Where an operand starts with the unary operators before it (``-2`` in ``self * -2 + other``)."""
    while (i := len(s[:start].rstrip())) and s[i - 1] in "-~!" and (
            not s[:i - 1].rstrip() or s[:i - 1].rstrip()[-1] in _BEFORE_UNARY):
        start = i - 1
    return start


def _right(s: str, at: int, tok: str) -> str:
    """The right operand of the operator ``tok`` that ends at ``at``, with what operators binding tighter make of it
    (``b * c`` in ``a - b * c``)."""
    start = at
    while start < len(s) and (s[start].isspace() or s[start] in "-~!"):
        start += 1
    end = _operand_end(s, start)
    while (m := _LEADING_OPERATOR.match(s, end)) and m.group(1) in _PRECEDENCE and (
            _PRECEDENCE[m.group(1)] < _PRECEDENCE.get(tok, 3)):
        end = _operand_end(s, m.end())
    return s[start:end]


def _operand_start(s: str, end: int) -> int:
    i = end
    while i > 0 and s[i - 1].isspace():
        i -= 1
    while i > 0:
        ch = s[i - 1]
        if ch in ")]":
            depth, j = 0, i - 1
            while j >= 0:
                depth += s[j] in ")]"
                depth -= s[j] in "(["
                if depth == 0:
                    break
                j -= 1
            i = max(j, 0)
        elif ch.isalnum() or ch in "_.":
            i -= 1
        elif s[max(i - 2, 0):i] == "::":
            i -= 2
        else:
            break
    return i


def _operand_end(s: str, start: int) -> int:
    j = start
    while j < len(s) and (s[j].isspace() or s[j] in "-~!"):
        j += 1
    while j < len(s):
        ch = s[j]
        if ch in "([":
            close = close_bracket(s, j, limit=len(s))
            if close < 0:
                return len(s)
            j = close + 1
        elif ch.isalnum() or ch in "_." or ch in "+-" and _EXPONENT.search(s, start, j):  # 1e-5
            j += 1
        elif s[j:j + 2] == "::":
            j += 2
        else:
            break
    return j
