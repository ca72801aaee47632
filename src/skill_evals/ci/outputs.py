"""The gate's outputs: report.json, junit.xml, summary.md, comment.md and report.html in the
output directory, then ``$GITHUB_STEP_SUMMARY``, ``$GITHUB_OUTPUT`` and the sticky PR comment.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..codes import STATUS_BY_CODE
from ..errors import InvalidInput
from ..report.answers import Answers
from ..sandbox.behaviour import finding_text
from ..sandbox.probe import warning_text
from . import github, workflow
from .console import Console
from .schema import SCHEMA_VERSION


def build_report(
    exit_code: int,
    skills: list[dict[str, Any]],
    base: Mapping[str, Any],
    messages: list[str],
    removed: Sequence[Mapping[str, str]] = (),
    routing: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ci report.json document (its schema ships as ci-report.schema.json); ``routing``:
    the routing entry when this run has one (docs/routing.md)."""
    status = STATUS_BY_CODE.get(exit_code, "invalid")
    entries = [*skills, *([routing] if routing is not None else [])]
    considered = [s for s in entries if s["status"] != "unchanged"]
    if exit_code == 0 and considered and all(s["status"] == "skipped" for s in considered):
        status = "skipped"
    any_simulated = any(s.get("simulated") and s["status"] == "evaluated" for s in entries)
    sandbox = run_sandbox(entries)
    if sandbox is not None and isinstance(sandbox.get("reason"), str):
        messages = [warning_text(sandbox["reason"]), *messages]
    messages = [*messages, *behaviour_lines(entries)]
    report: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "tool": {"name": "skill-evals", "version": __version__},
        "status": status,
        "exitCode": exit_code,
        "base": {**base, "removed": list(removed)} if removed else dict(base),
        "skills": skills,
        "changedSkills": [s["name"] for s in skills if s["status"] != "unchanged"],
        "simulated": any_simulated,
        # Each message once: the base commit's problems reach it from the change detection and
        # from compare: base alike.
        "messages": list(dict.fromkeys(messages)),
        "sandbox": sandbox,
    }
    if routing is not None:
        report["routing"] = dict(routing)
    return report


def behaviour_lines(entries: Iterable[Mapping[str, Any]]) -> list[str]:
    """Each evaluated entry's behaviour findings, one line each, named by the entry: shown in
    summary.md and the comment whatever the entry's verdict."""
    lines = []
    for entry in entries:
        report = entry.get("report")
        block = report.get("behaviour") if isinstance(report, Mapping) else None
        findings = block.get("findings") if isinstance(block, Mapping) else None
        for finding in findings if isinstance(findings, list) else []:
            if isinstance(finding, Mapping):
                lines.append(f"{entry.get('name', 'routing')}: {finding_text(finding)}")
    return lines


