"""An error message as pasted, reduced to what a raise site printed.

PyTorch adds to a message on its way out, and users paste more than the message: the
Python traceback ("Traceback (most recent call last):", "  File ..., line N, in f", code
lines and carets, chained exceptions), the exception class ("RuntimeError: "), a
warning's "path:line: UserWarning: " and the code line after it, and for C++ errors
"Exception raised from f at path:line (most recent call first):" with the C++ frames
(TORCH_SHOW_CPP_STACKTRACES=1), or a C++ warning's "(Triggered internally at path:line.)".
All of it is stripped; what says where the error came from ("Exception raised from", an
INTERNAL ASSERT's "at path:line", "Triggered internally at", the innermost frame) is kept
as a hint. The dtype rewrite PyTorch applies (CPUFloatType -> torch.FloatTensor) is
applied to the sites' pieces instead (model/raises.py ``as_printed``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from ..errors import BadArgument
from ..model import GENERATED_PREFIX
from ..model.paths import SOURCE_ROOTS
from ..model.raises import HintKind

MAX_INPUT = 200_000  # characters read of what was pasted (a long traceback included)
MAX_MESSAGE = 4_000  # characters of the message itself that are matched
EXAMPLE = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x10 and 20x30)"

_RAISED_FROM = re.compile(r"Exception raised from (?P<func>.*?) at (?P<path>[^\s:]+):(?P<line>\d+)"
                          r" \(most recent call first\):")
_ASSERT_AT = re.compile(r'INTERNAL ASSERT FAILED at "(?P<path>[^"]+)":(?P<line>\d+)')
_TRIGGERED = re.compile(r"\s*\(Triggered internally at (?P<path>[^\s:]+):(?P<line>\d+)\.\)")
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?$')
_CHAINED = re.compile(r"^(?:During handling of the above exception, another exception occurred:|"
                      r"The above exception was the direct cause of the following exception:)\s*$")
# The class Python prints before the message: a builtin or custom name (the bare builtins "Exception" and "Warning"
# too), qualified by its module when it is not a builtin ("torch.distributed.elastic.rendezvous.api.RendezvousError").
_CLASS = re.compile(r"^(?P<cls>(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*(?:Error|Exception|Warning|Exit|Interrupt|Iteration"
                    r"|Failure|Assert)|Exception|Warning))(?::\s?|$)")
_WARNING_LINE = re.compile(r"^(?P<path>[^\s:][^:]*\.py):(?P<line>\d+): (?P<cls>\w*Warning): ")
# a C++ frame of TORCH_SHOW_CPP_STACKTRACES=1: "frame #3: f + 0x12 (0x... in libtorch.so)" (before 2.5), or after the
# "C++ CapturedTraceback:" header torch/csrc/Module.cpp prints (2.5 on) "#5 c10::Error::Error(...) from ??:0"
_CPP_FRAME = re.compile(r"^(?:frame #\d+:|#\d+ .* from \S+$|C\+\+ CapturedTraceback:\s*$)")
_CARETS = re.compile(r"^\s*[\^~]+\s*$")
_ANY_FRAME = re.compile(r'^\s*File "[^"]+", line \d+', re.M)
_SURROGATE = re.compile(r"[\ud800-\udfff]")


@dataclass
class Where:
    """A place the pasted text says the error came from."""

    path: str  # relative to a PyTorch tree when it lies in one ("aten/src/ATen/..."), else as printed
    line: int
    func: str = ""
    how: HintKind = HintKind.FRAME


@dataclass
class Cleaned:
    message: str  # what is matched against the raise sites
    exception: str  # the class the text names ("RuntimeError"), "" when none
    hints: list[Where] = field(default_factory=list)
    foreign: str = ""  # the innermost frame's file when it is not PyTorch's ("numpy/core/...")
    notes: list[str] = field(default_factory=list)  # what was stripped, cut or replaced


def tree_path(printed: str) -> str:
    """``/pytorch/aten/src/ATen/native/X.cpp`` or ``.../site-packages/torch/nn/x.py`` -> the tree's path;
    ``/pytorch/build/aten/src/ATen/core/TensorMethods.cpp`` (written by the build) -> ``<generated>/...``."""
    p = printed.replace("\\", "/")
    if "site-packages/" in p:
        return p.rsplit("site-packages/", 1)[1]
    if "/build/" in p:
        return GENERATED_PREFIX + tree_path(p.rsplit("/build/", 1)[1])
    best = -1
    for root in SOURCE_ROOTS:
        i = p.rfind("/" + root)
        if i >= 0 and (best < 0 or i < best):
            best = i
    if best >= 0:
        return p[best + 1:]
    return p.lstrip("./") if p.startswith(SOURCE_ROOTS) or p.startswith("../") else p


def _is_torch(path: str) -> bool:
    return tree_path(path).startswith(SOURCE_ROOTS)


def clean(text: object) -> Cleaned:
    if not isinstance(text, str):
        raise BadArgument(f"message must be a string such as {EXAMPLE!r}, not {type(text).__name__}")
    notes: list[str] = []
    if len(text) > MAX_INPUT:
        if _ANY_FRAME.search(text, len(text) - MAX_INPUT if len(text) > 2 * MAX_INPUT else 0):
            # a traceback: the error is its last line(s), after the frames
            notes.append(f"the input is {len(text):,} characters long; its last {MAX_INPUT:,} were read (the end "
                         "of the traceback, where the error is)")
            text = text[-MAX_INPUT:]
        else:
            notes.append(f"the input is {len(text):,} characters long; its first {MAX_INPUT:,} were read")
            text = text[:MAX_INPUT]
    if _SURROGATE.search(text):
        n = len(_SURROGATE.findall(text))
        notes.append(f"the message held {n} byte(s) that are not UTF-8; they were read as U+FFFD")
        text = _SURROGATE.sub("\ufffd", text)
    text = "".join(ch if ch in "\n\t" or unicodedata.category(ch) != "Cc" else " " for ch in text)
    if not text.strip():
        raise BadArgument(f"message is empty; give the error as PyTorch printed it, e.g. {EXAMPLE!r}")
    hints: list[Where] = []
    m = _RAISED_FROM.search(text)
    if m:
        hints.append(Where(tree_path(m.group("path")), int(m.group("line")), m.group("func"), HintKind.RAISED_FROM))
        notes.append("stripped the C++ stack trace (\"Exception raised from ...\" and its frames)")
        text = text[:m.start()].rstrip() + text[m.end():]  # the frame lines go below
    lines = text.splitlines()
    # The last exception of a chain is the one raised.
    for i in range(len(lines) - 1, -1, -1):
        if _CHAINED.match(lines[i]):
            notes.append("read the last exception of a chain")
            lines = lines[i + 1:]
            break
    frames = [(fm.group("path"), int(fm.group("line")), fm.group("func") or "") for fm in map(_FRAME.match, lines)
              if fm]
    body = _strip_traceback(lines)
    if frames:
        notes.append(f"stripped a Python traceback ({len(frames)} frame(s))")
    exception = ""
    if body:
        w = _WARNING_LINE.match(body[0])
        c = _CLASS.match(body[0])
        if w:
            exception = w.group("cls")
            body[0] = body[0][w.end():]
            body = body[:1] + [x for x in body[1:] if x.startswith((" ", "\t")) is False]
        elif c:
            exception = c.group("cls")
            body[0] = body[0][c.end():]
    body = [x for x in body if not _CPP_FRAME.match(x)]
    message = "\n".join(body).strip()
    t = _TRIGGERED.search(message)
    if t:  # a C++ warning (TORCH_WARN) as Python shows it: torch/csrc/Exceptions.cpp adds where it was raised
        hints.append(Where(tree_path(t.group("path")), int(t.group("line")), "", HintKind.TRIGGERED))
        message = (message[:t.start()] + message[t.end():]).strip()
        notes.append("stripped \"(Triggered internally at ...)\", which PyTorch adds to C++ warnings")
    a = _ASSERT_AT.search(message)
    if a:
        hints.append(Where(tree_path(a.group("path")), int(a.group("line")), "", HintKind.ASSERT))
    foreign = ""
    if frames:
        path, line, func = frames[-1]
        if _is_torch(path):
            hints.append(Where(tree_path(path), line, func, HintKind.FRAME))
        elif not any(_is_torch(h.path) for h in hints):  # C++ of the tree raised it: not foreign
            foreign = path
    if exception.endswith("KeyError") and len(message) > 1 and message[0] == message[-1] and message[0] in "'\"":
        message = message[1:-1]  # str(KeyError(x)) is repr(x)
    if len(message) > MAX_MESSAGE:
        notes.append(f"the message is {len(message):,} characters long; its first {MAX_MESSAGE:,} were matched")
        message = message[:MAX_MESSAGE]
    if not message:
        raise BadArgument("message holds a traceback but no error text after it; give the last line(s), e.g. "
                          f"{EXAMPLE!r}")
    return Cleaned(message, exception, hints, foreign, notes)


def _strip_traceback(lines: list[str]) -> list[str]:
    """The lines after the traceback: drop "Traceback ...", frame lines and the code and carets under them. Frames
    pasted without their "Traceback ..." line start a traceback too."""
    out: list[str] = []
    in_tb = False
    for ln in lines:
        if ln.startswith("Traceback (most recent call last):") or not in_tb and _FRAME.match(ln):
            in_tb, out = True, []
            continue
        if in_tb:
            if _FRAME.match(ln) or _CARETS.match(ln) or ln.startswith((" ", "\t")) or not ln.strip():
                continue
            in_tb = False
        out.append(ln)
    while out and not out[0].strip():
        out.pop(0)
    return out
