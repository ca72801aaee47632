"""The cache through `skill-evals test` with a runner that counts its invocations: what a
cached run re-runs (exactly), what it never stores, how reuse shows in records and reports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import assert_valid_report, write_skill

RUNNER = f"sh {Path(__file__).parent.parent / 'runners' / 'counting.sh'}"
N_CASES = 10


def _cases(path: Path, edits: dict[int, str] | None = None) -> Path:
    """N_CASES cases, the even ones with a task check; ``edits``: index → new prompt."""
    rows = []
    for i in range(N_CASES):
        row: dict[str, Any] = {
            "id": f"c{i}",
            "prompt": (edits or {}).get(i, f"Can I get a refund for item {i}?"),
            "expectTrigger": True,
        }
        if i % 2 == 0:
            row["task"] = {"check": "exit_code", "expected": 0}
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


class Run:
    """One `skill-evals test` process and what it did."""

    def __init__(self, proc: subprocess.CompletedProcess[str], report: dict[str, Any], log: Path):
        self.proc = proc
        self.report = report
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        self.invoked = [tuple(line.split()) for line in lines]
        log.unlink(missing_ok=True)

    @property
    def ledger(self) -> dict[str, Any]:
        return dict(self.report["runner"]["ledger"])


def run(tmp_path: Path, skill: Path, cases: Path, *extra: str, **env: str) -> Run:
    report = tmp_path / "report.json"
    report.unlink(missing_ok=True)
    log = tmp_path / "logs" / "invocations.log"  # outside the workspace: writable by name
    log.parent.mkdir(exist_ok=True)
    proc = subprocess.run(
        [
            sys.executable, "-m", "skill_evals", "test", "--skill", str(skill),
            "--cases", str(cases), "--runner", RUNNER, "--report", str(report), "-q",
            "--cache", str(tmp_path / "cache"), "--sandbox-path", f"{log.parent}:rw", *extra,
        ],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "COUNTING_LOG": str(log), **env},
    )  # fmt: skip
    data = json.loads(report.read_text(encoding="utf-8"))
    assert_valid_report(data)
    return Run(proc, data, log)


@pytest.fixture
def suite(tmp_path: Path) -> tuple[Path, Path]:
    skill = write_skill(tmp_path / "skills", body="# Refunds\n\nThis helps.\n")
    return skill, _cases(tmp_path / "cases.jsonl")


def test_an_unchanged_rerun_costs_nothing(tmp_path: Path, suite: tuple[Path, Path]) -> None:
    skill, cases = suite
    record = tmp_path / "record.jsonl"
    first = run(tmp_path, skill, cases, "--trials", "2")
    assert first.proc.returncode == 0, first.proc.stderr
    planned = N_CASES * 2 * 2
    assert len(first.invoked) == first.report["runner"]["invocations"] == planned
    assert first.ledger["cached"] == 0 and first.report["runner"]["cached"] == 0
    second = run(tmp_path, skill, cases, "--trials", "2", "--record", str(record))
    assert second.invoked == [] and second.report["runner"]["invocations"] == 0
    assert second.ledger["cached"] == second.report["runner"]["cached"] == planned
    assert second.ledger["costUsd"] is None  # nothing was spent
    assert second.report["task"] == first.report["task"]  # the same verdict, for free
    assert second.report["trigger"] == first.report["trigger"]
    lines = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == planned and all(line["cached"] is True for line in lines)
    assert any("reused from the cache" in m for m in second.report["messages"])


def test_editing_one_case_reruns_exactly_that_case(
    tmp_path: Path, suite: tuple[Path, Path]
) -> None:
    skill, cases = suite
    run(tmp_path, skill, cases, "--trials", "3")
    _cases(cases, {4: "Can I get a refund for item four, please?"})
    rerun = run(tmp_path, skill, cases, "--trials", "3")
    assert sorted(rerun.invoked) == sorted(
        ("c4", str(t), arm) for t in (1, 2, 3) for arm in ("with", "without")
    )
    assert rerun.ledger["cached"] == N_CASES * 3 * 2 - 6


def test_relabelling_a_case_reuses_it(tmp_path: Path, suite: tuple[Path, Path]) -> None:
    skill, cases = suite
    run(tmp_path, skill, cases, "--trials", "1")
    text = cases.read_text(encoding="utf-8").replace('"id": "c3"', '"id": "renamed"')
    cases.write_text(text.replace('"expectTrigger": true}', '"expectTrigger": false}', 1))
    assert run(tmp_path, skill, cases, "--trials", "1").invoked == []


def test_changing_only_the_skill_reuses_every_without(
    tmp_path: Path, suite: tuple[Path, Path]
) -> None:
    skill, cases = suite
    run(tmp_path, skill, cases, "--trials", "2")
    (skill / "notes.md").write_text("more\n", encoding="utf-8")
    rerun = run(tmp_path, skill, cases, "--trials", "2")
    arms = Counter(arm for _, _, arm in rerun.invoked)
    assert arms == {"with": N_CASES * 2}
    assert rerun.ledger["arms"]["without"]["cached"] == N_CASES * 2


def test_the_base_versions_with_runs_are_the_baseline(
    tmp_path: Path, suite: tuple[Path, Path]
) -> None:
    skill, cases = suite
    base = tmp_path / "base" / skill.name
    shutil.copytree(skill, base)
    plain = run(tmp_path, base, cases, "--trials", "1")  # the base commit's own run
    (skill / "SKILL.md").write_text(
        (skill / "SKILL.md").read_text("utf-8").replace("helps", "does nothing"), "utf-8"
    )
    compared = run(tmp_path, skill, cases, "--trials", "1", "--baseline", str(base))
    arms = Counter(arm for _, _, arm in compared.invoked)
    assert arms == {"with": N_CASES}  # baseline and without all reused
    assert compared.ledger["arms"]["baseline"]["cached"] == N_CASES
    assert len(compared.invoked) <= len(plain.invoked)
    assert compared.report["comparison"] is not None


def test_failures_are_never_cached(tmp_path: Path, suite: tuple[Path, Path]) -> None:
    skill, cases = suite
    failing = run(tmp_path, skill, cases, "--trials", "1", "--keep-going", COUNTING_FAIL_CASE="c2")
    assert failing.proc.returncode == 7
    assert len(failing.report["runner"]["failures"]) == 2
    rerun = run(tmp_path, skill, cases, "--trials", "1")
    assert sorted(rerun.invoked) == [("c2", "1", "with"), ("c2", "1", "without")]
    assert rerun.proc.returncode == 0


def test_an_isolation_breach_from_the_cache_is_still_a_breach(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills", body="# Refunds\n\nThis helps.\n")
    cases = _cases(tmp_path / "cases.jsonl")
    run(tmp_path, skill, cases, "--trials", "1")
    # A tampered entry: its without observation now lists the tested skill.
    for path in (tmp_path / "cache").rglob("*.jsonl"):
        lines = path.read_text(encoding="utf-8").splitlines()
        patched = [
            line.replace('"invokedSkills":[]', '"invokedSkills":["refund-policy"]')
            if '"variant":"without"' in line
            else line
            for line in lines
        ]
        path.write_text("\n".join(patched) + "\n", encoding="utf-8")
    rerun = run(tmp_path, skill, cases, "--trials", "1")
    assert rerun.proc.returncode == 7 and rerun.invoked == []
    assert "isolation breach" in rerun.report["runner"]["failures"][0]["reason"]


def test_max_age_zero_reruns_everything(tmp_path: Path, suite: tuple[Path, Path]) -> None:
    skill, cases = suite
    run(tmp_path, skill, cases, "--trials", "1")
    again = run(tmp_path, skill, cases, "--trials", "1", "--cache-max-age", "0")
    assert len(again.invoked) == N_CASES * 2 and again.ledger["cached"] == 0


def test_a_damaged_cache_is_a_warning(tmp_path: Path, suite: tuple[Path, Path]) -> None:
    skill, cases = suite
    run(tmp_path, skill, cases, "--trials", "1")
    (path,) = (tmp_path / "cache" / "refund-policy").glob("*.jsonl")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] + b"\xff garbage\n" + data[len(data) // 2 :])
    (tmp_path / "cache" / "refund-policy" / "notes.txt").write_text("hello")
    rerun = run(tmp_path, skill, cases, "--trials", "1")
    assert rerun.proc.returncode == 0
    severities = dict(zip(rerun.report["messages"], rerun.report["messageSeverities"], strict=True))
    warnings = [m for m, s in severities.items() if s == "warning"]
    assert any("invalid UTF-8" in m and "the rest is skipped" in m for m in warnings)
    assert any("notes.txt" in m and "not a cache file" in m for m in warnings)
    assert 0 < len(rerun.invoked) < N_CASES * 2  # the first half was still reused


@pytest.mark.parametrize(
    ("where", "message"),
    [("inside", "must lie outside the skill directory"), ("file", "is a file")],
)
def test_bad_cache_paths_are_exit_5(
    tmp_path: Path, suite: tuple[Path, Path], where: str, message: str
) -> None:
    skill, cases = suite
    target = skill / "cache" if where == "inside" else tmp_path / "cache-file"
    if where == "file":
        target.write_text("x")
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(cases), "--runner", RUNNER, "--cache", str(target)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 5 and message in proc.stderr
    assert not (skill / "cache").exists()


def test_bad_max_age_and_observations_are_exit_5(tmp_path: Path, suite: tuple[Path, Path]) -> None:
    skill, cases = suite
    base = [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
            str(cases), "--cache", str(tmp_path / "c")]  # fmt: skip
    proc = subprocess.run(
        [*base, "--runner", RUNNER, "--cache-max-age", "7 days"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 5 and "--cache-max-age" in proc.stderr
    observations = tmp_path / "obs.jsonl"
    observations.write_text("")
    proc = subprocess.run(
        [*base, "--observations", str(observations)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 5 and "--cache works with --runner only" in proc.stderr


def test_the_suite_inside_the_skill_is_keyed_per_case(tmp_path: Path) -> None:
    """The default layout (evals/ inside the skill): editing a case, or a fixture one case
    uses, re-runs that case only, although both change the skill's directory hash."""
    skill = write_skill(tmp_path / "skills", body="# Refunds\n\nThis helps.\n")
    fixture = skill / "evals" / "fixtures" / "one"
    fixture.mkdir(parents=True)
    (fixture / "data.txt").write_text("v1\n", encoding="utf-8")
    cases = _cases(skill / "evals" / "cases.jsonl")
    rows = [json.loads(line) for line in cases.read_text(encoding="utf-8").splitlines()]
    rows[3]["fixture"] = "fixtures/one"
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run(tmp_path, skill, cases, "--trials", "1")
    (fixture / "data.txt").write_text("v2\n", encoding="utf-8")
    assert sorted(run(tmp_path, skill, cases, "--trials", "1").invoked) == [
        ("c3", "1", "with"), ("c3", "1", "without"),
    ]  # fmt: skip
    rows[5]["prompt"] += " (edited)"
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert sorted(run(tmp_path, skill, cases, "--trials", "1").invoked) == [
        ("c5", "1", "with"), ("c5", "1", "without"),
    ]  # fmt: skip
    (skill / "SKILL.md").write_text(
        (skill / "SKILL.md").read_text("utf-8") + "\nMore.\n", encoding="utf-8"
    )
    assert len(run(tmp_path, skill, cases, "--trials", "1").invoked) == N_CASES  # every with