def run_sandbox(entries: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The run's sandbox block: the one its evaluated skills (and routing) shared, or the
    first an unsandboxed one reports (a merged run's shards may differ); None when nothing
    ran."""
    found = [
        report["sandbox"]
        for entry in entries
        if isinstance(report := entry.get("report"), Mapping)
        and isinstance(report.get("sandbox"), Mapping)
    ]
    unsandboxed = [s for s in found if s.get("mode") != "bwrap"]
    chosen = (unsandboxed or found or [None])[0]
    return dict(chosen) if chosen is not None else None


OUTPUT_FILES = ("report.json", "junit.xml", "summary.md", "comment.md", "report.html")


def prepare_out(out: Path) -> None:
    """Make sure the output directory can take the outputs, before anything runs: it is (or can
    be made) a directory, and none of the output names in it is a directory. InvalidInput (exit
    5) otherwise. (A FIFO, device or symlink at an output name is replaced, never written
    through: see :func:`replace_file`.)"""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput(f"--out {out}: cannot create the directory ({exc.strerror})") from None
    if not out.is_dir():
        raise InvalidInput(f"--out {out}: not a directory")
    if not os.access(out, os.W_OK | os.X_OK):
        raise InvalidInput(f"--out {out}: not writable")
    for name in (*OUTPUT_FILES, "observations"):
        target = out / name
        if name != "observations" and target.is_dir() and not target.is_symlink():
            raise InvalidInput(f"--out {out}: {name} is a directory; remove it")


def fresh_record(record: Path) -> str | None:
    """Ready ``record`` (an observations/*.jsonl file) for a run: its directory made and a
    stale file removed (--record appends; a stale file would mix runs). The system's reason
    when that fails, else None."""
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.unlink(missing_ok=True)
    except OSError as exc:
        return str(exc.strerror)
    return None


def replace_file(path: Path, text: str) -> None:
    """Write ``text`` to a new file beside ``path`` and rename it over ``path``: whatever was at
    ``path`` (a FIFO without a reader, a device, a symlink pointing elsewhere) is replaced,
    never opened, so writing can neither block nor land outside the directory."""
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _sandboxed(ci_report: Mapping[str, Any]) -> bool:
    """Whether this run's runs were sandboxed (the action's ``sandboxed`` output)."""
    sandbox = ci_report.get("sandbox")
    return isinstance(sandbox, Mapping) and sandbox.get("mode") == "bwrap"


def write_outputs(
    ci_report: dict[str, Any],
    out: Path,
    env: Mapping[str, str],
    console: Console,
    comment: bool = False,
    answers: Mapping[str, Answers] | None = None,
    names: Iterable[str] = (),
) -> None:
    """report.json, junit.xml, summary.md, comment.md, report.html; then the step summary,
    ``$GITHUB_OUTPUT`` and (with ``comment``) the sticky PR comment. ``answers`` (skill path →
    answer texts, include-outputs) go into report.html only; ``names`` are the skill names of
    the checked-out repository, the only report strings the comment writes as plain text."""
    from ..report.html import render_html
    from ..report.route_html import ci_routing_html
    from ..report.trends import trends_html, trends_of_report
    from .summary import render_comment, render_summary

    out.mkdir(parents=True, exist_ok=True)
    summary = render_summary(ci_report)
    url = workflow.run_url(env)
    files = {
        "report.json": json.dumps(ci_report, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
        "junit.xml": render_ci_junit(ci_report),
        "summary.md": summary,
        "comment.md": render_comment(ci_report, url, names=names),
        "report.html": render_html(
            ci_report,
            answers or None,
            trends_html(trends_of_report(ci_report)) + ci_routing_html(ci_report.get("routing")),
        ),
    }
    for name, text in files.items():
        replace_file(out / name, text)
    try:
        workflow.append_step_summary(env, summary)
    except OSError as exc:
        console.warning(f"cannot append to GITHUB_STEP_SUMMARY ({exc.strerror})")
    _write_step_outputs(ci_report, out, env, console)
    if comment:
        result = github.post_comment(files["comment.md"], env)
        if result.action in ("created", "updated"):
            console.info(result.message)
        else:
            console.warning(result.message)


def _write_step_outputs(
    ci_report: dict[str, Any], out: Path, env: Mapping[str, str], console: Console
) -> None:
    """The step's ``$GITHUB_OUTPUT``: exit code, status, changed skills, where the files are."""
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
                "sandboxed": "true" if _sandboxed(ci_report) else "false",
            },
        )
    except OSError as exc:
        console.warning(f"cannot write GITHUB_OUTPUT ({exc.strerror})")


# The note saying which base version a skill was compared with (base_skills.py).
_COMPARED = re.compile(r"compared with (?:its version|(?P<path>.+?)) at base (?P<sha>[0-9a-f]+)")


def shown_paths(entry: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, str]:
    """An evaluated entry's skill, case file and baseline as its JUnit properties name them:
    from the repository's root, as the entry does; the baseline (a temporary copy of the base
    commit's version, gone after the run) as ``<path> at base <sha>``."""
    shown = {name: str(entry[key]) for name, key in (("skill.path", "path"), ("cases.path",
             "cases")) if isinstance(entry.get(key), str)}  # fmt: skip
    report = entry.get("report")
    if isinstance(report, Mapping) and isinstance(report.get("baseline"), Mapping):
        found = _COMPARED.search(str(entry.get("reason") or ""))
        if found is not None:
            where = found["path"] or entry.get("path")
            shown["baseline.path"] = f"{where} at base {found['sha']}"
        else:
            shown["baseline.path"] = f"the base version at {str(base.get('sha') or '?')[:12]}"
    return shown


def render_ci_junit(ci_report: dict[str, Any]) -> str:
    """JUnit for the gate: evaluated skills with their reports, skipped skills <skipped>,
    a skill without cases as a <failure> (or <skipped> when allowed). Unchanged skills are
    left out: they were not tested in this run."""
    from ..report.junit import SuiteInput, render_junit

    suites: list[SuiteInput] = []
    base = ci_report.get("base") if isinstance(ci_report.get("base"), Mapping) else {}
    for skill in ci_report.get("skills", []):
        status = skill["status"]
        name = str(skill["name"])
        if status == "evaluated" and isinstance(skill.get("report"), dict):
            paths = shown_paths(skill, base or {})
            suites.append(SuiteInput(name, report=skill["report"], paths=paths))
        elif status == "skipped" or (status == "no-cases" and skill["exitCode"] == 0):
            suites.append(SuiteInput(name, skipped=skill.get("reason") or status))
        elif status == "no-cases":
            suites.append(SuiteInput(name, failed=skill.get("reason") or "no cases file"))
        elif status == "invalid-skill":
            reason = skill.get("reason") or "invalid skill"
            suites.append(SuiteInput(name, failed=reason, failure_type="invalid-skill"))
    return render_junit(suites, extra=_routing_suites(ci_report.get("routing")))


def _routing_suites(routing: object) -> list[tuple[Any, Mapping[str, Any] | None]]:
    """The routing entry's testsuite: the route report's own, or one skipped testcase."""
    from ..report.junit_xml import Suite
    from ..report.route_junit import SUITE_NAME, routing_suite

    if not isinstance(routing, Mapping) or routing.get("status") == "unchanged":
        return []
    report = routing.get("report")
    if isinstance(report, Mapping):
        cases = routing.get("cases")  # from the repository's root, as report.json names it
        return [(routing_suite(report, {"cases.path": cases} if isinstance(cases, str) else {}),
                 report)]  # fmt: skip
    suite = Suite(SUITE_NAME)
    suite.result(suite.case("routing"), "skipped", str(routing.get("reason") or "not evaluated"))
    return [(suite, None)]
