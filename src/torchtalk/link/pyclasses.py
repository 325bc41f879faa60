"""Python classes with their bases resolved to full names, and the roots they descend from.

``class Linear(Module)`` in torch/nn/modules/linear.py means
``torch.nn.modules.module.Module`` through its imports; ``nn.Module`` means the
same through ``import torch.nn as nn`` and the package's re-exports (``from
.modules import *``). Resolved once per refresh, over every class, so that
"is an nn.Module" is a transitive fact, not a guess from the base's spelling.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable

ROOTS = {
    "module": ("torch.nn.modules.module.Module",),
    "optimizer": ("torch.optim.optimizer.Optimizer",),
    "lr_scheduler": ("torch.optim.lr_scheduler.LRScheduler", "torch.optim.lr_scheduler._LRScheduler"),
    "testcase": ("torch.testing._internal.common_utils.TestCase", "unittest.TestCase", "unittest.case.TestCase"),
}


# Note [Test imports]
# ~~~~~~~~~~~~~~~~~~~
# A test file runs as a script (``python test/distributed/test_c10d_nccl.py``) or under pytest from test/, so its
# directory and test/ are on sys.path: ``import test_c10d_common`` there is test/distributed/test_c10d_common.py,
# ``from inductor.test_torchinductor import ...`` is test/inductor/test_torchinductor.py. Its classes derive from
# those (``DistributedDataParallelTest(test_c10d_common.CommonDistributedDataParallelTest, ...)``): resolved so, a
# class is known to be a TestCase, and inherits the tests written there (query/testclasses.py).
TEST_PACKAGE = "test."


def module_of(path: str) -> str:
    mod = path[:-3] if path.endswith(".py") else path
    if mod.endswith("/__init__"):
        mod = mod[: -len("/__init__")]
    return mod.replace("/", ".")


def follow_reexports(dotted: str, is_defined: Callable[[str], bool], imports_of: Callable[[str], dict[str, str]],
                     stars_of: Callable[[str], Iterable[str]], depth: int = 0) -> str | None:
    """A dotted name as defined: follow package re-exports (imports, ``import *``) to its own module."""
    if is_defined(dotted):
        return dotted
    if depth > 8 or "." not in dotted:
        return None
    pkg, _, attr = dotted.rpartition(".")
    target = imports_of(pkg).get(attr)
    if target and target != dotted:
        found = follow_reexports(target, is_defined, imports_of, stars_of, depth + 1)
        if found:
            return found
    for star in stars_of(pkg):
        found = follow_reexports(f"{star}.{attr}", is_defined, imports_of, stars_of, depth + 1)
        if found:
            return found
    return None


# The fact tables py_class_fq is computed from (besides the paths of files, which only change with their rows):
# a refresh that changes none of them keeps the table (link/build.py). tests/unit/test_link.py checks that this
# module's queries read no other.
INPUT_TABLES = frozenset({"py_import", "py_class", "test_class", "py_function"})


class Resolver:
    def __init__(self, conn: sqlite3.Connection):
        self.paths = dict(conn.execute("SELECT id, path FROM files"))
        self.imports: dict[str, dict[str, str]] = defaultdict(dict)
        self.stars: dict[str, list[str]] = defaultdict(list)
        for file_id, alias, target in conn.execute("SELECT file_id, alias, target FROM py_import"):
            mod = module_of(self.paths.get(file_id, ""))
            if alias == "*":
                self.stars[mod].append(target)
            else:
                self.imports[mod].setdefault(alias, target)
        # fq -> (source, ref, module, name, file_id, line, bases)
        self.classes: dict[str, tuple[str, int, str, str, int, int, list[str]]] = {}
        for cid, module, qualname, name, bases, file_id, line in conn.execute(
                "SELECT id, module, qualname, name, bases, file_id, line FROM py_class"):
            self.classes[f"{module}.{qualname}"] = ("py", cid, module, name, file_id, line, json.loads(bases or "[]"))
        at = {(c[4], c[5]) for c in self.classes.values()}
        for cid, name, bases, file_id, line in conn.execute("SELECT id, name, bases, file_id, line FROM test_class"):
            module = module_of(self.paths.get(file_id, ""))
            fq = f"{module}.{name}"
            # torch/testing/_internal classes are already Python-layer classes, nested ones (TestHelperModules.
            # TwoLinearModule) under their qualified name: never again as a module-level one
            if fq not in self.classes and (file_id, line) not in at:
                self.classes[fq] = ("test", cid, module, name, file_id, line, json.loads(bases or "[]"))
        self.modules = {c[2] for c in self.classes.values()} | set(self.imports) | set(self.stars)
        self._memo: dict[tuple[str, str], str | None] = {}

    def canonical(self, dotted: str) -> str | None:
        return follow_reexports(dotted, self.classes.__contains__, lambda m: self.imports.get(m, {}),
                                lambda m: self.stars.get(m, ()))

    def canonical_from(self, module: str, dotted: str) -> str | None:
        """``canonical``, for a name imported in ``module``; a test file's import of a top-level name the tree does
        not define (``import test_c10d_common``) is the file of that name beside it or in test/ (Note [Test
        imports])."""
        found = self.canonical(dotted)
        if found is None and module.startswith(TEST_PACKAGE):
            for package in dict.fromkeys((module.rpartition(".")[0], TEST_PACKAGE.rstrip("."))):
                found = self.canonical(f"{package}.{dotted}")
                if found:
                    break
        return found

    def resolve(self, module: str, written: str) -> str:
        """The full name that ``written`` (a base as written in ``module``) denotes, or ``written``."""
        key = (module, written)
        if key in self._memo:
            return self._memo[key] or written
        first, _, rest = written.partition(".")
        found = None
        local = f"{module}.{written}"
        if local in self.classes:
            found = local
        elif first in self.imports.get(module, {}):
            target = self.imports[module][first]
            dotted = f"{target}.{rest}" if rest else target
            found = self.canonical_from(module, dotted) or dotted
        else:
            for star in self.stars.get(module, ()):
                found = self.canonical_from(module, f"{star}.{written}")
                if found:
                    break
            if found is None:
                found = self.canonical(written)
        self._memo[key] = found
        return found or written


def scheduler_like(conn: sqlite3.Connection) -> set[str]:
    """Classes of torch.optim that are LR schedulers by what they do, whatever their bases: constructed on an
    optimizer (``__init__(self, optimizer, ...)``) and defining ``step()``. ReduceLROnPlateau derives from
    ``object`` in 1.13 and from LRScheduler in 2.x; it is a scheduler in both."""
    inits = {(m, c) for m, c in conn.execute(
        "SELECT module, cls FROM py_function WHERE name = '__init__' AND module LIKE 'torch.optim.%' "
        "AND (signature LIKE '(self, optimizer,%' OR signature LIKE '(self, optimizer:%' "
        "OR signature LIKE '(self, optimizer)%')")}
    steps = {(m, c) for m, c in conn.execute(
        "SELECT module, cls FROM py_function WHERE name = 'step' AND module LIKE 'torch.optim.%'")}
    return {f"{m}.{c}" for m, c in inits & steps if c}


def class_rows(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    r = Resolver(conn)
    schedulers = scheduler_like(conn)
    bases_fq = {fq: [r.resolve(c[2], b) for b in c[6]] for fq, c in r.classes.items()}
    root_of = {name: kind for kind, names in ROOTS.items() for name in names}
    memo: dict[str, frozenset[str]] = {}

    def roots(fq: str, stack: frozenset[str] = frozenset()) -> frozenset[str]:
        if fq in memo:
            return memo[fq]
        found = {root_of[fq]} if fq in root_of else set()
        if fq in schedulers:
            found.add("lr_scheduler")
        if fq not in stack:
            for b in bases_fq.get(fq, ()):
                if b in root_of:
                    found.add(root_of[b])
                found |= roots(b, stack | {fq})
        memo[fq] = frozenset(found)
        return memo[fq]

    rows: list[tuple[object, ...]] = []
    for fq, (source, ref, module, name, file_id, line, _bases) in r.classes.items():
        rows.append((source, ref, fq, module, name, file_id, line, json.dumps(bases_fq[fq]),
                     " ".join(sorted(roots(fq))), " ".join(exported_as(r, fq, module, name)) if source == "py" else ""))
    return rows


def exported_as(r: Resolver, fq: str, module: str, name: str) -> list[str]:
    """The names the packages above a class's module export it under, shortest first: torch.nn.modules.linear.Linear
    is torch.nn.Linear and torch.nn.modules.Linear (``from .modules import *``, ``from .linear import Linear``),
    torch._tensor.Tensor is torch.Tensor. A package inside a private one (torch._C.x) exports nothing public."""
    parts = module.split(".")
    out = []
    for i in range(1, len(parts)):
        if parts[i - 1].startswith("_"):
            break
        public = f"{'.'.join(parts[:i])}.{name}"
        if r.canonical(public) == fq:
            out.append(public)
    return out
