"""`ci plan --estimate`: planned invocations (arms auto, trials), cache hits, and the expected
tokens and cost from the cached observations' meta."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import commit_all, make_repo, run_cli

RUNNER = f"sh {Path(__file__).parent.parent / 'runners' / 'counting.sh'}"
CONFIG = f"runner: {RUNNER}\ntrials: 2\ncache: ../cache/evals\n"  # outside the work tree


def _rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines()[1:]:
        cells = line.split()
        if len(cells) == 7:
            rows[cells[0]] = cells[1:]
    return rows


def test_estimate_before_and_after_a_cached_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", skills=("alpha",), config=CONFIG)
    # 12 trigger-only cases, 2 trials: with 24 + the isolation spot-check without (3, trial 1)
    planned = 12 * 2 + 3
    before = run_cli(["ci", "plan", "--all", "--estimate"], repo)
    assert before.returncode == 0, before.stderr
    assert _rows(before.stdout)["alpha"] == [str(planned), "0", str(planned)] + ["unknown"] * 3
    assert "alpha: no cached observation reports its cost" in before.stdout
    assert not (repo.parent / "cache").exists()  # nothing ran, nothing was written

    ran = run_cli(["ci", "--all", "--out", str(tmp_path / "out")], repo)
    assert ran.returncode in (0, 1), ran.stderr[-2000:]
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert report["skills"][0]["report"]["runner"]["invocations"] == planned

    after = run_cli(["ci", "plan", "--all", "--estimate"], repo)
    assert _rows(after.stdout)["alpha"] == [str(planned), str(planned), "0", "0", "0", "$0.00"]

    cases = repo / "skills" / "alpha" / "evals" / "cases.jsonl"
    lines = cases.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["prompt"] += " (edited)"
    cases.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    edited = run_cli(["ci", "plan", "--all", "--estimate"], repo)
    row = _rows(edited.stdout)["alpha"]
    to_run = int(row[2])
    assert 2 <= to_run <= 3  # that case's two with trials, plus its spot-check if chosen
    assert row[3:] == [f"{100 * to_run:,}", f"{20 * to_run:,}", f"${0.01 * to_run:.2f}"]
    assert _rows(edited.stdout)["total"][:3] == row[:3]


def test_estimate_counts_the_baseline_arm_under_compare_base(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", skills=("alpha",), config=CONFIG + "compare: base\n")
    base = commit_all(repo, "base")
    with (repo / "skills" / "alpha" / "SKILL.md").open("a", encoding="utf-8") as fh:
        fh.write("\nMore.\n")
    commit_all(repo, "head")
    done = run_cli(["ci", "plan", "--base", base, "--estimate"], repo)
    assert done.returncode == 0, done.stderr
    assert _rows(done.stdout)["alpha"][0] == str(12 * 2 * 2 + 3)  # with, baseline, spot-check


def test_estimate_says_when_the_budget_caps_the_run(tmp_path: Path) -> None:
    config = CONFIG + "budget: {invocations: 5}\n"
    repo = make_repo(tmp_path / "repo", skills=("alpha",), config=config)
    done = run_cli(["ci", "plan", "--all", "--estimate"], repo)
    assert done.returncode == 0, done.stderr
    assert "its budget stops the run after 5 invocation(s)" in done.stdout
