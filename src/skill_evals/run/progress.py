"""Progress on stderr, in one of two forms:

- **lines** (a log, CI, a pipe): one line per finished invocation with an unambiguous status,
  ``[12/60] refund-policy case-3 trial 2 with: runner ok, skill loaded (expected) 4.1s`` or
  ``… without: runner FAILED (timed out after 30000 ms) 30.0s``;
- **live** (an interactive terminal): one status line rewritten in place — done, running,
  failed, elapsed, ETA — refreshed every second, so a hanging run is visible; each failure is
  printed above it as a line of its own.

Colour only on a terminal, and never when ``NO_COLOR`` is set (https://no-color.org) or
``TERM=dumb``. Every user string goes through :func:`terminal_safe`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import TextIO

from ..escaping.terminal import terminal_safe
from .execute import Progress

GREEN, RED, YELLOW, DIM, RESET = "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[2m", "\x1b[0m"
CLEAR_LINE = "\r\x1b[2K"
TICK_SECONDS = 1.0


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def use_colour(stream: TextIO, env: Mapping[str, str]) -> bool:
    """Colour only for a terminal, and not when NO_COLOR is set (non-empty) or TERM=dumb."""
    return _is_tty(stream) and not env.get("NO_COLOR") and env.get("TERM") != "dumb"


def _width(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def outcome(event: Progress) -> str:
    """``runner ok, skill loaded (expected)`` / ``runner FAILED (reason)``: whether the runner
    worked, then what the run did — never a bare mark that reads as "the case was right"."""
    if not event.ok:
        return f"runner FAILED ({terminal_safe(event.reason or 'see the report')})"
    if event.triggered is None:
        return "runner ok"
    text = "runner ok, skill " + ("loaded" if event.triggered else "not loaded")
    if event.variant != "with" or event.expect_trigger is None:
        return text
    if event.triggered == event.expect_trigger:
        return text + " (expected)"
    return text + (" (should not have)" if event.triggered else " (should have)")


class ProgressPrinter:
    """The progress callable handed to execute() (it also listens to starts).

    ``live`` defaults to whether ``stream`` is a terminal, ``colour`` to :func:`use_colour`.
    Call :meth:`close` (or use it as a context manager) when the run ends: it stops the
    refresh and replaces the live line with a summary."""

    def __init__(
        self,
        stream: TextIO,
        *,
        live: bool | None = None,
        colour: bool | None = None,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        tick_seconds: float = TICK_SECONDS,
    ) -> None:
        environ = os.environ if env is None else env
        self._stream = stream
        self._live = _is_tty(stream) if live is None else live
        self._colour = use_colour(stream, environ) if colour is None else colour
        self._clock = clock
        self._tick = tick_seconds
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._started_at: float | None = None
        self._skill = ""
        self._done = self._total = self._running = self._failed = self._finished = 0
        self._first_done: int | None = None  # done count when this run started (resumed)
        self._shown = False  # a live line is on screen
        self._width = _width(stream)

    # ----------------------------------------------------------------------------- events

    def started(self, running: int, done: int, total: int) -> None:
        """An invocation started (called by execute())."""
        with self._lock:
            self._begin(done, total)
            self._running = running
            if self._live:
                self._draw()
        if self._live and self._ticker is None:
            self._ticker = threading.Thread(target=self._refresh, name="skill-evals-progress")
            self._ticker.daemon = True
            self._ticker.start()

    def __call__(self, event: Progress) -> None:
        """An invocation finished."""
        with self._lock:
            self._begin(event.done - 1, event.total)
            self._skill = event.skill
            self._done, self._total, self._running = event.done, event.total, event.running
            self._finished += 1
            if not event.ok:
                self._failed += 1
            if not self._live:
                self._write(self._line(event) + "\n")
                return
            if not event.ok:
                self._write(CLEAR_LINE + self._line(event) + "\n")
                self._shown = False
            self._draw()

    def close(self) -> None:
        """Stop refreshing; on a terminal, leave a one-line summary instead of the live line."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)
        with self._lock:
            if self._live and self._started_at is not None:
                self._write(CLEAR_LINE + self._status(final=True) + "\n")
                self._shown = False

    def __enter__(self) -> ProgressPrinter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------------------- drawing

    def _begin(self, done: int, total: int) -> None:
        if self._started_at is None:
            self._started_at = self._clock()
            self._first_done = done
            self._done, self._total = done, total

    def _paint(self, text: str, colour: str) -> str:
        return f"{colour}{text}{RESET}" if self._colour else text

    def _line(self, event: Progress) -> str:
        status = outcome(event)
        if self._colour:
            colour = RED if not event.ok else GREEN
            if event.ok and "(should" in status:
                colour = YELLOW
            status = self._paint(status, colour)
        return (
            f"[{event.done}/{event.total}] {terminal_safe(event.skill)} "
            f"{terminal_safe(event.case_id)} trial {event.trial} {event.variant}: {status} "
            f"{event.elapsed_ms / 1000:.1f}s"
        )

    def _status(self, final: bool = False) -> str:
        elapsed = self._clock() - (self._started_at or self._clock())
        parts: list[tuple[str, str]] = [(f"{self._done}/{self._total} done", GREEN)]
        if not final:
            parts.append((f"{self._running} running", YELLOW))
        parts.append((f"{self._failed} failed", RED if self._failed else ""))
        parts.append((f"{_duration(elapsed)} elapsed", ""))
        if not final:
            ran = self._done - (self._first_done or 0)
            left = self._total - self._done
            parts.append((f"ETA {_duration(elapsed / ran * left) if ran > 0 else '…'}", ""))
        plain = " · ".join(text for text, _ in parts)
        shown = " · ".join(self._paint(text, colour) if colour else text for text, colour in parts)
        # The line must never wrap: "\r" only returns to the start of the last screen line.
        room = self._width - 1 - len(plain) - 2
        if not self._skill or room < 4:
            return shown
        name = terminal_safe(self._skill)
        return f"{name if len(name) <= room else name[: room - 1] + '…'}: {shown}"

    def _draw(self) -> None:
        self._write(CLEAR_LINE + self._status())
        self._shown = True

    def _refresh(self) -> None:
        while not self._stop.wait(self._tick):
            with self._lock:
                if self._shown:
                    self._draw()

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):
            pass  # a closed stderr must never stop the run
