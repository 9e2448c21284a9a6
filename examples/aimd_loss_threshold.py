"""Where does AIMD start to lose packets? A small scan with the Python API.

For a few buffer sizes, ask for a loss while cwnd is at most `buffer + slack` and print the
smallest slack (in MSS) for which a trace exists. In this model the answer is "just above the
buffer" for every buffer: ACK clocking keeps the bottleneck queue below cwnd when a loss occurs.

    python examples/aimd_loss_threshold.py
"""

from __future__ import annotations

from ccac import parse_query, solve


def loss_possible(buffer_bdp: float, slack_mss: float) -> str:
    query = parse_query({
        "network": {"T": 8, "R": 1, "D": 1, "buffer": buffer_bdp},
        "cca": {"name": "aimd"},
        "query": {
            "assume": ["alpha <= 0.1 * C * R"],
            "find": f"any(L[t] > L[t-1] and cwnd[0][t] <= buffer + {slack_mss} * alpha for t in range(R, T))",
        },
    })
    result = solve(query, timeout=120)
    if result.answer == "sat":
        assert result.validated, result.violations
    return result.answer


if __name__ == "__main__":
    for buffer in (0.5, 1, 2):
        answers = {slack: loss_possible(buffer, slack) for slack in (0, 0.5, 1)}
        print(f"buffer {buffer} BDP: " + ", ".join(f"cwnd <= buffer + {s} MSS: {a}" for s, a in answers.items()))
