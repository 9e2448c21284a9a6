"""Bounds on the work any input can cause: expression size, number size, horizon and time.

Every query, proof and option is untrusted input, so none of them may make ccac run or allocate
without bound. The bounds, each checked before the work it guards wherever the size is known
in advance:

* **Expressions** (:mod:`ccac.encode.expr`): one expression, with every definition it expands, may
  visit at most :data:`MAX_EXPANSION` syntax nodes and loop iterations together; the lengths
  of a comprehension's ranges are multiplied and checked before the first iteration. Exact
  numbers it computes may have at most :data:`MAX_NUMBER_BITS` bits (a power's size is
  estimated from its base and exponent before it is computed), and its syntax may nest at
  most :data:`MAX_DEPTH` levels.
* **Horizon** (:func:`check_horizon`): the formula grows as T² × flows (loss detection, FIFO
  service and most CCAs relate every step to every earlier one); a T whose formula would not
  fit in this machine's memory is rejected when the file is read.
* **Time** (:func:`time_limit`): ``--timeout`` covers building, solving and validation. The
  build checks the clock every :data:`CHECK_EVERY` calls of ``Encoding.add`` (and the
  expression compiler every :data:`CHECK_EVERY_NODES` nodes), stops once the deadline has
  passed and says how far it got; loops that add nothing are stopped by a ``SIGALRM``
  backstop :data:`GRACE` seconds after the deadline. The answer is then ``unknown`` with a
  reason starting ``timeout:``, never a proof.

Bad input is a :class:`~ccac.core.errors.CcacError` (exit 2); running out of time is
:class:`TimeLimit` (exit 3, answer unknown).
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from types import FrameType
from typing import Any, Iterator, TextIO

import z3

from ccac.core.errors import CcacError

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

FALLBACK_MEMORY = 16 * 2**30
"""Assumed memory when the machine's cannot be read (non-POSIX systems)."""

CHECK_EVERY = 64
"""``Encoding.add`` calls between two looks at the clock (a look costs about 0.1 µs)."""

CHECK_EVERY_NODES = 1024
"""Expression nodes between two looks at the clock."""

GRACE = 0.5
"""Seconds after the deadline at which the ``SIGALRM`` backstop interrupts work that adds no
constraints (a CCA's own loops, reading back and validating a trace)."""

PROGRESS_AFTER = 2.0
"""Seconds of building after which progress is shown on a terminal's stderr."""

PROGRESS_EVERY = 0.25
"""Seconds between two redraws of the progress line."""

BUILDING = "building the formula"
_STEP_SCAN = 400  # subterms of the latest constraint searched for its step


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


def show_size(n: float) -> str:
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


# ---------------------------------------------------------------------- machine
def usable_cpus() -> int:
    """CPUs this process may run on: fewer than the machine's under ``taskset`` or a
    container's CPU set, where racing or pooling as many processes as the machine has cores
    would only make them take turns."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def machine_memory() -> int:
    """Bytes of memory this process may use: the machine's, or less under a cgroup limit or an
    address-space limit (``ulimit -v``)."""
    sizes: list[int] = []
    try:
        sizes.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        pass
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            sizes.append(soft)
    except (ImportError, ValueError, OSError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            sizes.append(int(text))
    return min(sizes) if sizes else FALLBACK_MEMORY


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


# ---------------------------------------------------------------------- time
class TimeLimit(Exception):
    """The time limit ran out. ``reason`` starts with ``timeout:`` and says where the time went."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass
