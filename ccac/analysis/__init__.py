"""What is built on many answers: proofs of steady-state theorems and their lemmas
(:mod:`~ccac.analysis.proof`, :mod:`~ccac.analysis.proof_file`, :mod:`~ccac.analysis.obligation`,
:mod:`~ccac.analysis.steady_state`, and the check that a window of a longer run is a trace,
:mod:`~ccac.analysis.window`), strengthening and tightening them
(:mod:`~ccac.analysis.strengthen`, :mod:`~ccac.analysis.tighten`), bounds by exact bisection
(:mod:`~ccac.analysis.bound`, :mod:`~ccac.analysis.bisection`), families of queries sharing one
solver under assumptions (:mod:`~ccac.analysis.family`, :mod:`~ccac.analysis.incremental`), queries
split into cases (:mod:`~ccac.analysis.cubes`), sweeps over grids on local or Dask executors
(:mod:`~ccac.analysis.sweep`, :mod:`~ccac.analysis.grid`, :mod:`~ccac.analysis.executors`), and the
scaling yardstick of ``ccac bench --scaling`` (:mod:`~ccac.analysis.scaling`).

May import: every room below it (:mod:`ccac.core` to :mod:`ccac.testbed`).
"""
