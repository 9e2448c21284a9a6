"""The mutation check's mutants: single-point edits that make a CCA encoding unsound (or a claim
of ``ccac synthesize`` that rests on one).

Each :class:`Mutant` replaces one snippet of an encoding's source by a stricter one: the
mutant excludes runs of the algorithm the encoding must admit (a bound tightened, a reading of
the paper dropped, a sample or a timer moved). The conformance tests, which pin concrete runs
(of the encoding's own sender and of the paper-faithful one) and ask the encoding to admit
them, must fail on every mutant; ``tests/test_mutation.py`` (marked slow) runs them, each in
its own pytest process with :mod:`mutation_plugin` loading the mutated module, and reports the
mutants that survive. Killing a mutant shows that the tests can fail where the encoding would
be wrong; a survivor names a freedom of the encoding that no test exercises.

Snippets must occur in the module's source (at ``occurrence``, counting from 1); a mutant
whose snippet is gone stops the run, so the list cannot rot silently. Equivalent edits (ones
that exclude no real run) do not belong here: a survivor is a finding, not noise.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    module: str
    what: str
    old: str
    new: str
    occurrence: int = 1

    def apply(self, source: str) -> str:
        """``source`` with this mutant's edit; ValueError if the snippet is not where it was."""
        at = -1
        for _ in range(self.occurrence):
            at = source.find(self.old, at + 1)
            if at < 0:
                raise ValueError(f"mutant {self.name}: {self.old!r} does not occur {self.occurrence} "
                                 f"time(s) in {self.module}")
        return source[:at] + self.new + source[at + len(self.old):]


GRADIENT, RTT, ETC = "ccac.ccas.pcc.gradient", "ccac.ccas.pcc.rtt", "ccac.ccas.etc"
ALLEGRO = "ccac.ccas.allegro"
LANGUAGE = "ccac.ccas.language"
PER_ACK = "ccac.encode.per_ack"
VALIDATE = "ccac.solving.validate"
CEGIS = "ccac.synthesis.cegis"
CUBES = "ccac.analysis.cubes"
PATH_SERVER = "ccac.models.path_server"
SOLVE = "ccac.solving.solve"

#: the test files that check each module's encoding against concrete runs
CONFORMANCE = {
    GRADIENT: ("tests/test_vivace.py", "tests/test_proteus.py"),
    RTT: ("tests/test_pcc.py", "tests/test_vivace.py", "tests/test_proteus.py"),
    ETC: ("tests/test_etc.py",),
    ALLEGRO: ("tests/test_allegro.py",),
    LANGUAGE: ("tests/test_language.py", "tests/test_ccmatic.py"),
    PER_ACK: ("tests/test_language_per_ack.py",),
    VALIDATE: ("tests/test_synthesis.py",),
    CEGIS: ("tests/test_synthesis.py",),
    CUBES: ("tests/test_cubes.py",),
    SOLVE: ("tests/test_periodic.py", "tests/test_cubes.py"),
    PATH_SERVER: ("tests/test_packets.py", "tests/test_oracle.py"),
}

