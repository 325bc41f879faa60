"""The aten ops and kernels registered by hand in C++, outside native_functions.yaml, read once per index version.

Note [Hand-registered aten kernels]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
native_functions.yaml is not the only place an aten op gets a kernel. A ``TORCH_LIBRARY_IMPL(aten, Key, m)`` block
registers one per ``m.impl`` line, for any key, as the generated Register<Key>.cpp files do:
``m.impl(TORCH_SELECTIVE_NAME("aten::mul.Tensor"), TORCH_FN(mul_tensor))`` in ``TORCH_LIBRARY_IMPL(aten, Vulkan, m)``
is mul.Tensor's Vulkan kernel, ``m.impl("convolution_overrideable", TORCH_FN(convolution_overrideable))`` in
``TORCH_LIBRARY_IMPL(aten, XPU, m)`` convolution_overrideable's XPU one. The op is named with or without ``aten::``
(no overload: the default one); the kernel is written as C++ names it from the block's namespaces (``mul_tensor``
inside at::native::vulkan::ops, ``native::det`` inside at::functorch), so its definition is looked up from there
outward, as C++ does. Each is a row of the op's dispatch table, its ``loc`` the m.impl line (``EntryOrigin.LIBRARY``),
and from there a KERNEL edge like a yaml kernel's. Not kernels, and so no rows:
``CppFunction::makeFallthrough()`` (the key passes the op on: NamedRegistrations.cpp's 517 lines) and keys this
vocabulary does not know. A key the yaml already registers for the op keeps the yaml's kernel: two kernels for one
(op, key) is a mistake the dispatcher warns about at load ("Overriding a previously registered kernel", the later
static registration winning, an order the source does not fix), so the m.impl is only counted
(``AtenLibrary.conflicts``; none in 2.6.0).

``m.def`` in a ``TORCH_LIBRARY(aten, m)`` / ``TORCH_LIBRARY_FRAGMENT(aten, m)`` block defines an aten op the yaml
does not have (RNN.cpp's quantized_lstm.input): it is an op like the yaml's, located at its m.def, with no implicit
CompositeImplicitAutograd kernel (torchgen gives that to yaml entries only): its kernels are its m.impl lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..model import DispatchEntry, DispatchKey, EntryOrigin, Loc, Op, RegistrationKind
from ..model.cpp import ANONYMOUS, ANONYMOUS_NESTING, TEMPLATE_ARGS, CppSymbol
from ..model.schema import SchemaError, parse_schema
from ..store.codec import rows_facts
from ..store.reader import Index
from .symbols import SYMBOL_COLS

ATEN = "aten"
_BLOCK = re.compile(r"^TORCH_LIBRARY(_IMPL|_FRAGMENT)?\(\s*(\w+)\s*(?:,\s*(\w+)\s*)?\)$")
_FALLTHROUGH = "makeFallthrough"
# A macro around the function, there to keep its template arguments' commas (functorch's SINGLE_ARG(f<1, 2>)).
_MACRO_WRAP = re.compile(r"^[A-Z][A-Z0-9_]*\(\s*(.*?)\s*\)$", re.S)
_NAME = re.compile(r"\w+(?:::\w+)*")


@dataclass
class AtenLibrary:
    """What the hand-written TORCH_LIBRARY blocks of aten add to the yaml's ops (Note [Hand-registered aten
    kernels])."""

    ops: list[Op] = field(default_factory=list)  # m.def of an op the yaml does not have
    entries: dict[str, list[DispatchEntry]] = field(default_factory=dict)  # op full name -> its m.impl rows
    impls: int = 0  # m.impl lines in TORCH_LIBRARY_IMPL(aten, ...) blocks
    fallthrough: int = 0  # of them, makeFallthrough(): no kernel
    unknown_key: int = 0  # of them, a key DispatchKey does not name
    no_op: list[str] = field(default_factory=list)  # of them, naming no op: "name  path:line"
    conflicts: list[str] = field(default_factory=list)  # of them, for a key the yaml registers too


def _plain(kernel: str) -> str:
    """The kernel's name as C++ looks it up: without template arguments or spaces."""
    s = kernel
    while (t := TEMPLATE_ARGS.sub("", s)) != s:
        s = t
    return s.replace(" ", "").lstrip(":").removeprefix("&")


def kernel_written(target: str) -> str:
    """The function an m.impl names, as written (a wrapping macro taken off)."""
    m = _MACRO_WRAP.match(target.strip())
    return m.group(1) if m and _NAME.fullmatch(_plain(m.group(1))) else target


