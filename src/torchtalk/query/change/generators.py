"""A change to a code generator or one of its templates: everything generated from it is affected.

Thousands of generated functions are not listed one by one: the answer names each
layer the generator writes (dispatcher wrappers, at::_ops entry points, autograd
kernels and nodes, Python bindings...), the generated files of it that are indexed,
how many definitions they hold, and the test suites that run every op through that
layer. ``model.codegen.template_for`` says which generator and template wrote a file;
``model.paths.file_kind`` which changed files are generators (``FileKind.CODEGEN``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...model import GENERATED_PREFIX
from ...model.change import GeneratorRole
from ...model.codegen import template_for
from ...model.paths import AUTOGRAD_TOOLS
from ...store.reader import Index

# Generated basename fragment -> (layer, test files that run every op through that layer).
_LAYERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Register", "dispatcher wrappers and registrations (Register<Key>.cpp)",
     ("test/test_ops.py", "test/test_dispatch.py")),
    ("Operators", "at::_ops entry points (Operators.cpp)", ("test/test_ops.py",)),
    ("Ufunc", "ufunc kernels (Ufunc*.cpp/.cu)", ("test/test_binary_ufuncs.py", "test/test_ops.py")),
    ("CompositeViewCopyKernels", "autogen'd and view_copy kernels (CompositeViewCopyKernels.cpp)",
     ("test/test_ops.py", "test/test_view_ops.py")),
    ("VariableType", "autograd kernels (VariableType*.cpp)", ("test/test_autograd.py", "test/test_ops_gradients.py")),
    ("autograd/generated/Functions", "autograd nodes (Functions.cpp: the XBackward0 structs)",
     ("test/test_autograd.py", "test/test_ops_gradients.py", "test/test_ops_fwd_gradients.py")),
    ("python_", "Python bindings (python_*_functions.cpp, python_variable_methods.cpp)",
     ("test/test_torch.py", "test/test_overrides.py")),
    ("Functions", "at:: functions (Functions.h/.cpp)", ("test/test_ops.py",)),
)


@dataclass
class GeneratedLayer:
    layer: str
    files: list[str]  # the indexed generated files of this layer written from the changed source
    symbols: int  # definitions indexed in them
    suites: list[str]  # test files (present in this tree) that run every op through the layer


@dataclass
class GeneratorChange:
    source: str  # the changed template or generator module
    role: GeneratorRole
    layers: list[GeneratedLayer] = field(default_factory=list)


def _layer(gen_rel: str) -> tuple[str, tuple[str, ...]]:
    for fragment, label, suites in _LAYERS:
        if fragment in gen_rel:
            return label, suites
    return "other generated code", ()


def generated_from(ix: Index, path: str) -> GeneratorChange:
    generated = [(fid, p, p[len(GENERATED_PREFIX):].lstrip("/")) for fid, p in ix.paths().items()
                 if p.startswith(GENERATED_PREFIX)]
    made = [(fid, p, template_for(rel)) for fid, p, rel in generated]
    if "/templates/" in path:
        role = GeneratorRole.TEMPLATE
        hits = [(fid, p) for fid, p, (_gen, tmpl) in made if tmpl == path]
    elif any(gen == path for _f, _p, (gen, _t) in made):
        role = GeneratorRole.GENERATOR
        hits = [(fid, p) for fid, p, (gen, _t) in made if gen == path]
    elif path.startswith(AUTOGRAD_TOOLS):
        role = GeneratorRole.AUTOGRAD_SHARED
        hits = [(fid, p) for fid, p, (gen, _t) in made if gen.startswith(AUTOGRAD_TOOLS)]
    else:
        role = GeneratorRole.SHARED
        hits = [(fid, p) for fid, p, (gen, _t) in made if gen]
    change = GeneratorChange(path, role)
    tests = {p for p in ix.paths().values() if p.startswith("test/")}
    groups: dict[str, list[tuple[int, str]]] = {}
    for fid, p in sorted(hits, key=lambda h: h[1]):
        groups.setdefault(_layer(p)[0], []).append((fid, p))
    for label, files in groups.items():
        ids = [fid for fid, _p in files]
        n = ix.one(f"SELECT count(*) FROM cpp_symbol WHERE is_definition AND file_id IN ({','.join('?' * len(ids))})",
                   ids)[0]
        suites = [s for s in _layer(files[0][1])[1] if s in tests]
        change.layers.append(GeneratedLayer(label, [p for _f, p in files], n, suites))
    return change
