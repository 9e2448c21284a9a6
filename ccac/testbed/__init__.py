"""Counterexamples in packets: the packet-level path (:mod:`~ccac.testbed.packet_path`), the
replay of a trace's path with a CCA's concrete sender (:mod:`~ccac.testbed.replay`) and the path
written out for other simulators (:mod:`~ccac.testbed.export`).

May import: every room below it (:mod:`ccac.core` to :mod:`ccac.solving`).
"""
