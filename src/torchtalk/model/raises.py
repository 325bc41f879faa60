"""Raise sites: where the tree raises (or warns) with a message, and how the printed message is built.

Note [Raise messages]: a message is kept as PyTorch prints it, in pieces. ``pieces`` are
the literal texts in order and ``gaps`` the values printed between two of them (the
expressions as written), so the printed message is ``pieces[0] <gaps[0]> pieces[1] ...
pieces[-1]``; a piece is "" where a value starts or ends the message or two values
meet. The pieces are those of the printed text, not of the call: ``TORCH_CHECK(c)`` with
no message prints "Expected c to be true, but got false.  (Could this error message be
improved? ...)", ``TORCH_INTERNAL_ASSERT(c, ...)`` prefixes "c INTERNAL ASSERT FAILED at
\"<file>\":<line>, please report a bug to PyTorch. ", a printf format (``torch::TypeError``,
``PyErr_Format``), ``fmt::format``, ``str.format``, ``%`` and f-strings are split at their
fields. A value that names a string constant (``ERR_BACKWARD_TWICE``) is replaced by the
constant's pieces when the sites are matched (the constant may live in another file: it
is recorded where it is defined, as a site of kind CONSTANT).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated

from .facts import NO_REF, Ref, Stored, check_enum, check_line
from .kinds import StrEnum
from .loc import Loc


class RaiseKind(StrEnum):
    """How a site builds its message (Note [Raise messages])."""

    CHECK = "check"  # TORCH_CHECK(cond, ...) and its _INDEX/_VALUE/_TYPE/... variants: c10::str of the rest
    ASSERT = "assert"  # TORCH_INTERNAL_ASSERT / AT_ASSERT(M): the INTERNAL ASSERT FAILED prefix, then the rest
    ERROR = "error"  # AT_ERROR, C10_THROW_ERROR, throw X(...), PyErr_SetString/Format: the message itself
    WARN = "warn"  # TORCH_WARN*, warnings.warn: a warning, not an exception
    RAISE = "raise"  # Python raise X(...)
    CONSTANT = "constant"  # a string constant a message names (const char* ERR_X = "..."): matched where used


class HintKind(StrEnum):
    """What in a pasted error says where it came from (query/error_text.py); the value is the text that says it."""

    RAISED_FROM = "Exception raised from"  # a C++ error's first frame (TORCH_SHOW_CPP_STACKTRACES)
    TRIGGERED = "Triggered internally at"  # a C++ warning as Python shows it
    ASSERT = "INTERNAL ASSERT FAILED at"  # TORCH_INTERNAL_ASSERT's own text
    FRAME = "innermost frame"  # the last frame of a Python traceback: its file, not its line, hints


class Verdict(StrEnum):
    """How well the best raise site matches a message (query/errors.py)."""

    EXACT = "exact"  # every piece of its text is in the message, in order, anchored at both ends
    MATCH = "match"  # most of the message is its text
    WEAK = "weak"  # no site prints the message well
    NONE = "none"  # nothing in the tree prints it


# C++ check macros -> the Python exception class their failure is raised as (c10/util/Exception.h,
# torch/csrc/Exceptions.h). The message arguments start after ``CHECK_ARGS_FROM`` (the condition, or the
# error type and the condition).
CHECK_MACROS: dict[str, str] = {
    "TORCH_CHECK": "RuntimeError", "TORCH_CHECK_MSG": "RuntimeError", "TORCH_CHECK_INDEX": "IndexError",
    "TORCH_CHECK_VALUE": "ValueError", "TORCH_CHECK_TYPE": "TypeError",
    "TORCH_CHECK_NOT_IMPLEMENTED": "NotImplementedError", "TORCH_CHECK_LINALG": "torch._C._LinAlgError",
    "TORCH_CHECK_ALWAYS_SHOW_CPP_STACKTRACE": "RuntimeError", "TORCH_CHECK_IF_NOT_ON_CUDA": "RuntimeError",
    "TORCH_CHECK_TENSOR_ALL": "RuntimeError", "TORCH_CHECK_WITH": "", "TORCH_CHECK_WITH_MSG": "",
    "TORCH_SYM_CHECK": "RuntimeError", "TORCH_CHECK_ARG": "RuntimeError",
    "_assert_async": "RuntimeError",  # at::_assert_async(cond, msg): a call that checks and raises the same way
}
CHECK_ARGS_FROM = {"TORCH_CHECK_WITH": 2, "TORCH_CHECK_WITH_MSG": 3, "TORCH_CHECK_MSG": 2, "TORCH_CHECK_ARG": 1}
ASSERT_MACROS = frozenset({"TORCH_INTERNAL_ASSERT", "TORCH_INTERNAL_ASSERT_DEBUG_ONLY", "AT_ASSERT", "AT_ASSERTM"})
WARN_MACROS = {"TORCH_WARN": "UserWarning", "TORCH_WARN_ONCE": "UserWarning",
               "TORCH_WARN_DEPRECATION": "DeprecationWarning"}
ERROR_MACROS = frozenset({"AT_ERROR", "C10_THROW_ERROR"})
# printf-style setters of a Python error (torch/csrc): the exception is their first argument.
PY_ERROR_SETTERS = frozenset({"PyErr_SetString", "PyErr_Format", "THPUtils_setError"})
# Exception classes thrown in C++, as Python prints them (c10 errors by their type, the torch::X printf
# errors of torch/csrc/Exceptions.h, the std exceptions pybind11 translates).
THROWN: dict[str, str] = {
    "Error": "RuntimeError", "runtime_error": "RuntimeError", "logic_error": "RuntimeError",
    "exception": "RuntimeError", "IndexError": "IndexError", "out_of_range": "IndexError",
    "ValueError": "ValueError", "invalid_argument": "ValueError", "domain_error": "ValueError",
    "length_error": "ValueError", "TypeError": "TypeError", "NotImplementedError": "NotImplementedError",
    "AttributeError": "AttributeError", "LinAlgError": "torch._C._LinAlgError",
    "OutOfMemoryError": "torch.OutOfMemoryError", "EnforceFiniteError": "RuntimeError",
    "DistError": "torch.distributed.DistError", "DistBackendError": "torch.distributed.DistBackendError",
    "DistStoreError": "torch.distributed.DistStoreError", "DistNetworkError": "torch.distributed.DistNetworkError",
    "overflow_error": "OverflowError", "BufferError": "BufferError",
}
# AT_DISPATCH_*(TYPE, NAME, ...) fails in AT_DISPATCH_SWITCH (ATen/Dispatch.h) for a type it has no case for,
# printing '"' NAME "\" not implemented for '" toString(type) "'".
DISPATCH_PREFIX = "AT_DISPATCH_"
DISPATCH_MESSAGE = ("\" not implemented for '", "'")
CHECK_DEFAULT = ("Expected ", " to be true, but got false.  (Could this error message be improved?  If so, "
                 "please report an enhancement request to PyTorch.)")
ASSERT_PREFIX = (" INTERNAL ASSERT FAILED at \"", "\":", ", please report a bug to PyTorch. ")

# Note [The function's own name]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``__func__`` (and the compilers' ``__FUNCTION__``) is the enclosing function's unqualified name, known where the
# site is written: ``TORCH_CHECK(A.dim() == 2, __func__, " : expect A to be 2D tensor.")`` in
# ``_weight_int8pack_mm_cpu`` prints "_weight_int8pack_mm_cpu : expect A to be 2D tensor.", which tells it apart
# from the same check in ``_weight_int4pack_mm_cpu``. The extractor prints it as literal text (``fill_values``):
# the name of the function definition around the site as its declarator spells it, templates and scopes aside (a
# constructor's is its class's name), or ``operator()`` inside a lambda. A declarator that is no plain name (a
# macro such as ``TORCH_IMPL_FUNC(x)``, whose expansion names the function) leaves it a value.
# ``__PRETTY_FUNCTION__`` prints the full signature as the compiler writes it (return type, qualified name,
# parameter types, template arguments), which the source does not spell: it stays a value.
FUNCTION_NAME_VALUES = frozenset({"__func__", "__FUNCTION__"})
LAMBDA_FUNCTION_NAME = "operator()"


def fill_values(pieces: tuple[str, ...], gaps: tuple[str, ...],
                known: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``pieces``/``gaps`` with each value whose expression ``known`` holds printed as that text (its gap becomes
    literal text joined to the pieces around it)."""
    if not any(g in known for g in gaps):
        return pieces, gaps
    out = [pieces[0]]
    left: list[str] = []
    for g, p in zip(gaps, pieces[1:], strict=True):
        if g in known:
            out[-1] += known[g] + p
        else:
            left.append(g)
            out.append(p)
    return tuple(out), tuple(left)


