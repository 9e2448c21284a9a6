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
    helpers): the problems found, as "step t: ..." lines, rule by rule in the encoding's order."""
    rules = TraceCheck(cca, f)
    for t in range(f.T):
        rules.ranges(t)
        rules.rtt_estimators(t)
        rules.pacer_carry(t)
        rules.reading("recv", rules.recv[t], t, t - f.R, rules.recv_window)
        rules.max_receiving_rate(t)
        rules.pulling_sample(t)
        if t < f.R:  # what the sender did before its first ACK is unknown: any action
            continue
        rules.ack_and_rtt_sample(t)
        rules.pulling_rate(t)
        rules.rate_update(t)
        rules.sending(t)
    return rules.out


class TraceCheck:
    """One flow's trace and the problems found so far; one method per rule of ETC, each
    checking step t (the encoding's rule of the same name, :class:`ccac.ccas.etc.ETCEncoding`)."""

    def __init__(self, cca: Any, f: FlowValues) -> None:
        p, R = f.params, f.R
        self.f, self.p, self.R, self.C, self.D = f, p, R, f.C, f.D
        st = f.state
        self.s, self.Rp, self.sample, self.recv, self.rmax, self.rtt = (
            st[x] for x in ("srate", "Rp", "sample", "recv", "rmax", "rtt"))
        self.gate, self.force, self.bdp, self.carry, self.revalue = (
            st[x] for x in ("rtt_gate", "rtt_force", "bdp", "carry", "revalue"))
        self.drain, self.since, self.since_inc, self.ack, self.action = (
            st[x] for x in ("drain", "since", "since_inc", "ack", "action"))
        self.recv_window, self.rp_window = cca.recv_window(p, R), cca.rp_window(p, R)
        self.rtt_window = cca.rtt_window(p, R)
        self.tick, self.cap = cca.tick(p, R), cca.sample_cap(p, f.C, f.D)
        self.bursts = p["pacing"] == "bursts"
        self.mss_burst = p["burst"] * f.alpha
        self.out: list[str] = []

    def bad(self, t: int, msg: str) -> None:
        self.out.append(f"step {t}: {msg}")

    def reading(self, name: str, x: Fraction, t: int, end: int, k: int) -> None:
        """x is the flow's receipt rate over the k steps ending at ``end`` (history: within what
        S_f and the token line allow)."""
        S, C, D = self.f.S, self.C, self.D
        if end - k >= 0:
            if x * k != S[end] - S[end - k]:
                self.bad(t, f"{name} {x} is not the receipt rate over steps {end - k}..{end}")
        elif end >= 0:  # the encoding adds W[0] <= -S[0] = 0 to the upper end
            if not S[end] - S[0] <= x * k <= self.f.total_S[end] - C * (end - k - D):
                self.bad(t, f"{name} {x} outside what S_f and the token line allow")
        elif not 0 <= x * k <= C * (D + k):
            self.bad(t, f"{name} {x} outside [0, C*(D+k)/k]")

    def ranges(self, t: int) -> None:
        s, R = self.s, self.R
        if s[t] <= 0 or self.Rp[t] < 0 or self.drain[t] < 0 or self.since[t] < 0 or self.since_inc[t] < 0 \
                or self.rtt[t] < R:
            self.bad(t, "a state variable is out of its range (s > 0, Rp, drain, counters >= 0, rtt >= R)")

    def rtt_estimators(self, t: int) -> None:
        R, rtt, wrtt = self.R, self.rtt, self.rtt_window
        for name, est in (("rtt_gate", self.gate), ("rtt_force", self.force)):
            if est[t] < R:
                self.bad(t, f"{name} {est[t]} below the minimum RTT R")
            if t >= 1 and t - wrtt + 1 >= 0:
                cands = [est[t - 1]] + [rtt[u] for u in range(t - wrtt + 1, t + 1)]
                if not min(cands) <= est[t] <= max(cands):
                    self.bad(t, f"{name} {est[t]} outside its previous value and the window's samples")

    def pacer_carry(self, t: int) -> None:
        carry = self.carry
        if self.bursts:
            if not 0 <= carry[t] <= self.mss_burst + self.tick * self.s[t]:
                self.bad(t, f"carry {carry[t]} outside [0, N*MSS + tick * s]")
        elif carry[t] != 0 or self.revalue[t] != 0:
            self.bad(t, "fluid pacing has no carry")

    def max_receiving_rate(self, t: int) -> None:
        p, R, C, D, w, recv, rmax = self.p, self.R, self.C, self.D, self.recv_window, self.recv, self.rmax
        window = [u for u in range(t - p["rmax_window"] * R + 1, t + 1)]
        readings = [recv[u] for u in window if u >= 0]
        top = C * (D + w) / w if any(u < 0 for u in window) else max(readings)
        low = 0 if any(u < 0 for u in window) else min(readings)
        if not low <= rmax[t] <= max([top] + readings):
            self.bad(t, f"rmax {rmax[t]} outside the readings of its window [{low}, {top}]")

    def pulling_sample(self, t: int) -> None:
        p, C, sample, rmax, cap = self.p, self.C, self.sample, self.rmax, self.cap
        mode = p["pulling"]
        if mode == "burst":
            fallback = p["sparse_fallback"] and sample[t] == p["fallback_gain"] * rmax[t]
            if not fallback and not (sample[t] > 0 and (cap is None or sample[t] <= cap)):
                self.bad(t, f"burst sample {sample[t]} outside (0, {cap}] and not the fallback")
        elif mode == "coarse":
            self.reading("sample", sample[t], t, t - self.R, p["burst_steps"])
        elif mode == "ideal":
            # Eq. 5/8: C for one flow, within [C/2, C] with cross traffic (the check cannot
            # tell how many flows share the path, so it accepts the band).
            if not C / 2 <= sample[t] <= C:
                self.bad(t, f"ideal pulling sample {sample[t]} is not Eq. 5's value")
        elif sample[t] != p["fallback_gain"] * rmax[t]:
            self.bad(t, "fallback sample is not fallback_gain * rmax")

    def ack_and_rtt_sample(self, t: int) -> None:
        S, R, s, ack, rtt, bdp = self.f.S, self.R, self.s, self.ack, self.rtt, self.bdp
        if t - R - 1 >= 0 and ack[t] != (S[t - R] > S[t - R - 1]):
            self.bad(t, f"ack flag {ack[t]} but S_f[{t - R}] vs S_f[{t - R - 1}] says otherwise")
        lo, hi = self.f.delay_range(t - R)
        if ack[t]:
            if rtt[t] < R + lo or (hi is not None and rtt[t] > R + hi):
                self.bad(t, f"rtt {rtt[t]} outside R + the delay range [{lo}, {hi}]")
        elif rtt[t] != rtt[t - 1]:
            self.bad(t, "a new RTT sample without an ACK")
        if bdp[t] < s[t] * R or (ack[t] and hi is not None and bdp[t] > s[t] * (R + hi)):
            self.bad(t, f"bdp {bdp[t]} outside [s*R, s*(R + the sample's upper end)]")

    def pulling_rate(self, t: int) -> None:
        p, Rp, sample, rmax, ack, wrp = self.p, self.Rp, self.sample, self.rmax, self.ack, self.rp_window
        if not ack[t]:
            if Rp[t] != Rp[t - 1]:
                self.bad(t, "Rp changed without an ACK")
            return
        if p["pulling"] == "fallback":
            if Rp[t] != p["fallback_gain"] * rmax[t]:
                self.bad(t, "Rp is not fallback_gain * rmax")
            return
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
            self.bad(t, f"Rp {Rp[t]} not what the {p['filter']} filter allows")

    def rate_update(self, t: int) -> None:
        """The action, rate, drain and timers the rules give at t (the acceleration's new rate
        re-checked against Eq. 1 to 60 digits, :func:`check_elastic`)."""
        p, R, f, s, drain, since, since_inc = self.p, self.R, self.f, self.s, self.drain, self.since, self.since_inc
        rtt, recv, Rp = self.rtt, self.recv, self.Rp
        draining = drain[t - 1] > 0
        elapsed = since[t - 1] + 1
        elapsed_f = elapsed if p["force_from"] == "update" else since_inc[t - 1] + 1
        drtt = rtt[t] - rtt[t - p["drtt_lag"]]
        go = (drtt <= 0 if p["accel_on_equal"] else drtt < 0) or elapsed_f >= p["force_after"] * self.force[t]
        eligible = self.ack[t] and not draining and elapsed >= self.gate[t]
        if draining:
            want = (DRAIN, s[t - 1], max(drain[t - 1] - (1 - p["eta"]) * s[t - 1], Fraction(0)), 0,
                    since_inc[t - 1] + 1)
        elif eligible and go:
            want = (ACCELERATE, s[t], Fraction(0), 0, 0)
            kept = p["clamp"] and Rp[t] < s[t - 1] and s[t] == s[t - 1]
            if not kept:
                self.out.extend(f"step {t}: {m}" for m in check_elastic(p, s[t - 1], Rp[t], s[t]))
        elif eligible and drtt >= p["theta"]:
            new = (s[t - 1] + recv[t]) / 2
            if p["clamp"] and recv[t] > s[t - 1] and s[t] == s[t - 1]:
                new = s[t - 1]
            excess = f.A[t - 1] - f.S[t - R] - f.Ld[t] - self.bdp[t]
            want = (DECELERATE, new, max(excess, Fraction(0)) if p["drain"] else Fraction(0), 0,
                    since_inc[t - 1] + 1)
        else:
            want = (HOLD, s[t - 1], Fraction(0), elapsed, since_inc[t - 1] + 1)
        got = (self.action[t], s[t], drain[t], since[t], since_inc[t])
        if got != want:
            self.bad(t, f"ETC step (action, s, drain, since, since_inc) = {_show(got)}, rules give {_show(want)}")

    def sending(self, t: int) -> None:
        f, R, s, drain, carry, revalue = self.f, self.R, self.s, self.drain, self.carry, self.revalue
        draining = drain[t - 1] > 0
        paced = s[t] - (drain[t - 1] - drain[t]) if draining else s[t]
        expected_sent = paced + carry[t - 1] - carry[t] + revalue[t] if self.bursts else paced
        sent = f.rate[t] if f.rate is not None else None
        if sent != expected_sent:
            self.bad(t, f"sent {sent} but ETC sends {expected_sent}")
        if self.bursts:
            changed = draining or self.action[t] != HOLD or (drain[t - 2] > 0 if t >= 2 else True)
            span = 2 * self.tick * max(s[t], s[t - 1])
            if carry[t - 1] + revalue[t] < 0 or (revalue[t] != 0 and not changed) or abs(revalue[t]) > span:
                self.bad(t, f"revalue {revalue[t]}: pending bytes re-valued without a rate change or beyond "
                            f"2 ticks of the rate")
        if f.cwnd[t] != f.A[t - 1] + expected_sent - f.S[t - R] - f.Ld[t]:
            self.bad(t, "cwnd is not the bytes in flight after sending")


def _show(values: tuple) -> str:
    return "(" + ", ".join(str(v) if not isinstance(v, Fraction) else f"{float(v):.6g}" for v in values) + ")"
