"""C++ / CUDA / Objective-C++ fact extractor: ``extract_cpp(relpath, data) -> FileFacts``.

Pipeline for one file: Objective-C++ touch-ups -> blank block comments in continued directives
(cpp_prep) -> expand same-file macros in place (cpp_macros) -> blank attribute macros (cpp_prep)
-> parse with tree-sitter-cpp, or tree-sitter-cuda for CUDA sources -> walk the tree (cpp_walk,
cpp_regs). Every step keeps line numbers. Pure: the only state is a per-process cache of parsers and queries.
"""

from __future__ import annotations

from dataclasses import replace

from ..model import CallSite, CppClass, CppField, CppSymbol, FileFacts, RaiseSite, Registration, Using
from .cpp_macros import expand_same_file
from .cpp_objc import finish_objc, prepare_objc
from .cpp_prep import (
    blank_directive_comments,
    blank_empty_last_arguments,
    blank_macros,
    blank_placeholders,
    blank_statement_macros,
    blank_typename_temporaries,
    resolve_chain_conditionals,
    resolve_conditionals,
    terminate_macro_statements,
)
from .cpp_text import scan_scopes
from .cpp_walk import QUERY, Walker
from .raises_cpp import string_constants

_CUDA_EXT = (".cu", ".cuh")
_RETRY_DAMAGE = 3000  # measured: catches most files a retry improves, at ~1/10 of the cost
_CHUNK_DAMAGE = 2000  # ERROR bytes at namespace scope that switch to parsing item by item
_cache: dict[bool, tuple] = {}  # is_cuda -> (parser, captures function); one per process


def _tools(is_cuda: bool) -> tuple:
    tools = _cache.get(is_cuda)
    if tools is None:
        import tree_sitter as ts

        if is_cuda:
            import tree_sitter_cuda as grammar
        else:
            import tree_sitter_cpp as grammar
        lang = ts.Language(grammar.language())
        query = ts.Query(lang, QUERY)
        tools = (ts.Parser(lang), lambda root: ts.QueryCursor(query).captures(root))
        _cache[is_cuda] = tools
    return tools


# A parse with more top-level nodes than this (a badly damaged file) is re-parsed in slices:
# tree-sitter's query matching is quadratic in the number of sibling nodes it keeps open
# (20k unclosed "template<" took 1.6 s; an 8 MB file would take most of an hour).
_MAX_SIBLINGS = 4096
_SIBLINGS_PER_SLICE = 512


def empty_facts() -> FileFacts:
    return {CppSymbol: [], CallSite: [], Registration: [], Using: [], CppClass: [], CppField: [], RaiseSite: []}


