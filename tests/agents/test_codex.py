"""The Codex runner: fast tests of the evidence parser on transcripts captured from the real
Codex CLI, and end-to-end tests (``-m agents``) that drive the real ``codex exec --json`` against
the scripted Responses server in fake_openai_responses.py.

Regenerate the captured transcripts with ``python -m tests.agents.test_codex`` (needs the CLI).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents import codex
from skill_evals.agents.base import AgentInvocation, AgentOptions, RunnerSetupError
from skill_evals.agents.codex_events import tool_calls
from skill_evals.agents.content import SkillText
from skill_evals.agents.evidence import EvidencePatterns, loaded_names, read_events
from tests.agents.conftest import agent_binary, files_holding, keep_fixture, workspaces_in
from tests.agents.e2e import (
    REFUND_DESCRIPTION,
    REFUND_PROMPT,
    SHIPPING_BODY,
    SHIPPING_DESCRIPTION,
    two_skills,
)
from tests.agents.fake_openai_responses import (
    GENERIC_ANSWER,
    Behaviour,
    FakeResponses,
)
from tests.agents.scripts import shape_body, shape_description
from tests.conftest import assert_valid_report, skill_md, write_jsonl, write_skill

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "codex"
REFUND_BODY = "# Refund policy\n\nRefunds within 30 days with a receipt.\n"
SHIPPING_PROMPT = "When will my parcel arrive, what are the shipping times?"
MODEL = "fake-model"  # unknown to Codex: it falls back to classic function tools


def events(name: str) -> list[dict[str, Any]]:
    return read_events(FIXTURES / f"{name}.jsonl")


SKILLS = [
    SkillText.of("refund-policy", skill_md("refund-policy", REFUND_DESCRIPTION, REFUND_BODY)),
    SkillText.of("shipping-times", skill_md("shipping-times", SHIPPING_DESCRIPTION, SHIPPING_BODY)),
]


def summary(
    evs: list[dict[str, Any]], skills: list[SkillText] = SKILLS, state: str = "loaded"
) -> list[tuple[str, str, str]]:
    return [
        (x.skill, x.delivery, x.source)
        for x in codex.find_loads(evs, EvidencePatterns(), skills)
        if x.state == state
    ]


# ------------------------------------------------------------------ parser, captured transcripts


def test_native_read_is_a_load_at_the_completed_item() -> None:
    evs = events("native_with")
    loads = codex.find_loads(evs, EvidencePatterns(), SKILLS)
    assert [(x.skill, x.state, x.delivery, x.agent, x.source) for x in loads] == [
        ("refund-policy", "loaded", "read", "codex", "command_execution result")
    ]
    item = evs[loads[0].index]
    assert item["type"] == "item.completed" and item["item"]["type"] == "command_execution"


def test_without_transcript_has_no_load() -> None:
    assert codex.find_loads(events("native_without"), None, SKILLS) == []


def test_sed_read_counts() -> None:
    assert summary(events("sed_read")) == [("refund-policy", "read", "command_execution result")]


def test_failed_read_is_a_failed_attempt_not_a_load() -> None:
    evs = events("failed_read")
    # The read was attempted on the skill's path, but it exited non-zero and showed nothing.
    commands = [e["item"] for e in evs if e.get("type") == "item.completed"
                and e["item"].get("type") == "command_execution"]  # fmt: skip
    assert commands and all(c["exit_code"] != 0 for c in commands)
    assert summary(evs) == []
    assert summary(evs, state="failed") == [("refund-policy", "read", "command_execution")]
    # Success alone proves nothing either: only the content shown does.
    for command in commands:
        command.update(exit_code=0, status="completed")
    assert summary(evs) == []


def test_neighbour_and_tested_skill_both_reported_in_call_order() -> None:
    loads = codex.find_loads(events("neighbour"), None, SKILLS)
    assert loaded_names(loads) == ["refund-policy", "shipping-times"]


def test_parallel_reads_load_in_the_models_order_not_codexs() -> None:
    """Captured from Codex 0.169: the model read refund-policy (slow) then shipping-times in one
    turn; ``exec --json`` started and finished shipping-times first. The session file's
    function calls (after the marker) give the model's order."""
    evs = events("parallel-reads")
    started = [e["item"]["command"] for e in evs if e.get("type") == "item.started"]
    assert "shipping-times" in started[0] and "refund-policy" in started[1]
    calls = tool_calls(evs)
    assert "refund-policy" in calls[0].input["command"]
    assert calls[0].order[0] == calls[1].order[0] and calls[0].order < calls[1].order
    marker = next(i for i, e in enumerate(evs) if e.get("type") == "skill_evals_session")
    stream_only = tool_calls(evs[:marker])
    assert "shipping-times" in stream_only[0].input["command"]


def test_mcp_tool_call_is_an_mcp_load() -> None:
    assert summary(events("mcp_with")) == [
        ("refund-policy", "mcp", "mcp tool load_refund_policy_skill")
    ]


def test_failed_mcp_call_is_not_a_load() -> None:
    evs = events("mcp_failed")
    failed = [e for e in evs if e.get("type") == "item.completed"
              and e["item"].get("type") == "mcp_tool_call"]  # fmt: skip
    assert failed and failed[0]["item"]["status"] == "failed" and failed[0]["item"]["error"]
    assert summary(evs) == []
    assert summary(evs, state="failed") == [
        ("refund-policy", "mcp", "mcp tool load_refund_policy_skill")
    ]
    shown = {"content": [{"type": "text", "text": SKILLS[0].text}]}
    failed[0]["item"].update(status="completed", error=None, result=shown)
    assert [x[0] for x in summary(evs)] == ["refund-policy"]


def test_started_items_are_attempts_and_unknown_skills_never_count() -> None:
    evs = events("native_with")
    started_only = [e for e in evs if e.get("type") != "item.completed"]
    assert summary(started_only) == []
    assert summary(started_only, state="attempted") == [
        ("refund-policy", "read", "command_execution")
    ]
    assert summary(evs, skills=[]) == []  # no text to prove it with


def test_outcome_from_transcripts() -> None:
    ok = codex.outcome_of(events("native_with"))
    assert ok.exit_code == 0 and ok.saw_turn
    assert ok.output.startswith("Following the skill:") and "30 days" in ok.output
    assert ok.input_tokens > 0 and ok.output_tokens == 14  # two model requests, 7 each
    failed = codex.outcome_of(events("turn_failed"))
    assert failed.exit_code == 1 and failed.saw_turn and failed.turn_failed
    assert failed.output == ""
    assert codex.outcome_of([{"type": "thread.started"}]).saw_turn is False


