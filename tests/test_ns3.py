"""The ns-3 replay (ccac.testbed.ns3_replay, ccac.testbed.ns3_sim) and ``ccac export --format ns3``.

The tests that run ns-3 are marked ``ns3`` and skipped without its Python bindings; a test
process imports ns-3 once (the module fixture ``ns3``, several seconds).
"""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction as F
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from ccac import load_query, solve
from ccac.problems.query import parse_query
from ccac.encode.expr import Series, Symbols
from ccac.encode.trace import Trace
from ccac.testbed import ns3_sim
from ccac.testbed.ns3_replay import MSS, replay_ns3, scenario
from ccac.testbed.replay import load_result

from conftest import make_query

DATA = Path(__file__).parent / "data"


def needs_ns3(test: Any) -> Any:
    """Mark a test that runs ns-3, skipped when its bindings are not installed."""
    skip = pytest.mark.skipif(find_spec("ns") is None, reason="ns-3 is not installed (pip install '.[ns3]')")
    return pytest.mark.ns3(skip(test))


@pytest.fixture(scope="module")
def ns3() -> Any:
    """ns-3's bindings, imported once for this test process."""
    from ccac.testbed.ns3_sim import load_ns3, quiet_stderr

    with quiet_stderr():
        return load_ns3()


def result_file(tmp_path: Path, name: str) -> Path:
    result = solve(load_query(name), timeout=120)
    assert result.answer == "sat" and result.validated, result.violations
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(result.to_json()))
    return path


def hand_trace(D: int, buffer: F, find: str, served: list[F], sent: list[F], wasted: list[F],
               window: F) -> tuple[Any, Trace]:
    """A hand-built trace of one aimd flow on a link of C = 1 byte per step (alpha = 1/10: 10
    segments per step), R = 1, jitter D and ``buffer`` bytes: the given service, arrivals and
    wasted tokens, a constant cwnd ``window``, and nothing lost."""
    T = len(served)
    query = make_query({"T": T, "R": 1, "D": D, "C": 1, "alpha": "1/10", "buffer": buffer}, {"name": "aimd"},
                       find=find)
    symbols = Symbols()
    symbols.constants.update({"C": F(1), "R": F(1), "D": F(D), "T": F(T), "flows": F(1), "alpha": F(1, 10),
                              "dupacks": F(3, 10), "buffer": F(buffer)})
    zero = [F(0)] * T
    for name, values in (("A", sent), ("S", served), ("L", zero), ("W", wasted)):
        symbols.series[name] = Series(name, values, 1)
    for name, values in (("A_f", sent), ("S_f", served), ("L_f", zero), ("Ld_f", zero), ("cwnd", [window] * T),
                         ("timeout", [False] * T), ("loss_mark", zero), ("ack_mark", zero)):
        symbols.series[name] = Series(name, [values], 2, {})
    return query, Trace(query.network, ["aimd"], symbols)


def steady_trace(rate: F, window: F, find: str, T: int = 20) -> tuple[Any, Trace]:
    """A buffer of 100 BDP and no jitter: the server serves ``rate`` bytes every step with no
    lag and wastes the rest of C (its token line is its service), the sender keeps ``window``
    bytes beyond it queued (its cwnd)."""
    served = [rate * t for t in range(T)]
    return hand_trace(0, F(100), find, served, [s + window for s in served], [(1 - rate) * t for t in range(T)],
                      window)


def served_within_tokens(run: Any) -> bool:
    """The run's bottleneck never served more than its token line allowed (S[t] <= C*t - W[t])."""
    S, W, C = run.concrete.total("S"), run.concrete.total("W"), run.trace.network.C
    return all(S[t] <= C * t - W[t] for t in range(run.trace.T))


