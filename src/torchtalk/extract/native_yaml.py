"""The op registry: native_functions.yaml, tags.yaml and derivatives.yaml, with lines.

Each ``- func:`` entry becomes one ``Op`` (one overload) and one ``OpDispatch``
row per dispatch key: ``CPU, CUDA: relu`` is two rows, because users ask per
backend. Nothing in an entry is dropped: fields we do not model go to ``extra``.
"""

from __future__ import annotations

import json
from typing import Any

from ..model import (
    Derivative,
    DerivativeFormula,
    DispatchKey,
    FileFacts,
    FileProblems,
    FormulaMode,
    FunctionSchema,
    Op,
    OpDispatch,
    SchemaError,
    Tag,
    Variant,
    autogen,
    parse_key,
)
from .yamlnodes import YamlError, end_line_of, line_of, load_with_nodes, mapping_items

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


def _names(value: Any) -> tuple[str, ...]:
    """A YAML field that holds one name or a comma-joined / list of names."""
    if value is None:
        return ()
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return tuple(str(v).strip() for v in items if str(v).strip())


def _variants(value: Any, where: str) -> frozenset[Variant]:
    names = _names(value) or ("function",)
    try:
        return frozenset(Variant(v) for v in names)
    except ValueError:
        raise ValueError(f"{where}: variants {value!r}; valid: function, method") from None


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
    return [(v, n) for v, n in zip(value, node.value, strict=True) if isinstance(v, dict)], []


def extract_native_functions(relpath: str, data: bytes) -> FileFacts:
    entries, errors = _entries(relpath, data)
    ops: list[Op] = []
    dispatch: list[OpDispatch] = []
    autogen_lines: dict[int, int] = {}  # op index -> line of its autogen: field
    for entry, node in entries:
        func = entry.get("func")
        if not isinstance(func, str):
            errors.append(f"{relpath}:{line_of(node)}: entry without a func: string")
            continue
        where = f"{relpath}:{line_of(node)}"
        try:
            schema = FunctionSchema.parse(func)
            loops = entry.get("ufunc_inner_loop") or {}
            op = Op(
                name=schema.name,
                overload=schema.overload,
                full_name=schema.full_name,
                schema=schema,
                line=line_of(node),
                end_line=end_line_of(node),
                variants=_variants(entry.get("variants"), where),
                python_module=_joined(entry.get("python_module")),
                structured=bool(entry.get("structured", False)),
                structured_delegate=_joined(entry.get("structured_delegate")),
                structured_inherits=_joined(entry.get("structured_inherits")),
                precomputed=_json_or_empty(entry.get("precomputed")),
                ufunc_inner_loop=tuple((str(k), str(v)) for k, v in loops.items()),
                autogen=_names(entry.get("autogen")),
                tags=_names(entry.get("tags")),
                device_check=_joined(entry.get("device_check")),
                device_guard=_joined(entry.get("device_guard")),
                manual_cpp_binding=bool(entry.get("manual_cpp_binding", False)),
                category_override=_joined(entry.get("category_override")),
                cpp_no_default_args=_names(entry.get("cpp_no_default_args")),
                extra=_json_or_empty({k: v for k, v in entry.items() if k not in _MODELED}),
                dispatch_empty=entry.get("dispatch", None) == {},
            )
        except (SchemaError, ValueError) as exc:
            errors.append(f"{where}: {exc}")
            continue
        nodes = dict(mapping_items(node))
        op_index = len(ops)
        ops.append(op)
        if op.autogen and "autogen" in nodes:
            autogen_lines[op_index] = line_of(nodes["autogen"])
        for keys, kernel_node in mapping_items(nodes.get("dispatch")):
            for key in keys.split(","):
                if not key.strip():
                    continue
                try:
                    dispatch.append(OpDispatch(op_index, parse_key(key), str(kernel_node.value), line_of(kernel_node)))
                except ValueError as exc:
                    errors.append(f"{relpath}:{line_of(kernel_node)}: {exc}")
    _add_autogen(ops, dispatch, autogen_lines)
    facts: FileFacts = {Op: ops, OpDispatch: dispatch}
    if errors:
        facts[FileProblems] = errors
    return facts


def _composite_implicit(op: Op, keys: set[str]) -> bool:
    return (not keys and not op.structured_delegate and not op.dispatch_empty) or "CompositeImplicitAutograd" in keys


