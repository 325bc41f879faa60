"""Progress for long work: a bar on a terminal, silence when piped."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def bar(total: int, label: str, enabled: bool | None = None) -> Iterator[Callable[[str], None]]:
    """Yields ``advance(item)``. ``enabled=None`` means: only when stderr is a terminal."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled or total == 0:
        yield lambda item: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[item]}", style="dim"),
        console=Console(stderr=True),
        transient=False,
    ) as prog:
        task = prog.add_task(label, total=total, item="")

        def advance(item: str) -> None:
            prog.update(task, advance=1, item=item[-60:])

        yield advance