def extract_cpp(relpath: str, data: bytes) -> FileFacts:
    """Facts of one C/C++/CUDA/ObjC++ file. Damaged code costs facts, not the file (tree-sitter
    recovers); a bug in the walker raises, and the worker records it against the file."""
    low = relpath.lower()
    objc = low.endswith(".mm")
    if objc:
        data = prepare_objc(data)
    if "/templates/" in low:
        data = blank_placeholders(data)
    data = blank_directive_comments(data)
    text = data.decode("latin-1")  # 1 byte = 1 char: str offsets are byte offsets
    spans = []
    if "define" in text:
        text, spans = expand_same_file(text)
    if objc:
        text = finish_objc(text)
    if spans or objc:
        data = text.encode("latin-1")
    span_lines = {text.count("\n", 0, sp.start) + 1 for sp in spans}
    span_lines |= {a.line + k for sp in spans for a in sp.args for k in range(len(a.breaks) + 1)}  # their arguments'
    buf, glob_pos, dev_pos = blank_macros(data)
    buf = blank_empty_last_arguments(blank_typename_temporaries(blank_statement_macros(buf)))
    buf = resolve_chain_conditionals(terminate_macro_statements(buf))
    is_cuda = low.endswith(_CUDA_EXT) or b"<<<" in buf
    parser, captures = _tools(is_cuda)
    tree = parser.parse(buf)
    root = tree.root_node
    if root.has_error and root.child_count > _MAX_SIBLINGS:
        cuts = [root.child(i).start_byte for i in range(_SIBLINGS_PER_SLICE, root.child_count, _SIBLINGS_PER_SLICE)]
        slices = list(zip([0, *cuts], [*cuts, len(buf)], strict=True))
        common = dict(relpath=relpath, is_cuda=is_cuda, glob_pos=glob_pos, dev_pos=dev_pos,
                      macro_spans=spans, scopes=scan_scopes(buf.decode("latin-1")))
        return _with_constants(_once(_by_slices(buf, slices, parser, captures, common), span_lines), text)
    caps = captures(root)
    tree, caps = _reread_defaults(buf, tree, caps, parser, captures)
    scopes = None
    top = 0
    if tree.root_node.has_error:
        lost = _damage(caps)
        if lost >= min(_RETRY_DAMAGE, len(buf) // 8) and b"#if" in buf:
            # Conditionals that split a statement or a brace pair can cost tree-sitter
            # the rest of the file: retry keeping one branch of each unbalanced group.
            buf2 = resolve_conditionals(buf)
            tree2 = parser.parse(buf2)
            tree2, caps2 = _reread_defaults(buf2, tree2, captures(tree2.root_node), parser, captures)
            if _damage(caps2) < lost:
                buf, tree, caps = buf2, tree2, caps2
        top = _top_level_errors(tree.root_node)
        if top or any(n.type == "}" for n in caps.get("m", ())):  # namespaces may be misread
            scopes = scan_scopes(buf.decode("latin-1"))
    common = dict(relpath=relpath, is_cuda=is_cuda, glob_pos=glob_pos, dev_pos=dev_pos,
                  macro_spans=spans, scopes=scopes)
    if scopes is None or top < min(_CHUNK_DAMAGE, len(buf) // 8):
        w = Walker(buf.decode("latin-1"), tree.root_node, caps, **common)
        w.run()
        return _with_constants(_once({CppSymbol: w.syms, CallSite: w.calls, Registration: w.regs, Using: w.usings,
                                      CppClass: w.classes, CppField: w.fields, RaiseSite: w.raises},
                                     span_lines), text)
    # Damage reaches namespace scope: parse each top-level item on its own, so one bad
    # statement costs at most the function or class that holds it.
    return _with_constants(_once(_by_slices(buf, _merge_small(buf, scopes.chunks), parser, captures, common),
                                 span_lines), text)


def _with_constants(facts: FileFacts, text: str) -> FileFacts:
    facts[RaiseSite] += string_constants(text)
    return facts


def _once(facts: FileFacts, lines: set[int]) -> FileFacts:
    """A macro expanded once per case (TensorTopK.cu's RUN_DIM: RUN_MB for 1, 2, 3 and -1 dimensions) writes the
    same call several times at its use line: one fact per distinct call on such a line is what a reader can tell
    apart. ``lines``: the lines that hold a same-file macro's expansion."""
    if lines:
        seen: set[CallSite] = set()
        kept = []
        for c in facts[CallSite]:
            if c.line in lines:
                if c in seen:
                    continue
                seen.add(c)
            kept.append(c)
        facts[CallSite] = kept
    return facts


def _by_slices(buf: bytes, slices: list[tuple[int, int]], parser, captures, common: dict) -> FileFacts:
    """Parse and walk each byte slice on its own, keeping file offsets and lines."""
    out = empty_facts()
    line = 0
    prev = 0
    for start, end in slices:
        line += buf.count(b"\n", prev, start)
        prev = start
        chunk = buf[start:end]
        ctree = parser.parse(chunk)
        ctree, caps = _reread_defaults(chunk, ctree, captures(ctree.root_node), parser, captures)
        w = Walker(chunk.decode("latin-1"), ctree.root_node, caps, byte_base=start, line_base=line, **common)
        w.run()
        _append(out, w)
    return out


# Note [Braced default arguments]
# ``inline bool can_use_fast_route(ArrayRef<TensorList> tensorLists, ArrayRef<Scalar> scalarList = {}, ...) {``:
# at namespace scope, a parameter of a template type with a braced default (``= {}``) makes tree-sitter-cpp read the
# declarator as a variable constructed from expressions (``ArrayRef < TensorList > tensorLists``, ``scalarList =
# {}``), and the body after it as a stray block: the function is lost, or a prototype's defaults are (a call of fewer
# arguments then reaches no declaration; Note [Argument counts] in graph/signatures.py). Such a list is no variable's:
# no code assigns in the arguments constructing a namespace-scope variable. Where a declaration at namespace scope has
# one (an assignment of a braced list in its init_declarator's arguments), the buffer is parsed again with each such
# braced list written as ``0`` padded to its length (same offsets, same lines), which reads as the parameter list it
# is; the walk reads the text as written (``scalarList = {}``).
_SCOPE_PARENTS = frozenset({"translation_unit", "declaration_list", "template_declaration", "linkage_specification"})


def _reread_defaults(buf: bytes, tree, caps: dict, parser, captures) -> tuple:
    """(tree, captures) of ``buf``, parsed again when it holds parameter lists read as expressions (Note [Braced
    default arguments])."""
    spans = [(n.start_byte, n.end_byte) for n in caps.get("init", ()) if _braced_default(n)]
    if not spans:
        return tree, caps
    out = bytearray(buf)
    for start, end in spans:
        out[start:end] = b"0" + bytes(c if c == 0x0A else 0x20 for c in buf[start + 1:end])
    tree = parser.parse(bytes(out))
    return tree, captures(tree.root_node)


def _braced_default(n) -> bool:
    """Whether the braced list ``n`` is a default argument tree-sitter read as an assignment in the arguments of a
    namespace-scope variable's initialisation: ``(ArrayRef<T> a, ArrayRef<S> b = {})``."""
    p = n.parent
    if p is None or p.type != "assignment_expression" or p.child_by_field_name("right") != n or (
            p.child_by_field_name("left") is None or p.child_by_field_name("left").type != "identifier"):
        return False
    p = p.parent
    while p is not None and p.type == "binary_expression":
        p = p.parent
    if p is None or p.type != "argument_list" or p.parent is None or p.parent.type != "init_declarator":
        return False
    decl = p.parent.parent
    if decl is None or decl.type != "declaration":
        return False
    up = decl.parent
    while up is not None and up.type.startswith("preproc_"):
        up = up.parent
    return up is not None and up.type in _SCOPE_PARENTS


def _merge_small(buf: bytes, chunks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join runs of brace-free chunks (declarations, usings): fewer, larger parses."""
    out: list[tuple[int, int]] = []
    joinable = False  # the last chunk in ``out`` has no brace
    for start, end in chunks:
        plain = buf.find(b"{", start, end) < 0
        if plain and joinable:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
            joinable = plain
    return out


def _append(out: FileFacts, w: Walker) -> None:
    base = len(out[CppSymbol])
    out[CppSymbol].extend(w.syms)
    out[CallSite].extend(replace(c, caller=c.caller + base) if c.caller >= 0 else c for c in w.calls)
    out[Registration].extend(replace(r, scope=r.scope + base) if r.scope >= 0 else r for r in w.regs)
    out[Using].extend(w.usings)
    out[CppClass].extend(w.classes)
    out[CppField].extend(w.fields)
    out[RaiseSite].extend(replace(r, cpp_func=r.cpp_func + base) if r.cpp_func >= 0 else r for r in w.raises)


def _top_level_errors(root) -> int:
    """Bytes of ERROR nodes directly under the root or a namespace: damage that can
    misplace whole functions, as opposed to errors inside one function body."""
    if root.type == "ERROR":
        return root.end_byte - root.start_byte
    total = 0
    stack = [root]
    while stack:
        node = stack.pop()
        for c in node.children:
            if c.type == "ERROR":
                total += c.end_byte - c.start_byte
            elif c.type in ("namespace_definition", "declaration_list", "linkage_specification"):
                stack.append(c)
    return total


def _damage(caps: dict) -> int:
    """Bytes under ERROR nodes plus a charge per MISSING node; a missing ``}`` or
    ``#endif`` means tree-sitter nested the rest of the file wrongly, so it costs most."""
    spans = sorted((n.start_byte, n.end_byte) for n in caps.get("e", ()))
    total = 0
    last = -1
    for s, e in spans:
        if e > last:
            total += e - max(s, last)
            last = e
    for n in caps.get("m", ()):
        total += 5000 if n.type in ("}", "#endif") else 200
    return total