def test_a_retried_stream_error_does_not_fail_a_completed_turn() -> None:
    """Codex prints a top-level ``error`` for a stream it retries ("Reconnecting… 1/5"); what
    decides is how the turn ended."""
    retried: list[dict[str, Any]] = [
        {"type": "turn.started"},
        {"type": "error", "message": "Reconnecting... 1/5"},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "done"}},
        {"type": "turn.completed", "usage": {"input_tokens": 3, "output_tokens": 1}},
    ]
    ok = codex.outcome_of(retried)
    assert (ok.exit_code, ok.turn_failed, ok.output) == (0, False, "done")
    only_error = codex.outcome_of([{"type": "error", "message": "bad config"}])
    assert only_error.saw_turn is False and only_error.exit_code == 1


def test_mcp_resource_reads_and_error_results() -> None:
    def item(status: str, **extra: Any) -> dict[str, Any]:
        fields = {"type": "mcp_tool_call", "server": "skills", "status": status, **extra}
        return {"type": "item.completed", "item": fields}

    uri = "skill://refund-policy/SKILL.md"
    text = {"contents": [{"uri": uri, "text": SKILLS[0].text}]}
    resource = item("completed", tool="read_mcp_resource", arguments={"server": "s", "uri": uri},
                    result=text)  # fmt: skip
    not_found = {"content": [{"type": "text", "text": "Resource not found"}]}
    missing = item("completed", tool="read_mcp_resource", arguments={"server": "s", "uri": uri},
                   result=not_found)  # fmt: skip
    error_result = item("completed", tool="load_refund_policy_skill",
                        result={"is_error": True, "content": []})  # fmt: skip
    custom = item("completed", tool="fetch_refund-policy", result="x")
    assert summary([resource, missing, error_result]) == [
        ("refund-policy", "mcp", "mcp resource skill://refund-policy/SKILL.md")
    ]
    assert len(summary([missing, error_result], state="failed")) == 2
    patterns = EvidencePatterns(tool_patterns=(r"^fetch_(?P<name>.+)$",))
    found = codex.find_loads([custom], patterns, [])
    assert [(x.skill, x.state) for x in found] == [("refund-policy", "loaded")]


def _command(command: str, output: str, exit_code: int = 0) -> dict[str, Any]:
    return {"type": "item.completed",
            "item": {"type": "command_execution", "command": command, "exit_code": exit_code,
                     "status": "completed", "aggregated_output": output}}  # fmt: skip


REFUND_MD = skill_md("refund-policy", REFUND_DESCRIPTION, REFUND_BODY)
SHIPPING_MD = skill_md("shipping-times", SHIPPING_DESCRIPTION, SHIPPING_BODY)


@pytest.mark.parametrize(
    ("command", "output", "loaded", "tried"),
    [
        # shown, however it was read: globs, loops, cd, ../ paths, python, numbered lines
        ("bash -lc 'cat .agents/skills/*/SKILL.md'", REFUND_MD + SHIPPING_MD,
         ["refund-policy", "shipping-times"], []),
        ("bash -lc 'for f in .agents/skills/*; do cat $f/SKILL.md; done'", SHIPPING_MD,
         ["shipping-times"], []),
        ("bash -lc 'cd .agents/skills/refund-policy && cat SKILL.md'", REFUND_MD,
         ["refund-policy"], []),
        ("bash -lc 'cat ../p/.agents/skills/refund-policy/../refund-policy/SKILL.md'", REFUND_MD,
         ["refund-policy"], []),
        ("bash -lc \"python3 -c 'print(open(\\\"x\\\").read())'\"", REFUND_MD,
         ["refund-policy"], []),
        ("bash -lc 'nl -ba .agents/skills/refund-policy/SKILL.md'",
         "".join(f"{i:6}\t{line}\n" for i, line in enumerate(REFUND_MD.splitlines(), 1)),
         ["refund-policy"], []),
        # named but not shown: never a load
        ("bash -lc 'cat .agents/skills/refund-policy/SKILL.md 2>/dev/null || echo none'", "none\n",
         [], ["refund-policy"]),
        ("bash -lc 'ls -l .agents/skills/refund-policy/SKILL.md'",
         "-rw-r--r-- 1 u u 140 .agents/skills/refund-policy/SKILL.md\n", [], ["refund-policy"]),
        ("bash -lc 'test -f .agents/skills/refund-policy/SKILL.md'", "", [], ["refund-policy"]),
        ("bash -lc 'echo .agents/skills/refund-policy/SKILL.md'",
         ".agents/skills/refund-policy/SKILL.md\n", [], ["refund-policy"]),
        ("bash -lc 'grep -c receipt .agents/skills/refund-policy/SKILL.md'", "1\n", [],
         ["refund-policy"]),
        ("bash -lc 'cat .agents/skills/unknown/SKILL.md'", "x", [], []),
    ],
)  # fmt: skip
def test_only_content_shown_proves_a_load(
    command: str, output: str, loaded: list[str], tried: list[str]
) -> None:
    found = codex.find_loads([_command(command, output)], None, SKILLS)
    assert loaded_names(found) == loaded
    # Completed commands that named the file without showing it: unverified, never loaded.
    assert [x.skill for x in found if x.state == "unverified"] == tried
    assert all(x.source == "command_execution result" for x in found if x.state == "unverified")


def test_dollar_mention_is_an_explicit_load_of_an_offered_skill() -> None:
    offered = frozenset({"refund-policy"})
    found = codex.explicit([], "Use $refund-policy and $missing, not a$refund-policy", offered)
    assert [(x.skill, x.delivery, x.source) for x in found] == [
        ("refund-policy", "explicit", "$ mention")
    ]
    assert codex.explicit([], "$refund-policy", frozenset()) == []
    assert codex.explicit([], None, offered) == []


