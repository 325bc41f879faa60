"""Resolve a C++ call site to what it reaches, at query time (stack-graphs style).

Facts are stored per file as written (callee name, qualifier, receiver and argument
types as the file shows them, Note [Type expressions]); the targets are computed here,
so a refresh of one file never requires relinking the others. Names are looked up as C++
does, as far as the source shows: the function's class and its bases, the enclosing
namespaces with their using-declarations and using-directives, argument-dependent lookup
for unqualified calls nothing else finds. A receiver's type decides ``x.f()``. Functions
with internal linkage are seen only from their own file; test-only headers only from
tests, codegen templates only from templates. Overloads are chosen by argument count and
known argument types (graph/overloads.py); where those do not decide, every remaining
candidate is returned, marked as such. Across the dispatcher every C++ spelling of an op
call is the op (Note [Op call spellings] in op_spellings.py, which holds PyTorch's conventions);
a call of a DispatchStub reaches the stub. Receiver and argument types are parsed type
expressions (``model.cpp.TypeExpr``), evaluated step by step in the caller's scope.

Size: one ``Resolver`` whose three parts recurse into each other: typing a receiver needs the
call that produced it resolved (lookup, then overload choice), and choosing an overload needs
the arguments' types. Split into mixins, each would have to re-declare the others' methods for
mypy --strict; type text, class lookup and overload scoring already live apart (cpp_types.py,
cpp_lookup.py, overloads.py).
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache

from ..model import TEMPLATE_ARGUMENT, CallKind, CallSite, CppSymbol, Op, SymbolKind, UsingKind, Variant
from ..model.cpp import ANONYMOUS_NESTING, TypeBase, TypeExpr, TypeStep, TypeStepKind
from ..model.factories import FACTORIES
from ..model.paths import ATEN_TEMPLATES, rocm_only_path
from ..store.reader import Index
from .cpp_lookup import (
    ancestry,
    element,
    field_type,
    in_specialization,
    methods,
    namespace_variable,
    own_template,
    resolve_type,
    return_type,
    std_member,
    using_base,
)
from .cpp_types import (
    Scope,
    Ty,
    classes,
    is_class,
    is_enum,
    is_header,
    named_usings,
    nominated,
    occupied,
    scope_chain,
    split_last,
    split_qualified,
    symbols_named,
)
from .op_spellings import (
    KEY_NAMESPACES,
    OP_NAMESPACES,
    STRUCT_QUALIFIERS,
    dispatch_helper_ops,
    is_test,
    may_name_op,
    methods_fitting,
    named_like_tensor,
    op_named,
    ops_fitting,
    ops_for,
    struct_op,
    stub_names,
)
from .overloads import op_call_signatures, op_signature, param_types, return_of, score
from .registry import OpRegistry, registry
from .resolution import BUILTIN, UNRESOLVED, UNRESOLVED_STD, Resolution, TargetKind
from .resolved import stored, stored_resolution
from .signatures import signature
from .symbols import calls_from, defs_in_file, gpu_kernels_named, symbol

__all__ = ["Resolution", "Resolver", "TargetKind", "UNRESOLVED", "op_named", "ops_of", "resolve", "resolver",
           "stub_names"]

# an argument that calls a macro: an upper-case name of three characters or more (``K()`` is a template parameter's)
_MACRO_CALL = re.compile(r"^c:[A-Z][A-Z0-9_]{2,}/\d+$")
_MAX_NESTING = 3  # type evaluation that needs call resolution that needs type evaluation ...


def ops_of(reg: OpRegistry, res: Resolution) -> list[Op]:
    """The ops a resolution names (all overloads of a base name when the call does not say which)."""
    return [reg.by_full[n] for n in res.ops if n in reg.by_full]


# ------------------------------------------------------------------ entry point

def resolve(ix: Index, call: CallSite, caller: CppSymbol | None = None) -> Resolution:
    found = caller or symbol(ix, call.caller)
    if found is None:
        return UNRESOLVED
    store = stored(ix)
    if store is not None and call.id and call.caller == found.id:  # Note [Resolved calls] in store/resolved.py
        held = stored_resolution(ix, store, call.id)
        if held is not None:
            return held
    key = (found.id, call.callee, call.qualifier, call.kind.value, call.recv, call.nargs, call.args, call.targs,
           call.explicit)
    return ix.memo("resolutions", key, lambda: resolver(ix, found).call(call), UNRESOLVED)


_REFERABLE = frozenset({SymbolKind.FUNCTION, SymbolKind.METHOD, SymbolKind.DEVICE_FUNCTION})


def resolver(ix: Index, caller: CppSymbol, nesting: int = 0) -> Resolver:
    """The resolver of ``caller``'s calls (one per caller and index version: a name's call sites come from a
    few hundred functions, each with many sites)."""
    memo: dict[tuple[int, int], Resolver] = ix.cached("resolvers", dict)
    key = (caller.id, nesting)
    found = memo.get(key)
    if found is None:
        found = memo[key] = Resolver(ix, caller, nesting)
    return found


def _scopes_of(ix: Index, qualname: str) -> tuple[str, tuple[str, ...]]:
    """(the scope a function of this qualified name is in, the scopes its names are looked up in: itself and its
    enclosing ones, those memoised per scope and index version: a name's call sites come from thousands of
    functions, most in a few namespaces). Names and types are looked up in the enclosing scopes that hold
    something (occupied): the others find nothing, and without them the callers of one namespace and file share
    their types' memo entries."""
    held = occupied(ix)
    parent = "::".join(split_qualified(qualname)[:-1])  # as scope_chain joins it
    if not parent:  # a global function (or a name of no scope): its chain is short
        return "", tuple(s for s in scope_chain(qualname, include_self=True) if not s or s in held)
    memo: dict[str, tuple[str, ...]] = ix.cached("enclosing_scopes", dict)
    outer = memo.get(parent)
    if outer is None:  # the functions of one scope share it
        outer = memo[parent] = tuple(s for s in scope_chain(parent, include_self=True) if not s or s in held)
    return parent, (qualname, *outer) if qualname in held else outer


@lru_cache(maxsize=1 << 16)
def _parsed(te: str) -> TypeExpr | None:
    """The type expression a fact's text writes; None for text that is not one (its type is unknown)."""
    try:
        return TypeExpr.parse(te)
    except ValueError:
        return None


