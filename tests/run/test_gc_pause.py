"""The collector kept off a run's observations: a pause freezes what it built, the run thaws it
at its end, and a host's own frozen objects are never thawed by us."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from skill_evals.pipeline import TestOptions as Options
from skill_evals.pipeline import run_test
from skill_evals.run.gc_pause import gc_paused, gc_thaw


@pytest.fixture(autouse=True)
def _clean_freeze() -> Iterator[None]:
    gc_thaw()
    assert gc.get_freeze_count() == 0
    yield
    gc_thaw()
    gc.unfreeze()


def test_a_pause_freezes_what_it_built_and_the_thaw_returns_it() -> None:
    enabled = gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        built = [[i] for i in range(1000)]
    assert gc.isenabled() is enabled
    assert gc.get_freeze_count() >= len(built)
    assert all(not _in_generations(item) for item in built[:10])
    gc_thaw()
    assert gc.get_freeze_count() == 0
    assert all(_in_generations(item) for item in built[:10])


def test_a_host_freeze_is_left_alone() -> None:
    host_object = [["frozen by the host"]]
    gc.freeze()  # a host program froze its objects before forking
    assert not _in_generations(host_object)
    with gc_paused():
        built = [[i] for i in range(100)]
    assert _in_generations(built[0])  # not frozen by us: thawing would thaw the host's too
    gc_thaw()
    # The count itself is no measure: frozen objects still die by reference counting.
    assert not _in_generations(host_object)
    assert gc.get_freeze_count() > 0


def test_a_run_from_observations_leaves_nothing_frozen(tmp_path: Path) -> None:
    skill = tmp_path / "refunds"
    skill.mkdir()
    (skill / "SKILL.md").write_text(
        "---\nname: refunds\ndescription: Refund rules for returned items.\n---\nBody.\n",
        encoding="utf-8",
    )
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "prompt": f"refund item {i}?", "expectTrigger": i % 2 == 0})
            + "\n"
            for i in range(10)
        ),
        encoding="utf-8",
    )
    observations = tmp_path / "obs.jsonl"
    observations.write_text(
        "".join(
            json.dumps(
                {
                    "caseId": f"c{i}",
                    "trial": t,
                    "variant": v,
                    "invokedSkills": ["refunds"] if v == "with" and i % 2 == 0 else [],
                    "output": "ok",
                    "exitCode": 0,
                }
            )
            + "\n"
            for i in range(10)
            for t in (1, 2)
            for v in ("with", "without")
        ),
        encoding="utf-8",
    )
    report = run_test(Options(skill=skill, cases=cases, observations=observations, trials=2))
    assert report["exitCode"] == 0, report["messages"]
    assert gc.get_freeze_count() == 0  # the run thawed what its pauses froze


def _in_generations(item: object) -> bool:
    return any(any(o is item for o in gc.get_objects(generation)) for generation in range(3))
