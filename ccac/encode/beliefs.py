"""The beliefs of the CCA language (:mod:`ccac.encode.rules`): running bounds a sender keeps
from what it observed, after CCmatic's (NSDI 2024) ``min_c``, ``max_c``, ``min_c_lambda`` and
``bq_belief``. Each update is one function over numbers or solver terms, so the encoding
(``ccas/language.py``), the check and the concrete sender (``senders/language.py``) apply the
same update: exact numbers with the ``exact_*`` connectives and Python's min and max, solver
terms with z3's.

May import: :mod:`ccac.core` (it imports nothing of ccac).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable


def min_c_candidates(acked: list[Any], jitter: Any) -> list[Any]:
    """What min_c rises to at least: the ACKed bytes of each of the last windows over (window +
    jitter). ``acked``: the readings, oldest first, the newest last (one more than the
    windows); numbers or solver terms."""
    newest = acked[-1]
    return [(newest - acked[-1 - k]) / (k + jitter) for k in range(1, len(acked))]


def max_c_candidates(acked: list[Any], used: list[Any], jitter: Any) -> list[tuple[list[Any], Any]]:
    """What max_c falls to at most, each with the steps that must all have been used: the ACKed
    bytes of a window of k > jitter steps over (k - jitter). ``used[i]``: whether the step
    between ``acked[i]`` and ``acked[i + 1]`` was used."""
    newest = acked[-1]
    return [(used[-k:], (newest - acked[-1 - k]) / (k - jitter)) for k in range(1, len(acked)) if k > jitter]


def used_steps(qdel_steps: Any, A: Any, Ld: Any, s: int, memory: int, R: int, jitter: Any,
               both: Callable[[Any, Any], Any], either: Callable[[Any, Any], Any]) -> list[Any]:
    """For the service steps u = s - memory .. s - 1 (the interval (u, u + 1]): whether the
    sender saw it used, its delay sample (which arrives at step u + 1 + R) above ``jitter``
    while it sent, or a loss detected in it. ``qdel_steps``, ``A`` and ``Ld`` index by step;
    ``both``/``either`` are and/or for numbers or for solver terms."""
    return [either(both(qdel_steps[u + 1 + R] > jitter, A[u + 1] > A[u]), Ld[u + 1] > Ld[u])
            for u in range(s - memory, s)]


def lambda_candidates(acked: Any, A: Any, L: Any, Ld: Any, s: int, t: int, memory: int, jitter: int,
                      both: Callable[[Any, Any], Any], negate: Callable[[Any], Any]) -> list[tuple[Any, Any]]:
    """What min_c_lambda rises to at least at sender step t (service step s = t - R): for each
    of the last ``memory`` sending steps et = s - memory + 1 .. s, the bytes sent in it over
    (jitter + 2), when every byte sent by et is ACKed (``acked[s]`` reaches the bytes admitted by
    et) or detected lost (``Ld[t]`` reaches those lost by et), no loss was detected from sender
    step et - 1 to t, and no ACK from service step et - 1 to s came late (:func:`late_first_ack`).
    ``acked`` indexes by service step (what the ACK readings report), ``A`` and ``L`` by sending
    step, ``Ld`` by sender step; numbers or solver terms, with ``both``/``negate`` the matching
    connectives.

    CCmatic reads the losses by an oracle at the same index as the ACKs (its Ld(k) is L(k - R));
    here they are the sender's detections, read up to now: a detection after s of a loss from
    the window signals it, as the oracle would have (reading them only up to s, as the ACKs,
    would let a window count whose own losses are detected at t)."""
    late = {k: late_first_ack(acked, A, L, k, jitter, both) for k in range(s - memory, s)}
    out = []
    for et in range(s - memory + 1, s + 1):
        valid = both(both(A[et] - L[et] <= acked[s], L[et] <= Ld[t]), Ld[t] <= Ld[et - 1])
        for k in range(et - 1, s):
            valid = both(valid, negate(late[k]))
        out.append((valid, (A[et] - A[et - 1]) / (jitter + 2)))
    return out


def late_first_ack(acked: Any, A: Any, L: Any, k: int, jitter: int, both: Callable[[Any, Any], Any]) -> Any:
    """Whether the interval (k, k + 1] of service carried CCmatic's delay signal for
    min_c_lambda: the sender sent in it, something was ACKed in it, and the first byte ACKed in
    it had been sent at or before step k - jitter - 1 (its delay exceeds jitter + 1 steps:
    ``acked[k]`` is below the bytes admitted by then)."""
    delayed = acked[k] < A[k - jitter - 1] - L[k - jitter - 1]
    return both(both(delayed, A[k + 1] > A[k]), acked[k + 1] > acked[k])


def lambda_after(previous: Fraction, candidates: list[tuple[bool, Fraction]]) -> Fraction:
    """The belief min_c_lambda after a step, exactly (the check's and the sender's)."""
    return max([previous] + [value for valid, value in candidates if valid])


def bq_after(previous: Any, inflight: Any, newly_sent: Any, min_c_lambda: Any,
             lower: Callable[[Any, Any], Any] = min, upper: Callable[[Any, Any], Any] = max) -> Any:
    """The belief bq_belief after a step: the previous belief grown by the bytes sent in the last
    step and drained by one step of min_c_lambda, at least 0 and at most the bytes in flight
    (numbers, or solver terms with ``lower``/``upper`` the solver's min and max)."""
    return lower(inflight, upper(0, previous + newly_sent - min_c_lambda))


def min_c_after(previous: Fraction, acked: list[Fraction], jitter: Fraction) -> Fraction:
    """The belief min_c after a step, exactly (the check's and the sender's)."""
    return max([previous] + min_c_candidates(acked, jitter))


def max_c_after(previous: Fraction, acked: list[Fraction], used: list[bool], jitter: Fraction) -> Fraction:
    """The belief max_c after a step, exactly (the check's and the sender's)."""
    return min([previous] + [value for steps, value in max_c_candidates(acked, used, jitter) if all(steps)])


def exact_and(a: bool, b: bool) -> bool:
    return a and b


def exact_or(a: bool, b: bool) -> bool:
    return a or b


def exact_not(a: bool) -> bool:
    return not a
