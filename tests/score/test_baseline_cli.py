"""`test --baseline DIR`: the baseline arm, the comparison block and its four gates, through the
CLI with a scripted runner that logs every invocation (docs/comparison.md)."""

from __future__ import annotations

import json
from pathlib import Path

import junitparser
import pytest

from skill_evals.report.markdown import escape_md
from tests._arms_helpers import (
    SKILL,
    make_baseline,
    make_cases,
    make_skill,
    run_test,
    script_for,
)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, bool]]:
    skill = make_skill(tmp_path / "skills")
    baseline = make_baseline(tmp_path, skill)
    cases = tmp_path / "cases.jsonl"
    labels = make_cases(cases, trigger_only=4, negatives=3, task=10)
    return skill, baseline, cases, labels


def paired(baseline: Path) -> tuple[str, ...]:
    """The arguments of a one-trial paired run against ``baseline``."""
    return ("--baseline", str(baseline), "--arms", "with,baseline", "--trials", "1",
            "--bootstrap-samples", "1000")  # fmt: skip


def test_baseline_arm_env_records_and_report(
    tmp_path: Path, setup: tuple[Path, Path, Path, dict[str, bool]]
) -> None:
    skill, baseline, cases, labels = setup
    record = tmp_path / "rec.jsonl"
    run = run_test(
        tmp_path,
        skill,
        cases,
        script_for(labels),
        "--baseline",
        str(baseline),
        "--trials",
        "2",
        "--record",
        str(record),
        "--bootstrap-samples",
        "1000",
    )
    assert run.code == 0, run.proc.stderr
    # Every case × trial × arm ran once; the baseline arm is told "with" and its directory.
    assert run.count() == 17 * 2 * 3
    assert run.count("with") == run.count("without") == run.count("baseline") == 34
    for _case, _trial, arm, variant, skill_dir in run.log:
        assert variant == ("without" if arm == "without" else "with")
        assert skill_dir == str((baseline if arm == "baseline" else skill).resolve())
    report = run.report
    assert report["arms"] == {
        "names": ["with", "without", "baseline"],
        "auto": False,
        "spotCheck": None,
    }
    assert report["baseline"]["name"] == SKILL
    assert report["baseline"]["path"] == str(baseline.resolve())
    assert report["baseline"]["directorySha256"] != report["skill"]["directorySha256"]
    comparison = report["comparison"]
    assert comparison["aa"] is False
    assert comparison["trigger"]["f1Difference"] == 0.0
    assert comparison["task"]["difference"] == 0.0
    # Files mark baseline observations as such.
    variants = [json.loads(line)["variant"] for line in record.read_text().splitlines()]
    assert variants.count("baseline") == 34
    # The record scores as --observations to the same comparison, and resumes to nothing new.
    scored = run_test(
        tmp_path,
        skill,
        cases,
        script_for(labels),
        "--baseline",
        str(baseline),
        "--trials",
        "2",
        "--bootstrap-samples",
        "1000",
        "--resume",
        str(record),
        name="resumed",
    )
    assert scored.count() == 0 and scored.code == 0
    assert scored.report["comparison"] == comparison


def test_observations_file_with_baseline_needs_the_baseline_option(
    tmp_path: Path, setup: tuple[Path, Path, Path, dict[str, bool]]
) -> None:
    skill, baseline, cases, labels = setup
    record = tmp_path / "rec.jsonl"
    first = run_test(
        tmp_path,
        skill,
        cases,
        script_for(labels),
        "--baseline",
        str(baseline),
        "--trials",
        "1",
        "--record",
        str(record),
        "--bootstrap-samples",
        "1000",
    )
    assert first.code == 0
    from tests.cli.test_cli import run_cli

    with_it = run_cli(
        [
            "test",
            "--skill",
            str(skill),
            "--cases",
            str(cases),
            "--observations",
            str(record),
            "--trials",
            "1",
            "--baseline",
            str(baseline),
            "--format",
            "json",
            "--bootstrap-samples",
            "1000",
        ]
    )
    assert with_it.returncode == 0, with_it.stderr
    assert json.loads(with_it.stdout)["comparison"] == first.report["comparison"]
    without_it = run_cli(
        [
            "test",
            "--skill",
            str(skill),
            "--cases",
            str(cases),
            "--observations",
            str(record),
            "--trials",
            "1",
        ]
    )
    assert without_it.returncode == 5
    assert "baseline observation needs --baseline DIR" in without_it.stderr


