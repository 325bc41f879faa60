"""Markdown for find_similar_tests, list_test_utils and test_file_info."""

from __future__ import annotations

import json

from ..model import InstantiationKind, UtilKind
from ..model.change import ModuleKind
from ..query.moduledb import SUITES
from ..query.testfiles import TestClassInfo, TestFileInfo, TestUtilsResult
from ..query.testlist import TestPage
from ..query.testnames import unread_options
from ..query.tests import MarkHit, SimilarTestsResult
from .common import IN_STRUCTURED, first, raise_limit, showing, some

MAX_MARKS = 8


def _mark_line(m: MarkHit) -> str:
    where = ".".join(x for x in (m.test_class, m.test_name) if x) or "every test"
    extra = ", ".join(x for x in (m.device_type, m.dtypes) if x)
    return f"{where}: {m.mark}" + (f" [{extra}]" if extra else "") + f"  ({m.loc})"


def render_similar_tests(r: SimilarTestsResult) -> str:
    out = [f"# tests for {r.query}: {showing(len(r.tests), r.total, raise_limit(r.total))}"]
    if r.note:
        out.append(r.note + ".")
    if r.home and r.home_tests:
        out.append(f"Home test files (its tests named after it there rank first): {r.home_why}")
    elif r.home:  # gcd's is test_torch.py by the layout, and its tests are in test_binary_ufuncs.py
        out.append(f"Home test files by PyTorch's layout (no test found is there): {r.home_why}")
    for t in r.tests:
        where = f"{t.cls}.{t.name}" if t.cls else t.name
        decos = f"  @{' @'.join(d[:60] for d in t.decorators[:4])}" if t.decorators else ""
        out.append(f"- {where}  {t.loc}  [{t.why}]{decos}")
        out.append(f"    run: {t.command}")
        if t.generated and t.generated != [where]:
            out.append(f"    generated as: {some(t.generated, 4)}")
    if r.generic is not None:
        g = r.generic
        out.append(f"\n{g.label}  {g.loc}: the generic tests of {SUITES[g.kind]} run it (every test there that takes "
                   f"{'module_db' if g.kind is ModuleKind.MODULE else 'optim_db'})\n    run: {g.command}")
    if not r.tests:
        out.append("No test names or test bodies mention it" + (" (its generic tests are above)" if r.generic else "")
                   + ".")
    if r.opinfos:
        dbs = ", ".join(dict.fromkeys(o.db for o in r.opinfos if o.db)) or "op_db"
        out.append(f"\nOpInfo entries ({len(r.opinfos)}): the generic @ops tests that take {dbs} run it (each "
                   "entry's run line names a file); what is specific to it:")
        for o in r.opinfos:
            variant = f" variant {o.variant!r}" if o.variant else ""
            of = f"  (its aten_backward_name={o.backward!r}: its gradient tests run it)" if o.backward else ""
            out.append(f"- {o.ctor}('{o.name}'){variant}  {o.loc}{of}")
            out.append(f"    run: {o.command}")
            for f in o.suites:  # Note [OpInfo lists]
                out.append(f"    also run by the @ops({', '.join(f.lists)}) tests of {f.path} ({f.tests}): "
                           + (f.command or f"pytest {f.path}"))
            own = [m for m in o.marks if m.entry == o.name]
            refs = [m for m in o.marks if m.entry and m.entry != o.name]
            lists = [m for m in o.marks if not m.entry]
            for label, marks in ((f"skips/xfails/decorators in its entry ({len(own)})", own),
                                 (f"in reference entries ({len(refs)})", refs),
                                 (f"named in test files' xfail/skip lists ({len(lists)})", lists)):
                if not marks:
                    continue
                out.append(f"    {label}:")
                for m in marks[:MAX_MARKS]:
                    ref = f"{m.entry}: " if m.entry and m.entry != o.name else ""
                    out.append(f"      {ref}{_mark_line(m)}")
                if len(marks) > MAX_MARKS:
                    out.append(f"      ... {showing(MAX_MARKS, len(marks), IN_STRUCTURED)}")
            if not o.marks:
                out.append("    no skips or xfails name it: every @ops test runs it")
    return "\n".join(out)


def render_test_utils(r: TestUtilsResult) -> str:
    total = sum(r.counts.get(c, 0) for c in r.groups)
    shown_n = sum(len(v) for v in r.groups.values())
    out = [f"# test utilities ({r.category}): {showing(shown_n, total)} from torch/testing/_internal, "
           "most used by test files first (a method by its class's)"]
    for cat, items in r.groups.items():
        count = r.counts.get(cat, len(items))
        out.append(f"\n## {cat} ({showing(len(items), count, raise_limit(count))})")
        for name, kind, loc, doc, used_by in items:
            used = f", imported by {used_by} test files" if used_by and kind != UtilKind.METHOD else ""
            out.append(f"- {name} ({kind}{used})  {loc}" + (f"  — {doc[:100]}" if doc else ""))
    if r.hidden:
        out.append("\nNot listed here: " + ", ".join(f"{c} ({n}; category='{c}' lists them)"
                                                     for c, n in r.hidden.items()))
    return "\n".join(out)


