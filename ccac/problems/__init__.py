"""From a question to a formula: query files and their parsing into a :class:`~ccac.problems.query.Query`
(:mod:`~ccac.problems.query`), and the whole SMT problem -- path model, every flow's CCA,
assumptions and the question -- built from it (:mod:`~ccac.problems.problem`).

May import: :mod:`ccac.core`, :mod:`ccac.encode`, :mod:`ccac.models`, :mod:`ccac.senders`, :mod:`ccac.ccas`.
"""
