"""How the suite runs on several cores (`pytest -n 2 --dist loadfile`, pytest-xdist).

Each test file is one unit of work, so module- and session-scoped fixtures (one real CLI run
read by many tests) run once, not once per worker. Two tweaks over xdist's own ``loadfile``:

- files that read the same session-scoped run go to the same worker (``SHARED_RUNS``);
- the costliest files start first (real agent CLIs, ``act``, the browser), so no long file is
  left running alone at the end while the other worker idles. Cost is estimated from the
  marks: a marked test counts as many unmarked ones.
"""

from __future__ import annotations

from typing import Any

import pytest

# file → the file whose worker it joins (both read tests/ci/conftest.py's passing_run/failing_run)
SHARED_RUNS = {"tests/ci/test_html.py": "tests/ci/test_gate.py"}

# Rough cost of one test with these marks, in unmarked tests.
HEAVY_MARKS = {"agents": 30, "act": 100, "browser": 10}


def file_of(nodeid: str) -> str:
    """The test file part of a node id."""
    return nodeid.split("::", 1)[0]


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the file it shares a run with."""
    path = file_of(nodeid)
    return SHARED_RUNS.get(path, path)


def _cost(item: pytest.Item) -> int:
    marks = {mark.name for mark in item.iter_markers()}
    return max([HEAVY_MARKS[m] for m in marks if m in HEAVY_MARKS], default=1)


def costliest_files_first(items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place: whole units, the costliest first, in their own order
    within a unit (ties keep the collection order)."""
    cost: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        unit = unit_of(item.nodeid)
        cost[unit] = cost.get(unit, 0) + _cost(item)
        first_seen.setdefault(unit, index)
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(
        key=lambda it: (-cost[unit_of(it.nodeid)], first_seen[unit_of(it.nodeid)], order[id(it)])
    )


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's ``loadfile`` scheduler, with SHARED_RUNS and the collection order kept (the
    collection hook already put the costliest units first)."""
    from xdist.scheduler import LoadFileScheduling

    class FileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False
    return FileScheduling(config, log)
