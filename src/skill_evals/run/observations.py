"""Observations: what one invocation produced — the runner contract object of its last stdout
line, parsed and validated (docs/runner-contract.md) — and the isolation check on a single
observation. A recorded line (with its ``checks``): record_lines.py; files of them: records.py.

Decisions (documented in docs/runner-contract.md):

- ``meta`` keys other than the four recognised ones are ignored (not a failure): ``meta`` is the
  runner's free-form annex and EvalGate-style runners put more there. A recognised key must be a
  finite number >= 0 (``null`` counts as absent).
- ``exitCode`` must be a JSON integer (``0.0`` and ``true`` are rejected) within ±(2^53-1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# An arm: what an observation is of. "with" and "without" are the two variants of the runner
# contract; "baseline" is another version of the skill, run as "with" (docs/comparison.md).
Variant = Literal["with", "without", "baseline"]
Echo = Literal["with", "without"]  # what EVALGATE_SKILL_VARIANT says and the runner echoes
VARIANTS: tuple[Echo, Echo] = ("with", "without")
ARMS: tuple[Variant, Variant, Variant] = ("with", "without", "baseline")
META_KEYS = ("durationMs", "costUsd", "inputTokens", "outputTokens", "turns")
RUNNER_KEYS = (
    "variant", "invokedSkills", "output", "exitCode", "meta", "evidence", "toolCalls", "warnings",
)  # fmt: skip
EVIDENCE_STATES = ("offered", "attempted", "loaded", "failed", "unverified")
MAX_WARNINGS = 10  # items of a runner line's ``warnings``
MAX_WARNING_CHARS = 300  # characters of one
EVIDENCE_DELIVERIES = ("native", "mcp", "read", "explicit")
MAX_EVIDENCE_ITEMS = 1000
_MAX_EVIDENCE_TEXT = 300  # characters of an evidence item's skill or source
# Keys of a recorded line besides the runner's: "checks" is computed by the engine.
# "cached" marks an observation reused from the cache (docs/cost.md), not run by this run.
# "judge" holds the judge's verdicts per judged check, "judgeFiles" the files it was shown.
RECORD_KEYS = ("caseId", "trial", "checks", "cached", "judge", "judgeFiles")
MAX_TOOL_CALLS = 10_000
REQUIRED_RUNNER_KEYS = ("variant", "invokedSkills", "output", "exitCode")
MAX_SAFE_INTEGER = 9_007_199_254_740_991
MAX_TRIALS = 100  # the --trials upper bound; sizes the --resume population bound


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the runner reports: its name, input object and whether it completed
    without error (``ok``)."""

    name: str
    input: dict[str, Any]
    ok: bool

    def to_json(self) -> dict[str, Any]:
        """The runner-contract form."""
        return {"name": self.name, "input": self.input, "ok": self.ok}


