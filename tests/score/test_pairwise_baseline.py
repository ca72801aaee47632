"""Pairwise judging against the baseline arm end to end: the real CLI with a table runner and the
scripted judge, arms with, without and baseline. A pair is (case, trial, compared arm), numbered
case, then trial, then arm (without before baseline), each taking its own draw; the with
observation carries one verdict per compared arm; the uplift is the preference over without and
the comparison's task the preference over the baseline, both gated — every figure compared with
values computed here from the constructed table."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests._judge_helpers import (
    DESCRIPTION,
    SKILL,
    bootstrap,
    cli_args,
    judge_cmd,
    judge_log,
    mulberry32_draws,
    report_of,
    run_cli,
    runner_log,
    sign_test,
)
from tests.conftest import assert_valid_report, write_jsonl, write_skill

RUBRIC = "Which release notes are clearer for users?"
TRIALS = 2
SAMPLES = 2000
ARMS = ("without", "baseline")  # the compared arms, in pair order
LETTER = {"with": "w", "without": "o", "baseline": "b"}
# Per case: the arms whose answer holds BETTER ("w" with, "o" without, "b" baseline).
PLAN = ["w", "w", "wo", "wb", "b", "o", "", "w", "ob", "w", "w", "b"]
SHARED = ("c10", "c11")  # one prompt: one unit of two cases (11 units)
FIRSTWINS = ("c7", "baseline")  # its baseline answers make the judge name "a": inconsistent asks
BASELINE_FAILS = "c9"  # the baseline exits 1: the with answer preferred, nothing asked
WITH_FAILS = ("c1", 2)  # trial 2 of c1 exits 1 with the skill: both pairs prefer the other


def _fails(case: str, trial: int, arm: str) -> bool:
    return (arm == "with" and (case, trial) == WITH_FAILS) or (
        arm == "baseline" and case == BASELINE_FAILS
    )


def _answer(i: int, trial: int, arm: str) -> str:
    tag = f"{LETTER[arm]}{i}t{trial} "
    marker = "FIRSTWINS" if (f"c{i}", arm) == FIRSTWINS else ""
    return tag + ("BETTER" if LETTER[arm] in PLAN[i] else "plain") + marker


def _pair(i: int, trial: int, arm: str) -> tuple[int, bool | None]:
    """The pref of one pair and whether its asks agree (None: nothing asked)."""
    case = f"c{i}"
    failed = _fails(case, trial, "with"), _fails(case, trial, arm)
    if any(failed):
        return (0 if all(failed) else -1 if failed[0] else 1), None
    if (case, arm) == FIRSTWINS:
        return 0, False
    w, other = "w" in PLAN[i], LETTER[arm] in PLAN[i]
    return (1 if w and not other else -1 if other and not w else 0), True


def _expected(arm: str) -> dict[str, Any]:
    """The preference figures over ``arm`` computed from the table alone."""
    units: dict[str, list[int]] = {}
    prefs = [(i, t, *_pair(i, t, arm)) for i in range(len(PLAN)) for t in range(1, TRIALS + 1)]
    for i, _, pref, _ in prefs:
        units.setdefault("shared" if f"c{i}" in SHARED else f"c{i}", []).append(pref)
    values = [Fraction(sum(v), len(v)) for v in units.values()]
    lower, upper = bootstrap(values, SAMPLES, 42)
    with_n = sum(1 for *_, p, _ in prefs if p > 0)
    other_n = sum(1 for *_, p, _ in prefs if p < 0)
    return {
        "units": len(values),
        "difference": float(sum(values, Fraction(0)) / len(values)),
        "interval": (lower, upper),
        "signTest": sign_test(values),
        "pairwise": {
            "pairs": len(prefs),
            "withPreferred": with_n,
            "otherPreferred": other_n,
            "ties": len(prefs) - with_n - other_n,
            "inconsistent": sum(1 for *_, c in prefs if c is False),
            "decidedByGrades": sum(1 for *_, p, c in prefs if c is False and p != 0),
            "preferenceShare": with_n / (with_n + other_n),
        },
        "asked": sum(1 for *_, c in prefs if c is not None),
        "consistent": sum(1 for *_, c in prefs if c is True),
    }


def _write_suite(root: Path, rubric: str = RUBRIC) -> None:
    root.mkdir(parents=True, exist_ok=True)
    write_skill(root, SKILL, DESCRIPTION, "# Release notes\n\nTitle, summary, changes.\n")
    write_skill(root / "baseline", SKILL, DESCRIPTION, "# Release notes\n\nA list of changes.\n")
    cases, rows = [], {}
    for i in range(len(PLAN)):
        case = f"c{i}"
        n = 10 if case in SHARED else i
        # c11's prompt differs from c10's in its bytes only: one unit, two cache keys.
        space = " " if case == SHARED[1] else ""
        prompt = f"Write the release notes of version 2.{n} for the widget library{space}"
        task = [{"check": "judge_pairwise", "rubric": rubric}]
        cases.append({"id": case, "prompt": prompt, "expectTrigger": True, "task": task})
        rows[case] = {
            arm: [
                {"output": _answer(i, t, arm), "exitCode": 1 if _fails(case, t, arm) else 0}
                for t in range(1, TRIALS + 1)
            ]
            for arm in ("with", "without", "baseline")
        }
    write_jsonl(root / "cases.jsonl", cases)
    (root / "table.json").write_text(json.dumps({"skill": SKILL, "cases": rows}), "utf-8")


GATES = ("--min-uplift", "-0.5", "--min-pass-gain", "-0.5", "--max-pass-drop", "0.5")
COMMON = ("--trials", str(TRIALS), "--bootstrap-samples", str(SAMPLES), "--jobs", "1")


def _args(root: Path, *more: str, runner: bool = True) -> list[str]:
    return cli_args(
        root, "--judge", judge_cmd(root), "--baseline", f"baseline/{SKILL}", *COMMON, *more,
        runner=runner,
    )  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("pairwise-baseline")
    _write_suite(root)
    outputs = ("--report", "r.json", "--markdown", "r.md", "--junit", "r.xml", "--html", "r.html")
    args = _args(root, "--record", "rec.jsonl", "--cache", "cache", *GATES, *outputs)
    done = run_cli(root, *args)
    return {"root": root, "done": done, "report": report_of(root / "r.json")}


def _figures_match(block: dict[str, Any], arm: str) -> None:
    want = _expected(arm)
    assert block["mode"] == "pairwise"
    assert block["units"] == want["units"] == 11 and block["insufficient"] is False
    assert block["difference"] == pytest.approx(want["difference"])
    interval = block["interval"]
    assert (interval["lower"], interval["upper"]) == pytest.approx(want["interval"])
    assert block["signTest"] == want["signTest"]
    assert block["pairwise"] == want["pairwise"]


def test_the_uplift_and_the_comparison_are_exact_on_the_constructed_table(
    run: dict[str, Any],
) -> None:
    report = run["report"]
    assert_valid_report(report)
    assert run["done"].returncode == 0, run["done"].stdout + run["done"].stderr
    task, compared = report["task"], report["comparison"]["task"]
    _figures_match(task, "without")
    assert task["with"] is None and task["without"] is None
    _figures_match(compared, "baseline")
    assert compared["with"] is None and compared["baseline"] is None
    assert compared["flips"] is None
    gates = report["gates"]
    assert gates["minUplift"]["value"] == pytest.approx(_expected("without")["interval"][0])
    assert gates["minPassGain"]["value"] == pytest.approx(_expected("baseline")["interval"][0])
    assert gates["maxPassDrop"]["value"] == pytest.approx(_expected("baseline")["interval"][1])
    assert all(gates[k]["passed"] for k in ("minUplift", "minPassGain", "maxPassDrop"))


def test_every_case_gives_its_preference_per_compared_arm(run: dict[str, Any]) -> None:
    results = {c["id"]: c for c in run["report"]["caseResults"]}
    for i in range(len(PLAN)):
        assert results[f"c{i}"]["preference"] == {
            arm: [_pair(i, t, arm)[0] for t in range(1, TRIALS + 1)] for arm in ARMS
        }


def test_swap_consistency_and_calls_are_over_both_arms(run: dict[str, Any]) -> None:
    judge = run["report"]["judge"]
    asked = sum(_expected(arm)["asked"] for arm in ARMS)
    consistent = sum(_expected(arm)["consistent"] for arm in ARMS)
    assert judge["swapConsistency"] == pytest.approx(consistent / asked)
    # An inconsistent pair's two answers are graded alone as well (the absolute fallback).
    calls = 2 * asked + 2 * (asked - consistent)
    assert judge["calls"] == calls == len(judge_log(run["root"]))
    assert run["report"]["runner"]["ledger"]["judge"]["calls"] == calls


def test_each_pair_takes_its_own_draw_case_then_trial_then_arm(run: dict[str, Any]) -> None:
    requests = [r for r in judge_log(run["root"]) if r["kind"] == "pairwise"]  # not the grades
    draws = iter(mulberry32_draws(42, len(PLAN) * TRIALS * len(ARMS)))
    for i in range(len(PLAN)):
        for t in range(1, TRIALS + 1):
            for arm in ARMS:
                draw = next(draws)  # an unasked pair keeps its draw
                mine, theirs = f"w{i}t{t} ", f"{LETTER[arm]}{i}t{t} "
                shown = [
                    {r["a"]["output"][: len(mine)], r["b"]["output"][: len(mine)]} for r in requests
                ]
                asks = [
                    r for r, tags in zip(requests, shown, strict=True) if tags == {mine, theirs}
                ]
                if _pair(i, t, arm)[1] is None:
                    assert asks == []
                    continue
                first, second = asks
                assert first["a"]["output"].startswith(mine) is (draw < 0.5)
                assert first["a"] == second["b"] and first["b"] == second["a"]
                assert set(first) == {"kind", "prompt", "rubric", "a", "b", "_env"}


def test_the_with_record_holds_one_verdict_per_compared_arm(run: dict[str, Any]) -> None:
    lines = [json.loads(x) for x in (run["root"] / "rec.jsonl").read_text("utf-8").splitlines()]
    last = {(r["caseId"], r["trial"], r["variant"]): r for r in lines}
    entries = last[("c3", 1, "with")]["judge"]
    assert [(e["check"], e["against"]) for e in entries] == [(0, "without"), (0, "baseline")]
    assert [e["preference"] for e in entries] == [_pair(3, 1, arm)[0] for arm in ARMS]
    assert all(len(e["asks"]) == 2 for e in entries)
    assert "judge" not in last[("c3", 1, "baseline")] and "judge" not in last[("c3", 1, "without")]


def test_the_outputs_show_the_preference_over_the_baseline(run: dict[str, Any]) -> None:
    root, want = run["root"], _expected("baseline")["pairwise"]
    counts = (
        f"{want['pairs']} pairs: with preferred {want['withPreferred']}, baseline preferred "
        f"{want['otherPreferred']}, {want['ties']} ties ({want['inconsistent']} inconsistent)"
    )
    text = run["done"].stdout
    assert "preference over the baseline" in text and counts in text
    assert "preference difference lower bound" in text and "pass-rate" not in text
    markdown = (root / "r.md").read_text("utf-8")
    assert counts.replace("(", "\\(").replace(")", "\\)") in markdown  # escaped
    assert "None" not in markdown
    html = (root / "r.html").read_text("utf-8")
    assert counts in html and "preference difference upper bound" in html
    junit = ET.parse(root / "r.xml").getroot()
    case = next(c for c in junit.iter("testcase") if c.get("name") == "comparison")
    assert counts in (case.findtext("system-out") or "")
    assert "preference difference lower bound" in markdown


def _reruns_nothing(run: dict[str, Any], reused: str, *options: str, runner: bool = True) -> None:
    """Scoring the run again with ``options`` starts no runner and no judge: every verdict is
    reused (counted under ``reused``) and the figures are the run's."""
    root = run["root"]
    runs, asks = len(runner_log(root)), len(judge_log(root))
    done = run_cli(root, *_args(root, *options, *GATES, "--format", "json", runner=runner))
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert (len(runner_log(root)), len(judge_log(root))) == (runs, asks)
    assert report["judge"]["calls"] == 0
    assert report["judge"][reused] == run["report"]["judge"]["calls"]
    assert report["task"] == run["report"]["task"]
    assert report["comparison"]["task"] == run["report"]["comparison"]["task"]


