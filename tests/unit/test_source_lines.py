"""graph/source_lines.py: one bounded cache of file lines for the edges found in the source text."""

from __future__ import annotations

import threading
from pathlib import Path

from torchtalk.graph.source_lines import LineCache


def _tree(tmp_path: Path, n: int) -> Path:
    for i in range(n):
        (tmp_path / f"f{i}.cpp").write_text(f"int f{i}();\nint g{i}();\n", encoding="utf-8")
    return tmp_path


def test_lines_are_read_once_and_the_least_recently_used_leave_first(tmp_path: Path) -> None:
    cache = LineCache(_tree(tmp_path, 4), size=2)
    assert cache.lines("f0.cpp") == ["int f0();", "int g0();", ""]
    first = cache.lines("f0.cpp")
    assert cache.lines("f0.cpp") is first  # held, not read again
    cache.lines("f1.cpp")
    cache.lines("f0.cpp")  # f0 used last: f1 is the oldest now
    cache.lines("f2.cpp")
    assert len(cache) == 2
    (tmp_path / "f0.cpp").write_text("changed\n", encoding="utf-8")
    assert cache.lines("f0.cpp") is first  # still held: f1 went out
    (tmp_path / "f1.cpp").write_text("changed\n", encoding="utf-8")
    assert cache.lines("f1.cpp") == ["changed", ""]  # read again


def test_an_unreadable_file_has_no_lines(tmp_path: Path) -> None:
    cache = LineCache(tmp_path)
    assert cache.lines("missing.cpp") == []
    (tmp_path / "bad.cu").write_bytes(b"\xff\xfe __global__ void k();\n")
    assert cache.lines("bad.cu")[0].endswith("__global__ void k();")


def test_threads_share_one_bounded_cache(tmp_path: Path) -> None:
    cache = LineCache(_tree(tmp_path, 40), size=8)
    errors: list[BaseException] = []

    def read(k: int) -> None:
        try:
            for i in range(200):
                name = f"f{(i * k) % 40}.cpp"
                assert cache.lines(name)[0] == f"int {name[:-4]}();"
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=read, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(cache) == 8
