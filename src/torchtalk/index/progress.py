"""Progress for long work, always on stderr: a bar on a terminal, plain lines every few seconds otherwise
(a log, a CI job, Claude Code's server log), nothing when asked for nothing."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import TextIO

LINE_EVERY_S = 5.0  # plain lines: often enough to show life, rare enough for a log
BAR_WIDTH = 24
ITEM_WIDTH = (12, 60)  # the current file's column: at least, at most (it fills the terminal's width)


def shorten(path: str, width: int) -> str:
    """``path`` in at most ``width`` characters, cut in the middle so that both the top directory and the
    file name stay readable (``torch/testing/…/common_utils.py``)."""
    if len(path) <= width:
        return path
    if width < 5:
        return path[-width:]
    head = (width - 1) // 3
    tail = width - 1 - head
    return f"{path[:head]}…{path[-tail:]}"


@contextlib.contextmanager
def bar(total: int, label: str, enabled: bool | None = None, *, stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic, unit: str = "files") -> Iterator[Callable[[str], None]]:
    """Yields ``advance(item)``, to be called once per finished item (``unit``: what the plain lines count).

    ``enabled``: None means a bar when ``stream`` (stderr) is a terminal and plain lines when it is not;
    True forces the bar; False shows nothing.
    """
    stream = stream if stream is not None else sys.stderr
    if enabled is False or total == 0:
        yield lambda item: None
        return
    if enabled is None and not _is_tty(stream):
        with _lines(total, label, stream, clock, unit) as advance:
            yield advance
        return
    with _bar(total, label, stream) as advance:
        yield advance


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def _lines(total: int, label: str, stream: TextIO, clock: Callable[[], float],
           unit: str) -> Iterator[Callable[[str], None]]:
    t0 = clock()
    last = t0
    done = 0

    def say(text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            print(text, file=stream, flush=True)

    def advance(item: str) -> None:
        nonlocal done, last
        done += 1
        now = clock()
        if now - last >= LINE_EVERY_S and done < total:
            last = now
            say(f"torchtalk: {label} {done}/{total} {unit} ({100 * done // total}%) after {now - t0:.0f}s")

    yield advance
    if done:
        say(f"torchtalk: {label} {done}/{total} {unit} in {clock() - t0:.1f}s")


@contextlib.contextmanager
def _bar(total: int, label: str, stream: TextIO) -> Iterator[Callable[[str], None]]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Column

    console = Console(file=stream)
    # Every column has a fixed width, set once: the bar does not jump as numbers and file names change.
    digits = len(str(total))
    fixed = len(label) + 1 + BAR_WIDTH + 1 + (2 * digits + 1) + 1 + 7 + 2
    width = max(ITEM_WIDTH[0], min(ITEM_WIDTH[1], console.width - fixed - 1))
    with Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(bar_width=BAR_WIDTH),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[item]}", style="dim",
                   table_column=Column(width=width, no_wrap=True, overflow="crop")),
        console=console,
        transient=False,
    ) as prog:
        task = prog.add_task(label, total=total, item="")

        def advance(item: str) -> None:
            prog.update(task, advance=1, item=shorten(item, width))

        yield advance
