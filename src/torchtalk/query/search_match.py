"""How search matches a query against a name, as a contributor spells it.

Note [Search spellings]: a query is the name as an answer prints it or as code writes it: ``softmax``,
``at::native::index_select`` (a C++ function's qualified name), ``aten::add`` / ``torch.ops.aten.add`` (an op),
``torch.Tensor.masked_fill_`` (the binding ``Tensor.masked_fill_``), ``torch.nn.functional.layer_norm`` /
``F.layer_norm`` (a Python function), or words (``flash attention``: a name holding every word). Each kind of
name is matched on the part of the query that spells it: the last component for a bare name, with the qualifier
checked against the name's own (``at::native::add_out`` finds ``at::native::add_out``, never
``at::cpu::add_out``); exact, then prefix, then substring, as before. An op's name past its leading underscores
matches as a prefix (``conv_depthwise2d`` finds the op ``_conv_depthwise2d`` with the prefixes, not after every
helper that contains it). A C++ name ending in template arguments (``Vectorized<float>``, as an answer prints a class
template's specialization, or ``at::vec::Vectorized<c10::Half>``, as code writes it) is matched on the name without
them, and names the classes those arguments make: the specializations for them (their namespaces aside), or the primary
template where no specialization is for them (the one C++ instantiates); a C++ function of the name is listed too (a
function template's instance), no op, binding or Python name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum

from ..model.cpp import split_template_args

# Qualifiers that name an op (ops are at::X, at::native::X kernels, aten::X in schemas and torch.ops.aten.X in Python)
_OP_QUALIFIERS = ("torch.ops.aten.", "aten::", "aten.", "at::native::", "at::_ops::", "at::", "torch::")
_DISPATCHER_PREFIXES = ("torch.ops.aten.", "aten::", "aten.")  # an op as the dispatcher names it, nothing else
_PY_ALIASES = {"F.": "torch.nn.functional.", "nn.": "torch.nn.", "torch.Tensor.": "Tensor."}


class Group(IntEnum):
    """A hit's place among the hits of its match kind (exact, prefix, ...), best first: hits sort by (match kind,
    group, name length, name)."""

    NAMED_CLASS = 0  # a public class named as the query spells it, case too (Note [Classes by their spelling])
    OP = 1
    BINDING = 2
    PUBLIC_PY = 3  # a Python function or class of a public module, or a class a public package exports
    STUB = 4
    CPP = 5  # a C++ function, GPU kernel or class
    PRIVATE_PY = 6  # a Python function or class of a private module (torch._refs) or ONNX's symbolic functions
    AUTOGRAD_NODE = 7
    FLOOD = 8  # a name's definitions past the first few (Note [Names that flood] in search.py)


# Note [Classes by their spelling]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Search matches names whatever their case: "linear" finds the op linear and the class Linear. But a query spelled as
# a class is, case and all ("Linear", "torch.nn.Linear", "TensorIterator", "at::Tensor"), names that class: it leads
# (Group.NAMED_CLASS), before the op linear and the bindings and functions named linear, which follow it. Classes
# are CamelCase and ops, functions and bindings mostly are not, so "linear" keeps its order (the op first, the class
# with the Python functions). A private Python class leads only when a public package exports it (torch._tensor.Tensor
# is torch.Tensor); a class named so in a private module does not.


def rank_l(q: str, n: str) -> int | None:
    """exact 0, prefix 1, substring 2, else None; both already lower-case."""
    if n == q:
        return 0
    if n.startswith(q):
        return 1
    if q in n:
        return 2
    return None


@dataclass(frozen=True)
class Query:
    """A search query, read once (Note [Search spellings])."""

    text: str  # as asked
    words: tuple[str, ...]  # lower-cased; one word for most queries
    op: str  # the op name it spells, lower-cased ("add" for aten::add)
    binding: str  # the Python binding name it spells ("tensor.masked_fill_" for torch.Tensor.masked_fill_)
    cpp_scope: str  # a C++ query's qualifier ("at::native" for at::native::add_out), "" for none
    py_scope: str  # a dotted query's module part ("torch.nn.functional" for F.layer_norm), "" for none
    last: str  # the name it ends in: the C++ or Python name's last component, lower-cased
    op_only: bool = False  # spelled as the dispatcher names an op (aten::add, torch.ops.aten.add): ops only
    dotted: str = ""  # a one-word query as Python spells it, case kept ("torch.nn.Linear" for nn.Linear)
    targs: str = ""  # the template arguments a C++ name ends in, as args_key reads them ("float" for Vectorized<float>)

    @property
    def spelled(self) -> str:
        """The name a one-word query ends in, case kept ("Linear" for torch.nn.Linear, "Tensor" for at::Tensor,
        "Vectorized" for Vectorized<float>)."""
        name = split_template_args(self.text)[0] if self.targs else self.text
        return "" if len(self.words) > 1 else name.rsplit("::", 1)[-1].rsplit(".", 1)[-1]

    @property
    def fts(self) -> list[str]:
        """The words the trigram index can look up (three characters or more)."""
        return [w for w in (self.words if len(self.words) > 1 else (self.last,)) if len(w) >= 3]


_NAMESPACES = re.compile(r"\b\w+::")


def args_key(targs: str) -> str:
    """Template arguments as a specialization's are compared: no spaces, no namespaces (``c10::Half, int`` is
    ``Half,int``, as ``Vectorized<Half>`` is written in its namespace)."""
    return _NAMESPACES.sub("", re.sub(r"\s+", "", targs))


def parse(text: str) -> Query:
    t = text.strip()
    name, targs = split_template_args(t) if t.endswith(">") else (t, "")
    if targs.strip() and name and not any(ch.isspace() for ch in name):  # at::vec::Vectorized<c10::Half, 2>
        low = t.lower()
        cpp_scope, _, last = name.lower().rpartition("::")
        # op and binding: the text as asked, which no op or Python name is
        return Query(t, (low,), low, low, cpp_scope, "", last, targs=args_key(targs))
    words = tuple(w.lower() for w in t.split())
    if len(words) > 1:
        joined = "_".join(words)
        return Query(t, words, joined, joined, "", "", joined)
    low = t.lower()
    op = low
    for prefix in _OP_QUALIFIERS:
        if low.startswith(prefix.lower()):
            op = low[len(prefix):]
            break
    op_only = low.startswith(_DISPATCHER_PREFIXES)
    dotted = t
    for alias, full in _PY_ALIASES.items():
        if t.startswith(alias):
            dotted = full + t[len(alias):]
            break
    binding = dotted.lower()
    cpp_scope, last = "", low
    if "::" in low:
        cpp_scope, last = low.rsplit("::", 1)
    py_scope = ""
    if "." in binding and "::" not in low:
        py_scope, last = binding.rsplit(".", 1)
    return Query(t, (low,), op, binding, cpp_scope, py_scope, last, op_only, dotted)


def rank(q: Query, name_l: str) -> int | None:
    """How a bare name (an op's, a stub's, a node's, a C++ or Python function's own name) matches the query."""
    if len(q.words) > 1:
        found = rank_l(q.last, name_l)
        return found if found is not None else (2 if all(w in name_l for w in q.words) else None)
    return rank_l(q.last, name_l)


def rank_op(q: Query, full_l: str, name_l: str) -> int | None:
    """An op by its full name (``add.tensor``) or its name; past leading underscores as a prefix."""
    if len(q.words) > 1:
        return rank(q, name_l)
    found = [r for r in (rank_l(q.op, full_l), rank_l(q.op, name_l)) if r is not None]
    if q.op.endswith("_out") and full_l == q.op[:-4] + ".out":  # at::native::add_out: the kernel of add.out
        found.append(0)
    bare = name_l.lstrip("_")
    if bare != name_l and rank_l(q.op, bare) == 0:
        found.append(1)
    joined = rank_l(q.op, name_l.replace("_", "")) if not found and "_" not in q.op and "_" in name_l else None
    if joined is not None:
        found.append(joined)  # layernorm: layer_norm, as words run together (exact, then prefix, then a part)
    return min(found, default=None)


def rank_qualified(q: Query, name_l: str, qualified_l: str, sep: str) -> int | None:
    """A C++ (``sep`` "::") or Python (".") function by its name, when the query's qualifier, if any, ends its own
    qualifier: ``native::add_out`` and ``at::native::add_out`` find ``at::native::add_out``."""
    if len(q.words) > 1:
        return rank(q, name_l)
    scope = q.cpp_scope if sep == "::" else q.py_scope
    if not scope:  # unqualified: by its name; qualified the other language's way (a::b for a Python name): none
        return None if q.cpp_scope or q.py_scope else rank(q, name_l)
    head = qualified_l[:-len(name_l) - len(sep)] if qualified_l.endswith(sep + name_l) else None
    if head is None or not (head == scope or head.endswith(sep + scope) or sep == "." and _reexported(head, scope)):
        return None
    return rank(q, name_l)


def _reexported(head: str, scope: str) -> bool:
    """A class's method by its public path: torch.nn.Linear.forward is torch.nn.modules.linear.Linear.forward
    (torch.nn re-exports the class), torch.optim.AdamW.step torch.optim.adamw.AdamW.step."""
    package, _, cls = scope.rpartition(".")
    return bool(package) and head.endswith("." + cls) and head.startswith(package + ".")
