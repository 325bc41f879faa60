"""The ops torchgen generates from ``autogen:`` lines, with their schemas and kernel names.

Note [autogen]: ``autogen: add.Scalar_out`` on ``add_.Scalar`` makes torchgen add an op
``add.Scalar_out`` that native_functions.yaml never spells out (491 such lines in 2.6.0).
The rules are torchgen's (torchgen/native_function_generation.py): related overloads
are grouped by their signature; the group's base function (mutable, else in-place,
else out=, else functional) is turned into an out= variant (``self_to_out_signature``,
``mutable_to_out_signature``, ``functional_to_out_signature``) or a functional one
(``FunctionSchema.signature(keep_return_names=True)``), and the generated op gets one
CompositeExplicitAutograd kernel that torchgen writes itself.
"""

from __future__ import annotations

import string
from dataclasses import replace

from .schema import Argument, FunctionSchema, Return

_TENSOR_OPTIONS = ("dtype", "layout", "device", "pin_memory")
# Tags a generated op keeps from the entry it is generated from (generate_function); it also gets "generated".
INHERITED_TAGS = ("nondeterministic_seeded", "view_copy", "pt2_compliant_tag")


def kind(s: FunctionSchema) -> str:
    """torchgen's SchemaKind: functional | inplace | out | mutable."""
    if s.is_out:
        return "out"
    if s.is_inplace:
        return "inplace"
    if any(a.is_write for a in s.arguments):
        return "mutable"
    return "functional"


def _is_tensor_like(type_: str) -> bool:
    return type_.startswith("Tensor")


def _options_dropped(args: tuple[Argument, ...]) -> tuple[Argument, ...]:
    """Arguments without the TensorOptions group (dtype, layout, device, pin_memory kwargs)."""
    names = [a.name for a in args]
    for i in range(len(names) - 3):
        if tuple(names[i:i + 4]) == _TENSOR_OPTIONS and all(a.kwarg_only for a in args[i:i + 4]):
            return args[:i] + args[i + 4:]
    return args


def _plain(a: Argument, strip_default: bool = False) -> Argument:
    return replace(a, annotation="", out=False, default=None if strip_default else a.default)


def _signature_args(s: FunctionSchema) -> tuple[Argument, ...]:
    """``Arguments.signature()``: annotations stripped, out= and TensorOptions dropped."""
    args = tuple(_plain(a) for a in s.arguments if not a.out)
    return _options_dropped(args)


def _mutable_returns(s: FunctionSchema) -> tuple[Return, ...]:
    """Written-to arguments (self, out=, positional) not already returned become ``<name>_out`` returns."""
    ret_annots = {r.annotation for r in s.returns if r.annotation}
    self_args = [a for a in s.arguments if a.name == "self"]
    outs = [a for a in s.arguments if a.out]
    positional = [a for a in s.arguments if not a.kwarg_only and a.name != "self"]
    return tuple(Return(f"{a.name}_out", a.type, "") for a in self_args + outs + positional
                 if a.is_write and a.annotation not in ret_annots)


def base_name(s: FunctionSchema) -> str:
    """The name without its in-place marker: add_ -> add, __iand__ -> __and__."""
    if not s.is_inplace:
        return s.name
    return "__" + s.name[3:] if s.name.startswith("__") else s.name[:-1]


def signature_key(s: FunctionSchema) -> str:
    """What related overloads (functional / in-place / out= / mutable) have in common."""
    # str() of each of _signature_args(s), without building them: the plain form is "type name[=default]"
    kept = _options_dropped(tuple(a for a in s.arguments if not a.out))
    args = ", ".join(f"{a.type} {a.name}" if a.default is None else f"{a.type} {a.name}={a.default}" for a in kept)
    rets = ", ".join(r.type for r in s.returns) + "|" + ", ".join(r.type for r in _mutable_returns(s))
    return f"{base_name(s)}({args}) -> {rets}"