# Note [Assert boilerplate]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# Some text is printed by every site of a macro: TORCH_INTERNAL_ASSERT's ' INTERNAL ASSERT FAILED at "<file>":<line>,
# please report a bug to PyTorch. ' between its condition and its own message, and a message-less TORCH_CHECK's
# ' to be true, but got false.  (Could this error message be improved? ...)' after its condition. It tells no site
# apart, so it is never evidence: error matching (query/error_match.py) takes it out of the sites' pieces (a value
# between the condition and the site's own message) and out of the pasted message, and a message pasted without
# the assert's head (its own message only, "cudaGetDevice returns invalid device -1") is matched against the
# assert's own pieces alone; the tests that expect a message (query/error_tests.py) never search for it ("please
# report a bug to PyTorch" is spelled by tests of every internal assert).
ASSERT_HEAD = re.compile(r' ?INTERNAL ASSERT FAILED at "[^"]*":\d+, please report a bug to PyTorch\. ?')
CHECK_TAIL = " ".join(CHECK_DEFAULT[1].split())
BOILERPLATE = (*ASSERT_PREFIX, CHECK_TAIL, *DISPATCH_MESSAGE)  # the text pieces of macros' own text


def assert_parts(pieces: list[str]) -> tuple[str, list[str]] | None:
    """(condition, own message pieces) of an assert's printed pieces, or None when they hold no assert head."""
    if len(pieces) >= 3 and pieces[0].endswith(ASSERT_PREFIX[0]) and pieces[1] == ASSERT_PREFIX[1] and \
            pieces[2].startswith(ASSERT_PREFIX[2]):
        return pieces[0][:-len(ASSERT_PREFIX[0])], [pieces[2][len(ASSERT_PREFIX[2]):], *pieces[3:]]
    return None


