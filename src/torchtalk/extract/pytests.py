"""Facts from PyTorch's tests (test/**/*.py) and test helpers (torch/testing/_internal/**).

Test files are walked statement by statement (module, class bodies, helper function
bodies, if/try blocks); expressions are only walked inside ``test*`` bodies, to
collect the names they touch. Files under torch/testing/_internal also yield
OpInfo entries and classified helpers (see testutils.py).

PyImport rows are emitted here only for files outside torch/: for
torch/testing/_internal the module extractor (extract_python) already emits them.
"""

from __future__ import annotations

import ast
import json
from ast import Attribute, Call, Constant, Name
from collections.abc import Set as AbstractSet
from dataclasses import replace

from ..model import (
    FileFacts,
    InstantiationKind,
    OpInfoEntry,
    OpInfoList,
    OpTestMark,
    PyImport,
    TestClass,
    TestInstantiation,
    TestMethod,
    TestUtil,
)
from ..model.tests import UNREAD
from .opinfo import op_test_marks, opinfo_entries, opinfo_lists
from .pyast import (
    DEFS,
    block_statements,
    decorator_texts,
    dotted,
    import_rows,
    last_part,
    module_name,
    push_children,
    run_extractor,
    text,
)
from .testutils import INTERNAL, classify_helpers

MAX_TOUCHES = 200
_INSTANTIATORS = {
    "instantiate_device_type_tests": InstantiationKind.DEVICE_TYPE,
    "instantiate_parametrized_tests": InstantiationKind.PARAMETRIZED,
}
# positional parameters of instantiate_device_type_tests after (generic_test_class, scope)
_DEVICE_TYPE_POSITIONAL = ("except_for", "only_for", "include_lazy", "allow_mps", "allow_xpu")
# ``torch.float32`` & co. name dtypes/layouts, not ops: kept out of touches
_NOT_OPS = frozenset(
    "float double half bfloat16 float16 float32 float64 int int8 int16 int32 int64 uint8 uint16 "
    "uint32 uint64 bool long short cfloat cdouble chalf complex32 complex64 complex128 strided "
    "sparse_coo sparse_csr sparse_csc sparse_bsr sparse_bsc contiguous_format channels_last "
    "channels_last_3d preserve_format float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz "
    "qint8 quint8 qint32 quint4x2 inf nan pi e".split()
)
_BLOCK_FIELDS = ("body", "orelse", "finalbody")


def extract_tests(relpath: str, data: bytes, tree: ast.Module | None = None) -> FileFacts:
    """Test facts of one file; a file that does not parse comes back with its FileProblems."""
    return run_extractor(lambda r, t: _TestExtractor(r, t, data), relpath, data, tree)


