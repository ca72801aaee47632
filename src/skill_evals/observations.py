"""Observations: the runner contract object, recorded files, --record/--resume
(docs/runner-contract.md).

Owner: execution.

Decisions (documented in docs/runner-contract.md):

- ``meta`` keys other than the four recognised ones are ignored (not a failure): ``meta`` is the
  runner's free-form annex and EvalGate-style runners put more there. A recognised key must be a
  finite number >= 0 (``null`` counts as absent).
- ``exitCode`` must be a JSON integer (``0.0`` and ``true`` are rejected) within ±(2^53-1).
- ``--resume`` keeps the first record of a key (later duplicates are ignored) and ignores records
  whose trial is outside 1..--trials (so lowering --trials keeps working).
- Only valid observations are recorded; a runner failure is never written to a --record file, so
  ``--resume`` runs it again instead of treating it as a success.
"""

from __future__ import annotations

import gc
import json
import math
import os
import stat
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .cases import MAX_ID_CHARS, Case, CaseSuite
from .errors import InvalidInput
from .jsonl import describe_key

# An arm: what an observation is of. "with" and "without" are the two variants of the runner
# contract; "baseline" is another version of the skill, run as "with" (docs/comparison.md).
Variant = Literal["with", "without", "baseline"]
Echo = Literal["with", "without"]  # what EVALGATE_SKILL_VARIANT says and the runner echoes
VARIANTS: tuple[Echo, Echo] = ("with", "without")
ARMS: tuple[Variant, Variant, Variant] = ("with", "without", "baseline")
META_KEYS = ("durationMs", "costUsd", "inputTokens", "outputTokens", "turns")
RUNNER_KEYS = ("variant", "invokedSkills", "output", "exitCode", "meta", "evidence", "toolCalls")
EVIDENCE_STATES = ("offered", "attempted", "loaded", "failed")
EVIDENCE_DELIVERIES = ("native", "mcp", "read", "explicit")
MAX_EVIDENCE_ITEMS = 1000
_MAX_EVIDENCE_TEXT = 300  # characters of an evidence item's skill or source
# Keys of a recorded line besides the runner's: "checks" is computed by the engine.
# "cached" marks an observation reused from the cache (docs/cost.md), not run by this run.
RECORD_KEYS = ("caseId", "trial", "checks", "cached")
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
    # One verdict per check of the case's task, computed by the engine after the run (or read
    # from a record); None when not known.
    checks: tuple[bool, ...] | None = None
    # Why each check failed (None where it passed); kept in memory only, never recorded.
    reasons: tuple[str | None, ...] | None = None
    # Reused from the cache (--cache) rather than run; recorded as "cached": true.
    cached: bool = False

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
        if self.meta:
            record["meta"] = dict(self.meta)
        if self.evidence:
            record["evidence"] = [dict(item) for item in self.evidence]
        if self.tool_calls:
            record["toolCalls"] = [call.to_json() for call in self.tool_calls]
        if self.checks is not None:
            record["checks"] = list(self.checks)
        if self.cached:
            record["cached"] = True
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
    meta = _parse_meta(value["meta"]) if "meta" in value else {}
    tool_calls = _parse_tool_calls(value["toolCalls"]) if "toolCalls" in value else ()
    fields = {
        "variant": variant,
        "invoked_skills": tuple(skills),
        "output": output,
        "exit_code": code,
        "meta": meta,
        "tool_calls": tool_calls,
    }
    if "evidence" in value:
        fields["evidence"] = _parse_evidence(value["evidence"])
    return fields


def _parse_evidence(raw: object) -> tuple[dict[str, str], ...]:
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


def _parse_tool_calls(raw: object) -> tuple[ToolCall, ...]:
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


def _parse_checks(raw: object) -> tuple[bool, ...]:
    """A record's ``checks``: an array of booleans."""
    if not isinstance(raw, list) or not all(isinstance(item, bool) for item in raw):
        raise ContractError("wrong-typed key 'checks': must be an array of booleans")
    return tuple(raw)


