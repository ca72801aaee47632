"""The ``task[<case id>]`` testcases of a skill's JUnit suite: one per case with a task check.

So that a per-case JUnit annotator marks the case a reviewer must fix, not the suite's
aggregate ``uplift`` testcase:

- ``<failure>`` when the ``with`` arm failed its task in at least one trial that ran and the
  uplift gate failed (the case contributed to it); the message names the failing trials and
  the first failing check's reason (never an output or a prompt);
- otherwise such a case passes, with ``failed in 2 of 3 trials with the skill: <first check>``
  in its ``<system-out>`` and as the suite's ``task[<id>]`` property: a gate that passes never
  turns a JUnit consumer red;
- ``<error>`` when every ``with`` observation of the case is a runner failure;
- ``<skipped message="not run: …">`` when no ``with`` observation of the case ran;
- else it passes. ``without`` results never fail it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .junit_xml import Suite
from .values import mapping


def _with_failures(report: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Runner failures of the ``with`` arm by case id."""
    found: dict[str, list[Mapping[str, Any]]] = {}
    for failure in mapping(report.get("runner")).get("failures") or []:
        if isinstance(failure, Mapping) and failure.get("variant") == "with":
            found.setdefault(str(failure.get("caseId")), []).append(failure)
    return found


def _failure_message(passes: Sequence[object], failed_check: Mapping[str, Any]) -> str:
    trials = [str(i + 1) for i, passed in enumerate(passes) if passed is False]
    message = f"with the skill: failed in trial(s) {', '.join(trials)} of {len(passes)}"
    if failed_check.get("variant") == "with" and failed_check.get("reason"):
        message += f"; first failing check: {failed_check.get('reason')}"
    return message


def _note(passes: Sequence[object], failed_check: Mapping[str, Any]) -> str:
    """``failed in 2 of 3 trials with the skill: <first check>`` of a case the gate passed."""
    failed = sum(1 for passed in passes if passed is False)
    note = f"failed in {failed} of {len(passes)} trials with the skill"
    if failed_check.get("variant") == "with" and failed_check.get("reason"):
        note += f": {failed_check.get('reason')}"
    return note


def task_cases(
    suite: Suite,
    report: Mapping[str, Any],
    case_results: Sequence[object],
    not_run: Callable[[Mapping[str, Any]], str],
) -> bool:
    """Add ``task[<id>]`` for every case with a task check, in case-file order; ``not_run``
    gives the reason of a case that did not run. Returns True when one holds an error."""
    runner_failures = _with_failures(report)
    gate = mapping(mapping(report.get("gates")).get("minUplift"))
    contributed = gate.get("passed") is False  # only a failed uplift gate fails a task case
    has_error = False
    for result in case_results:
        if not isinstance(result, Mapping) or not isinstance(result.get("with"), list):
            continue  # no task check: no task testcase
        cid = str(result.get("id"))
        passes: list[object] = result["with"]
        check = mapping(result.get("failedCheck"))
        if False in passes and not contributed:
            note = _note(passes, check)
            suite.case(f"task[{cid}]", system_out=note)
            suite.properties.append((f"task[{cid}]", note))
            continue
        tc = suite.case(f"task[{cid}]")
        if False in passes:
            suite.result(tc, "failure", _failure_message(passes, check))
        elif any(p is True for p in passes):
            continue
        elif cid in runner_failures:
            reasons = "; ".join(
                f"trial {f.get('trial')}: {f.get('reason')}" for f in runner_failures[cid]
            )
            suite.result(tc, "error", f"runner failure with the skill: {reasons}")
            has_error = True
        else:
            suite.result(tc, "skipped", not_run(report))
    return has_error
