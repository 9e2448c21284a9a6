"""The independent check of ETC's traces (:meth:`ccac.ccas.etc.ETC.check`): every rule of the
encoding re-checked on a trace's exact values, without z3, and the names the encoding and the
check share (the pulling, pacing and filter modes and the action codes). A module of its own so
that ``ccac.ccas.etc`` holds the encoding (imports: etc -> elastic.check -> elastic.enclosure, acyclic).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ccac.ccas.interface import FlowValues
from ccac.ccas.elastic.enclosure import check_elastic

PULLING = ("burst", "coarse", "ideal", "fallback")
PACING = ("bursts", "fluid")
FILTERS = ("hull", "latest", "floor")
HOLD, ACCELERATE, DECELERATE, DRAIN, HISTORY = 0, 1, 2, 3, -1


def check(cca: Any, f: FlowValues) -> list[str]:
    """The rules of ETC (ccac.ccas.etc's module docstring) checked on one flow's values of a trace,
    in exact arithmetic, without the encoding (``cca``: the ETC instance, for its parameter
    helpers): the problems found, as "step t: ..." lines."""
    p, R, T, C, D = f.params, f.R, f.T, f.C, f.D
    S, A, Ld = f.S, f.A, f.Ld
    st = f.state
    s, Rp, sample, recv, rmax, rtt = (st[x] for x in ("srate", "Rp", "sample", "recv", "rmax", "rtt"))
    gate, force, bdp, carry, revalue = (st[x] for x in ("rtt_gate", "rtt_force", "bdp", "carry", "revalue"))
    drain, since, since_inc, ack, action = (st[x] for x in ("drain", "since", "since_inc", "ack", "action"))
    w, wrp, wrtt = cca.recv_window(p, R), cca.rp_window(p, R), cca.rtt_window(p, R)
    tick, cap = cca.tick(p, R), cca.sample_cap(p, C, D)
    bursts = p["pacing"] == "bursts"
    mss_burst = p["burst"] * f.alpha
    out: list[str] = []

    def bad(t: int, msg: str) -> None:
        out.append(f"step {t}: {msg}")

    def check_reading(name: str, x: Fraction, t: int, end: int, k: int) -> None:
        if end - k >= 0:
            if x * k != S[end] - S[end - k]:
                bad(t, f"{name} {x} is not the receipt rate over steps {end - k}..{end}")
        elif end >= 0:  # the encoding adds W[0] <= -S[0] = 0 to the upper end
            if not S[end] - S[0] <= x * k <= f.total_S[end] - C * (end - k - D):
                bad(t, f"{name} {x} outside what S_f and the token line allow")
        elif not 0 <= x * k <= C * (D + k):
            bad(t, f"{name} {x} outside [0, C*(D+k)/k]")

    for t in range(T):
        if s[t] <= 0 or Rp[t] < 0 or drain[t] < 0 or since[t] < 0 or since_inc[t] < 0 or rtt[t] < R:
            bad(t, "a state variable is out of its range (s > 0, Rp, drain, counters >= 0, rtt >= R)")
        for name, est in (("rtt_gate", gate), ("rtt_force", force)):
            if est[t] < R:
                bad(t, f"{name} {est[t]} below the minimum RTT R")
            if t >= 1 and t - wrtt + 1 >= 0:
                cands = [est[t - 1]] + [rtt[u] for u in range(t - wrtt + 1, t + 1)]
                if not min(cands) <= est[t] <= max(cands):
                    bad(t, f"{name} {est[t]} outside its previous value and the window's samples")
        if bursts:
            if not 0 <= carry[t] <= mss_burst + tick * s[t]:
                bad(t, f"carry {carry[t]} outside [0, N*MSS + tick * s]")
        elif carry[t] != 0 or revalue[t] != 0:
            bad(t, "fluid pacing has no carry")
        check_reading("recv", recv[t], t, t - R, w)
        window = [u for u in range(t - p["rmax_window"] * R + 1, t + 1)]
        readings = [recv[u] for u in window if u >= 0]
        top = C * (D + w) / w if any(u < 0 for u in window) else max(readings)
        low = 0 if any(u < 0 for u in window) else min(readings)
        if not low <= rmax[t] <= max([top] + readings):
            bad(t, f"rmax {rmax[t]} outside the readings of its window [{low}, {top}]")
        mode = p["pulling"]
        if mode == "burst":
            fallback = p["sparse_fallback"] and sample[t] == p["fallback_gain"] * rmax[t]
            if not fallback and not (sample[t] > 0 and (cap is None or sample[t] <= cap)):
                bad(t, f"burst sample {sample[t]} outside (0, {cap}] and not the fallback")
        elif mode == "coarse":
            check_reading("sample", sample[t], t, t - R, p["burst_steps"])
        elif mode == "ideal":
            # Eq. 5/8: C for one flow, within [C/2, C] with cross traffic (the check cannot
            # tell how many flows share the path, so it accepts the band).
            if not C / 2 <= sample[t] <= C:
                bad(t, f"ideal pulling sample {sample[t]} is not Eq. 5's value")
        elif sample[t] != p["fallback_gain"] * rmax[t]:
            bad(t, "fallback sample is not fallback_gain * rmax")
        if t < R:  # what the sender did before its first ACK is unknown: any action
            continue

        # ACK, RTT sample, BDP.
        if t - R - 1 >= 0 and ack[t] != (S[t - R] > S[t - R - 1]):
            bad(t, f"ack flag {ack[t]} but S_f[{t - R}] vs S_f[{t - R - 1}] says otherwise")
        lo, hi = f.delay_range(t - R)
        if ack[t]:
            if rtt[t] < R + lo or (hi is not None and rtt[t] > R + hi):
                bad(t, f"rtt {rtt[t]} outside R + the delay range [{lo}, {hi}]")
        elif rtt[t] != rtt[t - 1]:
            bad(t, "a new RTT sample without an ACK")
        if bdp[t] < s[t] * R or (ack[t] and hi is not None and bdp[t] > s[t] * (R + hi)):
            bad(t, f"bdp {bdp[t]} outside [s*R, s*(R + the sample's upper end)]")

        # Pulling rate.
        if not ack[t]:
            if Rp[t] != Rp[t - 1]:
                bad(t, "Rp changed without an ACK")
        elif mode == "fallback":
            if Rp[t] != p["fallback_gain"] * rmax[t]:
                bad(t, "Rp is not fallback_gain * rmax")
        else:
            cap_k = p["k"] * rmax[t]
            if p["filter"] == "hull":
                if t - wrp + 1 < 0:
                    ok = True  # the window reaches samples before the trace
                else:
                    cands = [Rp[t - 1], sample[t], rmax[t]] + [sample[u] for u in range(t - wrp + 1, t) if ack[u]]
                    ok = min(cands + ([cap_k] if p["stable"] else [])) <= Rp[t] <= max(cands)
            else:
                y = sample[t] if p["filter"] == "latest" else max(sample[t], rmax[t])
                ok = Rp[t] == y or (p["stable"] and Rp[t] == cap_k and cap_k <= y)
            if not ok:
                bad(t, f"Rp {Rp[t]} not what the {p['filter']} filter allows")

        # RateUpdate.
        draining = drain[t - 1] > 0
        elapsed = since[t - 1] + 1
        elapsed_f = elapsed if p["force_from"] == "update" else since_inc[t - 1] + 1
        drtt = rtt[t] - rtt[t - p["drtt_lag"]]
        go = (drtt <= 0 if p["accel_on_equal"] else drtt < 0) or elapsed_f >= p["force_after"] * force[t]
        eligible = ack[t] and not draining and elapsed >= gate[t]
        if draining:
            want = (DRAIN, s[t - 1], max(drain[t - 1] - (1 - p["eta"]) * s[t - 1], Fraction(0)), 0,
                    since_inc[t - 1] + 1)
        elif eligible and go:
            want = (ACCELERATE, s[t], Fraction(0), 0, 0)
            kept = p["clamp"] and Rp[t] < s[t - 1] and s[t] == s[t - 1]
            if not kept:
                out.extend(f"step {t}: {m}" for m in check_elastic(p, s[t - 1], Rp[t], s[t]))
        elif eligible and drtt >= p["theta"]:
            new = (s[t - 1] + recv[t]) / 2
            if p["clamp"] and recv[t] > s[t - 1] and s[t] == s[t - 1]:
                new = s[t - 1]
            excess = A[t - 1] - S[t - R] - Ld[t] - bdp[t]
            want = (DECELERATE, new, max(excess, Fraction(0)) if p["drain"] else Fraction(0), 0,
                    since_inc[t - 1] + 1)
        else:
            want = (HOLD, s[t - 1], Fraction(0), elapsed, since_inc[t - 1] + 1)
        got = (action[t], s[t], drain[t], since[t], since_inc[t])
        if got != want:
            bad(t, f"ETC step (action, s, drain, since, since_inc) = {_show(got)}, rules give {_show(want)}")
        paced = s[t] - (drain[t - 1] - drain[t]) if draining else s[t]
        expected_sent = paced + carry[t - 1] - carry[t] + revalue[t] if bursts else paced
        sent = f.rate[t] if f.rate is not None else None
        if sent != expected_sent:
            bad(t, f"sent {sent} but ETC sends {expected_sent}")
        if bursts:
            changed = draining or action[t] != HOLD or (drain[t - 2] > 0 if t >= 2 else True)
            span = 2 * tick * max(s[t], s[t - 1])
            if carry[t - 1] + revalue[t] < 0 or (revalue[t] != 0 and not changed) or abs(revalue[t]) > span:
                bad(t, f"revalue {revalue[t]}: pending bytes re-valued without a rate change or beyond "
                       f"2 ticks of the rate")
        if f.cwnd[t] != A[t - 1] + expected_sent - S[t - R] - Ld[t]:
            bad(t, "cwnd is not the bytes in flight after sending")
    return out


def _show(values: tuple) -> str:
    return "(" + ", ".join(str(v) if not isinstance(v, Fraction) else f"{float(v):.6g}" for v in values) + ")"