def base_of(group: list[FunctionSchema]) -> FunctionSchema:
    """The schema torchgen derives generated variants from: mutable, else in-place, else out=, else functional."""
    for k in ("mutable", "inplace", "out", "functional"):
        for s in group:
            if kind(s) == k:
                return s
    raise ValueError("empty group")


def _out_args(s: FunctionSchema) -> tuple[tuple[Argument, ...], tuple[Return, ...]]:
    """``generate_out_args_from_schema``: tensor-like returns become out= arguments."""
    used = {ch for a in s.arguments for ch in a.annotation if ch.isalpha()}
    free = [ch for ch in string.ascii_lowercase if ch not in used]
    all_tensors = all(r.type == "Tensor" for r in s.returns)
    outs: list[Argument] = []
    rets: list[Return] = []
    for i, r in enumerate(s.returns):
        if _is_tensor_like(r.type):
            annot = f"{free[i]}!"
            outs.append(Argument("out" if len(s.returns) == 1 else f"out{i}", r.type, None, annot, True, True))
            if all_tensors:
                rets.append(Return("", r.type, annot))
        else:
            rets.append(r)
    return tuple(outs), tuple(rets)


def out_variant(base: FunctionSchema, name: str, overload: str) -> FunctionSchema:
    k = kind(base)
    if k == "inplace":
        self_arg = next(a for a in base.arguments if a.name == "self")
        args = tuple(replace(a, annotation="") if a.name == "self" else a for a in base.arguments)
        out = Argument("out", self_arg.type, None, self_arg.annotation, True, True)
        return FunctionSchema(name, overload, args + (out,), base.returns)
    outs, rets = _out_args(base)
    args = base.arguments if k == "mutable" else _signature_args(base)
    return FunctionSchema(name, overload, args + outs, rets)


def functional_variant(base: FunctionSchema, name: str, overload: str) -> FunctionSchema:
    args = _signature_args(base)
    if f"{base.name}.{base.overload}" == "bernoulli.p":  # Note [bernoulli.p schema] in torchgen
        args = tuple(replace(a, default="0.5") if a.name == "p" else a for a in args)
    rets = tuple(Return(r.name, r.type, "") for r in base.returns) + _mutable_returns(base)
    return FunctionSchema(name, overload, args, rets)


def is_view(s: FunctionSchema) -> bool:
    """A view op returns an alias of an input that it does not write (Tensor(a))."""
    return any(r.annotation and "!" not in r.annotation for r in s.returns)


def skipped(group: list[tuple[FunctionSchema, bool, bool, bool]]) -> bool:
    """Whether torchgen generates nothing for a group of (schema, manual_cpp_binding,
    composite implicit kernel, core tag): manual bindings, view ops (set_ aside) and
    non-core CompositeImplicitAutograd ops are left alone (add_generated_native_functions)."""
    if all(manual for _s, manual, _ci, _core in group):
        return True
    if any(is_view(s) and s.name != "set_" for s, *_ in group):
        return True
    return all(ci for _s, _m, ci, _core in group) and not any(core for *_x, core in group)


def generated_schema(base: FunctionSchema, full_name: str) -> FunctionSchema:
    """The schema of the op ``full_name`` that an autogen: line derives from ``base``."""
    name, _, overload = full_name.partition(".")
    if overload == "out" or overload.endswith("_out"):
        return out_variant(base, name, overload)
    return functional_variant(base, name, overload)


def kernel_name(schema: FunctionSchema) -> str:
    """torchgen's name for the generated kernel: ``<name>_<overload>`` for out=, the C++ name otherwise;
    ``_symint`` when the schema has SymInt arguments (the kernel takes them unconverted)."""
    if schema.is_out:
        base = f"{schema.name}_{schema.overload}" if schema.overload else f"{schema.name}_out"
    else:
        base = schema.name
    has_symint = any("SymInt" in a.type for a in schema.arguments)
    return base + ("_symint" if has_symint else "")