@dataclass(slots=True)
class Observation:
    """What one (case, trial, variant) invocation reported. Treat it as read-only.

    Not ``frozen``: a frozen dataclass's ``__init__`` sets each field through
    object.__setattr__ (about 4× the cost), and --observations builds one per line.
    ``slots`` keeps each instance one small object for the garbage collector to walk."""

    case_id: str
    trial: int  # one-based
    variant: Variant
    invoked_skills: tuple[str, ...]
    output: str
    exit_code: int
    meta: Mapping[str, float] = field(default_factory=dict)
    # The runner's optional loading evidence: {"skill", "state", "delivery", "source"} items.
    evidence: tuple[Mapping[str, str], ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    # What the runner warned about (its line's ``warnings``), printed once per distinct text.
    warnings: tuple[str, ...] = ()
    # One verdict per check of the case's task, computed by the engine after the run (or read
    # from a record); None when not known.
    checks: tuple[bool | None, ...] | None = None
    # Why each check failed (None where it passed); kept in memory only, never recorded.
    reasons: tuple[str | None, ...] | None = None
    # Reused from the cache (--cache) rather than run; recorded as "cached": true.
    cached: bool = False
    # The judge's verdicts of its judged checks ({"check", "key", "score", "pass", "reason"}).
    judged: tuple[Mapping[str, Any], ...] = ()
    # The workspace files its judge checks were shown ({"path", "text", "truncated"}).
    judge_files: tuple[Mapping[str, Any], ...] | None = None
    # What its sandbox's processes tried to reach ({"host", "port", "kind", "by", "allowed",
    # "bytesUp", "bytesDown"}, the first 100), recorded by the engine, never by the runner.
    network: tuple[Mapping[str, Any], ...] = ()
    network_dropped: int = 0  # attempts past those 100
    # (input, output) tokens its model responses reported at the wire (recorded in
    # meta.wireTokens); None when unknown.
    wire_tokens: tuple[int, int] | None = None

    @property
    def key(self) -> tuple[str, int, str]:
        """(case id, trial, variant): unique within a run."""
        return (self.case_id, self.trial, self.variant)

    def to_record(self) -> dict[str, Any]:
        """The recorded-observation line for this observation (``meta`` only when non-empty)."""
        record: dict[str, Any] = {
            "caseId": self.case_id,
            "trial": self.trial,
            "variant": self.variant,
            "invokedSkills": list(self.invoked_skills),
            "output": self.output,
            "exitCode": self.exit_code,
        }
        if self.meta or self.wire_tokens is not None:
            record["meta"] = dict(self.meta)
        if self.wire_tokens is not None:
            record["meta"]["wireTokens"] = {
                "input": self.wire_tokens[0], "output": self.wire_tokens[1],
            }  # fmt: skip
        if self.evidence:
            record["evidence"] = [dict(item) for item in self.evidence]
        if self.tool_calls:
            record["toolCalls"] = [call.to_json() for call in self.tool_calls]
        if self.warnings:
            record["warnings"] = list(self.warnings)
        if self.checks is not None:
            record["checks"] = list(self.checks)
        if self.cached:
            record["cached"] = True
        if self.judged:
            record["judge"] = [dict(entry) for entry in self.judged]
        if self.judge_files is not None:
            record["judgeFiles"] = [dict(item) for item in self.judge_files]
        if self.network:
            record["network"] = [dict(item) for item in self.network]
        if self.network_dropped:
            record["networkDropped"] = self.network_dropped
        return record


@dataclass(frozen=True)
class RunnerFailure:
    """A void observation. ``reason`` never contains raw stdout, stderr or the prompt."""

    case_id: str
    trial: int
    variant: Variant
    reason: str

    @property
    def key(self) -> tuple[str, int, str]:
        """(case id, trial, variant)."""
        return (self.case_id, self.trial, self.variant)


class ContractError(ValueError):
    """The runner's stdout broke the runner contract. str() is a safe reason: it names the
    problem and our own field names, never text from the output. ``key`` is an unknown key
    the object had (for a reader of the user's own file, which may name it)."""

    def __init__(self, reason: str, key: str | None = None) -> None:
        super().__init__(reason)
        self.key = key


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def parse_runner_object(value: object, expected_variant: Echo) -> dict[str, Any]:
    """Validate one runner object (keys variant, invokedSkills, output, exitCode, optional meta).

    Returns ``{"variant", "invoked_skills" (tuple), "output", "exit_code", "meta" (dict)}`` and
    ``"evidence"`` (tuple of dicts) when the runner reported it;
    raises ContractError with a reason that names the field (never its value)."""
    if not isinstance(value, dict):
        raise ContractError(f"not a JSON object (got {_type_name(value)})")
    for key in value:
        if key not in RUNNER_KEYS:
            raise ContractError(
                f"an extra key; the only keys allowed are {', '.join(RUNNER_KEYS)}", key
            )
    for key in REQUIRED_RUNNER_KEYS:
        if key not in value:
            raise ContractError(f"missing key '{key}'")
    variant = value["variant"]
    if variant not in VARIANTS:
        raise ContractError('wrong-typed key \'variant\': must be "with" or "without"')
    if variant != expected_variant:
        raise ContractError(
            f"variant mismatch: reported {variant!r}, expected {expected_variant!r}"
        )
    skills = value["invokedSkills"]
    if not isinstance(skills, list) or not all(isinstance(s, str) for s in skills):
        raise ContractError("wrong-typed key 'invokedSkills': must be an array of strings")
    output = value["output"]
    if not isinstance(output, str):
        raise ContractError(f"wrong-typed key 'output': must be a string, got {_type_name(output)}")
    code = value["exitCode"]
    if not isinstance(code, int) or isinstance(code, bool):
        raise ContractError(
            f"wrong-typed key 'exitCode': must be an integer, got {_type_name(code)}"
        )
    if abs(code) > MAX_SAFE_INTEGER:
        raise ContractError("wrong-typed key 'exitCode': outside the safe integer range")
    meta = parse_meta(value["meta"]) if "meta" in value else {}
    tool_calls = parse_tool_calls(value["toolCalls"]) if "toolCalls" in value else ()
    fields = {
        "variant": variant,
        "invoked_skills": tuple(skills),
        "output": output,
        "exit_code": code,
        "meta": meta,
        "tool_calls": tool_calls,
    }
    if "evidence" in value:
        fields["evidence"] = parse_evidence(value["evidence"])
    if "warnings" in value:
        fields["warnings"] = parse_warnings(value["warnings"])
    return fields


def observation_from(
    fields: Mapping[str, Any],
    key: tuple[str, int, Variant],
    checks: tuple[bool | None, ...] | None = None,
    cached: bool = False,
) -> Observation:
    """The Observation of ``key`` from :func:`parse_runner_object`'s fields."""
    return Observation(
        case_id=key[0],
        trial=key[1],
        variant=key[2],
        invoked_skills=fields["invoked_skills"],
        output=fields["output"],
        exit_code=fields["exit_code"],
        meta=fields["meta"],
        evidence=fields.get("evidence", ()),
        tool_calls=fields["tool_calls"],
        warnings=fields.get("warnings", ()),
        checks=checks,
        cached=cached,
    )


def parse_warnings(raw: object) -> tuple[str, ...]:
    """``warnings``: at most MAX_WARNINGS strings of at most MAX_WARNING_CHARS characters each
    (ContractError naming the bad one, never its text)."""
    if not isinstance(raw, list):
        raise ContractError(f"wrong-typed key 'warnings': must be an array, got {_type_name(raw)}")
    if len(raw) > MAX_WARNINGS:
        raise ContractError(f"key 'warnings': more than {MAX_WARNINGS} items")
    for index, item in enumerate(raw):
        if not isinstance(item, str) or len(item) > MAX_WARNING_CHARS:
            raise ContractError(
                f"wrong-typed key 'warnings[{index}]': must be a string of at most "
                f"{MAX_WARNING_CHARS} characters"
            )
    return tuple(raw)


def parse_evidence(raw: object) -> tuple[dict[str, str], ...]:
    """The runner's ``evidence`` items (ContractError naming the bad one, never its value)."""
    if not isinstance(raw, list):
        raise ContractError(f"wrong-typed key 'evidence': must be an array, got {_type_name(raw)}")
    if len(raw) > MAX_EVIDENCE_ITEMS:
        raise ContractError(f"key 'evidence': more than {MAX_EVIDENCE_ITEMS} items")
    items: list[dict[str, str]] = []
    for index, item in enumerate(raw):
        where = f"evidence[{index}]"
        if not isinstance(item, dict) or set(item) != {"skill", "state", "delivery", "source"}:
            raise ContractError(
                f"wrong-typed key '{where}': must be an object with exactly skill, state, "
                "delivery, source"
            )
        for key in ("skill", "source"):
            text = item[key]
            if not isinstance(text, str) or len(text) > _MAX_EVIDENCE_TEXT:
                raise ContractError(
                    f"wrong-typed key '{where}.{key}': must be a string of at most "
                    f"{_MAX_EVIDENCE_TEXT} characters"
                )
        if item["state"] not in EVIDENCE_STATES:
            raise ContractError(f"wrong-typed key '{where}.state': must be one of "
                                + ", ".join(EVIDENCE_STATES))  # fmt: skip
        if item["delivery"] not in EVIDENCE_DELIVERIES:
            raise ContractError(f"wrong-typed key '{where}.delivery': must be one of "
                                + ", ".join(EVIDENCE_DELIVERIES))  # fmt: skip
        items.append({k: item[k] for k in ("skill", "state", "delivery", "source")})
    return tuple(items)


def parse_tool_calls(raw: object) -> tuple[ToolCall, ...]:
    """``toolCalls``: at most 10,000 objects ``{"name": string, "input": object, "ok": bool}``."""
    if not isinstance(raw, list):
        raise ContractError(f"wrong-typed key 'toolCalls': must be an array, got {_type_name(raw)}")
    if len(raw) > MAX_TOOL_CALLS:
        raise ContractError(f"key 'toolCalls': more than {MAX_TOOL_CALLS} calls")
    calls = []
    for index, item in enumerate(raw):
        where = f"toolCalls[{index}]"
        if not isinstance(item, dict):
            raise ContractError(f"wrong-typed key '{where}': must be an object")
        for key in item:
            if key not in ("name", "input", "ok"):
                raise ContractError(f"an extra key in '{where}'; allowed: name, input, ok", key)
        name, tool_input, ok = item.get("name"), item.get("input"), item.get("ok")
        if not isinstance(name, str):
            raise ContractError(f"wrong-typed key '{where}.name': must be a string")
        if not isinstance(tool_input, dict):
            raise ContractError(f"wrong-typed key '{where}.input': must be an object")
        if not isinstance(ok, bool):
            raise ContractError(f"wrong-typed key '{where}.ok': must be a boolean")
        calls.append(ToolCall(name, tool_input, ok))
    return tuple(calls)


def parse_checks(raw: object) -> tuple[bool | None, ...]:
    """A record's ``checks``: an array of booleans (``null`` for a judge check not judged)."""
    if not isinstance(raw, list) or not all(item is None or isinstance(item, bool) for item in raw):
        raise ContractError("wrong-typed key 'checks': must be an array of booleans")
    return tuple(raw)


def parse_meta(raw_meta: object) -> dict[str, float]:
    """The recognised ``meta`` keys of a runner object (ContractError naming a bad one)."""
    if not isinstance(raw_meta, dict):
        raise ContractError(
            f"wrong-typed key 'meta': must be an object, got {_type_name(raw_meta)}"
        )
    meta: dict[str, float] = {}
    for key in META_KEYS:
        item = raw_meta.get(key)
        if item is None:
            continue  # absent or null: unknown to the runner
        if key == "turns" and (not isinstance(item, int) or isinstance(item, bool) or item < 0):
            raise ContractError(
                f"wrong-typed key 'meta.turns': must be an integer >= 0, got {_type_name(item)}"
            )
        if (
            not isinstance(item, (int, float))
            or isinstance(item, bool)
            or not math.isfinite(item)
            or item < 0
        ):
            raise ContractError(
                f"wrong-typed key 'meta.{key}': must be a number >= 0, got {_type_name(item)}"
            )
        meta[key] = item
    return meta


def reported_sum(values: list[float]) -> float | int | None:
    """The sum of reported ``meta`` values: None when none was reported (unknown, never 0), an
    integer when all are."""
    if not values:
        return None
    if all(isinstance(v, int) for v in values):
        return int(sum(values))
    return math.fsum(values)


Key = tuple[str, int, Variant]  # (case id, trial, arm)


def isolation_breach(observation: Observation, skill_name: str) -> RunnerFailure | None:
    """A failure when a ``without`` observation reports the tested skill, else None."""
    if observation.variant == "without" and skill_name in observation.invoked_skills:
        return breach_failure(observation, skill_name)
    return None


def breach_failure(observation: Observation, skill_name: str) -> RunnerFailure:
    """The "isolation breach" failure of a ``without`` observation reporting the tested skill."""
    return RunnerFailure(
        observation.case_id,
        observation.trial,
        observation.variant,
        f"isolation breach: the without variant reported loading the tested skill {skill_name!r}",
    )


def parse_cached(raw: object) -> bool:
    """A record's ``cached`` mark: a boolean."""
    if not isinstance(raw, bool):
        raise ContractError("wrong-typed key 'cached': must be a boolean")
    return raw
