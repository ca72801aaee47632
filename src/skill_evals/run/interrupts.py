"""SIGTERM handled like Ctrl-C, for the commands that run evaluations (`test`, `ci`, `ci merge`)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt (exit 130, outputs still written) also while loading,
    hashing and scoring; while invocations run, execute() installs its own handlers (and
    restores this one). Signal handlers can only be set from the main thread; elsewhere this
    does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
