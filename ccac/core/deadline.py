"""Time limits: ``--timeout`` covers building, solving and validation.

The build checks the clock every :data:`CHECK_EVERY` calls of ``Encoding.add`` (and the
expression compiler every :data:`CHECK_EVERY_NODES` nodes), stops once the deadline has passed
and says how far it got; loops that add nothing are stopped by the ``SIGALRM`` backstop
(:mod:`ccac.core.backstop`). Running out is :class:`TimeLimit`: the answer is then ``unknown``
with a reason starting ``timeout:``, never a proof.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from ccac.core import backstop
from ccac.core.limits import check_seconds
from ccac.core.progress import ProgressLine, progress_stream

CHECK_EVERY = 64
"""``Encoding.add`` calls between two looks at the clock (a look costs about 0.1 µs)."""

CHECK_EVERY_NODES = 1024
"""Expression nodes between two looks at the clock."""

BUILDING = "building the formula"


class TimeLimit(Exception):
    """The time limit ran out. ``reason`` starts with ``timeout:`` and says where the time went."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass
class Clock:
    """One time limit: a deadline, what is being done, and the progress line it draws."""

    seconds: float | None
    progress: ProgressLine
    start: float = field(default_factory=time.monotonic)
    phase: str = BUILDING
    note: str = ""  # what the earlier phases took, for the timeout message
    deadline: float = math.inf
    active: bool = True
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
        if self.progress.due(now, self.start):
            count = f", {len(enc.constraints):,} constraints" if enc is not None else ""
            limit = f" of {self.seconds:g} s" if self.seconds is not None else ""
            self.progress.draw(f"{self.phase}: {self.whereabouts(enc, group)}{count}, "
                               f"{now - self.start:.0f} s{limit}", now)

    def whereabouts(self, enc: Any, group: str, verb: str = "") -> str:
        """``step 812 of 5000 in model.loss_detection``: the step of the latest constraint (the
        largest step among its first variables), or just the group."""
        step = enc.latest_step() if enc is not None else None
        if step is None:
            return f"in {group}"
        return f"{verb}step {step} of {self._horizon(enc)} in {group}"

    def _horizon(self, enc: Any) -> int:
        key = id(enc)
        if key not in self._horizons:
            self._horizons[key] = 1 + max((s.step for s in enc.slots.values()), default=0)
        return self._horizons[key]

    def clear(self) -> None:
        """Erase the progress line, if one was drawn."""
        self.progress.clear()


_CLOCKS: list[Clock] = []


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


@contextmanager
def time_limit(seconds: float | None, phase: str = BUILDING) -> Iterator[Clock]:
    """Run the body under a deadline ``seconds`` from now (None: no deadline, but progress is
    still drawn). Nested limits keep the earlier deadline. :class:`TimeLimit` escapes the body
    when the deadline passes."""
    seconds = check_seconds(seconds)
    clock = Clock(seconds, ProgressLine(progress_stream()), phase=phase)
    if seconds is not None:
        clock.deadline = clock.start + seconds
    if _CLOCKS:
        clock.deadline = min(clock.deadline, _CLOCKS[-1].deadline)
        if clock.deadline < math.inf and seconds is None:
            clock.seconds = _CLOCKS[-1].seconds
    _CLOCKS.append(clock)
    restore = backstop.arm(clock)
    try:
        yield clock
    finally:
        clock.active = False
        clock.clear()
        _CLOCKS.remove(clock)
        restore()