def _parse_meta(raw_meta: object) -> dict[str, float]:
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


# ------------------------------------------------------------------------------------ files


def _record_key(path: Path, line: int, value: dict[str, Any]) -> tuple[str, int, Variant]:
    """The (caseId, trial, variant) of a recorded observation; InvalidInput naming the line."""
    case_id = value.get("caseId")
    if not isinstance(case_id, str):
        what = "missing" if case_id is None else "must be a string"
        raise InvalidInput(f"{path}:{line}: key 'caseId' {what}")
    trial = value.get("trial")
    if not isinstance(trial, int) or isinstance(trial, bool):
        what = "missing" if trial is None else "must be an integer"
        raise InvalidInput(f"{path}:{line}: key 'trial' {what}")
    variant = value.get("variant")
    if variant not in ARMS:
        what = "missing" if variant is None else 'must be "with", "without" or "baseline"'
        raise InvalidInput(f"{path}:{line}: key 'variant' {what}")
    arm: Variant = (
        "with" if variant == "with" else "without" if variant == "without" else "baseline"
    )
    return case_id, trial, arm


def _record_observation(
    path: Path, line: int, value: dict[str, Any], key: tuple[str, int, Variant]
) -> Observation:
    body = {k: v for k, v in value.items() if k not in RECORD_KEYS}
    echo: Echo = "without" if key[2] == "without" else "with"
    if key[2] == "baseline":
        body["variant"] = "with"  # a baseline observation is a with-run of another version
    try:
        fields = parse_runner_object(body, echo)
        checks = _parse_checks(value["checks"]) if "checks" in value else None
        cached = _parse_cached(value["cached"]) if "cached" in value else False
    except ContractError as exc:
        named = describe_key(exc.key) if exc.key is not None else None
        where = f" ({named})" if named else ""
        raise InvalidInput(f"{path}:{line}: {exc}{where}") from None
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
        checks=checks,
        cached=cached,
    )


def _parse_cached(raw: object) -> bool:
    """A record's ``cached`` mark: a boolean."""
    if not isinstance(raw, bool):
        raise ContractError("wrong-typed key 'cached': must be a boolean")
    return raw


def _valid_observation(value: dict[str, Any]) -> Observation | None:
    """The Observation of a recorded observation when every field is well-formed, else None.

    Fast path of the --observations loader: one pass of exact type tests, no copy
    of the record. It only ever accepts: a record it declines goes through :func:`_record_key`
    and :func:`_record_observation`, which give every error message in their order, so what
    is accepted and what is said about the rest are unchanged."""
    case_id = value.get("caseId")
    trial = value.get("trial")
    variant = value.get("variant")
    skills = value.get("invokedSkills")
    output = value.get("output")
    code = value.get("exitCode")
    # type(...) is, not isinstance: a bool is no integer here, and JSON yields no subclasses.
    if not (
        type(case_id) is str
        and type(trial) is int
        and (variant == "with" or variant == "without" or variant == "baseline")
        and type(skills) is list
        and type(output) is str
        and type(code) is int
        and -MAX_SAFE_INTEGER <= code <= MAX_SAFE_INTEGER
    ):
        return None
    for skill in skills:
        if type(skill) is not str:
            return None
    keys = 6  # the six above; any other key than the optional ones below is an error
    meta: dict[str, float] = {}
    tool_calls: tuple[ToolCall, ...] = ()
    checks: tuple[bool, ...] | None = None
    cached = False
    evidence: tuple[dict[str, str], ...] = ()
    if len(value) > keys:
        try:
            if "meta" in value:
                keys += 1
                meta = _parse_meta(value["meta"])
            if "evidence" in value:
                keys += 1
                evidence = _parse_evidence(value["evidence"])
            if "toolCalls" in value:
                keys += 1
                tool_calls = _parse_tool_calls(value["toolCalls"])
            if "checks" in value:
                keys += 1
                checks = _parse_checks(value["checks"])
            if "cached" in value:
                keys += 1
                cached = _parse_cached(value["cached"])
        except ContractError:
            return None
        if len(value) != keys:
            return None
    # Positional (the field order of Observation): keyword arguments cost more per line.
    return Observation(
        case_id,
        trial,
        variant,
        tuple(skills),
        output,
        code,
        meta,
        evidence,
        tool_calls,
        checks,
        None,
        cached,
    )


