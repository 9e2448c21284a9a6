"""Answering a problem: the single solvers (:mod:`~ccac.solving.solvers`), portfolios racing
them (:mod:`~ccac.solving.portfolio`) behind one door (:mod:`~ccac.solving.backends`), the answer
with its trace read back exactly (:mod:`~ccac.solving.solve`) and validated independently of the
encoding (:mod:`~ccac.solving.validate`), and the result store (:mod:`~ccac.solving.store`).

May import: every room below it (:mod:`ccac.core` to :mod:`ccac.report`).
"""
