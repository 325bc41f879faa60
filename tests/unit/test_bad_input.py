"""Bad input, property-based: every tool argument, through the MCP server and through direct calls.

Property: each call answers within a bound with either a result or a clear error (one naming the
argument or its valid values, never a traceback or an "internal error"), and the server keeps
answering normal calls afterwards. The index is built once per module over the fixture tree plus
the Python fixtures (so the Python and test layers have data too).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import shutil
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from torchtalk.errors import TorchTalkError
from torchtalk.query.results import NotFound
from torchtalk.server import build_server
from torchtalk.tools import all_tools, get_tool, run

from ..conftest import build_index

FIXTURES = Path(__file__).parents[1] / "fixtures"
BOUND_S = 10.0  # every single call answers within this

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])

# ------------------------------------------------------------------ the index (built once) and an MCP client


@pytest.fixture(scope="module")
def rich(tmp_path_factory):
    """(tree, Index) over the fixture tree + torch/** and test/** Python fixtures, indexed once."""
    base = tmp_path_factory.mktemp("bad-input")
    tree = base / "pytorch"
    shutil.copytree(FIXTURES / "tree", tree)
    shutil.copytree(FIXTURES / "py" / "torch", tree / "torch", dirs_exist_ok=True)
    (tree / "test").mkdir(exist_ok=True)
    shutil.copy(FIXTURES / "py" / "test" / "nn_device_tests.py", tree / "test" / "test_nn_device.py")
    _st, ix, _report = build_index(tree, base / "cache", workers=1, codegen=False)
    # Sanity: every layer the tools read has data, so the properties exercise real code paths.
    assert ix.one("SELECT count(*) FROM op")[0] > 10
    assert ix.one("SELECT count(*) FROM test_method")[0] > 0
    assert ix.one("SELECT count(*) FROM test_util")[0] > 0
    yield tree, ix
    ix.close()


class McpHarness:
    """One in-process MCP session on a background event loop, so hypothesis examples can call it synchronously."""

    def __init__(self, ix):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="mcp-harness", daemon=True)
        self.thread.start()
        self._ready: concurrent.futures.Future = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None
        self.session = asyncio.run_coroutine_threadsafe(self._main(ix), self.loop)
        self.client = self._ready.result(timeout=60)

    async def _main(self, ix):
        self._stop = asyncio.Event()
        try:
            async with Client(build_server(ix)) as c:
                self._ready.set_result(c)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def call(self, name: str, args: dict | None, timeout: float = BOUND_S) -> tuple[bool, str, float]:
        """(is_error, text, seconds); a call slower than ``timeout`` fails the test."""
        t0 = time.monotonic()
        fut = asyncio.run_coroutine_threadsafe(self.client.call_tool(name, args), self.loop)
        try:
            result = fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            pytest.fail(f"{name}({_short(args)}) did not answer within {timeout}s")
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        return bool(result.is_error), text, time.monotonic() - t0

    @property
    def alive(self) -> bool:
        return not self.session.done()

    def close(self) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        with contextlib.suppress(Exception):
            self.session.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


@pytest.fixture(scope="module")
def mcp(rich):
    h = McpHarness(rich[1])
    yield h
    h.close()


def _short(v) -> str:
    r = repr(v)
    return r if len(r) <= 120 else r[:117] + "..."


# ------------------------------------------------------------------ strategies

class Rep:
    """``prefix + unit * n``, built inside the test: hypothesis prints Rep('a', 100000), not 100 kB."""

    def __init__(self, unit: str, n: int, prefix: str = ""):
        self.unit, self.n, self.prefix = unit, n, prefix

    def __repr__(self) -> str:
        return f"Rep({self.unit!r}, {self.n}" + (f", prefix={self.prefix!r})" if self.prefix else ")")

    def build(self) -> str:
        return self.prefix + self.unit * self.n


def real(v):
    return v.build() if isinstance(v, Rep) else v


LONG = [Rep("a", 100_000), Rep(" ", 100_000), Rep(" ", 100_000, prefix="relu"), Rep("x", 500), Rep("x", 501),
        Rep("\x00", 100_000), Rep("é", 100_000), Rep("%", 100_000), Rep("\t", 100_000, prefix="softmax"),
        Rep("🙂", 50_000), Rep("../", 30_000), Rep("ab", 250)]

SPECIAL = [
    "", " ", "\t", "\n\n", " \u00a0 \u3000 ", "\u200b",
    "\x00", "relu\x00", "\x00relu", "\x1b[31mred", "\x7f", "\r\n", "\u2028", "\x08\x08\x08",
    "é", "日本語", "🙂" * 10, "\u202erelu", "\ufeffrelu", "İ", "ß" * 300, "𝕏",
    "\ud800", "relu\udfff", "\udcff\udcfe",
    ".*", "(?P<x>", "[", "[a-", "(", ")", "a{1,", "^$", "|", "+", "?",
    "\\", "a\\", "\\\\", "\\%", "%", "_", "%_%", "%%", "__", "re%u", "rel_", "%relu%",
    "'", '"', "''", "'; DROP TABLE op; --", "\" OR \"1\"=\"1", "1; SELECT * FROM meta", "*", "NEAR(a b)",
    "a AND b", "a OR b", "NOT", "\"\"\"", "^relu", "relu*", "-relu",
    "::", "aten::", "at::native::", ".", "..", "torch.", "Tensor.", "F.", "nn.", "test_", "torch.nn.",
    "add.", ".Tensor", "add..Tensor", "softmax.int.", "TORCH_IMPL_FUNC(", "TORCH_IMPL_FUNC()",
    "TORCH_IMPL_FUNC(cumsum_out", "TORCH_META_FUNC2(,)",
    "../../etc/passwd", "/etc/passwd", "~", "~/x", "C:\\x", "test/../../x", "%2e%2e%2f",
    "<script>", "${HOME}", "%s%s%s", "{0}", "None", "null", "0", "-1", "9" * 400, "nan", "true",
]

_all_chars = st.characters(exclude_categories=())  # includes control characters and lone surrogates
nasty_text = st.one_of(
    st.sampled_from(SPECIAL),
    st.sampled_from(LONG),
    st.text(alphabet=_all_chars, max_size=40),
    st.text(alphabet=" \t\n\r\x0b\x0c\u00a0\u2003\u3000", max_size=30),
    st.text(alphabet=st.sampled_from("%_\\'\"*()[]{}.^$|?+-:;/~ "), max_size=30),
    st.builds(Rep, st.text(alphabet=_all_chars, min_size=1, max_size=3), st.integers(1, 40_000)),
    st.builds(lambda a, b: a + b, st.sampled_from(["relu", "softmax", "add.Tensor", "Linear", "cumsum",
                                                   "test_nn_device", "index_select_cuda", "torch.", "aten::"]),
              st.sampled_from(SPECIAL[:40])),
)
nasty_int = st.one_of(
    st.sampled_from([0, -1, 1, 2, 5, 6, 20, 499, 500, 501, -(10**18), 10**18, 2**31, 2**63, 2**64, -(2**63) - 1,
                     10**100]),
    st.integers(),
)
wrong_type = st.one_of(
    st.none(), st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
anything = st.one_of(nasty_text, nasty_int, wrong_type, st.binary(max_size=8), st.tuples(st.integers()))

STR_PARAMS = [(t.name, p.name) for t in all_tools() for p in t.params if p.type is str]
INT_PARAMS = [(t.name, p.name) for t in all_tools() for p in t.params if p.type is int]
ALL_PARAMS = [(t.name, p.name) for t in all_tools() for p in t.params]
REQUIRED_PARAMS = [(t.name, p.name) for t in all_tools() for p in t.params if p.required]
# A valid value for each required argument, used while another argument is the one under test.
VALID = {"function_name": "relu", "query": "relu", "module_name": "Linear", "file_path": "test_nn_device",
         "message": "RuntimeError: Boolean inputs not supported for relu"}
RANGES = {("search", "limit"): (1, 500), ("find_similar_tests", "limit"): (1, 500), ("impact", "depth"): (1, 5),
          ("list_test_utils", "limit"): (1, 500), ("affected", "depth"): (1, 5), ("affected", "limit"): (1, 500),
          ("error_origin", "limit"): (1, 50), ("test_file_info", "offset"): (0, 1_000_000)}
# Tools whose arguments are all optional, but one of a group must be given: (the group, a valid choice).
ONE_OF = {"affected": ({"names", "diff", "rev"}, {"names": "cumsum"})}


def _args(tool_name: str, param: str, value) -> dict:
    value = real(value)
    tool = get_tool(tool_name)
    args = {p.name: VALID[p.name] for p in tool.params if p.required and p.name != param}
    group, choice = ONE_OF.get(tool_name, (set(), {}))
    if param not in group:
        args.update(choice)
    args[param] = value
    return args


def assert_clear(is_error: bool, text: str, *, names: tuple[str, ...], what: str) -> None:
    """A result, or an error that names one of ``names`` (argument, valid values); never a traceback."""
    assert text.strip(), f"{what}: empty answer"
    assert "Traceback" not in text and 'File "' not in text, f"{what}: a traceback leaked:\n{text[:2000]}"
    assert "internal error" not in text.lower(), f"{what}: an exception escaped the argument checks:\n{text[:2000]}"
    if is_error:
        assert any(n in text for n in names), f"{what}: the error names none of {names}:\n{text[:2000]}"
        assert len(text) < 5000, f"{what}: the error is {len(text)} characters long"


def assert_healthy(mcp: McpHarness) -> None:
    assert mcp.alive, "the MCP session ended"
    is_error, text, _ = mcp.call("trace", {"function_name": "relu", "focus": "dispatch"})
    assert not is_error and "MPS: relu_mps" in text, text[:2000]


# ------------------------------------------------------------------ through MCP


@pytest.mark.parametrize("tool_name,param", STR_PARAMS, ids=[f"{t}.{p}" for t, p in STR_PARAMS])
@SETTINGS
@given(value=nasty_text)
def test_mcp_string_arguments(mcp, tool_name, param, value):
    args = _args(tool_name, param, value)
    is_error, text, secs = mcp.call(tool_name, args)
    assert_clear(is_error, text, names=(param,), what=f"{tool_name}({_short(args)})")
    assert secs < BOUND_S
    assert_healthy(mcp)


@pytest.mark.parametrize("tool_name,param", STR_PARAMS, ids=[f"{t}.{p}" for t, p in STR_PARAMS])
@pytest.mark.parametrize("value", [Rep(" ", 100_000, prefix="relu"), Rep("x", 100_000), Rep("é", 100_000)],
                         ids=["name+100k-spaces", "100k-x", "100k-nonascii"])
def test_huge_arguments_are_not_echoed_back(rich, mcp, tool_name, param, value):
    """A 100,000-character argument: the answer (result or error) does not repeat it."""
    args = _args(tool_name, param, value)
    is_error, text, _ = mcp.call(tool_name, args)
    assert_clear(is_error, text, names=(param,), what=f"{tool_name}({_short(args)})")
    try:
        _r, direct = run(get_tool(tool_name), rich[1], **args)
    except TorchTalkError as exc:
        direct = str(exc)
    echo = value.unit * 1000
    for how, answer in (("MCP", text), ("direct", direct)):
        assert echo not in answer, f"{tool_name}.{param} ({how}): the answer repeats the argument " \
                                   f"({len(answer):,} characters): {answer[:300]}"


@pytest.mark.parametrize("tool_name,param", INT_PARAMS, ids=[f"{t}.{p}" for t, p in INT_PARAMS])
@SETTINGS
@given(value=nasty_int)
def test_mcp_integer_arguments_in_and_out_of_range(mcp, tool_name, param, value):
    lo, hi = RANGES[(tool_name, param)]
    args = _args(tool_name, param, value)
    is_error, text, _ = mcp.call(tool_name, args)
    what = f"{tool_name}({_short(args)})"
    assert_clear(is_error, text, names=(param,), what=what)
    if lo <= value <= hi:
        assert not is_error, f"{what}: an in-range value was refused: {text[:500]}"
    else:
        assert is_error and f"from {lo} to {hi}" in text, f"{what}: out of range but answered: {text[:500]}"
    assert_healthy(mcp)


@pytest.mark.parametrize("tool_name,param", ALL_PARAMS, ids=[f"{t}.{p}" for t, p in ALL_PARAMS])
@SETTINGS
@given(value=wrong_type)
def test_mcp_wrong_types(mcp, tool_name, param, value):
    """list / dict / bool / float / null where a string or an integer belongs."""
    tool = get_tool(tool_name)
    prm = next(p for p in tool.params if p.name == param)
    args = _args(tool_name, param, value)
    is_error, text, _ = mcp.call(tool_name, args)
    what = f"{tool_name}({_short(args)})"
    assert_clear(is_error, text, names=(param,), what=what)
    if prm.type is str and value is not None:
        # Nothing but a string is a name; null is allowed only where the argument is optional.
        assert is_error, f"{what}: a {type(value).__name__} was accepted as a string: {text[:300]}"
    if prm.type is str and value is None and prm.required:
        assert is_error, f"{what}: null accepted for a required argument"
    if prm.type is int and (isinstance(value, (list, dict)) or (isinstance(value, float) and value != value)):
        assert is_error, f"{what}: {value!r} accepted as an integer"
    assert_healthy(mcp)


@pytest.mark.parametrize("tool_name,param", REQUIRED_PARAMS, ids=[f"{t}.{p}" for t, p in REQUIRED_PARAMS])
def test_mcp_missing_required_argument_names_it(mcp, tool_name, param):
    args = _args(tool_name, param, None)
    del args[param]
    is_error, text, _ = mcp.call(tool_name, args)
    assert is_error, text[:500]
    assert param in text and "Traceback" not in text
    assert_healthy(mcp)


@SETTINGS
@given(extra=st.dictionaries(st.text(min_size=1, max_size=20),
                             anything.map(real).filter(lambda v: not isinstance(v, bytes)), max_size=4),
       name=st.sampled_from([t.name for t in all_tools()]))
def test_mcp_unknown_extra_arguments_do_not_break_a_call(mcp, name, extra):
    tool = get_tool(name)
    known = {p.name for p in tool.params}
    args = {k: v for k, v in extra.items() if k not in known}
    args.update({p.name: VALID[p.name] for p in tool.params if p.required})
    is_error, text, _ = mcp.call(name, args)
    assert_clear(is_error, text, names=tuple(known) or ("argument",), what=f"{name}({_short(args)})")
    assert_healthy(mcp)


@SETTINGS
@given(name=nasty_text)
def test_mcp_unknown_tool_name(mcp, name):
    name = real(name)
    if name in {t.name for t in all_tools()}:
        return
    is_error, text, _ = mcp.call(name, {})
    assert is_error and "Traceback" not in text and "nknown tool" in text, text[:300]
    assert_healthy(mcp)


def test_mcp_arguments_not_an_object(mcp):
    for args in (None, {}):
        is_error, text, _ = mcp.call("get_status", args)
        assert not is_error and "TorchTalk status" in text
        is_error, text, _ = mcp.call("trace", args)
        assert is_error and "function_name" in text
    assert_healthy(mcp)


# ------------------------------------------------------------------ direct calls (what the CLI uses)


@pytest.mark.parametrize("tool_name,param", ALL_PARAMS, ids=[f"{t}.{p}" for t, p in ALL_PARAMS])
@SETTINGS
@given(value=anything)
def test_direct_calls_raise_only_bad_argument(rich, tool_name, param, value):
    _, ix = rich
    kwargs = _args(tool_name, param, value)
    t0 = time.monotonic()
    try:
        _result, text = run(get_tool(tool_name), ix, **kwargs)
    except TorchTalkError as exc:
        msg = str(exc)
        assert param in msg, f"{tool_name}({_short(kwargs)}): error does not name {param}: {msg[:500]}"
        assert len(msg) < 5000, f"{tool_name}({_short(kwargs)}): the error is {len(msg)} characters long"
    else:
        assert isinstance(text, str) and text.strip()
    assert time.monotonic() - t0 < BOUND_S, f"{tool_name}({_short(kwargs)}) took too long"


# ------------------------------------------------------------------ LIKE wildcards and escapes are literal


WILDCARD_ONLY = st.text(alphabet=st.sampled_from("%"), min_size=1, max_size=5) | st.sampled_from(
    ["%", "%%", "a%", "%a", "re%u", "% %", "%\\", "\\%", "%_%", "_%_", "%relu%"])


@SETTINGS
@given(q=WILDCARD_ONLY)
def test_percent_is_a_literal_character_in_every_search(rich, q):
    """No name in the index contains '%': a query with one must find nothing, not everything."""
    _, ix = rich
    assert ix.one("SELECT count(*) FROM names WHERE instr(name, '%') > 0")[0] == 0
    res, text = run(get_tool("search"), ix, query=q)
    assert isinstance(res, NotFound), f"search {q!r}: {text[:500]}"  # nothing found is "not found", with suggestions
    res, text = run(get_tool("find_similar_tests"), ix, query=q)
    assert _no_tests(res), f"find_similar_tests {q!r} matched by wildcard:\n{text[:1500]}"
    res, text = run(get_tool("list_modules"), ix, category=q)
    assert res.total == 0, f"list_modules {q!r}: {text[:500]}"


def _no_tests(res) -> bool:
    """find_similar_tests found nothing: "not found" (with close names), or an answer with no test and no entry."""
    return isinstance(res, NotFound) or (res.total == 0 and not res.opinfos)


def test_find_similar_tests_percent_finds_no_opinfo_entries(rich):
    """The plainest case of the property above, on its own so the report names it."""
    _, ix = rich
    res, text = run(get_tool("find_similar_tests"), ix, query="%")
    assert _no_tests(res), f"'%' matched OpInfo entries through an unescaped LIKE:\n{text[:1500]}"


def test_underscore_is_literal_in_searches(rich):
    _, ix = rich
    # 'relu' exists; 'rel_' as a LIKE pattern would match it, as text it must not.
    res, _ = run(get_tool("list_modules"), ix, category="Lin_ar")
    assert res.total == 0
    res, _ = run(get_tool("find_similar_tests"), ix, query="soft_ax")
    assert _no_tests(res)
    res, _ = run(get_tool("search"), ix, query="rel_")
    assert isinstance(res, NotFound)


@pytest.mark.parametrize("q", ["torch.", "F.", "nn.", "aten::", "Tensor.", "test_", "torch.nn.functional."])
def test_find_similar_tests_prefix_only_query_is_not_a_match_all(rich, q):
    """A query that is only a spelling prefix names no op: refuse it, or find nothing; not every test."""
    _, ix = rich
    try:
        res, text = run(get_tool("find_similar_tests"), ix, query=q)
    except TorchTalkError as exc:
        assert "query" in str(exc)
        return
    if isinstance(res, NotFound):
        return
    n_tests = ix.one("SELECT count(*) FROM test_method")[0]
    assert not (res.total == n_tests and n_tests > 1), f"{q!r} matched all {n_tests} tests:\n{text[:800]}"
    assert not res.opinfos, f"{q!r} matched OpInfo entries:\n{text[:800]}"


def test_sql_metacharacters_are_plain_text_and_the_index_is_untouched(rich, mcp):
    _, ix = rich
    before = ix.one("SELECT count(*) FROM op")[0]
    for q in ("'; DROP TABLE op; --", "\"; DELETE FROM op; --", "relu' OR '1'='1", "relu\" OR \"1\"=\"1"):
        for tool, arg in (("search", "query"), ("trace", "function_name"), ("calls", "function_name"),
                          ("find_similar_tests", "query"), ("trace_module", "module_name"),
                          ("list_modules", "category"), ("test_file_info", "file_path")):
            is_error, text, _ = mcp.call(tool, _args(tool, arg, q))
            assert_clear(is_error, text, names=(arg,), what=f"{tool} {q!r}")
    assert ix.one("SELECT count(*) FROM op")[0] == before
    res, _ = run(get_tool("search"), ix, query="relu' OR '1'='1")
    assert isinstance(res, NotFound)


# ------------------------------------------------------------------ error messages list valid values


def test_list_test_utils_error_lists_categories_cleanly_when_there_are_none(indexed):
    """The bare fixture tree has no torch/testing/_internal: the message must still read as a list."""
    _, ix = indexed
    with pytest.raises(TorchTalkError) as exc:
        run(get_tool("list_test_utils"), ix, category="fixtures")
    msg = str(exc.value)
    assert "category" in msg and "all" in msg
    assert not msg.rstrip().endswith(","), f"dangling separator in: {msg!r}"


def test_choice_errors_list_the_valid_values(rich, mcp):
    is_error, text, _ = mcp.call("trace", {"function_name": "relu", "focus": "%"})
    assert is_error and "yaml, dispatch, full" in text
    is_error, text, _ = mcp.call("search", {"query": "relu", "backend": "NoSuchKey"})
    assert is_error and "CUDA" in text and "MPS" in text
    is_error, text, _ = mcp.call("list_test_utils", {"category": "nope"})
    assert is_error and "assertions" in text and "decorators" in text
    is_error, text, _ = mcp.call("search", {"query": "relu", "limit": 0})
    assert is_error and "from 1 to 500" in text
    is_error, text, _ = mcp.call("impact", {"function_name": "relu", "depth": 6})
    assert is_error and "from 1 to 5" in text


# ------------------------------------------------------------------ the CLI front-end over the same checks


def _cli(argv: list[str]) -> tuple[int, str, str]:
    from torchtalk.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse refusing a value
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


CLI_TEXT = nasty_text.map(real).filter(lambda s: "\x00" not in s and not s.startswith("-") and len(s) < 5000)


@SETTINGS
@given(value=CLI_TEXT, tool=st.sampled_from(["trace", "search", "calls", "called-by", "impact", "cuda-kernels",
                                             "trace-module", "find-similar-tests", "test-file-info"]))
def test_cli_positional_names(tree, tool, value):
    code, out, err = _cli([tool, value, "--source", str(tree)])
    assert code in (0, 2, 3), (code, err[-2000:])  # 3: answered "not found" (torchtalk.cli.EXIT_NOT_FOUND)
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    if code == 2:
        # The first run logs "torchtalk: full index of ..."; the error itself is one line (argparse: usage + one).
        lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("torchtalk: ")]
        assert lines and (lines[0].startswith("error:") or lines[0].startswith("usage:")), err[:500]
        assert len(lines) <= 3, err[:2000]
    else:
        assert out.strip()


@SETTINGS
@given(value=st.one_of(nasty_int.map(str), st.sampled_from(["", " ", "1.5", "1e3", "0x10", "nan", "٣", "５"])))
def test_cli_integer_flags(tree, value):
    code, out, err = _cli(["search", "relu", "--limit", value, "--source", str(tree)])
    assert code in (0, 2), (code, err[-2000:])
    assert "Traceback" not in err and "internal error" not in err
    if code == 2:
        assert "limit" in err, err[:500]
