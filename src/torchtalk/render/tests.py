"""Markdown for find_similar_tests, list_test_utils and test_file_info."""

from __future__ import annotations

import json

from ..model import InstantiationKind, UtilKind
from ..query.testfiles import TestFileInfo, TestUtilsResult
from ..query.tests import MarkHit, SimilarTestsResult
from .common import IN_STRUCTURED, raise_limit, showing

MAX_MARKS = 8


def _mark_line(m: MarkHit) -> str:
    where = ".".join(x for x in (m.test_class, m.test_name) if x) or "every test"
    extra = ", ".join(x for x in (m.device_type, m.dtypes) if x)
    return f"{where}: {m.mark}" + (f" [{extra}]" if extra else "") + f"  ({m.loc})"


def render_similar_tests(r: SimilarTestsResult) -> str:
    out = [f"# tests for {r.query}: {showing(len(r.tests), r.total, raise_limit(r.total))}"]
    if r.home:
        out.append(f"Home test files (its tests named after it there rank first): {r.home_why}")
    for t in r.tests:
        where = f"{t.cls}.{t.name}" if t.cls else t.name
        decos = f"  @{' @'.join(d[:60] for d in t.decorators[:4])}" if t.decorators else ""
        out.append(f"- {where}  {t.loc}  [{t.why}]{decos}")
        out.append(f"    run: {t.command}")
        if t.generated and t.generated != [where]:
            out.append(f"    generated as: {', '.join(t.generated[:4])}")
    if not r.tests:
        out.append("No test names or test bodies mention it.")
    if r.opinfos:
        out.append(f"\nOpInfo entries ({len(r.opinfos)}): the generic @ops(op_db) tests (test_ops.py and the "
                   "others that take op_db) run it; what is specific to it:")
        for o in r.opinfos:
            variant = f" variant {o.variant!r}" if o.variant else ""
            out.append(f"- {o.ctor}('{o.name}'){variant}  {o.loc}")
            out.append(f"    run: {o.command}")
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
           "most used by test files first"]
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
    out = [f"# {r.path}: {r.total_tests} tests in {len(r.classes)} classes and {len(r.functions)} functions",
           f"run: {r.command}"]
    for c in r.classes:
        extra = []
        if c.device_type:
            extra.append("instantiate_device_type_tests -> " + ", ".join(c.generated_classes))
        if c.parametrized:
            extra.append("instantiate_parametrized_tests")
        out.append(f"- {c.name}  {c.loc}  {c.tests} tests; bases {', '.join(c.bases) or '-'}"
                   + (f"; {'; '.join(extra)}" if extra else ""))
    if r.functions:
        out.append("Module-level tests: " + ", ".join(f"{n} ({loc})" for n, loc in r.functions[:20]))
    if r.instantiations:
        out.append("\nTest generation:")
        for kind, cls, loc, opts in r.instantiations:
            fn = "instantiate_device_type_tests" if kind == InstantiationKind.DEVICE_TYPE else \
                "instantiate_parametrized_tests"
            shown = json.loads(opts or "{}")
            opts_shown = ", " + ", ".join(f"{k}={v!r}" for k, v in shown.items()) if shown else ""
            out.append(f"- {fn}({cls}{opts_shown})  {loc}")
    if r.decorators:
        out.append("\nDecorators: " + ", ".join(f"{d} ({n})" for d, n in r.decorators))
    if r.utilities:
        by_mod: dict[str, list[str]] = {}
        for name, mod in r.utilities:
            by_mod.setdefault(mod, []).append(name)
        out.append("\nUtilities from torch.testing._internal:")
        for mod, names in by_mod.items():
            out.append(f"- {mod}: {', '.join(names[:25])}" + (" ..." if len(names) > 25 else ""))
    if r.ops:
        out.append("\nOps it exercises (by uses in test bodies): " + ", ".join(f"{o} ({n})" for o, n in r.ops))
    return "\n".join(out)