@needs_ns3
@pytest.mark.usefixtures("ns3")
@pytest.mark.parametrize("fixed", [False, True], ids=["token-bucket", "schedule"])
def test_a_constant_link_is_filled_by_newreno(fixed: bool) -> None:
    """Sanity of the unit mapping: on a path that serves C every step, TcpLinuxReno started with
    the trace's window of 2 BDP gets all of it, C*(T-1) trace bytes, on either server."""
    query, trace = steady_trace(F(1), F(2), "S[T-1] - S[0] >= 0.95 * C * (T - 1)")
    run = replay_ns3(query, trace, fixed=fixed)
    served = run.concrete.total("S")
    assert served[-1] - served[0] == trace.network.C * (trace.T - 1) and served_within_tokens(run)
    assert run.concrete.total("L")[-1] == 0 and run.reproduced is True
    assert run.concrete.flow("cwnd", 0)[0] == 2 and all(c > 0 for c in run.concrete.flow("cwnd", 0))
    assert "one segment of 1448 bytes = 0.1 trace bytes" in run.mapping[0] and "10 segments per step" in run.mapping[0]
    server = "delivery schedule (190 segments in 19 steps)" if fixed else "token bucket"
    assert run.mapping[1].startswith(f"bottleneck: the trace's {server}")


@needs_ns3
@pytest.mark.usefixtures("ns3")
def test_the_token_bucket_serves_a_sender_that_sends_more() -> None:
    """The trace's sender keeps 2 segments queued and gets 2 of the link's 10 segments a step.
    TcpLinuxReno, with that window and more to send, grows its window: the token bucket serves
    it more than the trace's service (the low-utilization finding is not reproduced), the
    fixed schedule exactly the trace's service (the finding is its cap)."""
    query, trace = steady_trace(F(1, 5), F(2, 5), "S[T-1] - S[0] <= 0.2 * C * (T - 1)")
    trace_service = trace.total("S")[-1] - trace.total("S")[0]
    bucket, schedule = replay_ns3(query, trace), replay_ns3(query, trace, fixed=True)
    for run in (bucket, schedule):
        assert run.concrete.total("L")[-1] == 0 and served_within_tokens(run)
    served = bucket.concrete.total("S")
    assert served[-1] - served[0] > 2 * trace_service and bucket.reproduced is False and bucket.offered is None
    served = schedule.concrete.total("S")
    assert served[-1] - served[0] == trace_service and schedule.reproduced is True and schedule.offered == F(1, 5)


@needs_ns3
@pytest.mark.usefixtures("ns3")
def test_a_bundled_finding_replays_in_ns3(tmp_path: Path, cli: Any) -> None:
    """aimd_premature_loss in ns-3 through the CLI: the run completes, its readings are finite
    numbers, and the exit code is the verdict (no particular verdict is asserted); on the token
    bucket by default, on the fixed schedule (and its offer printed) with --schedule."""
    path = result_file(tmp_path, "aimd_premature_loss")
    code, out, err = cli("replay", str(path), "--engine", "ns3", "--schedule", "-q")
    assert code in (0, 1), err
    assert "ns-3's own TCP on the trace's delivery schedule" in out and "the schedule allows at most" in out
    code, out, err = cli("replay", str(path), "--engine", "ns3", "--json", str(tmp_path / "r.json"))
    assert code in (0, 1), err
    assert "ns-3's own TCP on the trace's token bucket" in out and "the schedule allows" not in out
    assert "replay in ns-3: aimd_premature_loss" in out and "flow 0: ns-3 TcpLinuxReno" in out
    assert "per step (primed: the ns-3 run)" in out and "runStaticInitializers" not in out + err
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["engine"] == "ns3" and isinstance(data["find"]["holds"], bool)
    assert data["find"]["holds"] == (code == 0) == ("finding reproduced by ns-3's TCP" in out)
    assert all(F(value) >= 0 for value in data["readings"]["replay"].values())  # exact numbers