class _TestExtractor:
    def __init__(self, relpath: str, tree: ast.Module, data: bytes = b""):
        self.relpath = relpath
        self.tree = tree
        self.data = data
        self.module, self.is_pkg = module_name(relpath)
        self.internal = relpath.startswith(INTERNAL)
        self.classes: list[TestClass] = []
        self.methods: list[TestMethod] = []
        self.insts: list[TestInstantiation] = []
        self.imports: list[PyImport] = []
        self.imported: set[str] = set()  # names bound by module-level imports
        self.constants = module_constants(tree.body)  # Note [Instantiation options]
        self.top_classes: dict[str, int] = {}  # module-level class -> its index in classes (its latest definition)

    def run(self) -> FileFacts:
        for s in _module_imports(self.tree.body):
            for alias, target, line in import_rows(s, self.module, self.is_pkg):
                if alias != "*":
                    self.imported.add(alias)
                if not self.relpath.startswith("torch/"):
                    self.imports.append(PyImport(alias, target, line))
        # a module-level name for an imported chain is a root too: aten = torch.ops.aten (30 test files), so a
        # body's aten.mm.default(...) is touched as written
        self.imported |= set(_chain_names(self.tree.body, self.imported, {}))
        self._stmts(self.tree.body, -1, top=True, guard="")
        facts: FileFacts = {
            TestClass: self.classes,
            TestMethod: self.methods,
            TestInstantiation: self.insts,
        }
        if not self.relpath.startswith("torch/"):
            facts[PyImport] = self.imports
        has_opinfo = False
        if self.internal:
            facts[OpInfoEntry] = opinfo_entries(self.tree)
            facts[TestUtil] = classify_helpers(self.tree)
            has_opinfo = bool(facts[OpInfoEntry])
        facts[OpTestMark] = op_test_marks(self.tree, self.data, has_opinfo)
        facts[OpInfoList] = opinfo_lists(self.tree)
        return facts

    def _stmts(self, body: list, cls: int, top: bool, guard: str = "") -> None:
        """Statements only. ``cls``: index of the class whose body this is (-1 if none);
        ``top``: module level (module-level ``test*`` functions count as tests); ``guard``: the condition of the
        module-level ``if`` arms these statements are in (Note [Classes pytest may not collect])."""
        for s in body:
            t = s.__class__
            if t is ast.ClassDef:
                if top:
                    self.top_classes[s.name] = len(self.classes)
                self._class(s, guard if top else "")
            elif t is ast.Delete and top:
                for target in s.targets:
                    idx = self.top_classes.pop(target.id, -1) if target.__class__ is Name else -1
                    if idx >= 0:
                        self.classes[idx] = replace(self.classes[idx], deleted=s.lineno)
            elif t is ast.If and top:
                cond = text(s.test)
                self._stmts(s.body, cls, top, _both(guard, cond))
                self._stmts(s.orelse, cls, top, _both(guard, f"not ({cond})"))
            elif t in DEFS:
                if s.name.startswith("test") and (cls >= 0 or top):
                    self._test(s, cls)
                else:
                    self._stmts(s.body, -1, False)
            elif t is ast.Expr:
                if s.value.__class__ is Call:
                    self._instantiation(s.value)
            elif t is ast.Assign and s.value.__class__ is Call:
                self._instantiation(s.value)
            else:
                for f in _BLOCK_FIELDS:
                    sub = getattr(s, f, None)
                    if sub and sub.__class__ is list:
                        self._stmts(sub, cls, top, guard)
                for h in getattr(s, "handlers", ()):
                    self._stmts(h.body, cls, top, guard)
                for c in getattr(s, "cases", ()):  # match statements
                    self._stmts(c.body, cls, top, guard)

    def _class(self, s: ast.ClassDef, guard: str) -> None:
        idx = len(self.classes)
        bases = [text(b) for b in s.bases] + [f"{k.arg}={text(k.value)}" for k in s.keywords if k.arg]
        self.classes.append(TestClass(
            s.name, json.dumps(bases), s.lineno, s.end_lineno or s.lineno, json.dumps(decorator_texts(s)), 0, guard,
        ))
        for d in s.decorator_list:
            name = dotted(d.func if d.__class__ is Call else d)
            kind = _INSTANTIATORS.get(last_part(name or ""))
            if kind is not None:
                self.insts.append(TestInstantiation(kind, s.name, d.lineno, "{}"))
        self._stmts(s.body, idx, False)

    def _test(self, s, cls: int) -> None:
        self.methods.append(TestMethod(
            cls, s.name, s.lineno, s.end_lineno or s.lineno, json.dumps(decorator_texts(s)),
            # a name the test binds itself (aten = torch.ops.aten inside test_linear_unary, in a with block) is
            # touched as the chain it names: aten.relu.default as torch.ops.aten.relu.default
            " ".join(touches(s.body, self.imported,
                             _chain_names(block_statements(s.body), self.imported, {}, self.imported))),
        ))

    def _instantiation(self, call: Call) -> None:
        name = dotted(call.func)
        if name is None:
            return
        kind = _INSTANTIATORS.get(last_part(name))
        if kind is None or not call.args:
            return
        opts: dict = {}
        if kind is InstantiationKind.DEVICE_TYPE:
            for pname, a in zip(_DEVICE_TYPE_POSITIONAL, call.args[2:], strict=False):
                opts[pname] = _option(a, self.constants)
        for k in call.keywords:
            opts[k.arg if k.arg else "**"] = _option(k.value, self.constants)
        cls = dotted(call.args[0]) or text(call.args[0])
        self.insts.append(TestInstantiation(kind, cls, call.lineno, json.dumps(opts)))


def _module_imports(body: list) -> list:
    """Imports that run at module level (inside if/try blocks too, not inside defs)."""
    return [s for s in block_statements(body) if s.__class__ in (ast.Import, ast.ImportFrom)]


def _chain_names(stmts: list, roots: set[str], out: dict[str, str],
                 shadow: AbstractSet[str] = frozenset()) -> dict[str, str]:
    """The names ``stmts`` bind to a chain rooted at one of ``roots`` or at a name bound before (``aten =
    torch.ops.aten``) -> that chain, through the names bound before (``ops = torch.ops; a = ops.aten``: a ->
    torch.ops.aten); a name of ``shadow`` (bound already) is left as it is."""
    for s in stmts:
        if s.__class__ is ast.Assign and len(s.targets) == 1 and s.targets[0].__class__ is Name and (
                (d := dotted(s.value)) is not None and s.targets[0].id not in shadow):
            root, dot, rest = d.partition(".")
            if root in out:
                out[s.targets[0].id] = out[root] + dot + rest
            elif root in roots:
                out[s.targets[0].id] = d
    return out


def _both(guard: str, cond: str) -> str:
    return f"{guard} and {cond}" if guard else cond


