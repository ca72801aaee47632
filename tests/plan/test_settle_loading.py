"""A loading rule is a gate like the others when the verdict settles: once another gate has
failed for every outcome, a pending loading rule no longer keeps the run going; with gates that
pass it still does. Exact invocation counts through the CLI with a scripted runner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests._arms_helpers import make_skill, run_test, script_for
from tests.conftest import write_jsonl

RULE = {"exclude": ["pdf-tools"]}  # never broken here: the runner loads only refund-policy


def _cases(
    path: Path, negatives: int, positives: int, rule_on: str, rule: dict[str, Any] = RULE
) -> dict[str, bool]:
    records: list[dict[str, Any]] = [
        {"id": f"n{i}", "prompt": f"weather question {i}", "expectTrigger": False}
        for i in range(negatives)
    ] + [
        {"id": f"t{i}", "prompt": f"refund question {i}", "expectTrigger": True}
        for i in range(positives)
    ]
    for record in records:
        if record["id"] == rule_on:
            record["loaded"] = rule
    write_jsonl(path, records)
    return {r["id"]: r["expectTrigger"] for r in records}


ARGS = ("--jobs", "1", "--trials", "1", "--arms", "with,without", "--stop-when-settled")


@pytest.mark.parametrize(
    ("rule", "rule_on"),
    [
        (RULE, "t9"),  # the very last case
        (RULE, "t4"),  # mid-file
        # an include rule is pending the same way (it would be broken here, were t4 or t9 run:
        # the runner never loads pdf-tools; the run stops before either)
        ({"include": ["pdf-tools"]}, "t9"),
        ({"include": ["pdf-tools"]}, "t4"),
        ({"include": ["pdf-tools"], "exclude": ["shipping-times"]}, "t4"),
    ],
)
def test_a_failed_gate_is_not_kept_going_by_a_pending_loading_rule(
    tmp_path: Path, rule: dict[str, Any], rule_on: str
) -> None:
    skill = make_skill(tmp_path / "skills")
    cases = tmp_path / "cases.jsonl"
    labels = _cases(cases, negatives=5, positives=10, rule_on=rule_on, rule=rule)
    script = script_for(labels, with_={"trigger": True})  # loads the skill on every prompt
    run = run_test(tmp_path, skill, cases, script, *ARGS, "--min-trigger-f1", "0.9", formats=True)
    assert run.code == 1, run.report["messages"]
    # Three false triggers settle the F1 gate (even ten true ones after them give 20/23 < 0.9):
    # n0, n1 with and without, n2 with — the 5th invocation. The pending rule cannot change
    # exit 1, include or exclude, wherever it is in the file.
    assert run.count() == 5
    assert run.report["runner"]["stoppedEarly"] == {
        "after": 5,
        "planned": 30,
        "reason": "settled",
        "settled": True,
    }
    assert run.report["gates"]["minTriggerF1"]["passed"] is False
    assert run.report["loading"]["violations"] == []


def test_a_pending_loading_rule_keeps_a_passing_run_going(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "skills")
    cases = tmp_path / "cases.jsonl"
    labels = _cases(cases, negatives=0, positives=12, rule_on="t11")
    script = script_for(labels)
    ruled = run_test(tmp_path, skill, cases, script, *ARGS, "--min-trigger-f1", "0.5")
    assert ruled.code == 0, ruled.report["messages"]
    # Without the rule the F1 gate settles at the 4th with-run (worst F1 2·4 / (2·4 + 8) =
    # 0.5), the 7th invocation; the rule on t11 is pending until t11's without-run, the 24th.
    assert ruled.count() == 24
    plain_cases = tmp_path / "plain.jsonl"
    _cases(plain_cases, negatives=0, positives=12, rule_on="none")
    plain = run_test(
        tmp_path, skill, plain_cases, script, *ARGS, "--min-trigger-f1", "0.5", name="plain"
    )
    assert plain.code == 0 and plain.count() == 7


def test_a_broken_rule_settles_a_run_whose_trigger_gate_is_open(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "skills")
    cases = tmp_path / "cases.jsonl"
    records = [
        {"id": f"t{i}", "prompt": f"refund question {i}", "expectTrigger": True} for i in range(12)
    ]
    records[0]["loaded"] = {"include": ["pdf-tools"]}  # the runner never loads it: broken
    write_jsonl(cases, records)
    labels = {r["id"]: True for r in records}
    run = run_test(tmp_path, skill, cases, script_for(labels), *ARGS, "--min-trigger-f1", "0.5")
    assert run.code == 1, run.report["messages"]
    assert run.count() == 1  # t0 with: the violation decides exit 1, F1 cannot end undefined
    gate = run.report["gates"]["minTriggerF1"]
    assert gate["passed"] is None and gate["partial"] is True  # left open by the settle


def _task_cases(path: Path, rule: dict[str, Any]) -> dict[str, bool]:
    records: list[dict[str, Any]] = [
        {
            "id": f"k{i}",
            "prompt": f"refund task {i}",
            "expectTrigger": True,
            "task": {"check": "exit_code", "expected": 0},
        }
        for i in range(12)
    ]
    records[0]["loaded"] = rule
    write_jsonl(path, records)
    return {r["id"]: True for r in records}


def test_a_broken_rule_settles_a_run_whose_uplift_gate_is_open(tmp_path: Path) -> None:
    """An uplift (or pass-rate comparison) gate ends passed or failed, never undefined: once a
    loading rule is broken, exit 1 is settled whatever the rest shows."""
    skill = make_skill(tmp_path / "skills")
    cases = tmp_path / "cases.jsonl"
    labels = _task_cases(cases, {"include": ["pdf-tools"]})  # the runner never loads it
    args = ("--trials", "1", "--arms", "with,without", "--stop-when-settled")
    run = run_test(
        tmp_path, skill, cases, script_for(labels), "--jobs", "1", *args, "--min-uplift", "0.1"
    )
    assert run.code == 1, run.report["messages"]
    assert run.count() == 1  # k0 with: the violation decides exit 1
    gate = run.report["gates"]["minUplift"]
    assert gate["passed"] is None and gate["partial"] is True
    parallel = run_test(
        tmp_path, skill, cases, script_for(labels), "--jobs", "3", *args, "--min-uplift", "0.1",
        name="parallel",
    )  # fmt: skip
    # The first three start together; each other one that finishes before k0's with result is
    # read starts one more (on a loaded machine, a few): the run still stops far short of the
    # 24 planned.
    assert parallel.code == 1 and parallel.count() < 12
