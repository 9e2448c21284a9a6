"""The progress line drawn while a formula is built: on a terminal's stderr only, after
:data:`PROGRESS_AFTER` seconds, redrawn at most every :data:`PROGRESS_EVERY` seconds, erased
when the work it describes ends."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

PROGRESS_AFTER = 2.0
"""Seconds of building after which progress is shown on a terminal's stderr."""

PROGRESS_EVERY = 0.25
"""Seconds between two redraws of the progress line."""

_STREAM: list[TextIO | None] = [None]


def show_progress(enabled: bool, stream: TextIO | None = None) -> None:
    """Draw build progress on ``stream`` (default stderr) if it is a terminal and ``enabled``."""
    stream = sys.stderr if stream is None else stream
    _STREAM[0] = stream if enabled and getattr(stream, "isatty", lambda: False)() else None


def progress_stream() -> TextIO | None:
    """Where progress is drawn now (None: nowhere)."""
    return _STREAM[0]


@dataclass
class ProgressLine:
    """One line redrawn in place on ``stream`` (nothing without a stream)."""

    stream: TextIO | None
    drawn_at: float = 0.0
    _shown: bool = False

    def due(self, now: float, started: float) -> bool:
        """Whether a redraw is due at ``now`` for work that started at ``started``."""
        return self.stream is not None and now - started >= PROGRESS_AFTER and now - self.drawn_at >= PROGRESS_EVERY

    def draw(self, text: str, now: float) -> None:
        assert self.stream is not None
        self.drawn_at = now
        self.stream.write("\r\x1b[K" + text[:200])
        self.stream.flush()
        self._shown = True

    def clear(self) -> None:
        """Erase the line, if one was drawn."""
        if self._shown and self.stream is not None:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False