def test_evidence_command_reads_a_saved_transcript(tmp_path: Path) -> None:
    refund = write_skill(tmp_path, "refund-policy", REFUND_DESCRIPTION, REFUND_BODY)
    shipping = write_skill(tmp_path, "shipping-times", SHIPPING_DESCRIPTION, SHIPPING_BODY)
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "evidence", "--agent", "codex",
         "--skill", str(refund), "--skill", str(shipping), str(FIXTURES / "neighbour.jsonl")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    loads = json.loads(proc.stdout)
    assert [x["skill"] for x in loads] == ["refund-policy", "shipping-times"]
    assert {x["agent"] for x in loads} == {"codex"} and {x["delivery"] for x in loads} == {"read"}
    assert {x["state"] for x in loads} == {"loaded"}


# ------------------------------------------------------------------------- config and options


def test_provider_comes_from_the_environment_and_the_key_never_reaches_the_config() -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-secret-1",
           "CODEX_API_KEY": "sk-secret-2"}  # fmt: skip
    provider = codex.provider_from_env(env)
    assert provider == codex.Provider("http://127.0.0.1:9/v1", "CODEX_API_KEY")
    text = codex.build_config(provider, "m1", ["/py", "-m", "skill_evals", "mcp-serve"], None)
    assert "sk-secret" not in text
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads(text)
    assert config["model_provider"] == "skill_evals" and config["model"] == "m1"
    assert config["model_providers"]["skill_evals"] == {
        "name": "skill-evals", "base_url": "http://127.0.0.1:9/v1", "wire_api": "responses",
        "env_key": "CODEX_API_KEY", "request_max_retries": 1, "stream_max_retries": 0}  # fmt: skip
    assert config["project_root_markers"] == [] and config["approval_policy"] == "never"
    assert config["skills"]["bundled"]["enabled"] is False
    policy = config["shell_environment_policy"]
    assert {"CODEX_API_KEY", "OPENAI_API_KEY", "*KEY*"} <= set(policy["exclude"])
    assert config["features"]["plugins"] is False and config["analytics"]["enabled"] is False
    # no sub-agents, by the current key: `[features].multi_agent` makes Codex warn twice a run
    assert config["agents"] == {"enabled": False} and "multi_agent" not in config["features"]
    assert config["sandbox_workspace_write"] == {"exclude_slash_tmp": True,
                                                 "network_access": False}  # fmt: skip
    server = config["mcp_servers"]["skills"]
    assert server["command"] == "/py" and server["args"] == ["-m", "skill_evals", "mcp-serve"]
    assert server["required"] is True and server["default_tools_approval_mode"] == "approve"
    assert codex.provider_from_env({"OPENAI_API_KEY": "k"}).base_url == codex.DEFAULT_BASE_URL
    assert codex.provider_from_env({"OPENAI_BASE_URL": "http://127.0.0.1:9"}).env_key is None
    with pytest.raises(RunnerSetupError, match="CODEX_API_KEY or OPENAI_API_KEY"):
        codex.provider_from_env({})


def test_toml_strings_escape_everything_toml_requires() -> None:
    tomllib = pytest.importorskip("tomllib")
    tricky = 'a"b\\c\n\x7f\x01é😀'
    assert tomllib.loads(f"k = {codex.toml_string(tricky)}")["k"] == tricky


def test_sandbox_choice_is_validated() -> None:
    assert codex.sandbox_from_env({}) == "workspace-write"
    assert codex.sandbox_from_env({}, read_only=True) == "read-only"
    assert codex.sandbox_from_env({codex.ENV_SANDBOX: "read-only"}) == "read-only"
    # The host's way out wins under --read-only too (the project is private then anyway).
    full = {codex.ENV_SANDBOX: "danger-full-access"}
    assert codex.sandbox_from_env(full, read_only=True) == "danger-full-access"
    with pytest.raises(RunnerSetupError, match="SKILL_EVALS_CODEX_SANDBOX=bogus"):
        codex.sandbox_from_env({codex.ENV_SANDBOX: "bogus"})


def test_command_is_headless_json_with_prompt_on_stdin(tmp_path: Path) -> None:
    cmd = codex.build_command("/bin/codex", tmp_path, "m1", "read-only")
    assert cmd[:3] == ["/bin/codex", "exec", "--json"] and cmd[-1] == "-"
    for flag in ("--skip-git-repo-check", "--ignore-rules"):
        assert flag in cmd
    assert "--ephemeral" not in cmd  # the session file holds the per-response records
    assert cmd[cmd.index("--sandbox") + 1] == "read-only"
    assert cmd[cmd.index("--cd") + 1] == str(tmp_path)
    assert cmd[cmd.index("--model") + 1] == "m1"


# ----------------------------------------------------------------- end to end, real Codex CLI


@pytest.fixture
def codex_binary() -> str:
    return agent_binary("codex")


@pytest.fixture
def skills(tmp_path: Path) -> dict[str, Path]:
    return two_skills(tmp_path, REFUND_BODY)


@pytest.fixture
def fake() -> Iterator[FakeResponses]:
    with FakeResponses() as server:
        yield server


@dataclass
class Proxy:
    """An HTTP(S) proxy on 127.0.0.1 that refuses everything and records every attempt."""

    url: str
    attempts: list[str]


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    attempts: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _refuse(self) -> None:
            attempts.append(f"{self.command} {self.path}")
            self.send_response(403)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_CONNECT = do_GET = do_POST = _refuse

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Proxy(f"http://127.0.0.1:{server.server_address[1]}", attempts)
    finally:
        server.shutdown()
        server.server_close()


