"""`ci` validates every skill in scope, with cases or without: a SKILL.md that `validate`
rejects is listed as `invalid skill` with its errors in every output (stderr, report.json,
summary.md, junit.xml) and fails the gate with exit 5 for that skill, nothing run for it;
`validate: warn` makes the errors a warning and evaluates the skill as usual."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from junitparser import Failure, JUnitXml

from .conftest import commit_all, make_repo, run_cli

BROKEN = "---\nname: Beta_Skill\n---\n# beta\n"  # a bad name, no description


def _run(tmp: Path, config: str) -> dict[str, Any]:
    repo = make_repo(tmp / "repo", ("alpha", "beta", "gamma"), config)
    (repo / "skills" / "beta" / "SKILL.md").write_text(BROKEN, encoding="utf-8")
    (repo / "skills" / "gamma" / "SKILL.md").write_text(BROKEN.replace("Beta", "Gamma"), "utf-8")
    for path in (repo / "skills" / "gamma" / "evals").iterdir():
        path.unlink()  # gamma has no cases either
    commit_all(repo, "broken skills")
    out = tmp / "out"
    proc = run_cli(["ci", "--all", "--out", str(out), "--sandbox", "off"], repo)
    report = json.loads((out / "report.json").read_text())
    skills = {s["name"]: s for s in report["skills"]}
    return {"proc": proc, "skills": skills, "out": out}


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run(tmp_path_factory.mktemp("strict"), "runner: skill-evals runner simulated\n")


def test_an_invalid_skill_fails_the_gate_with_its_errors(strict: dict[str, Any]) -> None:
    proc, skills = strict["proc"], strict["skills"]
    assert proc.returncode == 5, proc.stderr[-2000:]
    assert skills["alpha"]["status"] == "evaluated"
    for name in ("beta", "gamma"):  # with cases and without
        entry = next(s for s in skills.values() if s["path"] == f"skills/{name}")
        assert entry["status"] == "invalid-skill" and entry["exitCode"] == 5
        assert "invalid skill" in entry["reason"] and "description" in entry["reason"]
        assert entry["report"] is None  # nothing ran for it
        assert f"skills/{name}" in proc.stderr
        # Named from the repository's root, never by the machine's folders.
        assert f": skills/{name}/SKILL.md:" in entry["reason"]
        assert str(strict["out"].parent) not in entry["reason"]


def test_every_output_lists_it(strict: dict[str, Any]) -> None:
    out = strict["out"]
    summary = (out / "summary.md").read_text()
    assert summary.count("invalid skill") >= 2
    for name in ("summary.md", "comment.md", "report.html"):
        assert str(out.parent) not in (out / name).read_text(), name
    suites = {suite.name: suite for suite in JUnitXml.fromfile(str(out / "junit.xml"))}
    invalid = [s for name, s in suites.items() if name != "alpha" and s.failures]
    assert len(invalid) == 2
    for suite in invalid:
        (case,) = list(suite)
        assert isinstance(case.result[0], Failure) and "invalid skill" in case.result[0].message
        assert str(out.parent) not in case.result[0].message


def test_validate_warn_evaluates_it(tmp_path: Path) -> None:
    config = "runner: skill-evals runner simulated\nvalidate: warn\nallow-missing-cases: true\n"
    found = _run(tmp_path, config)
    statuses = {s["path"]: s["status"] for s in found["skills"].values()}
    assert statuses["skills/gamma"] == "no-cases"
    assert statuses["skills/beta"] != "invalid-skill"
    assert "(validate: warn)" in found["proc"].stderr
