"""How answers are shown: the thesis-style trace figures (:mod:`~ccac.report.plot`) and every
line and exit code the commands print: shared ones and a query's (:mod:`~ccac.report.presentation`),
and one module per command's own (``proof_lines``, ``synthesis_lines``, ``bound_lines``,
``sweep_lines``, ``replay_lines``, ``bench_lines``, ``listing_lines``). The commands decide what
to show and echo what is composed here; objects of the rooms above are read through small
protocols.

May import: :mod:`ccac.core`, :mod:`ccac.encode`, :mod:`ccac.models`, :mod:`ccac.senders`,
:mod:`ccac.ccas`, :mod:`ccac.problems`.
"""