def runner_env(fake: FakeResponses, proxy: Proxy, **extra: str) -> dict[str, str]:
    """The caller's environment pointed at the fake server; every proxy variable points at the
    refusing proxy, so nothing can leave 127.0.0.1 and any attempt is recorded."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALGATE_", "CODEX_"))}
    env.update(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test-not-a-secret")
    env.update(HTTPS_PROXY=proxy.url, HTTP_PROXY=proxy.url, ALL_PROXY=proxy.url,
               NO_PROXY="127.0.0.1,localhost")  # fmt: skip
    env.update(extra)
    return env


def run_codex(
    binary: str,
    skill: Path,
    variant: str,
    prompt: str,
    env: Mapping[str, str],
    *args: str,
) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "runner", "codex", "--bin", binary,
         "--model", MODEL, *args],
        input=prompt.encode(), capture_output=True, timeout=120,
        env={**env, "EVALGATE_SKILL_VARIANT": variant, "EVALGATE_SKILL_DIR": str(skill),
             "EVALGATE_SKILL_CASE_ID": "c1", "EVALGATE_SKILL_TRIAL": "1"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 1, proc.stdout
    result: dict[str, Any] = json.loads(lines[0])
    assert set(result) <= {"variant", "invokedSkills", "output", "exitCode", "meta", "evidence",
                           "toolCalls"}  # fmt: skip
    return result


@pytest.mark.agents
def test_with_loads_the_skill_and_without_does_not(
    codex_binary: str, skills: dict[str, Path], fake: FakeResponses, proxy: Proxy
) -> None:
    env = runner_env(fake, proxy)
    with_ = run_codex(codex_binary, skills["refund-policy"], "with", REFUND_PROMPT, env)
    assert with_["variant"] == "with" and with_["invokedSkills"] == ["refund-policy"]
    assert with_["exitCode"] == 0 and "30 days" in with_["output"]
    assert with_["meta"]["inputTokens"] > 0 and with_["meta"]["outputTokens"] == 14
    assert with_["meta"]["durationMs"] > 0 and with_["meta"]["turns"] == 2  # read, answer
    assert [(c["name"], c["ok"]) for c in with_["toolCalls"]] == [("command_execution", True)]
    # Offered natively (Codex's user skills folder in the fresh CODEX_HOME, outside the
    # project), and none of Codex's bundled system skills competes with it.
    assert fake.offered_names() == {"refund-policy"}
    assert (fake.seen[0].skills[0].path or "").endswith(
        "/home/.codex/skills/refund-policy/SKILL.md"
    )
    fake.seen.clear()
    without = run_codex(codex_binary, skills["refund-policy"], "without", REFUND_PROMPT, env)
    assert without["invokedSkills"] == [] and without["output"] == GENERIC_ANSWER
    assert without["exitCode"] == 0
    assert fake.offered_names() == set()
    assert proxy.attempts == [], "Codex tried to reach beyond 127.0.0.1"


@pytest.mark.agents
def test_user_and_ancestor_skills_do_not_leak(
    codex_binary: str, skills: dict[str, Path], fake: FakeResponses, proxy: Proxy,
    tmp_path: Path,
) -> None:  # fmt: skip
    # The tested skill planted everywhere a real user might have it: ~/.codex/skills,
    # ~/.agents/skills, a CODEX_HOME of their own, and a git checkout that contains TMPDIR.
    home = tmp_path / "user-home"
    for root in (home / ".codex" / "skills", home / ".agents" / "skills"):
        write_skill(root, "refund-policy", REFUND_DESCRIPTION, REFUND_BODY)
    own_codex_home = tmp_path / "own-codex-home"
    write_skill(own_codex_home / "skills", "refund-policy", REFUND_DESCRIPTION, REFUND_BODY)
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    write_skill(checkout / ".agents" / "skills", "refund-policy", REFUND_DESCRIPTION, REFUND_BODY)
    (checkout / "tmp").mkdir()
    (checkout / "AGENTS.md").write_text("LEAK-MARKER: use the refund policy.\n", encoding="utf-8")
    xdg = tmp_path / "xdg"
    write_skill(xdg / "codex" / "skills", "refund-policy", REFUND_DESCRIPTION, REFUND_BODY)
    env = runner_env(fake, proxy, HOME=str(home), CODEX_HOME=str(own_codex_home),
                     TMPDIR=str(checkout / "tmp"), XDG_CONFIG_HOME=str(xdg),
                     CODEX_SQLITE_HOME=str(own_codex_home))  # fmt: skip
    result = run_codex(codex_binary, skills["refund-policy"], "without", REFUND_PROMPT, env)
    assert result["invokedSkills"] == [] and result["output"] == GENERIC_ANSWER
    assert fake.offered_names() == set()
    assert "LEAK-MARKER" not in json.dumps(fake.requests)  # no instruction file above it
    assert workspaces_in(checkout / "tmp") == []  # the workspace was removed
    # A copy read anyway, from wherever it is, is the tested skill by its content: a breach the
    # engine sees, never a silent pass.
    fake.behaviour = Behaviour(script=[f"cat {home}/.codex/skills/refund-policy/SKILL.md"])
    leaked = run_codex(codex_binary, skills["refund-policy"], "without", REFUND_PROMPT, env)
    assert leaked["invokedSkills"] == ["refund-policy"]


# Skills read by the scripted shapes below; their descriptions match no prompt, so only the
# script loads them.
SHAPES = ("glob-skill", "loop-skill", "cd-skill", "dotdot-skill", "python-skill")


def shape_skills(root: Path) -> list[Path]:
    return [write_skill(root, name, shape_description(name), shape_body(name)) for name in SHAPES]


@pytest.mark.agents
def test_every_way_of_reading_a_skill_counts_by_content(
    codex_binary: str, skills: dict[str, Path], fake: FakeResponses, proxy: Proxy,
    tmp_path: Path,
) -> None:  # fmt: skip
    """Globs, loops, cd, ../ paths, Python, numbered lines: whatever shows the content is a
    load, in the order the calls were made."""
    neighbours = [
        a for path in shape_skills(tmp_path / "shapes") for a in ("--with-skill", str(path))
    ]
    fake.behaviour = Behaviour(script=[
        'cat "$CODEX_HOME"/skills/glob*/SKILL.md',
        'for d in "$CODEX_HOME"/skills/loop*; do cat "$d/SKILL.md"; done',
        'cd "$CODEX_HOME/skills/cd-skill" && cat SKILL.md',
        "cat {skills}/../skills/dotdot-skill/../dotdot-skill/SKILL.md",
        "python3 -c \"print(open('{skills}/python-skill/SKILL.md').read())\"",
        "nl -ba {skill:refund-policy}",
    ])  # fmt: skip
    env = runner_env(fake, proxy, SKILL_EVALS_TRANSCRIPT_DIR=str(tmp_path / "saved"))
    result = run_codex(codex_binary, skills["refund-policy"], "with", "Do the steps.", env,
                       *neighbours)  # fmt: skip
    keep_fixture(tmp_path / "saved" / "c1.1.with.jsonl", "codex", "shapes_read")
    assert result["invokedSkills"] == [*SHAPES, "refund-policy"]
    loaded = [e for e in result["evidence"] if e["state"] == "loaded"]
    assert {e["delivery"] for e in loaded} == {"read"}


@pytest.mark.agents
def test_commands_that_only_name_a_skill_are_never_loads(
    codex_binary: str, skills: dict[str, Path], fake: FakeResponses, proxy: Proxy,
    tmp_path: Path,
) -> None:  # fmt: skip
    """The false loads that voided clean `without` runs: a failed `cat … || echo`, `ls`,
    `test -f`, `echo`, `grep -c`, a read past the end. They name SKILL.md paths and show no
    content: attempts, never loads, so no isolation breach."""
    (glob_skill,) = shape_skills(tmp_path / "shapes")[:1]
    fake.behaviour = Behaviour(script=[
        "cat {skill:refund-policy} 2>/dev/null || echo not here",
        "ls -l {skill:glob-skill}",
        "test -f {skill:glob-skill} && echo present",
        "echo {skill:glob-skill}",
        "grep -c Step {skill:glob-skill}",
        "sed -n '500,600p' {skill:glob-skill}",
    ])  # fmt: skip
    env = runner_env(fake, proxy, SKILL_EVALS_TRANSCRIPT_DIR=str(tmp_path / "saved"))
    result = run_codex(codex_binary, skills["refund-policy"], "without", REFUND_PROMPT, env,
                       "--with-skill", str(glob_skill))  # fmt: skip
    keep_fixture(tmp_path / "saved" / "c1.1.without.jsonl", "codex", "shapes_named")
    assert result["invokedSkills"] == []
    states = {(e["skill"], e["state"]) for e in result["evidence"]}
    # Completed calls that named the files: unverified; failed ones: failed. Never loaded.
    tried = {skill for skill, state in states if state in ("failed", "unverified")}
    assert {"refund-policy", "glob-skill"} <= tried
    assert not any(state == "loaded" for _, state in states)


@pytest.mark.agents
def test_a_dollar_mention_is_an_explicit_load(
    codex_binary: str, skills: dict[str, Path], fake: FakeResponses, proxy: Proxy
) -> None:
    """`$refund-policy` makes Codex put the body in front of the model with no event of its
    own: the prompt is the evidence, for a skill the run offered."""
    env = runner_env(fake, proxy)
    result = run_codex(codex_binary, skills["refund-policy"], "with", "$refund-policy hello", env)
    assert result["invokedSkills"] == ["refund-policy"]
    assert {"skill": "refund-policy", "state": "loaded", "delivery": "explicit",
            "source": "$ mention"} in result["evidence"]  # fmt: skip
    assert "Refunds within 30 days" in json.dumps(fake.requests)  # Codex did inject it
    without = run_codex(codex_binary, skills["refund-policy"], "without", "$refund-policy hello",
                        env)  # fmt: skip
    assert without["invokedSkills"] == []  # not offered there: nothing to inject


@pytest.mark.agents
def test_a_without_run_that_globs_a_concurrent_with_run_is_a_reported_breach(
    codex_binary: str, skills: dict[str, Path], proxy: Proxy, tmp_path: Path
) -> None:
    """Two invocations at once. The `with` run's workspace sits under a parent nobody can
    list, with a random name; a `without` run that globs for it finds nothing. Even as root:
    Codex's sandbox drops the capability that bypasses the missing read permission. Had it
    found the copy, its evidence would report the tested skill (never a silent pass)."""
    tmpdir = tmp_path / "shared-tmp"
    tmpdir.mkdir()
    with FakeResponses(Behaviour(script=["sleep 8"])) as slow, FakeResponses() as glob:
        glob.behaviour = Behaviour(script=["cat $TMPDIR/../../*/home/.codex/skills/*/SKILL.md"])
        busy = subprocess.Popen(
            [sys.executable, "-m", "skill_evals", "runner", "codex", "--bin", codex_binary,
             "--model", MODEL], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env={**runner_env(slow, proxy, TMPDIR=str(tmpdir)), "EVALGATE_SKILL_VARIANT": "with",
                 "EVALGATE_SKILL_DIR": str(skills["refund-policy"])},
        )  # fmt: skip
        assert busy.stdin is not None
        busy.stdin.write(REFUND_PROMPT.encode())
        busy.stdin.close()
        for _ in range(600):  # until the `with` workspace holds its skill
            if any((w / "home/.codex/skills/refund-policy").is_dir()
                   for w in workspaces_in(tmpdir)):  # fmt: skip
                break
            time.sleep(0.05)
        result = run_codex(codex_binary, skills["refund-policy"], "without", REFUND_PROMPT,
                           runner_env(glob, proxy, TMPDIR=str(tmpdir)))  # fmt: skip
        busy.wait(timeout=120)
    shown = any("Refunds within 30 days" in o for seen in glob.seen for o in seen.tool_outputs)
    assert result["invokedSkills"] == (["refund-policy"] if shown else [])
    assert not shown
    assert any("Permission denied" in o or "No such file" in o
               for seen in glob.seen for o in seen.tool_outputs)  # fmt: skip


@pytest.mark.agents
def test_neighbour_is_offered_in_both_variants_and_reported_when_loaded(
    codex_binary: str, skills: dict[str, Path], fake: FakeResponses, proxy: Proxy
) -> None:
    env = runner_env(fake, proxy)
    neighbour = ("--with-skill", str(skills["shipping-times"]))
    for variant in ("with", "without"):
        fake.seen.clear()
        result = run_codex(codex_binary, skills["refund-policy"], variant, SHIPPING_PROMPT, env,
                           *neighbour)  # fmt: skip
        assert result["invokedSkills"] == ["shipping-times"], variant
        assert "working days" in result["output"]
        expected = {"refund-policy", "shipping-times"} if variant == "with" else {"shipping-times"}
        assert fake.offered_names() == expected
    # Two reads in one turn, the first one slower: Codex reports them as they finish, the
    # runner in the order the model made them (from Codex's session file).
    slow_first = "case {path} in *refund*) sleep 2;; esac; cat {path}"
    fake.behaviour = Behaviour(also_load=("shipping-times",), read_command=slow_first)
    both = run_codex(codex_binary, skills["refund-policy"], "with", REFUND_PROMPT, env, *neighbour)
    assert both["invokedSkills"] == ["refund-policy", "shipping-times"]
    # Sub-agents are off without the deprecated key: no warning, no sub-agent tool offered.
    assert "deprecated" not in json.dumps(both)
    offered = {t.get("name") for request in fake.requests for t in request.get("tools", [])}
    assert not {name for name in offered if name and "agent" in name}, offered


@pytest.mark.agents
def test_fixture_skill_is_offered_and_reported_and_no_secret_reaches_disk(
    codex_binary: str,
    skills: dict[str, Path],
    fake: FakeResponses,
    proxy: Proxy,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A skill the fixture brings in .agents/skills is part of the project: offered in both
    variants and reported when loaded. The API key reaches Codex (the fake saw it) but no file
    of the kept workspace (CODEX_HOME with config and session files, stderr, transcript) nor the
    saved transcript holds it."""
    secret = "sk-test-3b8d0f2e6a4c1e9b7d5f3a1c"
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    fixture = tmp_path / "fixture"
    write_skill(
        fixture / ".agents" / "skills", "shipping-times", SHIPPING_DESCRIPTION, SHIPPING_BODY
    )
    transcripts = tmp_path / "transcripts"
    env = runner_env(
        fake, proxy, OPENAI_API_KEY=secret, SKILL_EVALS_TRANSCRIPT_DIR=str(transcripts)
    )
    invocation = AgentInvocation("without", skills["refund-policy"], "fixture", 1, SHIPPING_PROMPT)
    options = AgentOptions(bin=codex_binary, model=MODEL, fixture=fixture, keep_workspace=True)
    result = codex.run(invocation, options, env)
    assert result.invoked_skills == ["shipping-times"] and "working days" in result.output
    assert fake.offered_names() == {"shipping-times"}
    assert any(secret in credential for credential in fake.credentials)
    (kept,) = workspaces_in(private_tmp)
    assert (kept / "transcript.jsonl").is_file() and (kept / "home" / ".codex").is_dir()
    assert (transcripts / "fixture.1.without.jsonl").is_file()
    # Both copies of the transcript end with the session file's usage records (the turns).
    for saved in (kept / "transcript.jsonl", transcripts / "fixture.1.without.jsonl"):
        assert codex.model_turns(read_events(saved)) == result.meta["turns"] == 2
    assert files_holding([kept, transcripts], secret) == []
    assert secret not in result.to_line()