def render_test_file(r: TestFileInfo) -> str:
    page = r.page
    narrowed = page is not None and bool(page.class_name or page.query or page.offset)
    collected = sum(c.collected for c in r.classes)
    out = [f"# {r.path}: {r.total_tests} tests in {collected} classes and {len(r.functions)} functions"
           + (f" (and {len(r.classes) - collected} class{'es' if len(r.classes) - collected > 1 else ''} pytest does "
              "not collect)" if collected < len(r.classes) else "")
           + (f"; {r.conditional} of the tests only if the module-level condition of their class holds"
              if r.conditional else ""),
           f"run the file: {r.command}"]
    if r.imported_by[0]:
        out.insert(1, f"Asked through {r.imported_by[0]}, which imports the class from {r.imported_by[1]}: pytest "
                      f"collects its tests there too, and they are written here.")
    # asked about one class (a node id, class_name): its row only, so its tests come next
    classes = [c for c in r.classes if c.name in (page.class_name, r.via_class)] if narrowed and page and \
        page.class_name else []
    if classes and len(classes) < len(r.classes):
        out.append(f"({len(r.classes) - len(classes)} other classes: test_file_info({json.dumps(r.path)}) lists them)")
    imported = [c for c in classes or r.classes if c.imported_from]
    for c in classes or r.classes:
        if c.imported_from:
            continue
        extra = []
        if c.device_type:
            unread = unread_options(c.device_type)
            extra.append("instantiate_device_type_tests -> " + ", ".join(c.generated_classes) + (
                f" ({', '.join(f'{k}={v}' for k, v in unread.items())}: not a constant of the file, so not read; "
                "listed as the usual devices, it may make a class of any other)" if unread else ""))
        if c.parametrized:
            extra.append("instantiate_parametrized_tests")
        if c.inherited:
            extra.append(f"+ {c.inherited} from classes it derives from or a helper copies in")
        if c.deleted:
            extra.append(f"deleted by the `del {c.name}` at line {c.deleted}, so pytest " + (
                f"runs its tests only in {first(c.runs_in, 6)}" if c.runs_in else "does not run its tests"))
        elif c.runs_in or not c.collected:
            extra.append("no TestCase, so pytest runs its tests only " + (
                f"in {first(c.runs_in, 6)}" if c.runs_in else "where another file's class derives from it"))
        if c.guard:
            extra.append(f"defined only if {c.guard}: pytest collects it only when that holds")
        if c.decorators:
            extra.append(" ".join(f"@{d}" for d in c.decorators) + " on the class: applies to each of its tests")
        for base in dict.fromkeys(b for b, _d in c.from_bases):
            extra.append(" ".join(f"@{d}" for b, d in c.from_bases if b == base) + f" on {base}, which it derives "
                         "from: applies to each of its tests too")
        if c.filled_at:
            extra.append(f"tests added at import time ({c.loc.path}:{c.filled_at} passes it to a call), so how many "
                         "is not known from the source")
        out.append(f"- {c.name}  {c.loc}  {c.tests} tests; bases {', '.join(c.bases) or '-'}"
                   + (f"; {'; '.join(extra)}" if extra else ""))
    if imported:
        _render_imported(imported, out)
    if r.functions and not page:
        out.append("Module-level tests: " + ", ".join(f"{n} ({loc})" for n, loc in r.functions[:20]))
    if page is not None:
        _render_page(r, page, out)
    if narrowed:
        out.append(f"\nThe file's instantiation, decorators, utilities and ops: test_file_info({json.dumps(r.path)})")
        return "\n".join(out)
    if r.instantiations:
        out.append("\nTest generation:")
        for kind, cls, loc, opts in r.instantiations:
            fn = "instantiate_device_type_tests" if kind == InstantiationKind.DEVICE_TYPE else \
                "instantiate_parametrized_tests"
            shown = json.loads(opts or "{}")
            opts_shown = ", " + ", ".join(f"{k}={_option(v)}" for k, v in shown.items()) if shown else ""
            out.append(f"- {fn}({cls}{opts_shown})  {loc}")
    if r.decorators:
        out.append("\nDecorators: " + ", ".join(f"{d} ({n})" for d, n in r.decorators))
    if r.utilities:
        by_mod: dict[str, list[str]] = {}
        for name, mod in r.utilities:
            by_mod.setdefault(mod, []).append(name)
        out.append("\nUtilities from torch.testing._internal:")
        for mod, names in by_mod.items():
            out.append(f"- {mod}: {first(names, 25)}")
    if r.ops:
        out.append("\nOps it exercises (by uses in test bodies): " + ", ".join(f"{o} ({n})" for o, n in r.ops))
    return "\n".join(out)


