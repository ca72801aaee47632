"""What the gate prints while it runs: progress and messages on stderr (through the terminal
escaper), workflow commands on stdout under GitHub Actions (through the workflow-command
escaper), and one ``::error`` annotation per failing case.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TextIO

from ..escaping.terminal import terminal_safe
from ..messages import by_severity, severities_of
from . import workflow

MAX_ANNOTATIONS = 50
MAX_REPORT_MESSAGES = 10  # per skill (and for the routing entry), on stderr


class Console:
    """Progress, groups and warnings on stderr; annotations on stdout (GitHub reads both)."""

    def __init__(self, env: Mapping[str, str], quiet: bool, err: TextIO, out: TextIO) -> None:
        self.actions = env.get("GITHUB_ACTIONS") == "true"
        self.quiet = quiet
        self.err = err
        self.out = out

    def info(self, message: str) -> None:
        """One line on stderr (not with --quiet)."""
        if not self.quiet:
            self._write(self.err, f"skill-evals: {terminal_safe(message)}")

    def warning(self, message: str) -> None:
        """A warning: an annotation under Actions, a stderr line elsewhere (even with --quiet)."""
        if self.actions:
            self._write(self.out, workflow.annotation("warning", message))
        self._write(self.err, f"skill-evals: warning: {terminal_safe(message)}")

    def error(self, message: str) -> None:
        """An error line on stderr."""
        self._write(self.err, f"skill-evals: error: {terminal_safe(message)}")

    def group(self, title: str) -> None:
        """Open a foldable log group under Actions."""
        if self.actions:
            self._write(self.err, workflow.group(title))

    def endgroup(self) -> None:
        """Close the log group."""
        if self.actions:
            self._write(self.err, "::endgroup::")

    def report_messages(self, label: str, report: Mapping[str, Any], said: str) -> None:
        """The first MAX_REPORT_MESSAGES messages of a run's report, each with its own
        severity and prefixed with ``label``; a note equal to ``said`` (printed before the run)
        is not repeated."""
        for severity, message in severities_of(report)[:MAX_REPORT_MESSAGES]:
            if severity == "error":
                self.error(f"{label}: {message}")
            elif severity == "warning":
                self.warning(f"{label}: {message}")
            elif message != said:
                self.info(f"note: {label}: {message}")

    def line(self, text: str) -> None:
        """One line on stderr as it is (escaped; even with --quiet): a lint warning."""
        self._write(self.err, terminal_safe(text))

    def command(self, line: str) -> None:
        """A workflow command on stdout."""
        self._write(self.out, line)

    @staticmethod
    def _write(stream: TextIO, line: str) -> None:
        try:
            stream.write(line + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass


def annotate(ci_report: Mapping[str, Any], console: Console) -> None:
    """``::error file=<cases file>,line=<N>::`` for each failing case of a failing skill."""
    if not console.actions:
        return
    emitted = 0
    for skill in ci_report.get("skills", []):
        report = skill.get("report")
        if skill.get("status") != "evaluated" or not isinstance(report, dict):
            continue
        if skill.get("exitCode") == 0:
            continue
        cases = failing_cases(report)
        if not cases:
            # Stopped before any case could fail (invalid or too few cases, a gate that needs
            # task checks): annotate the cases file with the reason, at its line when known.
            for message in by_severity(report, "error")[:3]:
                if emitted >= MAX_ANNOTATIONS:
                    return
                console.command(
                    workflow.annotation(
                        "error",
                        f"{skill['name']}: {message}",
                        file=skill.get("cases"),
                        line=_message_line(str(message), skill.get("cases")),
                        title="skill-evals",
                    )
                )
                emitted += 1
            continue
        for case_id, line, why in cases:
            if emitted >= MAX_ANNOTATIONS:
                console.command(
                    workflow.annotation(
                        "warning", f"more failing cases than {MAX_ANNOTATIONS}; see report.html"
                    )
                )
                return
            console.command(
                workflow.annotation(
                    "error",
                    f"{skill['name']}: case {case_id}: {why}",
                    file=skill.get("cases"),
                    line=line,
                    title="skill-evals",
                )
            )
            emitted += 1


def _message_line(message: str, cases: object) -> int | None:
    """N when ``message`` starts with ``<the cases file>:N:`` (the engine names the cases
    file by the path it was given, here absolute)."""
    if not isinstance(cases, str):
        return None
    match = re.match(r"(?P<path>.+?):(?P<line>\d+): ", message)
    path = match["path"].replace("\\", "/") if match is not None else ""
    if match is None or not (path == cases or path.endswith("/" + cases)):
        return None
    return int(match["line"])


def failing_cases(report: Mapping[str, Any]) -> list[tuple[str, int | None, str]]:
    """(case id, line, why) for every case that missed or falsely fired its trigger, broke a
    loading rule, failed a task with the skill or had a runner failure."""
    lines = {c.get("id"): c.get("line") for c in report.get("caseResults") or []}
    why: dict[str, list[str]] = {}
    trigger = report.get("trigger") or {}
    for case_id in trigger.get("missedTriggerCaseIds") or []:
        why.setdefault(case_id, []).append("the skill did not trigger")
    for case_id in trigger.get("falseTriggerCaseIds") or []:
        why.setdefault(case_id, []).append("the skill triggered but should not")
    for violation in (report.get("loading") or {}).get("violations") or []:
        why.setdefault(violation.get("caseId"), []).append(
            f"loading violation ({violation.get('variant')}, trial {violation.get('trial')})"
        )
    for failure in (report.get("runner") or {}).get("failures") or []:
        why.setdefault(failure.get("caseId"), []).append(
            f"runner failure ({failure.get('variant')}, trial {failure.get('trial')}): "
            f"{failure.get('reason')}"
        )
    for case in report.get("caseResults") or []:
        passes = case.get("with")
        if isinstance(passes, list) and any(p is False for p in passes):
            failed = case.get("failedCheck")
            reason = failed.get("reason") if isinstance(failed, Mapping) else None
            why.setdefault(case.get("id"), []).append(
                "the task failed with the skill" + (f": {reason}" if reason else "")
            )
    order = [c.get("id") for c in report.get("caseResults") or []]
    ordered = [c for c in order if c in why] + [c for c in why if c not in order]
    result = []
    for case_id in ordered:
        line = lines.get(case_id)
        result.append(
            (
                str(case_id),
                line if isinstance(line, int) else None,
                "; ".join(dict.fromkeys(why[case_id])),
            )
        )
    return result
