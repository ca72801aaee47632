"""The Qwen Code runner end to end (``-m agents``): the real pinned ``qwen`` against the scripted
model of tests/agents/fake_qwen.py, which misbehaves as real model APIs do. Each scenario runs
once (module-scoped) and is read by several tests; which skills reached the model is read from
what the scripted server received, never from our own parser. The parser's own tests on the
transcripts captured here are in test_qwen_events.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents.evidence import read_events
from tests.agents.conftest import agent_binary, files_holding, keep_fixture, workspaces_in
from tests.agents.e2e import LONG_REFUND_BODY, REFUND_PROMPT, caller_env, run_runner_cli, two_skills
from tests.agents.fake_openai_chat import Call
from tests.agents.fake_qwen import (
    GENERIC_ANSWER,
    REFUSAL,
    Behaviour,
    FakeQwenModel,
    short_tmpdir,
)

pytestmark = pytest.mark.agents

REFUND_BODY = LONG_REFUND_BODY
KEY = "sk-qwen-test-key-0123456789"


@dataclass
class Scenario:
    """One runner invocation against its own scripted model."""

    proc: subprocess.CompletedProcess[str]
    line: dict[str, Any]
    model: FakeQwenModel
    saved: Path  # the transcript the runner saved

    def states(self) -> list[tuple[str, str, str]]:
        """(skill, state, delivery) of the line's evidence, offers left out."""
        return [(e["skill"], e["state"], e["delivery"]) for e in self.line.get("evidence", [])
                if e["state"] != "offered"]  # fmt: skip


SLASH_PROMPT = "/refund-policy what about lost receipts?"
SCENARIOS: dict[str, tuple[str, Behaviour, tuple[str, ...]]] = {
    # name: (variant, the model's behaviour, extra runner options); the prompt is REFUND_PROMPT
    # but for "explicit" (SLASH_PROMPT)
    "with": ("with", Behaviour(also_load=("shipping-times",)), ()),
    "without": ("without", Behaviour(), ("--keep-workspace",)),
    "reads": ("with", Behaviour(load_with="bash", first=(
        Call("run_shell_command", {"command": "cat .qwen/skills/gone/SKILL.md"}),
        Call("run_shell_command", {"command": "cat .qwen/skills/refund-policy/missing/SKILL.md"}),
    )), ()),
    "read-file": ("with", Behaviour(load_with="read"), ()),
    "failed-skill": ("with", Behaviour(wrong_name=True), ()),
    "rate-limited": ("with", Behaviour(fail_status=429, retry_after="1"), ()),
    "overloaded": ("with", Behaviour(fail_status=529, retry_after="1"), ()),
    "server-error-once": ("with", Behaviour(fail_status=500, fail_times=1), ()),
    "refusal": ("with", Behaviour(refuse=True), ()),
    "bad-key": ("with", Behaviour(fail_status=401), ()),
    "explicit": ("with", Behaviour(min_overlap=99), ()),  # the model itself loads nothing
    "mcp": ("with", Behaviour(also_load=("shipping-times",)), ("--delivery", "mcp")),
    "turn-limit": ("with", Behaviour(first=(Call("run_shell_command", {"command": "true"}),)),
                   ("--max-turns", "1")),
}  # fmt: skip
# Planted where a careless runner would let Qwen Code find them: the caller's own ~/.qwen and
# every folder above the workspaces (TMPDIR): a copy of the tested skill and context files.
MARKER = "PLANTED-CONTEXT-7f3a"
PARALLEL_RUNS = 4


@pytest.fixture(scope="module")
def qwen_binary() -> str:
    return agent_binary("qwen")


@pytest.fixture(scope="module")
def runs(
    qwen_binary: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Scenario]]:
    """Every scenario run once through ``skill-evals runner qwen``."""
    tmp = tmp_path_factory.mktemp("qwen")
    with short_tmpdir(tmp):
        yield _run_scenarios(qwen_binary, tmp)