def _literal(node) -> object:
    """The value of a literal option (a constant, a list/tuple/set of them) as JSON, or None."""
    if node.__class__ is Constant and isinstance(node.value, (str, int, float, bool)):
        return node.value
    if node.__class__ in (ast.List, ast.Tuple, ast.Set):
        try:
            v = ast.literal_eval(node)
            return sorted(v, key=str) if isinstance(v, (set, frozenset)) else list(v)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
    return None


def module_constants(body: list) -> dict[str, object]:
    """Names a module binds once, at module level, to a literal or to another such name: ``only_for = ("cpu")``,
    ``devices = ("cuda", "hpu")`` (test/distributed/fsdp/test_fsdp_comm.py). A name bound more than once, or by
    anything else (an import, a def, a loop, a call), is none (Note [Instantiation options])."""
    bound: dict[str, int] = {}
    values: dict[str, ast.AST] = {}
    for s in block_statements(body):
        t = s.__class__
        if t is ast.Assign or t is ast.AnnAssign:
            targets = s.targets if t is ast.Assign else [s.target]
            for target in targets:
                for n in ast.walk(target):
                    if n.__class__ is Name:
                        bound[n.id] = bound.get(n.id, 0) + 1
                if target.__class__ is Name and s.value is not None:
                    values[target.id] = s.value
        elif t in DEFS or t is ast.ClassDef:
            bound[s.name] = bound.get(s.name, 0) + 1
        elif t in (ast.Import, ast.ImportFrom):
            for a in s.names:
                name = (a.asname or a.name).split(".")[0]
                bound[name] = bound.get(name, 0) + 1
        elif t in (ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Delete):
            for target in ([s.target] if hasattr(s, "target") else getattr(s, "targets", None) or
                           [i.optional_vars for i in getattr(s, "items", ()) if i.optional_vars is not None]):
                for n in ast.walk(target):
                    if n.__class__ is Name:
                        bound[n.id] = bound.get(n.id, 0) + 2  # rebound: never a constant
    out: dict[str, object] = {}

    def value(name: str, depth: int = 0) -> object:
        node = values.get(name) if bound.get(name) == 1 else None
        if node is None or depth > 8:
            return None
        if node.__class__ is Name:
            return value(node.id, depth + 1)
        return _literal(node)

    for name in values:
        v = value(name)
        if v is not None:
            out[name] = v
    return out


def _option(node, constants: dict[str, object]) -> object:
    """An option's value as JSON: the literal written, or the module-level constant it names; else unknown,
    ``{UNREAD: its source text}`` (Note [Instantiation options])."""
    if node.__class__ is Constant and node.value is None:
        return None
    v = _literal(node)
    if v is None and node.__class__ is Name:
        v = constants.get(node.id)
    return v if v is not None else {UNREAD: text(node)}


def touches(body: list, imported: set[str], bound: dict[str, str] | None = None) -> list[str]:
    """Names a test body uses that may denote ops or modules, first seen first.

    ``torch.cumsum(...)``/``F.softmax``/``nn.Linear`` (chains rooted at an imported
    name, called or not), ``.cumsum_`` (a method called on anything else), and bare
    calls of imported names. ``self.assertX(...)`` and dtype attributes are left out. A name of ``bound`` (one the
    body binds to a chain) is written as its chain.
    """
    bound = bound or {}
    seen: dict[str, None] = {}
    stack = list(reversed(body))
    pop, push = stack.pop, stack.append
    while stack and len(seen) < MAX_TOUCHES:
        n = pop()
        t = n.__class__
        if t is Name or t is Constant:
            continue
        if t is Call:
            f = n.func
            fc = f.__class__
            if fc is Attribute:
                d = dotted(f)
                if d is None:
                    seen["." + f.attr] = None
                    push(f.value)
                else:
                    root, dot, rest = d.partition(".")
                    if root in bound:
                        seen[bound[root] + dot + rest] = None
                    elif root in imported:
                        seen[d] = None
                    elif root == "self" or root == "cls":
                        if "." in rest:  # self.linear.forward(...): a method call
                            seen["." + f.attr] = None
                    else:
                        seen["." + f.attr] = None
            elif fc is Name:
                if f.id in bound or f.id in imported:
                    seen[bound.get(f.id, f.id)] = None
            else:
                push(f)
            for k in reversed(n.keywords):
                push(k.value)
            for a in reversed(n.args):
                push(a)
        elif t is Attribute:
            d = dotted(n)
            if d is None:
                push(n.value)
            else:
                root, dot, rest = d.partition(".")
                if (root in imported or root in bound) and not (rest in _NOT_OPS and "." not in rest):
                    seen[bound[root] + dot + rest if root in bound else d] = None
        else:
            push_children(n, stack)
    return list(seen)[:MAX_TOUCHES]
