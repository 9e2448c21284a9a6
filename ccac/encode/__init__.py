"""The model's language and its encoding as linear SMT constraints: the solver-variable
registry and timeline (:mod:`~ccac.encode.encoding`), the network and per-flow path parameters
(:mod:`~ccac.encode.network`), monotone byte-curve frontiers (:mod:`~ccac.encode.frontier`),
periodic (steady-state) traces (:mod:`~ccac.encode.periodic`), the compiled expression language
of queries and proofs (:mod:`~ccac.encode.expr`), the CCA language's definitions
(:mod:`~ccac.encode.rules`, with its beliefs in :mod:`~ccac.encode.beliefs` and templates in
:mod:`~ccac.encode.templates`) and a solved run's values (:mod:`~ccac.encode.trace`).

May import: :mod:`ccac.core`.
"""