def checks_problem(observation: Observation, case: Case) -> str | None:
    """Why an observation's ``checks`` do not fit its case's task, or None.

    A case with a workspace check needs them (they cannot be recomputed from the record); when
    given, there is exactly one per check."""
    task = case.task
    count = len(task.checks) if task is not None else 0
    if observation.checks is None:
        if task is not None and task.workspace:
            return (
                f"key 'checks' is missing: this case has workspace checks, so each of its "
                f"observations needs one boolean per check ({count})"
            )
        return None
    if len(observation.checks) != count:
        return (
            f"key 'checks' has {len(observation.checks)} value(s); the case's task has "
            f"{count} check(s)"
        )
    return None


def _show_id(case_id: str) -> str:
    """A case id for a message, cut to the longest valid id (an unknown one may be huge)."""
    if len(case_id) > MAX_ID_CHARS:
        return repr(case_id[:MAX_ID_CHARS]) + "…"
    return repr(case_id)


def _describe(key: tuple[str, int, str]) -> str:
    case_id, trial, variant = key
    return f"caseId {_show_id(case_id)} trial {trial} variant {variant!r}"


def isolation_breach(observation: Observation, skill_name: str) -> RunnerFailure | None:
    """A failure when a ``without`` observation reports the tested skill, else None."""
    if observation.variant == "without" and skill_name in observation.invoked_skills:
        return _breach(observation, skill_name)
    return None


def _breach(observation: Observation, skill_name: str) -> RunnerFailure:
    return RunnerFailure(
        observation.case_id,
        observation.trial,
        observation.variant,
        f"isolation breach: the without variant reported loading the tested skill {skill_name!r}",
    )


Key = tuple[str, int, Variant]  # (case id, trial, arm)
_ARM_INDEX = {"with": 0, "without": 1, "baseline": 2}