MUTANTS: tuple[Mutant, ...] = (
    Mutant("wait_base_only", GRADIENT, "after the probes the sender waits at the base rate only (not the last probe's)",
           'ctx.add(z3.Implies(phase[t] == W, waiting[p["wait"]]))',
           'ctx.add(z3.Implies(phase[t] == W, waiting["base"]))'),
    Mutant("amplifier_single", GRADIENT, "the confidence amplifier is m(tau) only (not m(tau+1) or m(0) = 0)",
           "ms = {amplifier(j), amplifier(j + 1)} | ({Fraction(0)} if j == 0 else set())",
           "ms = {amplifier(j)}"),
    Mutant("cap_before_raise", GRADIENT, "a clipped increase uses omega before k is raised only",
           "up_base = z3.Or(base[t] == (1 + om) * r, base[t] == (1 + om2) * r)",
           "up_base = base[t] == (1 + om) * r"),
    Mutant("clip_keeps_k", GRADIENT, "a clipped move leaves the boundary counter k unchanged",
           "clipped_rule = [big, kk[t] == j + 1 if j + 1 <= k_cap else kk[t] == k_cap]",
           "clipped_rule = [big, kk[t] == j]"),
    Mutant("no_idle", GRADIENT, "a zero gradient still takes a step (the counters move)",
           "z3.Or(z3.And(*step), idle)",
           "z3.And(*step)"),
    Mutant("mean_of_all_pairs", GRADIENT, "the step uses the mean of all pairs' gradients only",
           "z3.Or(*(gamma_used[t] >= gam[k][t] for k in range(K))),",
           "gamma_used[t] * K == z3.Sum(*(gam[k][t] for k in range(K))),"),
    Mutant("no_defer", GRADIENT, "a decision is taken at the first MI boundary after the fate is known",
           "z3.Implies(z3.And(boundary, fate, defer[t - 1]), decide),",
           "z3.Implies(z3.And(boundary, fate), decide),"),
    Mutant("timer_not_from_history", GRADIENT, "bytes from before the trace cannot fire the MI timer",
           "for u in range(t)] + [unresolved[0]]",
           "for u in range(t)]"),
    Mutant("timer_late", GRADIENT, "the MI timer fires one step later than it can",
           "expired = [z3.And(unresolved[u], u - pos[u] <= t - TO)",
           "expired = [z3.And(unresolved[u], u - pos[u] <= t - TO - 1)"),
    Mutant("halve_base_only", GRADIENT, "a timeout halves the base rate only, not the rate being sent",
           "halved = z3.Or(base[t] * 2 == base[t - 1], base[t] * 2 == ctx.rate[t - 1])",
           "halved = base[t] * 2 == base[t - 1]"),
    Mutant("band_direction_flipped", GRADIENT, "below the link rate the samples are at most the step-end queue's delay",
           "z3.Implies(ctx.rate[t] <= C, rtt_lo[t] >= qdelay[t]),",
           "z3.Implies(ctx.rate[t] <= C, rtt_hi[t] <= qdelay[t]),"),
    Mutant("slope_floor", GRADIENT, "an MI's RTT gradient is at least -1/2 (the RTT falls at most half as fast as time)",
           "signal = [g_raw[t] >= -1,",
           "signal = [g_raw[t] >= -Fraction(1, 2),"),
    Mutant("deviation_half", GRADIENT, "an MI's RTT deviation is at most a quarter of its samples' span",
           "s_raw[t] <= (hull_hi[t] - hull_lo[t]) / 2]",
           "s_raw[t] <= (hull_hi[t] - hull_lo[t]) / 4]"),
    Mutant("loss_total", GRADIENT, "the loss signal is the MI's lost bytes, not per step",
           "signal = [z3.Implies(is_M, lm_now[t] * M == cur_lost[t])]",
           "signal = [z3.Implies(is_M, lm_now[t] == cur_lost[t])]"),
    Mutant("tolerance_halved", GRADIENT, "Proteus' regression tolerance needs twice the error",
           "signal.append(z3.Implies(z3.And(is_M, tol[t]), _abs(g_raw[t]) * M < s_raw[t]))",
           "signal.append(z3.Implies(z3.And(is_M, tol[t]), _abs(g_raw[t]) * 2 * M < s_raw[t]))"),
    Mutant("proteus_p_negative_gradient", GRADIENT, "Proteus-P keeps negative RTT gradients (no max(0, g))",
           "g_eff = _max(g_eff, 0)",
           "g_eff = g_eff"),
    Mutant("fate_without_detection", GRADIENT,
           "a round's fate is known once its bytes are served, before its losses are detected",
           "ctx.add(self.fate_var[t] == z3.And(ctx.S[t - R] >= self.mark_adm[W - 1][t - 1],\n"
           "                                               ctx.Ld[t] >= self.mark_L[W - 1][t - 1]))",
           "ctx.add(self.fate_var[t] == z3.And(ctx.S[t - R] >= self.mark_adm[W - 1][t - 1]))"),
    Mutant("kappa_high_only", GRADIENT, "the throughput term's enclosure is its upper end only",
           "du[k][t] >= kap_lo * power[t - 1] - zprod[k][t] - cK * lam,",
           "du[k][t] >= kap_hi * power[t - 1] - zprod[k][t] - cK * lam,"),
    Mutant("mi_cap_no_jitter", GRADIENT, "a finite buffer's MI cap leaves out the jitter D",
           "top, bounded = R + math.ceil(buffer / C) + D, True",
           "top, bounded = R + math.ceil(buffer / C), True"),
    Mutant("long_mi_lattice", GRADIENT, "the slope bound of MIs longer than the cap is a third tighter",
           "spread = long_lattice(M_hi) * (hull_hi[t] - hull_lo[t])",
           "spread = long_lattice(M_hi) * (hull_hi[t] - hull_lo[t]) * 2 / 3"),
    Mutant("history_unpaced", GRADIENT, "before the first decision the flow sends at the base rate",
           "ctx.add(ctx.A[t] - ctx.A[t - 1] == ctx.rate[t])",
           "ctx.add(ctx.A[t] - ctx.A[t - 1] == self.base[t])"),
    Mutant("even_band_low_is_max", RTT, "on an even queue the samples' band starts at the larger end queue",
           "low = z3.If(q0 <= q1, q0, q1)",
           "low = z3.If(q0 <= q1, q1, q0)"),
    Mutant("uneven_band_no_admitted", RTT, "with cross traffic the band's top leaves out the step's admitted bytes",
           "highs = [q0 + admitted_in_step, q1 + C]",
           "highs = [q0, q1 + C]"),
    Mutant("band_no_jitter", RTT, "the samples' band leaves out the jitter D",
           "    return low / C, high / C + D\n\n\ndef band_numbers",
           "    return low / C, high / C\n\n\ndef band_numbers"),
    Mutant("weights_symmetric", RTT, "the negative least-squares weights equal the positive ones (no reflection)",
           "return positive, tuple(reversed(positive))",
           "return positive, positive"),
    # No mutant drops the weight tables' tail bound (lattices of 30 packets or more): on every
    # interval of up to 12 steps it never sets an entry (tests/test_pcc.py:
    # test_the_tail_bound_only_guards), so dropping it would exclude no run there.

    Mutant('est_no_prev', ETC, 'RTT estimators may not keep their previous value (drops SRTT-like and lifetime-min estimators)',
           'hull(gate[t], [gate[t - 1]] + window)',
           'hull(gate[t], window)'),
    Mutant('est_window_short', ETC, 'RTT estimators see one sample fewer than the window',
           'window = [rtt[u] for u in range(t - wrtt + 1, t + 1)]',
           'window = [rtt[u] for u in range(t - wrtt + 2, t + 1)]'),
    Mutant('gate_strict', ETC, 'the update gate needs strictly more than one RTT',
           'elapsed >= gate[t])',
           'elapsed > gate[t])'),
    Mutant('gate_floor', ETC, "the gate's RTT estimate is above the minimum RTT",
           'gate[t] >= R, force[t] >= R)',
           'gate[t] >= R + 1, force[t] >= R)'),
    Mutant('force_uses_gate', ETC, "the 8-RTT timer reads the gate's estimate",
           'elapsed_f >= p["force_after"] * force[t])',
           'elapsed_f >= p["force_after"] * gate[t])'),
    Mutant('force_strict', ETC, 'the 8-RTT timer needs strictly more than 8 RTTs',
           'elapsed_f >= p["force_after"] * force[t])',
           'elapsed_f > p["force_after"] * force[t])'),
    Mutant('bdp_exact_R', ETC, "the drain's BDP uses the minimum RTT R exactly",
           'excess = inflight - bdp[t]',
           'excess = inflight - srate[t] * R'),
    Mutant('bdp_upper_shift', ETC, 'the BDP enclosure loses its top step of delay',
           'bdp[t] <= srate[t] * (R + kk)))',
           'bdp[t] <= srate[t] * (R + kk - 1)))'),
    Mutant('bdp_lower_strict', ETC, 'the BDP is strictly above s R',
           'bdp[t] >= srate[t] * R)',
           'bdp[t] > srate[t] * R)'),
    Mutant('cap_strict', ETC, 'a pulling sample may not reach the line-rate cap',
           '[sample[t] <= cap] if cap',
           '[sample[t] < cap] if cap'),
    Mutant('sample_floor', ETC, 'pulling samples are at least C/8',
           'in_range = z3.And(sample[t] > 0,',
           'in_range = z3.And(sample[t] > C / 8,'),
    Mutant('no_fallback', ETC, 'no sparse-feedback fallback Rp = 1.25 rmax',
           'ctx.add(z3.Or(in_range, sample[t] == p["fallback_gain"] * rmax[t]) if p["sparse_fallback"] else in_range)',
           'ctx.add(in_range)'),
    Mutant('rp_window_short', ETC, 'the Rp hull sees one sample fewer than its window',
           'older = [None if u < 0 else (ack[u], sample[u]) for u in range(t - wrp + 1, t)]',
           'older = [None if u < 0 else (ack[u], sample[u]) for u in range(t - wrp + 2, t)]'),
    Mutant('rp_no_old', ETC, 'Rp may not keep its previous value',
           'new_rp = self.hull(Rp[t], [Rp[t - 1], sample[t], rmax[t]] + older,',
           'new_rp = self.hull(Rp[t], [sample[t], rmax[t]] + older,'),
    Mutant('rp_no_rmax', ETC, 'Rp may not be corrected to rmax',
           'new_rp = self.hull(Rp[t], [Rp[t - 1], sample[t], rmax[t]] + older,',
           'new_rp = self.hull(Rp[t], [Rp[t - 1], sample[t]] + older,'),
    Mutant('revalue_no_drain', ETC, 'no retroactive revaluation of pending bytes at drain steps',
           'changed = z3.Or(draining, accel, decel, drain[t - 2] > 0 if t >= 2 else True)',
           'changed = z3.Or(accel, decel, drain[t - 2] > 0 if t >= 2 else True)'),
    Mutant('revalue_no_decel', ETC, 'no retroactive revaluation at decelerations',
           'changed = z3.Or(draining, accel, decel, drain[t - 2] > 0 if t >= 2 else True)',
           'changed = z3.Or(draining, accel, drain[t - 2] > 0 if t >= 2 else True)'),
    Mutant('revalue_span', ETC, 'revaluation spans one timer tick instead of two',
           'span = 2 * self.tick',
           'span = self.tick'),
    Mutant('revalue_dropped', ETC, 'no retroactive revaluation at all',
           'ctx.add(sent == paced + carry[t - 1] - carry[t] + rv,',
           'ctx.add(sent == paced + carry[t - 1] - carry[t], rv == 0,'),
    Mutant('carry_index', ETC, 'the burst carry is not carried between steps',
           'ctx.add(sent == paced + carry[t - 1] - carry[t] + rv,',
           'ctx.add(sent == paced + carry[t - 1] - carry[t - 1] + rv,'),
    Mutant('no_clamp_up', ETC, 'no clamp reading of Eq. 1 (keep s when Rp < s)',
           'elastic = z3.Or(elastic, z3.And(rp < s0, up == s0))',
           'elastic = elastic'),
    Mutant('no_clamp_down', ETC, 'no clamp reading of the deceleration (keep s when r > s)',
           'halve = z3.Or(halve, z3.And(recv[t] > s0, up == s0))',
           'halve = halve'),
    Mutant('rtt_band_always', ETC, 'a new RTT sample at every step, ACK or not',
           'ctx.add(z3.If(ack[t], all_of(*band), rtt[t] == rtt[t - 1]), bdp[t] >= srate[t] * R)',
           'ctx.add(all_of(*band), bdp[t] >= srate[t] * R)'),
    Mutant('theta_strict', ETC, 'decelerate only when dRTT is strictly above theta',
           'drtt >= p["theta"])',
           'drtt > p["theta"])'),
    Mutant('falling_strict', ETC, 'accelerate only on a strictly falling RTT, whatever accel_on_equal says',
           'falling = drtt <= 0 if p["accel_on_equal"] else drtt < 0',
           'falling = drtt < 0 if p["accel_on_equal"] else drtt < 0'),
    Mutant('recv_shift', ETC, 'the receiving rate reads one step too early',
           'reading(recv[t], t - R, w)',
           'reading(recv[t], t - R - 1, w)'),
    Mutant('rmax_window_short', ETC, 'the rmax window is one step short',
           'window = range(t - p["rmax_window"] * R + 1, t + 1)',
           'window = range(t - p["rmax_window"] * R + 2, t + 1)'),
    Mutant('ack_ge', ETC, 'an ACK at every step, bytes acknowledged or not',
           'ctx.add(ack[t] == (S[t - R] > S[t - R - 1]))',
           'ctx.add(ack[t] == (S[t - R] >= S[t - R - 1]))'),
    Mutant('drain_rate', ETC, 'the drain withholds bytes twice as fast',
           'drain[t] == _max(drain[t - 1] - (1 - p["eta"]) * srate[t], 0)))',
           'drain[t] == _max(drain[t - 1] - (1 - p["eta"]) * srate[t] * 2, 0)))'),
    Mutant('chord_cell', ETC, "Eq. 1's chord enclosure skips its first cell",
           'cell = z3.And(ge[i - 1], z3.Not(ge[i])) if i > 0 else z3.Not(ge[0])',
           'cell = z3.And(ge[i - 1], z3.Not(ge[i])) if i > 1 else z3.Not(ge[0])'),
    Mutant('tangent_drop', ETC, "Eq. 1's tangent bounds tightened by s/1000",
           'bounds = [up <= a * s0 + b * rp for a, b in enc.tangents]',
           'bounds = [up <= a * s0 + b * rp - s0 / 1000 for a, b in enc.tangents]'),
    Mutant('changed_prev_drain', ETC, 'no revaluation at step 1 (the step before it may have drained)',
           'drain[t - 2] > 0 if t >= 2 else True)',
           'drain[t - 2] > 0 if t >= 2 else False)'),
    Mutant('carry_no_tick2', ETC, "the burst carry may not hold a tick's worth of the rate",
           'ctx.add(carry[t] >= 0, carry[t] <= mss_burst + tick * srate[t])',
           'ctx.add(carry[t] >= 0, carry[t] <= mss_burst)'),
    Mutant('carry_positive2', ETC, 'the burst carry is never empty',
           'ctx.add(carry[t] >= 0, carry[t] <=',
           'ctx.add(carry[t] > 0, carry[t] <='),
    Mutant("allegro_no_skip_r0", ALLEGRO, "a decision's move always sends an MI at r_0 first (adjust_first 0 only)",
           'skip0 = ctx.series("allegro_skip_r0", "bool")',
           'skip0 = [z3.BoolVal(False)] * T'),
    Mutant("allegro_no_gap", ALLEGRO, "decision trials always back to back (no wait for a trial's fate: pipeline 0 only)",
           "z3.And(z3.Not(fate[t]), phase[t] == WAIT, nxt[t] == pp + 1,",
           "z3.And(False, phase[t] == WAIT, nxt[t] == pp + 1,"),
    Mutant("allegro_gap_first_only", ALLEGRO, "a gap (waiting for a trial's fate) only after a round's first trial",
           "z3.And(z3.Not(fate[t]), phase[t] == WAIT, nxt[t] == pp + 1,",
           "z3.And(z3.Not(fate[t]), pp == 0, phase[t] == WAIT, nxt[t] == pp + 1,"),
    Mutant("allegro_up_on_one_pair", ALLEGRO, "decision making moves up when a single pair favours the higher rate",
           "go_up = z3.If(across[t], z3.And(*(plus[i] > minus[j] for i in range(2) for j in range(2))),\n"
           "                      z3.And(plus[0] > minus[0], plus[1] > minus[1]))",
           "go_up = z3.Or(plus[0] > minus[0], plus[1] > minus[1])"),

    Mutant("lang_lost_late", LANGUAGE, "the encoding reads detected losses one step late",
           '"lost": Ld[t],',
           '"lost": Ld[t - 1] if t else Ld[t],'),
    Mutant("lang_acked_shifted", LANGUAGE, "the encoding's newly_acked spans two steps of ACKs",
           'out["newly_acked"] = S[t - R] - S[t - R - 1]',
           'out["newly_acked"] = S[t - R] - S[t - R - 2] if t >= R + 2 else S[t - R] - S[t - R - 1]'),
    Mutant("lang_between_open", LANGUAGE, "between(lo, hi) leaves out hi",
           "z3.And(args[0] <= v, v <= args[1])",
           "z3.And(args[0] <= v, v < args[1])"),
    Mutant("lang_min_c_short", LANGUAGE, "the belief min_c leaves out the longest window",
           "acked = [ctx.S[t - ctx.R - k] for k in range(int(ctx.params[MEMORY]), -1, -1)]",
           "acked = [ctx.S[t - ctx.R - k] for k in range(int(ctx.params[MEMORY]) - 1, -1, -1)]"),
    Mutant("lang_delay_steps_plus", LANGUAGE, "the whole-step delay reads one step more",
           "return z3.Sum(*(z3.If(w, 1, 0) for w in waited)), z3.Not(z3.And(*waited))",
           "return z3.Sum(*(z3.If(w, 1, 0) for w in waited)) + 1, z3.Not(z3.And(*waited))"),
    Mutant("lang_split_short", LANGUAGE, "a rule split over the whole-step delay leaves out its largest value",
           "for k in range(max(top, 0) + 1)]",
           "for k in range(max(top, 1))]"),
    Mutant("lang_known_always", LANGUAGE, "the delay reading is taken as bounded even before the trace bounds it",
           "return z3.Sum(*(z3.If(w, 1, 0) for w in waited)), z3.Not(z3.And(*waited))",
           "return z3.Sum(*(z3.If(w, 1, 0) for w in waited)), z3.BoolVal(True)"),
    Mutant("lang_max_c_strict", LANGUAGE, "the belief max_c must fall at every step",
           "return [max_c[t] <= max_c[t - 1],",
           "return [max_c[t] < max_c[t - 1],"),
    Mutant("lang_max_c_any_window", LANGUAGE, "max_c counts a window whose first step was not used",
           "candidates = [(z3.And(*steps), value) for steps, value in max_c_candidates(acked, used, jitter)]",
           "candidates = [(z3.And(*steps[1:]), value) for steps, value in max_c_candidates(acked, used, jitter)]"),
    Mutant("lang_lambda_late", LANGUAGE, "the belief min_c_lambda reads the ACKs and detections of the step before",
           "lambda_candidates(ctx.S, ctx.A, ctx.L, ctx.Ld, t - ctx.R, t, int(ctx.params[MEMORY]),",
           "lambda_candidates(ctx.S, ctx.A, ctx.L, ctx.Ld, t - ctx.R - 1, t - 1, int(ctx.params[MEMORY]),"),
    Mutant("lang_bq_counts_detected", LANGUAGE, "bq_belief's cap counts bytes detected lost as in flight",
           "inflight = ctx.A[t - 1] - ctx.S[t - ctx.R] - ctx.Ld[t]\n        return equal_by_cases",
           "inflight = ctx.A[t - 1] - ctx.S[t - ctx.R]\n        return equal_by_cases"),
    Mutant("lang_qdel_age", LANGUAGE, "the newest delay sample is the newest ACKed byte's age, not carried while no ACK arrives",
           "z3.Implies(z3.Not(moved), sample[t] == sample[t - 1])]",
           "z3.Implies(z3.Not(moved), sample[t] == delay_steps[t])]"),
    Mutant("lang_choose_first_only", LANGUAGE, "choose(...) keeps only its first value",
           "z3.Or(*(v == a for a in args))",
           "v == args[0]"),
    Mutant("lang_rules_late", LANGUAGE, "the rules apply one step later than their observations allow",
           "first = d.first_rule_step(ctx.R, p)",
           "first = d.first_rule_step(ctx.R, p) + 1"),
    Mutant("ack_xi_at_start", PER_ACK, "the states a step's ACKs meet are taken to be its start only",
           "_all(within(lo, start, end), within(hi, start, end))",
           "_all(within(lo, start, start), within(hi, start, start))"),
    Mutant("ack_count_short", PER_ACK, "a step's ACKs are one MSS fewer than it ACKed",
           'acked = values["newly_acked"]\n',
           'acked = values["newly_acked"] - values["alpha"]\n'),
    Mutant("ack_loss_after_all", PER_ACK, "the loss event comes only after all of the step's ACKs",
           "_all(0 <= j, j <= acked, _any(event, j == acked))",
           "_all(0 <= j, j <= acked, j == acked)"),
    Mutant("ack_change_at_ends", PER_ACK, "the change is bounded by d at the side's start and end (not the states met)",
           "_all(change(d, s, bound, lo, weight) <= end - start,\n"
           "                             end - start <= change(d, s, bound, hi, weight))",
           "_all(change(d, s, bound, start, weight) <= end - start,\n"
           "                             end - start <= change(d, s, bound, end, weight))"),
    Mutant("ack_no_on_loss", PER_ACK, "the ACKs after the loss event start from the state before its on_loss rules",
           "            state = after_loss(d, state, values, event)\n",
           "            state = after_loss(d, state, values, False)\n"),
    Mutant("ack_event_needs_a_whole_mss", PER_ACK,
           "a loss event needs a detection a whole MSS beyond the recovery point",
           "    event = loss_event(d, before, values)\n    j = ",
           "    event = _all(loss_event(d, before, values),\n"
           "                 values[\"lost\"] > before.get(RECOVER, 0) + values[\"alpha\"])\n    j = "),
    Mutant("synth_confirm_any_rules", VALIDATE, "a suspect of ccac synthesize is confirmed on its group's run "
           "without checking its own rules there",
           "    return [not check_ccas(q, trace) for q in queries]",
           "    return [True for q in queries]"),
    Mutant("synth_unconfirmed_dropped", CEGIS, "a suspect that fails its own check is dropped instead of searched again",
           "        back.extend(set(members) - set(confirmed))",
           "        back.extend([])"),
    Mutant("cubes_any_unsat", CUBES, "a query split into cases is unsat once any case is (not every one)",
           'if all(c.answer == "unsat" for c in own):',
           'if any(c.answer == "unsat" for c in own):'),
    Mutant("packets_no_partial_packet", PATH_SERVER, "whole packets: the link is never part-way through a packet",
           "v.S[t] > oldest - v.alpha if net.any_packets else v.S[t] >= oldest", "v.S[t] >= oldest"),
    Mutant("packets_fluid_drop", PATH_SERVER, "whole packets: a packet is dropped only once the queue reaches the buffer",
           "v.admitted(t) > full - v.alpha if net.any_packets else v.admitted(t) >= full", "v.admitted(t) >= full"),
    Mutant("packets_window_below_a_packet", PATH_SERVER, "whole packets: a window below one packet sends nothing",
           "cwnd = maximum(v.cwnd[n][t], v.alpha) if net.path(n).packets else v.cwnd[n][t]", "cwnd = v.cwnd[n][t]"),
    Mutant("packets_fluid_send", PATH_SERVER, "whole packets: the sender sends exactly its window, fractions of a packet too",
           "enc.add(\"model.sender\", v.A_f[n][t] <= target, v.A_f[n][t] > target - v.alpha)",
           "enc.add(\"model.sender\", v.A_f[n][t] == target)"),
    Mutant("periodic_settled_unsat_decides", SOLVE, "a periodic query is unsat once its settled formula is (not its loose one)",
           'if loose is not None and loose.answer == "unsat":',
           'if (loose is not None and loose.answer == "unsat") or (settled is not None and settled.answer == "unsat"):'),
    Mutant("periodic_loose_sat_decides", SOLVE, "a periodic query is sat once its loose formula is (a trace that need not settle)",
           'if settled is not None and settled.answer == "sat":',
           'if (settled is not None and settled.answer == "sat") or (loose is not None and loose.answer == "sat"):'),
    Mutant("oracle_a_step_early", PATH_SERVER, "loss oracle: the sender knows a step's losses R - 1 steps after them",
           'enc.add("model.loss_detection", Ld[t] == L[t - R])', 'enc.add("model.loss_detection", Ld[t] == L[t - R + 1])'),
    Mutant("oracle_always_times_out", PATH_SERVER, "loss oracle: every step times out",
           'enc.add("model.timeout", z3.Not(tmo[t]))', 'enc.add("model.timeout", tmo[t])'),
)

BY_NAME = {m.name: m for m in MUTANTS}
assert len(BY_NAME) == len(MUTANTS), "mutant names must be unique"