def read_aten_library(ix: Index, known: dict[str, Op], next_id: int) -> AtenLibrary:
    """The m.def ops and m.impl kernels of aten's hand-written TORCH_LIBRARY blocks; ``known`` the yaml's ops by
    full name, ``next_id`` the id the first new op takes (counting down: no row of the op table has it)."""
    lib = AtenLibrary()
    defs = ix.q("SELECT r.name, r.detail, r.file_id, r.line, s.name FROM cpp_registration r JOIN cpp_symbol s "
                "ON s.id = r.scope JOIN files f ON f.id = r.file_id WHERE r.kind = ? AND r.key = ? "
                "AND f.generated = 0 ORDER BY r.file_id, r.line", (RegistrationKind.LIBRARY_DEF.value, ATEN))
    made: dict[str, Op] = {}
    for name, detail, file_id, line, block in defs:
        m = _BLOCK.match(block)
        if m is None or m.group(1) == "_IMPL" or m.group(2) != ATEN or name in known or name in made:
            continue
        try:
            schema = parse_schema(detail.split("::", 1)[1] if detail.startswith(f"{ATEN}::") else detail)
        except SchemaError:
            continue  # a template's placeholder (templates/RegisterSchema.cpp), not a schema
        made[name] = Op(schema.name, schema.overload, schema.full_name, schema, line, line, variants=frozenset(),
                        python_module="", structured=False, structured_delegate="", structured_inherits="",
                        precomputed="", ufunc_inner_loop=(), autogen=(), tags=(), device_check="", device_guard="",
                        manual_cpp_binding=False, category_override="", cpp_no_default_args=(), extra="",
                        dispatch_empty=True, id=next_id, path=ix.path_of(file_id))
        next_id -= 1
    lib.ops = list(made.values())
    ops = {**known, **made}
    rows = ix.q("SELECT r.name, r.key, r.target, r.file_id, r.line, s.name, s.qualname FROM cpp_registration r "
                "JOIN cpp_symbol s ON s.id = r.scope JOIN files f ON f.id = r.file_id WHERE r.kind = ? "
                "AND f.generated = 0 ORDER BY r.file_id, r.line", (RegistrationKind.LIBRARY_IMPL.value,))
    for name, key, target, file_id, line, block, qualname in rows:
        m = _BLOCK.match(block)
        if m is None or m.group(2) != ATEN:
            continue
        lib.impls += 1
        if _FALLTHROUGH in target:
            lib.fallthrough += 1
            continue
        # no key (m.impl in TORCH_LIBRARY(aten)) or CatchAll: a Library of no key (core/library.cpp), whose kernels
        # the dispatcher files under CompositeImplicitAutograd (OperatorEntry::registerKernel)
        if key in ("", DispatchKey.CatchAll.value):
            key = DispatchKey.CompositeImplicitAutograd.value if m.group(1) != "_IMPL" or key else ""
        if key not in DispatchKey.__members__:
            lib.unknown_key += 1
            continue
        full = name.removesuffix(".default")
        op = ops.get(full)
        loc = Loc(ix.path_of(file_id), line)
        if op is None:
            lib.no_op.append(f"{full}  {loc}")
            continue
        scope = qualname.replace(ANONYMOUS, "").rsplit("::", 1)[0] if "::" in qualname else ""
        lib.entries.setdefault(op.full_name, []).append(
            DispatchEntry(DispatchKey(key), kernel_written(target), loc, EntryOrigin.LIBRARY, scope=scope))
    return lib


def library_kernel_definitions(ix: Index, kernel: str, scope: str) -> list[CppSymbol]:
    """The definitions an m.impl's kernel ``kernel`` names from namespace ``scope`` (at::native::vulkan::ops):
    those of that name in the innermost of the enclosing namespaces that has one, as C++'s lookup finds them."""
    plain = _plain(kernel)
    short = plain.rsplit("::", 1)[-1]
    if not short.isidentifier():
        return []  # a lambda (lambda@LINE) or an expression: no named definition
    chain = [p for p in scope.split("::") if p]
    # Each enclosing namespace, innermost first, by qualified name (an unnamed namespace in it counts as it): the
    # definitions of the short name alone are thousands for `add` or `cat`, and a first answer read them all.
    for k in range(len(chain), -1, -1):
        prefix = "::".join(chain[:k])
        head, _, tail = plain.rpartition("::")
        inner = f"{prefix}::{head}" if prefix and head else prefix or head
        names = [f"{inner}::{tail}" if inner else tail] + [f"{inner}::{anon}::{tail}" if inner else f"{anon}::{tail}"
                                                          for anon in ANONYMOUS_NESTING]
        rows = ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE qualname IN ({','.join('?' * len(names))})", names)
        found = {d.id: d for d in rows_facts(CppSymbol, rows, ix.paths()) if d.is_definition
                 and not d.kind.is_gpu_kernel}
        if found:
            return sorted(found.values(), key=lambda d: (d.in_generated, d.path, d.line))
    return []
