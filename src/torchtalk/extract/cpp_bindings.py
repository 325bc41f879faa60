"""Bindings found among calls: TORCH_LIBRARY ``m.def``/``m.impl``/``m.fallback`` and
pybind11 ``.def*`` chains (any receiver; ``py::class_`` chains name the class)."""

from __future__ import annotations

import re

from ..model import Registration, RegistrationKind
from .cpp_state import WalkState
from .cpp_text import call_args, clean_target, collapse, string_value

PYBIND = frozenset({
    "def", "def_static", "def_property", "def_property_readonly", "def_readonly",
    "def_readwrite", "def_property_static", "def_property_readonly_static", "def_readonly_static",
})
BINDING_METHODS = PYBIND | {"impl", "fallback"}
_CLASS_ROOT = re.compile(r"(?:^|::|\.)(?:\w*class_|enum_)\s*<")
_RECV_MAX = 80
_KEY_MAX = 120


def u(s: str) -> str:
    """Undo the latin-1 view of the source for the rare non-ASCII text."""
    return s if s.isascii() else s.encode("latin-1").decode("utf-8", "replace")


def record_binding(w: WalkState, n, f, method: str, caller: int, lib) -> bool:
    """m.def / m.impl / m.fallback (TORCH_LIBRARY) and pybind11 .def*; True if recorded."""
    args_node = n.child_by_field_name("arguments")
    if args_node is None:
        return False
    args = [c for c in args_node.named_children if c.type != "comment"]
    if not args:
        return False
    fld = f.child_by_field_name("field")
    line = w.line(fld if fld is not None else n)  # chained .def: the line of this link
    recv = f.child_by_field_name("argument")
    recv_text = collapse(w.t(recv)) if recv is not None else ""
    first = w.t(args[0])
    name = _string_arg(first)
    if method == "fallback":
        if lib is None or len(args) != 1:
            return False
        w.regs.append(Registration(RegistrationKind.LIBRARY_FALLBACK, "", clean_target(first, line),
                                      lib[1], line, f"{recv_text[:_RECV_MAX]}.fallback", caller))
        return True
    if method == "impl":
        if name is None:
            return False
        key = lib[1] if lib else ""
        target = ""
        if len(args) > 1:
            key, target = _dispatch_arg(w.t(args[1]), key, line)
        op = name.split("(", 1)[0].strip().rsplit("::", 1)[-1]
        w.regs.append(Registration(RegistrationKind.LIBRARY_IMPL, u(op), u(target), key, line,
                                      f"{recv_text[:_RECV_MAX]}.impl", caller))
        return True
    plain_recv = recv is not None and recv.type == "identifier"
    if method == "def" and name is not None and ((lib is not None and plain_recv) or "(" in name):
        head = name.split("(", 1)[0].strip()
        ns = head.split("::", 1)[0] if "::" in head else (lib[0] if lib else "")
        target = ""
        for a in args[1:]:  # m.def(schema[, fn][, tags]): tags are a braced list
            at = w.t(a).strip()
            if not at.startswith("{") and "Tag::" not in at:
                target = clean_target(at, line)
                break
        w.regs.append(Registration(RegistrationKind.LIBRARY_DEF, u(head.rsplit("::", 1)[-1]), u(target), ns,
                                      line, u(collapse(name)), caller))
        return True
    if name is None:
        if method == "def" and first.replace(" ", "").startswith(("py::init", "pybind11::init", "torch::init")):
            name = "__init__"
        else:
            return False
    key, cls = _pybind_root(w, n, recv)
    target = clean_target(w.t(args[1]), line) if len(args) > 1 else ""
    if name == "__init__" and len(args) >= 1 and not target:
        target = clean_target(first, line)
    pyname = f"{cls}.{name}" if cls else name
    w.regs.append(Registration(RegistrationKind.PYBIND_DEF, u(pyname), u(target), u(key), line, f".{method}", caller))
    return True


def _pybind_root(w: WalkState, n, recv) -> tuple[str, str]:
    """(receiver text at the root of a .def chain, python class name or "")."""
    seen = [n.id]
    r = recv
    while r is not None and r.type == "call_expression":
        if r.id in w.pybind_roots:
            break
        fe = r.child_by_field_name("function")
        if fe is None or fe.type != "field_expression":
            break
        fld = fe.child_by_field_name("field")
        if fld is None or w.t(fld) not in PYBIND:
            break
        seen.append(r.id)
        r = fe.child_by_field_name("argument")
    if r is not None and r.id in w.pybind_roots:
        res = w.pybind_roots[r.id]
    else:
        res = _classify_root(w, r)
    for i in seen:
        w.pybind_roots[i] = res
    return res


def _classify_root(w: WalkState, r) -> tuple[str, str]:
    if r is None:
        return "", ""
    text = collapse(w.t(r))
    cls = ""
    if r.type == "call_expression":
        fn = r.child_by_field_name("function")
        if fn is not None and _CLASS_ROOT.search(w.t(fn)):
            # py::class_<X>(m, "X"), torch::class_<X>("ns", "X"), m.class_<X>("X")
            a = r.child_by_field_name("arguments")
            vals = [c for c in a.named_children if c.type != "comment"] if a is not None else []
            for v in reversed(vals[:2]):
                cls = _string_arg(w.t(v)) or ""
                if cls:
                    break
    elif r.type == "identifier":
        cls = _class_var(w, text, r.start_byte)
    return text[:_KEY_MAX], cls


def _class_var(w: WalkState, var: str, pos: int) -> str:
    """Python class bound to a variable: ``py::class_<X> cls(m, "X")`` or ``auto cls = ...``."""
    if w.class_vars is None:
        w.class_vars = []
        if "class_" in w.text or "enum_" in w.text:
            for m in _CLASS_VAR.finditer(w.text):
                v = m.group(1) or m.group(2)
                if v:
                    w.class_vars.append((m.start(), v, m.group(3)))
    best = ""
    for p, v, c in w.class_vars:
        if p > pos:
            break
        if v == var:
            best = c
    return best


_CLASS_VAR = re.compile(
    r"(?:\b(\w+)\s*=\s*)?(?:py::|pybind11::|torch::)?\b(?:\w*class_|enum_)\s*<[^;{]*?>\s*(\w+)?\s*"
    r"[({]\s*[\w:]+\s*,\s*\"([^\"]+)\""
)


_SELECTIVE = re.compile(r"^(?:c10::|torch::)?TORCH_SELECTIVE_(?:NAME|SCHEMA)\s*\((.*)\)\s*$", re.S)


def _string_arg(text: str) -> str | None:
    m = _SELECTIVE.match(text.strip())
    return string_value(m.group(1) if m else text)


_DISPATCH_CALL = re.compile(r"^(?:torch::)?dispatch\s*\(", re.S)
_KEY = re.compile(r"(?:c10::)?(?:DispatchKey|DispatchKeySet)::(\w+)|kCPU|kCUDA|kMeta")


def _dispatch_arg(text: str, key: str, line: int) -> tuple[str, str]:
    """Second argument of m.impl: ``torch::dispatch(DispatchKey::CPU, TORCH_FN(f))`` -> (CPU, f)."""
    s = text.strip()
    if _DISPATCH_CALL.match(s):
        args, _ = call_args(s, s.index("("))
        if len(args) >= 2:
            m = _KEY.search(args[0])
            if m:
                key = m.group(1) or m.group(0)[1:]
            return key, clean_target(args[1], line)
    return key, clean_target(s, line)
