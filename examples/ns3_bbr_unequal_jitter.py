"""Two of ns-3's TcpBbr flows from fresh connections, one whose ACKs come back in bursts: how the
link is shared over the last 10 RTTs (thesis 8.2's starvation, in the real stack).

Run: python examples/ns3_bbr_unequal_jitter.py [SEGMENTS_PER_STEP] [BURST_STEPS] [BUFFER_BDP]
(needs pip install '.[ns3]'). The path is one of ccac's: a link of SEGMENTS_PER_STEP segments per
step (default 5), R = 4 steps of 10 ms, the model's buffer of BUFFER_BDP BDPs beyond the token
line (default 4); flow 1's ACKs are held so that they come back together every BURST_STEPS steps
(default 12), flow 0's at once. Both connections open at step 4 with 4 segments, as TcpBbr's
`bbr1` configuration in ccac runs them (docs/replay.md).
"""

from __future__ import annotations

import sys

from ccac.testbed import ns3_sim
from ccac.testbed.ns3_replay import MSS, socket_buffer
from ccac.testbed.ns3_stacks import STACKS

R, T, STEP_NS, OPENS = 4, 200, 10_000_000, 4


def scenario(per_step: int, burst: int, buffer_bdp: float) -> dict[str, object]:
    """The ns-3 scenario (ccac.testbed.ns3_sim's format) of the path above."""
    hold = [(burst - s % burst) % burst for s in range(T)]   # released at the next multiple of burst
    flows = []
    for n in range(2):
        flow = STACKS["bbr1"].flow(stream=n) | {"rtt_ns": R * STEP_NS, "open_step": OPENS, "initial_cwnd": 4,
                                                "initial_ssthresh": 10**6}
        flows.append(flow | ({"hold": hold} if n == 1 else {}))
    bdp = per_step * R
    return {"step_ns": STEP_NS, "steps": T, "segment": MSS,
            "server": {"rate": float(per_step), "tokens": 0.0, "lag": [0.0] * T, "margin": [0.0] * T,
                       "buffer": buffer_bdp * bdp, "cap": [-1.0] * T},
            "queue_packets": int(buffer_bdp * bdp) + 3, "socket_buffer": socket_buffer(10 * bdp), "flows": flows}


def main() -> None:
    per_step, burst, buffer_bdp = (int(sys.argv[1]) if len(sys.argv) > 1 else 5,
                                   int(sys.argv[2]) if len(sys.argv) > 2 else 12,
                                   float(sys.argv[3]) if len(sys.argv) > 3 else 4.0)
    samples, _ = ns3_sim.simulate(scenario(per_step, burst, buffer_bdp))
    first = T - 10 * R
    got = [(flow["served"][-1] - flow["served"][first]) // MSS for flow in samples]
    print(f"last 10 RTTs: flow 0 {got[0]} segments, flow 1 {got[1]} of the link's {10 * R * per_step}; "
          f"flow 0 / flow 1 = {got[0] / max(got[1], 1):.2f}")


if __name__ == "__main__":
    main()