MAX_PIECE = 2000  # characters kept of one literal piece
MAX_TEXT = 300  # characters kept of a condition or a value expression


@dataclass(frozen=True, slots=True)
class RaiseSite:
    """One place that raises or warns, as written (Note [Raise messages])."""

    cpp_func: Annotated[int, Ref("CppSymbol")]  # the enclosing C++ definition (NO_REF in Python or outside any)
    py_func: Annotated[int, Ref("PyFunction")]  # the enclosing Python def (NO_REF in C++ or at module level)
    kind: RaiseKind
    macro: str  # as written: "TORCH_CHECK_INDEX", "throw std::runtime_error", "raise ValueError", "warnings.warn";
    #             for a CONSTANT, the constant's name
    exception: str  # the class Python shows: "RuntimeError", "IndexError", "UserWarning" ("" when not known)
    pieces: tuple[str, ...]  # literal pieces in order; a value sits between each two
    gaps: tuple[str, ...]  # what each gap between two pieces prints: len(pieces) - 1 expressions as written
    condition: str  # the checked condition (C++ checks; the enclosing `if` test in Python), "" when none
    line: int
    end_line: int
    via: str = ""  # the same-file macro whose expansion holds it ("ADDMM_META"), "" when written out
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("RaiseSite", self.line, self.end_line)
        check_enum("RaiseSite", "kind", self.kind, RaiseKind)
        if len(self.gaps) != len(self.pieces) - 1:
            raise ValueError(f"RaiseSite at line {self.line}: {len(self.pieces)} pieces need "
                             f"{len(self.pieces) - 1} values between them, not {len(self.gaps)}")

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)

    @property
    def is_python(self) -> bool:
        return self.path.endswith(".py")

    @property
    def has_function(self) -> bool:
        return self.cpp_func != NO_REF or self.py_func != NO_REF

    @property
    def literal(self) -> str:
        """The literal text alone: what a message must show for this site to have raised it."""
        return "".join(self.pieces)

    @property
    def template(self) -> str:
        """The printed message with each value as ``{expression}``."""
        out = [self.pieces[0]]
        for v, p in zip(self.gaps, self.pieces[1:], strict=True):
            out += ["{", v, "}", p]
        return "".join(out)