@needs_ns3
@pytest.mark.usefixtures("ns3")
def test_a_cold_trace_replays_from_a_fresh_connection() -> None:
    """A cold NewReno trace (the file's iw = 4 segments, its connection opening at step 3): the
    ns-3 run sends nothing before step 3, then its initial window, the file's start state (4
    segments, slow start from a threshold of 10^6 segments, capped at ns-3's largest), at once,
    even after a run that set another initial window; the report says when the connection
    opened and with what."""
    warm_query, warm = steady_trace(F(1), F(2), "S[T-1] >= 0")
    assert replay_ns3(warm_query, warm).concrete.flow("cwnd", 0)[0] == 2  # an initial window of 20 segments
    query = make_query({"T": 8, "R": 2, "D": 1, "buffer": 2, "start": "cold", "retransmissions": True},
                       {"name": "newreno", "iw": 4})
    result = solve(query, timeout=60)
    assert result.answer == "sat" and result.validated, result.violations
    trace, segment = result.trace, F(1, 5)  # alpha = C R / 10
    opens = trace.network.path(0).opens
    assert opens == 3 and trace.flow("cwnd", 0)[opens - 1] == 4 * segment and trace.flow("A_f", 0)[0] == 0
    run = replay_ns3(query, trace)
    sent, cwnd = run.concrete.flow("A_f", 0), run.concrete.flow("cwnd", 0)
    assert all(a == 0 for a in sent[:opens]) and sent[opens] == 4 * segment
    assert cwnd[opens - 1] == 4 * segment
    assert run.senders == ["ns-3 TcpNewReno: connection opened at step 3 (the trace's opening), its first segment "
                           "sent at step 3, initial window 4 segments"]
    assert "connection opens at step 3 with initial window 4 segments and slow-start threshold" in run.mapping[2]
    assert "TcpClassicRecovery" in run.mapping[2]


@needs_ns3
@pytest.mark.usefixtures("ns3")
def test_a_jitter_box_holds_its_flows_acks() -> None:
    """Two aimd flows, a jitter box (D = 1) on flow 1 that the trace uses: ns-3 lets flow 1's
    segments served at step s through (and so its ACKs back) at step s + hold[s], the trace's
    box's, and flow 1's ACK clock sends later than in the same run without the box; flow 0 and
    the run without the box let everything through at once."""
    query = parse_query({"network": {"T": 8, "R": 2, "D": 0, "buffer": 2, "alpha": "0.1", "flows": 2},
                         "flow": [{"name": "aimd"}, {"name": "aimd", "D": 1}],
                         "query": {"find": "sum(S_f[1][t] - So_f[1][t] for t in range(T)) >= 1"}})
    result = solve(query, timeout=60)
    assert result.answer == "sat" and result.validated, result.violations
    data = scenario(query, result.trace).data
    hold = data["flows"][1]["hold"]
    assert "hold" not in data["flows"][0] and max(hold) == 1
    run = replay_ns3(query, result.trace)
    held, _ = ns3_sim.simulate(data)
    data["flows"][1].pop("hold")
    free, _ = ns3_sim.simulate(data)
    served = held[1]["served"]
    through = [max((served[s] for s in range(t + 1) if s + hold[s] <= t), default=0) for t in range(8)]
    assert held[1]["released"] == through != served and held[0]["released"] == held[0]["served"]
    assert all(flow["released"] == flow["served"] for flow in free)
    assert run.concrete.flow("So_f", 1) == [F(b, MSS) / 10 for b in through]
    assert any(a < b for a, b in zip(held[1]["sent"], free[1]["sent"]))
    assert "ACKs held by its jitter box as the trace's were (up to 1 step)" in run.mapping[3]


def lagging_trace(buffer: F, T: int = 16) -> tuple[Any, Trace]:
    """D = 1: the server wastes no token and serves the token line C t at even steps, a step
    behind it at odd ones; the sender keeps its bytes at the token line plus ``buffer`` (its
    cwnd 1 + buffer)."""
    return hand_trace(1, buffer, "L[T-1] > 0", [F(t - t % 2) for t in range(T)], [t + buffer for t in range(T)],
                      [F(0)] * T, 1 + buffer)


