"""Registrations found by pattern: DispatchStub macros, PyMethodDef and PyGetSetDef tables.

Both are found in the text (the macros often parse as junk at namespace scope, tables
hold ``#ifdef`` lines that break initializer parsing) and then checked against the tree
so that hits inside comments, strings and ``#define`` bodies are dropped.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from ..model import Registration, RegistrationKind
from ..model.paths import backend_of_path
from .cpp_state import WalkState
from .cpp_text import (
    call_args,
    clean_target,
    collapse,
    match_close,
    skip_quoted,
    split_args,
    string_value,
    strip_comments,
)

_DISPATCH = re.compile(r"\b((?:ALSO_)?REGISTER_(?:\w+_)?DISPATCH|DECLARE_DISPATCH|DEFINE_DISPATCH)\s*\(")
_ARCH_KEY = {
    "REGISTER_CUDA_DISPATCH": "CUDA", "REGISTER_HIP_DISPATCH": "HIP", "REGISTER_MPS_DISPATCH": "MPS",
    "REGISTER_XPU_DISPATCH": "XPU", "REGISTER_MTIA_DISPATCH": "MTIA",
    "REGISTER_PRIVATEUSE1_DISPATCH": "PrivateUse1",
}
# Note [Slot tables]: CPython's PyMappingMethods, PySequenceMethods and PyNumberMethods hold a type's operators
# by position (``static PyMappingMethods THPVariable_as_mapping = {THPVariable_length, THPVariable_getitem,
# THPVariable_setitem};``, given to torch._C.TensorBase as ``&THPVariable_as_mapping, /* tp_as_mapping */``): each
# function is the binding of a dunder (``t[i]`` calls THPVariable_getitem), recorded as a PyMethodDef entry of that
# name in a table named after the struct (bindtext.py finds the type it is given to, as for tp_methods). The
# dunders per slot, in CPython's order (None: a reserved slot); a designated initializer (.mp_subscript = f) names
# its slot.
_SLOTS = {
    "PyMappingMethods": (("mp_length", "__len__"), ("mp_subscript", "__getitem__"),
                         ("mp_ass_subscript", "__setitem__")),
    "PySequenceMethods": (("sq_length", "__len__"), ("sq_concat", "__add__"), ("sq_repeat", "__mul__"),
                          ("sq_item", "__getitem__"), ("was_sq_slice", None), ("sq_ass_item", "__setitem__"),
                          ("was_sq_ass_slice", None), ("sq_contains", "__contains__"),
                          ("sq_inplace_concat", "__iadd__"), ("sq_inplace_repeat", "__imul__")),
    "PyNumberMethods": tuple((f"nb_{n}", d) for n, d in (
        ("add", "__add__"), ("subtract", "__sub__"), ("multiply", "__mul__"), ("remainder", "__mod__"),
        ("divmod", "__divmod__"), ("power", "__pow__"), ("negative", "__neg__"), ("positive", "__pos__"),
        ("absolute", "__abs__"), ("bool", "__bool__"), ("invert", "__invert__"), ("lshift", "__lshift__"),
        ("rshift", "__rshift__"), ("and", "__and__"), ("xor", "__xor__"), ("or", "__or__"), ("int", "__int__"),
        ("reserved", None), ("float", "__float__"), ("inplace_add", "__iadd__"), ("inplace_subtract", "__isub__"),
        ("inplace_multiply", "__imul__"), ("inplace_remainder", "__imod__"), ("inplace_power", "__ipow__"),
        ("inplace_lshift", "__ilshift__"), ("inplace_rshift", "__irshift__"), ("inplace_and", "__iand__"),
        ("inplace_xor", "__ixor__"), ("inplace_or", "__ior__"), ("floor_divide", "__floordiv__"),
        ("true_divide", "__truediv__"), ("inplace_floor_divide", "__ifloordiv__"),
        ("inplace_true_divide", "__itruediv__"), ("index", "__index__"), ("matrix_multiply", "__matmul__"),
        ("inplace_matrix_multiply", "__imatmul__"))),
}
_SLOT_TABLE = re.compile(r"\b(PyMappingMethods|PySequenceMethods|PyNumberMethods)\s+(\w+)\s*=?\s*\{")
_PLAIN_FN = re.compile(r"[A-Za-z_][\w:]*")
_TABLE = re.compile(r"\b(PyMethodDef|PyGetSetDef)\s*>?\s*(\w+)\s*(?:\[\s*\w*\s*\])?\s*=\s*\{")
_NAME_CAST = re.compile(r"^\s*\(\s*(?:const\s+)?char\s*\*\s*\)")
_NOT_CODE = frozenset({
    "comment", "string_literal", "string_content", "raw_string_literal", "raw_string_content",
    "char_literal", "preproc_arg", "system_lib_string", "escape_sequence",
})
_NOT_CODE_PARENT = frozenset({"preproc_def", "preproc_function_def", "preproc_call", "string_literal"})


class Regs:
    MACROS = frozenset({
        "DECLARE_DISPATCH", "DEFINE_DISPATCH", "REGISTER_DISPATCH", "REGISTER_ARCH_DISPATCH",
        "REGISTER_AVX512_DISPATCH", "REGISTER_AVX2_DISPATCH", "REGISTER_VSX_DISPATCH",
        "REGISTER_ZVECTOR_DISPATCH", "REGISTER_SVE256_DISPATCH", "REGISTER_ALL_CPU_DISPATCH",
        "REGISTER_NO_CPU_DISPATCH", "REGISTER_CUDA_DISPATCH", "REGISTER_XPU_DISPATCH",
        "REGISTER_HIP_DISPATCH", "REGISTER_MPS_DISPATCH", "REGISTER_MTIA_DISPATCH",
        "REGISTER_PRIVATEUSE1_DISPATCH", "ALSO_REGISTER_AVX512_DISPATCH",
        "ALSO_REGISTER_SVE256_DISPATCH", "REGISTER_NO_AVX512_DISPATCH",
    })

    def __init__(self, w: WalkState) -> None:
        self.w = w
        self.text = w.text
        self._nl: list[int] | None = None

    def run(self) -> None:
        if "DISPATCH" in self.text:
            self.dispatch()
        if "PyMethodDef" in self.text or "PyGetSetDef" in self.text:
            self.tables()
        if "Methods" in self.text:
            self.slot_tables()

    def line_at(self, pos: int) -> int:
        if self._nl is None:
            self._nl = [m.start() for m in re.finditer("\n", self.text)]
        return bisect_right(self._nl, pos - 1) + 1 + self.w.line_base

    def is_code(self, start: int, end: int) -> bool:
        node = self.w.root.descendant_for_byte_range(start, end)
        if node is None:
            return True
        if node.type in _NOT_CODE:
            return False
        parent = node.parent
        return parent is None or parent.type not in _NOT_CODE_PARENT

    def dispatch(self) -> None:
        text = self.text
        path_key = backend_of_path(self.w.relpath) or "CPU"  # Note [Backend of a path]
        for m in _DISPATCH.finditer(text):
            macro = m.group(1)
            if not self.is_code(m.start(), m.start(1) + len(macro)):
                continue
            args, _ = call_args(text, m.end() - 1)
            args = [collapse(a) for a in args]
            if not args or not args[0] and len(args) == 1:
                continue
            line = self.line_at(m.start())
            scope = self.w.enclosing_def(m.start())
            if macro == "DECLARE_DISPATCH":
                if len(args) < 2:
                    continue
                reg = (RegistrationKind.DECLARE_DISPATCH, args[-1], args[0], self.w.namespace_at(m.start()))
            elif macro == "DEFINE_DISPATCH":
                reg = (RegistrationKind.DEFINE_DISPATCH, args[0], "", self.w.namespace_at(m.start()))
            else:
                if macro == "REGISTER_ARCH_DISPATCH":
                    fn = args[2] if len(args) > 2 else ""
                elif macro == "REGISTER_NO_CPU_DISPATCH":
                    fn = ""
                else:
                    fn = args[1] if len(args) > 1 else ""
                key = path_key if macro == "REGISTER_DISPATCH" else _ARCH_KEY.get(macro, "CPU")
                reg = (RegistrationKind.REGISTER_DISPATCH, args[0], clean_target(fn, line), key)
            kind, name, target, key = reg
            self.w.regs.append(Registration(kind, name, target, key, line, macro, scope))

    def tables(self) -> None:
        text = self.text
        for m in _TABLE.finditer(text):
            if not self.is_code(m.start(), m.start() + 11):
                continue
            # Note [Attribute bindings]: a PyGetSetDef entry {"volatile", (getter)get, (setter)set, doc, closure}
            # binds reading and assigning the attribute; each function it names is a binding of its own
            kinds = _METHOD if m.group(1) == "PyMethodDef" else _GETSET
            table = m.group(2)
            open_idx = m.end() - 1
            end = match_close(text, open_idx)
            scope = self.w.enclosing_def(m.start())
            for start, stop in _braced_items(text, open_idx + 1, end - 1):
                fields = split_args(text[start + 1 : stop - 1])
                # {(char*)"run_backward", ...} (python_engine.cpp): the name under a C cast
                name = string_value(_NAME_CAST.sub("", fields[0], count=1)) if fields else None
                if not name:
                    continue
                line = self.line_at(start)
                for i, kind in enumerate(kinds, 1):
                    target = clean_target(fields[i], line) if len(fields) > i else ""
                    if target or kind is RegistrationKind.PYMETHODDEF:
                        self.w.regs.append(Registration(kind, name, target, table, line, table, scope))


    def slot_tables(self) -> None:
        """Note [Slot tables]: each function of a PyMappingMethods / PySequenceMethods / PyNumberMethods initializer,
        a PYMETHODDEF entry named by its slot's dunder."""
        text = self.text
        for m in _SLOT_TABLE.finditer(text):
            if not self.is_code(m.start(), m.start() + len(m.group(1))):
                continue
            slots = _SLOTS[m.group(1)]
            open_idx = m.end() - 1
            end = match_close(text, open_idx)
            line = self.line_at(m.start())
            scope = self.w.enclosing_def(m.start())
            named = {slot: dunder for slot, dunder in slots}
            for i, field in enumerate(_slot_fields(text[open_idx + 1 : end - 1])):
                slot, eq, value = field.partition("=") if field.startswith(".") else ("", "", field)
                dunder = named.get(slot.strip(" .")) if eq else (slots[i][1] if i < len(slots) else None)
                target = clean_target(value, line)
                if dunder and _PLAIN_FN.fullmatch(target):
                    self.w.regs.append(Registration(RegistrationKind.PYMETHODDEF, dunder, target, m.group(2), line,
                                                    m.group(2), scope))