def _add_autogen(ops: list[Op], dispatch: list[OpDispatch], lines: dict[int, int]) -> None:
    """The ops torchgen generates from autogen: lines (Note [autogen] in model/autogen.py), each with
    the one CompositeExplicitAutograd kernel torchgen writes for it."""
    keys: dict[int, set[str]] = {}
    for d in dispatch:
        keys.setdefault(d.op, set()).add(str(d.key))
    groups: dict[str, list[int]] = {}
    group_of: list[list[int]] = []
    for i, op in enumerate(ops):
        group_of.append(groups.setdefault(autogen.signature_key(op.schema), []))
        group_of[-1].append(i)
    known = {op.full_name for op in ops}
    for index, line in lines.items():
        op = ops[index]
        group = group_of[index]
        flags = [(ops[i].schema, ops[i].manual_cpp_binding, _composite_implicit(ops[i], keys.get(i, set())),
                  "core" in ops[i].tags) for i in group]
        if autogen.skipped(flags):
            continue
        base = autogen.base_of([ops[i].schema for i in group])
        for full_name in op.autogen:
            if full_name in known:
                continue
            known.add(full_name)
            schema = autogen.generated_schema(base, full_name)
            tags = ("generated",) + tuple(t for t in op.tags if t in autogen.INHERITED_TAGS)
            new = Op(name=schema.name, overload=schema.overload, full_name=full_name, schema=schema, line=line,
                     end_line=line,
                     variants=frozenset({Variant.FUNCTION}), python_module="", structured=False,
                     structured_delegate="", structured_inherits="", precomputed="", ufunc_inner_loop=(),
                     autogen=(), tags=tags, device_check="NoCheck", device_guard="False", manual_cpp_binding=False,
                     category_override="", cpp_no_default_args=(), extra="", autogen_from=op.full_name)
            dispatch.append(OpDispatch(len(ops), DispatchKey.CompositeExplicitAutograd, autogen.kernel_name(schema),
                                       line))
            ops.append(new)


def extract_tags(relpath: str, data: bytes) -> FileFacts:
    entries, errors = _entries(relpath, data)
    tags = [
        Tag(str(e["tag"]), " ".join(str(e.get("desc", "")).split()), line_of(n))
        for e, n in entries
        if "tag" in e
    ]
    facts: FileFacts = {Tag: tags}
    if errors:
        facts[FileProblems] = errors
    return facts


def _formula_rows(index: int, items: list[tuple[str, Any]], mode_of: Any, key: str = "") -> list[DerivativeFormula]:
    rows = []
    for var, value_node in items:
        if var in ("name", "output_differentiability", "dispatch"):
            continue
        value = value_node.value if hasattr(value_node, "value") and isinstance(value_node.value, str) else ""
        rows.append(DerivativeFormula(index, var, " ".join(value.split()), line_of(value_node), mode_of(var), key))
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
            schema = FunctionSchema.parse(name)
        except SchemaError as exc:
            errors.append(f"{relpath}:{line_of(node)}: {exc}")
            continue
        index = len(derivs)
        items = mapping_items(node)
        arguments = {a.name for a in schema.arguments}

        def mode_of(key: str, arguments: set[str] = arguments) -> FormulaMode:
            # torchgen's rule (Note [Formula modes]): the first name an argument's, a backward formula; else forward
            first = key.split(",")[0].strip()
            return FormulaMode.BACKWARD if first in arguments else FormulaMode.FORWARD

        derivs.append(Derivative(
            op_full_name=schema.full_name,
            schema=name,
            line=line_of(node),
            output_differentiability=_json_or_empty(entry.get("output_differentiability")),
            dispatch=_json_or_empty(entry.get("dispatch")),
            extra=_json_or_empty({k: v for k, v in entry.items() if k in ("result",) or k.startswith("result")}),
        ))
        formulas.extend(_formula_rows(index, items, mode_of))
        for key, disp_node in items:
            if key == "dispatch":
                for dkey, sub in mapping_items(disp_node):
                    formulas.extend(_formula_rows(index, mapping_items(sub), mode_of, str(dkey)))
    facts: FileFacts = {Derivative: derivs, DerivativeFormula: formulas}
    if errors:
        facts[FileProblems] = errors
    return facts