def test_fixture_holding_an_offered_skill_is_refused(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "s", "refund-policy")
    neighbour = write_skill(tmp_path / "n", "shipping-times")
    env = {"PATH": os.environ["PATH"], "OPENAI_API_KEY": "k"}
    for name in ("refund-policy", "shipping-times"):
        fixture = tmp_path / f"fixture-{name}"
        write_skill(fixture / ".agents" / "skills", name)
        for variant in ("with", "without"):
            for delivery in ("native", "mcp"):
                invocation = AgentInvocation(variant, skill, "c", 1, "p")
                options = AgentOptions(
                    fixture=fixture,
                    bin=sys.executable,
                    with_skills=(neighbour,),
                    delivery=delivery,
                )
                with pytest.raises(RunnerSetupError, match=rf"\.agents/skills/{name}"):
                    codex.run(invocation, options, env)


@pytest.mark.agents
def test_failed_read_is_not_reported(
    codex_binary: str, skills: dict[str, Path], fake: FakeResponses, proxy: Proxy
) -> None:
    fake.behaviour = Behaviour(fail_reads=True)
    result = run_codex(codex_binary, skills["refund-policy"], "with", REFUND_PROMPT,
                       runner_env(fake, proxy))  # fmt: skip
    assert result["invokedSkills"] == [] and result["output"] == GENERIC_ANSWER
    assert any("No such file" in o for seen in fake.seen for o in seen.tool_outputs)


