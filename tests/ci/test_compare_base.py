"""`ci` with `compare: base` and `cache:` end to end in a temporary git repository with the
simulated runner: base versions as baseline arms, new skills as before, nothing left behind,
the cache reused across runs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLE_SKILL

from .conftest import SIMULATED, commit_all, git, make_repo, run_cli


def _repo(tmp_path: Path, config: str) -> tuple[Path, str]:
    """refund-policy (tasks) and alpha at the base commit; refund-policy edited, alpha moved,
    delta added at head."""
    repo = make_repo(tmp_path / "repo", skills=("alpha",), config=config)
    shutil.copytree(EXAMPLE_SKILL, repo / "skills" / "refund-policy")
    base = commit_all(repo, "base")
    with (repo / "skills" / "refund-policy" / "SKILL.md").open("a", encoding="utf-8") as fh:
        fh.write("\nKeep answers short.\n")
    shutil.move(repo / "skills" / "alpha", repo / "moved" / "alpha")
    (repo / "moved" / "alpha" / "notes.md").write_text("moved and edited\n", encoding="utf-8")
    delta = make_repo(tmp_path / "delta-src", skills=("delta",), config=None)
    shutil.copytree(delta / "skills" / "delta", repo / "skills" / "delta")
    commit_all(repo, "head")
    return repo, base


def _skills(out: Path) -> dict[str, dict[str, Any]]:
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return {s["name"]: s for s in report["skills"]}


# `compare: base` with comparison gates: an impossible gain for every compared skill, an
# override for refund-policy. One run, read by the tests of comparisons and of their gates.
GATED = (
    SIMULATED
    + "compare: base\ngates: {min-f1-gain: 0.9}\n"
    + "overrides:\n  refund-policy:\n    gates: {max-pass-drop: 1.0}\n"
)


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`ci --base` on _repo under GATED, with a TMPDIR of its own."""
    root = tmp_path_factory.mktemp("compare-base")
    repo, base = _repo(root, GATED)
    tmp = root / "tmp"
    tmp.mkdir()
    out = root / "out"
    done = run_cli(["ci", "--base", base, "--out", str(out)], repo, {"TMPDIR": str(tmp)})
    return {"repo": repo, "out": out, "done": done, "tmp": tmp}


def test_compare_base_runs_each_changed_skill_against_its_base_version(
    compared: dict[str, Any],
) -> None:
    repo, out, done, tmp = compared["repo"], compared["out"], compared["done"], compared["tmp"]
    assert done.returncode in (0, 1), done.stderr[-3000:]
    skills = _skills(out)
    refund = skills["refund-policy"]
    assert refund["status"] == "evaluated"
    assert "compared with its version at base" in refund["reason"]
    comparison = refund["report"]["comparison"]
    assert comparison is not None and comparison["aa"] is False
    assert "baseline" in refund["report"]["runner"]["ledger"]["arms"]
    moved = skills["alpha"]
    assert "compared with skills/alpha at base" in moved["reason"] and "(moved)" in moved["reason"]
    assert moved["report"]["comparison"] is not None
    delta = skills["delta"]
    assert "new since base" in delta["reason"]
    assert delta["report"]["comparison"] is None  # new in the change: runs as before
    assert list(tmp.glob("skill-evals-base-*")) == []  # every private copy removed
    assert git(repo, "status", "--porcelain") == ""  # nothing checked out
    records = (out / "observations" / "refund-policy.jsonl").read_text(encoding="utf-8")
    assert '"variant":"baseline"' in records
    # before → after with the interval, in the summary, the comment and the HTML report
    for name in ("summary.md", "comment.md", "report.html"):
        text = (out / name).read_text(encoding="utf-8")
        # (Markdown escapes the brackets: `\(`, `\[`)
        assert re.search(r"F1 \d\.\d+ → \d\.\d+ \\?\([+−-]\d\.\d+ \\?\[", text), name
        assert re.search(r"pass rate \d\.\d+ → \d\.\d+", text), name


def test_compare_base_without_a_base_commit_says_so(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path, SIMULATED + "compare: base\n")
    out = tmp_path / "out"
    done = run_cli(["ci", "--only", "alpha", "--out", str(out)], repo)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert any("needs a base commit" in m for m in report["messages"])
    assert all(s["report"]["comparison"] is None for s in report["skills"])
    # --only (a matrix shard) detects no changes, yet compares with --base when given
    shard = tmp_path / "shard"
    base = git(repo, "rev-parse", "HEAD~1")
    done = run_cli(["ci", "--only", "alpha", "--base", base, "--out", str(shard)], repo)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert _skills(shard)["alpha"]["report"]["comparison"] is not None


def test_compare_flag_overrides_the_config(tmp_path: Path) -> None:
    repo, base = _repo(tmp_path, SIMULATED + "compare: base\n")
    out = tmp_path / "out"
    argv = ["ci", "--base", base, "--out", str(out), "--compare", "none", "--only", "alpha"]
    done = run_cli(argv, repo)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert _skills(out)["alpha"]["report"]["comparison"] is None


def test_ci_cache_is_reused_by_the_next_run(tmp_path: Path) -> None:
    # Relative to the repository root, outside its work tree (ci refuses one inside).
    repo, _ = _repo(tmp_path, SIMULATED + "cache: ../cache/skill-evals\n")
    first = run_cli(["ci", "--only", "alpha", "--out", str(tmp_path / "one")], repo)
    assert first.returncode in (0, 1), first.stderr[-3000:]
    assert (repo.parent / "cache" / "skill-evals" / "alpha").is_dir()
    second = run_cli(["ci", "--only", "alpha", "--out", str(tmp_path / "two")], repo)
    assert second.returncode == first.returncode
    runs = [_skills(tmp_path / name)["alpha"]["report"]["runner"] for name in ("one", "two")]
    assert runs[0]["invocations"] > 0 and runs[1]["invocations"] == 0
    assert runs[1]["cached"] == runs[0]["invocations"]
    # the cache directory is no skill and changes no fingerprint
    assert "skill-evals" not in _skills(tmp_path / "two")


def test_comparison_gates_from_the_config_apply_where_a_base_version_exists(
    compared: dict[str, Any],
) -> None:
    """`gates:` takes the four comparison gates; a skill new in the change skips them (said in
    its reason), a compared one is gated — an impossible gain fails it (exit 1)."""
    done, out = compared["done"], compared["out"]
    assert done.returncode == 1, done.stderr[-3000:]
    skills = _skills(out)
    gates = skills["refund-policy"]["report"]["gates"]
    assert gates["minF1Gain"]["threshold"] == 0.9 and gates["minF1Gain"]["passed"] is False
    assert gates["maxPassDrop"]["threshold"] == 1.0 and gates["maxPassDrop"]["passed"] is True
    assert skills["refund-policy"]["exitCode"] == 1
    assert skills["alpha"]["report"]["gates"]["minF1Gain"]["threshold"] == 0.9
    assert skills["alpha"]["report"]["gates"].get("maxPassDrop") is None
    delta = skills["delta"]
    assert "comparison gates skipped: no base version" in delta["reason"]
    assert delta["report"]["gates"].get("minF1Gain") is None and delta["exitCode"] == 0