class Resolver:
    """Resolution of the calls of one caller: its scope, its file, the types its file shows."""

    def __init__(self, ix: Index, caller: CppSymbol, nesting: int = 0) -> None:
        self.ix = ix
        self.caller = caller
        self.reg = registry(ix)
        self._occupied = occupied(ix)
        self.parent, looked_in = _scopes_of(ix, caller.qualname)
        self.scope = Scope(looked_in, caller.path)
        self.nesting = nesting
        self.in_test = is_test(caller.path)
        self.rocm = rocm_only_path(caller.path)  # the caller is a ROCm build's own code
        # the memo tables every site's lookups read (fetched once: a resolver serves many sites)
        self._in_scope_memo: dict[tuple[str, str, str], list[CppSymbol]] = ix.cached("in_scope", dict)
        self._qualified_memo: dict[tuple[str, tuple[str, ...], str], list[str]] = ix.cached("qualified_scopes", dict)

    # -------------------------------------------------------------- calls

    def call(self, call: CallSite) -> Resolution:
        """What ``call`` reaches. The rules are tried in this order; the first that applies answers:

        1. a kernel launch (``k<<<...>>>``): the visible ``__global__`` kernels named ``k`` (of several, those
           name lookup from the caller's scope finds);
        2. a method call (``x.f()``): ``method``, by the receiver's type; an operator on a class's value
           (``a != b``): ``operator`` (Note [Operators] in extract/cpp_calls.py);
        3. a name passed on without a call: the DispatchStub of that name, else the functions it names
           (``reference``, Note [References] in extract/cpp_calls.py);
        4. a local variable called (a lambda, a functor): its class's call operator, else LOCAL;
        5. ``::f``: the global ``f`` (never an op, never a namespace's ``f``), else the standard library's;
        6. ``at::_ops::S::call``: the op whose at::_ops struct is ``S``;
        7. a per-key namespace (``at::cpu::X``, ``at::redispatch::X``): the op X, if there is one;
        8. an unqualified DispatchStub name: the stub;
        9. ``__dispatch_X`` (torchgen's, in hand-written Tensor methods): the ops X;
        10. ``std::``: the tree's specializations and overloads only where the call's types select them;
        11. C++ name lookup from the caller's scope (``lookup``); in an op namespace, or when lookup finds
            nothing, in ATen code (``may_name_op``) the op of that name wins over the functions found,
            unless it is manual_cpp_binding (the hand-written one is the op's) or a visible helper takes
            the arguments better;
        12. the functions lookup found: the overload the arguments choose (``choose``);
        13. unqualified: argument-dependent lookup in the namespaces of the arguments' classes;
        14. a class named as a function: a construction, its constructors (``_construction``).
        """
        name, qual = call.callee, call.qualifier.strip(":")
        if call.kind is CallKind.LAUNCH:
            defs = [s for s in self._global_kernels(name) if self._visible(s)]
            if len({d.qualname for d in defs}) > 1:
                # kernels of one name in sibling namespaces (TensorTopK.cu: sbtopk::gatherTopK and
                # mbtopk::gatherTopK): name lookup from the launcher's scope picks, as the compiler does
                scoped = {s.id for s in self.lookup(name, qual)[1] if s.kind is SymbolKind.GLOBAL_KERNEL}
                defs = [d for d in defs if d.id in scoped] or defs
            return self._prefer(defs) if defs else UNRESOLVED
        if call.kind is CallKind.METHOD:
            return self.method(call)
        if call.kind is CallKind.OPERATOR:
            return self.operator(call)
        if call.kind is CallKind.REF:
            return Resolution(TargetKind.STUB, stub=name) if name in stub_names(self.ix) else self.reference(call)
        if call.recv:  # a local variable called: its call operator, never a function of that name
            ty = self.type_of(call.recv) if call.recv != "?" else None
            if ty is not None and not ty.is_std and not ty.is_builtin:
                owner, syms = methods(self.ix, ty, "operator()")
                if syms:
                    return self.choose(syms, call, owner)
            return Resolution(TargetKind.LOCAL)
        if call.qualifier == "::":
            # ::f is the global f (usually the C library's): never an op, never a namespace-local f.
            found = [s for s in symbols_named(self.ix, name) if self._visible(s)]
            return self.choose(found, call) if found else UNRESOLVED_STD
        if qual.startswith(STRUCT_QUALIFIERS):
            full = struct_op(self.ix, self.reg, qual)
            return Resolution(TargetKind.OP, ops=(full,), spelling=f"{qual}::{name}") if full else UNRESOLVED
        if qual in KEY_NAMESPACES:
            ops = op_named(self.reg, name)
            if ops:
                return Resolution(TargetKind.OP, ops=ops, spelling=f"{qual}::{name}")
        if not qual and name in stub_names(self.ix):
            # a function of the caller's own file named like a stub is the nearer name (PaddingKernel.cpp's
            # static copy_stub helper, not the copy_ DispatchStub)
            fid = self.ix.file_ids().get(self.caller.path)
            own = [s for s in (defs_in_file(self.ix, fid, name) if fid is not None else [])
                   if s.kind in (SymbolKind.FUNCTION, SymbolKind.DEVICE_FUNCTION)]
            return self.choose(own, call) if own else Resolution(TargetKind.STUB, stub=name)
        helper_ops = dispatch_helper_ops(self.reg, name)
        if helper_ops:
            return Resolution(TargetKind.OP, ops=helper_ops, spelling=name)
        if qual == "std" or qual.startswith("std::"):
            return self._std(call, name, qual)
        where, found = self.lookup(name, qual)
        op_scope = qual in OP_NAMESPACES or (not qual and where in ("at", ""))
        may_be_op = (op_scope or not found) and may_name_op(qual, self.caller.qualname, self.parent)
        ops = ops_for(self.reg, name, call.nargs) if may_be_op else ()
        if found:
            found = self._usable(found)
        if ops and found and all(self.reg.by_full[o].manual_cpp_binding for o in ops):
            ops = ()  # torchgen writes no at::X for manual_cpp_binding ops: the hand-written one is it
        if ops and (not found or not self._helper_wins(found, ops, call)):
            return Resolution(TargetKind.OP, ops=self._binding(ops, call, False), spelling=f"{qual}::{name}" if qual
                              else name)
        if found and not qual and call.nargs >= 0 and not any(signature(s.params).takes(call.nargs) for s in found) \
                and not any(self._native_kernel(s) for s in found):
            viable = self._adl_viable(name, call)
            if viable is not None:
                return viable
        if found:
            return self.choose(found, call)
        if not qual:
            adl = self._adl(name, call)
            if adl:
                return self.choose(adl, call)
        return self._construction(name, qual, call)

    def reference(self, call: CallSite) -> Resolution:
        """The functions a name written without a call names (Note [References]): name lookup from the caller's
        scope as for a call of it, keeping functions only (a variable or an enumerator of that name names none),
        and none in an op's namespace that an op's function of that name would answer (at::abs_out handed on is a
        dispatcher call: Note [Op references] in graph/op_refs.py); every overload (no arguments choose)."""
        name, qual = call.callee, call.qualifier.strip(":")
        if call.detail == TEMPLATE_ARGUMENT and self._names_a_type(name, qual):
            return UNRESOLVED  # foreach_tensor_list_op<minimum>: the functor struct, not a function of its name
        where, found = self.lookup(name, qual)
        found = [s for s in self._usable(found) if s.kind in _REFERABLE]
        # a name a host file gives (a macro's constant, ``reduce``) is no device function
        if call.detail == TEMPLATE_ARGUMENT and self.caller.path.endswith(HOST_SOURCES) and not self.rocm:
            found = [s for s in found if not _device_only(s)]
        if not found or ((qual in OP_NAMESPACES or (not qual and where in ("at", ""))) and op_named(self.reg, name)):
            return UNRESOLVED
        return self.choose(found, call)

    def _names_a_type(self, name: str, qual: str) -> bool:
        """Whether ``qual::name`` written in the caller's scope names a class (a template argument that is a type)."""
        ty = resolve_type(self.ix, f"{qual}::{name}" if qual else name, self.scope)
        return ty is not None and not ty.ptr and (ty.is_builtin or ty.is_std or is_class(self.ix, ty.name))

    def _construction(self, name: str, qual: str, call: CallSite) -> Resolution:
        """``TensorIteratorConfig()``: a class named as a function is a construction, its constructors (none
        declared: no function to reach, so no unresolved name either)."""
        ty = resolve_type(self.ix, f"{qual}::{name}" if qual else name, self.scope)
        if ty is None or ty.ptr or ty.is_builtin or ty.is_std or not is_class(self.ix, ty.name):
            return UNRESOLVED
        ctors = [s for s in symbols_named(self.ix, f"{ty.name}::{split_last(ty.name)[0]}") if self._visible(s)]
        res = self.choose(ctors, call, ty) if ctors else Resolution(TargetKind.LOCAL)
        if res.kind is TargetKind.UNRESOLVED and call.nargs == 1:
            return Resolution(TargetKind.LOCAL)  # no declared one takes it: the implicit copy or move constructor
        return res

    def _helper_wins(self, found: list[CppSymbol], ops: tuple[str, ...], call: CallSite) -> bool:
        """at::X is the op unless a visible, non-template helper named X takes the arguments better."""
        helpers = [s for s in found if not s.is_template and not s.path.startswith(ATEN_TEMPLATES)
                   and signature(s.params).takes(call.nargs)]
        if not helpers:
            return False
        args = self.arg_types(call)
        best_helper = max((score(self.ix, args, param_types(self.ix, s, None)) or -1) for s in helpers)
        best_op = max((score(self.ix, args, op_signature(self.reg.by_full[o], False)[0]) or -1) for o in ops)
        return best_helper > best_op

    # -------------------------------------------------------------- name lookup

    def lookup(self, name: str, qual: str) -> tuple[str, list[CppSymbol]]:
        """(scope it was found in, functions) a call ``qual::name`` finds from the caller's scope."""
        if not qual:
            first: tuple[str, list[CppSymbol]] = ("", [])
            for s in self.scope.chain:
                found = self._in_scope(s, name)
                if found and not self.rocm and all(rocm_only_path(f.path) for f in found):
                    # only a ROCm build's (transformers/hip/'s at::native::ceil_div): CUDA and CPU code looks on
                    # (at::ceil_div), keeping it for a name nothing else answers (Note [Host code calls no device code])
                    first = first if first[1] else (s, found)
                    continue
                if found:
                    return s, found
            return first
        parts = split_qualified(qual)
        for s in self.scope.chain:
            for target in self._qualified_scopes(s, parts):
                found = self._in_scope(target, name)
                if found:
                    return target, found
        return "", []

    def _qualified_scopes(self, scope: str, parts: tuple[str, ...]) -> list[str]:
        """Scopes ``a::b::c`` may name from ``scope``, component by component: directly, and through the
        using-directives, namespace aliases and type aliases met on the way (at::GradMode is c10::GradMode,
        since namespace at { using namespace c10; }). Memoised per file: the callers of one file share their
        enclosing namespaces."""
        if scope and scope not in self._occupied:  # no alias, no using-directive in it or inside it
            return [f"{scope}::{'::'.join(parts)}"]
        memo = self._qualified_memo
        key = (scope, parts, self.caller.path)
        found = memo.get(key)
        if found is None:
            found = memo[key] = self._qualified_scopes_of(scope, parts)
        return found

    def _qualified_scopes_of(self, scope: str, parts: tuple[str, ...]) -> list[str]:
        # The first component is looked up like any name: in the scope, then in the namespaces its using-directives
        # nominate (python::PythonEngine::get_python_engine() after `using namespace torch::autograd;`).
        outs = self._qualifier_at(scope, parts[0])
        outs += [f"{ns}::{parts[0]}" for ns in nominated(self.ix, scope, self.caller.path)]
        for part in parts[1:]:
            nxt: list[str] = []
            for cur in outs:
                nxt.append(f"{cur}::{part}")
                nxt += self._qualifier_at(cur, part)[1:]
                nxt += [f"{ns}::{part}" for ns in nominated(self.ix, cur, self.caller.path)]
            outs = list(dict.fromkeys(nxt))[:12]
        return outs

    def _qualifier_at(self, scope: str, first: str) -> list[str]:
        """What a qualifier's first component names from ``scope``: scope::first, a namespace alias, a class alias."""
        out = [f"{scope}::{first}" if scope else first]
        for kind, target, s, p in named_usings(self.ix, first):
            if s != scope or not (p == self.caller.path or is_header(p)):
                continue
            if kind is UsingKind.NAMESPACE_ALIAS:
                out.append(target.lstrip(":"))
            elif kind is UsingKind.ALIAS:  # using fVec = vec::Vectorized<float>; fVec::size()
                ty = resolve_type(self.ix, target, Scope(scope_chain(f"{s}::{first}" if s else first), p))
                if ty is not None and not ty.is_builtin:
                    out.append(ty.name)
        return out

    def _in_scope(self, s: str, name: str) -> list[CppSymbol]:
        """Functions named ``name`` declared in scope ``s`` (a namespace or class), or brought into it by a
        using-declaration, or (when it declares none) by its using-directives or, for a class, its bases.
        Memoised per file (what a file sees depends on nothing else of the caller): a name's thousands of call
        sites look it up in the same few namespaces."""
        if s not in self._occupied and s:
            return []  # nothing is declared in it (a function's own scope, at::native::at): nothing to find
        memo = self._in_scope_memo
        key = (s, name, self.caller.path)
        found = memo.get(key)
        if found is None:
            found = memo[key] = self._in_scope_of(s, name)
        return found

    def _in_scope_of(self, s: str, name: str) -> list[CppSymbol]:
        ix = self.ix
        found = self._members(s, name)
        for kind, target, us, p in named_usings(ix, name):
            if us == s and kind is UsingKind.DECLARATION and (p == self.caller.path or is_header(p)):
                found += [x for x in symbols_named(ix, target.lstrip(":")) if self._visible(x)]
        if s and is_class(ix, s):  # its own with those its using-declarations bring in, else its bases'
            return _unique(found + methods(ix, Ty(s), name)[1])
        if found:
            return _unique(found)
        for ns in nominated(ix, s, self.caller.path):
            found += self._members(ns, name)
        return _unique(found)

    def _members(self, s: str, name: str) -> list[CppSymbol]:
        """The visible functions ``name`` of namespace ``s``: its own, and those of the anonymous namespaces in it,
        which are its members (an implicit using-directive), as are those of one nested in them (the generated
        Register*.cpp: at::(anonymous)::(anonymous)::wrapper_CPU_add, which at::cpu::add calls), for a lookup in
        ``s`` and for a using-directive nominating it alike (Pool.h's at::native::(anonymous)::pooling_output_shape
        from at::meta under ``using namespace at::native;``)."""
        prefix = f"{s}::" if s else ""
        return [x for q in (f"{prefix}{name}", *(f"{prefix}{anon}::{name}" for anon in ANONYMOUS_NESTING))
                for x in symbols_named(self.ix, q) if self._visible(x)]

    def _adl(self, name: str, call: CallSite) -> list[CppSymbol]:
        """Argument-dependent lookup: the namespaces of the arguments' classes."""
        for ns in self._adl_namespaces(call):
            found = self._in_scope(ns, name)
            if found:
                return found
        return []

    def _adl_namespaces(self, call: CallSite) -> list[str]:
        """The namespaces of the arguments' classes (of a nested class, its enclosing namespace), in argument order."""
        out: list[str] = []
        for ty in self.arg_types(call):
            if ty is None or ty.is_builtin or ty.is_std:
                continue
            ns = "::".join(p for p in split_qualified(ty.name)[:-1])
            while ns and ns not in out and is_class(self.ix, ns):
                ns = "::".join(split_qualified(ns)[:-1])
            if ns and ns not in out:
                out.append(ns)
        return out

    # Note [Lookup that finds no viable function]
    # An unqualified call's candidates are what ordinary lookup finds *and* what argument-dependent lookup finds;
    # overload resolution then takes one that accepts the arguments. Ordinary lookup stops at the innermost scope
    # holding the name, so in torchgen's VariableType code, inside ``VariableType::sigmoid_backward(ks, grad,
    # out)``, the forward-grad formula's ``sigmoid_backward(grad_t, out_p)`` finds only the enclosing function,
    # which takes three arguments, not two: the compiler calls ``at::sigmoid_backward`` (an argument is an
    # at::Tensor), the op. So when none of the functions lookup found accepts the call's argument count, the
    # functions of the arguments' namespaces that do, else (an argument of a class of namespace ``at``: Functions.h
    # is generated, its ops stand for it) the op overloads that do, are what it calls; when neither has one, the
    # call reaches none of them (Note [Argument counts] in graph/signatures.py). An op's kernel in at::native is
    # never ruled out so: its declaration with the op's default arguments is generated at build time, so its
    # definition's parameters do not tell.
    def _native_kernel(self, s: CppSymbol) -> bool:
        """An op's kernel in at::native (a dispatch table names it): its declaration, which torchgen writes into
        the build's NativeFunctions.h with the op's default arguments, is not in the tree, so a call with fewer
        arguments than its definition's parameters may still be a call of it (``copy_(dst, src)`` in at::native
        calls at::native::copy_(self, src, non_blocking=false))."""
        return s.qualname == f"at::native::{s.name}" and s.name in self.reg.kernel_ops

    def _adl_viable(self, name: str, call: CallSite) -> Resolution | None:
        """What a call reaches when ordinary lookup found no function taking its arguments (Note [Lookup that
        finds no viable function]); None when argument-dependent lookup has nothing that takes them either."""
        namespaces = self._adl_namespaces(call)
        for ns in namespaces:
            fit = [s for s in self._in_scope(ns, name) if signature(s.params).takes(call.nargs)]
            if fit:
                return self.choose(fit, call)
        if "at" in namespaces:
            ops = ops_fitting(self.reg, name, call.nargs)
            if ops:
                return Resolution(TargetKind.OP, ops=ops, spelling=name)
        return None

    # -------------------------------------------------------------- std

    def _std(self, call: CallSite, name: str, qual: str) -> Resolution:
        """std::X: the tree's own specializations and overloads only when the call's types select them."""
        found = [s for s in symbols_named(self.ix, f"{qual}::{name}") if self._visible(s)]
        if not found:
            return UNRESOLVED_STD
        if call.targs:  # std::numeric_limits<c10::Half>::max: the specialization for those arguments
            want = resolve_type(self.ix, call.targs, self.scope)
            if want is None:
                return UNRESOLVED_STD
            picked = []
            for s in found:
                if not s.spec:
                    continue
                have = resolve_type(self.ix, s.spec, Scope(scope_chain(s.qualname), s.path))
                if have is not None and have.name == want.name:
                    picked.append(s)
            return self.choose(picked, call) if picked else UNRESOLVED_STD
        args = self.arg_types(call)
        tree_args = [a for a in args if a is not None and not a.is_builtin and not a.is_std]
        if not tree_args:
            return UNRESOLVED_STD  # std::exp(float): the library's, never the tree's BFloat16 overload
        picked = [s for s in found if (score(self.ix, args, param_types(self.ix, s, None)) or 0) > len(args)]
        return self.choose(picked, call) if picked else UNRESOLVED_STD

    # -------------------------------------------------------------- methods

    def method(self, call: CallSite) -> Resolution:
        name = call.callee
        ty = self.type_of(call.recv) if call.recv else None
        if ty is None:
            return self._method_untyped(call)
        if ty.ptr:
            return UNRESOLVED  # x.f() on a pointer: damaged or a template's
        if ty.is_tensor or self._tensor_derived(ty):
            return self.tensor_method(call, ty)
        if ty.is_std:
            return UNRESOLVED_STD
        if ty.is_builtin:
            return UNRESOLVED
        owner, syms = methods(self.ix, ty, name)
        if not syms:
            return UNRESOLVED
        return self.choose(syms, call, owner)

    def operator(self, call: CallSite) -> Resolution:
        """``a @ b`` (``-a``, ``a += b``, ``a[i]``), as C++ chooses (over.match.oper): the member ``operator@`` of
        the first operand's class and the non-member ones name lookup and argument-dependent lookup find for the
        operands, of those the operands' types can bind the overload they choose. Only an operand whose type is
        known to be a class (an enum's comparisons are the language's) lets one be chosen: where none is, or
        nothing binds them, the operator is the language's (BUILTIN: no call), never a guess among every
        ``operator==`` in scope."""
        name = call.callee
        ty = self.type_of(call.recv) if call.recv else None
        operands = [ty, *self.arg_types(call)]
        if not any(t is not None and not (t.ptr or t.is_builtin or t.is_std) and is_class(self.ix, t.name)
                   and not is_enum(self.ix, t.name) for t in operands):
            return BUILTIN
        if ty is not None and not (ty.ptr or ty.is_builtin or ty.is_std):
            owner, found = methods(self.ix, ty, name)
            fit = [s for s in found if signature(s.params).takes(call.nargs)
                   and score(self.ix, operands[1:], param_types(self.ix, s, owner)) is not None]
            if fit:
                return self.choose(fit, call, owner)
        texts = [call.recv, *(call.args.split(";") if call.args else [""] * max(call.nargs, 0))]
        free = replace(call, kind=CallKind.CALL, recv="", nargs=len(texts), args=";".join(texts))
        found = list({s.id: s for s in self.lookup(name, "")[1] + self._adl(name, free)
                      + self._hidden_friends(operands, name, call.nargs, len(texts))}.values())
        fit = [s for s in found if signature(s.params).takes(len(texts))
               and score(self.ix, operands, param_types(self.ix, s, None)) is not None]
        return self.choose(fit, free) if fit else BUILTIN

    # Note [Hidden friends]
    # An operator a class defines in its body as a friend (c10::basic_string_view's ``friend constexpr bool
    # operator==(basic_string_view lhs, basic_string_view rhs)``) is no member: it takes every operand as a parameter,
    # and only argument-dependent lookup finds it, for an operand of that class. The index records it in the class
    # (c10::basic_string_view::operator==), so a member lookup finds it and a member's parameter count rules it out;
    # it is a candidate beside the non-member ones instead, scored on all the operands. A friend the class only
    # declares (IValue's ``friend bool operator==(const IValue&, const IValue&);``) is the namespace's function, whose
    # definition lookup finds as it is: not another candidate. Without it ``indexing == "xy"``
    # (a string_view and a literal, in 1.13.1's meshgrid) chose among every other ``operator==`` in scope, IValue's
    # among them, and the GPU walk went on into IValue's tensor comparison and its device sync.
    def _hidden_friends(self, operands: list[Ty | None], name: str, nargs: int, count: int) -> list[CppSymbol]:
        """The operators ``name`` the operands' classes define as friends in their body (Note [Hidden friends]): a
        member of one of them whose parameters take every operand, where a member's take one fewer."""
        out: list[CppSymbol] = []
        for ty in operands:
            if ty is None or ty.ptr or ty.is_builtin or ty.is_std or not is_class(self.ix, ty.name):
                continue
            out += [s for s in methods(self.ix, ty, name)[1] if s.is_definition
                    and signature(s.params).takes(count) and not signature(s.params).takes(nargs)]
        return out

    def _method_untyped(self, call: CallSite) -> Resolution:
        """The file does not show the receiver's type: a method of the caller's own class (this->f(), or a
        receiver spelled like one), else a Tensor method when the receiver is named like a Tensor."""
        name, qual = call.callee, call.qualifier.strip()
        if qual in ("this", "") and "::" in self.caller.qualname:
            cls = split_last(self.caller.qualname)[1]
            if is_class(self.ix, cls):
                owner, syms = methods(self.ix, Ty(cls), name)
                if syms:
                    return self.choose(syms, call, owner)
        if self.reg.has_method(name) and named_like_tensor(qual):
            return self.tensor_method(call, Ty("at::Tensor"))
        return UNRESOLVED

    def _tensor_derived(self, ty: Ty) -> bool:
        return not ty.is_std and not ty.is_builtin and any(t.is_tensor for t in ancestry(self.ix, ty)[1:])

    def tensor_method(self, call: CallSite, ty: Ty) -> Resolution:
        """``t.f()`` on a Tensor: torchgen's method (an op) or a hand-written one (TensorBase.h, the TensorBody.h
        template); a hand-written one in the template that dispatches is the ops it calls."""
        ix, name = self.ix, call.callee
        base = name.removesuffix("_symint") if name.endswith("_symint") and not self.reg.by_name.get(name) else name
        generated = [op for op in self.reg.by_name.get(base, ()) if Variant.METHOD in op.variants
                     and not op.manual_cpp_binding]
        manual = [op for op in self.reg.by_name.get(base, ()) if Variant.METHOD in op.variants
                  and op.manual_cpp_binding]
        owner, syms = methods(ix, ty, name)
        if ty.name != "at::Tensor" or not generated:
            generated_hides = False
        else:
            # torchgen's Tensor::f hides TensorBase::f unless class Tensor brings it in (using TensorBase::size;)
            generated_hides = owner is None or owner.name != "at::Tensor" and using_base(ix, Ty("at::Tensor"),
                                                                                        name) is None
        if generated and (generated_hides or not syms):
            return self._op_method(generated, call)
        if syms and generated:
            args = self.arg_types(call)
            hand = max((score(ix, args, param_types(ix, s, owner)) or -1) for s in syms
                       if signature(s.params).takes(call.nargs)) if any(
                signature(s.params).takes(call.nargs) for s in syms) else -2
            gen = max((score(ix, args, op_signature(op, True)[0]) or -1) for op in generated)
            if gen >= hand:  # where the arguments do not tell, torchgen's method: most of Tensor's API
                return self._op_method(generated, call)
        if syms:
            res = self.choose(syms, call, owner)
            if res.kind is TargetKind.DEFS and res.defs[0].path.startswith(ATEN_TEMPLATES) and not res.candidates:
                ops = self._dispatches(res.defs[0])
                if ops:
                    return Resolution(TargetKind.OP, ops=ops, spelling=f"Tensor::{name} (inline)")
            return res
        if manual:
            return Resolution(TargetKind.OP, ops=tuple(op.full_name for op in manual), spelling="Tensor method")
        return UNRESOLVED

    def _op_method(self, ops: list[Op], call: CallSite) -> Resolution:
        return Resolution(TargetKind.OP, ops=self._binding(methods_fitting(ops, call.nargs), call, True),
                          spelling="Tensor method")

    def _binding(self, ops: tuple[str, ...], call: CallSite, method: bool) -> tuple[str, ...]:
        """Of the overloads a call's argument count fits, the ones its arguments' known types bind best
        (``score``), as ``choose`` keeps of same-named functions and C++ picks among viable overloads:
        ``self.view(-1)`` is view, not view.dtype (a number is no ScalarType); ``t.clamp_min(scalar)`` is
        clamp_min, not clamp_min.Tensor (a Scalar binds its Scalar exactly, and no Tensor: Note [Op argument
        kinds]); all of them when none can (a type the index got wrong says nothing)."""
        if len(ops) < 2 or not call.args:
            return ops
        args = self.arg_types(call)
        if all(a is None for a in args):
            return ops
        out_first = call.callee.endswith("_out")  # at::X_out(out, ...); at::X_outf(..., out)
        symint = "_symint" in call.callee
        scored = []
        for o in ops:
            fits = [sc for f in op_call_signatures(self.reg.by_full[o], method, out_first, symint)
                    if (sc := score(self.ix, args, f)) is not None]
            if fits:
                scored.append((max(fits), o))
        if not scored:
            return ops
        best = max(sc for sc, _ in scored)
        return tuple(o for sc, o in scored if sc == best)

    def _dispatches(self, sym: CppSymbol, depth: int = 0) -> tuple[str, ...]:
        """Ops a hand-written inline Tensor method reaches: those its body calls, following the methods of
        Tensor / TensorBase named after it (contiguous -> TensorBase::contiguous -> __dispatch_contiguous)."""
        return self.ix.memo("inline_dispatch", sym.id, lambda: self._dispatched(sym, depth), ())

    def _dispatched(self, sym: CppSymbol, depth: int) -> tuple[str, ...]:
        ops: list[str] = []
        inner = resolver(self.ix, sym, self.nesting + 1)
        for c in calls_from(self.ix, sym.id):
            res = inner.call(c)
            if res.kind is TargetKind.OP:
                ops += [o for o in res.ops if o not in ops]
            elif res.kind is TargetKind.DEFS and depth < 2:
                for d in res.defs[:1]:
                    cls = split_last(d.qualname)[1]
                    if cls in ("at::Tensor", "at::TensorBase") and sym.name in d.name and d.id != sym.id:
                        ops += [o for o in self._dispatches(d, depth + 1) if o not in ops]
        return tuple(ops)

    # -------------------------------------------------------------- overloads

    def choose(self, syms: list[CppSymbol], call: CallSite, owner: Ty | None = None) -> Resolution:
        """The function(s) a call means among same-named ones: see graph/overloads.py."""
        syms = self._usable(syms)
        if not syms:
            return UNRESOLVED
        funcs: dict[tuple[str, tuple[str, ...], str | bool, bool], list[CppSymbol]] = {}
        for s in syms:  # one function's declarations and definitions together (a template is another function)
            funcs.setdefault((s.qualname, signature(s.params).key, s.is_file_local and s.path,
                              own_template(self.ix, s)), []).append(s)
        groups = [(key[3], g) for key, g in funcs.items()]  # (a function template of its own?, the function)
        nargs = self._count(call)
        if nargs >= 0:  # only a function whose parameters take the arguments: Note [Argument counts]
            fit = [(tmpl, g) for tmpl, g in groups if any(signature(s.params).takes(nargs) for s in g)]
            # else an op's kernel whose defaults the tree does not show (``_native_kernel``)
            groups = fit or [(tmpl, g) for tmpl, g in groups if any(self._takes(s, nargs) for s in g)]
            if not groups:
                return UNRESOLVED
        if len(groups) > 1:
            # only a template takes template arguments (``t.data_ptr<float>()``), and a template of no parameters
            # deduces nothing, so a call without them means another function (``options.dtype()`` is ``dtype()
            # const``, not ``template <T> dtype()``)
            fit = [(tmpl, g) for tmpl, g in groups
                   if (tmpl if call.explicit else not (tmpl and not signature(g[0].params).types))]
            groups = fit or groups
        if len(groups) > 1:
            args = self.arg_types(call)
            scored = []
            for tmpl, g in groups:
                rep = next((s for s in g if s.is_definition), g[0])
                sc = score(self.ix, args, param_types(self.ix, rep, owner))
                scored.append((sc if sc is not None else -1, (tmpl, g)))
            best = max(sc for sc, _ in scored)
            groups = [tg for sc, tg in scored if sc == best]
        if len(groups) > 1:  # still several: same-file, non-template, not a specialization's first, all listed
            groups.sort(key=lambda tg: (all(s.path != self.caller.path for s in tg[1]),
                                        not any(s.is_definition for s in tg[1]), tg[0],
                                        all(in_specialization(self.ix, s) for s in tg[1]), tg[1][0].path,
                                        tg[1][0].line))
            ordered = [self._prefer(g) for _, g in groups]
            defs = tuple(d for r in ordered for d in r.defs[:1])
            kind = TargetKind.DEFS if any(d.is_definition for d in defs) else TargetKind.DECLS
            return Resolution(kind, defs, candidates=True)
        return self._prefer(groups[0][1])

    @staticmethod
    def _count(call: CallSite) -> int:
        """The call's argument count as choosing among functions reads it: not known (-1) when an argument is a
        macro's call, which may write several (Note [Argument counts])."""
        if call.nargs > 0 and call.args and any(_MACRO_CALL.match(te) for te in call.args.split(";")):
            return -1
        return call.nargs

    def _takes(self, s: CppSymbol, nargs: int) -> bool:
        """Whether ``s`` can take ``nargs`` arguments, counting defaults the index does not show: any number up to
        its parameters' for an op's kernel in at::native (its declaration is generated: ``_native_kernel``) and for
        a function of a source file called from another with no declaration in the index (one is in scope there,
        and the parser lost it: ``EliminateNoOps(graph)``, whose header declares ``custom_ops = {}``). Only where
        no function that shows its parameters takes the count (``pin_memory<T>(size)`` is the template of one
        parameter, not the kernel ``pin_memory(self, device)``)."""
        sig = signature(s.params)
        if sig.takes(nargs):
            return True
        return nargs <= len(sig.types) and (self._native_kernel(s) or self._declaration_unread(s))

    def _declaration_unread(self, s: CppSymbol) -> bool:
        """A definition in another source file whose declaration the index does not hold (see ``_takes``)."""
        return s.is_definition and not s.is_file_local and not is_header(s.path) and s.path != self.caller.path \
            and all(d.is_definition for d in symbols_named(self.ix, s.qualname))

    def _prefer(self, defs: list[CppSymbol]) -> Resolution:
        real = [d for d in defs if d.is_definition]
        if real:  # one function's definitions: its own file's, then a class template's own before a specialization's
            real.sort(key=lambda d: (d.path != self.caller.path, in_specialization(self.ix, d), d.path, d.line))
            return Resolution(TargetKind.DEFS, tuple(real), candidates=len(real) > 1 and len(
                {d.path for d in real}) > 1)
        return Resolution(TargetKind.DECLS, tuple(sorted(defs, key=lambda d: (d.path != self.caller.path, d.path,
                                                                             d.line))))

    def _visible(self, s: CppSymbol) -> bool:
        """Internal linkage: only from its own file (a header's reaches its includers)."""
        return not s.is_file_local or s.path == self.caller.path or is_header(s.path)

    def _usable(self, syms: list[CppSymbol]) -> list[CppSymbol]:
        """Test-only code serves tests only (never a pick for the library, even as the only name found);
        a codegen template's function serves generated code, and others where no other file has it (the
        hand-written functions of templates/TensorBody.h, ``borrow_from_optional_tensor(optional<Tensor>)``,
        are the build's ATen/core/TensorBody.h: the only copy in the tree)."""
        own = [s for s in syms if self._visible(s) and (self.in_test or not is_test(s.path))]
        host = self.caller.path.endswith(HOST_SOURCES) and not self.rocm
        if host:  # Note [Host code calls no device code]
            own = [s for s in own if not _device_only(s)] or own
        elif not self.rocm:  # nor does CUDA code call a ROCm build's own (a hip/ directory's)
            own = [s for s in own if not rocm_only_path(s.path)] or own
        if self.caller.path.startswith(ATEN_TEMPLATES):
            return own
        elsewhere = {(s.qualname, signature(s.params).key) for s in own if not s.path.startswith(ATEN_TEMPLATES)}
        keep = [s for s in own if not s.path.startswith(ATEN_TEMPLATES) or "::Tensor::" in s.qualname
                or (s.qualname, signature(s.params).key) not in elsewhere]
        return keep or own

    # -------------------------------------------------------------- types

    def arg_types(self, call: CallSite) -> list[Ty | None]:
        if not call.args:
            return [None] * max(call.nargs, 0)
        return [self.type_of(te) if te else None for te in call.args.split(";")]

    def type_of(self, te: str) -> Ty | None:
        """Evaluate a type expression (Note [Type expressions]) in the caller's scope."""
        return self.ix.memo("type_exprs", (self.caller.id, te), lambda: self._evaluate(te), None)

    def _evaluate(self, te: str) -> Ty | None:
        parsed = _parsed(te)
        return self._eval(parsed) if parsed is not None and self.nesting <= _MAX_NESTING else None

    def _eval(self, te: TypeExpr) -> Ty | None:
        ty = self._base_type(te)
        for step in te.steps:
            if ty is None:
                return None
            ty = self._step(ty, step)
        return ty

    def _base_type(self, te: TypeExpr) -> Ty | None:
        if te.base is TypeBase.TYPE:
            return resolve_type(self.ix, te.text, self.scope)
        if te.base is TypeBase.CALL:
            return self._call_type(te.text, te.nargs)
        if te.base is TypeBase.VARIABLE:
            return self._variable(te.text)
        cls = self._own_class()  # TypeBase.THIS
        return Ty(cls, (), 1) if cls else None

    def _step(self, ty: Ty, step: TypeStep) -> Ty | None:
        ix, k = self.ix, step.kind
        if k is TypeStepKind.METHOD:
            return self._method_type(ty, step.name, step.n)
        if k is TypeStepKind.MEMBER:
            return field_type(ix, ty, step.name) if not ty.ptr else None
        if k is TypeStepKind.ELEMENT or k is TypeStepKind.DEREF:
            return element(ix, ty, k.value)
        if k is TypeStepKind.ADDRESS:
            return Ty(ty.name, ty.args, ty.ptr + 1)
        if k is TypeStepKind.TUPLE:
            return ty.arg(step.n) if ty.name in ("std::tuple", "std::pair") else None
        if k is TypeStepKind.COMPARE:  # a comparison: a Tensor's gives a Tensor, others bool
            return ty if ty.is_tensor or self._tensor_derived(ty) else Ty("bool")
        # TypeStepKind.CALL_OP
        owner, syms = methods(ix, ty, "operator()") if not (ty.is_std or ty.is_builtin) else (None, [])
        return return_type(ix, syms[0], owner) if syms else None

    def _own_class(self) -> str:
        cls = split_last(self.caller.qualname)[1]
        return cls if cls and is_class(self.ix, cls) else ""

    def _variable(self, name: str) -> Ty | None:
        """A name the function does not declare: a member of its class, else a variable of an enclosing namespace;
        written qualified, an enum's value (``ScalarType::Long`` is a ``c10::ScalarType``), a static member, or a
        namespace's variable (``at::kLong``)."""
        ix = self.ix
        parts = split_qualified(name)
        if len(parts) == 1:
            cls = self._own_class()
            found = field_type(ix, Ty(cls), name) if cls else None
            return found or namespace_variable(ix, self.scope.chain, name, self.caller.path)
        qual, name = "::".join(parts[:-1]), parts[-1]
        owner = resolve_type(ix, qual, self.scope)
        if owner is not None and not (owner.is_builtin or owner.is_std):
            return owner if is_enum(ix, owner.name) else field_type(ix, owner, name)
        homes = (t for s in self.scope.chain for t in self._qualified_scopes(s, parts[:-1]))
        return namespace_variable(ix, homes, name, self.caller.path)

    def _method_type(self, ty: Ty, name: str, nargs: int) -> Ty | None:
        ix = self.ix
        if ty.ptr:
            return None
        if ty.is_std:
            got = std_member(ty, name)
            return got if isinstance(got, Ty) else None
        if ty.is_builtin:
            return None
        if ty.is_tensor or self._tensor_derived(ty):
            res = self.tensor_method(CallSite.implied(self.caller.id, name, CallKind.METHOD, nargs=nargs), ty)
            if res.kind is TargetKind.OP:
                rets = {return_of(self.reg.by_full[o]) for o in res.ops if o in self.reg.by_full}
                return rets.pop() if len(rets) == 1 else None
        owner, syms = methods(ix, ty, name)
        if not syms:
            return None
        fit = [s for s in syms if signature(s.params).takes(nargs)] or syms
        # of overloads the count fits, a function before a template (C++ prefers it where the arguments tie:
        # ``options.device()`` is ``Device device() const``, not ``template <typename... Args> device(Args&&...)``)
        for s in sorted(fit, key=lambda s: own_template(ix, s)):
            rt = return_type(ix, s, owner)
            if rt is not None:
                return rt
        return None

    def _call_type(self, name: str, nargs: int) -> Ty | None:
        """The type of ``NAME(args)``: a constructor's class, an op's return type, a function's return type."""
        ix = self.ix
        head, _, targs = name.partition("<")
        # std::make_shared<T>(...): a shared_ptr<T> (Note [Factories construct] in model/factories.py; 636 such
        # receivers in torch/csrc were untyped: IntraNodeComm::rendezvous, GraphTask::init_to_execute had no callers)
        if head.lstrip(":") in FACTORIES and targs.endswith(">"):
            return resolve_type(ix, f"{FACTORIES[head.lstrip(':')]}<{targs}", self.scope)
        # a class named as a function is a construction: TensorIteratorConfig(), Tensor(x), IntArrayRef(v)
        as_type = resolve_type(ix, name, self.scope)
        if as_type is not None and not as_type.is_builtin:
            if as_type.is_std or classes(ix, as_type.name) or as_type.name != name.split("<")[0]:
                return as_type
        plain = "::".join(p.split("<")[0] for p in split_qualified(name))
        parts = split_qualified(plain)
        callee, qual = parts[-1], "::".join(parts[:-1])
        if len(split_qualified(name)) > 1 and "<" in split_qualified(name)[-2]:
            # C<T>::f(): a static member of a class template, its parameters bound
            owner = resolve_type(ix, "::".join(split_qualified(name)[:-1]), self.scope)
            if owner is not None and not owner.is_std and not owner.is_builtin:
                _, syms = methods(ix, owner, callee)
                fit = [s for s in syms if signature(s.params).takes(nargs)] or syms
                return return_type(ix, fit[0], owner) if fit else None
        implied = CallSite.implied(self.caller.id, callee, CallKind.CALL, qualifier=qual, nargs=nargs)
        res = resolver(ix, self.caller, self.nesting + 1).call(implied) if self.nesting < _MAX_NESTING else \
            UNRESOLVED
        if res.kind is TargetKind.UNRESOLVED and nargs >= 0 and self.nesting < _MAX_NESTING:
            # no function lookup found takes the count: a call argument-dependent lookup answers, which needs the
            # arguments' types (Note [Lookup that finds no viable function]) a type expression does not give; its
            # type is read from what lookup found, as a method's (``_method_type``)
            res = resolver(ix, self.caller, self.nesting + 1).call(replace(implied, nargs=-1))
        if res.kind is TargetKind.OP:
            rets = {return_of(self.reg.by_full[o]) for o in res.ops if o in self.reg.by_full}
            return rets.pop() if len(rets) == 1 else None
        if res.kind in (TargetKind.DEFS, TargetKind.DECLS):
            for d in res.defs:
                owner = None
                cls = split_last(d.qualname)[1]
                if d.kind is SymbolKind.METHOD and is_class(ix, cls):
                    owner = Ty(cls)
                rt = return_type(ix, d, owner)
                if rt is not None:
                    return rt
        return None

    def _global_kernels(self, name: str) -> list[CppSymbol]:
        return [s for s in gpu_kernels_named(self.ix, name) if s.kind is SymbolKind.GLOBAL_KERNEL]



