"""Load a YAML document once, keeping both the Python values and each node's line.

PyYAML's C loader composes the node graph (which carries marks) and constructs
values from it in one parse, so line numbers cost nothing extra.
"""

from __future__ import annotations

from typing import Any

import yaml

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlError(ValueError):
    """A YAML file that does not parse; the message names the file and line."""


def load_with_nodes(relpath: str, data: bytes) -> tuple[Any, Any]:
    """Return (value, root node). Raises YamlError with ``path:line: problem``."""
    loader = Loader(data)
    try:
        node = loader.get_single_node()
        if node is not None:
            _refuse_aliases(relpath, node)
        value = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        raise YamlError(f"{relpath}:{line}: YAML syntax error: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"{relpath}: YAML error: {exc}") from None
    finally:
        loader.dispose()
    return value, node


def _refuse_aliases(relpath: str, root: Any) -> None:
    """PyTorch's YAML files never use anchors/aliases; refusing them stops "billion laughs" input,
    whose expansion (when facts are serialised) would take hours and gigabytes."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise YamlError(f"{relpath}:{line_of(node)}: YAML aliases (*anchor) are not supported here")
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                stack.append(k)
                stack.append(v)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def line_of(node: Any) -> int:
    return node.start_mark.line + 1


def end_line_of(node: Any) -> int:
    # end_mark sits after the node; a block mapping ends at column 0 of the next line.
    mark = node.end_mark
    return mark.line + (1 if mark.column else 0)


def mapping_items(node: Any) -> list[tuple[str, Any]]:
    """(key text, value node) pairs of a mapping node; [] for anything else."""
    if not isinstance(node, yaml.MappingNode):
        return []
    return [(str(k.value), v) for k, v in node.value]
