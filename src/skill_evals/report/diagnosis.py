"""What every output says about a run that did not go as planned, computed once for all of
them (text, Markdown, HTML, the CI summary and comment): runner failures grouped by reason with
advice, and whether the figures are partial.

Reads only the report dict (docs/report.md): ids, counts and the engine's own reasons, never
prompts or outputs. Callers escape every string for their output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

RUNNER_DOCS = "docs/runner-contract.md#runner-failures"


@dataclass(frozen=True)
class FailureGroup:
    """Runner failures that share one reason: how many, the first one, what to do."""

    reason: str
    count: int
    case_id: str
    trial: object
    variant: str
    advice: str
    sandbox: str = ""  # the sandbox's advice, on the first group of a sandboxed run only

    @property
    def advices(self) -> tuple[str, ...]:
        """What to do, one line each: the reason's advice, then the sandbox's (if any)."""
        return (self.advice, self.sandbox) if self.sandbox else (self.advice,)

    @property
    def advice_text(self) -> str:
        """:attr:`advices` on one line (tables, lists)."""
        return "; ".join(self.advices)

    @property
    def first(self) -> str:
        """``case-id trial N arm`` of the first failure with this reason (plan order)."""
        return f"{self.case_id} trial {self.trial} {self.variant}"


# A runner's own reason ("runner: …") is classed by its first clause only (up to "; "): the
# clauses after it are hints that name variables ("check ANTHROPIC_API_KEY / …_AUTH_TOKEN"), and
# matching those gave "refused the credentials" for a server that never answered.
_RUNNER_CLASSES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        (
            "auth",
            r"not logged in|no credentials|no usable credentials|auth(entication)? refused"
            r"|refused the key|no api key|invalid api key|\b40[13]\b|unauthori[sz]ed|forbidden"
            r"|authenticat|api[ _-]?key|credential|oauth|\blog ?in\b|logged out"
            r"|(?:token|key) (?:has )?expired|expired (?:token|key)",
        ),
        ("rate limit", r"rate.?limit|\b429\b|overload|\b529\b|too many requests|quota|throttl"),
        (
            "server",
            r"server error|\b5\d\d\b|no answer|cannot reach|connection failed"
            r"|service unavailable|bad gateway|gateway time|timed? ?out|\b408\b"
            r"|econn(?:refused|reset|aborted)|connection (?:refused|reset|dropped)"
            r"|unreachable|network",
        ),
        # A program that is not there; "model … not found" names the model, not the program.
        (
            "binary missing",
            r"cannot start|command not found|not found (?:on|in) (?:the )?path|\benoent\b"
            r"|no such file|not installed|not an executable"
            r"|(?:binary|program|executable|cli)\b[^;]{0,40}not found",
        ),
        ("turn limit", r"turn limit|max.?turns"),
    )
)

RUNNER_ADVICE = {
    "auth": "the agent has no usable credentials (not logged in, no key, or a key the API "
    "refused): set its API key variable where skill-evals runs (docs/agents/) and let it "
    "reach the runner (require-env in .skill-evals.yml)",
    "rate limit": "the model API is rate-limited or overloaded: lower --jobs, raise --retries, "
    "or rerun later",
    "server": "the model API failed or did not answer: check its base URL variable and the "
    "network, raise --retries, or rerun later",
    "binary missing": "the agent's program is missing: install its CLI (docs/agents/) or pass "
    "--bin PATH to the runner",
    "turn limit": "the agent hit its turn limit: raise the runner's --max-turns",
    "other": "the runner reported this reason itself: see its page in docs/agents/ or its own "
    "documentation",
}

# (pattern on the engine's own reason, advice). First match wins (docs/runner-contract.md).
_ADVICE: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), advice)
    for pattern, advice in (
        (
            r"^cannot start",
            "the runner program could not be started: check the command, that the program is "
            "installed and executable, and relative paths (they are resolved from the directory "
            "skill-evals runs in)",
        ),
        (
            r"^timed out",
            "raise --timeout-ms (timeout-ms in .skill-evals.yml): real agents often need "
            "minutes per run",
        ),
        (
            r"^output exceeded",
            "raise --max-bytes (max-bytes in .skill-evals.yml) or make the runner write less "
            "to stdout and stderr",
        ),
        (
            r"^isolation breach",
            "the runner offered the skill in the without variant: it must not make the skill "
            "available when EVALGATE_SKILL_VARIANT is without",
        ),
        (
            r"^(stdout|variant mismatch)",
            "the runner must print exactly one JSON object line on stdout (logs go to stderr) "
            "and echo EVALGATE_SKILL_VARIANT; see docs/runner-contract.md",
        ),
        (
            r"^setup",
            "a setup command of the case failed: run it by hand in a copy of the fixture",
        ),
        (
            r"^(exited with code|killed by signal)",
            "the runner failed: rerun with --show-runner-stderr to see the first failing "
            "invocation's stderr, or run it by hand for the first case "
            "(docs/runner-contract.md#debugging-a-runner)",
        ),
    )
)


# Said once per sandboxed run with runner failures: the sandbox may be why.
SANDBOX_ADVICE = (
    "the runner ran in the sandbox (docs/sandbox.md): it sees the system directories, its own "
    "file or bin/ prefix, its arguments, the skill and --sandbox-path paths; try once with "
    "--sandbox off to tell; give what it needs with --sandbox-path"
)


def runner_class(reason: str) -> str:
    """The class of a runner's own reason (``runner: …``): auth, rate limit, server, binary
    missing, turn limit or other, from its first clause."""
    head = reason.removeprefix("runner:").strip().split("; ", 1)[0]
    for name, pattern in _RUNNER_CLASSES:
        if pattern.search(head):
            return name
    return "other"


def advice_for(reason: str) -> str:
    """What to do about a runner failure with this reason: for a runner's own reason, the
    advice of its class (never one that contradicts it)."""
    if reason.startswith("runner:"):
        return RUNNER_ADVICE[runner_class(reason)]
    for pattern, advice in _ADVICE:
        if pattern.search(reason):
            return advice
    return f"see {RUNNER_DOCS}"


def failure_groups(report: Mapping[str, Any]) -> list[FailureGroup]:
    """``runner.failures`` grouped by reason, most frequent first (ties: the earlier first)."""
    runner = report.get("runner")
    failures = runner.get("failures") if isinstance(runner, Mapping) else None
    if not isinstance(failures, Sequence):
        return []
    firsts: dict[str, Mapping[str, Any]] = {}
    counts: dict[str, int] = {}
    for failure in failures:
        if not isinstance(failure, Mapping):
            continue
        reason = str(failure.get("reason") or "unknown reason")
        counts[reason] = counts.get(reason, 0) + 1
        firsts.setdefault(reason, failure)
    order = {reason: i for i, reason in enumerate(firsts)}
    groups = [
        FailureGroup(
            reason=reason,
            count=counts[reason],
            case_id=str(first.get("caseId")),
            trial=first.get("trial"),
            variant=str(first.get("variant")),
            advice=advice_for(reason),
        )
        for reason, first in firsts.items()
    ]
    groups.sort(key=lambda g: (-g.count, order[g.reason]))
    sandbox = report.get("sandbox")
    if groups and isinstance(sandbox, Mapping) and sandbox.get("mode") == "bwrap":
        groups[0] = replace(groups[0], sandbox=SANDBOX_ADVICE)
    return groups


def coverage(report: Mapping[str, Any]) -> tuple[int, int] | None:
    """(observed, planned) when the figures rest on fewer observations than planned."""
    block = report.get("coverage")
    if not isinstance(block, Mapping):
        return None
    observed, planned = block.get("observed"), block.get("planned")
    if not isinstance(observed, int) or not isinstance(planned, int):
        return None
    if isinstance(observed, bool) or isinstance(planned, bool) or observed >= planned:
        return None
    return observed, planned


def settled_stop(report: Mapping[str, Any]) -> str | None:
    """``stopped early: the verdict was settled after k of n invocations`` when the run stopped
    with a settled verdict (its figures are partial, its verdict is the result), else None."""
    from .stop_notes import report_stopped

    return report_stopped(report)


def partial_note(report: Mapping[str, Any]) -> str:
    """``partial: 18 of 40, not decided`` (or, for a run that stopped with a settled verdict,
    ``stopped early: the verdict was settled after 18 of 40 invocations``), or "" when every
    planned observation was scored."""
    settled = settled_stop(report)
    if settled is not None:
        return settled
    found = coverage(report)
    if found is None:
        return ""
    from ..score.gates import partial_label

    return partial_label(*found)


def gate_partial(gate: object, report: Mapping[str, Any]) -> str:
    """`` (partial: 18 of 40, not decided)`` after the value of a gate that has no verdict
    because it rests on part of the planned runs (``"partial": true``), else ""."""
    if not isinstance(gate, Mapping) or gate.get("partial") is not True:
        return ""
    found = coverage(report)
    from ..score.gates import partial_label

    return f" ({partial_label(*found)})" if found else " (partial, not decided)"


def partial_suffix(report: Mapping[str, Any]) -> str:
    """`` (partial: 18 of 40, not decided)`` to put after a figure, or ""."""
    note = partial_note(report)
    return f" ({note})" if note else ""


@dataclass(frozen=True)
class Sections:
    """A report's messages sorted into the places they are shown (raw, unescaped strings)."""

    failed: list[str]  # error messages: why the run did not pass
    warnings: list[str]  # warning messages, then the skill's format warnings
    notes: list[str]
    failures: list[FailureGroup]


def sections(report: Mapping[str, Any]) -> Sections:
    """Sort the report's messages by severity; group its runner failures."""
    from ..messages import severities_of

    by: dict[str, list[str]] = {"error": [], "warning": [], "note": []}
    for severity, text in severities_of(report):
        by[severity].append(text)
    skill = report.get("skill")
    if isinstance(skill, Mapping):
        by["warning"] += [f"skill format: {w}" for w in skill.get("warnings") or []]
    return Sections(by["error"], by["warning"], by["note"], failure_groups(report))
