"""One line of a recorded observation file (--observations, --record, --resume): its key
(caseId, trial, arm), the Observation it holds, and whether its ``checks`` fit its case. The
files themselves are read in records.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from ..errors import InvalidInput
from ..suite.cases import Case
from ..suite.jsonl import describe_key
from .judge_records import split_judge
from .network_records import split_network, with_network
from .observations import (
    ARMS,
    MAX_SAFE_INTEGER,
    RECORD_KEYS,
    ContractError,
    Echo,
    Observation,
    ToolCall,
    Variant,
    observation_from,
    parse_cached,
    parse_checks,
    parse_evidence,
    parse_meta,
    parse_runner_object,
    parse_tool_calls,
    parse_warnings,
)


def record_case_trial(path: Path, line: int, value: dict[str, Any]) -> tuple[str, int]:
    """The (caseId, trial) of a recorded observation; InvalidInput naming the line."""
    case_id = value.get("caseId")
    if not isinstance(case_id, str):
        what = "missing" if case_id is None else "must be a string"
        raise InvalidInput(f"{path}:{line}: key 'caseId' {what}")
    trial = value.get("trial")
    if not isinstance(trial, int) or isinstance(trial, bool):
        what = "missing" if trial is None else "must be an integer"
        raise InvalidInput(f"{path}:{line}: key 'trial' {what}")
    return case_id, trial


def record_key(path: Path, line: int, value: dict[str, Any]) -> tuple[str, int, Variant]:
    """The (caseId, trial, variant) of a recorded observation; InvalidInput naming the line."""
    case_id, trial = record_case_trial(path, line, value)
    variant = value.get("variant")
    if variant not in ARMS:
        what = "missing" if variant is None else 'must be "with", "without" or "baseline"'
        raise InvalidInput(f"{path}:{line}: key 'variant' {what}")
    arm: Variant = (
        "with" if variant == "with" else "without" if variant == "without" else "baseline"
    )
    return case_id, trial, arm


def line_key(
    path: Path, line: int, value: dict[str, Any]
) -> tuple[Observation | None, tuple[str, int, Variant]]:
    """A recorded line's key, with its Observation when the fast path accepts it (None: the
    caller builds it with record_observation once the key is known to be wanted)."""
    observation = valid_observation(value)
    if observation is None:
        return None, record_key(path, line, value)
    return observation, (observation.case_id, observation.trial, observation.variant)


def record_observation(
    path: Path, line: int, value: dict[str, Any], key: tuple[str, int, Variant]
) -> Observation:
    """The Observation of a recorded line of key ``key``; InvalidInput naming the line (and the
    key at fault) when it breaks the runner contract."""
    echo: Echo = "without" if key[2] == "without" else "with"
    try:
        stripped, network = split_network(value)
        body = {k: v for k, v in stripped.items() if k not in RECORD_KEYS}
        if key[2] == "baseline":
            body["variant"] = "with"  # a baseline observation is a with-run of another version
        fields = parse_runner_object(body, echo)
        checks = parse_checks(value["checks"]) if "checks" in value else None
        cached = parse_cached(value["cached"]) if "cached" in value else False
        _, judged, judge_files = split_judge(value)
    except ContractError as exc:
        named = describe_key(exc.key) if exc.key is not None else None
        where = f" ({named})" if named else ""
        raise InvalidInput(f"{path}:{line}: {exc}{where}") from None
    observation = observation_from(fields, key, checks, cached)
    if judged or judge_files is not None:
        observation.judged, observation.judge_files = judged, judge_files
    return with_network(observation, network)


def valid_observation(value: dict[str, Any]) -> Observation | None:
    """The Observation of a recorded observation when every field is well-formed, else None.

    Fast path of the --observations loader: one pass of exact type tests, no copy
    of the record. It only ever accepts: a record it declines goes through :func:`record_key`
    and :func:`record_observation`, which give every error message in their order, so what
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
    optional: _Optional | None
    if len(value) == _REQUIRED_KEYS:
        optional = ({}, (), (), (), None, False)
    else:
        optional = _optional_fields(value)
    if optional is None:
        return None
    meta, evidence, tool_calls, warnings, checks, cached = optional
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
        warnings,
        checks,
        None,
        cached,
    )


_REQUIRED_KEYS = 6  # caseId, trial, variant, invokedSkills, output, exitCode
# meta, evidence, toolCalls, warnings, checks, cached
_Optional = tuple[
    dict[str, float],
    tuple[dict[str, str], ...],
    tuple[ToolCall, ...],
    tuple[str, ...],
    tuple[bool | None, ...] | None,
    bool,
]


# key, parser and default (a factory) of each optional field, in _Optional's order
_OPTIONAL: tuple[tuple[str, Callable[[Any], Any], Callable[[], Any]], ...] = (
    ("meta", parse_meta, dict),
    ("evidence", parse_evidence, tuple),
    ("toolCalls", parse_tool_calls, tuple),
    ("warnings", parse_warnings, tuple),
    ("checks", parse_checks, lambda: None),
    ("cached", parse_cached, bool),
)


def _optional_fields(value: dict[str, Any]) -> _Optional | None:
    """The optional fields of a record with more keys than the required six (defaults for
    those it lacks); None when one is malformed or the record has any other key."""
    meta = value.get("meta")
    if isinstance(meta, dict) and "wireTokens" in meta:
        return None  # the engine's own key: read by record_observation
    try:
        fields = tuple(
            parse(value[key]) if key in value else default() for key, parse, default in _OPTIONAL
        )
    except ContractError:
        return None
    if len(value) != _REQUIRED_KEYS + sum(key in value for key, _, _ in _OPTIONAL):
        return None
    return cast(_Optional, fields)


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
        return judge_files_problem(observation, case)
    if len(observation.checks) != count:
        return (
            f"key 'checks' has {len(observation.checks)} value(s); the case's task has "
            f"{count} check(s)"
        )
    return judge_files_problem(observation, case)


def judge_files_problem(observation: Observation, case: Case) -> str | None:
    """Why an observation cannot be judged: a judge check is shown workspace files and the
    line holds no ``judgeFiles`` (the workspace is gone)."""
    if case.task is not None and case.task.judge_files and observation.judge_files is None:
        return (
            "key 'judgeFiles' is missing: a judge check of this case is shown workspace "
            "files (include files:<glob>), so each observation needs the files it was shown"
        )
    return None
