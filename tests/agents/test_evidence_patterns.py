"""Evidence patterns, one cell per agent: the same shell calls written in each agent's own
transcript shape (as its CLI records them) must be judged the same way by the shared rules:

- ``cat`` of a missing SKILL.md (exit 1, "No such file or directory") is ``failed``, never
  ``unverified`` — Gemini CLI and OpenCode report such a command as a success and keep its exit
  code elsewhere;
- an archive of a skill's folder shown to the model (``tar c … | base64``, ``zip -r - … | xxd``)
  is ``unverified``, like an encoded read of SKILL.md;
- two reads the model made in one turn load in the model's order, whatever finished first
  (Codex reports parallel commands as they run: its session file has the model's order).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from skill_evals.agents.content import SkillText
from skill_evals.agents.evidence import Load, loaded_names
from skill_evals.agents.proof import prove
from skill_evals.agents.registry import agent as plugin
from skill_evals.agents.registry import names as agent_names

# (command, what it printed, exit code)
Shell = tuple[str, str, int]
BODIES = {
    "refund-policy": "# Refunds\n\n" + "Refunds within 30 days with a receipt. " * 8,
    "shipping-times": "# Shipping\n\n" + "Parcels arrive in 3 to 5 working days. " * 8,
}
TEXTS = {
    name: f"---\nname: {name}\ndescription: {name}.\n---\n{body}" for name, body in BODIES.items()
}
SKILLS = [SkillText.of(name, text) for name, text in TEXTS.items()]
KNOWN = frozenset(TEXTS)


def _claude_like(tool: str) -> Callable[[Sequence[Shell]], list[dict[str, Any]]]:
    """Claude Code's stream-json (Qwen Code's is the same shape): one assistant message with
    every call, the results in reverse order."""

    def build(calls: Sequence[Shell]) -> list[dict[str, Any]]:
        uses = [{"type": "tool_use", "id": f"t{i}", "name": tool, "input": {"command": c}}
                for i, (c, _, _) in enumerate(calls)]  # fmt: skip
        events: list[dict[str, Any]] = [
            {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": uses}}
        ]
        for i, (_, out, code) in reversed(list(enumerate(calls))):
            block = {"type": "tool_result", "tool_use_id": f"t{i}", "content": out,
                     "is_error": code != 0}  # fmt: skip
            events.append({"type": "user", "message": {"role": "user", "content": [block]}})
        return events

    return build


def _codex(calls: Sequence[Shell]) -> list[dict[str, Any]]:
    """``exec --json`` items as Codex runs them (reversed), then its session file's function
    calls in the model's order."""
    events: list[dict[str, Any]] = [{"type": "thread.started", "thread_id": "th"}]
    for i, (command, out, code) in reversed(list(enumerate(calls))):
        item = {"id": f"item_{i}", "type": "command_execution",
                "command": f"/bin/bash -lc {json.dumps(command)}", "aggregated_output": out,
                "exit_code": code, "status": "completed" if code == 0 else "failed"}  # fmt: skip
        events += [{"type": "item.started", "item": {**item, "status": "in_progress"}},
                   {"type": "item.completed", "item": item}]  # fmt: skip
    events += [{"type": "turn.completed", "usage": {}}, {"type": "skill_evals_session"}]
    for i, (command, _, _) in enumerate(calls):
        payload = {"type": "function_call", "name": "exec_command", "call_id": f"c{i}",
                   "arguments": json.dumps({"cmd": command})}  # fmt: skip
        events.append({"type": "response_item", "payload": payload})
    return events


def _pi(calls: Sequence[Shell]) -> list[dict[str, Any]]:
    blocks = [{"type": "toolCall", "id": f"t{i}", "name": "bash", "arguments": {"command": c}}
              for i, (c, _, _) in enumerate(calls)]  # fmt: skip
    events: list[dict[str, Any]] = [
        {"type": "message_end", "message": {"role": "assistant", "content": blocks}}
    ]
    for i, (_, out, code) in reversed(list(enumerate(calls))):
        text = out if code == 0 else f"{out}\n\nCommand exited with code {code}"
        events.append({"type": "tool_execution_end", "toolCallId": f"t{i}", "toolName": "bash",
                       "result": {"content": [{"type": "text", "text": text}]},
                       "isError": code != 0})  # fmt: skip
    return events


def _opencode(calls: Sequence[Shell]) -> list[dict[str, Any]]:
    """Parts printed as they finish (reversed); their ids ascend in the model's order; a
    command's exit is in the metadata, its status "completed" whatever the exit."""
    events: list[dict[str, Any]] = [{"type": "step_start", "part": {"type": "step-start"}}]
    for i, (command, out, code) in reversed(list(enumerate(calls))):
        state = {"status": "completed", "input": {"command": command}, "output": out,
                 "metadata": {"output": out, "exit": code}}  # fmt: skip
        events.append({"type": "tool_use",
                       "part": {"type": "tool", "id": f"prt_{i:04d}", "tool": "bash",
                                "state": state}})  # fmt: skip
    return events


