"""The vocabulary of a change (the ``affected`` tool, query/change/): what a changed file is, how the diff
changed it, which side of the diff the tree holds, what about an op changed, and why a test is listed.

Values are what answers show (and the structured output carries), so they read as words.
"""

from __future__ import annotations

from .kinds import PyOpRefKind, StrEnum


class ChangeStatus(StrEnum):
    """What a diff (or a name) says happened to a file."""

    MODIFIED = "modified"
    ADDED = "added"
    DELETED = "deleted"
    RENAMED = "renamed"
    BINARY = "binary"  # a binary file: no lines to map
    MODE = "mode"  # only its mode (or nothing at all) changed: no lines to map
    LINES = "lines"  # given by name (``path``, ``path:line``, ``path:a-b``), not by a diff

    @property
    def has_lines(self) -> bool:
        return self not in (ChangeStatus.BINARY, ChangeStatus.MODE)


class HunkLine(StrEnum):
    """A line of a diff hunk, by its first character."""

    CONTEXT = " "
    REMOVED = "-"  # only the old side has it
    ADDED = "+"  # only the new side has it

    @staticmethod
    def own(old: bool) -> HunkLine:
        """The changed lines only one side has: REMOVED for the old side, ADDED for the new."""
        return HunkLine.REMOVED if old else HunkLine.ADDED


class DiffSide(StrEnum):
    """Which side of a diff the tree's copy of a file holds (Note [Diff sides] in query/change/lines.py)."""

    NEW = "new"  # the change is applied (``git diff`` of the working tree)
    OLD = "old"  # a patch not applied yet
    NEITHER = "neither"  # edited since, or another version: lines are read as numbered on the new side


class Language(StrEnum):
    """The language a changed file's definitions are written in (how its changed lines name them)."""

    CPP = "cpp"  # C, C++, CUDA, Objective-C++, Metal
    PYTHON = "python"


class FileKind(StrEnum):
    """What a changed file is, which decides how its changed lines are mapped (``model.paths.file_kind``)."""

    CPP = "cpp"  # C++/CUDA/ObjC++/Metal sources and headers, generated ones included
    NATIVE_FUNCTIONS = "native_functions.yaml"
    DERIVATIVES = "derivatives.yaml"
    TAGS = "tags.yaml"
    PYTHON = "python"  # torch/**.py
    OPINFO = "opinfo"  # the OpInfo database (common_methods_invocations.py, opinfo/)
    TEST = "test"  # test/**.py
    CODEGEN = "codegen"  # a code generator or one of its templates: everything generated from it
    OTHER = "other"  # build files, docs, scripts, third-party code: no code facts

    @property
    def language(self) -> Language | None:
        if self is FileKind.CPP:
            return Language.CPP
        if self in (FileKind.PYTHON, FileKind.OPINFO, FileKind.TEST):
            return Language.PYTHON
        return None


class Aspect(StrEnum):
    """What about an op a change touches when it is not the op's kernels: the suites that check exactly
    that run for it (query/change/tests.py). Python registrations keep their ``PyOpRefKind`` value."""

    BACKWARD = "backward"  # its derivatives.yaml backward formula, or its entry
    FORWARD_AD = "forward-mode AD"  # its derivatives.yaml forward-mode (JVP) formula alone (Note [Formula modes])
    DECOMPOSITION = PyOpRefKind.DECOMPOSITION.value
    REF = PyOpRefKind.REF.value
    META = PyOpRefKind.META.value  # its meta function (TORCH_META_FUNC or torch._meta_registrations)
    LOWERING = PyOpRefKind.LOWERING.value
    PYTHON_IMPL = PyOpRefKind.PYTHON_IMPL.value
    FALLBACK = PyOpRefKind.FALLBACK.value
    FAKE = PyOpRefKind.FAKE.value


class GeneratorRole(StrEnum):
    """What a changed code-generation file is to the generated code (its value reads after "is a")."""

    TEMPLATE = "template"  # a template generated files are written from
    GENERATOR = "generator"  # the module that writes them
    AUTOGRAD_SHARED = "shared by the autograd generators"  # other code under tools/autograd/
    SHARED = "shared by every generator (torchgen is imported by the ATen and autograd generators)"


class ModuleKind(StrEnum):
    """What a Python class users build with is (its root base class, from the link tables)."""

    MODULE = "module"  # torch.nn.Module
    OPTIMIZER = "optimizer"  # torch.optim.Optimizer
    LR_SCHEDULER = "lr_scheduler"


class TestReason(StrEnum):
    """Why ``affected`` lists a test."""

    __test__ = False  # not a pytest test class, whatever its name

    CHANGED = "changed"  # the change edits the test itself
    OPINFO = "opinfo"  # the generic @ops tests run a reached op through this OpInfo entry (or an aspect's suite)
    NAMED = "named"  # named after a reached op or module
    CALLS = "calls"  # its body calls the op's or module's Python API
    MODULE = "module"  # a ModuleInfo / OptimizerInfo entry of a changed module
    SUITE = "suite"  # a suite that runs every op through a generated layer that changed
    IMPORTS = "imports"  # the test file imports the changed code, its callers or their module (change/imports.py)
