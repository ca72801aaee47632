"""Conformance of `skill-evals test` to its documented behaviour, checked through the real CLI.

An independent audit of the rules line by line: each test names the rule it guards. Tests marked
"regression" failed before the fix that came with them. The runner is a small Python script
(written per test) so that each rule can be provoked exactly; everything runs offline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import junitparser
import pytest

from skill_evals.errors import InvalidInput
from skill_evals.escaping.invisible import show_invisible
from skill_evals.report.blocks import Settings, error_report
from skill_evals.report.markdown import escape_md, render_markdown
from skill_evals.run.observations import ContractError
from skill_evals.run.records import load_observations
from skill_evals.run.runner_output import parse_stdout
from skill_evals.suite.cases import load_cases
from tests.conftest import assert_valid_report, write_jsonl, write_skill

SECRET_PROMPT = "zebra-confidential-prompt"
SECRET_OUTPUT = "walrus-confidential-output"
SECRET_STDERR = "okapi-confidential-stderr"

# A runner whose behaviour is chosen per case id (via MODES, a JSON map case id → mode) and by
# the environment: triggers on prompts containing "trigger" in the with variant, answers
# SECRET_OUTPUT, and can edit the skill dir, breach isolation, report meta or dump its env.
RUNNER = r"""
import json, os, sys
prompt = sys.stdin.read()
variant = os.environ["EVALGATE_SKILL_VARIANT"]
case_id = os.environ["EVALGATE_SKILL_CASE_ID"]
skill_dir = os.environ["EVALGATE_SKILL_DIR"]
skill = os.path.basename(skill_dir)
mode = json.loads(os.environ.get("MODES", "{}")).get(case_id, os.environ.get("MODE", ""))
marker = os.environ.get("MARKER")
if marker:
    open(marker, "a").close()
sys.stderr.write("%s\n" % os.environ.get("STDERR_TEXT", ""))
out = {
    "variant": variant,
    "invokedSkills": [skill] if variant == "with" and "trigger" in prompt else [],
    "output": "%s %s" % (os.environ.get("OUTPUT_TEXT", "ok"), "done"),
    "exitCode": 0,
}
if mode == "edit" and variant == "with":
    with open(os.path.join(skill_dir, "notes.txt"), "a") as fh:
        fh.write("edited during the run\n")
if mode == "breach" and variant == "without":
    out["invokedSkills"] = [skill]
if mode == "meta":
    out["meta"] = {"durationMs": 10, "costUsd": 0.25, "inputTokens": 3, "extra": "ignored"}
if mode == "env":
    out["output"] = json.dumps(
        {k: v for k, v in os.environ.items() if k.startswith("EVALGATE_SKILL_")}
    )
print(json.dumps(out))
"""


def run_cli(
    args: Sequence[str], env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, PYTHONUNBUFFERED="1", **(env or {})),
    )


def make_cases(n: int, *, task: bool = True, ids: Sequence[str] | None = None) -> list[dict]:
    """n cases with distinct prompts; even ones expect (and get) a trigger."""
    cases: list[dict[str, Any]] = []
    for i in range(n):
        expect = i % 2 == 0
        case: dict[str, Any] = {
            "id": ids[i] if ids else f"c{i:02d}",
            "prompt": f"{SECRET_PROMPT} number {i} " + ("trigger" if expect else "other"),
            "expectTrigger": expect,
        }
        if task:
            case["task"] = {"check": "includes_all", "expected": ["done"]}
        cases.append(case)
    return cases


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, Any]:
    skill = write_skill(tmp_path, name="sk")
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER, encoding="utf-8")
    cases = write_jsonl(tmp_path / "cases.jsonl", make_cases(10))
    return {
        "tmp": tmp_path,
        "skill": skill,
        "cases": cases,
        "runner": f"{sys.executable} -S {runner}",
    }


def cli_args(s: dict[str, Any], *extra: str, cases: Path | None = None) -> list[str]:
    return [
        "test",
        "--skill",
        str(s["skill"]),
        "--cases",
        str(cases or s["cases"]),
        "--runner",
        s["runner"],
        "--trials",
        "1",
        "-q",
        *extra,
    ]


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("skill-evals: error: "), lines
    return lines[0]


# ---------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    "option", ["--min-trigger-f1", "--min-uplift"], ids=["min-trigger-f1", "min-uplift"]
)
@pytest.mark.parametrize("value", ["nan", "NaN", "-nan"])
def test_nan_threshold_is_out_of_range_exit_5(
    setup: dict[str, Any], option: str, value: str
) -> None:
    """Regression: click's FloatRange let NaN through (exit 1, or 70 with --format json)."""
    proc = run_cli([*cli_args(setup, option, value, "--format", "json")])
    assert proc.returncode == 5, proc.stderr
    assert option in one_error_line(proc)
    assert proc.stdout == ""


