"""The op registry: native_functions.yaml, tags.yaml and derivatives.yaml, with lines.

Each ``- func:`` entry becomes one ``Op`` (one overload) and one ``OpDispatch``
row per dispatch key: ``CPU, CUDA: relu`` is two rows, because users ask per
backend. Nothing in an entry is dropped: fields we do not model go to ``extra``.
"""

from __future__ import annotations

import json
from typing import Any

from .facts import Derivative, DerivativeFormula, FileFacts, Op, OpDispatch, Tag
from .schema import SchemaError, parse_schema
from .yamlnodes import YamlError, end_line_of, line_of, load_with_nodes, mapping_items

NATIVE_FUNCTIONS = "aten/src/ATen/native/native_functions.yaml"
TAGS = "aten/src/ATen/native/tags.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"

_MODELED = {
    "func", "dispatch", "variants", "python_module", "structured", "structured_delegate",
    "structured_inherits", "precomputed", "ufunc_inner_loop", "autogen", "tags", "device_check",
    "device_guard", "manual_cpp_binding", "category_override", "cpp_no_default_args",
}


def _joined(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _json_or_empty(value: Any) -> str:
    return "" if value in (None, "", [], {}) else json.dumps(value, sort_keys=True, default=str)


def _entries(relpath: str, data: bytes) -> tuple[list[tuple[dict, Any]], list[str]]:
    """Top-level list entries with their nodes, or a file-level error."""
    try:
        value, node = load_with_nodes(relpath, data)
    except YamlError as exc:
        return [], [str(exc)]
    if value is None:
        return [], []
    if not isinstance(value, list):
        return [], [f"{relpath}:1: expected a list of entries, found {type(value).__name__}"]
    return [(v, n) for v, n in zip(value, node.value) if isinstance(v, dict)], []


def extract_native_functions(relpath: str, data: bytes) -> FileFacts:
    entries, errors = _entries(relpath, data)
    ops: list[Op] = []
    dispatch: list[OpDispatch] = []
    for entry, node in entries:
        func = entry.get("func")
        if not isinstance(func, str):
            errors.append(f"{relpath}:{line_of(node)}: entry without a func: string")
            continue
        try:
            schema = parse_schema(func)
        except SchemaError as exc:
            errors.append(f"{relpath}:{line_of(node)}: {exc}")
            continue
        nodes = dict(mapping_items(node))
        op_index = len(ops)
        ops.append(Op(
            name=schema.name,
            overload=schema.overload,
            full_name=schema.full_name,
            schema=func,
            line=line_of(node),
            end_line=end_line_of(node),
            arguments=json.dumps([a.__dict__ for a in schema.arguments]),
            returns=json.dumps([r.__dict__ for r in schema.returns]),
            variants=_joined(entry.get("variants")) or "function",
            python_module=_joined(entry.get("python_module")),
            structured=bool(entry.get("structured", False)),
            structured_delegate=_joined(entry.get("structured_delegate")),
            structured_inherits=_joined(entry.get("structured_inherits")),
            precomputed=_json_or_empty(entry.get("precomputed")),
            ufunc_inner_loop=_json_or_empty(entry.get("ufunc_inner_loop")),
            autogen=_joined(entry.get("autogen")),
            tags=_joined(entry.get("tags")),
            device_check=_joined(entry.get("device_check")),
            device_guard=_joined(entry.get("device_guard")),
            manual_cpp_binding=bool(entry.get("manual_cpp_binding", False)),
            category_override=_joined(entry.get("category_override")),
            cpp_no_default_args=_joined(entry.get("cpp_no_default_args")),
            is_inplace=schema.is_inplace,
            is_out=schema.is_out,
            extra=_json_or_empty({k: v for k, v in entry.items() if k not in _MODELED}),
        ))
        for keys, kernel_node in mapping_items(nodes.get("dispatch")):
            for key in keys.split(","):
                if key.strip():
                    dispatch.append(OpDispatch(op_index, key.strip(), str(kernel_node.value), line_of(kernel_node)))
    facts: FileFacts = {"Op": ops, "OpDispatch": dispatch}
    if errors:
        facts["errors"] = errors
    return facts


def extract_tags(relpath: str, data: bytes) -> FileFacts:
    entries, errors = _entries(relpath, data)
    tags = [
        Tag(str(e["tag"]), " ".join(str(e.get("desc", "")).split()), line_of(n))
        for e, n in entries
        if "tag" in e
    ]
    facts: FileFacts = {"Tag": tags}
    if errors:
        facts["errors"] = errors
    return facts


def _formula_rows(index: int, items: list[tuple[str, Any]], kind_of) -> list[DerivativeFormula]:
    rows = []
    for key, value_node in items:
        if key in ("name", "output_differentiability", "dispatch"):
            continue
        value = value_node.value if hasattr(value_node, "value") and isinstance(value_node.value, str) else ""
        rows.append(DerivativeFormula(index, key, " ".join(value.split()), line_of(value_node), kind_of(key)))
    return rows


def extract_derivatives(relpath: str, data: bytes) -> FileFacts:
    entries, errors = _entries(relpath, data)
    derivs: list[Derivative] = []
    formulas: list[DerivativeFormula] = []
    for entry, node in entries:
        name = entry.get("name")
        if not isinstance(name, str):
            continue
        try:
            schema = parse_schema(name)
        except SchemaError as exc:
            errors.append(f"{relpath}:{line_of(node)}: {exc}")
            continue
        index = len(derivs)
        items = mapping_items(node)
        outputs = {r.name for r in schema.returns if r.name}

        def kind_of(key: str, outputs=outputs) -> str:
            # Keys naming outputs ("result", "values") are forward-mode formulas; the rest are inputs'.
            names = {v.strip() for v in key.split(",")}
            return "result" if all(n.startswith("result") or n in outputs for n in names) else "input"

        derivs.append(Derivative(
            op_full_name=schema.full_name,
            schema=name,
            line=line_of(node),
            output_differentiability=_json_or_empty(entry.get("output_differentiability")),
            dispatch=_json_or_empty(entry.get("dispatch")),
            extra=_json_or_empty({k: v for k, v in entry.items() if k in ("result",) or k.startswith("result")}),
        ))
        formulas.extend(_formula_rows(index, items, kind_of))
        for key, disp_node in items:
            if key == "dispatch":
                for dkey, sub in mapping_items(disp_node):
                    formulas.extend(_formula_rows(index, mapping_items(sub), lambda k, d=dkey: f"dispatch:{d}"))
    facts: FileFacts = {"Derivative": derivs, "DerivativeFormula": formulas}
    if errors:
        facts["errors"] = errors
    return facts