def load_observations(
    path: Path,
    suite: CaseSuite,
    trials: int,
    skill_name: str,
    planned: Sequence[Key] | None = None,
    baseline: bool = False,
) -> tuple[list[Observation], list[RunnerFailure]]:
    """Read an --observations file: exactly one per planned (case, trial, arm).

    ``planned``: the keys the run's arms need (default: every case × trial × with, without).
    A record of a known case, trial and arm the plan does not need (e.g. a ``without`` run of a
    case the isolation spot-check left out) is ignored; ``baseline`` records need
    ``baseline`` (a --baseline DIR). Duplicate/missing/extra/unknown caseId → InvalidInput
    (exit 5) naming the key (the whole file is checked first). A ``without`` observation listing
    ``skill_name`` is returned as a RunnerFailure "isolation breach" (the evaluation then exits
    7), not as an observation. Both lists come back in plan order (case-file order, trial, arm:
    with, without, baseline)."""
    from .jsonl import check_regular_file

    check_regular_file(path, "--observations")
    keys = plan_keys(suite, trials) if planned is None else planned
    with gc_paused():
        return _load_observations(path, suite, trials, skill_name, keys, baseline)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while many long-lived objects are built or read.

    Loading --observations creates a few acyclic objects per line that survive to the end;
    the collector would walk them again and again as they pile up (about a third of the load
    time, docs/performance.md). Reference counting frees everything as usual; collection resumes
    afterwards if it was on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _load_observations(
    path: Path,
    suite: CaseSuite,
    trials: int,
    skill_name: str,
    planned: Sequence[Key],
    baseline: bool,
) -> tuple[list[Observation], list[RunnerFailure]]:
    from .jsonl import read_jsonl_values

    # Per case, slot 3 × (trial - 1) + (0 with, 1 without, 2 baseline) holds that observation
    # and, in a parallel list, its line: plan order without building and hashing a key per line.
    width = 3 * trials
    slots: dict[str, tuple[list[Observation | None], list[int]]] = {
        case.id: ([None] * width, [0] * width) for case in suite.cases
    }
    wanted: dict[str, list[bool]] = {case.id: [False] * width for case in suite.cases}
    for case_id, trial, arm in planned:
        wanted[case_id][3 * trial - 3 + _ARM_INDEX[arm]] = True
    arms_allowed = 3 if baseline else 2
    bound = len(suite.cases) * trials * arms_allowed
    cases = suite.by_id()
    # The cases whose observations must carry `checks`; the others are checked only when
    # they carry some (one set lookup per line instead of a call).
    workspace_cases = {c.id for c in suite.cases if c.task is not None and c.task.workspace}
    filled = 0
    # The record just past the bound is still read: when it is reached, every key already has
    # its observation, so it is a duplicate, an extra trial or an unknown caseId, and that error
    # names the key. Reading stops there either way.
    for line, value in read_jsonl_values(path, max_records=bound + 1):
        observation = _valid_observation(value)
        if observation is None:
            key = _record_key(path, line, value)
        else:
            key = (observation.case_id, observation.trial, observation.variant)
        row = slots.get(key[0])
        if row is None:
            raise InvalidInput(
                f"{path}:{line}: unknown caseId {_show_id(key[0])} (not in {suite.path})"
            )
        if not 1 <= key[1] <= trials:
            raise InvalidInput(
                f"{path}:{line}: extra observation {_describe(key)}: trial must be "
                f"1..{trials} (--trials {trials})"
            )
        if key[2] == "baseline" and not baseline:
            raise InvalidInput(
                f"{path}:{line}: {_describe(key)}: a baseline observation needs "
                "--baseline DIR (the skill version it was run with)"
            )
        index = 3 * key[1] - 3 + _ARM_INDEX[key[2]]
        found, lines = row
        if found[index] is not None:
            raise InvalidInput(
                f"{path}:{line}: duplicate observation {_describe(key)} "
                f"(first on line {lines[index]})"
            )
        if observation is None:
            observation = _record_observation(path, line, value, key)
        if observation.checks is not None or key[0] in workspace_cases:
            problem = checks_problem(observation, cases[key[0]])
            if problem is not None:
                raise InvalidInput(f"{path}:{line}: {_describe(key)}: {problem}")
        found[index] = observation
        lines[index] = line
        if wanted[key[0]][index]:
            filled += 1
    if filled != len(planned):
        missing = [
            (case.id, index // 3 + 1, ARMS[index % 3])
            for case in suite.cases
            for index, observation in enumerate(slots[case.id][0])
            if observation is None and wanted[case.id][index]
        ]
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        arms = sorted({arm for _, _, arm in planned}, key=_ARM_INDEX.__getitem__)
        raise InvalidInput(
            f"{path}: missing observation {_describe(missing[0])}{more}; every case × trial "
            f"1..{trials} × variant ({', '.join(arms)}) needs exactly one"
        )
    observations: list[Observation] = []
    failures: list[RunnerFailure] = []
    for case in suite.cases:
        needed = wanted[case.id]
        for index, observation in enumerate(slots[case.id][0]):
            if not needed[index]:
                continue  # not in the plan (or absent): not scored
            assert observation is not None  # every planned slot is filled (checked above)
            if observation.variant == "without" and skill_name in observation.invoked_skills:
                failures.append(_breach(observation, skill_name))
            else:
                observations.append(observation)
    return observations, failures


def load_recorded(
    path: Path, suite: CaseSuite, trials: int, planned: Sequence[Key] | None = None
) -> list[Observation]:
    """Read a --resume file: keep observations matching current cases, trials and the planned
    keys (default: every case × trial × with, without; missing ones are fine; later duplicates
    of a key are ignored; trials outside 1..``trials`` and keys outside the plan are ignored;
    a record whose ``checks`` do not fit its case's task is ignored, so it runs again).
    Unknown caseId → InvalidInput (exit 5). Returned in plan order."""
    from .jsonl import check_regular_file, read_jsonl_values

    check_regular_file(path, "--resume")
    case_ids = suite.by_id()
    found: dict[tuple[str, int, str], Observation] = {}
    # Bound by the largest --trials so that a file recorded with more trials still resumes.
    bound = len(suite.cases) * max(trials, MAX_TRIALS) * len(ARMS)
    for line, value in read_jsonl_values(path, max_records=bound):
        observation = _valid_observation(value)
        if observation is None:
            key = _record_key(path, line, value)
        else:
            key = (observation.case_id, observation.trial, observation.variant)
        if key[0] not in case_ids:
            raise InvalidInput(
                f"{path}:{line}: unknown caseId {_show_id(key[0])} (not in {suite.path}); "
                "resume only with the case file the observations were recorded for"
            )
        if observation is None:
            observation = _record_observation(path, line, value, key)
        if not 1 <= key[1] <= trials or key in found:
            continue
        if checks_problem(observation, case_ids[key[0]]) is not None:
            continue  # recorded for other checks (or before they were): run it again
        found[key] = observation
    keys = plan_keys(suite, trials) if planned is None else planned
    return [found[k] for k in keys if k in found]


def plan_keys(
    suite: CaseSuite, trials: int, variants: tuple[Variant, ...] = VARIANTS
) -> list[tuple[str, int, Variant]]:
    """Every (caseId, trial, variant) in plan order: case-file order, trial, with before without.

    ``variants``: the arms that run (routing runs only ``with``: the whole catalog installed)."""
    return [
        (case.id, trial, variant)
        for case in suite.cases
        for trial in range(1, trials + 1)
        for variant in variants
    ]


class RecordWriter:
    """Appends observations to a --record file, flushing and fsyncing each line. Thread-safe."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        try:
            # Never open a FIFO or device (opening a FIFO for writing can block forever).
            if path.exists() and not stat.S_ISREG(path.stat().st_mode):
                raise InvalidInput(f"--record {path}: must be a regular file")
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InvalidInput(
                f"--record {path}: cannot open for appending ({exc.strerror})"
            ) from None
        try:
            # A previous run killed mid-line leaves no final newline: start on a fresh line so the
            # damage stays on that one line (which --resume then reports).
            size = os.fstat(self._fd).st_size
            if size > 0 and os.pread(self._fd, 1, size - 1) != b"\n":
                os.write(self._fd, b"\n")
        except OSError as exc:
            os.close(self._fd)
            raise InvalidInput(f"--record {path}: cannot write ({exc.strerror})") from None
        self._closed = False

    @property
    def path(self) -> Path:
        """The file being appended to."""
        return self._path

    def write(self, observation: Observation) -> None:
        """Append one recorded observation, flushed to disk (raises InvalidInput if that fails)."""
        line = (
            json.dumps(
                observation.to_record(), ensure_ascii=False, allow_nan=False, separators=(",", ":")
            )
            + "\n"
        ).encode("utf-8")
        with self._lock:
            if self._closed:
                raise ValueError("RecordWriter is closed")
            try:
                view = memoryview(line)
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
                os.fsync(self._fd)
            except OSError as exc:
                raise InvalidInput(
                    f"--record {self._path}: cannot write ({exc.strerror})"
                ) from None

    def close(self) -> None:
        """Close the file (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self._fd)
