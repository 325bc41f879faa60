"""The generic suites of nn modules and optimizers: ModuleInfo entries (module_db, run by test/test_modules.py) and
OptimizerInfo entries (optim_db, run by the @optims tests of test/test_optim.py).

The entries are constructor calls the index does not keep as facts; they are read from the two database files of
the tree (once per index version). A module's generated tests are named after the entry with the device after it
(``test_forward_nn_ReLU_cpu_float32``, ``test_step_is_noop_when_params_have_no_grad_Adam_cpu_float32``), so a
selection spells the name between underscores: ``nn_ReLU_`` selects no ``nn_ReLU6`` test, ``_Adam_`` no AdamW one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import Loc
from ..model.change import ModuleKind
from ..model.paths import MODULE_DB, OPTIM_DB
from ..store.reader import Index

SUITES = {ModuleKind.MODULE: "test/test_modules.py", ModuleKind.OPTIMIZER: "test/test_optim.py"}
DB_FILES = {ModuleKind.MODULE: MODULE_DB, ModuleKind.OPTIMIZER: OPTIM_DB}
_PATTERNS = {ModuleKind.MODULE: r"ModuleInfo\(\s*(?:torch\.)?(nn\.[\w.]+)",
             ModuleKind.OPTIMIZER: r"OptimizerInfo\(\s*(?:optim_cls=)?(?:torch\.optim\.)?([A-Z]\w+)"}


@dataclass
class DbEntry:
    kind: ModuleKind
    name: str  # as the entry names it: "nn.Linear", "Adam"
    loc: Loc
    command: str  # the generic tests of this entry only (in the suite that runs them)

    @property
    def label(self) -> str:
        return f"{'ModuleInfo' if self.kind is ModuleKind.MODULE else 'OptimizerInfo'}({self.name})"


def db_names(ix: Index) -> dict[ModuleKind, dict[str, int]]:
    """Kind -> entry name -> its line in the database file (the first entry of a name)."""
    def load() -> dict[ModuleKind, dict[str, int]]:
        out: dict[ModuleKind, dict[str, int]] = {ModuleKind.MODULE: {}, ModuleKind.OPTIMIZER: {}}
        root = ix.source_root
        for key, pat in _PATTERNS.items():
            try:
                text = (root / DB_FILES[key]).read_text(encoding="utf-8", errors="replace") if root is not None else ""
            except OSError:  # no such file here
                text = ""
            for m in re.finditer(pat, text):
                out[key].setdefault(m.group(1), text.count("\n", 0, m.start()) + 1)
        return out
    table: dict[ModuleKind, dict[str, int]] = ix.cached("module_db_names", load)
    return table


def selection(kind: ModuleKind, name: str) -> str:
    """The pytest -k text that selects one entry's generated tests (Note in the module docstring)."""
    return f"{name.replace('.', '_')}_" if kind is ModuleKind.MODULE else f"_{name}_"


def entry_for(ix: Index, name: str) -> DbEntry | None:
    """The ModuleInfo or OptimizerInfo entry of a module or optimizer however spelled (torch.nn.Linear, nn.Linear,
    Linear, torch.optim.Adam, Adam), when the tree has it and the suite that runs it."""
    spelled = name.strip().removeprefix("torch.")
    short = spelled.rsplit(".", 1)[-1]
    indexed = ix.file_ids()
    names = db_names(ix)
    for kind, key in ((ModuleKind.MODULE, spelled), (ModuleKind.MODULE, f"nn.{short}"), (ModuleKind.OPTIMIZER, short)):
        line = names[kind].get(key)
        if line is not None and SUITES[kind] in indexed:
            return DbEntry(kind, key, Loc(DB_FILES[kind], line), f'pytest {SUITES[kind]} -k "{selection(kind, key)}"')
    return None


__all__ = ["DB_FILES", "DbEntry", "SUITES", "db_names", "entry_for", "selection"]