def test_aa_run_reports_aa_and_zero_differences(
    tmp_path: Path, setup: tuple[Path, Path, Path, dict[str, bool]]
) -> None:
    skill, _baseline, cases, labels = setup
    run = run_test(
        tmp_path,
        skill,
        cases,
        script_for(labels),
        "--baseline",
        str(skill),
        "--arms",
        "with,baseline",
        "--trials",
        "1",
        "--bootstrap-samples",
        "1000",
        "--max-f1-drop",
        "0",
        "--max-pass-drop",
        "0",
    )
    assert run.code == 0, run.proc.stderr
    assert run.count("without") == 0 and run.count("baseline") == 17
    comparison = run.report["comparison"]
    assert comparison["aa"] is True
    assert comparison["trigger"]["interval"]["lower"] == 0.0
    assert run.report["gates"]["maxF1Drop"] == {"threshold": 0.0, "value": 0.0, "passed": True}
    assert run.report["task"]["without"]["total"] == 0  # no without arm: no uplift figures
    assert run.report["task"]["difference"] is None


def test_worse_version_fails_the_drop_gates_and_every_output_shows_it(
    tmp_path: Path, setup: tuple[Path, Path, Path, dict[str, bool]]
) -> None:
    skill, baseline, cases, labels = setup
    # This version misses every trigger on the positives and fails every task; the baseline
    # is right everywhere.
    script = script_for(labels, with_={"trigger": False, "exit": 1})
    run = run_test(
        tmp_path,
        skill,
        cases,
        script,
        *paired(baseline),
        "--max-pass-drop",
        "0.2",
        "--min-pass-gain",
        "-0.5",
        name="worse",
        formats=True,
    )
    assert run.code == 1
    gates = run.report["gates"]
    assert gates["maxPassDrop"]["passed"] is False and gates["maxPassDrop"]["value"] == -1.0
    assert gates["minPassGain"]["passed"] is False
    task = run.report["comparison"]["task"]
    assert task["with"]["passRate"] == 0.0 and task["baseline"]["passRate"] == 1.0
    assert task["signTest"]["negative"] == 10
    work = tmp_path / "worse"
    expected = "pass rate 1.00 → 0.00 (-1.00 [-1.00, -1.00]) ▼ worse"
    assert expected in run.proc.stdout  # the text report
    assert escape_md(expected) in (work / "report.md").read_text(encoding="utf-8")
    assert expected in (work / "report.html").read_text(encoding="utf-8")
    suite = junitparser.JUnitXml.fromfile(str(work / "junit.xml"))
    cases_by_name = {case.name: case for s in suite for case in s}
    comparison_case = cases_by_name["comparison"]
    assert comparison_case.result and comparison_case.result[0].type == "failure"


def test_f1_interval_undefined_while_gated_is_unavailable(
    tmp_path: Path, setup: tuple[Path, Path, Path, dict[str, bool]]
) -> None:
    skill, baseline, cases, labels = setup
    # The baseline never triggers: its precision is undefined in every resample.
    script = script_for(labels, baseline={"trigger": False})
    run = run_test(
        tmp_path,
        skill,
        cases,
        script,
        *paired(baseline),
        "--max-f1-drop",
        "0.1",
    )
    assert run.code == 7
    interval = run.report["comparison"]["trigger"]["interval"]
    assert interval["lower"] is None and interval["undefinedResamples"] == 1000
    assert run.report["gates"]["maxF1Drop"]["passed"] is None
    assert any("--max-f1-drop is set but" in m for m in run.report["messages"])


