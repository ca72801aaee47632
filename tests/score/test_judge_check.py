"""`skill-evals judge-check` with the scripted judge: agreement, Cohen's kappa, swap
consistency and the confusion compared with values computed here from the constructed labels;
bad labels → 5, fewer than ten → 6, a failing judge → 7, below --min-agreement → 1; --cache
reuses verdicts."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from skill_evals.schemas import load_schema
from tests._judge_helpers import judge_cmd, judge_log, run_cli


def _valid(report: dict[str, Any]) -> dict[str, Any]:
    jsonschema.Draft202012Validator(load_schema("judge-check.schema.json")).validate(report)
    return report


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


# (judge sees GOOD?, the person's label)
ABSOLUTE = [(True, True)] * 5 + [(False, False)] * 4 + [(True, False)] * 2 + [(False, True)]


def _absolute_rows() -> list[dict[str, Any]]:
    return [
        {"id": f"e{i}", "prompt": "Write notes", "rubric": "r",
         "answer": "GOOD answer" if good else "weak answer", "label": label}
        for i, (good, label) in enumerate(ABSOLUTE)
    ]  # fmt: skip


def _check(root: Path, cases: str, *more: str) -> tuple[int, dict[str, Any]]:
    args = ["judge-check", "--cases", cases, "--judge", judge_cmd(root), "--format", "json"]
    args += ["--sandbox-path", f"{root}:rw"]  # the judge logs there
    done = run_cli(root, *args, *more)
    return done.returncode, _valid(json.loads(done.stdout))


def test_absolute_agreement_and_kappa_are_exact(tmp_path: Path) -> None:
    _write(tmp_path / "labels.jsonl", _absolute_rows())
    code, report = _check(tmp_path, "labels.jsonl", "--min-agreement", "0.7")
    tp = sum(1 for v, lab in ABSOLUTE if v and lab)
    fp = sum(1 for v, lab in ABSOLUTE if v and not lab)
    fn = sum(1 for v, lab in ABSOLUTE if not v and lab)
    tn = sum(1 for v, lab in ABSOLUTE if not v and not lab)
    n = len(ABSOLUTE)
    po = Fraction(tp + tn, n)
    pe = Fraction((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn), n * n)
    assert code == 0
    assert report["confusion"] == {"tp": tp, "fp": fp, "fn": fn, "tn": tn}
    assert report["agreement"] == float(po)
    assert report["kappa"] == pytest.approx(float((po - pe) / (1 - pe)))
    assert report["swapConsistency"] is None and report["kind"] == "absolute"
    assert report["disagreements"] == ["e9", "e10", "e11"]
    assert report["gates"]["minAgreement"] == {"threshold": 0.7, "value": float(po), "passed": True}
    assert len(judge_log(tmp_path)) == n and report["judge"]["calls"] == n
    requests = judge_log(tmp_path)
    assert requests[0]["answer"] == {"output": "GOOD answer", "files": []}


def test_a_low_agreement_fails_the_gate_and_the_cache_saves_calls(tmp_path: Path) -> None:
    _write(tmp_path / "labels.jsonl", _absolute_rows())
    code, report = _check(tmp_path, "labels.jsonl", "--min-agreement", "0.9", "--cache", "c")
    assert code == 1 and report["status"] == "fail"
    assert report["gates"]["minAgreement"]["passed"] is False
    code, again = _check(tmp_path, "labels.jsonl", "--min-agreement", "0.9", "--cache", "c")
    assert code == 1 and again["judge"]["calls"] == 0 and again["judge"]["cached"] == 12
    assert len(judge_log(tmp_path)) == 12


PAIRS = [("a", "a")] * 4 + [("b", "b")] * 3 + [("tie", "tie")] * 2 + [("a", "b"), ("b", "tie")]


def test_pairwise_agreement_kappa_and_swap_consistency(tmp_path: Path) -> None:
    rows = [
        {"id": f"p{i}", "prompt": "Write notes", "rubric": "r",
         "a": "BETTER a" if better == "a" else "plain a",
         "b": "BETTER b" if better == "b" else "plain b", "label": label}
        for i, (better, label) in enumerate(PAIRS)
    ]  # fmt: skip
    rows.append({"id": "both", "prompt": "p", "rubric": "r", "a": "x", "b": "y", "label": "a"})
    _write(tmp_path / "pairs.jsonl", rows)
    code, report = _check(tmp_path, "pairs.jsonl", "--jobs", "1")
    verdicts = [better for better, _ in PAIRS] + ["tie"]
    labels = [label for _, label in PAIRS] + ["a"]
    n = len(labels)
    po = Fraction(sum(v == lab for v, lab in zip(verdicts, labels, strict=True)), n)
    pe = sum(
        (Fraction(verdicts.count(k), n) * Fraction(labels.count(k), n) for k in ("a", "b", "tie")),
        Fraction(0),
    )
    assert code == 0 and report["kind"] == "pairwise"
    assert report["agreement"] == float(po)
    assert report["kappa"] == pytest.approx(float((po - pe) / (1 - pe)))
    assert report["swapConsistency"] == 1.0
    counts = [[0] * 3 for _ in range(3)]
    for v, lab in zip(verdicts, labels, strict=True):
        counts[("a", "b", "tie").index(lab)][("a", "b", "tie").index(v)] += 1
    assert report["confusion"] == {"labels": ["a", "b", "tie"], "counts": counts}
    requests = judge_log(tmp_path)
    assert len(requests) == 2 * n
    assert requests[0]["a"] == requests[1]["b"] and requests[0]["b"] == requests[1]["a"]


def test_a_position_biased_judge_is_seen(tmp_path: Path) -> None:
    rows = [
        {"id": f"p{i}", "prompt": "p", "rubric": "r", "a": "x", "b": "y", "label": "a"}
        for i in range(10)
    ]
    _write(tmp_path / "pairs.jsonl", rows)
    done = run_cli(
        tmp_path, "judge-check", "--cases", "pairs.jsonl", "--judge",
        judge_cmd(tmp_path, "--mode", "first"), "--format", "json",
    )  # fmt: skip
    report = _valid(json.loads(done.stdout))
    assert report["swapConsistency"] == 0.0 and report["agreement"] == 0.0


@pytest.mark.parametrize(
    ("rows", "code", "expected"),
    [
        ([{"id": "x", "prompt": "p", "rubric": "r", "answer": "a", "label": "yes"}] * 10, 5,
         "labels.jsonl:1: field label: must be true or false"),
        ([{"id": f"x{i}", "prompt": "p", "rubric": "r", "answer": "a", "label": True}
          for i in range(9)]
         + [{"id": "y", "prompt": "p", "rubric": "r", "a": "1", "b": "2", "label": "a"}], 5,
         "labels.jsonl:10: a pairwise example in a file of absolute examples"),
        ([{"id": "same", "prompt": "p", "rubric": "r", "answer": "a", "label": True}] * 10, 5,
         "labels.jsonl:2: field id: duplicate id"),
        ([{"id": f"x{i}", "prompt": "p", "rubric": "r", "answer": "a", "label": True}
          for i in range(9)], 6, "9 labelled example(s); at least 10"),
    ],
)  # fmt: skip
def test_bad_labels(tmp_path: Path, rows: list[dict[str, Any]], code: int, expected: str) -> None:
    _write(tmp_path / "labels.jsonl", rows)
    got, report = _check(tmp_path, "labels.jsonl")
    assert got == code and expected in report["messages"][0]
    assert not judge_log(tmp_path)


def test_a_failing_judge_is_exit_7(tmp_path: Path) -> None:
    rows = _absolute_rows()
    rows[3]["answer"] = "[[judge-exit]]"
    _write(tmp_path / "labels.jsonl", rows)
    code, report = _check(tmp_path, "labels.jsonl")
    assert code == 7 and report["status"] == "unavailable"
    assert report["failures"] == [{"caseId": "e3", "reason": "judge: exited with code 3"}]


def test_a_required_sandbox_that_is_unusable_starts_no_judge(tmp_path: Path) -> None:
    _write(tmp_path / "labels.jsonl", _absolute_rows())
    args = ["judge-check", "--cases", "labels.jsonl", "--judge", judge_cmd(tmp_path)]
    missing = str(tmp_path / "no-bwrap")
    done = run_cli(
        tmp_path, *args, "--sandbox", "required", "--format", "json",
        env={"SKILL_EVALS_BWRAP": missing},
    )  # fmt: skip
    report = _valid(json.loads(done.stdout))
    assert done.returncode == 7 and report["exitCode"] == 7
    assert report["failures"][0]["reason"] == (
        "judge: sandbox required but unusable: bwrap not found"
    )
    assert not judge_log(tmp_path)  # no judge ever started
