"""`--arms auto`, budgets, the ledger and `--stop-when-settled` through the CLI with a scripted
runner that logs every invocation (docs/comparison.md)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import junitparser

from skill_evals.score.stats import Mulberry32
from tests._arms_helpers import make_cases, make_skill, run_test, script_for
from tests.conftest import write_jsonl


def _reference_spot_check(ids: list[str], seed: int) -> list[str]:
    """The documented selection, written out independently: k = min(n, max(3, ⌈n/5⌉)); a
    partial Fisher–Yates shuffle of 0..n−1 with j = i + floor(draw × (n − i))."""
    n = len(ids)
    k = min(n, max(3, math.ceil(0.2 * n)))
    rng = Mulberry32(seed)
    order = list(range(n))
    for i in range(k):
        j = i + math.floor(rng.next_float() * (n - i))
        order[i], order[j] = order[j], order[i]
    return [ids[i] for i in sorted(order[:k])]


def _junit_cases(path: Path) -> dict[str, Any]:
    xml = junitparser.JUnitXml.fromfile(str(path))
    return {case.name: case for suite in xml for case in suite}


def test_auto_runs_without_only_where_a_figure_needs_it(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "skills")
    cases = tmp_path / "cases.jsonl"
    labels = make_cases(cases, trigger_only=11, negatives=5, task=10)
    run = run_test(
        tmp_path,
        skill,
        cases,
        script_for(labels),
        "--arms",
        "auto",
        "--trials",
        "2",
        "--seed",
        "7",
        "--bootstrap-samples",
        "1000",
        formats=True,
    )
    assert run.code == 0, run.report["messages"]
    trigger_only = [c for c in labels if not c.startswith("k")]
    expected = _reference_spot_check(trigger_only, 7)
    assert len(expected) == 4  # k = max(3, ⌈16 / 5⌉) = 4
    spot = run.report["arms"]["spotCheck"]
    assert spot == {"caseIds": expected, "checked": 4, "of": 16}
    without = sorted((c, t) for c, t, arm, _, _ in run.log if arm == "without")
    task_ids = [c for c in labels if c.startswith("k")]
    assert without == sorted(
        [(c, 1) for c in expected] + [(c, t) for c in task_ids for t in (1, 2)]
    )
    assert run.count("with") == 26 * 2
    assert run.report["coverage"] == {"observed": 52 + 24, "planned": 52 + 24}
    note = "isolation spot-checked on 4 of 16 cases"
    assert note in run.proc.stdout
    work = tmp_path / "run"
    assert note in (work / "report.md").read_text(encoding="utf-8")
    assert note in (work / "report.html").read_text(encoding="utf-8")
    assert note in (work / "junit.xml").read_text(encoding="utf-8")
    # The uplift still pairs with and without on every task case.
    assert run.report["task"]["without"]["total"] == 20


def test_auto_on_a_trigger_only_suite_costs_far_less(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "skills")
    cases = tmp_path / "cases.jsonl"
    labels = make_cases(cases, trigger_only=10, negatives=5)
    auto = run_test(tmp_path, skill, cases, script_for(labels), "--arms", "auto", "--trials", "2")
    full = run_test(
        tmp_path,
        skill,
        cases,
        script_for(labels),
        "--arms",
        "with,without",
        "--trials",
        "2",
        name="full",
    )
    assert auto.code == full.code == 0
    assert full.count() == 60 and auto.count() == 30 + 3
    assert auto.report["trigger"] == full.report["trigger"]


def test_invocation_budget_is_exact_and_unsettled_is_unavailable(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "skills")
    cases = tmp_path / "cases.jsonl"
    labels = make_cases(cases, trigger_only=10, negatives=2)
    run = run_test(
        tmp_path,
        skill,
        cases,
        script_for(labels),
        "--max-invocations",
        "7",
        "--jobs",
        "1",
        "--trials",
        "2",
        formats=True,
    )
    assert run.count() == 7
    assert run.code == 7
    assert any("budget reached after 7 invocations" in m for m in run.report["messages"])
    runner = run.report["runner"]
    assert runner["stoppedEarly"] == {
        "after": 7,
        "planned": 48,
        "reason": "budget",
        "settled": False,
    }
    assert runner["ledger"]["invocations"] == 7 and runner["ledger"]["stoppedEarly"] == 41
    junit = _junit_cases(tmp_path / "run" / "junit.xml")
    skipped = junit["trigger[n1]"].result[0]
    assert skipped.message == "not run: the budget was reached before this case"


def test_cost_budget_overshoots_by_at_most_jobs_minus_one(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "skills")
    cases = tmp_path / "cases.jsonl"
    labels = make_cases(cases, trigger_only=10, negatives=2)
    script = script_for(labels, cost=0.25)
    run = run_test(
        tmp_path, skill, cases, script, "--max-cost-usd", "1", "--jobs", "4", "--trials", "2"
    )
    # Reached after 4 reported $0.25 each; at most 3 more were running then.
    assert 4 <= run.count() <= 4 + 3
    ledger = run.report["runner"]["ledger"]
    assert ledger["invocations"] == run.count()
    assert ledger["costUsd"] == 0.25 * run.count()
    assert ledger["costUnreported"] == 0
    assert ledger["inputTokens"] == 100 * run.count() and ledger["outputTokens"] == 10 * run.count()
    arms = ledger["arms"]
    assert arms["with"]["invocations"] + arms["without"]["invocations"] == run.count()
    assert run.code == 7


def _negatives_first(path: Path, negatives: int, positives: int) -> dict[str, bool]:
    records = [
        {"id": f"n{i}", "prompt": f"weather question {i}", "expectTrigger": False}
        for i in range(negatives)
    ] + [
        {"id": f"t{i}", "prompt": f"refund question {i}", "expectTrigger": True}
        for i in range(positives)
    ]
    write_jsonl(path, records)
    return {r["id"]: r["expectTrigger"] for r in records}


def test_budget_with_a_settled_verdict_gives_that_verdict(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "skills")
    cases = tmp_path / "cases.jsonl"
    labels = _negatives_first(cases, negatives=5, positives=10)
    script = script_for(labels, with_={"trigger": True})  # loads the skill on every prompt
    run = run_test(
        tmp_path,
        skill,
        cases,
        script,
        "--max-invocations",
        "10",
        "--jobs",
        "1",
        "--min-trigger-f1",
        "0.9",
        "--arms",
        "with,without",
        "--trials",
        "1",
    )
    # Five false triggers: even ten true ones after them give F1 20/25 = 0.8 < 0.9.
    assert run.count() == 10 and run.code == 1
    stop = run.report["runner"]["stoppedEarly"]
    assert stop == {"after": 10, "planned": 30, "reason": "budget", "settled": True}
    assert run.report["gates"]["minTriggerF1"]["passed"] is False
    assert run.report["trigger"]["f1"] is None  # no positive ran: the partial F1 is undefined
    messages = " ".join(run.report["messages"])
    assert "budget reached after 10 invocations" in messages
    assert "stopped early: the verdict was settled after 10 of 30 invocations" in messages


def test_clearly_failing_suite_stops_early_with_the_full_run_verdict(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "skills")
    cases = tmp_path / "cases.jsonl"
    labels = _negatives_first(cases, negatives=5, positives=10)
    script = script_for(labels, with_={"trigger": True})
    args = ("--jobs", "1", "--trials", "1", "--min-trigger-f1", "0.9", "--arms", "with,without")
    stopped = run_test(tmp_path, skill, cases, script, *args, "--stop-when-settled", formats=True)
    full = run_test(tmp_path, skill, cases, script, *args, name="full")
    assert full.code == stopped.code == 1
    # Three false triggers settle it: even ten true ones after them give F1 20/23 < 0.9. The
    # third is the 5th invocation (n0, n1 with and without, n2 with); nothing more starts.
    assert stopped.count() == 5 and full.count() == 30
    text = "stopped early: the verdict was settled after 5 of 30 invocations"
    assert text in stopped.proc.stdout
    work = tmp_path / "run"
    assert text in (work / "report.html").read_text(encoding="utf-8")
    junit = _junit_cases(work / "junit.xml")
    assert junit["trigger[t3]"].result[0].message.startswith("not run: the verdict was settled")
    assert text in (work / "junit.xml").read_text(encoding="utf-8")
    not_run = [c for c in stopped.report["caseResults"] if c["triggered"] == [None]]
    assert [c["id"] for c in not_run] == ["n3", "n4", *(f"t{i}" for i in range(10))]


def test_clearly_passing_suite_stops_after_the_first_trial(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "skills")
    cases = tmp_path / "cases.jsonl"
    labels = make_cases(cases, trigger_only=12)
    args = ("--jobs", "1", "--trials", "3", "--min-trigger-f1", "0.5", "--arms", "with,without")
    stopped = run_test(tmp_path, skill, cases, script_for(labels), *args, "--stop-when-settled")
    full = run_test(tmp_path, skill, cases, script_for(labels), *args, name="full")
    assert stopped.code == full.code == 0
    # worst F1 after tp true positives = 2tp / (tp + 36) ≥ 0.5 from tp = 12: the 12th with-run
    # is the 23rd invocation of trial 1.
    assert stopped.count() == 23 and full.count() == 72
    assert stopped.report["runner"]["stoppedEarly"]["after"] == 23
    assert stopped.report["gates"]["minTriggerF1"]["passed"] is True


def test_without_a_gate_nothing_stops_early(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "skills")
    cases = tmp_path / "cases.jsonl"
    labels = make_cases(cases, trigger_only=10)
    run = run_test(
        tmp_path, skill, cases, script_for(labels), "--stop-when-settled", "--trials", "1"
    )
    assert run.code == 0 and run.count() == 20
    assert "stoppedEarly" not in run.report["runner"]


def test_uplift_gate_settles_early_with_the_same_verdict(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "skills")
    cases = tmp_path / "cases.jsonl"
    labels = make_cases(cases, task=12)
    args = ("--jobs", "1", "--trials", "3", "--min-uplift", "0.2", "--bootstrap-samples", "1000")
    stopped = run_test(tmp_path, skill, cases, script_for(labels), *args, "--stop-when-settled")
    full = run_test(tmp_path, skill, cases, script_for(labels), *args, name="full")
    assert stopped.code == full.code == 0
    assert stopped.count() < full.count() == 72
    assert stopped.report["runner"]["stoppedEarly"]["settled"] is True
    assert stopped.report["gates"]["minUplift"]["passed"] is True
