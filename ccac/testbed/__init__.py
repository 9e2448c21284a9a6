"""Counterexamples in packets: the packet-level path (:mod:`~ccac.testbed.packet_path`), the
replay of a trace's path with a CCA's concrete sender (:mod:`~ccac.testbed.replay`), the path
written out for other simulators (:mod:`~ccac.testbed.export`), and the replay in ns-3 with
ns-3's own TCP (:mod:`~ccac.testbed.ns3_replay`, running :mod:`~ccac.testbed.ns3_sim`).

May import: every room below it (:mod:`ccac.core` to :mod:`ccac.solving`).
"""