@pytest.mark.agents
def test_a_read_that_outlives_the_exec_wait_is_polled_and_counts(
    codex_binary: str, skills: dict[str, Path], fake: FakeResponses, proxy: Proxy
) -> None:
    """The cause of the once-flaky full run: on a loaded machine a command can outlive
    exec_command's wait, and Codex then answers "Process running with session ID N" without the
    output. The scripted model polls with write_stdin, as a real model does, and the content it
    then sees is the load."""
    fake.behaviour = Behaviour(read_command="sleep 2; cat {path}", yield_ms=250)
    result = run_codex(codex_binary, skills["refund-policy"], "with", REFUND_PROMPT,
                       runner_env(fake, proxy))  # fmt: skip
    outputs = [o for seen in fake.seen for o in seen.tool_outputs]
    assert any("Process running with session ID" in o for o in outputs)
    assert result["invokedSkills"] == ["refund-policy"] and "30 days" in result["output"]


@pytest.mark.agents
def test_commands_the_model_runs_never_see_the_api_key(
    codex_binary: str, skills: dict[str, Path], fake: FakeResponses, proxy: Proxy
) -> None:
    fake.behaviour = Behaviour(read_command="env; cat {path}")
    env = runner_env(fake, proxy, CODEX_API_KEY="sk-codex-not-a-secret")
    result = run_codex(codex_binary, skills["refund-policy"], "with", REFUND_PROMPT, env)
    assert result["invokedSkills"] == ["refund-policy"]  # the request itself was authorised
    outputs = [o for seen in fake.seen for o in seen.tool_outputs]
    assert outputs and any("HOME=" in o for o in outputs)
    assert not any("not-a-secret" in o for o in outputs)


def _runner_line(codex_binary: str, skill: Path, env: Mapping[str, str]) -> Any:
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "runner", "codex", "--bin", codex_binary,
         "--model", MODEL],
        input=b"SECRET-PROMPT-TEXT about refunds", capture_output=True, timeout=120,
        env={**env, "EVALGATE_SKILL_VARIANT": "with", "EVALGATE_SKILL_DIR": str(skill)},
    )  # fmt: skip
    assert b"SECRET-PROMPT-TEXT" not in proc.stdout + proc.stderr
    assert b"scripted failure" not in proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.agents