@pytest.mark.parametrize("fmt", ["json", "markdown", "junit"])
def test_error_exit_prints_one_stderr_line_in_every_format(setup: dict[str, Any], fmt: str) -> None:
    """Regression: with a non-text --format, exit 5/6/7 printed nothing on stderr."""
    nine = write_jsonl(setup["tmp"] / "nine.jsonl", make_cases(9))
    proc = run_cli(cli_args(setup, "--format", fmt, cases=nine))
    assert proc.returncode == 6
    assert "9 independent case(s)" in one_error_line(proc)
    if fmt == "json":
        report = json.loads(proc.stdout)
        assert_valid_report(report)
        assert report["status"] == "insufficient"
    elif fmt == "junit":
        xml = junitparser.JUnitXml.fromstring(proc.stdout)
        assert xml.errors == 1
    else:
        assert "insufficient" in proc.stdout
        # Not scored: the uplift cell must not claim the cases have no task checks.
        assert "no task checks" not in proc.stdout


@pytest.mark.parametrize("option", ["--report", "--junit", "--markdown", "--record"])
def test_unwritable_output_exits_5_before_any_runner_starts(
    setup: dict[str, Any], option: str
) -> None:
    """Regression: an unwritable --report/--junit/--markdown was found only after the whole run
    (money spent, then exit 5 without the report)."""
    tmp = setup["tmp"]
    (tmp / "plain-file").write_text("x", encoding="utf-8")
    marker = tmp / "runner-started"
    target = tmp / "plain-file" / "sub" / "out.txt"
    proc = run_cli(cli_args(setup, option, str(target)), env={"MARKER": str(marker)})
    assert proc.returncode == 5, proc.stderr
    line = one_error_line(proc)
    assert str(target) in line and "not a directory" in line
    assert not marker.exists(), "a runner started although the output cannot be written"


def test_unwritable_record_beats_insufficient_units(setup: dict[str, Any]) -> None:
    """Regression (precedence 5 > 6): the --record file was opened only after the 6 check."""
    tmp = setup["tmp"]
    (tmp / "plain-file").write_text("x", encoding="utf-8")
    nine = write_jsonl(tmp / "nine.jsonl", make_cases(9))
    proc = run_cli(cli_args(setup, "--record", str(tmp / "plain-file" / "r.jsonl"), cases=nine))
    assert proc.returncode == 5, proc.stderr


@pytest.mark.parametrize("option", ["--report", "--junit", "--markdown", "--record"])
def test_output_path_that_is_the_cases_file_exits_5_and_leaves_it_intact(
    setup: dict[str, Any], option: str
) -> None:
    """Regression: `--report cases.jsonl` exited 5 but still wrote the report over the cases."""
    before = setup["cases"].read_bytes()
    proc = run_cli(cli_args(setup, option, str(setup["cases"])))
    assert proc.returncode == 5, proc.stderr
    assert "--cases input file" in one_error_line(proc)
    assert setup["cases"].read_bytes() == before


def test_two_outputs_on_one_file_exit_5(setup: dict[str, Any]) -> None:
    out = setup["tmp"] / "out.txt"
    proc = run_cli(cli_args(setup, "--report", str(out), "--junit", str(out)))
    assert proc.returncode == 5, proc.stderr
    assert "two outputs" in one_error_line(proc)


def test_record_or_resume_with_observations_exits_5(setup: dict[str, Any]) -> None:
    """--record/--resume only mean something with --runner; silently ignoring them would leave
    the user without the record file they asked for."""
    tmp = setup["tmp"]
    record = tmp / "rec.jsonl"
    proc = run_cli(cli_args(setup, "--record", str(record)))
    assert proc.returncode == 0, proc.stderr
    proc = run_cli(
        [
            "test",
            "--skill",
            str(setup["skill"]),
            "--cases",
            str(setup["cases"]),
            "--observations",
            str(record),
            "--trials",
            "1",
            "--record",
            str(tmp / "other.jsonl"),
        ]
    )
    assert proc.returncode == 5
    assert "--runner only" in one_error_line(proc)
    assert not (tmp / "other.jsonl").exists()