def test_rescoring_the_record_runs_and_asks_nothing(run: dict[str, Any]) -> None:
    _reruns_nothing(run, "resumed", "--observations", "rec.jsonl", runner=False)


def test_a_rerun_from_the_cache_runs_and_asks_nothing(run: dict[str, Any]) -> None:
    _reruns_nothing(run, "cached", "--cache", "cache")


def test_resuming_the_record_runs_and_asks_nothing(run: dict[str, Any]) -> None:
    _reruns_nothing(run, "resumed", "--resume", "rec.jsonl")


def test_a_gate_on_the_preference_over_the_baseline_fails_with_its_reason(
    run: dict[str, Any],
) -> None:
    root = run["root"]
    args = _args(root, "--observations", "rec.jsonl", "--min-pass-gain", "0.9", runner=False)
    done = run_cli(root, *args, "--format", "json")
    report = json.loads(done.stdout)
    assert done.returncode == 1
    gate = report["gates"]["minPassGain"]
    assert gate["passed"] is False
    assert gate["value"] == pytest.approx(_expected("baseline")["interval"][0])
    assert any("preference difference to the baseline" in m for m in report["messages"])


def test_a_rubric_edit_re_judges_only(tmp_path: Path, run: dict[str, Any]) -> None:
    root = tmp_path / "edited"
    _write_suite(root, rubric="Which notes name every breaking change?")
    cache = run["root"] / "cache"
    done = run_cli(root, *_args(root, "--cache", str(cache), "--format", "json"))
    report = json.loads(done.stdout)
    assert_valid_report(report)
    asked = sum(_expected(arm)["asked"] for arm in ARMS)
    consistent = sum(_expected(arm)["consistent"] for arm in ARMS)
    assert runner_log(root) == []  # every observation came from the cache
    calls = 2 * asked + 2 * (asked - consistent)  # the inconsistent pairs' grades too
    assert report["judge"]["calls"] == calls == len(judge_log(root))
    assert {r["rubric"] for r in judge_log(root)} == {"Which notes name every breaking change?"}
    assert report["comparison"]["task"] == run["report"]["comparison"]["task"]