def _gemini(calls: Sequence[Shell]) -> list[dict[str, Any]]:
    """Stream events (results reversed), then the chat session record with what the model was
    sent: a command that exited non-zero is a "success" whose text ends ``Exit Code: N``."""
    events: list[dict[str, Any]] = [
        {"type": "tool_use", "tool_name": "run_shell_command", "tool_id": f"t{i}",
         "parameters": {"command": c}} for i, (c, _, _) in enumerate(calls)
    ]  # fmt: skip
    sent = {}
    for i, (_, out, code) in reversed(list(enumerate(calls))):
        sent[i] = f"Output: {out}" + (f"\nExit Code: {code}" if code else "")
        events.append({"type": "tool_result", "tool_id": f"t{i}", "status": "success",
                       "output": out})  # fmt: skip
    records = [{"id": f"t{i}", "name": "run_shell_command", "args": {"command": c},
                "status": "success", "result": [{"functionResponse": {
                    "id": f"t{i}", "name": "run_shell_command",
                    "response": {"output": sent[i]}}}]}
               for i, (c, _, _) in enumerate(calls)]  # fmt: skip
    return [*events, {"type": "skill_evals_session"},
            {"type": "gemini", "id": "g1", "toolCalls": records}]  # fmt: skip


def _copilot(calls: Sequence[Shell]) -> list[dict[str, Any]]:
    requests = [{"toolCallId": f"t{i}", "name": "bash", "arguments": {"command": c}}
                for i, (c, _, _) in enumerate(calls)]  # fmt: skip
    events: list[dict[str, Any]] = [
        {"type": "assistant.message", "data": {"content": "", "toolRequests": requests}}
    ]
    for i, (_, out, code) in reversed(list(enumerate(calls))):
        events.append({"type": "tool.execution_complete", "data": {
            "toolCallId": f"t{i}", "success": True, "result": {"content": out},
            "shellExecution": {"exitCode": code}}})  # fmt: skip
    return events


BUILDERS: dict[str, Callable[[Sequence[Shell]], list[dict[str, Any]]]] = {
    "claude-code": _claude_like("Bash"),
    "codex": _codex,
    "pi": _pi,
    "opencode": _opencode,
    "gemini": _gemini,
    "copilot": _copilot,
    "qwen": _claude_like("run_shell_command"),
}


def evidence(agent: str, calls: Sequence[Shell]) -> list[Load]:
    return prove(plugin(agent), BUILDERS[agent](calls), SKILLS, None, None, KNOWN)


def test_every_agent_has_a_cell() -> None:
    assert sorted(BUILDERS) == sorted(agent_names())


@pytest.mark.parametrize("agent", agent_names())
def test_a_failed_read_of_a_missing_skill_md_is_failed(agent: str) -> None:
    missing = "cat .agents/skills/refund-policy/SKILL.md"
    said = "cat: .agents/skills/refund-policy/SKILL.md: No such file or directory"
    found = evidence(agent, [(missing, said, 1)])
    assert [(x.skill, x.state, x.delivery) for x in found] == [("refund-policy", "failed", "read")]
    # the same command when it worked but showed nothing provable stays unverified
    found = evidence(agent, [(missing.replace("cat", "wc -c"), "412", 0)])
    assert [x.state for x in found] == ["unverified"]


ARCHIVES = [
    "tar c .agents/skills/refund-policy | base64",
    "cd .agents/skills && tar cz refund-policy | base64 -w0",
    "zip -r - .agents/skills | xxd",
    "tar -C .qwen/skills -cf - refund-policy | od -c",
]


@pytest.mark.parametrize("command", ARCHIVES)
@pytest.mark.parametrize("agent", agent_names())
def test_an_archive_of_the_skill_folder_is_unverified(agent: str, command: str) -> None:
    encoded = "H4sIAAAAAAAAA+3RMQ6CQBCF4a3nFHMBsiwsC1cwNhZqaWxMtoxxJQ=="
    found = evidence(agent, [(command, encoded, 0)])
    states = {(x.skill, x.state) for x in found}
    assert ("refund-policy", "unverified") in states, found
    assert all(state != "loaded" for _, state in states)
    # shown as plain text, the archive proves the skill by its content
    plain = f"refund-policy/SKILL.md\0{TEXTS['refund-policy']}"
    found = evidence(agent, [(command.partition(" | ")[0], plain, 0)])
    assert loaded_names(found) == ["refund-policy"]


@pytest.mark.parametrize("agent", agent_names())
def test_two_reads_of_one_turn_load_in_the_models_order(agent: str) -> None:
    calls = [(f"cat .agents/skills/{name}/SKILL.md", TEXTS[name], 0) for name in TEXTS]
    assert loaded_names(evidence(agent, calls)) == ["refund-policy", "shipping-times"]
    reverse = list(reversed(calls))
    assert loaded_names(evidence(agent, reverse)) == ["shipping-times", "refund-policy"]