def _run_scenarios(qwen_binary: str, tmp: Path) -> dict[str, Scenario]:
    skills = two_skills(tmp, REFUND_BODY)
    caller_home = tmp / "caller-home"
    for root in (caller_home / ".qwen", tmp / "tmpdir", tmp / "tmpdir" / ".qwen"):
        shutil.copytree(skills["refund-policy"], root / "skills" / "refund-policy")
        for context in ("QWEN.md", "AGENTS.md"):
            (root / context).write_text(f"{MARKER}: always cite the planted file.\n", "utf-8")

    def scenario(name: str) -> Scenario:
        variant, behaviour, extra = SCENARIOS[name]
        saved = tmp / "saved" / name
        with FakeQwenModel(behaviour) as model:
            extra_env = {"SKILL_EVALS_TRANSCRIPT_DIR": str(saved), "HOME": str(caller_home)}
            env = runner_env(model, tmp, extra_env)
            argv = ["qwen", "--bin", qwen_binary, "--model", "qwen-fake",
                    "--with-skill", str(skills["shipping-times"]), *extra]  # fmt: skip
            prompt = SLASH_PROMPT if name == "explicit" else REFUND_PROMPT
            proc = run_runner_cli(argv, variant, skills["refund-policy"], env, prompt, 240)
        lines = proc.stdout.splitlines()
        files = sorted(saved.glob("*.jsonl"))
        transcript = files[0] if files else saved / "none.jsonl"
        if files:
            keep_fixture(transcript, "qwen", name)
        return Scenario(proc, json.loads(lines[-1]) if lines else {}, model, transcript)

    # Independent runs, each mostly waiting (Qwen Code's start, its retry backoffs): a few at
    # a time, as the engine's --jobs would.
    with ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
        return dict(zip(SCENARIOS, pool.map(scenario, SCENARIOS), strict=True))


