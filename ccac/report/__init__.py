"""How answers are shown: the thesis-style trace figures (:mod:`~ccac.report.plot`) and the
lines, statements and exit codes every command prints (:mod:`~ccac.report.presentation`).

May import: :mod:`ccac.core`, :mod:`ccac.encode`, :mod:`ccac.models`, :mod:`ccac.senders`,
:mod:`ccac.ccas`, :mod:`ccac.problems`.
"""
