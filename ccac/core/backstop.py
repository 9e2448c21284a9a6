"""The ``SIGALRM`` backstop of a time limit: work that never reaches a checkpoint (a CCA's own
loops, reading back and validating a trace) is interrupted :data:`GRACE` seconds after the
deadline.

The interruption never unwinds z3's own Python code between two of its calls (an object half
made would give back a reference it never took). When the signal finds z3's code running, the
frame of ccac that called it is traced, and the interruption happens at that frame's next line,
once z3 has returned; the timer also tries again.
"""

from __future__ import annotations

import math
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Protocol

import z3

GRACE = 0.5
"""Seconds after the deadline at which the ``SIGALRM`` backstop interrupts work that adds no
constraints (a CCA's own loops, reading back and validating a trace)."""

_Z3_DIR = str(Path(z3.__file__).resolve().parent)
_ROOT = Path(__file__).resolve().parents[2]   # the checkout (or site-packages) holding ccac/
_OWN_DIRS = tuple(str(_ROOT / d) for d in ("ccac", "models", "ccas"))
_OWN_FILES = (str(Path(__file__).resolve()), str(Path(__file__).resolve().with_name("deadline.py")))


class Limited(Protocol):
    """What the backstop needs of a time limit."""

    deadline: float
    active: bool

    def clear(self) -> None: ...

    def timeout(self, where: str = "") -> Exception: ...


def arm(clock: Limited) -> Callable[[], None]:
    """Interrupt ``GRACE`` s after ``clock``'s deadline (see the module doc). Only in the main
    thread of a POSIX process; returns what undoes it."""
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
    """``stopped in ccas/allegro.py:276 (encode)``: the innermost frame of ccac's own code (the
    line its function starts at when the interpreter stopped it between lines, where the frame
    has no current line)."""
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_OWN_DIRS) and name not in _OWN_FILES:
            short = Path(name).relative_to(_ROOT).as_posix()
            line = frame.f_lineno if frame.f_lineno is not None else frame.f_code.co_firstlineno
            return f"stopped in {short}:{line} ({frame.f_code.co_name})"
        frame = frame.f_back
    return ""
