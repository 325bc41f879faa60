"""One line from a stdio client: a JSON-RPC message for the SDK's session, or the reply it gets instead.

The SDK's stdio transport (mcp 2.3.0, ``mcp/server/stdio.py``) hands a line it cannot validate to the
session as an exception, and the session only logs it at debug level: a malformed line, a lone
surrogate escape (``"\\ud800"``, which pydantic's JSON parser refuses) or a request nested deeper
than its recursion limit got no answer at all, and the client waited forever. Here every line gets
one: -32700 when it is not JSON, -32600 when it is JSON but not a JSON-RPC 2.0 message, each with
the id when one can be read; a ``tools/call`` whose arguments cannot be decoded (nested too deep,
over-long) gets a tool error the model can read. Lone surrogates parse (Python's json keeps them)
and reach the argument checks, which refuse them with their reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolResult,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCResponse,
    TextContent,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from ..query.args import shown

MAX_LINE = 4 * 1024 * 1024  # bytes; what the SDK's HTTP transport accepts as a request body
MAX_DEPTH = 64  # nesting of a whole message: MCP's deepest (initialize's capabilities) is under 10
HEAD = TAIL = 64 * 1024  # what is kept of an over-long line, to find its id and method

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')
_TAIL_ID = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*}\s*$')


@dataclass(frozen=True)
class Oversized:
    """A line longer than MAX_LINE, skipped: its size, first and last bytes."""

    size: int
    head: bytes
    tail: bytes


@dataclass(frozen=True)
class Rejected:
    """A line that is not a message the session can take, and why."""

    code: int
    message: str
    members: dict[str, Any] = field(default_factory=dict)  # what could be read of its top level
    undecodable: bool = False  # well-formed, but its content cannot be taken (too deep, too long)

    @property
    def id(self) -> int | str | None:
        v = self.members.get("id")
        return v if isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)) else None


def nesting_depth(text: str) -> int:
    """How deep brackets nest outside strings (an upper bound when it is small: no need to look)."""
    rough = text.count("[") + text.count("{")
    if rough <= MAX_DEPTH:
        return rough
    depth = deepest = 0
    for b in _BRACKETS.findall(_STRING.sub("", text)):
        if b in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def top_level(text: str) -> dict[str, Any]:
    """The scalar members of the outermost object, read without parsing the rest: how the reply to a
    line that cannot be parsed (truncated, too deep, too long) finds its id and method."""
    out: dict[str, Any] = {}
    if not text.lstrip().startswith("{"):
        return out
    depth = 0
    key: str | None = None
    value_next = False
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok in ("{", "["):
            depth += 1
            value_next = False
            continue
        if tok in ("}", "]"):
            depth -= 1
            if depth <= 0:
                break
            continue
        if depth != 1:
            continue
        if tok == ":":
            value_next = key is not None
        elif tok == ",":
            key, value_next = None, False
        elif value_next:
            try:
                out[key] = json.loads(tok)  # type: ignore[index]
            except ValueError:
                pass
            key, value_next = None, False
        elif tok.startswith('"'):
            try:
                key = json.loads(tok)
            except ValueError:
                key = None
    return out


def _no_constants(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


def _summary(exc: ValidationError) -> str:
    err = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(p) for p in err["loc"] if not str(p).startswith("JSONRPC"))
    return f"{where}: {err['msg']}" if where else err["msg"]


def decode(raw: bytes) -> SessionMessage | Rejected | None:
    """The message on one line (without its newline); None for a blank line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejected(PARSE_ERROR, f"Parse error: the line is not UTF-8 (byte {exc.start})",
                        top_level(raw.decode("utf-8", "replace")))
    if not text.strip():
        return None
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        return Rejected(INVALID_REQUEST, f"it is nested {depth} levels deep; the limit is {MAX_DEPTH}",
                        top_level(text), undecodable=True)
    try:
        obj = json.loads(text, parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:
        return Rejected(PARSE_ERROR, f"Parse error: {str(exc)[:200]}", top_level(text))
    if not isinstance(obj, dict):
        what = "a list (batches are not supported)" if isinstance(obj, list) else f"{shown(obj)}"
        return Rejected(INVALID_REQUEST, f"Invalid Request: a message is a JSON object, not {what}")
    if obj.get("jsonrpc") != "2.0":
        return Rejected(INVALID_REQUEST, f"Invalid Request: \"jsonrpc\" must be \"2.0\", not "
                                         f"{shown(obj.get('jsonrpc'))}", obj)
    msg_id = obj.get("id")
    if "id" in obj and not (isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool))
                            or (msg_id is None and "error" in obj)):
        # The SDK's union would take such a request for a notification (an unknown member is ignored) and
        # never answer it.
        return Rejected(INVALID_REQUEST, f"Invalid Request: \"id\" must be a string or an integer, not "
                                         f"{shown(msg_id)}", obj)
    try:
        message = jsonrpc_message_adapter.validate_python(obj, by_name=False)
    except ValidationError as exc:
        return Rejected(INVALID_REQUEST, f"Invalid Request: {_summary(exc)[:300]}", obj)
    return SessionMessage(message)