@needs_ns3
@pytest.mark.usefixtures("ns3")
def test_the_bottleneck_drops_as_the_models_buffer_does() -> None:
    """The bottleneck admits a segment only within the token line plus the buffer, as the
    model's loss rule says (A - L <= C t - W + buffer at every step), however far its server
    trails the line: TcpLinuxReno, which grows its window until it loses, loses on the lagging
    trace's path and never holds more than that. A queue of fixed size (the buffer plus the
    largest backlog, all a drop-tail queue can be) holds more at the steps its server does not
    trail."""
    buffer = F(1, 2)
    query, trace = lagging_trace(buffer)
    run = replay_ns3(query, trace)
    A, L, W = (run.concrete.total(name) for name in ("A", "L", "W"))
    assert L[-1] > 0 and all(A[t] - L[t] <= t - W[t] + buffer for t in range(trace.T))
    data = scenario(query, trace).data
    data["server"]["buffer"] = None
    fixed, line = ns3_sim.simulate(data)
    admitted = [F(sent - lost, MSS) / 10 for sent, lost in zip(fixed[0]["sent"], fixed[0]["lost"])]
    assert any(admitted[t] > F(line[t]) / 10 + buffer for t in range(trace.T))


@needs_ns3
@pytest.mark.usefixtures("ns3")
def test_a_cold_aimd_finding_reproduces_in_ns3_from_a_fresh_connection() -> None:
    """aimd_cold_first_loss_below_buffer's trace (recorded: ``ccac query
    aimd_cold_first_loss_below_buffer --json``), replayed in ns-3: TcpLinuxReno, opened fresh at
    the trace's opening with one segment and no slow start, has the trace's window at every step
    from its start state through its first loss, loses in the trace's step with its window at the buffer plus one
    packet, and the query's own find holds on its run."""
    query, trace = load_result(str(DATA / "aimd_cold_first_loss.json"))
    run = replay_ns3(query, trace)
    lost = next(t for t in range(1, trace.T) if trace.total("L")[t] > trace.total("L")[t - 1])
    opens = trace.network.path(0).opens
    assert opens is not None and lost > 10
    assert run.concrete.flow("cwnd", 0)[opens - 1:lost + 1] == trace.flow("cwnd", 0)[opens - 1:lost + 1]
    assert run.concrete.total("L")[lost] > 0 == run.concrete.total("L")[lost - 1]
    assert trace.flow("cwnd", 0)[lost] == trace.constant("buffer") + trace.constant("alpha")
    assert run.reproduced is True and run.senders[0].startswith("ns-3 TcpLinuxReno: connection opened at step 2")


@needs_ns3
@pytest.mark.usefixtures("ns3")
def test_a_cold_bbr_finding_reproduces_in_ns3_from_a_fresh_connection() -> None:
    """bbr_cold_shallow_buffer_loss's trace (recorded: ``ccac query bbr_cold_shallow_buffer_loss
    --json``), replayed in ns-3: TcpBbr, opened fresh at the trace's opening with the trace's
    4-segment start, loses at least a fifth of what it sends into half a BDP of buffer within
    the trace's 10 RTTs, so the query's own find holds on its run; and it loses nothing before
    its window has passed the path's BDP plus that buffer."""
    query, trace = load_result(str(DATA / "bbr_cold_shallow_buffer_loss.json"))
    run = replay_ns3(query, trace)
    A, L = run.concrete.total("A"), run.concrete.total("L")
    assert L[-1] * 5 >= A[-1] > 0
    first = next(t for t in range(trace.T) if L[t] > 0)
    bdp_and_buffer = trace.constant("C") * trace.network.R + trace.constant("buffer")
    assert max(run.concrete.flow("cwnd", 0)[:first + 1]) > bdp_and_buffer
    assert run.reproduced is True and run.senders[0].startswith("ns-3 TcpBbr: connection opened at step 4")


