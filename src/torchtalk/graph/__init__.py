"""One graph over the whole tree: typed nodes and edges of every kind, and the walks over them.

Built on demand from the per-file facts of an index (stack-graphs style: facts per
file, linked at query time), so a refresh of one file never relinks the rest.
"""

from __future__ import annotations

from .graph import INTO, OUT, Graph, graph
from .walk import FREE, LevelCap, Step, Walk, down, up

__all__ = ["FREE", "INTO", "OUT", "Graph", "LevelCap", "Step", "Walk", "down", "graph", "up"]
