"""The tests of one file, listed: each with its line and the decorators that decide where it runs.

test_file_info lists a file's test methods class by class, in source order. A file's tests
may not fit one answer (test/test_nn.py has 462, test/test_torch.py more), so the list is a
page: as many tests as ``PAGE_BUDGET`` characters of their lines allow, from ``offset``, and
the answer says which call shows the next page. ``class_name`` (the class as written, or a
class the device-type generator makes from it: TestNNDeviceTypeCUDA) and ``query`` (a
substring of the test's name) narrow the list first.

Of a test's decorators those that decide where and how often it runs are shown
(``WHERE_IT_RUNS``): dtypes, devices, skips and expected failures, and the generators that
multiply it (``@ops``, ``@modules``, ``@parametrize``); the others (tolerances, default
dtypes) are counted in the file's decorator summary.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..errors import BadArgument
from ..model import Loc
from .args import MAX_NAME, clean_text, shown
from .testnames import Renamer, generated_names, select_one

PAGE_BUDGET = 7200  # characters of test lines one answer lists (the rest of the answer is about 1-4k)
MAX_DECO_CHARS = 70
MAX_LINE_DECOS = 150  # characters of decorators on one test's line
_PARAM_NAMES = re.compile(r"^((?:[\w.]+\.)?parametrize\w*)\(\s*('[^']*'|\"[^\"]*\"|\w+)")
# Last dotted part of a decorator's callable -> it decides where the test runs. Prefixes end with "*".
WHERE_IT_RUNS = ("dtypes*", "only*", "skip*", "expectedFailure*", "xfail*", "deviceCountAtLeast", "largeTensorTest",
                 "slowTest", "serialTest", "requires*", "ops", "modules", "parametrize*")
_CALLABLE = re.compile(r"^([\w.]+)")


def runs_where(decorator: str) -> bool:
    """Whether a decorator (as written, without the @) is one of WHERE_IT_RUNS."""
    m = _CALLABLE.match(decorator)
    if not m:
        return False
    name = m.group(1).rsplit(".", 1)[-1]
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in WHERE_IT_RUNS)


@dataclass
class ListedTest:
    __test__ = False
    cls: str  # the class as written ("" for a module-level test function)
    name: str
    loc: Loc
    decorators: list[str]  # where it runs (WHERE_IT_RUNS), each cut to MAX_DECO_CHARS
    other_decorators: int  # how many more it has
    origin: str = ""  # a test ``cls`` inherits: the class of the file that writes it (Note [Where tests run])

    @property
    def line(self) -> str:
        """The test as the answer lists it (also what the page budget counts)."""
        decos = "  " + " ".join(d if d.startswith("... ") else f"@{d}" for d in self.decorators) \
            if self.decorators else ""
        origin = f"  (inherited from {self.origin})" if self.origin else ""
        return f"- {self.name}  {self.loc}{origin}{decos}"


@dataclass
class ClassRun:
    """How to run one test of a class: the command, and the names the generators give it."""

    __test__ = False
    cls: str
    example: str  # the test the command names
    command: str
    generated: list[str] = field(default_factory=list)
    exact: bool = True  # the command runs that test's family only (Note [Selecting one test's family])


@dataclass
class TestPage:
    __test__ = False
    class_name: str  # the filters as given ("" = none)
    query: str
    offset: int
    matching: int  # tests that pass the filters
    tests: list[ListedTest]  # tests[offset:] that fit the budget
    runs: list[ClassRun]  # per class listed: how to run one of its tests
    next_call: str  # the call that lists the next page ("" when this page ends the list)


def shortened(decorators: list[str]) -> list[str]:
    """Decorators as a test line shows them: where it runs first (dtypes, devices, skips), then what multiplies it,
    the parametrizes as one ``parametrize(name, name)`` (their values can run to a screenful); each cut to
    MAX_DECO_CHARS, and no more than MAX_LINE_DECOS characters in all."""
    params: list[str] = []
    first: list[str] = []
    then: list[str] = []
    for d in decorators:
        m = _PARAM_NAMES.match(d)
        if m:
            params.append(m.group(2).strip("'\""))
            continue
        d = d if len(d) <= MAX_DECO_CHARS else d[:MAX_DECO_CHARS - 3] + "..."
        (then if d.startswith(("ops(", "modules(")) else first).append(d)
    if params:
        names = ", ".join(params)
        then.append(f"parametrize({names if len(names) <= MAX_DECO_CHARS else names[:MAX_DECO_CHARS - 3] + '...'})")
    out: list[str] = []
    used = 0
    for d in first + then:
        if out and used + len(d) > MAX_LINE_DECOS:
            return out + [f"... {len(first) + len(then) - len(out)} more"]
        used += len(d) + 2
        out.append(d)
    return out


def clean_filter(value: object, arg: str, example: str) -> str:
    """An optional text filter: "" (or None) for none."""
    if value is None or value == "":
        return ""
    return clean_text(value, arg, example, max_len=MAX_NAME)


@dataclass(frozen=True)
class NodeId:
    """A pytest node id as CI logs print it: ``test/test_nn.py::TestNNDeviceTypeCPU::test_relu_cpu_float32``."""

    path: str
    parts: tuple[str, ...]  # what follows the file: (class, test), (class,), (test function,) or ()


def node_id(text: str) -> NodeId:
    """The file and the class and test a node id names (parameters in brackets dropped)."""
    path, *rest = text.split("::")
    return NodeId(path.strip(), tuple(p.split("[", 1)[0].strip() for p in rest if p.strip()))


def node_filters(node: NodeId, classes: list[str], device_classes: dict[str, list[str]],
                 tests: dict[str, list[str]], class_name: str, query: str) -> tuple[str, str]:
    """(class_name, query) a node id asks for, where the arguments do not say: its class, and its test as written
    in the source (the generators' ``test_relu_cpu_float32`` is ``test_relu``). tests: class ('' for functions
    outside classes) -> its test names."""
    if not node.parts:
        return class_name, query
    known = set(classes) | {g for gen in device_classes.values() for g in gen}
    cls, test = (node.parts[0], node.parts[-1]) if len(node.parts) > 1 else \
        ((node.parts[0], "") if node.parts[0] in known else ("", node.parts[0]))
    if cls and class_name and class_name != cls:
        raise BadArgument(f"class_name {shown(class_name)} and the node id's class {shown(cls)} differ; give one")
    class_name = class_name or cls
    if test and not query:
        names = tests.get(generic_class(class_name, classes, device_classes) if class_name else "", [])
        exact = [n for n in names if n == test]
        query = exact[0] if exact else max((n for n in names if test.startswith(n + "_")), key=len, default=test)
    return class_name, query


def generic_class(class_name: str, classes: list[str], device_classes: dict[str, list[str]]) -> str:
    """The class as written that ``class_name`` means: itself, or the class a generated device class comes from."""
    if class_name in classes:
        return class_name
    for cls, generated in device_classes.items():
        if class_name in generated:
            return cls
    lowered = {c.lower(): c for c in classes}
    if class_name.lower() in lowered:
        return lowered[class_name.lower()]
    raise BadArgument(f"class_name {shown(class_name)} is not a test class of this file; choose one of: "
                      f"{', '.join(classes) or '(the file has no test classes)'}")


def test_page(path: str, rows: list[tuple[str, str, int, str]], instantiation: dict[str, str], class_name: str,
              query: str, offset: int, call: Callable[[int], str],
              run_as: Callable[[str, str], tuple[str, str, str]] | None = None,
              paths: dict[str, str] | None = None,
              renamers: Callable[[str, list[str]], Mapping[str, Renamer]] = lambda p, d: {},
              origins: Mapping[tuple[str, str], str] | None = None,
              decides: Callable[[str, str], bool] = lambda p, d: False) -> TestPage:
    """rows: (class as written, test name, line, decorators JSON) in source order; instantiation: class -> the
    options of instantiate_device_type_tests; call(offset) -> the call that shows the page from that offset;
    run_as(class, test) -> the file, class and name it runs as (Note [Where tests run] in query/testclasses.py:
    another file's class deriving from a mixin no class of this file runs);
    paths: the file of each class written in another file whose tests run in this one (its rows are listed
    whatever ``class_name``: the caller passes those it wants); renamers(file, decorators): those of the decorators
    that are parametrizers other than @ops / @parametrize (query/parametrizers.py); origins: (class, test) -> the
    class of the file that writes a test the class inherits, listed as the class's (its row is the class's);
    decides(file, decorator): whether a decorator not named as one of WHERE_IT_RUNS decides where the test runs by
    its definition (query/decorator_defs.py)."""
    q = query.lower()
    paths = paths or {}
    origins = origins or {}
    chosen = [r for r in rows
              if (not class_name or r[0] == class_name or r[0] in paths) and (not q or q in r[1].lower())]
    tests: list[ListedTest] = []
    used = 0
    for cls, name, line, decos in chosen[offset:]:
        ds = json.loads(decos or "[]")
        named = renamers(paths.get(cls, path), ds) if ds else {}
        where = shortened([d for d in ds if runs_where(d) or d in named or decides(paths.get(cls, path), d)])
        t = ListedTest(cls, name, Loc(paths.get(cls, path), line), where, len(ds) - len(where),
                       origins.get((cls, name), ""))
        if tests and used + len(t.line) > PAGE_BUDGET:
            break
        used += len(t.line) + 1
        tests.append(t)
    runs: dict[str, ClassRun] = {}
    classes = list(dict.fromkeys(r[0] for r in rows if r[0] and r[0] not in paths))  # the file's own
    # each class's example is the test the query names exactly when the page has it (a node id's), else its first
    for t, (_c, _n, _l, decos) in sorted(zip(tests, chosen[offset:], strict=False), key=lambda p: p[0].name != query):
        if t.cls not in runs:
            ds = json.loads(decos or "[]")
            named = renamers(paths.get(t.cls, path), ds)
            inst = instantiation.get(t.cls)
            run_path, cls, name = run_as(t.cls, t.name) if run_as is not None else (path, t.cls, t.name)
            gen = generated_names(t.cls if inst else cls, name, ds, inst, None, named) if inst or named else []
            siblings = [r[1] for r in rows if r[0] == t.cls and r[1] != t.name] + classes if run_path == path else []
            sel = select_one(run_path, cls, name, ds, inst, named, siblings)
            runs[t.cls] = ClassRun(t.cls, t.name, sel.command, [g for g in gen if g != f"{t.cls}.{t.name}"],
                                   sel.exact)
    end = offset + len(tests)
    return TestPage(class_name, query, offset, len(chosen), tests, list(runs.values()),
                    call(end) if end < len(chosen) else "")



def page_call(path: str, class_name: str, query: str, offset: int) -> str:
    """The test_file_info call that lists these tests from ``offset``."""
    args = [json.dumps(path)] + [f"{k}={json.dumps(v)}" for k, v in (("class_name", class_name), ("query", query))
                                 if v]
    return f"test_file_info({', '.join(args + ([f'offset={offset}'] if offset else []))})"
