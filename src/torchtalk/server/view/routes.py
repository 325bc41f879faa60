"""The web view's routes, under /view: the page, its static files (all shipped in the package), the JSON API.

They are mounted by ``torchtalk view`` and by the HTTP server next to /mcp. Bound to
loopback, they answer only requests addressed to a loopback name (the Host header), so
a web page elsewhere cannot reach them through DNS rebinding; the page loads nothing
from the network (its Content-Security-Policy says so to the browser too).
"""

from __future__ import annotations

import json
import logging
import time
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ...errors import TorchTalkError
from ..app import BUILD_POLL_S, BUILD_WAIT_S
from ..backend import Backend, Unavailable
from ..threads import in_thread
from .payload import answer_json, source_json, tools_json

log = logging.getLogger("torchtalk")

PREFIX = "/view"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
MAX_ARGS_CHARS = 4000


def static_dir() -> Path:
    return Path(str(resources.files("torchtalk.server.view") / "static"))


def _host_name(header: str) -> str:
    if header.startswith("["):
        return header.split("]", 1)[0] + "]"
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class View:
    def __init__(self, backend: Backend, loopback_only: bool = True) -> None:
        self.backend = backend
        self.loopback_only = loopback_only

    def _refused(self, request: Request) -> Response | None:
        if self.loopback_only and _host_name(request.headers.get("host", "")) not in LOOPBACK_HOSTS:
            return JSONResponse({"ok": False, "error": "this server answers requests to 127.0.0.1 or localhost only"},
                                status_code=421)
        return None

    def page(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        return FileResponse(static_dir() / "index.html", headers={"Content-Security-Policy": CSP,
                                                                  "Cache-Control": "no-cache"})

    def _json(self, request: Request, make: Any) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        ix = self.backend.ready()
        deadline = time.monotonic() + BUILD_WAIT_S
        while isinstance(ix, Unavailable) and ix.building and time.monotonic() < deadline:
            time.sleep(BUILD_POLL_S)  # the first index is being built: wait a little, as MCP calls do
            ix = self.backend.ready()
        if isinstance(ix, Unavailable):
            return JSONResponse({"ok": False, "error": ix.message, "retry": ix.building}, status_code=503)
        try:
            with ix.using():
                return JSONResponse(make(ix))
        except TorchTalkError as exc:
            self.backend.after_error(ix)
            return JSONResponse({"ok": False, "error": str(exc)}, status_code=400)
        except Exception as exc:  # a bug: a message the page can show, the traceback in the log
            log.exception("view request failed")
            return JSONResponse({"ok": False, "error": f"internal error: {type(exc).__name__}: {exc}"},
                                status_code=500)

    # Queries run in daemon threads (../threads.py): a shutdown never waits for one.
    async def answer(self, request: Request) -> Response:
        return await in_thread(self._answer, request)

    async def source(self, request: Request) -> Response:
        return await in_thread(self._source, request)

    def _answer(self, request: Request) -> Response:
        tool = request.query_params.get("tool", "")
        raw = request.query_params.get("args", "{}")
        if len(raw) > MAX_ARGS_CHARS:
            return JSONResponse({"ok": False, "error": f"args is longer than {MAX_ARGS_CHARS} characters"},
                                status_code=400)
        try:
            args = json.loads(raw)
        except ValueError:
            args = None
        if not isinstance(args, dict):
            return JSONResponse({"ok": False, "error": "args must be a JSON object, e.g. {\"function_name\": "
                                                       "\"softmax\"}"}, status_code=400)
        return self._json(request, lambda ix: answer_json(ix, tool, args))

    def _source(self, request: Request) -> Response:
        where = request.query_params.get("where", "")
        return self._json(request, lambda ix: source_json(ix, where))

    def tools(self, request: Request) -> Response:
        refused = self._refused(request)
        return refused if refused is not None else JSONResponse(tools_json())


def view_routes(backend: Backend, loopback_only: bool = True) -> list[BaseRoute]:
    v = View(backend, loopback_only)
    return [
        Route(PREFIX, lambda request: RedirectResponse(PREFIX + "/")),
        Route(PREFIX + "/", v.page),
        Route(PREFIX + "/api/answer", v.answer),
        Route(PREFIX + "/api/source", v.source),
        Route(PREFIX + "/api/tools", v.tools),
        Mount(PREFIX + "/static", app=StaticFiles(directory=static_dir()), name="view-static"),
    ]