class Clock:
    """One time limit: a deadline, what is being done, and the progress line it draws."""

    seconds: float | None
    progress: TextIO | None
    start: float = field(default_factory=time.monotonic)
    phase: str = BUILDING
    note: str = ""  # what the earlier phases took, for the timeout message
    deadline: float = math.inf
    active: bool = True
    _drawn: float = 0.0
    _shown: bool = False
    _horizons: dict[int, int] = field(default_factory=dict)
    _marks: list[tuple[str, float]] = field(default_factory=list)  # (phase, when it began)

    def __post_init__(self) -> None:
        self._marks.append((self.phase, self.start))

    def remaining(self) -> float | None:
        """Seconds left (None without a limit)."""
        return None if self.deadline == math.inf else self.deadline - time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def enter(self, phase: str) -> None:
        """The time from now on goes to ``phase``."""
        self.clear()
        self._marks.append((phase, time.monotonic()))
        self.phase = phase

    def spent(self) -> dict[str, float]:
        """Seconds spent in each phase so far, the current one included."""
        marks = self._marks
        ends = [at for _, at in marks[1:]] + [time.monotonic()]
        return {name: end - at for (name, at), end in zip(marks, ends)}

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def limit_text(self) -> str:
        return f"{self.seconds:g} s" if self.seconds is not None else "the time limit"

    def timeout(self, where: str = "") -> TimeLimit:
        """The exception for running out of time in the current phase; ``where`` says how far
        it got, :attr:`note` what earlier phases took."""
        if self.phase.startswith("building"):
            text = f"{self.phase} took more than {self.limit_text()}"
        else:
            text = f"the limit of {self.limit_text()} ran out while {self.phase}"
        details = "; ".join(x for x in (where, self.note) if x)
        return TimeLimit(f"timeout: {text}" + (f" ({details})" if details else ""))

    def checkpoint(self, enc: Any, group: str) -> None:
        """Raise :class:`TimeLimit` once the deadline has passed; redraw the progress line."""
        now = time.monotonic()
        if now >= self.deadline:
            self.clear()
            raise self.timeout(self.whereabouts(enc, group, "reached "))
        if self.progress is not None and now - self.start >= PROGRESS_AFTER \
                and now - self._drawn >= PROGRESS_EVERY:
            self._drawn = now
            count = f", {len(enc.constraints):,} constraints" if enc is not None else ""
            limit = f" of {self.seconds:g} s" if self.seconds is not None else ""
            self.draw(f"{self.phase}: {self.whereabouts(enc, group)}{count}, {now - self.start:.0f} s{limit}")

    def whereabouts(self, enc: Any, group: str, verb: str = "") -> str:
        """``step 812 of 5000 in model.loss_detection``: the step of the latest constraint (the
        largest step among its first variables), or just the group."""
        step = _latest_step(enc) if enc is not None else None
        if step is None:
            return f"in {group}"
        return f"{verb}step {step} of {self._horizon(enc)} in {group}"

    def _horizon(self, enc: Any) -> int:
        key = id(enc)
        if key not in self._horizons:
            self._horizons[key] = 1 + max((s.step for s in enc.slots.values()), default=0)
        return self._horizons[key]

    def draw(self, text: str) -> None:
        assert self.progress is not None
        self.progress.write("\r\x1b[K" + text[:200])
        self.progress.flush()
        self._shown = True

    def clear(self) -> None:
        """Erase the progress line, if one was drawn."""
        if self._shown and self.progress is not None:
            self.progress.write("\r\x1b[K")
            self.progress.flush()
            self._shown = False


def _latest_step(enc: Any) -> int | None:
    if not enc.constraints:
        return None
    stack, seen, steps = [enc.constraints[-1][1]], 0, []
    while stack and seen < _STEP_SCAN:
        e = stack.pop()
        seen += 1
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            slot = enc.slots.get(e.decl().name())
            if slot is not None:
                steps.append(slot.step)
        else:
            stack.extend(e.children())
    return max(steps) if steps else None


_CLOCKS: list[Clock] = []
_PROGRESS: list[TextIO | None] = [None]


def current() -> Clock | None:
    """The innermost active time limit, if any."""
    return _CLOCKS[-1] if _CLOCKS else None


def checkpoint(enc: Any, group: str) -> None:
    """Called from the build's loops: raise :class:`TimeLimit` if the current limit has run out."""
    if _CLOCKS:
        _CLOCKS[-1].checkpoint(enc, group)


def set_phase(phase: str) -> None:
    """Name what the current limit's time now goes to (``solving``, ``validating the trace``)."""
    if _CLOCKS:
        _CLOCKS[-1].enter(phase)


def show_progress(enabled: bool, stream: TextIO | None = None) -> None:
    """Draw build progress on ``stream`` (default stderr) if it is a terminal and ``enabled``."""
    stream = sys.stderr if stream is None else stream
    _PROGRESS[0] = stream if enabled and getattr(stream, "isatty", lambda: False)() else None


