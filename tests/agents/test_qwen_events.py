"""The Qwen Code runner without the real CLI: its transcript reading on transcripts captured
from the real Qwen Code 0.24.4 (tests/agents/fixtures/qwen, made by test_qwen.py with
SKILL_EVALS_CAPTURE_FIXTURES=1), its failure reasons, its settings and its guard."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents import qwen, qwen_guard
from skill_evals.agents.base import AgentOptions, RunnerError, RunnerSetupError
from skill_evals.agents.content import SkillText
from skill_evals.agents.evidence import Load, read_events
from skill_evals.agents.proof import prove
from skill_evals.agents.protocol import Finished
from skill_evals.agents.qwen_events import CHAT_MARKER, explicit, read_transcript, tool_calls
from tests.agents.e2e import LONG_REFUND_BODY, REFUND_DESCRIPTION, two_texts

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "qwen"
KNOWN = frozenset({"refund-policy", "shipping-times"})
TEXTS = two_texts(LONG_REFUND_BODY)


def events(name: str) -> list[dict[str, Any]]:
    return read_events(FIXTURES / f"{name}.jsonl")


def proved(evs: Sequence[dict[str, Any]], skills: Sequence[SkillText] = TEXTS) -> list[Load]:
    return prove(qwen.PLUGIN, evs, skills, None, None, KNOWN)


def states(evs: Sequence[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(x.skill, x.state, x.delivery) for x in proved(evs)]


def _stream_only(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return evs[: next(i for i, e in enumerate(evs) if e.get("type") == CHAT_MARKER)]


def test_two_skill_calls_of_one_turn_load_in_call_order() -> None:
    loads = proved(events("with"))
    assert [(x.skill, x.state, x.delivery, x.source) for x in loads] == [
        ("refund-policy", "loaded", "native", "skill tool"),
        ("shipping-times", "loaded", "native", "skill tool"),
    ]
    assert loads[0].order < loads[1].order and loads[0].order[0] == loads[1].order[0]


def test_the_skill_body_is_in_the_chat_log_not_the_stream() -> None:
    evs = events("with")
    calls = tool_calls(evs)
    assert "30 days with a receipt" in calls[0].result
    stream = tool_calls(_stream_only(evs))
    assert stream[0].result == REFUND_DESCRIPTION and stream[0].ok  # only the description
    # the chat log holds the call, but no body came back: not confirmed, no load
    broken = [dict(e) for e in evs]
    for e in broken:
        if e.get("type") == "tool_result":
            for part in e["message"]["parts"]:
                part["functionResponse"]["response"] = {"error": "lost"}
    assert [x.state for x in proved(broken)] == ["failed", "failed"]


def test_without_shows_no_load() -> None:
    assert proved(events("without")) == []


def test_reads_count_by_content_and_a_missing_file_read_is_failed() -> None:
    found = states(events("reads"))
    assert ("refund-policy", "loaded", "read") in found
    assert ("refund-policy", "failed", "read") in found
    assert "unverified" not in {state for _, state, _ in found}


def test_a_failed_skill_call_is_failed() -> None:
    assert states(events("failed-skill")) == [("refund-policy-missing", "failed", "native")]


def test_an_expanded_slash_prompt_is_an_explicit_load() -> None:
    evs = events("explicit")
    found = [(x.skill, x.state, x.delivery, x.source) for x in proved(evs)]
    assert ("refund-policy", "loaded", "explicit", "slash command") in found
    assert explicit(evs, "/refund-policy what about lost receipts?", KNOWN)
    assert explicit(evs, "what about /refund-policy?", KNOWN) == []  # not the prompt's start
    assert explicit(evs, "/refund-policy x", frozenset({"shipping-times"})) == []  # not offered


def test_a_bridged_mcp_call_is_an_mcp_load() -> None:
    """Qwen Code offers MCP tools behind ``tool_call``: the bridged tool is what counts."""
    evs = events("mcp")
    calls = [c for c in tool_calls(evs) if c.name.startswith("mcp__")]
    assert [c.name for c in calls] == ["mcp__skills__load_refund_policy_skill",
                                       "mcp__skills__load_shipping_times_skill"]  # fmt: skip
    assert [(x.skill, x.state, x.delivery, x.source) for x in proved(evs)] == [
        ("refund-policy", "loaded", "mcp", "mcp tool mcp__skills__load_refund_policy_skill"),
        ("shipping-times", "loaded", "mcp", "mcp tool mcp__skills__load_shipping_times_skill"),
    ]
    settings = qwen.build_settings(AgentOptions(), qwen.mcp_server([Path("/s/refund-policy")]))
    server = settings["mcpServers"]["skills"]
    assert server["trust"] is True and server["args"][-2:] == ["--skill", "/s/refund-policy"]


def test_a_refusal_and_an_error_result_load_nothing() -> None:
    assert proved(events("refusal")) == [] and proved(events("bad-key")) == []


class _Setup:
    options = AgentOptions()


def _finish(name: str, status: int = 0) -> Any:
    return qwen.PLUGIN.finish(events(name), _Setup(), Finished(status, 12.5, False))  # type: ignore[arg-type]


def test_answer_usage_and_turns_come_from_the_result() -> None:
    outcome = _finish("with")
    assert outcome.exit_code == 0 and "30 days with a receipt" in outcome.output
    assert outcome.meta["durationMs"] == 12.5 and outcome.meta["turns"] == 2
    assert outcome.meta["inputTokens"] > 0 and outcome.meta["outputTokens"] > 0


@pytest.mark.parametrize(
    ("name", "reason", "retryable"),
    [("rate-limited", "rate limited by the model API (HTTP 429) twice", True),
     ("overloaded", "overloaded (HTTP 529", True),
     ("bad-key", "auth refused by the model API (HTTP 401)", False)],
)  # fmt: skip
def test_failures_are_runner_errors_with_reasons(name: str, reason: str, retryable: bool) -> None:
    with pytest.raises(RunnerError) as caught:
        _finish(name)
    assert reason in str(caught.value) and caught.value.retryable is retryable


def test_error_results_by_their_words() -> None:
    def error(message: str) -> RunnerError:
        found = qwen._error({"type": "result", "is_error": True, "error": {"message": message}}, 4)
        assert isinstance(found, RunnerError)
        return found

    assert "(--max-turns 4)" in str(error("Reached max session turns for this session."))
    assert "not logged in" in str(error("Incorrect API key provided: sk-abc123456789"))
    assert "sk-abc" not in str(error("Incorrect API key provided: sk-abc123456789"))
    assert error("[API Error: 503 upstream]").retryable is True
    assert "error result" in str(error("something else"))


def test_settings_turn_off_bundled_skills_memory_and_retries() -> None:
    settings = qwen.build_settings(AgentOptions(max_turns=3))
    assert settings["skills"]["disabledLevels"] == ["user", "extension", "bundled"]
    assert settings["memory"]["enableManagedAutoMemory"] is False
    assert settings["tools"] == {"exclude": ["agent", "list_agents"]}  # no sub-agents
    assert settings["model"] == {"generationConfig": {"maxRetries": 0}, "maxSessionTurns": 3}
    assert "permissions" not in settings
    assert "deny" in qwen.build_settings(AgentOptions(read_only=True))["permissions"]


def test_the_guard_stops_qwen_after_the_second_failed_request(tmp_path: Path) -> None:
    """A stand-in ``qwen`` that logs two failed requests and would then hang: the guard ends it
    and prints the marker, then the chat log."""
    chats = tmp_path / "home" / ".qwen" / "projects" / "p" / "chats"
    chats.mkdir(parents=True)
    record = {"type": "system", "systemPayload": {"uiEvent": {
        "event.name": "qwen-code.api_error", "status_code": 529}}}  # fmt: skip
    agent = tmp_path / "qwen"
    agent.write_text(
        '#!/bin/sh\necho \'{"type": "system", "subtype": "init"}\'\n'
        f"echo '{json.dumps(record)}' >> {chats}/s.jsonl\n"
        f"echo '{json.dumps(record)}' >> {chats}/s.jsonl\nexec sleep 60\n",
        encoding="utf-8",
    )
    agent.chmod(0o755)
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-I", qwen_guard.__file__, str(agent)], env=env,
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 0
    evs = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [e.get("type") for e in evs] == ["system", "skill_evals.retry_cap",
                                            CHAT_MARKER, "system", "system"]  # fmt: skip
    assert evs[1] == {"type": "skill_evals.retry_cap", "attempts": 2, "status": 529}
    assert read_transcript(evs).retry_cap == evs[1]


def test_version_warnings_name_the_pin_and_node_22(tmp_path: Path) -> None:
    """The pinned 0.24.4 says nothing; another release is one line with the pinned install
    line and, with an older Node on PATH, the Node 22 its package asks for."""
    from skill_evals.agents.registry import entry
    from skill_evals.agents.versions import version_warning
    from tests.agents.conftest import agent_binary

    qwen_entry = entry("qwen")
    assert version_warning(qwen_entry, agent_binary("qwen"), dict(os.environ)) is None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program, answer in (("qwen", "0.23.1"), ("node", "v20.20.2")):
        (bin_dir / program).write_text(f"#!/bin/sh\necho {answer}\n", encoding="utf-8")
        (bin_dir / program).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    assert version_warning(qwen_entry, str(bin_dir / "qwen"), env) == (
        f"qwen: found qwen 0.23.1 ({bin_dir / 'qwen'}); tested with 0.24.4, results may differ; "
        "install it: npm install -g @qwen-code/qwen-code@0.24.4; Node v20.20.2 is on PATH; "
        "0.24.4 needs Node ≥ 22 to install (actions/setup-node with node-version 22)"
    )


def test_a_workspace_path_too_long_for_the_chat_log_is_refused_before_any_run(
    tmp_path: Path,
) -> None:
    """Qwen Code names its chat log folder after the working directory, one path component:
    past 255 characters it writes none, and the runner could prove nothing. Refused first."""
    from skill_evals.agents.base import AgentInvocation
    from skill_evals.agents.scaffold import run_agent
    from tests.agents.conftest import agent_binary
    from tests.conftest import write_skill

    deep = tmp_path
    while len(str(deep)) < 260:
        deep = deep / "a-long-folder-name"
    deep.mkdir(parents=True)
    skill = write_skill(tmp_path / "skills", "refund-policy")
    invocation = AgentInvocation("with", skill, "c", 1, "PROMPT-TEXT", workspace=deep)
    env = {"PATH": os.environ["PATH"], "OPENAI_API_KEY": "k", "TMPDIR": str(tmp_path),
           "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}  # fmt: skip
    options = AgentOptions(bin=agent_binary("qwen"))
    with pytest.raises(RunnerSetupError, match="cannot write one past 255") as caught:
        run_agent(qwen.PLUGIN, invocation, options, env, works=True)
    assert "PROMPT-TEXT" not in str(caught.value) and list(deep.iterdir()) == []


def test_a_missing_chat_log_is_a_runner_error() -> None:
    evs = events("with")
    marker = next(i for i, e in enumerate(evs) if e.get("type") == CHAT_MARKER)
    with pytest.raises(RunnerError, match="kept no chat log"):
        qwen.PLUGIN.finish(evs[: marker + 1], _Setup(), Finished(0, 1.0, False))  # type: ignore[arg-type]
