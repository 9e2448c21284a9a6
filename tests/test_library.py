"""Every bundled query answers as its file states, with a validated trace when sat."""

from __future__ import annotations

import pytest
import z3


from ccac.analysis.proof_file import bundled_proofs, lemma_query, load_proof, steady_query
from ccac.problems.query import bundled_queries, load_query
from ccac.solving.solve import Pipeline, solve

from conftest import bundled


def library(names: list[str]) -> list[object]:
    """The queries, those stated ``slow`` (T > 10, or minutes to solve) marked ``slow``: the
    default test run skips them (``pytest -m slow`` runs them; ``ccac bench`` always does)."""
    return [pytest.param(n, marks=pytest.mark.slow) if load_query(n).slow else n for n in names]


@pytest.mark.parametrize("name", library(sorted(bundled_queries())))
def test_bundled_query_answers_as_stated(name: str) -> None:
    q = load_query(name)
    result = bundled(name, timeout=600)
    assert result.answer == q.expect, f"{name}: {result.answer} ({result.reason})"
    if result.answer == "sat":
        assert result.validated, result.violations


#: unsat queries that answer in seconds but whose premise (the query without its find) takes
#: close to a minute: their premise checks run with ``pytest -m slow``
SLOW_PREMISE = {"cubic_no_loss_below_buffer", "cubic_reduction_floor", "bbr1_probebw_utilization"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_PREMISE else n
                                  for n in sorted(n for n in bundled_queries() if load_query(n).expect == "unsat"
                                                  and not load_query(n).slow)]
                         + [pytest.param(n, marks=pytest.mark.slow) for n in sorted(bundled_queries())
                            if load_query(n).expect == "unsat" and load_query(n).slow])
def test_unsat_queries_are_not_vacuous(name: str) -> None:
    """An unsat answer means something only if the assumptions alone admit a trace."""
    q = load_query(name)
    q.find = None
    assert solve(q, timeout=600).answer == "sat", f"{name}: assumptions (with periodicity) are unsatisfiable"


@pytest.fixture
def default_context_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """z3's default context refused: any term made there (a constant or variable made without
    the solve's own context) raises."""
    def refused() -> None:
        raise AssertionError("a term was made in z3's default context, not the solve's own")
    monkeypatch.setattr(z3.z3, "main_ctx", refused)
    monkeypatch.setattr(z3, "main_ctx", refused)


def test_every_bundled_problem_is_built_in_its_own_context(default_context_forbidden: None) -> None:
    """Each solve owns a z3 context (:class:`ccac.solving.solve.Pipeline`), so its cost depends on
    its query alone: every bundled query (in both encodings of frontiers), and every proof's
    steady-state windows and lemmas, build without a single term in z3's default context, and
    each build in a context of its own. A query answered window by window is built as the
    search builds it, one window at a time (its first window here), never whole."""
    from ccac.analysis.window_search import Search, window_query

    queries = []
    for name in sorted(bundled_queries()):
        query = load_query(name)
        if query.window is not None:
            search = Search(query, query.window)
            query = window_query(query, 0, min(query.window + search.ahead, query.network.T))
        queries.append(query)
    contexts = []
    for query in queries:
        contexts.append(Pipeline(query, encoding="index").build().ctx)
    for name in sorted(bundled_proofs()):
        proof = load_proof(name)
        queries += [lemma_query(lemma, lemma.show or lemma.exists, negate=lemma.show is not None)
                    for lemma in proof.lemmas]
        if proof.steady is not None:
            queries.append(steady_query(proof, []))
    for query in queries:
        problem = Pipeline(query).build()
        assert all(f.ctx == problem.ctx for f in problem.formulas()), query.name
        contexts.append(problem.ctx)
    assert len({id(c) for c in contexts}) == len(contexts)
