"""The factories that construct a class from their arguments and return a smart pointer that owns it.

Note [Factories construct]
``std::make_unique<T>(args)``, ``std::make_shared<T>(args)`` and ``c10::make_intrusive<T>(args)`` construct a T from
``args`` (forwarded to ``new T(args...)``) and return the smart pointer below that owns it. Each such call is two
sites: the call of the factory, and a CONSTRUCT of T with the call's arguments, counted and typed as ``new
T(args)``'s are (extract/cpp_constructs.py; Note [Argument counts] in graph/signatures.py), so the constructor the
arguments choose is called there as it is by ``new T(args)``. Not for a T of the standard library or a builtin (no
tree defines their constructors; the factory's call already names the standard library) nor for a parameter of a
template around the call (no class to find). The type of such a call is the smart pointer of T (graph/resolve.py),
so ``p->f()`` on its result calls T::f.
"""

from __future__ import annotations

#: A factory as a call may write it (qualified or not) -> the smart pointer it returns.
FACTORIES = {"std::make_shared": "std::shared_ptr", "make_shared": "std::shared_ptr",
             "std::make_unique": "std::unique_ptr", "make_unique": "std::unique_ptr",
             "c10::make_intrusive": "c10::intrusive_ptr", "make_intrusive": "c10::intrusive_ptr",
             "at::make_intrusive": "c10::intrusive_ptr"}