def oversized(line: Oversized) -> Rejected:
    members = top_level(line.head.decode("utf-8", "replace"))
    if "id" not in members:  # the id may come last, after the long part
        m = _TAIL_ID.search(line.tail.decode("utf-8", "replace"))
        if m:
            members["id"] = json.loads(m.group(1))
    return Rejected(INVALID_REQUEST, f"it is {line.size:,} bytes long; the limit is {MAX_LINE:,}", members,
                    undecodable=True)


def reply(r: Rejected) -> JSONRPCMessage:
    if r.undecodable and r.members.get("method") == "tools/call" and r.id is not None:
        text = (f"The arguments of this call could not be decoded: {r.message}. TorchTalk's arguments are "
                "short names and small integers.")
        result = CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        # Shaped as the SDK shapes a result for the 2025 protocol: no resultType.
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True, exclude={"result_type"})
        return JSONRPCResponse(jsonrpc="2.0", id=r.id, result=dumped)
    message = r.message if not r.undecodable else f"Invalid Request: {r.message}"
    return JSONRPCError(jsonrpc="2.0", id=r.id, error=ErrorData(code=r.code, message=message))


def encode(message: JSONRPCMessage) -> bytes:
    """One line of JSON. Text the client sent may hold lone surrogates (an id, a quoted name), which UTF-8
    cannot carry: then every non-ASCII character is written as a JSON escape instead."""
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8") + b"\n"
    except (ValueError, UnicodeError):
        data = message.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


class Lines:
    """Splits what stdin gives into lines, holding at most MAX_LINE bytes of one: a longer line is
    skipped to its end and handed on as an Oversized."""

    def __init__(self, max_line: int = MAX_LINE):
        self.max_line = max_line
        self._buf = bytearray()
        self._skipping: list = []  # [size, head, tail] while skipping an over-long line

    def _add(self, piece: bytes) -> None:
        if self._skipping:
            s = self._skipping
            s[0] += len(piece)
            s[2] = (s[2] + piece)[-TAIL:]
            return
        self._buf += piece
        if len(self._buf) > self.max_line:
            self._skipping = [len(self._buf), bytes(self._buf[:HEAD]), bytes(self._buf[-TAIL:])]
            self._buf = bytearray()

    def _take(self) -> bytes | Oversized:
        if self._skipping:
            size, head, tail = self._skipping
            self._skipping = []
            return Oversized(size, head, tail)
        line = bytes(self._buf)
        self._buf = bytearray()
        return line

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        out: list[bytes | Oversized] = []
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            self._add(chunk[start:] if nl < 0 else chunk[start:nl])
            if nl < 0:
                return out
            out.append(self._take())
            start = nl + 1

    def end(self) -> list[bytes | Oversized]:
        """At end of input: the last line, if it had no newline."""
        return [self._take()] if self._buf or self._skipping else []
