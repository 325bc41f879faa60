"""Blocking work off the event loop, in daemon threads a shutdown can walk away from.

anyio's worker threads are not daemons: a query still running (or a read of stdin still blocked) when a
signal came made the interpreter wait for it at exit, and `serve` stayed alive until the client closed
stdin (issue 26). Here each call runs in a daemon thread (kept for the next call, as anyio keeps its own)
and the awaiting task can be cancelled at any moment: the answer, if it ever comes, is dropped, and the
process exits on time.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
_Job = tuple[Callable[[], Any], asyncio.AbstractEventLoop, asyncio.Future]

_jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
_idle = 0
_lock = threading.Lock()


def _settle(fut: asyncio.Future, value: object, error: BaseException | None) -> None:
    if fut.done():  # cancelled meanwhile: nobody waits for it any more
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(value)


def _worker() -> None:
    global _idle
    while True:
        fn, loop, fut = _jobs.get()
        value: object = None
        error: BaseException | None = None
        try:
            value = fn()
        except BaseException as exc:  # noqa: BLE001  handed to the awaiting task, which raises it
            error = exc
        try:
            loop.call_soon_threadsafe(_settle, fut, value, error)
        except RuntimeError:  # the loop is closed: the server has stopped
            pass
        del fn, fut, value, error
        with _lock:
            _idle += 1


async def in_thread(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` in a daemon thread; cancelling the caller abandons the thread's result."""
    global _idle
    loop = asyncio.get_running_loop()
    fut: asyncio.Future = loop.create_future()
    with _lock:
        if _idle:
            _idle -= 1
        else:
            threading.Thread(target=_worker, name="torchtalk-worker", daemon=True).start()
    _jobs.put((lambda: fn(*args), loop, fut))
    result: T = await fut
    return result