def test_resume_and_record_on_the_same_file_complete_the_run(setup: dict[str, Any]) -> None:
    """--resume F --record F reuses what F holds and appends only the missing ones."""
    tmp = setup["tmp"]
    record = tmp / "rec.jsonl"
    assert run_cli(cli_args(setup, "--record", str(record))).returncode == 0
    lines = record.read_text(encoding="utf-8").splitlines()
    record.write_text("\n".join(lines[:5]) + "\n", encoding="utf-8")
    proc = run_cli(
        cli_args(setup, "--resume", str(record), "--record", str(record), "--format", "json")
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["runner"]["invocations"] == 20 - 5
    keys = {(r["caseId"], r["trial"], r["variant"]) for r in map(json.loads, record.open())}
    assert len(keys) == 20 == len(record.read_text(encoding="utf-8").splitlines())


# ------------------------------------------------------------------------------ skill


def test_skill_dir_edited_during_the_run_exits_7(setup: dict[str, Any]) -> None:
    """The directory is hashed before the first and after the last invocation."""
    # Sandboxed, the skill is read-only to the runner: let it write there to test the check.
    writable = ["--sandbox-path", f"{setup['skill']}:rw"]
    proc = run_cli(
        cli_args(setup, "--format", "json", "--jobs", "1", *writable),
        env={"MODES": '{"c03": "edit"}'},
    )
    assert proc.returncode == 7, proc.stderr
    report = json.loads(proc.stdout)
    assert_valid_report(report)
    assert report["status"] == "unavailable"
    assert any("changed during the run" in m for m in report["messages"])
    assert "changed during the run" in one_error_line(proc)


@pytest.mark.parametrize("kind", ["symlink", "dir-symlink", "newline-file", "newline-dir"])
def test_symlink_or_newline_in_skill_dir_exits_5(setup: dict[str, Any], kind: str) -> None:
    skill: Path = setup["skill"]
    if kind == "symlink":
        (skill / "ref.md").symlink_to(skill / "SKILL.md")
    elif kind == "dir-symlink":
        (skill / "deep").mkdir()
        (skill / "deep" / "up").symlink_to(setup["tmp"])
    elif kind == "newline-file":
        (skill / "a\nb.md").write_text("x", encoding="utf-8")
    else:
        (skill / "a\nb").mkdir()
        (skill / "a\nb" / "f").write_text("x", encoding="utf-8")
    proc = run_cli(cli_args(setup))
    assert proc.returncode == 5
    line = one_error_line(proc)
    assert ("symlink" in line) if "symlink" in kind else ("newline" in line)


def test_empty_description_is_a_warning_not_a_crash(setup: dict[str, Any]) -> None:
    (setup["skill"] / "SKILL.md").write_text(
        '---\nname: sk\ndescription: ""\n---\nbody\n', encoding="utf-8"
    )
    proc = run_cli(cli_args(setup, "--format", "json"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert any("description" in w for w in report["skill"]["warnings"])


# -------------------------------------------------------------------- runner contract


def test_runner_env_meta_sums_and_no_secrets_in_any_format(setup: dict[str, Any]) -> None:
    """Runner environment; meta sums (unknown keys ignored); no prompt/output/stderr reported."""
    tmp = setup["tmp"]
    record = tmp / "rec.jsonl"
    modes = {f"c{i:02d}": "meta" for i in range(1, 10)}
    modes["c00"] = "env"
    env = {
        "MODES": json.dumps(modes),
        "OUTPUT_TEXT": SECRET_OUTPUT,
        "STDERR_TEXT": SECRET_STDERR,
    }
    outputs = {
        "report": tmp / "r.json",
        "junit": tmp / "r.xml",
        "markdown": tmp / "r.md",
    }
    args = [f"--{k}={v}" for k, v in outputs.items()]
    proc = run_cli(cli_args(setup, "--record", str(record), *args), env=env)
    assert proc.returncode == 0, proc.stderr
    seen = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    for obs in (o for o in seen if o["caseId"] == "c00"):
        assert json.loads(obs["output"]) == {
            "EVALGATE_SKILL_VARIANT": obs["variant"],
            "EVALGATE_SKILL_DIR": str(setup["skill"].resolve()),
            "EVALGATE_SKILL_CASE_ID": "c00",
            "EVALGATE_SKILL_TRIAL": "1",
        }
    report = json.loads(outputs["report"].read_text(encoding="utf-8"))
    assert_valid_report(report)
    # 9 cases × 2 variants reported meta; c00 did not (no meta key at all).
    assert report["runner"]["meta"] == {
        "durationMs": 180,
        "costUsd": 4.5,
        "inputTokens": 54,
        "outputTokens": None,
        "turns": None,
    }
    for text in (
        proc.stdout,
        proc.stderr,
        *(p.read_text(encoding="utf-8") for p in outputs.values()),
    ):
        for secret in (SECRET_PROMPT, SECRET_OUTPUT, SECRET_STDERR):
            assert secret not in text


def test_without_variant_listing_the_skill_is_an_isolation_breach(setup: dict[str, Any]) -> None:
    proc = run_cli(
        cli_args(setup, "--format", "json", "--keep-going"),
        env={"MODES": '{"c04": "breach"}'},
    )
    assert proc.returncode == 7
    report = json.loads(proc.stdout)
    assert report["runner"]["failures"] == [
        {
            "caseId": "c04",
            "trial": 1,
            "variant": "without",
            "reason": (
                "isolation breach: the without variant reported loading the tested skill 'sk'"
            ),
        }
    ]


def test_contract_error_says_invalid_json_once() -> None:
    """Regression: "stdout is not strict JSON: invalid JSON: …" carried the prefix twice."""
    with pytest.raises(ContractError) as info:
        parse_stdout(b'{"variant": "with", oops}\n', "with")
    message = str(info.value)
    assert message.startswith("stdout is not strict JSON: Expecting")
    assert "invalid JSON" not in message and "oops" not in message
    with pytest.raises(ContractError, match=r"^stdout is not strict JSON: NaN is not allowed"):
        parse_stdout(b'{"variant": "with", "exitCode": NaN}', "with")


def test_sigterm_while_loading_exits_130(setup: dict[str, Any]) -> None:
    """Regression: SIGTERM outside the invocations (loading, hashing, scoring) killed the
    process (-15) instead of ending with exit 130 like Ctrl-C."""
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("needs /proc to see when the handler is installed")
    lines = ["cases:"]
    for i in range(10_000):  # ~2 s to load: time to deliver the signal mid-load
        lines += [f"  - id: c{i}", f"    prompt: prompt {i}", "    expectTrigger: true"]
    big = setup["tmp"] / "big.yaml"
    big.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "skill_evals", *cli_args(setup, cases=big)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            # SigCgt: the mask of caught signals; bit 14 is SIGTERM (15).
            try:
                text = Path(f"/proc/{proc.pid}/status").read_text()
            except OSError:
                break
            mask = next(x for x in text.splitlines() if x.startswith("SigCgt:"))
            caught = int(mask.split()[1], 16)
            if caught & (1 << (signal.SIGTERM - 1)):
                break
            time.sleep(0.01)
        assert proc.poll() is None, "finished before the signal could be sent"
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr


# ----------------------------------------------------------------- --observations


def _record_file(setup: dict[str, Any]) -> list[str]:
    record = setup["tmp"] / "rec.jsonl"
    assert run_cli(cli_args(setup, "--trials", "2", "--record", str(record))).returncode == 0
    return record.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("defect", ["duplicate", "extra-trial", "unknown-case", "missing"])
def test_observation_key_errors_name_the_key(setup: dict[str, Any], defect: str) -> None:
    """A duplicate, missing, extra (trial out of range) or unknown caseId → 5, naming
    the key. Regression: a duplicate or extra record appended to a complete file was reported
    only as "more than N records" (the population bound), without the key."""
    lines = _record_file(setup)
    first = json.loads(lines[0])
    if defect == "duplicate":
        lines.append(lines[0])
        expected = f"duplicate observation caseId {first['caseId']!r} trial {first['trial']}"
    elif defect == "extra-trial":
        lines.append(json.dumps(dict(first, trial=3)))
        expected = f"extra observation caseId {first['caseId']!r} trial 3"
    elif defect == "unknown-case":
        lines.append(json.dumps(dict(first, caseId="nope")))
        expected = "unknown caseId 'nope'"
    else:
        lines = lines[1:]
        expected = f"missing observation caseId {first['caseId']!r} trial {first['trial']}"
    obs = setup["tmp"] / "obs.jsonl"
    obs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = run_cli(
        [
            "test",
            "--skill",
            str(setup["skill"]),
            "--cases",
            str(setup["cases"]),
            "--observations",
            str(obs),
            "--trials",
            "2",
        ]
    )
    assert proc.returncode == 5
    assert expected in one_error_line(proc)


def test_unknown_case_id_is_cut_in_the_message(setup: dict[str, Any]) -> None:
    suite = load_cases(setup["cases"], "sk")
    obs = write_jsonl(
        setup["tmp"] / "obs.jsonl",
        [
            {
                "caseId": "x" * 100_000,
                "trial": 1,
                "variant": "with",
                "invokedSkills": [],
                "output": "",
                "exitCode": 0,
            }
        ],
    )
    with pytest.raises(InvalidInput) as info:
        load_observations(obs, suite, 1, "sk")
    # The message names the two files (however long the user's paths); the id it quotes is cut.
    said = str(info.value).replace(str(obs), "FILE").replace(str(setup["cases"]), "FILE")
    assert "unknown caseId" in said and len(said) < 400


def test_trials_100_and_exactly_ten_units_score(setup: dict[str, Any]) -> None:
    """The largest --trials and the smallest allowed suite (10 units): exit 0, not 6 or 70."""
    records = []
    for case in make_cases(10):
        for trial in range(1, 101):
            for variant in ("with", "without"):
                triggered = variant == "with" and case["expectTrigger"]
                records.append(
                    {
                        "caseId": case["id"],
                        "trial": trial,
                        "variant": variant,
                        "invokedSkills": ["sk"] if triggered else [],
                        "output": "done" if variant == "with" or trial % 2 else "no",
                        "exitCode": 0,
                    }
                )
    obs = write_jsonl(setup["tmp"] / "obs.jsonl", records)
    proc = run_cli(
        [
            "test",
            "--skill",
            str(setup["skill"]),
            "--cases",
            str(setup["cases"]),
            "--observations",
            str(obs),
            "--trials",
            "100",
            "--format",
            "json",
            "--min-trigger-f1",
            "1",
            "--min-uplift",
            "0.4",
        ]
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert_valid_report(report)
    assert report["task"]["units"] == 10 and report["task"]["insufficient"] is False
    assert report["task"]["difference"] == 0.5
    assert report["trigger"]["f1"] == 1.0
    assert all(len(c["triggered"]) == 100 for c in report["caseResults"])


def test_insufficient_beats_isolation_breach(setup: dict[str, Any]) -> None:
    """Precedence 6 > 7 with recorded observations."""
    cases = make_cases(9)
    nine = write_jsonl(setup["tmp"] / "nine.jsonl", cases)
    obs = write_jsonl(
        setup["tmp"] / "obs.jsonl",
        [
            {
                "caseId": c["id"],
                "trial": 1,
                "variant": v,
                "invokedSkills": ["sk"],
                "output": "",
                "exitCode": 0,
            }
            for c in cases
            for v in ("with", "without")
        ],
    )
    proc = run_cli(
        [
            *("test", "--skill", str(setup["skill"]), "--cases", str(nine)),
            *("--observations", str(obs), "--trials", "1"),
        ]
    )
    assert proc.returncode == 6, proc.stderr


# ----------------------------------------------------------------------------- report


HOSTILE_IDS = [
    "ü-日本語-🙂",
    "a|b`c*d_e",
    "<script>alert(1)</script>",
    "@everyone",
    "\u202eevil\u2066",
    "::error::x",
    "1. list",
    "- dash",
    "[l](http://x)",
    "x" * 200,
]


def test_hostile_and_unicode_case_ids_in_every_format(setup: dict[str, Any]) -> None:
    """Odd but valid ids: no crash, text is verdict → trigger → uplift → next steps, Markdown
    escapes them, JUnit reads back, JSON validates."""
    cases = write_jsonl(setup["tmp"] / "hostile.jsonl", make_cases(10, ids=HOSTILE_IDS))
    outputs = {}
    for fmt in ("text", "markdown", "junit", "json"):
        proc = run_cli(cli_args(setup, "--format", fmt, "--min-trigger-f1", "1", cases=cases))
        assert proc.returncode == 0, proc.stderr
        outputs[fmt] = proc.stdout
    text = outputs["text"]
    assert text.startswith("PASS  sk — trigger F1 1.000")
    order = [text.index(h) for h in ("Trigger (", "Uplift (", "What to do next")]
    assert order == sorted(order)
    assert "\u202e" not in text and "\u2066" not in text
    markdown = outputs["markdown"]
    assert "\u202e" not in markdown and "\u2066" not in markdown
    report = json.loads(outputs["json"])
    assert_valid_report(report)
    assert [c["id"] for c in report["caseResults"]] == HOSTILE_IDS
    xml = junitparser.JUnitXml.fromstring(outputs["junit"])
    names = {case.name for suite in xml for case in suite}
    # JUnit writes invisible characters (bidi controls …) as \uXXXX, like every output
    shown = [show_invisible(i) for i in HOSTILE_IDS]
    assert {f"trigger[{i}]" for i in shown} <= names
    assert not any("\u202e" in name or "\u2066" in name for name in names)


def test_markdown_shows_bidi_controls_visibly() -> None:
    """Regression: U+202E & co. went into Markdown (PR comments) as-is and reordered the line."""
    for char in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c":
        escaped = escape_md(f"a{char}b")
        assert char not in escaped
        assert escaped == f"a\\u{ord(char):04x}b"


def test_markdown_of_an_unscored_report_does_not_claim_no_task_checks() -> None:
    """Regression: the verdict table said "no task checks" for a run stopped before scoring."""
    report = error_report(6, "cases.jsonl: 9 independent case(s)", Settings(mode="runner"))
    lines = render_markdown(report).splitlines()
    row = lines[lines.index("| --- | --- | --- | --- | --- | --- |") + 1]
    assert "no task checks" not in row and "n/a" in row


def test_report_sections_are_exactly_those_of_the_spec(setup: dict[str, Any]) -> None:
    proc = run_cli(cli_args(setup, "--format", "json", "--min-trigger-f1", "0.5"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert list(report) == [
        "schemaVersion",
        "tool",
        "status",
        "exitCode",
        "skill",
        "baseline",  # additive: the --baseline version (null without one)
        "cases",
        "settings",
        "arms",  # additive: the arms run and the isolation spot-check
        "trigger",
        "task",
        "comparison",  # additive: the comparison with the baseline (null without one)
        "loading",
        "runner",
        "gates",
        "caseResults",
        "messages",
        "messageSeverities",  # additive: the severity of each message
        "coverage",  # additive: observations scored of those planned
        "judge",  # additive: the judging of judge checks (null without any)
        "behaviour",  # additive: what the runs reached on the network, and the findings
        "sandbox",  # additive: the sandbox the runs had (null when nothing ran)
        "lint",  # additive: the pre-flight's lint findings
    ]
    assert set(report["task"]) == {
        "units",
        "insufficient",
        "with",
        "without",
        "difference",
        "interval",
        "signTest",
        "efficiency",
        "mode",  # additive: absolute (pairwise for judge_pairwise suites)
    }
    assert set(report["task"]["interval"]) == {
        "level",
        "lower",
        "upper",
        "method",
        "samples",
        "seed",
    }
    assert report["task"]["interval"]["level"] == 0.95
    assert report["task"]["interval"]["method"] == "percentile-bootstrap"
    assert set(report["settings"]) == {
        "mode",
        "trials",
        "seed",
        "bootstrapSamples",
        "timeoutMs",
        "maxBytes",
        "jobs",
    }
    assert report["settings"] == {
        "mode": "runner",
        "trials": 1,
        "seed": 42,
        "bootstrapSamples": 10000,
        "timeoutMs": 30000,
        "maxBytes": 1000000,
        "jobs": 4,
    }
    assert report["gates"]["minUplift"] is None
    assert set(report["gates"]["minTriggerF1"]) == {"threshold", "value", "passed"}
    # No runner reported meta: every sum is null, never 0.
    assert set(report["runner"]["meta"].values()) == {None}
    # Every with/without passes and no unit changed: the sign test has no p-value (null).
    assert report["task"]["signTest"]["pValue"] is None
