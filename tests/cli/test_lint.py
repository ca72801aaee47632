"""`skill-evals lint` and the pre-flight of `test`, through the real CLI: every rule fires on a
case made for it, a clean suite full of near misses fires nothing, and the minimum detectable
uplift is checked against a brute-force binomial computed here."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from skill_evals.schemas import load_schema

SKILL = "invoice-audit"
SIMULATED = f"{sys.executable} -m skill_evals runner simulated"


def _cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def _skill(tmp: Path) -> Path:
    folder = tmp / SKILL
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        f"---\nname: {SKILL}\ndescription: Audit supplier invoices for totals, tax and duplicate "
        "charges.\n---\nCheck every invoice line.\n",
        encoding="utf-8",
    )
    return folder


def _write(tmp: Path, cases: list[dict[str, Any]], name: str = "cases.jsonl") -> Path:
    path = tmp / name
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return path


# Near misses of every rule: a prompt mentioning "invoice" and "audit" apart, "invoice-auditor"
# (the name inside a longer word), prompts differing in one word, includes_all strings of which
# only some are in the prompt, a pattern that needs a character, budgets just inside the limits.
CLEAN: list[dict[str, Any]] = [
    {"id": "p1", "prompt": "Check this invoice for a wrong VAT total.", "expectTrigger": True,
     "task": {"check": "includes_all", "expected": ["VAT", "corrected total"]}},
    {"id": "p2", "prompt": "Run an audit on the supplier invoice batch from May.",
     "expectTrigger": True, "task": {"check": "output_matches", "pattern": "total: \\d+"}},
    {"id": "p3", "prompt": "Is invoice 8812 charged twice?", "expectTrigger": True,
     "task": {"check": "max_turns", "value": 1000}},
    {"id": "p4", "prompt": "Use the invoice-auditor tool to check June.", "expectTrigger": True,
     "task": {"check": "max_tokens", "value": 100000000}},
    {"id": "p5", "prompt": "Do the tax lines of these invoices add up?", "expectTrigger": True,
     "task": {"check": "max_duration_ms", "value": 29999}},
    {"id": "p6", "prompt": "Find duplicate charges in the Q3 supplier bills.",
     "expectTrigger": True, "task": {"check": "command", "run": ["/bin/truex"]}},
    {"id": "n1", "prompt": "Write a poem about autumn leaves.", "expectTrigger": False,
     "task": {"check": "max_cost_usd", "value": 1000}},
    {"id": "n2", "prompt": "Write a poem about spring rain.", "expectTrigger": False,
     "task": {"check": "exit_code", "expected": 0}},
    {"id": "n3", "prompt": "Translate 'good morning' into Italian.", "expectTrigger": False,
     "task": {"check": "file_matches", "path": "out.txt", "pattern": "a+"}},
    {"id": "n4", "prompt": "What is the capital of Peru?", "expectTrigger": False,
     "task": {"check": "exit_code", "expected": 0}},
    {"id": "n5", "prompt": "Explain how a bicycle gear works.", "expectTrigger": False,
     "task": {"check": "exit_code", "expected": 0}},
]  # fmt: skip


def test_a_clean_suite_of_near_misses_fires_nothing(tmp_path: Path) -> None:
    skill = _skill(tmp_path)
    cases = _write(tmp_path, CLEAN)
    text = _cli("lint", "--skill", skill, "--cases", cases, "--strict")
    assert text.returncode == 0, text.stdout
    assert text.stdout == f"{cases}: no lint problems\n"
    result = json.loads(_cli("lint", "--skill", skill, "--cases", cases, "--format", "json").stdout)
    assert result == {"schemaVersion": 1, "problems": [], "mde": None}


def _case(case_id: str, prompt: str, expect: bool, task: dict[str, Any] | None = None) -> dict:
    case: dict[str, Any] = {"id": case_id, "prompt": prompt, "expectTrigger": expect}
    if task is not None:
        case["task"] = task
    return case


def _fired(tmp: Path, cases: list[dict[str, Any]], *extra: str) -> list[dict[str, Any]]:
    skill = tmp / SKILL
    if not skill.exists():
        _skill(tmp)
    path = _write(tmp, cases)
    result = _cli("lint", "--skill", skill, "--cases", path, "--format", "json", *extra)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, load_schema("lint.schema.json"))
    problems: list[dict[str, Any]] = document["problems"]
    return problems


@pytest.mark.parametrize(
    ("change", "rule", "case_ids"),
    [
        (lambda c: c[:4] + c[6:], "few-positives", []),
        (lambda c: c[:7] + c[9:], "few-negatives", []),
        (lambda c: [*c, _case("p1-copy", c[0]["prompt"] + "  ", True)], "duplicate-prompt",
         ["p1", "p1-copy"]),
        (lambda c: [*c, _case("p1-neg", c[0]["prompt"], False)], "conflicting-labels",
         ["p1", "p1-neg"]),
        (lambda c: [*c, _case("p1-loud", "CHECK this invoice, for a wrong VAT total!!", True)],
         "near-duplicate-prompt", ["p1", "p1-loud"]),
        (lambda c: [*c, _case("named", "Please use Invoice Audit on this.", True)],
         "prompt-names-skill", ["named"]),
        (lambda c: [*c, _case("named2", "run invoice-audit now", False)],
         "prompt-names-skill", ["named2"]),
        (lambda c: [*c, _case("v1", "Sum it.", True, {"check": "output_matches", "pattern": "x*"})],
         "vacuous-check", ["v1"]),
        (lambda c: [*c, _case("v2", "Sum it up.", True, {"check": "file_matches", "path": "a",
                                                           "pattern": "^", "flags": "m"})],
         "vacuous-check", ["v2"]),
        (lambda c: [*c, _case("v3", "Say VAT and total.", True,
                              {"check": "includes_all", "expected": ["VAT", "total"]})],
         "vacuous-check", ["v3"]),
        (lambda c: [*c, _case("v4", "Fix it.", True,
                              {"check": "command", "run": ["/usr/bin/true"]})],
         "vacuous-check", ["v4"]),
        (lambda c: [*c, _case("v5", "Go on.", True, {"check": "max_turns", "value": 1001})],
         "vacuous-check", ["v5"]),
        (lambda c: [*c, _case("v6", "Go.", True, {"check": "max_tokens", "value": 100000001})],
         "vacuous-check", ["v6"]),
        (lambda c: [*c, _case("v7", "Now.", True, {"check": "max_cost_usd", "value": 1000.5})],
         "vacuous-check", ["v7"]),
        (lambda c: [*c, _case("v8", "Then.", True, {"check": "max_duration_ms", "value": 30000})],
         "vacuous-check", ["v8"]),
    ],
)  # fmt: skip
def test_each_rule_fires_on_its_case(
    tmp_path: Path, change: Any, rule: str, case_ids: list
) -> None:
    problems = _fired(tmp_path, change([dict(c) for c in CLEAN]))
    assert [p["rule"] for p in problems] == [rule], problems
    assert problems[0]["caseIds"] == case_ids
    assert problems[0]["severity"] == "warning"
    for problem in problems:  # never a prompt in a message
        assert not any(c["prompt"] in problem["message"] for c in CLEAN)


def test_a_timeout_moves_the_duration_limit(tmp_path: Path) -> None:
    cases = [dict(c) for c in CLEAN]
    assert _fired(tmp_path, cases, "--timeout-ms", "20000")[0]["caseIds"] == ["p5"]


def _mde_brute(n: int, gate: Fraction) -> int:
    """min k with j*/n ≥ X, j* the least j with P(J ≤ j) ≥ 1/40 for J ~ Bin(n, k/n)."""
    for k in range(n + 1):
        p = Fraction(k, n)
        cumulative = Fraction(0)
        for j in range(n + 1):
            cumulative += math.comb(n, j) * p**j * (1 - p) ** (n - j)
            if cumulative >= Fraction(1, 40):
                break
        if Fraction(j, n) >= gate:
            return k
    raise AssertionError("no k")


@pytest.mark.parametrize(("units", "gate"), [(12, "0.1"), (10, "0.05"), (25, "0.3"), (11, "0.9")])
def test_the_minimum_detectable_uplift_is_exact(tmp_path: Path, units: int, gate: str) -> None:
    cases = [
        _case(f"t{i}", f"Task number {i} about topic {i * 7}", i % 2 == 0,
              {"check": "exit_code", "expected": 0})
        for i in range(units)
    ]  # fmt: skip
    skill = _skill(tmp_path)
    path = _write(tmp_path, cases)
    result = json.loads(
        _cli(
            "lint", "--skill", skill, "--cases", path, "--format", "json", "--min-uplift", gate
        ).stdout
    )
    k = _mde_brute(units, Fraction(gate))
    assert result["mde"] == {"units": units, "gate": float(gate), "k": k, "value": k / units}
    (mde,) = [p for p in result["problems"] if p["rule"] == "uplift-mde"]
    assert mde["severity"] == ("warning" if k / units >= 0.5 else "info")
    few = [p for p in result["problems"] if p["rule"] == "few-task-cases"]
    assert len(few) == (1 if units < 10 else 0)


def test_few_task_cases_fires_below_ten_task_units(tmp_path: Path) -> None:
    cases = [dict(c) for c in CLEAN]
    for case in cases[:2]:
        del case["task"]
    problems = _fired(tmp_path, cases, "--min-uplift", "0.2")
    assert [p["rule"] for p in problems][:1] == ["few-task-cases"]


def _observation(case: dict[str, Any], trial: int, variant: str, passed: bool) -> dict:
    return {
        "caseId": case["id"], "trial": trial, "variant": variant, "output": "",
        "invokedSkills": [SKILL] if variant == "with" and case["expectTrigger"] else [],
        "exitCode": 0 if passed else 1,
    }  # fmt: skip


def test_record_rules_find_non_discriminating_tasks_and_an_impossible_gate(tmp_path: Path) -> None:
    skill = _skill(tmp_path)
    cases = [
        _case(f"r{i}", f"Reconcile ledger number {i} of {i * 3} rows", i % 2 == 0,
              {"check": "exit_code", "expected": 0})
        for i in range(10)
    ]  # fmt: skip
    path = _write(tmp_path, cases)
    rows = []
    for i, case in enumerate(cases):
        for trial in (1, 2):
            # r0: always passes; r1: always fails; the others pass without the skill too,
            # except in trial 2 of r2..r4.
            with_pass = i != 1
            without_pass = i == 0 or not (2 <= i <= 4 and trial == 2)
            without_pass = without_pass and i != 1
            rows.append(_observation(case, trial, "with", with_pass))
            rows.append(_observation(case, trial, "without", without_pass))
    observations = tmp_path / "obs.jsonl"
    observations.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ["lint", "--skill", skill, "--cases", path, "--observations", observations,
            "--trials", "2", "--format", "json"]  # fmt: skip
    problems = json.loads(_cli(*args, "--min-uplift", "0.3").stdout)["problems"]
    flat = [p for p in problems if p["rule"] == "non-discriminating"]
    # r0 passes everywhere, r1 fails everywhere; r5..r9 pass everywhere too.
    assert [p["caseIds"] for p in flat] == [["r0"], ["r1"], ["r5"], ["r6"], ["r7"], ["r8"], ["r9"]]
    assert [p["rule"] for p in problems].count("uplift-gate-impossible") == 1
    # Against the recorded without runs, a perfect skill gains 1 on r1 and 0.5 on r2..r4: the
    # lower bound of that uplift clears a small gate.
    easy = json.loads(_cli(*args, "--min-uplift", "0.01").stdout)["problems"]
    assert "uplift-gate-impossible" not in [p["rule"] for p in easy]


def test_text_form_and_strict(tmp_path: Path) -> None:
    skill = _skill(tmp_path)
    cases = [*[dict(c) for c in CLEAN], _case("named", "ask invoice audit", True)]
    path = _write(tmp_path, cases)
    result = _cli("lint", "--skill", skill, "--cases", path)
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        f"{path}:12: warning: prompt-names-skill: 1 prompt(s) name the skill 'invoice-audit': "
        "the agent is told which skill to load, so triggering them proves little"
    ]
    assert _cli("lint", "--skill", skill, "--cases", path, "--strict").returncode == 5
    few = _write(tmp_path, CLEAN[:4] + CLEAN[6:], "few.jsonl")
    line = _cli("lint", "--skill", skill, "--cases", few).stdout.splitlines()[0]
    assert line.startswith(f"{few}: warning: few-positives: 4 independent case(s)")


def test_the_pre_flight_of_test_warns_once_records_and_is_strict(tmp_path: Path) -> None:
    skill = _skill(tmp_path)
    cases = [*[dict(c) for c in CLEAN[:2]], *[dict(c) for c in CLEAN[6:]],
             _case("n6", "Describe a sunset over the sea.", False),
             _case("n7", "List three kinds of cheese.", False),
             _case("named", "ask invoice audit", True)]  # fmt: skip
    path = _write(tmp_path, cases)
    report_file = tmp_path / "report.json"
    base = ["test", "--skill", skill, "--cases", path, "--runner", SIMULATED, "--trials", "1",
            "-q"]  # fmt: skip
    run = _cli(*base, "--report", report_file)
    lines = [line for line in run.stderr.splitlines() if ": warning: " in line]
    assert lines == [
        f"{path}: warning: few-positives: 3 independent case(s) with expectTrigger true; at "
        "least 5 make the trigger figures mean something",
        f"{path}:10: warning: prompt-names-skill: 1 prompt(s) name the skill 'invoice-audit': "
        "the agent is told which skill to load, so triggering them proves little",
    ]
    report = json.loads(report_file.read_text())
    assert [p["rule"] for p in report["lint"]] == ["few-positives", "prompt-names-skill"]
    assert report["runner"]["invocations"] > 0
    strict = _cli(*base, "--strict", "--report", report_file)
    assert strict.returncode == 5
    report = json.loads(report_file.read_text())
    assert report["status"] == "invalid" and report["runner"] is None  # nothing ran
    assert [p["rule"] for p in report["lint"]] == ["few-positives", "prompt-names-skill"]
    assert "lint found 2 warning(s) and strict is on" in strict.stderr
