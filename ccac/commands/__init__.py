"""The ``ccac`` command line: the group and its error handling (:mod:`~ccac.commands.cli`) and
one module per command (query, list, bound, prove, sweep, synthesize, replay, export, bench with its
scaling yardstick).

May import: every room of ccac (it is the top floor); nothing imports it but the entry point.
"""
