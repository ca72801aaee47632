"""Task checks (docs/cases.md): exit_code, includes_all, json_equals.

Owner: scoring. (Validating ``expected`` when cases load is cases.py's job.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .cases import TaskCheck
from .jsonl import loads_strict

if TYPE_CHECKING:
    from .observations import Observation


def passes(check: TaskCheck, output: str, exit_code: int) -> bool:
    """Whether one observation passes the case's task check.

    - ``exit_code``: the task's exit code equals ``expected``.
    - ``includes_all``: exit code 0 and ``output`` contains every expected string
      (case-sensitive substrings).
    - ``json_equals``: exit code 0 and ``output``, stripped of surrounding whitespace, is strict
      JSON (no NaN/Infinity, no duplicate keys, safe integers only) structurally equal to
      ``expected`` (see :func:`json_equal`). Output that is not such JSON fails the check.
    """
    expected = check.expected
    if check.check == "exit_code":
        # bool is an int in Python; an expected True must never match exit code 1.
        return type(expected) is int and exit_code == expected
    if exit_code != 0:
        return False
    if check.check == "includes_all":
        if not isinstance(expected, (list, tuple)):
            raise TypeError("includes_all expects a list of strings")
        return all(isinstance(s, str) and s in output for s in expected)
    if check.check == "json_equals":
        try:
            actual = loads_strict(output.strip())
        except (ValueError, RecursionError):
            return False
        return json_equal(actual, expected)
    raise ValueError(f"unknown task check {check.check!r}")


def pass_row(check: TaskCheck, observations: Iterable[Observation | None]) -> list[bool | None]:
    """:func:`passes` for each observation of a row; None (a missing one) stays None.

    The exit_code check, by far the most common, is done without a call per observation
    (scoring is a few microseconds per observation)."""
    if check.check == "exit_code":
        expected = check.expected
        if type(expected) is not int:  # as in passes(): never matches (bool is no int here)
            return [None if obs is None else False for obs in observations]
        return [None if obs is None else obs.exit_code == expected for obs in observations]
    return [
        None if obs is None else passes(check, obs.output, obs.exit_code) for obs in observations
    ]


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
