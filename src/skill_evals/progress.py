"""Progress lines on stderr: ``[12/60] refund-policy case-3 trial 2 with ✓ 4.1s``."""

from __future__ import annotations

import threading
from typing import TextIO

from .execute import Progress


def _printable(text: str) -> str:
    """Escape control and separator characters: a case id must never start a new line (on
    GitHub Actions a line beginning with ``::`` is a workflow command)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in text)


class ProgressPrinter:
    """Callable handed to execute(); prints one line per finished invocation."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def __call__(self, event: Progress) -> None:
        mark = "✓" if event.ok else "✗"
        line = (
            f"[{event.done}/{event.total}] {_printable(event.skill)} {_printable(event.case_id)} "
            f"trial {event.trial} {event.variant} {mark} {event.elapsed_ms / 1000:.1f}s\n"
        )
        with self._lock:
            try:
                self._stream.write(line)
                self._stream.flush()
            except (OSError, ValueError):
                pass  # a closed stderr must never stop the run
