"""Recognising where Python code gives an op meaning (decompositions, metas, lowerings...).

Forms seen in PyTorch 2.6 and handled here:

- ``@register_decomposition(aten.X)``, ``@register_decomposition([aten.X.default, aten.X.out])``
  (torch/_decomp, torch/_refs, torch/_inductor/decomposition.py)
- ``@register_meta(...)`` (torch/_meta_registrations.py), ``@register_op_impl(...)``
  (fake tensor impls)
- ``@register_lowering(aten.X)``, ``register_lowering(aten.X)(fn)``, ``make_fallback(aten.X)``,
  ``register_pointwise(aten.X)``, ``register_inplace(aten.X_, X)`` (torch/_inductor)
- ``@aten.X.default.py_impl(DispatchKey.Autograd)`` -> python_impl
- public functions of torch/_refs/** -> ref (done by the module extractor)

Ops are normalised to "ns.name[.overload]": module aliases are expanded
(``aten = torch._ops.ops.aten``), ``torch.ops.``/``torch._ops.ops.`` dropped; the overload is kept as written,
``.default`` included (Note [Packet or overload]).

Note [Packet or overload]
~~~~~~~~~~~~~~~~~~~~~~~~~
``@register_decomposition(aten.zeros.default)`` names an OpOverload: torch/_decomp/__init__.py's
``_add_op_to_registry`` registers it alone, so only ``zeros`` (the overload with the empty name) gets the
function. ``@register_decomposition(aten.zeros)`` names the OpOverloadPacket: every overload of zeros is
registered (zeros.names, zeros.out, ...). Lowerings, metas and fake impls take the same two forms. So the op
text keeps ``.default``: "aten.zeros.default" is one overload, "aten.zeros" the packet, "aten.add.Tensor" one
overload; graph/registry.py's ``registered_ops`` reads them so.
"""

from __future__ import annotations

from ast import AST, List, Set, Tuple

from ..model import PyOpRefKind
from .pyast import dotted

# callee's last name -> PyOpRef.kind
REGISTRARS: dict[str, PyOpRefKind] = {
    "register_decomposition": PyOpRefKind.DECOMPOSITION,
    "_register_jit_decomposition_for_jvp": PyOpRefKind.DECOMPOSITION,
    "register_meta": PyOpRefKind.META,
    "register_op_impl": PyOpRefKind.FAKE,
    "register_lowering": PyOpRefKind.LOWERING,
    "register_pointwise": PyOpRefKind.LOWERING,
    "register_pointwise_numeric": PyOpRefKind.LOWERING,
    "register_pointwise_numeric_ldf64": PyOpRefKind.LOWERING,
    "register_foreach_pointwise": PyOpRefKind.LOWERING,
    "make_fallback": PyOpRefKind.FALLBACK,
    "register_inplace": PyOpRefKind.DECOMPOSITION,  # LOWERING under torch/_inductor, see kind_for
}

_OPS_PREFIXES = ("torch.ops.", "torch._ops.ops.")


def kind_for(callee_last: str, relpath: str) -> PyOpRefKind | None:
    kind = REGISTRARS.get(callee_last)
    if kind is not None and callee_last == "register_inplace" and relpath.startswith("torch/_inductor/"):
        return PyOpRefKind.LOWERING
    return kind


def op_name(expr: AST, aliases: dict[str, str], local: dict[str, list[str]] | None = None) -> str | None:
    """``aten.add.Tensor`` -> "aten.add.Tensor"; ``torch.ops.aten.relu.default`` -> "aten.relu.default"
    (Note [Packet or overload]).

    None when the expression is not a dotted name with at least one dot after alias
    expansion (a bare variable such as ``op`` says nothing about which op it is), or
    is neither under ``torch.ops`` nor an ``aten.``/``prims.``/``torch.`` name.
    """
    d = dotted(expr)
    if d is None:
        return None
    head, dot, rest = d.partition(".")
    target = None
    if local and head in local and len(local[head]) == 1:
        target = local[head][0]
    elif head in aliases:
        target = aliases[head]
    if target is not None and target != head:
        d = target + dot + rest
    for p in _OPS_PREFIXES:
        if d.startswith(p):
            d = d[len(p):]
            break
    else:
        # not under torch.ops: keep only aten/prims written bare and Python callables
        # registered by path (``torch.as_tensor``); skip predicates such as
        # ``op_implementations_dict.__contains__``
        if not d.startswith(("aten.", "prims.", "torch.")):
            return None
    if "." not in d:
        return None
    return d


def op_names(expr: AST, aliases: dict[str, str], local: dict[str, list[str]] | None = None) -> list[str]:
    """Like op_name, also for a list/tuple/set of ops."""
    if expr.__class__ in (List, Tuple, Set):
        out = []
        for e in expr.elts:
            n = op_name(e, aliases, local)
            if n is not None and n not in out:
                out.append(n)
        return out
    n = op_name(expr, aliases, local)
    return [n] if n is not None else []


def ref_op(module: str, name: str) -> str:
    """Op a public torch._refs function stands for: torch._refs.special.zeta -> aten.special_zeta."""
    sub = module[len("torch._refs"):].lstrip(".")
    prefix = {"special": "special_", "linalg": "linalg_", "fft": "fft_"}.get(sub, "")
    return f"aten.{prefix}{name}"