# Note [Host code calls no device code]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A file the host compiler builds (.cpp, .cc, .c, .mm) cannot call what only nvcc sees: a function of a .cuh header
# (which only .cu files include) or a __device__ / __global__ function of a .cu file. ATen writes helpers twice, one
# per side, with one name (area_pixel_compute_source_index: UpSample.h for the CPU kernels, __device__ in
# cuda/UpSample.cuh): a call from UpSampleBicubic2d.cpp is the host one's. Nor does it, or a .cu file, call a ROCm
# build's own code (a hip/ directory: transformers/hip/aotriton_adapter.h's at::native::ceil_div is not the
# at::ceil_div an unqualified call in cuda/EmbeddingBag.cu means) unless it is one. Only a choice between candidates:
# a name whose every candidate is such code keeps them.
HOST_SOURCES = (".cpp", ".cc", ".c", ".mm")


def _device_only(s: CppSymbol) -> bool:
    return (s.path.endswith(".cuh") or rocm_only_path(s.path)
            or s.path.endswith(".cu") and s.kind in (SymbolKind.DEVICE_FUNCTION, SymbolKind.GLOBAL_KERNEL))


def _unique(syms: list[CppSymbol]) -> list[CppSymbol]:
    seen: set[int] = set()
    out = []
    for s in syms:
        if s.id not in seen:
            seen.add(s.id)
            out.append(s)
    return out
