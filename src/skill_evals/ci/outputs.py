"""The gate's outputs: report.json, junit.xml, summary.md, comment.md and report.html in the
output directory, then ``$GITHUB_STEP_SUMMARY``, ``$GITHUB_OUTPUT`` and the sticky PR comment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..codes import STATUS_BY_CODE
from ..render.answers import Answers
from . import github, workflow
from .console import Console
from .schema import SCHEMA_VERSION


def build_report(
    exit_code: int,
    skills: list[dict[str, Any]],
    base: Mapping[str, Any],
    messages: list[str],
    removed: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """The ci report.json document (its schema ships as ci-report.schema.json)."""
    status = STATUS_BY_CODE.get(exit_code, "invalid")
    considered = [s for s in skills if s["status"] != "unchanged"]
    if exit_code == 0 and considered and all(s["status"] == "skipped" for s in considered):
        status = "skipped"
    any_simulated = any(s.get("simulated") and s["status"] == "evaluated" for s in skills)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "tool": {"name": "skill-evals", "version": __version__},
        "status": status,
        "exitCode": exit_code,
        "base": {**base, "removed": list(removed)} if removed else dict(base),
        "skills": skills,
        "changedSkills": [s["name"] for s in skills if s["status"] != "unchanged"],
        "simulated": any_simulated,
        "messages": messages,
    }


def write_outputs(
    ci_report: dict[str, Any],
    out: Path,
    env: Mapping[str, str],
    console: Console,
    comment: bool = False,
    answers: Mapping[str, Answers] | None = None,
) -> None:
    """report.json, junit.xml, summary.md, comment.md, report.html; then the step summary,
    ``$GITHUB_OUTPUT`` and (with ``comment``) the sticky PR comment. ``answers`` (skill path →
    answer texts, include-outputs) go into report.html only."""
    from ..render.html import render_html
    from .summary import render_comment, render_summary

    out.mkdir(parents=True, exist_ok=True)
    summary = render_summary(ci_report)
    url = workflow.run_url(env)
    files = {
        "report.json": json.dumps(ci_report, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
        "junit.xml": render_ci_junit(ci_report),
        "summary.md": summary,
        "comment.md": render_comment(ci_report, url),
        "report.html": render_html(ci_report, answers or None),
    }
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    try:
        workflow.append_step_summary(env, summary)
    except OSError as exc:
        console.warning(f"cannot append to GITHUB_STEP_SUMMARY ({exc.strerror})")
    changed = json.dumps(
        ci_report.get("changedSkills", []), ensure_ascii=True, separators=(",", ":")
    )
    try:
        workflow.write_outputs(
            env,
            {
                "exit-code": str(ci_report["exitCode"]),
                "status": str(ci_report["status"]),
                "changed-skills": changed,
                "report-dir": str(out.resolve()),
                "junit": str(out.resolve() / "junit.xml"),
            },
        )
    except OSError as exc:
        console.warning(f"cannot write GITHUB_OUTPUT ({exc.strerror})")
    if comment:
        result = github.post_comment(files["comment.md"], env)
        if result.action in ("created", "updated"):
            console.info(result.message)
        else:
            console.warning(result.message)


def render_ci_junit(ci_report: dict[str, Any]) -> str:
    """JUnit for the gate: evaluated skills with their reports, skipped skills <skipped>,
    a skill without cases as a <failure> (or <skipped> when allowed). Unchanged skills are
    left out: they were not tested in this run."""
    from ..render.junit import SuiteInput, render_junit

    suites: list[SuiteInput] = []
    for skill in ci_report.get("skills", []):
        status = skill["status"]
        name = str(skill["name"])
        if status == "evaluated" and isinstance(skill.get("report"), dict):
            suites.append(SuiteInput(name, report=skill["report"]))
        elif status == "skipped" or (status == "no-cases" and skill["exitCode"] == 0):
            suites.append(SuiteInput(name, skipped=skill.get("reason") or status))
        elif status == "no-cases":
            suites.append(SuiteInput(name, failed=skill.get("reason") or "no cases file"))
    return render_junit(suites)
