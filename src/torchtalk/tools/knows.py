"""Whether a name is one a tool can answer for: checked before a next call is suggested."""

from __future__ import annotations

from ..graph.registry import registry
from ..query.functions import find_targets
from ..query.modules import find_class
from ..query.results import NotFound
from ..query.search import search
from ..store.reader import Index


def op(ix: Index, name: str) -> bool:
    return bool(registry(ix).lookup(name))


def function(ix: Index, name: str) -> bool:
    return not isinstance(find_targets(ix, name), NotFound)


def op_or_function(ix: Index, name: str) -> bool:
    return op(ix, name) or function(ix, name)


def module(ix: Index, name: str) -> bool:
    return not isinstance(find_class(ix, name), NotFound)


def test_file(ix: Index, path: str) -> bool:
    return ix.one("SELECT 1 FROM files WHERE path = ? AND layer = 'tests'", (path,)) is not None


def search_finds(ix: Index, query: str) -> bool:
    """Whether search finds anything for the query (a typo finds nothing: its not-found answer suggests names)."""
    return not isinstance(search(ix, query, limit=1), NotFound)