def test_api_failures_are_reasons_by_status(
    codex_binary: str, skills: dict[str, Path], fake: FakeResponses, proxy: Proxy
) -> None:
    """A failed turn is the runner's own reason (never a failed task that would read as "no
    uplift"), by the status Codex names; a refused request without one keeps the error type.
    Codex retries a 5xx once at most and a 429 never: the engine's --retries retries those (see
    the full run)."""
    expected = {401: ("auth refused", False), 429: ("rate limited", True),
                529: ("overloaded", True), 500: ("server error", True)}  # fmt: skip
    for status, (words, retryable) in expected.items():
        fake.behaviour = Behaviour(fail_status=status)
        fake.seen.clear()
        code, line = _runner_line(codex_binary, skills["refund-policy"], runner_env(fake, proxy))
        assert code == 0 and set(line) == {"runnerError", "retryable"}
        assert words in line["runnerError"] and f"HTTP {status}" in line["runnerError"], line
        assert line["retryable"] is retryable
        assert len(fake.seen) <= 2  # the first request and one retry at most
    fake.behaviour = Behaviour(fail_turn=True)  # a 400 whose body Codex quotes
    _, line = _runner_line(codex_binary, skills["refund-policy"], runner_env(fake, proxy))
    assert line == {"runnerError": "the model API refused the request (invalid_request_error); "
                    "check CODEX_API_KEY / OPENAI_API_KEY, OPENAI_BASE_URL and --model",
                    "retryable": False}  # fmt: skip


@pytest.mark.agents
def test_mcp_delivery_loads_through_the_skill_server(
    codex_binary: str, skills: dict[str, Path], fake: FakeResponses, proxy: Proxy
) -> None:
    env = runner_env(fake, proxy)
    with_ = run_codex(codex_binary, skills["refund-policy"], "with", REFUND_PROMPT, env,
                      "--delivery", "mcp")  # fmt: skip
    assert with_["invokedSkills"] == ["refund-policy"] and "30 days" in with_["output"]
    offered = [s for seen in fake.seen for s in seen.skills]
    assert offered and all(s.mcp_tool == "load_refund_policy_skill" for s in offered)
    fake.seen.clear()
    without = run_codex(codex_binary, skills["refund-policy"], "without", REFUND_PROMPT, env,
                        "--delivery", "mcp")  # fmt: skip
    assert without["invokedSkills"] == [] and fake.offered_names() == set()
    fake.behaviour = Behaviour(fail_reads=True)
    failed = run_codex(codex_binary, skills["refund-policy"], "with", REFUND_PROMPT, env,
                       "--delivery", "mcp")  # fmt: skip
    assert failed["invokedSkills"] == []


@pytest.mark.agents
def test_setup_problems_are_runner_failures(
    codex_binary: str, skills: dict[str, Path], fake: FakeResponses, proxy: Proxy
) -> None:
    env = runner_env(fake, proxy)
    del env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"]
    base = [sys.executable, "-m", "skill_evals", "runner", "codex", "--bin", codex_binary]
    run_env = {**env, "EVALGATE_SKILL_VARIANT": "with",
               "EVALGATE_SKILL_DIR": str(skills["refund-policy"])}  # fmt: skip
    no_key = subprocess.run(base, input=b"secret prompt", capture_output=True, env=run_env)
    assert no_key.returncode == 2
    assert json.loads(no_key.stdout)["retryable"] is False
    assert b"CODEX_API_KEY or OPENAI_API_KEY" in no_key.stderr
    assert b"secret prompt" not in no_key.stderr
    turns = subprocess.run([*base, "--max-turns", "3"], input=b"p", capture_output=True,
                           env={**run_env, "OPENAI_API_KEY": "k"})  # fmt: skip
    assert turns.returncode == 2 and b"--max-turns" in turns.stderr


# ------------------------------------------------------------- the whole pipeline through Codex

# 10 independent prompts, the minimum: 20 invocations keep this run short on a 2-core machine.
SUITE = [
    ("refund-no-receipt", REFUND_PROMPT, True, ["30 days"]),
    ("refund-returns", "How do returns work for a store purchase?", True, ["30 days"]),
    ("refund-lost-receipt", "I lost my receipt, can I still get a refund?", True, ["30 days"]),
    ("refund-window", "What is the refund window for purchases?", True, ["30 days"]),
    ("refund-accept", "Do you accept returns without a receipt?", True, ["30 days"]),
    ("ship-when", SHIPPING_PROMPT, False, ["working days"]),
    ("ship-how-long", "How long does delivery of a parcel take?", False, ["working days"]),
    ("ship-canada", "Explain shipping times to Canada", False, ["working days"]),
    ("ship-express", "Is express delivery faster for parcels?", False, ["working days"]),
    ("ship-track", "Track the shipping of my parcels", False, ["working days"]),
]


@pytest.mark.agents
def test_full_skill_evals_run_through_codex(
    codex_binary: str, skills: dict[str, Path], fake: FakeResponses, proxy: Proxy,
    tmp_path: Path,
) -> None:  # fmt: skip
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {
                "id": case_id,
                "prompt": prompt,
                "expectTrigger": trigger,
                "task": {"check": "includes_all", "expected": expected},
                "loaded": {"exclude": ["refund-policy"], "include": ["shipping-times"]}
                if not trigger
                else {"exclude": ["shipping-times"]},
            }
            for case_id, prompt, trigger, expected in SUITE
        ],
    )
    runner = (
        f"{sys.executable} -m skill_evals runner codex --bin {codex_binary} --model {MODEL} "
        f"--with-skill {skills['shipping-times']}"
    )
    report_path = tmp_path / "report.json"
    # The first request is rate limited; Codex does not retry a 429, the runner says it is
    # retryable and the engine runs that invocation again.
    fake.behaviour = Behaviour(fail_first=[429])
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skills["refund-policy"]),
         "--cases", str(cases), "--runner", runner, "--trials", "1", "--jobs", "4",
         "--timeout-ms", "120000", "--min-trigger-f1", "0.9", "--min-uplift", "0.1",
         "--report", str(report_path), "--quiet"],
        capture_output=True, text=True, timeout=900,
        env=runner_env(fake, proxy, SKILL_EVALS_TRANSCRIPT_DIR=str(tmp_path / "transcripts")),
    )  # fmt: skip
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert_valid_report(report)
    assert report["runner"]["failures"] == [], proc.stderr[-2000:]
    assert report["loading"]["violations"] == []
    trigger = report["trigger"]
    assert (trigger["tp"], trigger["fp"], trigger["fn"], trigger["tn"]) == (5, 0, 0, 5)
    assert trigger["f1"] == 1.0
    task = report["task"]
    assert task["units"] == 10 and task["insufficient"] is False
    assert (task["with"]["passed"], task["without"]["passed"]) == (10, 5)
    assert task["difference"] == 0.5
    assert (task["signTest"]["positive"], task["signTest"]["negative"]) == (5, 0)
    assert task["signTest"]["pValue"] == 0.0625
    assert report["runner"]["invocations"] == 21 and report["runner"]["retried"] == 1
    assert 0.1 < task["interval"]["lower"] <= 0.5 <= task["interval"]["upper"]
    assert report["gates"]["minTriggerF1"]["passed"] and report["gates"]["minUplift"]["passed"]
    assert proc.returncode == 0 and report["exitCode"] == 0
    assert report["runner"]["meta"]["inputTokens"] > 0
    assert proxy.attempts == []
    # The runner's claims are the saved transcripts' evidence, case by case.
    for case_id, _, expect, _ in SUITE:
        for variant in ("with", "without"):
            saved = read_events(tmp_path / "transcripts" / f"{case_id}.1.{variant}.jsonl")
            loaded = {x.skill for x in codex.find_loads(saved, None, SKILLS) if x.state == "loaded"}
            wanted = {"refund-policy"} if expect and variant == "with" else set()
            assert loaded == wanted | (set() if expect else {"shipping-times"}), (case_id, variant)


