"""pytest plugin for the mutation check: load one CCA module with one unsound edit applied.

``CCAC_MUTANT=<name> pytest -p mutation_plugin ...`` (with ``tests`` on ``PYTHONPATH``) makes
the next import of the mutant's module (say ``ccac.ccas.pcc.gradient``) compile the module's
source with the mutant's edit (:mod:`mutants`) in place of the file as installed; everything
that imports the module, the CCA registry included, then sees the mutant. A mutant of a CCA
language file (``module`` a ``.toml`` path from the repository's root, e.g.
``ccas/rules/newreno.toml``) is applied where the file's text is read (``Path.read_text``, as
:func:`ccac.ccas.language.load_file` reads it), so every load of that file sees the mutant. The edit must match
the source exactly once at its occurrence, else the plugin stops the run (exit 3): a list of
mutants that no longer matches the code is not a mutation check. Hypothesis runs derandomized
and without shrinking, so a mutant's verdict is the same on every run.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Sequence

from mutants import BY_NAME, Mutant


class _MutantLoader(importlib.abc.Loader):
    def __init__(self, mutant: Mutant, origin: str) -> None:
        self.mutant, self.origin = mutant, origin

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        with open(self.origin, encoding="utf-8") as f:
            source = self.mutant.apply(f.read())
        exec(compile(source, self.origin, "exec"), module.__dict__)


class _MutantFinder(importlib.abc.MetaPathFinder):
    def __init__(self, mutant: Mutant) -> None:
        self.mutant = mutant

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None) -> Any:
        if fullname != self.mutant.module:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None:
            return None
        return importlib.util.spec_from_file_location(fullname, spec.origin,
                                                      loader=_MutantLoader(self.mutant, spec.origin))


def _mutate_file(mutant: Mutant) -> None:
    """Serve the mutated text of the CCA file ``mutant.module`` to every reader of that file."""
    target = (Path(__file__).resolve().parent.parent / mutant.module).resolve()
    read_text = Path.read_text
    mutant.apply(read_text(target, encoding="utf-8"))   # a stale snippet stops the run here, not in a test

    def mutated_read_text(self: Path, *args: Any, **kwargs: Any) -> str:
        text = read_text(self, *args, **kwargs)
        return mutant.apply(text) if self.resolve() == target else text

    Path.read_text = mutated_read_text  # type: ignore[method-assign]


def _install() -> None:
    """Runs when pytest imports the plugin (``-p``), before the conftest files import ccac."""
    name = os.environ.get("CCAC_MUTANT")
    if not name:
        return
    mutant = BY_NAME[name]
    if mutant.module.endswith(".toml"):
        _mutate_file(mutant)
    elif mutant.module in sys.modules:
        raise RuntimeError(f"{mutant.module} was imported before the mutation plugin")
    else:
        sys.meta_path.insert(0, _MutantFinder(mutant))
    from hypothesis import Phase, settings
    # no shrinking: a kill needs a failing example, not the smallest one (shrinking a failing
    # conformance run re-solves it many times)
    settings.register_profile("mutation", derandomize=True, database=None,
                              phases=(Phase.explicit, Phase.reuse, Phase.generate))
    settings.load_profile("mutation")


_install()
