"""Which derivatives.yaml entry an op's autograd kernel uses: its own, or the one torchgen gives it.

Note [The entry an op uses]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
Most ops that autograd differentiates have no entry of their own in derivatives.yaml: ``relu_``, ``add_.Tensor``,
``index_put_`` and every other in-place op use their functional op's formula, and the generated VariableType kernel
of ``relu_`` makes a ``ReluBackward0``. torchgen decides which entry in ``match_differentiability_info``
(torchgen/api/autograd.py), in this order, and so does ``derivative_entry``:

1. the op's own entry (a ``view_copy`` op without one has its view op's: ``add_view_copy_derivatives``);
2. an op that is not a ``_foreach_`` op: the entry of the functional op of the same signature (Note [Signatures]
   in model/schema.py), ``relu`` for ``relu_``;
3. a generated (autogen) variant: the entry of the mutable op of the same signature;
4. a ``_foreach_`` op, in a tree whose torchgen has the rule (``gen_foreach_derivativeinfo`` in
   torchgen/api/autograd.py: 2.6.0 has it, 1.13.1 does not, and there no foreach op is differentiable and step 2
   does not set them apart): the first functional entry, in the file's order, of the op it applies to each tensor
   (``exp`` for ``_foreach_exp`` and ``_foreach_exp_``) with as many arguments of the same types, a list's element
   standing for the list; and the exceptions of two tables of that source, read from it: an entry with more
   arguments for ``_foreach_add.Scalar`` and kin (their ``alpha``), the in-place ``zero_`` for ``_foreach_zero_``.

out= variants are left out: torchgen matches them too, but their kernels refuse to differentiate
("don't support automatic differentiation"), so no formula of theirs ever runs.
"""

from __future__ import annotations

import ast
import contextlib
import re
from dataclasses import dataclass
from pathlib import Path

from ..model import Derivative, DerivativeFormula, DerivativeMatch, Op
from ..model.paths import TORCHGEN_AUTOGRAD
from ..model.schema import Signature
from ..store.codec import codec, row_fact
from ..store.reader import Index
from .registry import registry

Entries = list[tuple[Derivative, list[DerivativeFormula]]]
_FOREACH = "_foreach_"
_FOREACH_RULE = "def gen_foreach_derivativeinfo("
_LIST = re.compile(r"^(.+)\[\d*\]$")  # Tensor[] / Scalar[] / int[2]: a list and its element's type


def _derivatives(ix: Index) -> dict[str, Entries]:
    """derivatives.yaml's entries by the op they name, in the file's order."""
    def build() -> dict[str, Entries]:
        formulas: dict[int, list[DerivativeFormula]] = {}
        for row in ix.q(f"SELECT {codec(DerivativeFormula).select()} FROM derivative_formula ORDER BY id"):
            f: DerivativeFormula = row_fact(DerivativeFormula, row, ix.path_of)
            formulas.setdefault(f.derivative, []).append(f)
        out: dict[str, Entries] = {}
        for row in ix.q(f"SELECT {codec(Derivative).select()} FROM derivative ORDER BY id"):
            d: Derivative = row_fact(Derivative, row, ix.path_of)
            out.setdefault(d.op_full_name, []).append((d, formulas.get(d.id, [])))
        return out
    table: dict[str, Entries] = ix.cached("derivatives", build)
    return table


def view_of_copy(ix: Index, op: Op) -> Op | None:
    """The view op whose derivatives.yaml entry a view_copy op without one of its own uses (torchgen's
    load_derivatives.add_view_copy_derivatives: ``alias_copy`` differentiates as ``alias``, node
    AliasBackward0_copy)."""
    if "view_copy" not in op.tags or op.full_name in _derivatives(ix) or not op.name.endswith("_copy"):
        return None
    view = registry(ix).by_full.get(op.full_name.replace("_copy", "", 1))
    return view if view is not None and view.full_name in _derivatives(ix) else None


def _by_signature(ix: Index) -> tuple[dict[Signature, str], dict[Signature, str]]:
    """(functional entries by signature, the other entries by signature): torchgen's
    ``functional_info_by_signature`` and ``non_functional_info_by_signature``, in the file's order (a later entry of
    the same signature replaces an earlier one in its place, as in its dicts)."""
    def build() -> tuple[dict[Signature, str], dict[Signature, str]]:
        reg = registry(ix)
        functional: dict[Signature, str] = {}
        other: dict[Signature, str] = {}
        for full in _derivatives(ix):
            op = reg.by_full.get(full)
            if op is not None:
                (functional if op.schema.is_functional else other)[op.schema.signature()] = full
        return functional, other
    out: tuple[dict[Signature, str], dict[Signature, str]] = ix.cached("derivatives_by_signature", build)
    return out


