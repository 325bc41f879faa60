"""Note [A lost Stopped] (server/signals.py): a signal whose Stopped was dropped by Python still stops the server."""

from __future__ import annotations

import gc
import signal
import sys

import pytest

from torchtalk.server import signals
from torchtalk.server.signals import Stopped, stop_on_signals


class _DropsItsStop:
    """Runs the signal handler where Python cannot propagate what it raises: in a ``__del__``."""

    def __del__(self) -> None:
        signals._raise_stopped(signal.SIGTERM, None)


def test_a_stopped_raised_in_a_finaliser_is_raised_again_where_the_signals_are_handed_over(monkeypatch):
    dropped: list[type] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: dropped.append(u.exc_type))
    old = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        stop_on_signals()
        _DropsItsStop()
        gc.collect()
        # Python dropped it ("Exception ignored in ...", not printed: it is handled below): nothing stopped
        assert dropped == [] and signals._received == [signal.SIGTERM]
        sys.unraisablehook(type("U", (), {"exc_value": ValueError("x"), "exc_type": ValueError})())
        assert dropped == [ValueError]  # what is not a Stopped still reaches the hook before
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN  # and the handler left the signals ignored
        with pytest.raises(Stopped) as stopped:
            stop_on_signals()
        assert stopped.value.code == 128 + signal.SIGTERM
        stop_on_signals()  # raised once: the handlers are back
        assert signal.getsignal(signal.SIGTERM) is signals._raise_stopped
    finally:
        signals._received.clear()
        signal.signal(signal.SIGTERM, old[0])
        signal.signal(signal.SIGINT, old[1])


def test_uvicorns_server_shuts_down_for_a_signal_whose_stopped_was_lost():
    # Lost after stop_on_signals and before uvicorn's handlers: the server, once they are in, shuts down for it.
    import uvicorn

    from torchtalk.server.http_guard import StoppingServer
    seen: list[int] = []
    server = StoppingServer(uvicorn.Config(lambda *a: None), seen.append)
    signals._received.append(signal.SIGTERM)
    old = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        with server.capture_signals():
            assert server.should_exit and server.signum == signal.SIGTERM and seen == [signal.SIGTERM]
            server._captured_signals.clear()  # not raised again at the end of the block: this is a test
        assert signals._received == []
    finally:
        signals._received.clear()
        signal.signal(signal.SIGTERM, old[0])
        signal.signal(signal.SIGINT, old[1])