def _slot_fields(body: str) -> list[str]:
    """The initializers of a slot struct, comments dropped, split at top-level commas (also outside ``<...>``:
    ``wrap_tuple_fn<decltype(&f), &f>`` is one)."""
    body = strip_comments(body)
    fields, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}" or ch == ">" and body[i - 1] != "-":  # not the arrow of p->f
            depth -= 1
        elif ch == "," and depth == 0:
            fields.append(body[start:i].strip())
            start = i + 1
    if body[start:].strip():
        fields.append(body[start:].strip())
    return fields


_METHOD = (RegistrationKind.PYMETHODDEF,)
_GETSET = (RegistrationKind.PY_GETTER, RegistrationKind.PY_SETTER)  # fields 1 and 2 of an entry


def _braced_items(text: str, i: int, end: int):
    """(start, end) of each ``{...}`` directly inside text[i:end], skipping strings/comments."""
    while i < end:
        ch = text[i]
        if ch == "{":
            j = match_close(text, i)
            yield i, j
            i = j
        elif ch == '"' or ch == "'":
            i = skip_quoted(text, i)
        elif ch == "/" and text.startswith(("//", "/*"), i):
            stop = text.find("\n" if text[i + 1] == "/" else "*/", i + 2)
            i = end if stop < 0 else stop + 1
        else:
            i += 1