@dataclass(frozen=True)
class _ForeachRule:
    """What the tree's torchgen/api/autograd.py says of foreach ops (step 4 of Note [The entry an op uses]): whether
    it has the rule, and its two tables of exceptions, read from its source (they change between releases)."""

    present: bool
    inplace_ref: frozenset[str] = frozenset()  # _foreach_with_inplace_ref: may take an in-place op's entry
    any_length: frozenset[str] = frozenset()  # _skip_argument_len_check: may take an entry with more arguments


def _foreach_rule(ix: Index) -> _ForeachRule:
    def build() -> _ForeachRule:
        if ix.source_root is None:
            return _ForeachRule(False)
        try:
            text = (Path(ix.source_root) / TORCHGEN_AUTOGRAD).read_text(encoding="utf-8", errors="replace")
            tree = ast.parse(text) if _FOREACH_RULE in text else None
        except (OSError, SyntaxError, ValueError):
            return _ForeachRule(False)
        if tree is None:
            return _ForeachRule(False)
        tables: dict[str, frozenset[str]] = {}
        for s in tree.body:
            if s.__class__ is ast.Assign and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                with contextlib.suppress(ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    value = ast.literal_eval(s.value)
                    if isinstance(value, (set, frozenset, list, tuple)):
                        tables[s.targets[0].id] = frozenset(str(v) for v in value)
        return _ForeachRule(True, tables.get("_foreach_with_inplace_ref", frozenset()),
                            tables.get("_skip_argument_len_check", frozenset()))
    rule: _ForeachRule = ix.cached("foreach_derivative_rule", build)
    return rule


def _element(type_: str) -> str | None:
    m = _LIST.match(type_)
    return m.group(1) if m else None


def _foreach_reference(ix: Index, op: Op, rule: _ForeachRule) -> str | None:
    """torchgen's ``gen_foreach_derivativeinfo``: the first functional entry (then, for an in-place op its table
    names, the first other entry) that ``is_reference_for_foreach``: of the op named as the foreach op without its
    prefix, not in-place unless the table allows it, with as many non-out arguments unless the other table allows
    more, the foreach argument's type or its element's in each place the two have."""
    reg = registry(ix)
    base = op.schema.base_name[len(_FOREACH):]
    args = [a for a in op.schema.arguments if not a.out]
    name = op.full_name

    def reference(full: str) -> bool:
        ref = reg.by_full[full].schema
        ref_args = [a for a in ref.arguments if not a.out]
        return (ref.base_name == base and (not ref.is_inplace or name in rule.inplace_ref)
                and (name in rule.any_length or len(ref_args) == len(args))
                and all(r.type in (a.type, _element(a.type)) for a, r in zip(args, ref_args, strict=False)))

    functional, other = _by_signature(ix)
    found = next((full for full in functional.values() if reference(full)), None)
    if found is None and op.schema.is_inplace and name in rule.inplace_ref:
        found = next((full for full in other.values() if reference(full)), None)
    return found


def derivative_entry(ix: Index, op: Op) -> tuple[str, DerivativeMatch] | None:
    """The op whose derivatives.yaml entries ``op``'s autograd kernel uses, and how torchgen gave them to it
    (Note [The entry an op uses]); None when it has none."""
    table = _derivatives(ix)
    if op.full_name in table:
        return op.full_name, DerivativeMatch.EXACT
    view = view_of_copy(ix, op)
    if view is not None:
        return view.full_name, DerivativeMatch.VIEW_COPY
    if op.schema.is_out:
        return None
    functional, other = _by_signature(ix)
    rule = _foreach_rule(ix)
    foreach = op.schema.name.startswith(_FOREACH) and rule.present
    sig = op.schema.signature()
    if not foreach and sig in functional:
        return functional[sig], DerivativeMatch.FUNCTIONAL
    if op.autogen_from and sig in other:
        return other[sig], DerivativeMatch.MUTABLE
    if foreach:
        ref = _foreach_reference(ix, op, rule)
        if ref is not None:
            return ref, DerivativeMatch.FOREACH
    return None


def derivatives_of(ix: Index, op: Op) -> Entries:
    """The derivatives.yaml entries ``op``'s autograd kernel uses (its own, or those torchgen gives it)."""
    found = derivative_entry(ix, op)
    return _derivatives(ix).get(found[0], []) if found is not None else []
