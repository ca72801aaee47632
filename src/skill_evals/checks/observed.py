"""Observation checks: verdicts from what the runner reported (output, exit code, tool calls,
meta), with a short reason for each failure that never quotes the output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..suite.jsonl import loads_strict
from .model import (
    PASSED,
    Budget,
    Check,
    ExitCode,
    IncludesAll,
    JsonEquals,
    Outcome,
    OutputMatches,
    ToolCalled,
    ToolNotCalled,
)

if TYPE_CHECKING:
    from ..run.observations import Observation, ToolCall


class Matcher(Protocol):
    """Searches a regular expression within the check time bound."""

    def search(self, pattern: str, flags: str, text: str) -> bool | None:
        """Whether ``pattern`` is found in ``text``; None when the search took too long."""


TOO_LONG = "check took too long"


def shown(text: str, limit: int = 40) -> str:
    """A case-file string for a reason: quoted, control characters escaped, cut short."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _fail(check: Check, why: str) -> Outcome:
    return Outcome(False, f"{check.label}: {why}")


def judge_observation(check: Check, obs: Observation, matcher: Matcher) -> Outcome:
    """One observation check's verdict on one observation (TypeError for a workspace check)."""
    if isinstance(check, ExitCode):
        # bool is an int in Python; an expected True must never match exit code 1.
        if type(check.expected) is int and obs.exit_code == check.expected:
            return PASSED
        return _fail(check, f"exitCode {obs.exit_code}, expected {check.expected}")
    if isinstance(check, Budget):
        return _budget(check, obs)
    if isinstance(check, (ToolCalled, ToolNotCalled)):
        return _tools(check, obs.tool_calls)
    # The output checks judge a successful task only.
    if obs.exit_code != 0:
        return _fail(check, f"exitCode {obs.exit_code}, expected 0")
    if isinstance(check, IncludesAll):
        missing = [text for text in check.expected if text not in obs.output]
        if not missing:
            return PASSED
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        return _fail(check, f"{shown(missing[0])} not found{more}")
    if isinstance(check, JsonEquals):
        try:
            actual = loads_strict(obs.output.strip())
        except (ValueError, RecursionError):
            return _fail(check, "the output is not strict JSON")
        if json_equal(actual, check.expected):
            return PASSED
        return _fail(check, "the output's JSON differs from expected")
    if not isinstance(check, OutputMatches):
        raise TypeError(f"{check.name} is a workspace check")
    found = matcher.search(check.pattern, check.flags, obs.output)
    if found is None:
        return _fail(check, TOO_LONG)
    return PASSED if found else _fail(check, f"pattern {shown(check.pattern)} not found")


_BUDGET_FIGURES = {
    "max_turns": ("turns", "turns"),
    "max_tokens": ("tokens", "tokens"),
    "max_cost_usd": ("cost", "USD"),
    "max_duration_ms": ("duration", "ms"),
}


def budget_figure(name: str, meta: Any) -> float | None:
    """The meta figure a budget check compares (tokens = inputTokens + outputTokens, both
    needed), or None when the runner did not report it."""
    if name == "max_tokens":
        tokens_in, tokens_out = meta.get("inputTokens"), meta.get("outputTokens")
        if tokens_in is None or tokens_out is None:
            return None
        return float(tokens_in) + float(tokens_out)
    key = {"max_turns": "turns", "max_cost_usd": "costUsd", "max_duration_ms": "durationMs"}[name]
    value = meta.get(key)
    return None if value is None else float(value)


def _budget(check: Budget, obs: Observation) -> Outcome:
    what, unit = _BUDGET_FIGURES[check.name]
    figure = budget_figure(check.name, obs.meta)
    if figure is None:
        return _fail(check, f"the runner reported no {what}")
    if figure <= check.value:
        return PASSED
    return _fail(check, f"{figure:g} {unit} > {check.value:g}")


def _tools(check: ToolCalled | ToolNotCalled, calls: Sequence[ToolCall]) -> Outcome:
    count = sum(
        1
        for call in calls
        if call.ok
        and call.name == check.tool
        and (check.input is None or subset_match(check.input, call.input))
    )
    if isinstance(check, ToolNotCalled):
        return PASSED if count == 0 else _fail(check, f"{count} matching completed call(s)")
    if count >= check.minimum and (check.maximum is None or count <= check.maximum):
        return PASSED
    if check.maximum is None:
        wanted = f"at least {check.minimum}"
    elif check.minimum == check.maximum:
        wanted = f"exactly {check.minimum}"
    else:
        wanted = f"{check.minimum} to {check.maximum}"
    return _fail(check, f"{count} matching completed call(s), expected {wanted}")


def subset_match(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` holds ``expected``: objects by the listed keys, arrays of equal length
    element by element, scalars equal by the ``json_equals`` rules. Iterative (no recursion)."""
    stack: list[tuple[Any, Any]] = [(expected, actual)]
    while stack:
        want, have = stack.pop()
        if isinstance(want, dict):
            if not isinstance(have, dict):
                return False
            for key, value in want.items():
                if key not in have:
                    return False
                stack.append((value, have[key]))
        elif isinstance(want, (list, tuple)):
            if not isinstance(have, (list, tuple)) or len(have) != len(want):
                return False
            stack.extend(zip(want, have, strict=True))
        elif not json_equal(want, have):
            return False
    return True


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Structural JSON equality: object key order ignored, array order kept, numbers equal by
    value (``1 == 1.0``), booleans never equal numbers, ``null`` only equals ``null``.

    Iterative (an explicit stack), so deeply nested values cannot exhaust Python's recursion
    limit."""
    stack: list[tuple[Any, Any]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, bool) or isinstance(y, bool):
            if not (isinstance(x, bool) and isinstance(y, bool) and x == y):
                return False
        elif _is_number(x) or _is_number(y):
            # Python compares int and float exactly (no rounding of the int), which is
            # "equal by value" for every number strict JSON can hold.
            if not (_is_number(x) and _is_number(y) and x == y):
                return False
        elif isinstance(x, str) or isinstance(y, str):
            if not (isinstance(x, str) and isinstance(y, str) and x == y):
                return False
        elif x is None or y is None:
            if not (x is None and y is None):
                return False
        elif isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        else:
            return False
    return True
