"""The cyclic garbage collector kept off the observations while a run is loaded and scored.

Loading ``--observations`` and scoring build a few acyclic objects per observation that stay
alive until the report is made; every collection would walk all of them again and again, and
the first young collection after a pause would still walk everything the pause let pile up.
So a pause ends by freezing what it built (``gc.freeze``: out of the generations, still freed by
reference counting as usual) and the run thaws it once at its end (docs/performance.md)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_frozen_by_us = False  # whether the permanent generation holds only what our pauses froze


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the collector; at the end, freeze what is alive so no later collection walks it
    before :func:`gc_thaw`. Collection resumes afterwards if it was on. When something else
    froze objects first (a host program that forks), nothing is frozen: thawing would free
    its objects too."""
    global _frozen_by_us
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        with _lock:
            if _frozen_by_us or gc.get_freeze_count() == 0:
                gc.freeze()
                _frozen_by_us = True
        if enabled:
            gc.enable()


def gc_thaw() -> None:
    """Return what the pauses froze to the collector (the oldest generation), once the run's
    observations are no longer needed, so a cycle among them can still be collected."""
    global _frozen_by_us
    with _lock:
        if _frozen_by_us:
            gc.unfreeze()
            _frozen_by_us = False