def _render_imported(imported: list[TestClassInfo], out: list[str]) -> None:
    """The TestCases a file imports, by the module it imports them from (Note [Imported test classes])."""
    out.append(f"Imported TestCases ({len(imported)}, {sum(c.tests + c.inherited for c in imported)} tests): pytest "
               "and run_tests collect them here too; test_file_info(<their file>, class_name=...) lists their tests")
    by_module: dict[str, list[TestClassInfo]] = {}
    for c in imported:
        by_module.setdefault(c.imported_from, []).append(c)
    shown = 0
    for module, cs in by_module.items():
        rows = [f"{c.name} ({c.tests + c.inherited}, {c.loc}" + (
            f"; tests added at import time: {c.loc.path}:{c.filled_at} passes it to a call" if c.filled_at else "")
            + (f"; {' '.join('@' + d for d in c.decorators)} on the class" if c.decorators else "") + ")"
            for c in cs[:max(0, 40 - shown)]]
        shown += len(rows)
        more = f", ... {len(cs) - len(rows)} more (test_file_info of {module}'s file lists them)" \
            if len(rows) < len(cs) else ""
        out.append(f"- from {module}: " + ", ".join(rows) + more)


def _placeholders(names: list[str]) -> str:
    """What a name's ``<...>`` part stands for (Note [Parametrizers rename tests] in query/parametrizers.py)."""
    return "; <...>: made at run time, so the command selects by the known parts" if any("<" in n for n in names) \
        else ""


def _option(value: object) -> str:
    """An instantiation option as the answer shows it: its value, or the text of one not read."""
    if isinstance(value, dict):
        return f"{', '.join(map(str, value.values()))} (not read: not a constant of the file)"
    return repr(value)


def _render_page(r: TestFileInfo, page: TestPage, out: list[str]) -> None:
    written = page.class_name.rsplit(".", 1)[-1]  # another file's class by its full name: its own name, its file
    where = f" ({page.tests[0].loc.path}; {r.via_class} derives from it)" if r.via_class and page.tests else ""
    which = " and ".join(x for x in (f"class {written}{where}" if page.class_name else "",
                                     f"names containing {page.query!r}" if page.query else "") if x)
    first, last = page.offset + 1, page.offset + len(page.tests)
    span = f"{first}-{last}" if page.tests else "none"
    out.append(f"\n## Tests{f' ({which})' if which else ''}: {span} of {page.matching}"
               + (f" (of {r.total_tests} in the file)" if which else "") + ", in source order")
    if not which and page.matching != r.total_tests:
        out.append(f"(each as written; the file's {r.total_tests} count each as pytest runs it: once in each class "
                   "that collects it, none of a class it does not collect)")
    if not page.tests:
        imported = [c.name for c in r.classes if c.imported_from]
        out.append(f"offset={page.offset} is past the last of them." if page.matching else
                   f"No test of {written} is written with that name, but {written} gets tests added when the module "
                   f"is imported ({r.path}:{r.added_at} passes it to a call), so pytest may collect "
                   f"{page.query} there: pytest {r.path}::{written}::{page.query} runs it if so."
                   if r.added_at else "No test matches." if which else
                   f"The file writes no test methods: it runs those of the classes it imports ({some(imported, 6)}), "
                   "listed above with where they are written." if imported else "The file has no test methods.")
    runs = {run.cls: run for run in page.runs}
    cls = None
    for t in page.tests:
        if t.cls != cls:
            cls = t.cls
            run = runs[cls]
            how = "run one" if run.exact else "run (may select other tests too)"
            on_class = next((c.decorators + [d for _b, d in c.from_bases] for c in r.classes
                             if c.name == cls and (c.decorators or c.from_bases)), [])
            out.append(f"{cls.rsplit('.', 1)[-1] or 'module level'}: {how}: {run.command}"
                       + (f"  (generated as {some(run.generated, 3)}{_placeholders(run.generated)})"
                          if run.generated else ""))
            if on_class:
                out.append(f"(each test of {cls} also has the class's " + " ".join(f"@{d}" for d in on_class) + ")")
        out.append(t.line)
    if page.next_call:
        out.append(f"\nThe rest ({page.matching - last} more): {page.next_call}")
        if not page.class_name:
            rest = [c for c in r.classes if c.name == cls] + [c for c in r.classes if c.tests and c.name not in runs]
            if rest:
                out.append(f"One class at a time: test_file_info({json.dumps(r.path)}, class_name=...) with "
                           + ", ".join(f"{json.dumps(c.name)} ({c.tests} tests)" for c in rest[:10])
                           + (f", ... {len(rest) - 10} more classes (listed above)" if len(rest) > 10 else ""))
        if not page.query:
            out.append("Or narrow by name: query=\"...\" (a part of the test names).")
