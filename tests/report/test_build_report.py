"""build_test_report() and error_report(): the report, nulls, and status/exit with the
exit-code precedence.

The suite is tests/_scoring_data.py (12 cases, 2 trials, figures derived by hand there).
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from fractions import Fraction
from typing import Any

import jsonschema
import pytest

from skill_evals import __version__
from skill_evals.report.blocks import Report, error_report
from skill_evals.report.test_report import build_test_report
from skill_evals.run.observations import RunnerFailure
from tests._scoring_data import (
    DIFFERENCES,
    OUTPUT_MARK,
    PROMPT_MARK,
    SKILL,
    STDERR_MARK,
    make_observations,
    make_result,
    make_settings,
    make_skill,
    make_suite,
)
from tests.conftest import assert_valid_report
from tests.score.test_stats import reference_bootstrap

# The comparison gates (docs/comparison.md) are always listed, null when not set.
NO_COMPARISON_GATES = {
    "maxF1Drop": None,
    "maxPassDrop": None,
    "minF1Gain": None,
    "minPassGain": None,
}


def run(
    *,
    loaded: bool = False,
    tasks: bool = True,
    skill_changed: bool = False,
    result: Any = None,
    suite: Any = None,
    **settings: Any,
) -> Report:
    suite = suite or make_suite(tasks=tasks, loaded=loaded)
    report = build_test_report(
        make_skill(),
        suite,
        make_settings(**settings),
        result or make_result(suite),
        skill_changed=skill_changed,
    )
    assert_valid_report(report)
    text = json.dumps(report)
    assert PROMPT_MARK not in text and OUTPUT_MARK not in text and STDERR_MARK not in text
    return report


# -------------------------------------------------------------------------- the full report


def test_hand_computed_report() -> None:
    report = run(loaded=True)
    assert report["schemaVersion"] == 1
    assert report["tool"] == {"name": "skill-evals", "version": __version__}
    assert (report["status"], report["exitCode"]) == ("fail", 1)
    assert report["skill"] == {
        "name": SKILL,
        "path": "/work/skills/refund-policy",
        "skillMdSha256": "a" * 64,
        "directorySha256": "b" * 64,
        "warnings": [],
    }
    assert report["cases"] == {
        "path": "evals/cases.jsonl",
        "sha256": "c" * 64,
        "total": 12,
        "units": 11,
        "withTask": 11,
    }
    assert report["settings"] == {
        "mode": "runner",
        "trials": 2,
        "seed": 42,
        "bootstrapSamples": 1000,
        "timeoutMs": 30000,
        "maxBytes": 1000000,
        "jobs": 4,
    }
    assert report["trigger"] == {
        "tp": 15,
        "fp": 1,
        "fn": 1,
        "tn": 7,
        "precision": 0.9375,
        "recall": 0.9375,
        "f1": 0.9375,
        "falseTriggerCaseIds": ["c09"],
        "missedTriggerCaseIds": ["c03"],
    }
    lower, upper = reference_bootstrap([Fraction(d) for d in DIFFERENCES], 1000, 42)
    assert (lower, upper) == (0.15, 0.75)
    efficiency = report["task"].pop("efficiency")
    # Only the with-observations report meta here, so there is no paired difference.
    assert efficiency == {
        "with": {"durationMs": 100.0, "tokens": None, "costUsd": 0.25},
        "without": {"durationMs": None, "tokens": None, "costUsd": None},
        "difference": {"durationMs": None, "tokens": None, "costUsd": None},
    }
    assert report["task"] == {
        "mode": "absolute",
        "units": 10,
        "insufficient": False,
        "with": {"passed": 16, "total": 22, "passRate": 16 / 22},
        "without": {"passed": 6, "total": 22, "passRate": 6 / 22},
        "difference": 0.45,
        "interval": {
            "level": 0.95,
            "lower": lower,
            "upper": upper,
            "method": "percentile-bootstrap",
            "samples": 1000,
            "seed": 42,
        },
        "signTest": {"positive": 7, "negative": 1, "ties": 2, "pValue": 0.0703125},
    }
    assert report["loading"] == {
        "violations": [
            {
                "caseId": "c02",
                "trial": 1,
                "variant": "without",
                "missing": ["brand-deck"],
                "forbidden": [],
            },
            {
                "caseId": "c02",
                "trial": 2,
                "variant": "without",
                "missing": [],
                "forbidden": ["bugfix-workflow"],
            },
        ],
        "attemptedNotLoaded": [],
        "isolationUnverified": 0,
        "unverified": [],
    }
    assert report["runner"] == {
        "invocations": 48,
        "failures": [],
        "wallMs": 1234,
        "meta": {
            "durationMs": 2400,
            "costUsd": 6.0,
            "inputTokens": None,
            "outputTokens": None,
            "turns": None,
        },
        "retried": 0,
    }
    assert report["gates"] == {"minTriggerF1": None, "minUplift": None, **NO_COMPARISON_GATES}
    results = {c["id"]: c for c in report["caseResults"]}
    assert [c["id"] for c in report["caseResults"]] == [f"c{i:02d}" for i in range(1, 13)]
    assert results["c03"] == {
        "id": "c03",
        "line": 3,
        "unit": 2,
        "tags": ["refunds"],
        "expectTrigger": True,
        "triggered": [True, False],
        "with": [True, False],
        "without": [False, False],
        "checks": [
            {
                "check": "exit_code",
                "label": "exit_code",
                "with": [True, False],
                "without": [False, False],
            }
        ],
        "failedCheck": {
            "variant": "with",
            "trial": 2,
            "index": 0,
            "check": "exit_code",
            "reason": "exit_code: exitCode 3, expected 0",
        },
    }
    assert results["c12"]["checks"] == [] and results["c12"]["failedCheck"] is None
    assert results["c09"]["triggered"] == [True, False]
    assert results["c10"]["unit"] == results["c11"]["unit"] == 9
    # c12 has no task check: no pass/fail notion at all (null, not a row of falses).
    assert results["c12"]["with"] is None and results["c12"]["without"] is None
    assert len(report["messages"]) == 1 and "loading violation" in report["messages"][0]


def test_interval_with_default_samples_matches_reference() -> None:
    report = run(bootstrap_samples=10_000, seed=7)
    lower, upper = reference_bootstrap([Fraction(d) for d in DIFFERENCES], 10_000, 7)
    assert (report["task"]["interval"]["lower"], report["task"]["interval"]["upper"]) == (
        lower,
        upper,
    )
    assert report["task"]["interval"]["samples"] == 10_000
    assert report["task"]["interval"]["seed"] == 7


def test_trials_never_count_as_units() -> None:
    # Duplicate every observation as a third trial: units stay 10, the sign test counts units.
    suite = make_suite()
    observations = make_observations(suite)
    extra = [replace(o, trial=3) for o in observations if o.trial == 1]
    result = make_result(suite)
    result.observations = observations + extra
    report = run(suite=suite, result=result, trials=3)
    task = report["task"]
    assert task["units"] == 10
    sign = task["signTest"]
    assert sign["positive"] + sign["negative"] + sign["ties"] == 10
    assert task["with"]["total"] == 33


# ------------------------------------------------------------------------- status and exit


def _failure(case: str = "c04", trial: int = 1, variant: str = "with") -> RunnerFailure:
    return RunnerFailure(case, trial, variant, "exited with status 2")  # type: ignore[arg-type]


def _failed_result(*failures: RunnerFailure) -> Any:
    return make_result(
        make_suite(), drop=[(f.case_id, f.trial, f.variant) for f in failures], failures=failures
    )


def test_pass_without_gates() -> None:
    report = run()
    assert (report["status"], report["exitCode"]) == ("pass", 0)
    assert report["messages"] == []


@pytest.mark.parametrize(
    ("gates", "status", "code"),
    [
        ({"min_trigger_f1": 0.9375}, "pass", 0),  # equal to the threshold passes
        ({"min_trigger_f1": 0.94}, "fail", 1),
        ({"min_uplift": 0.15}, "pass", 0),  # the lower bound is exactly 0.15
        ({"min_uplift": 0.16}, "fail", 1),
        ({"min_uplift": -1.0, "min_trigger_f1": 0.0}, "pass", 0),
        ({"min_uplift": 0.5, "min_trigger_f1": 0.99}, "fail", 1),
    ],
)
def test_gates(gates: dict[str, float], status: str, code: int) -> None:
    report = run(**gates)
    assert (report["status"], report["exitCode"]) == (status, code)
    if "min_trigger_f1" in gates:
        gate = report["gates"]["minTriggerF1"]
        assert gate == {
            "threshold": gates["min_trigger_f1"],
            "value": 0.9375,
            "passed": gates["min_trigger_f1"] <= 0.9375,
        }
    if "min_uplift" in gates:
        gate = report["gates"]["minUplift"]
        assert gate == {
            "threshold": gates["min_uplift"],
            "value": 0.15,  # the interval's lower bound, not the difference
            "passed": gates["min_uplift"] <= 0.15,
        }
    if code == 1:
        assert any(m.startswith("gate failed") for m in report["messages"])


def test_loading_violation_fails_the_gate() -> None:
    report = run(loaded=True, min_trigger_f1=0.5, min_uplift=0.0)
    assert (report["status"], report["exitCode"]) == ("fail", 1)
    assert report["gates"]["minTriggerF1"]["passed"] is True
    assert report["gates"]["minUplift"]["passed"] is True


def test_runner_failure_is_unavailable_and_beats_gate_failures() -> None:
    report = run(loaded=True, min_trigger_f1=0.99, result=_failed_result(_failure()))
    assert (report["status"], report["exitCode"]) == ("unavailable", 7)
    assert report["runner"]["failures"] == [
        {"caseId": "c04", "trial": 1, "variant": "with", "reason": "exited with status 2"}
    ]
    # Scores are still computed from the valid observations.
    assert report["trigger"]["tp"] == 14
    assert report["caseResults"][3]["triggered"] == [None, True]
    assert report["caseResults"][3]["with"] == [None, True]


def test_failures_are_listed_in_case_file_order() -> None:
    failures = (_failure("c09", 2, "without"), _failure("c01", 2, "without"), _failure("c01", 2))
    report = run(result=_failed_result(*failures))
    assert [(f["caseId"], f["trial"], f["variant"]) for f in report["runner"]["failures"]] == [
        ("c01", 2, "with"),
        ("c01", 2, "without"),
        ("c09", 2, "without"),
    ]


def test_skill_changed_is_unavailable() -> None:
    report = run(skill_changed=True)
    assert (report["status"], report["exitCode"]) == ("unavailable", 7)
    assert any("changed during the run" in m for m in report["messages"])


def test_interrupted_is_130_even_with_failures() -> None:
    suite = make_suite()
    result = make_result(
        suite,
        drop=[("c04", 1, "with"), ("c12", 2, "with"), ("c12", 2, "without")],
        failures=[_failure()],
        interrupted=True,
    )
    report = run(suite=suite, result=result)
    assert (report["status"], report["exitCode"]) == ("interrupted", 130)
    assert any("--resume" in m for m in report["messages"])


def test_missing_observations_without_a_reason_are_unavailable() -> None:
    suite = make_suite()
    report = run(suite=suite, result=make_result(suite, drop=[("c05", 2, "without")]))
    assert (report["status"], report["exitCode"]) == ("unavailable", 7)
    assert report["caseResults"][4]["without"] == [True, None]


def _never_triggered(suite: Any) -> Any:
    result = make_result(suite)
    result.observations = [
        replace(o, invoked_skills=tuple(s for s in o.invoked_skills if s != SKILL))
        for o in result.observations
    ]
    return result


def test_undefined_f1_is_null_and_unavailable_only_when_gated() -> None:
    suite = make_suite()
    ungated = run(suite=suite, result=_never_triggered(suite))
    assert ungated["trigger"]["precision"] is None
    assert ungated["trigger"]["recall"] == 0.0
    assert ungated["trigger"]["f1"] is None
    assert (ungated["status"], ungated["exitCode"]) == ("pass", 0)
    gated = run(suite=suite, result=_never_triggered(suite), min_trigger_f1=0.5)
    assert (gated["status"], gated["exitCode"]) == ("unavailable", 7)
    assert gated["gates"]["minTriggerF1"] == {"threshold": 0.5, "value": None, "passed": None}


def test_recall_null_without_positive_cases() -> None:
    suite = make_suite()
    suite = replace(suite, cases=tuple(replace(c, expect_trigger=False) for c in suite.cases))
    report = run(suite=suite, result=_never_triggered(suite), min_trigger_f1=0.1)
    assert report["trigger"]["recall"] is None and report["trigger"]["f1"] is None
    assert report["trigger"]["tn"] == 24
    assert report["exitCode"] == 7
    assert any("expectTrigger: true" in m for m in report["messages"])


def test_no_task_checks_gives_null_task_never_zero() -> None:
    report = run(tasks=False)
    assert report["task"] is None
    assert (report["status"], report["exitCode"]) == ("pass", 0)
    assert all(c["with"] is None and c["without"] is None for c in report["caseResults"])
    gated = run(tasks=False, min_uplift=0.0)
    assert (gated["status"], gated["exitCode"]) == ("unavailable", 7)
    assert gated["gates"]["minUplift"] == {"threshold": 0.0, "value": None, "passed": None}


def _few_tasks() -> Any:
    suite = make_suite()
    cases = tuple(c if c.unit < 5 else replace(c, task=None) for c in suite.cases)
    return replace(suite, cases=cases)


def test_insufficient_task_units_is_reported_and_6_when_gated() -> None:
    suite = _few_tasks()
    report = run(suite=suite, result=make_result(suite))
    assert report["task"]["insufficient"] is True
    assert report["task"]["units"] == 5
    assert report["task"]["interval"]["lower"] is not None  # still reported
    assert (report["status"], report["exitCode"]) == ("pass", 0)
    assert any("too few to gate" in m for m in report["messages"])
    gated = run(suite=suite, result=make_result(suite), min_uplift=0.0)
    assert (gated["status"], gated["exitCode"]) == ("insufficient", 6)
    assert gated["gates"]["minUplift"]["passed"] is None


def test_insufficient_beats_unavailable_and_gate_failure() -> None:
    suite = _few_tasks()
    failure = _failure("c02")
    result = make_result(suite, drop=[("c02", 1, "with")], failures=[failure])
    report = run(suite=suite, result=result, min_uplift=0.0, min_trigger_f1=0.99, loaded=True)
    assert (report["status"], report["exitCode"]) == ("insufficient", 6)


def test_unavailable_beats_gate_failure() -> None:
    report = run(tasks=False, min_uplift=0.0, min_trigger_f1=0.99)
    assert (report["status"], report["exitCode"]) == ("unavailable", 7)


def test_pass_rate_null_when_no_task_observation() -> None:
    suite = make_suite()
    drop = [(c.id, t, v) for c in suite.cases for t in (1, 2) for v in ("with", "without")]
    result = make_result(suite, drop=drop, interrupted=True)
    report = run(suite=suite, result=result)
    assert report["task"]["with"] == {"passed": 0, "total": 0, "passRate": None}
    assert report["task"]["difference"] is None
    assert report["task"]["interval"]["lower"] is None
    assert report["task"]["signTest"]["pValue"] is None
    assert report["trigger"]["f1"] is None and report["trigger"]["tp"] == 0
    assert report["runner"]["meta"]["durationMs"] is None
    assert report["exitCode"] == 130


def test_messages_given_by_the_caller_come_first() -> None:
    suite = make_suite()
    report = build_test_report(
        make_skill(warnings=["SKILL.md: description too long"]),
        suite,
        make_settings(),
        make_result(suite),
        messages=("resumed 4 observation(s) from run.jsonl",),
    )
    assert_valid_report(report)
    assert report["messages"][0] == "resumed 4 observation(s) from run.jsonl"
    assert report["skill"]["warnings"] == ["SKILL.md: description too long"]


# ---------------------------------------------------------------------------- error_report


@pytest.mark.parametrize(
    ("code", "status"),
    [(5, "invalid"), (6, "insufficient"), (7, "unavailable"), (130, "interrupted")],
)
def test_error_report_is_schema_valid(code: int, status: str) -> None:
    bare = error_report(code, "cases.jsonl:3: field 'id': duplicate")
    assert_valid_report(bare)
    assert (bare["status"], bare["exitCode"]) == (status, code)
    assert bare["messages"] == ["cases.jsonl:3: field 'id': duplicate"]
    for key in ("skill", "cases", "settings", "trigger", "task", "loading", "runner", "gates"):
        assert bare[key] is None
    assert bare["caseResults"] is None

    full = error_report(
        code,
        "evals/cases.jsonl: 9 independent case(s)",
        make_settings(min_uplift=0.1),
        make_skill(),
        make_suite(),
    )
    assert_valid_report(full)
    assert full["skill"]["name"] == SKILL
    assert full["cases"]["units"] == 11
    assert full["settings"]["trials"] == 2
    assert full["gates"] == {
        "minTriggerF1": None,
        "minUplift": {"threshold": 0.1, "value": None, "passed": None},
        **NO_COMPARISON_GATES,
    }
    assert full["trigger"] is None and full["caseResults"] is None


@pytest.mark.parametrize("code", [0, 1, 70])
def test_error_report_rejects_scored_codes(code: int) -> None:
    with pytest.raises(ValueError):
        error_report(code, "x")


# ---------------------------------------------------------------------------------- schema


def _invalid(report: Report) -> bool:
    try:
        assert_valid_report(report)
    except jsonschema.ValidationError:
        return True
    return False


def test_schema_is_strict() -> None:
    good = run()
    for mutate in (
        lambda r: r.update(extra=1),
        lambda r: r["trigger"].update(accuracy=1.0),
        lambda r: r["caseResults"][0].update(prompt="x"),
        lambda r: r["runner"]["failures"].append(
            {"caseId": "c01", "trial": 1, "variant": "with", "reason": "x", "stderr": "y"}
        ),
        lambda r: r.update(trigger=None),  # a pass report needs every section
        lambda r: r.update(caseResults=None),
        lambda r: r.update(exitCode=1),  # pass ↔ 0
        lambda r: r.update(status="invalid"),  # invalid ↔ 5
        lambda r: r["task"]["interval"].update(level=0.9),
        lambda r: r["task"].pop("signTest"),
        lambda r: r["runner"]["meta"].update(tokens=3),
        lambda r: r["skill"].update(skillMdSha256="A" * 64),
    ):
        broken = copy.deepcopy(good)
        mutate(broken)
        assert _invalid(broken)
    assert not _invalid(good)


def test_schema_allows_null_sections_only_for_unscored_statuses() -> None:
    report = error_report(7, "no runner")
    assert not _invalid(report)
    report.update(status="fail", exitCode=1)
    assert _invalid(report)