def test_a_judge_that_always_prefers_one_position_yields_only_ties(tmp_path: Path) -> None:
    _write_suite(tmp_path)
    args = cli_args(
        tmp_path, "--judge", judge_cmd(tmp_path, "--mode", "first"), "--baseline",
        f"baseline/{SKILL}", *COMMON, "--format", "json",
    )  # fmt: skip
    report = json.loads(run_cli(tmp_path, *args).stdout)
    assert_valid_report(report)
    for block, arm in ((report["task"], "without"), (report["comparison"]["task"], "baseline")):
        counts, want = block["pairwise"], _expected(arm)
        assert counts["withPreferred"] == sum(
            1 for i in range(len(PLAN)) for t in (1, 2) if _pair(i, t, arm) == (1, None)
        )  # only the pairs decided by an exit code are not ties
        assert counts["inconsistent"] == want["asked"]
    assert report["judge"]["swapConsistency"] == 0.0


def test_only_the_baseline_compared_numbers_its_pairs_alone(tmp_path: Path) -> None:
    _write_suite(tmp_path)
    args = cli_args(
        tmp_path, "--judge", judge_cmd(tmp_path), "--baseline", f"baseline/{SKILL}",
        "--arms", "with,baseline", *COMMON, "--format", "json",
    )  # fmt: skip
    report = json.loads(run_cli(tmp_path, *args).stdout)
    assert_valid_report(report)
    assert report["task"]["pairwise"]["pairs"] == 0
    assert report["comparison"]["task"]["pairwise"] == _expected("baseline")["pairwise"]
    assert {a for line in runner_log(tmp_path) for a in line.split()[2:]} == {"with", "baseline"}
    draws = iter(mulberry32_draws(42, len(PLAN) * TRIALS))
    requests = [r for r in judge_log(tmp_path) if r["kind"] == "pairwise"]
    for i in range(len(PLAN)):
        for t in range(1, TRIALS + 1):
            draw, mine = next(draws), f"w{i}t{t} "
            asks = [r for r in requests if mine in (r["a"]["output"] + r["b"]["output"])]
            if asks:
                assert asks[0]["a"]["output"].startswith(mine) is (draw < 0.5)
    results = {c["id"]: c for c in report["caseResults"]}
    assert set(results["c0"]["preference"]) == {"baseline"}


def test_pairwise_needs_an_arm_to_compare_with(tmp_path: Path) -> None:
    _write_suite(tmp_path)
    args = cli_args(tmp_path, "--judge", judge_cmd(tmp_path), "--arms", "with")
    done = run_cli(tmp_path, *args)
    assert done.returncode == 5
    assert "--arms: judge_pairwise compares the with answers" in done.stderr
    assert runner_log(tmp_path) == [] and judge_log(tmp_path) == []


def test_the_judge_budget_counts_the_asks_of_both_arms(run: dict[str, Any]) -> None:
    root = run["root"]
    asks = len(judge_log(root))
    other = judge_cmd(root, "--mode", "markers")  # another judge: every ask is new
    args = _args(root, "--observations", "rec.jsonl", runner=False)
    args[args.index("--judge") + 1] = other
    done = run_cli(root, *args, "--max-judge-calls", "30", "--format", "json")
    report = json.loads(done.stdout)
    assert_valid_report(report)
    assert done.returncode == 7
    assert report["judge"]["calls"] == 30 == len(judge_log(root)) - asks
    assert "judge budget reached after 30 judge calls" in report["messages"]