# ------------------------------------------------------------------ regenerating the fixtures

CAPTURES: dict[str, tuple[str, str, Behaviour, tuple[str, ...]]] = {
    # name: (variant, prompt, behaviour, extra runner args)
    "native_with": ("with", REFUND_PROMPT, Behaviour(), ()),
    "native_without": ("without", REFUND_PROMPT, Behaviour(), ()),
    "sed_read": ("with", REFUND_PROMPT, Behaviour(read_command="sed -n '1,200p' {path}"), ()),
    "failed_read": ("with", REFUND_PROMPT, Behaviour(fail_reads=True), ()),
    "neighbour": ("with", REFUND_PROMPT, Behaviour(also_load=("shipping-times",)), ("neighbour",)),
    "mcp_with": ("with", REFUND_PROMPT, Behaviour(), ("--delivery", "mcp")),
    "mcp_failed": ("with", REFUND_PROMPT, Behaviour(fail_reads=True), ("--delivery", "mcp")),
    "turn_failed": ("with", REFUND_PROMPT, Behaviour(fail_turn=True), ()),
}


def capture_fixtures() -> None:
    """Run the real CLI for each CAPTURES entry and save its ``exec --json`` transcript.

    A scenario may end in a runner failure on purpose (``turn_failed``): the transcript is kept
    all the same, and every workspace and temporary skill is removed whatever happens."""
    import re
    import shutil
    import tempfile

    binary = str(Path(__file__).resolve().parents[2] / ".cache/agents/node_modules/.bin/codex")
    root = Path(tempfile.mkdtemp())
    try:
        refund = write_skill(root, "refund-policy", REFUND_DESCRIPTION, REFUND_BODY)
        shipping = write_skill(root, "shipping-times", SHIPPING_DESCRIPTION, SHIPPING_BODY)
        FIXTURES.mkdir(parents=True, exist_ok=True)
        with FakeResponses() as server:
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("EVALGATE_", "CODEX_"))}  # fmt: skip
            env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-not-a-secret",
                       EVALGATE_SKILL_DIR=str(refund), TMPDIR=str(root))  # fmt: skip
            for name, (variant, prompt, behaviour, extra) in CAPTURES.items():
                server.behaviour = behaviour
                args = ["--with-skill", str(shipping)] if extra == ("neighbour",) else list(extra)
                proc = subprocess.run(
                    [sys.executable, "-m", "skill_evals", "runner", "codex", "--bin", binary,
                     "--model", MODEL, "--keep-workspace", *args],
                    input=prompt.encode(), capture_output=True, timeout=300,
                    env={**env, "EVALGATE_SKILL_VARIANT": variant},
                )  # fmt: skip
                match = re.search(r"workspace kept at (\S+)", proc.stderr.decode())
                if match is None:
                    raise SystemExit(f"{name}: no workspace kept (exit {proc.returncode})")
                kept = Path(match.group(1))
                try:
                    transcript = (kept / "transcript.jsonl").read_bytes()
                finally:
                    shutil.rmtree(kept, ignore_errors=True)
                (FIXTURES / f"{name}.jsonl").write_bytes(transcript)
                print(name, proc.returncode, proc.stdout.decode().strip()[:200])
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    capture_fixtures()


def test_fixture_skill_in_a_differently_named_folder_is_reported_by_name(tmp_path: Path) -> None:
    """The runner's plumbing with a stand-in `codex` that prints a recorded stream: a read of
    the fixture skill's SKILL.md shows its folder (`ship`); it is reported by its name."""
    fixture = tmp_path / "fixture"
    write_skill(fixture / ".agents" / "skills", "shipping-times").rename(
        fixture / ".agents" / "skills" / "ship"
    )
    lines = [
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"type": "command_execution", "status": "completed",
         "exit_code": 0, "command": "/bin/bash -lc 'cat .agents/skills/ship/SKILL.md'",
         "aggregated_output": skill_md("shipping-times")}},
        {"type": "item.completed", "item": {"type": "command_execution", "status": "completed",
         "exit_code": 1, "command": "/bin/bash -lc 'cat .agents/skills/ship/SKILL.md'",
         "aggregated_output": ""}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "3 to 5 days"}},
        {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 2}},
    ]  # fmt: skip
    stand_in = tmp_path / "codex"
    stand_in.write_text(
        "#!/bin/sh\ncat >/dev/null\ncat <<'EOF'\n"
        + "".join(json.dumps(line) + "\n" for line in lines)
        + "EOF\n",
        encoding="utf-8",
    )
    stand_in.chmod(0o755)
    skill = write_skill(tmp_path / "s", "refund-policy")
    invocation = AgentInvocation("without", skill, "c", 1, "When will my parcel arrive?")
    env = {"PATH": os.environ["PATH"], "OPENAI_API_KEY": "k"}
    result = codex.run(invocation, AgentOptions(bin=str(stand_in), fixture=fixture), env)
    assert result.invoked_skills == ["shipping-times"]
    # The failed read names the folder; it is reported by the skill's name too.
    assert {"skill": "shipping-times", "state": "failed", "delivery": "read",
            "source": "command_execution"} in result.evidence  # fmt: skip
    assert (result.output, result.exit_code) == ("3 to 5 days", 0)
    assert set(result.meta) == {"durationMs", "inputTokens", "outputTokens"}