@needs_ns3
@pytest.mark.usefixtures("ns3")
def test_thesis_8_2_starvation_reproduces_in_ns3_from_fresh_connections() -> None:
    """bbr_cold_unequal_jitter_starvation's 200-step trace (recorded: ``ccac query
    bbr_cold_unequal_jitter_starvation --json``), replayed in ns-3: two TcpBbr connections opened
    fresh at step 4, flow 1's ACKs held as the trace's jitter box held them, and flow 0 gets at
    least 5 times flow 1's service over the last 10 RTTs, by the query's own find. The box is the
    cause: without it the same two connections share the link within a factor of 2."""
    query, trace = load_result(str(DATA / "bbr_cold_unequal_jitter_starvation.json"))
    run = replay_ns3(query, trace)
    assert run.reproduced is True
    assert all(line.startswith("ns-3 TcpBbr: connection opened at step 4") for line in run.senders)
    last = trace.T - 1 - 10 * trace.network.R
    served = [run.concrete.flow("S_f", n)[-1] - run.concrete.flow("S_f", n)[last] for n in range(2)]
    assert served[0] >= 5 * served[1] > 0
    data = scenario(query, trace).data
    del data["flows"][1]["hold"]
    unheld, _ = ns3_sim.simulate(data)
    shares = [flow["served"][-1] - flow["served"][last] for flow in unheld]
    assert max(shares) <= 2 * min(shares)


def test_a_cca_without_ns3_implementation_is_refused(tmp_path: Path, cli: Any) -> None:
    """Copa has no ns-3 implementation: one clear error (before ns-3 is imported), exit 2."""
    path = result_file(tmp_path, "copa_steady_utilization")
    code, out, err = cli("replay", str(path), "--engine", "ns3")
    assert code == 2 and "ns-3 has no implementation of copa" in err and "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1
    code, _, err = cli("export", str(path), "--format", "ns3", "-o", str(tmp_path / "x.py"))
    assert code == 2 and "ns-3 has no implementation of copa" in err


def test_without_ns3_installed_the_engine_says_how_to_install(tmp_path: Path, cli: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = result_file(tmp_path, "aimd_premature_loss")
    monkeypatch.setitem(sys.modules, "ns", None)  # importlib.util.find_spec("ns") is None now
    code, out, err = cli("replay", str(path), "--engine", "ns3")
    assert code == 2 and err.strip() == "error: ns-3 is not installed: pip install '.[ns3]'", err
    code, _, err = cli("replay", str(path), "--engine", "ns3", "--warmup", "1")
    assert code == 2 and "--warmup is for the packet engine only" in err


@needs_ns3
def test_the_exported_script_runs_standalone(tmp_path: Path, cli: Any) -> None:
    """`ccac export --format ns3` writes a script that runs with plain `python` (no ccac on
    its path), serves the trace's token bucket as the replay does by default, and reports
    every step of the run."""
    path = result_file(tmp_path, "aimd_premature_loss")
    script = tmp_path / "premature.py"
    code, out, err = cli("export", str(path), "--format", "ns3", "-o", str(script))
    assert code == 0 and f"run: python {script}" in out, err
    text = script.read_text()
    assert "import ccac" not in text and "from ccac" not in text and "'ns3::TcpLinuxReno'" in text
    assert "'server': {'rate': " in text and "# bottleneck: the trace's token bucket" in text
    done = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"per step, in segments of {MSS} bytes") and len(lines) == 2 + 10 + 1
    assert "runStaticInitializers" not in done.stdout + done.stderr


def test_the_command_line_does_not_import_ns3() -> None:
    """Only the ns-3 engine pays ns-3's start-up: loading the CLI imports neither ns nor cppyy."""
    probe = "import sys, ccac.commands.cli; print(sorted({'ns', 'ns3', 'cppyy'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