def runner_env(
    model: FakeQwenModel, tmp: Path, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The caller's environment: the scripted model, a private TMPDIR, no OpenAI or Qwen
    variables from the developer's shell."""
    settings = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": model.base_url}
    return caller_env(tmp, ("OPENAI_", "QWEN_"), settings, extra)


def test_with_loads_both_skills_of_one_turn_in_call_order(runs: dict[str, Scenario]) -> None:
    run = runs["with"]
    assert run.line["invokedSkills"] == ["refund-policy", "shipping-times"], run.proc.stderr
    assert run.model.bodies_received() == {"refund-policy", "shipping-times"}
    assert run.states() == [("refund-policy", "loaded", "native"),
                            ("shipping-times", "loaded", "native")]  # fmt: skip
    assert run.line["exitCode"] == 0 and "30 days with a receipt" in run.line["output"]
    assert [c["name"] for c in run.line["toolCalls"]] == ["skill", "skill"]
    assert set(run.line["meta"]) >= {"durationMs", "inputTokens", "outputTokens", "turns"}
    # Only the run's skills were listed: Qwen Code's bundled ones are off; no sub-agent tool.
    assert run.model.offered_names() == {"refund-policy", "shipping-times"}
    tools = {t["function"]["name"] for body in run.model.requests for t in body.get("tools", [])}
    assert "skill" in tools and not tools & {"agent", "list_agents"}


def test_without_never_lists_the_tested_skill(runs: dict[str, Scenario]) -> None:
    """Copies of the tested skill and context files planted in the caller's ~/.qwen and in
    every folder above the workspace never reach the model, in any scenario."""
    run = runs["without"]
    assert run.line["invokedSkills"] == [] and run.line["exitCode"] == 0
    assert run.model.offered_names() == {"shipping-times"}
    assert run.model.bodies_received() == set()
    assert run.line["output"] == GENERIC_ANSWER
    for scenario in runs.values():
        assert all(MARKER not in json.dumps(body) for body in scenario.model.requests)


def test_reads_count_by_content_and_a_missing_file_is_failed(runs: dict[str, Scenario]) -> None:
    run = runs["reads"]
    assert run.model.bodies_received() == {"refund-policy"}
    assert ("refund-policy", "loaded", "read") in run.states()
    # `cat` of a SKILL.md that is not there: exit 1, "No such file" — failed, never unverified
    assert ("refund-policy", "failed", "read") in run.states()
    assert all(state != "unverified" for _, state, _ in run.states())
    assert run.line["invokedSkills"] == ["refund-policy"]


def test_a_read_file_of_skill_md_counts_by_content(runs: dict[str, Scenario]) -> None:
    run = runs["read-file"]
    assert run.model.bodies_received() == {"refund-policy"}
    assert run.states() == [("refund-policy", "loaded", "read")], run.line
    assert run.line["evidence"][-1]["source"] == "read_file result"
    assert run.line["invokedSkills"] == ["refund-policy"]


def test_a_failed_skill_call_is_no_load(runs: dict[str, Scenario]) -> None:
    run = runs["failed-skill"]
    assert run.line["invokedSkills"] == []
    assert run.model.bodies_received() == set()
    assert run.states() == [("refund-policy-missing", "failed", "native")]
    assert run.line["toolCalls"][0]["ok"] is False


@pytest.mark.parametrize(
    ("name", "words", "retryable"),
    [("rate-limited", "rate limited by the model API (HTTP 429)", True),
     ("overloaded", "overloaded (HTTP 529)", True),
     ("bad-key", "HTTP 401", False)],
)  # fmt: skip
def test_failed_model_requests_are_runner_errors_after_one_retry(
    runs: dict[str, Scenario], name: str, words: str, retryable: bool
) -> None:
    run = runs[name]
    assert words in run.line["runnerError"] and run.line["retryable"] is retryable
    # the first request and one retry (a third may be in flight when the guard ends Qwen Code)
    assert len(run.model.requests) <= (1 if name == "bad-key" else 3)
    assert REFUND_PROMPT not in run.line["runnerError"]


def test_a_single_server_error_is_retried_by_qwen_and_the_run_counts(
    runs: dict[str, Scenario],
) -> None:
    run = runs["server-error-once"]
    assert run.line["invokedSkills"] == ["refund-policy"], run.line
    assert run.model.failures == 1 and run.model.bodies_received() == {"refund-policy"}


def test_a_refusal_is_the_answer_not_a_load(runs: dict[str, Scenario]) -> None:
    run = runs["refusal"]
    assert "runnerError" not in run.line, run.line
    assert run.line["invokedSkills"] == [] and REFUSAL in run.line["output"]


def test_a_slash_prompt_is_an_explicit_load(runs: dict[str, Scenario]) -> None:
    """Qwen Code expands ``/refund-policy …`` into the user turn itself: the model gets the body
    without a tool call, the chat log records the expansion."""
    run = runs["explicit"]
    assert run.line["invokedSkills"] == ["refund-policy"], run.line
    assert ("refund-policy", "loaded", "explicit") in run.states()
    assert run.line.get("toolCalls", []) == []
    first = run.model.requests[0]["messages"]
    assert any("Refunds within 30 days" in json.dumps(m) for m in first if m["role"] == "user")


def test_mcp_delivery_loads_through_the_tool_bridge(runs: dict[str, Scenario]) -> None:
    """``--delivery mcp``: Qwen Code defers MCP tools behind ``tool_call``; a bridged call of
    ``mcp__skills__load_<name>_skill`` whose result is the skill's text is an MCP load."""
    run = runs["mcp"]
    assert run.line["invokedSkills"] == ["refund-policy", "shipping-times"], run.line
    assert run.states() == [("refund-policy", "loaded", "mcp"),
                            ("shipping-times", "loaded", "mcp")]  # fmt: skip
    assert run.model.bodies_received() == {"refund-policy", "shipping-times"}
    assert {c["name"] for c in run.line["toolCalls"]} == {
        "mcp__skills__load_refund_policy_skill",
        "mcp__skills__load_shipping_times_skill",
    }
    # offered by the server only, never as project skills of Qwen Code's own listing
    first = run.model.parse_first()
    assert set(first.mcp_tools) == {"refund-policy", "shipping-times"}
    assert "<available_skills>" not in json.dumps(run.model.requests[0])


def test_the_turn_limit_is_a_runner_error(runs: dict[str, Scenario]) -> None:
    run = runs["turn-limit"]
    assert run.line == {
        "runnerError": "agent turn limit reached (--max-turns 1) before a final answer; raise "
        "--max-turns",
        "retryable": False,
    }, run.proc.stderr


def test_the_key_reaches_the_model_only(runs: dict[str, Scenario]) -> None:
    """The key is in no saved transcript and no file of a kept workspace (settings, chat log,
    Qwen Code's own files); every workspace but the kept one is gone."""
    run = runs["with"]
    events = read_events(run.saved)
    assert KEY not in run.saved.read_text(encoding="utf-8")
    assert any(e.get("type") == "skill_evals_chat" for e in events)
    kept = runs["without"].proc.stderr.split("workspace kept at ", 1)[1].split()[0]
    assert workspaces_in(run.saved.parents[2] / "tmpdir") == [Path(kept)]
    assert (Path(kept) / "home" / ".qwen" / "settings.json").is_file()
    assert files_holding([run.saved.parents[1], Path(kept)], KEY) == []
    assert set(run.model.credentials) == {KEY}  # it did reach the model, on every request
