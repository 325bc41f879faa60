"""``torchtalk view``: the web view on 127.0.0.1, one process, until Ctrl-C (130) or SIGTERM (143)."""

from __future__ import annotations

import os
import sys
import webbrowser
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.responses import RedirectResponse
from starlette.routing import Route

from .. import prepare
from ..backend import Backend
from ..http import bind, serve_uvicorn
from ..signals import Stopped, said, stop_on_signals
from .routes import PREFIX, view_routes

HOST = "127.0.0.1"


def can_open_browser() -> bool:
    """A graphical browser can be opened (never a text browser taking over the terminal)."""
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def view_url(port: int, tool: str = "", name: str = "") -> str:
    query = "?" + urlencode({"tool": tool or "trace", "q": name}) if name else ""
    return f"http://{HOST}:{port}{PREFIX}/{query}"


def serve_view(source: str | None, port: int, codegen: bool = True, open_browser: bool | None = None,
               tool: str = "", name: str = "") -> int:
    """Serve the view until SIGTERM (143) or SIGINT (130); the first index is built here, with progress."""
    stop_on_signals()
    try:
        tree, ix = prepare(source, codegen)  # before the page opens
    except Stopped as exc:
        return said(exc.code)
    ix.close()
    backend = Backend(str(tree.root), codegen)
    backend.start()
    app = Starlette(routes=[Route("/", lambda request: RedirectResponse(PREFIX + "/")), *view_routes(backend)])
    sock = bind(HOST, port)
    url = view_url(sock.getsockname()[1], tool, name)
    print(f"torchtalk: the view of {tree.root} is at {url} (Ctrl-C stops it)", file=sys.stderr, flush=True)
    if open_browser if open_browser is not None else can_open_browser():
        webbrowser.open(url)
    try:
        return said(serve_uvicorn(app, sock, backend, lifespan="off"))
    finally:
        sock.close()