class Parts:
    """Builds ``pieces``/``gaps`` from literals and values in order: literals next to each other are
    joined, values next to each other too, and the pieces stay one more than the values."""

    def __init__(self) -> None:
        self.pieces: list[str] = [""]
        self.gaps: list[str] = []
        self._value_last = False

    def lit(self, text: str) -> None:
        if text:
            self.pieces[-1] = (self.pieces[-1] + text)[:MAX_PIECE]
            self._value_last = False

    def val(self, text: str) -> None:
        text = " ".join(text.split())[:MAX_TEXT]
        if self._value_last and self.pieces[-1] == "":
            self.gaps[-1] = f"{self.gaps[-1]}, {text}"[:MAX_TEXT]
        else:
            self.gaps.append(text)
            self.pieces.append("")
        self._value_last = True

    @property
    def has_text(self) -> bool:
        return any(p.strip() for p in self.pieces)

    def done(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return tuple(self.pieces), tuple(self.gaps)


# PyTorch rewrites legacy type names in the C++ messages it raises in Python (torch/csrc/Exceptions.cpp,
# processErrorMsg): "CPUFloatType" and "Variable[CPUFloatType]" print as "torch.FloatTensor",
# "SparseCUDAHalfType" as "torch.cuda.sparse.HalfTensor".
_LEGACY_TYPE = re.compile(r"(?:Variable\[)?(Sparse)?(CPU|CUDA)(Byte|Char|Double|Float|Int|Long|Short|Half)Type\]?")


def as_printed(text: str) -> str:
    """A C++ message's text as Python shows it (the legacy type-name rewrite)."""
    if "Type" not in text:
        return text
    return _LEGACY_TYPE.sub(lambda m: "torch." + ("cuda." if m.group(2) == "CUDA" else "") +
                            ("sparse." if m.group(1) else "") + m.group(3) + "Tensor", text)


# Note [Printed fields]: the fields of a format string, which print a value.
PRINTF_FIELD = re.compile(r"%%|%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L|q)?[diouxXeEfFgGcspaAn]")
PY_PERCENT_FIELD = re.compile(r"%%|%(?:\([^)]*\))?[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[diouxXeEfFgGcrsa]")
BRACE_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*\}")


def split_format(fmt: str, parts: Parts, fields: re.Pattern[str], args: list[str]) -> None:
    """Add a format string's literal text and fields (each taking the next of ``args`` as its text)."""
    pos = 0
    i = 0
    for m in fields.finditer(fmt):
        parts.lit(fmt[pos:m.start()])
        tok = m.group(0)
        if tok in ("%%", "{{", "}}"):
            parts.lit(tok[0])
        else:
            inner = tok[1:-1].split(":")[0].split("!")[0] if tok.startswith("{") else ""
            parts.val(inner if inner and not inner.isdigit() else (args[i] if i < len(args) else tok))
            i += 1
        pos = m.end()
    parts.lit(fmt[pos:])