def check_seconds(seconds: float | None, where: str = "--timeout") -> float | None:
    """A time limit must be a positive, finite number of seconds (or None)."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
            or seconds <= 0:
        raise CcacError(f"must be a positive number of seconds, got {seconds!r}", where)
    return float(seconds)


@contextmanager
def time_limit(seconds: float | None, phase: str = BUILDING) -> Iterator[Clock]:
    """Run the body under a deadline ``seconds`` from now (None: no deadline, but progress is
    still drawn). Nested limits keep the earlier deadline. :class:`TimeLimit` escapes the body
    when the deadline passes."""
    seconds = check_seconds(seconds)
    clock = Clock(seconds, _PROGRESS[0], phase=phase)
    if seconds is not None:
        clock.deadline = clock.start + seconds
    if _CLOCKS:
        clock.deadline = min(clock.deadline, _CLOCKS[-1].deadline)
        if clock.deadline < math.inf and seconds is None:
            clock.seconds = _CLOCKS[-1].seconds
    _CLOCKS.append(clock)
    restore = _arm_backstop(clock)
    try:
        yield clock
    finally:
        clock.active = False
        clock.clear()
        _CLOCKS.remove(clock)
        restore()


# ---------------------------------------------------------------------- SIGALRM backstop
_Z3_DIR = str(Path(z3.__file__).resolve().parent)
_ROOT = Path(__file__).resolve().parents[2]   # the checkout (or site-packages) holding ccac/
_OWN_DIRS = tuple(str(_ROOT / d) for d in ("ccac", "models", "ccas"))


def _arm_backstop(clock: Clock) -> Any:
    """Interrupt ``GRACE`` s after the deadline, for work that never reaches a checkpoint.
    Only in the main thread of a POSIX process; returns what undoes it.

    The interruption never unwinds z3's own Python code between two of its calls (an object
    half made would give back a reference it never took). When the signal finds z3's code
    running, the frame of ccac that called it is traced, and the interruption happens at that
    frame's next line, once z3 has returned; the timer also tries again."""
    if clock.deadline == math.inf or not hasattr(signal, "setitimer") \
            or threading.current_thread() is not threading.main_thread():
        return lambda: None
    traced: list[FrameType] = []

    def at_next_line(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and clock.active:
            untrace()
            clock.clear()
            raise clock.timeout(_location(frame))
        return at_next_line

    def untrace() -> None:
        if traced:
            sys.settrace(None)
            for f in traced:
                f.f_trace = None
            traced.clear()

    def handler(signum: int, frame: FrameType | None) -> None:
        if not clock.active:
            return
        late = time.monotonic() - clock.deadline
        if late < GRACE:
            signal.setitimer(signal.ITIMER_REAL, GRACE - late)
            return
        if _inside_z3(frame):
            caller = _caller_of_z3(frame)
            if caller is not None and (traced or sys.gettrace() is None):  # never replace a debugger's
                untrace()
                caller.f_trace, caller.f_trace_lines = at_next_line, True
                traced.append(caller)
                sys.settrace(_untraced)  # tracing on, but only for the frame marked above
            signal.setitimer(signal.ITIMER_REAL, 0.01)
            return
        untrace()
        clock.clear()
        raise clock.timeout(_location(frame))

    old_handler = signal.signal(signal.SIGALRM, handler)
    old_delay, _ = signal.setitimer(signal.ITIMER_REAL, max(clock.deadline - time.monotonic(), 0) + GRACE)
    armed_at = time.monotonic()

    def restore() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        untrace()
        signal.signal(signal.SIGALRM, old_handler)
        if old_delay > 0:  # an outer timer keeps running from where it was
            signal.setitimer(signal.ITIMER_REAL, max(old_delay - (time.monotonic() - armed_at), 0.001))

    return restore


def _untraced(frame: FrameType, event: str, arg: Any) -> None:
    """A global trace function that traces no new frame (it only switches tracing on)."""
    return None


def _caller_of_z3(frame: FrameType | None) -> FrameType | None:
    """The frame that called into z3: the first one below the innermost run of z3 frames, if no
    z3 frame lies further down."""
    while frame is not None and frame.f_code.co_filename.startswith(_Z3_DIR):
        frame = frame.f_back
    return None if frame is None or _inside_z3(frame) else frame


def _inside_z3(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith(_Z3_DIR):
            return True
        frame = frame.f_back
    return False


def _location(frame: FrameType | None) -> str:
    """``stopped in ccas/allegro.py:276 (encode)``: the innermost frame of ccac's own code."""
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_OWN_DIRS) and not name.endswith("limits.py"):
            short = Path(name).relative_to(_ROOT).as_posix()
            return f"stopped in {short}:{frame.f_lineno} ({frame.f_code.co_name})"
        frame = frame.f_back
    return ""