def test_better_version_clears_the_gain_gate(
    tmp_path: Path, setup: tuple[Path, Path, Path, dict[str, bool]]
) -> None:
    skill, baseline, cases, labels = setup
    script = script_for(labels, baseline={"exit": 1, "trigger": True})  # baseline: every task fails
    run = run_test(
        tmp_path,
        skill,
        cases,
        script,
        *paired(baseline),
        "--min-pass-gain",
        "0.5",
        "--min-f1-gain",
        "0",
    )
    assert run.code == 0, run.report["messages"]
    comparison = run.report["comparison"]
    assert comparison["task"]["difference"] == 1.0
    # baseline triggers everywhere: 3 false positives of 17 → F1 = 28/31
    assert comparison["trigger"]["baseline"] == {"tp": 14, "fp": 3, "fn": 0, "f1": 28 / 31}
    assert comparison["trigger"]["f1Difference"] == pytest.approx(1 - 28 / 31)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--arms", "baseline"), "needs --baseline DIR"),
        (("--arms", "with,bogus"), "not an arm"),
        (("--arms", "with,with"), "given twice"),
        (("--arms", "without"), "must hold with"),
        (("--max-f1-drop", "0.1"), "compare with a baseline"),
        (("--arms", "with", "--min-uplift", "0"), "--arms must hold without"),
    ],
)
def test_invalid_arm_options_exit_5(
    tmp_path: Path,
    setup: tuple[Path, Path, Path, dict[str, bool]],
    args: tuple[str, ...],
    message: str,
) -> None:
    skill, _baseline, cases, labels = setup
    run = run_test(tmp_path, skill, cases, script_for(labels), *args)
    assert run.code == 5 and run.count() == 0
    assert message in run.report["messages"][0]


def test_baseline_with_another_name_or_left_out_exits_5(
    tmp_path: Path, setup: tuple[Path, Path, Path, dict[str, bool]]
) -> None:
    skill, baseline, cases, labels = setup
    other = tmp_path / "other" / "other-skill"
    other.mkdir(parents=True)
    (other / "SKILL.md").write_text("---\nname: other-skill\ndescription: x\n---\nbody\n")
    run = run_test(tmp_path, skill, cases, script_for(labels), "--baseline", str(other))
    assert run.code == 5 and run.count() == 0
    assert "names 'other-skill'" in run.report["messages"][0]
    left_out = run_test(
        tmp_path,
        skill,
        cases,
        script_for(labels),
        "--baseline",
        str(baseline),
        "--arms",
        "with,without",
        name="left-out",
    )
    assert left_out.code == 5 and "leaves baseline out" in left_out.report["messages"][0]
    inside = run_test(
        tmp_path,
        skill,
        cases,
        script_for(labels),
        "--baseline",
        str(baseline),
        "--junit",
        str(baseline / "junit.xml"),
        name="inside",
    )
    assert inside.code == 5 and "inside the baseline directory" in inside.report["messages"][0]


def test_baseline_changed_during_the_run_voids_the_evidence(
    tmp_path: Path, setup: tuple[Path, Path, Path, dict[str, bool]]
) -> None:
    skill, baseline, cases, labels = setup
    script = script_for(labels)
    script["touch"] = str(baseline / "notes.md")  # the runner writes into the baseline
    run = run_test(
        tmp_path,
        skill,
        cases,
        script,
        *paired(baseline),
        "--sandbox-path",  # only a writable baseline can be changed from the sandbox
        f"{baseline}:rw",
    )
    assert run.code == 7
    assert any("the baseline directory" in m and "changed" in m for m in run.report["messages"])


def test_baseline_observations_may_load_the_skill_without_breach(
    tmp_path: Path, setup: tuple[Path, Path, Path, dict[str, bool]]
) -> None:
    skill, baseline, cases, labels = setup
    run = run_test(
        tmp_path,
        skill,
        cases,
        script_for(labels),
        "--baseline",
        str(baseline),
        "--trials",
        "1",
        "--bootstrap-samples",
        "1000",
    )
    assert run.code == 0 and run.report["runner"]["failures"] == []
    breach = script_for(labels, breach=True)
    breach["cases"]["t0"]["without"]["trigger"] = True
    broken = run_test(
        tmp_path,
        skill,
        cases,
        breach,
        "--baseline",
        str(baseline),
        "--trials",
        "1",
        "--bootstrap-samples",
        "1000",
        name="breach",
    )
    assert broken.code == 7
    failures = broken.report["runner"]["failures"]
    assert [(f["caseId"], f["variant"]) for f in failures] == [("t0", "without")]
    assert failures[0]["reason"].startswith("isolation breach")
