"""The simulated runner with a whole catalog installed: it loads the one skill whose
description best matches the prompt, honestly (near misses are misrouted), and nothing when no
description reaches the threshold."""

from __future__ import annotations

import io
from pathlib import Path

from skill_evals.agents.base import read_invocation
from skill_evals.agents.simulated import pick_skill, run
from tests.conftest import write_skill


def test_pick_skill_most_shared_words_then_share_then_order() -> None:
    descriptions = [
        "Refund and return questions about receipts.",
        "Shipping and delivery questions about parcels and tracking.",
        "Gift card balance questions.",
    ]
    assert pick_skill("Where is my parcel tracking?", descriptions) == 1
    assert pick_skill("A refund without receipts", descriptions) == 0
    assert pick_skill("Hello there", descriptions) is None  # no description reaches two words
    # a tie on shared words goes to the description with the larger share of its own words
    tie = ["alpha beta gamma delta epsilon", "alpha beta"]
    assert pick_skill("alpha beta", tie) == 1
    # a full tie goes to the earlier skill
    assert pick_skill("alpha beta", ["alpha beta", "beta alpha"]) == 0


def test_runner_installs_the_catalog_and_loads_one(tmp_path: Path) -> None:
    refund = write_skill(tmp_path, "refund", "Refund and return questions about receipts.")
    ship = write_skill(tmp_path, "ship", "Shipping questions about parcels and tracking.")
    env = {
        "EVALGATE_SKILL_VARIANT": "with",
        "SKILL_EVALS_ARM": "routing",
        "SKILL_EVALS_SKILL_DIRS": f"{refund}\n{ship}",
        "EVALGATE_SKILL_CASE_ID": "c1",
        "EVALGATE_SKILL_TRIAL": "1",
    }
    invocation = read_invocation(io.BytesIO(b"my parcel tracking says lost"), env, catalog=True)
    assert invocation.skill_dirs == (refund.resolve(), ship.resolve())
    assert run(invocation).invoked_skills == ["ship"]
    none = read_invocation(io.BytesIO(b"what time is it"), env, catalog=True)
    assert run(none).invoked_skills == []
