"""Observation checks beyond the output ones: output_matches (bounded in time), tool calls
with subset matching on their input, and the budget checks."""

from __future__ import annotations

import time
from typing import Any

import pytest

from skill_evals.checks import judge_observation, subset_match
from skill_evals.checks.model import Budget, OutputMatches, ToolCalled, ToolNotCalled
from skill_evals.run.observations import Observation, ToolCall
from skill_evals.run.regex import RegexPool


def obs(
    output: str = "",
    exit_code: int = 0,
    calls: tuple[ToolCall, ...] = (),
    **meta: float,
) -> Observation:
    return Observation("c1", 1, "with", (), output, exit_code, meta, tool_calls=calls)


@pytest.fixture(scope="module")
def pool() -> Any:
    with RegexPool(seconds=1.0) as matcher:
        yield matcher


def test_output_matches(pool: RegexPool) -> None:
    check = OutputMatches(r"^Done: \d+ files$", "m")
    assert judge_observation(check, obs("log\nDone: 3 files\n"), pool).passed
    failed = judge_observation(check, obs("Done: three files"), pool)
    assert not failed.passed
    assert failed.reason == "output_matches: pattern '^Done: \\\\d+ files$' not found"
    assert not judge_observation(check, obs("Done: 3 files", exit_code=1), pool).passed
    assert judge_observation(OutputMatches("done", "i"), obs("DONE"), pool).passed
    assert not judge_observation(OutputMatches("done"), obs("DONE"), pool).passed
    assert judge_observation(OutputMatches("a.b", "s"), obs("a\nb"), pool).passed


def test_catastrophic_pattern_is_stopped_by_the_time_bound() -> None:
    with RegexPool(seconds=0.3) as matcher:
        started = time.monotonic()
        outcome = judge_observation(OutputMatches("(a+)+$"), obs("a" * 40 + "b"), matcher)
        assert time.monotonic() - started < 5
        assert outcome.passed is False
        assert outcome.reason == "output_matches: check took too long"
        # The stuck helper was replaced: the next search works.
        assert judge_observation(OutputMatches("b$"), obs("a" * 40 + "b"), matcher).passed


def test_regex_helpers_are_reused_and_ended() -> None:
    matcher = RegexPool()
    for _ in range(3):
        assert matcher.search("x", "", "xyz") is True
    assert len(matcher._idle) == 1
    helper = matcher._idle[0]
    matcher.close()
    assert helper.proc.poll() is not None


WRITE = ToolCall("write", {"path": "notes.md", "content": "x", "opts": {"a": 1, "b": [1, 2]}}, True)
FAILED = ToolCall("write", {"path": "notes.md"}, False)
READ = ToolCall("read", {"path": "notes.md"}, True)


@pytest.mark.parametrize(
    ("check", "passed"),
    [
        (ToolCalled("write"), True),
        (ToolCalled("Write"), False),  # exact names
        (ToolCalled("write", {"path": "notes.md"}), True),
        (ToolCalled("write", {"path": "other.md"}), False),
        (ToolCalled("write", {"opts": {"a": 1}}), True),  # objects by the listed keys
        (ToolCalled("write", {"opts": {"a": 1.0}}), True),  # numbers by value
        (ToolCalled("write", {"opts": {"a": True}}), False),  # true is not 1
        (ToolCalled("write", {"opts": {"b": [1, 2]}}), True),
        (ToolCalled("write", {"opts": {"b": [1]}}), False),  # arrays: equal length
        (ToolCalled("write", {"missing": None}), False),
        (ToolCalled("write", minimum=2), False),  # the failed call does not count
        (ToolCalled("read", minimum=1, maximum=1), True),
        (ToolCalled("write", minimum=0, maximum=0), False),
        (ToolNotCalled("delete"), True),
        (ToolNotCalled("write", {"path": "other.md"}), True),
        (ToolNotCalled("write"), False),
    ],
)
def test_tool_checks(check: Any, passed: bool) -> None:
    outcome = judge_observation(check, obs(calls=(WRITE, FAILED, READ)), RegexPool())
    assert outcome.passed is passed
    if not passed:
        assert outcome.reason is not None and outcome.reason.startswith(check.label + ": ")


def test_tool_check_reasons() -> None:
    calls = (WRITE, READ)
    pool = RegexPool()
    assert judge_observation(ToolCalled("edit"), obs(calls=calls), pool).reason == (
        "tool_called edit: 0 matching completed call(s), expected at least 1"
    )
    assert judge_observation(ToolCalled("write", None, 2, 2), obs(calls=calls), pool).reason == (
        "tool_called write: 1 matching completed call(s), expected exactly 2"
    )
    assert judge_observation(ToolNotCalled("read"), obs(calls=calls), pool).reason == (
        "tool_not_called read: 1 matching completed call(s)"
    )


def test_subset_match_is_iterative() -> None:
    deep: Any = 1
    for _ in range(20_000):
        deep = {"a": [deep]}
    assert subset_match(deep, deep)


@pytest.mark.parametrize(
    ("check", "meta", "reason"),
    [
        (Budget("max_turns", 5), {"turns": 5}, None),
        (Budget("max_turns", 5), {"turns": 6}, "max_turns: 6 turns > 5"),
        (Budget("max_turns", 5), {}, "max_turns: the runner reported no turns"),
        (Budget("max_tokens", 100), {"inputTokens": 60, "outputTokens": 40}, None),
        (Budget("max_tokens", 100), {"inputTokens": 60, "outputTokens": 41}, "101 tokens > 100"),
        (Budget("max_tokens", 100), {"inputTokens": 60}, "the runner reported no tokens"),
        (Budget("max_cost_usd", 0.5), {"costUsd": 0.5}, None),
        (Budget("max_cost_usd", 0.5), {"costUsd": 0.75}, "0.75 USD > 0.5"),
        (Budget("max_cost_usd", 0.5), {"durationMs": 1}, "the runner reported no cost"),
        (Budget("max_duration_ms", 1000), {"durationMs": 999.5}, None),
        (Budget("max_duration_ms", 1000), {}, "the runner reported no duration"),
    ],
)
def test_budgets(check: Budget, meta: dict[str, float], reason: str | None) -> None:
    outcome = judge_observation(check, obs(exit_code=1, **meta), RegexPool())
    assert outcome.passed is (reason is None)
    if reason is not None:
        assert outcome.reason is not None and reason in outcome.reason
