"""Answering a problem: the single solvers (:mod:`~ccac.solving.solvers`), portfolios racing
them (:mod:`~ccac.solving.portfolio`) behind one door (:mod:`~ccac.solving.backends`), the
pipeline that owns each solve (:class:`~ccac.solving.solve.Pipeline`: its own z3 context, the
build, the answer, the trace read back exactly) and the validation, independent of the
encoding (:mod:`~ccac.solving.validate`), and the result store (:mod:`~ccac.solving.store`).

May import: every room below it (:mod:`ccac.core` to :mod:`ccac.report`).
"""
