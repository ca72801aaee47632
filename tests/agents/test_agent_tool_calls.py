"""The built-in agent runners report the transcript's tool calls in their runner line
(``toolCalls``): in call order, injected messages left out, inputs bounded in size."""

from __future__ import annotations

import json

from skill_evals.agents import scaffold
from skill_evals.agents.evidence import ToolCall
from skill_evals.agents.proof import INJECTED
from skill_evals.run.observations import parse_runner_object


def call(name: str, order: int, ok: bool = True, **tool_input: object) -> ToolCall:
    return ToolCall(name, tool_input, (order, 0), order if ok else None, ok, "result text")


def test_calls_in_order_without_injected_messages() -> None:
    calls = [call("Write", 3, path="a.md"), call(INJECTED, 1), call("Read", 2, False, path="b")]
    assert scaffold.contract_tool_calls(calls) == [
        {"name": "Read", "input": {"path": "b"}, "ok": False},
        {"name": "Write", "input": {"path": "a.md"}, "ok": True},
    ]


def test_inputs_are_bounded_and_the_line_stays_valid() -> None:
    big = "x" * 50_000
    calls = [
        call("Write", i, path=f"f{i}.md", content=big, nested={"a": [big]}) for i in range(200)
    ]
    reported = scaffold.contract_tool_calls(calls)
    assert len(reported) == 200
    first = reported[0]["input"]
    assert isinstance(first, dict) and len(first["content"]) == scaffold.MAX_INPUT_STRING
    assert first["nested"] == {"a": ["x" * scaffold.MAX_INPUT_STRING]}
    assert reported[-1]["input"] == {}  # past the byte budget: name and ok only
    line = {"variant": "with", "invokedSkills": [], "output": "", "exitCode": 0,
            "toolCalls": reported}  # fmt: skip
    assert len(json.dumps(line)) < 2 * scaffold.MAX_TOOL_CALL_BYTES
    assert len(parse_runner_object(line, "with")["tool_calls"]) == 200
