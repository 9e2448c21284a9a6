"""Bounds on the work any input can cause: expression size, number size, durations, horizon,
and the form of a time limit.

Every query, proof and option is untrusted input, so none of them may make ccac run or allocate
without bound. The bounds, each checked before the work it guards wherever the size is known
in advance:

* **Expressions** (:mod:`ccac.encode.expr`): one expression, with every definition it expands, may
  visit at most :data:`MAX_EXPANSION` syntax nodes and loop iterations together; the lengths
  of a comprehension's ranges are multiplied and checked before the first iteration. Exact
  numbers it computes may have at most :data:`MAX_NUMBER_BITS` bits (a power's size is
  estimated from its base and exponent before it is computed), and its syntax may nest at
  most :data:`MAX_DEPTH` levels.
* **Durations** (:func:`check_durations`): a CCA parameter in steps or RTTs is at most
  :data:`MAX_DURATION`.
* **Horizon** (:func:`check_horizon`): the formula grows as T² × flows (loss detection, FIFO
  service and most CCAs relate every step to every earlier one); a T whose formula would not
  fit in this machine's memory (:mod:`ccac.core.machine`) is rejected when the file is read.
* **Time**: a time limit is a positive, finite number of seconds (:func:`check_seconds`); how
  it is kept is :mod:`ccac.core.deadline`'s.

Bad input is a :class:`~ccac.core.errors.CcacError` (exit 2).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from ccac.core.errors import CcacError
from ccac.core.machine import machine_memory

MAX_EXPANSION = 500_000
"""Syntax nodes visited plus loop iterations, per expression (``query.find``, each
``query.assume[i]``, ...) counting every definition it expands. The largest bundled query or
proof expression uses 923 at its own horizon (``vivace_negative_gradient_decrease``, T = 10),
so about 92,000 at T = 1000; 500,000 take about 2 s to compile."""

MAX_NUMBER_BITS = 10_000
"""Bits of any exact number an expression computes (numerator plus denominator): about 3,000
decimal digits. Powers are checked before they are computed."""

MAX_DEPTH = 200
"""Nesting depth of an expression's syntax tree (Python's own parser allows 200 parentheses)."""

BYTES_PER_STEP_PAIR = 6_000
"""Memory the formula needs per pair of steps per flow, the measured worst case over the
bundled CCAs (expdelay at T = 300: 5.7 kB; Copa 2.9 kB, AIMD 1.2 kB). Handing the formula to
z3 takes about as much again."""

# ---------------------------------------------------------------------- numbers
def number_bits(x: int | Fraction) -> int:
    """Bits of an exact number: numerator plus denominator."""
    if isinstance(x, Fraction):
        return x.numerator.bit_length() + x.denominator.bit_length()
    return int(x).bit_length()


def power_bits(base: int | Fraction, exponent: int) -> float:
    """About how many bits ``base ** exponent`` has, computed without the power itself (an int
    when the exponent is too large for a float)."""
    b = Fraction(base)
    if b == 0 or abs(b) == 1 or exponent == 0:
        return 1
    size = math.log2(abs(b.numerator)) + math.log2(b.denominator)
    if exponent.bit_length() > 60:
        return max(1, int(size)) * abs(exponent)
    return max(1.0, size * abs(exponent))


def show_size(n: float | Fraction) -> str:
    """A count for a message: exact with separators up to 10^15, else as a power of ten."""
    if n < 10**15:
        return f"{int(n):,}"
    return f"about 10^{int(math.log10(n))}"


# ---------------------------------------------------------------------- CCA durations
MAX_DURATION = 64
"""Largest CCA parameter counted in steps or RTTs (a filter window, a probing cycle, a monitor
interval, an update timer). The formula grows with each, some steeply: Proteus-P's encoding at
T = 10 takes 2 s and 0.5 GB with mi = 16 steps, 8 s and 1.8 GB with 32, 21 s and 3.5 GB with 64."""


def check_durations(declared: Any, values: dict[str, Any], where: str) -> None:
    """Reject a CCA parameter in steps or RTTs above :data:`MAX_DURATION`."""
    for p in declared:
        value = values.get(p.name)
        if p.unit in ("steps", "RTTs") and isinstance(value, (int, Fraction)) and value > MAX_DURATION:
            raise CcacError(f"must be at most {MAX_DURATION} {p.unit}, got {show_size(value)}: the "
                            f"formula grows with it (a limit of ccac, see ccac.core.limits.MAX_DURATION)",
                            f"{where}.{p.name}")


def formula_bytes(T: int, flows: int) -> int:
    """Estimated memory to build the formula of T steps and ``flows`` flows."""
    return BYTES_PER_STEP_PAIR * T * T * flows


def max_horizon(flows: int, memory: int | None = None) -> int:
    """The largest T whose formula fits in ``memory`` (default: this machine's) with ``flows``."""
    memory = machine_memory() if memory is None else memory
    return math.isqrt(memory // (BYTES_PER_STEP_PAIR * max(flows, 1)))


def check_horizon(T: int, flows: int, where: str, key: str = "T") -> None:
    """Reject a horizon whose formula would need more memory than this machine has."""
    need, have = formula_bytes(T, flows), machine_memory()
    if need <= have:
        return
    many = f"{show_size(flows)} flow{'s' if flows != 1 else ''}"
    largest = max_horizon(flows, have)
    if largest >= 2:
        fits = f"the largest T that fits is {largest:,} with {many}"
    else:
        fits = f"at T = {show_size(T)} at most {max(have // (BYTES_PER_STEP_PAIR * T * T), 0):,} flows fit"
    raise CcacError(
        f"{key} = {show_size(T)} with {many} is too large: the formula would need about {_bytes(need)} "
        f"of memory (it grows as T² × flows, about {BYTES_PER_STEP_PAIR // 1000} kB per pair of steps "
        f"per flow, because loss detection relates every step to every earlier one) and this machine "
        f"has {_bytes(have)}; {fits}", where)


def _bytes(n: int) -> str:
    if n >= 10**15:
        return f"10^{int(math.log10(n))} bytes"
    for unit, size in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:,} bytes"


def check_seconds(seconds: float | None, where: str = "--timeout") -> float | None:
    """A time limit must be a positive, finite number of seconds (or None)."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
            or seconds <= 0:
        raise CcacError(f"must be a positive number of seconds, got {seconds!r}", where)
    return float(seconds)
