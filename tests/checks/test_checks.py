"""The output checks exit_code, includes_all and json_equals: examples and properties."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skill_evals.checks import json_equal, judge_observation
from skill_evals.checks.model import Check, ExitCode, IncludesAll, JsonEquals
from skill_evals.run.observations import Observation

KINDS: dict[str, Any] = {
    "exit_code": ExitCode,
    "includes_all": IncludesAll,
    "json_equals": JsonEquals,
}


def make(name: str, expected: Any) -> Check:
    """A check as the cases loader builds it."""
    check: Check = KINDS[name](tuple(expected) if name == "includes_all" else expected)
    return check


class _NoRegex:
    def search(self, pattern: str, flags: str, text: str) -> bool | None:
        raise AssertionError("no regular expression here")


def passes(check: Check, output: str, exit_code: int) -> bool:
    """Whether one observation with this output and exit code passes ``check``."""
    obs = Observation("c1", 1, "with", (), output, exit_code)
    return judge_observation(check, obs, _NoRegex()).passed


# ------------------------------------------------------------------------------- exit_code


def test_exit_code_equality() -> None:
    check = make("exit_code", 3)
    assert passes(check, "anything", 3)
    assert not passes(check, "anything", 0)
    assert passes(make("exit_code", 0), "", 0)
    assert passes(make("exit_code", -2), "", -2)


def test_exit_code_expected_bool_never_matches() -> None:
    # cases.py rejects it when loading; the check itself must not treat True as 1 either.
    assert not passes(make("exit_code", True), "", 1)


# ---------------------------------------------------------------------------- includes_all


def test_includes_all_needs_every_substring_case_sensitively() -> None:
    check = make("includes_all", ["30 days", "receipt"])
    assert passes(check, "Bring your receipt within 30 days.", 0)
    assert not passes(check, "Bring your Receipt within 30 days.", 0)
    assert not passes(check, "within 30 days", 0)


def test_includes_all_requires_exit_code_zero() -> None:
    check = make("includes_all", ["ok"])
    assert not passes(check, "ok", 1)


def test_includes_all_unicode_separators_are_data() -> None:
    check = make("includes_all", ["a\u2028b"])
    assert passes(check, "xa\u2028by", 0)
    assert not passes(check, "xa\nby", 0)


# ----------------------------------------------------------------------------- json_equals

EXPECTED = {"refund": True, "days": 30, "items": [1, "a", None], "note": {"x": 1.5}}


@pytest.mark.parametrize(
    "output",
    [
        '{"refund": true, "days": 30, "items": [1, "a", null], "note": {"x": 1.5}}',
        '{"note": {"x": 1.5}, "items": [1, "a", null], "days": 30.0, "refund": true}',
        '\n\t  {"refund":true,"days":3e1,"items":[1.0,"a",null],"note":{"x":15e-1}}  \r\n',
        '\u00a0{"refund": true, "days": 30, "items": [1, "a", null], "note": {"x": 1.5}}\u3000',
    ],
)
def test_json_equals_passes(output: str) -> None:
    assert passes(make("json_equals", EXPECTED), output, 0)


@pytest.mark.parametrize(
    ("output", "why"),
    [
        ('{"refund": 1, "days": 30, "items": [1, "a", null], "note": {"x": 1.5}}', "true≠1"),
        ('{"refund": true, "days": "30", "items": [1, "a", null], "note": {"x": 1.5}}', "str"),
        ('{"refund": true, "days": 30, "items": ["a", 1, null], "note": {"x": 1.5}}', "order"),
        ('{"refund": true, "days": 30, "items": [1, "a"], "note": {"x": 1.5}}', "length"),
        ('{"refund": true, "days": 30, "items": [1, "a", false], "note": {"x": 1.5}}', "null"),
        ('{"refund": true, "days": 30, "items": [1, "a", null], "note": {}}', "missing key"),
        (
            '{"refund": true, "days": 30, "items": [1, "a", null], "note": {"x": 1.5}, "y": 0}',
            "extra",
        ),
        (
            '{"refund": true, "refund": true, "days": 30, '
            '"items": [1, "a", null], "note": {"x": 1.5}}',
            "dup",
        ),
        ('{"refund": true, "days": NaN, "items": [1, "a", null], "note": {"x": 1.5}}', "NaN"),
        (
            '{"refund": true, "days": 30, "items": [1, "a", null], "note": {"x": 1.5}} trailing',
            "junk",
        ),
        ("Here is the JSON: {}", "prose"),
        ("", "empty"),
    ],
)
def test_json_equals_fails(output: str, why: str) -> None:
    assert not passes(make("json_equals", EXPECTED), output, 0), why


def test_json_equals_requires_exit_code_zero() -> None:
    output = json.dumps(EXPECTED)
    assert passes(make("json_equals", EXPECTED), output, 0)
    assert not passes(make("json_equals", EXPECTED), output, 2)


def test_json_equals_unsafe_integer_in_output_fails() -> None:
    check = make("json_equals", {"n": 9007199254740991})
    assert passes(check, '{"n": 9007199254740991}', 0)
    assert not passes(check, '{"n": 9007199254740992}', 0)
    assert not passes(make("json_equals", [1]), "[-9007199254740992]", 0)


def test_json_equals_numbers_by_value_and_bools_apart() -> None:
    assert passes(make("json_equals", 1), "1.0", 0)
    assert passes(make("json_equals", 0), "-0.0", 0)
    assert passes(make("json_equals", 100), "1e2", 0)
    assert not passes(make("json_equals", 1), "true", 0)
    assert not passes(make("json_equals", True), "1", 0)
    assert not passes(make("json_equals", False), "0", 0)
    assert not passes(make("json_equals", None), "false", 0)
    assert passes(make("json_equals", None), "null", 0)


def test_json_equals_deep_nesting_fails_cleanly() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert not passes(make("json_equals", []), deep, 0)


def test_json_equal_deep_structures_without_recursion() -> None:
    a: Any = 0
    b: Any = 0
    for _ in range(50_000):
        a, b = [a], [b]
    assert json_equal(a, b)


# ---------------------------------------------------------------------------- properties

SAFE = 9_007_199_254_740_991
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-SAFE, max_value=SAFE)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=10,
)


def _shuffle_keys(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffle_keys(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffle_keys(v, rng) for v in value]
    return value


@given(json_values)
@settings(max_examples=60)
def test_json_equals_is_reflexive(value: Any) -> None:
    assert passes(make("json_equals", value), json.dumps(value), 0)
    assert json_equal(value, value)


@given(json_values, st.integers(min_value=0, max_value=2**32))
@settings(max_examples=60)
def test_json_equals_ignores_key_order(value: Any, seed: int) -> None:
    shuffled = _shuffle_keys(value, random.Random(seed))
    assert passes(make("json_equals", value), json.dumps(shuffled, indent=1), 0)


@given(st.booleans(), st.integers(min_value=-SAFE, max_value=SAFE) | st.floats(allow_nan=False))
def test_bools_never_equal_numbers(flag: bool, number: float) -> None:
    assert not json_equal(flag, number)
    assert not json_equal(number, flag)
    assert not json_equal([flag], [number])
    assert not passes(make("json_equals", number), json.dumps(flag), 0)


@given(st.integers(min_value=-(2**53), max_value=2**53))
def test_integers_equal_their_float_when_exact(n: int) -> None:
    assert json_equal(n, float(n)) == (float(n) == n)


@given(st.lists(json_values, min_size=2, max_size=5))
@settings(max_examples=60)
def test_array_order_is_kept(items: list[Any]) -> None:
    reversed_items = items[::-1]
    expected_equal = all(json_equal(a, b) for a, b in zip(items, reversed_items, strict=True))
    assert json_equal(items, reversed_items) == expected_equal


@given(json_values, json_values)
@settings(max_examples=60)
def test_json_equal_is_symmetric(a: Any, b: Any) -> None:
    assert json_equal(a, b) == json_equal(b, a)
