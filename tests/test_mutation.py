"""The mutation check (slow): every unsound mutant of an encoding (:mod:`mutants`) is caught.

Each mutant runs in its own pytest process (``-x``: the first failing test kills it) over the
conformance tests of its module, with :mod:`mutation_plugin` loading the mutated source. A kill
must be a failing test (exit code 1), not a collection or import error: a mutant that breaks
the import proves nothing. Run with ``pytest -m slow tests/test_mutation.py``; the kill rate is in docs/learners.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mutants import BY_NAME, CONFORMANCE, MUTANTS, Mutant

ROOT = Path(__file__).resolve().parent.parent


def run_with(mutant: Mutant, select: str | None = None) -> subprocess.CompletedProcess[str]:
    """The conformance tests of the mutant's module (those matching ``select``, a ``-k``
    expression, if given) with the mutant in place."""
    env = dict(os.environ, CCAC_MUTANT=mutant.name,
               PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "mutation_plugin", "-p", "no:cacheprovider",
               "-m", "not slow", *(["-k", select] if select else []), *CONFORMANCE[mutant.module]]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)


#: mutants the conformance tests do not kill yet (measured: ``pytest -m slow tests/test_mutation.py``),
#: each a freedom of the encoding no test run exercises. Marked strict xfail: a test that starts
#: killing one turns the run red until it is taken off this list.
SURVIVORS: dict[str, str] = {
    "lang_max_c_any_window": "no run of the belief's test CCA has a window whose first step alone was unused "
                             "while that window's candidate would be the smallest",
}


@pytest.mark.slow
@pytest.mark.parametrize("mutant", [
    pytest.param(m, id=m.name, marks=[pytest.mark.xfail(strict=True, reason=SURVIVORS[m.name])]
                 if m.name in SURVIVORS else []) for m in MUTANTS])
def test_the_conformance_tests_kill_the_mutant(mutant: Mutant) -> None:
    result = run_with(mutant)
    summary = result.stdout.strip().splitlines()[-1:] if result.stdout.strip() else result.stderr[-2000:]
    assert result.returncode != 0, f"{mutant.name} survived ({mutant.what}): {summary}"
    assert result.returncode == 1, f"{mutant.name}: not a test failure (exit {result.returncode}): " \
                                   f"{result.stdout[-2000:]}{result.stderr[-2000:]}"


#: mutants that the ``admits`` tests alone (runs of the concrete and the paper-faithful senders
#: the encoding must admit; no semantic test) must kill, each through runs chosen to reach the
#: freedom it removes: the regression tolerance at a residual below twice the fit, Proteus'
#: max(0, g) clip, a round's fate waiting for loss detection, an Allegro decision whose pairs
#: disagree (tests/test_proteus.py: ZEROED, tests/test_vivace.py: LATE_DETECTION,
#: tests/test_allegro.py: SPLIT_VOTES)
KILLED_BY_ADMITS = ("tolerance_halved", "proteus_p_negative_gradient", "fate_without_detection",
                    "allegro_up_on_one_pair")
assert set(KILLED_BY_ADMITS) <= set(BY_NAME), "KILLED_BY_ADMITS names a mutant not in tests/mutants.py"


@pytest.mark.slow
@pytest.mark.parametrize("name", KILLED_BY_ADMITS)
def test_the_admits_tests_alone_kill_the_mutant(name: str) -> None:
    mutant = BY_NAME[name]
    result = run_with(mutant, "admits")
    summary = result.stdout.strip().splitlines()[-1:] if result.stdout.strip() else result.stderr[-2000:]
    assert result.returncode != 0, f"{name} survived the admits tests ({mutant.what}): {summary}"
    assert result.returncode == 1, f"{name}: not a test failure (exit {result.returncode}): " \
                                   f"{result.stdout[-2000:]}{result.stderr[-2000:]}"


def test_the_plugin_applies_a_mutant_and_rejects_a_stale_one() -> None:
    """The mechanism itself (fast): the edit lands exactly once, and a snippet that is not in
    the source stops the run instead of passing for a kill."""
    source = "a = 1\nb = a + 1\n"
    assert Mutant("m", "x", "", "a + 1", "a + 2").apply(source) == "a = 1\nb = a + 2\n"
    with pytest.raises(ValueError, match="does not occur"):
        Mutant("m", "x", "", "a + 3", "a + 2").apply(source)
    with pytest.raises(ValueError, match="does not occur"):
        Mutant("m", "x", "", "a + 1", "a + 2", occurrence=2).apply(source)


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_every_mutant_still_matches_its_module(mutant: Mutant) -> None:
    """A refactor that moves a snippet must move its mutant too (fast, no solving)."""
    import importlib.util
    if mutant.module.endswith(".toml"):   # a CCA language file
        source = (ROOT / mutant.module).read_text(encoding="utf-8")
    else:
        spec = importlib.util.find_spec(mutant.module)
        assert spec is not None and spec.origin is not None
        source = Path(spec.origin).read_text(encoding="utf-8")
    assert mutant.apply(source) != source
