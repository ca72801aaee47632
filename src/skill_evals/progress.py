"""Progress lines on stderr: ``[12/60] refund-policy case-3 trial 2 with ✓ 4.1s``."""

from __future__ import annotations

import threading
from typing import TextIO

from .execute import Progress
from .terminal import terminal_safe


class ProgressPrinter:
    """Callable handed to execute(); prints one line per finished invocation."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def __call__(self, event: Progress) -> None:
        mark = "✓" if event.ok else "✗"
        skill, case_id = terminal_safe(event.skill), terminal_safe(event.case_id)
        line = (
            f"[{event.done}/{event.total}] {skill} {case_id} "
            f"trial {event.trial} {event.variant} {mark} {event.elapsed_ms / 1000:.1f}s\n"
        )
        with self._lock:
            try:
                self._stream.write(line)
                self._stream.flush()
            except (OSError, ValueError):
                pass  # a closed stderr must never stop the run
