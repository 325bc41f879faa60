"""``torchtalk view``: the web view on 127.0.0.1, one process, until Ctrl-C."""

from __future__ import annotations

import os
import sys
import webbrowser
from urllib.parse import urlencode

import uvicorn
from starlette.applications import Starlette
from starlette.responses import RedirectResponse
from starlette.routing import Route

from .. import prepare
from ..backend import Backend
from ..http import bind
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
    tree, ix = prepare(source, codegen)  # the first index is built here, with progress, before the page opens
    ix.close()
    backend = Backend(str(tree.root), codegen)
    backend.start()
    app = Starlette(routes=[Route("/", lambda request: RedirectResponse(PREFIX + "/")), *view_routes(backend)])
    sock = bind(HOST, port)
    url = view_url(sock.getsockname()[1], tool, name)
    print(f"torchtalk: the view of {tree.root} is at {url} (Ctrl-C stops it)", file=sys.stderr, flush=True)
    if open_browser if open_browser is not None else can_open_browser():
        webbrowser.open(url)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        backend.stop()
    return 0
