"""`.skill-evals.yml` names the judge: `judge`, `judge-timeout-ms`, `budget.judge-calls`, per
skill in `overrides`, and `budget-total.judge-calls` shared by the skills in order."""

from __future__ import annotations

import pytest

from skill_evals.ci.budget import TotalBudget
from skill_evals.ci.config import parse_config
from skill_evals.errors import InvalidInput

CONFIG = b"""
judge: python3 judges/strict.py
judge-timeout-ms: 5000
budget: {judge-calls: 40}
budget-total: {judge-calls: 50}
overrides:
  release-notes: {judge: python3 judges/notes.py, budget: {judge-calls: 30}}
"""


def test_the_judge_settings_apply_per_skill() -> None:
    config = parse_config(CONFIG, "cfg")
    plain, notes = config.for_skill("refund-policy"), config.for_skill("release-notes")
    assert plain.judge == "python3 judges/strict.py" and plain.judge_timeout_ms == 5000
    assert plain.budget.judge_calls == 40
    assert notes.judge == "python3 judges/notes.py" and notes.budget.judge_calls == 30
    assert "judge" in notes.result_settings()  # a new judge is a new fingerprint
    assert "judge" not in parse_config(b"trials: 3\n", "cfg").for_skill("x").result_settings()


def test_the_total_judge_budget_is_shared_in_order() -> None:
    config = parse_config(CONFIG, "cfg")
    total = TotalBudget.of(config.budget_total)
    assert total.for_skill(config.for_skill("release-notes").budget).judge_calls == 30
    total.spend({"runner": {"ledger": {"invocations": 2, "judge": {"calls": 30}}}})
    assert total.for_skill(config.for_skill("refund-policy").budget).judge_calls == 20


@pytest.mark.parametrize(
    "bad",
    [b"judge: ''\n", b"judge: ' '\n", b"judge-timeout-ms: 0\n", b"budget: {judge-calls: 0}\n"],
)
def test_bad_judge_settings_are_refused(bad: bytes) -> None:
    with pytest.raises(InvalidInput):
        parse_config(bad, "cfg")
