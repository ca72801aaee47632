"""The built-in runners in `skill-evals route` (the whole catalog installed, the model picking the
skill whose description matches best, so a confusable pair shows up as a collision) and in
workspace tasks (the agent writes a file with its own tool in the engine's workspace, a `command`
verifier and a `tool_called` check judge it; `--read-only` refuses the edit). Real agent CLIs
against the scripted model servers of tests/agents/fake_*.py (``-m agents``).

The checks live here; the tests are in test_catalog_and_work_*.py, one file per group of agents
(FILES), so that `--dist loadfile` spreads them over the workers instead of one long file."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents.versions import VERSION_CHECKED_VAR
from tests.agents import (
    fake_anthropic,
    fake_copilot_model,
    fake_gemini,
    fake_openai_chat,
    fake_openai_responses,
    fake_qwen,
)
from tests.agents.conftest import agent_binary, workspaces_in
from tests.conftest import PYTHON_SANDBOX_PATH, write_jsonl, write_skill

KEY = "test-key-7d1c0b5e9a34"  # must never reach a file the model's commands can write
REFUND = (
    "refund-policy",
    "Answer questions about refunds, returns and receipts for store purchases.",
    "# Refund policy\n\nRefunds within 30 days with a receipt.\n",
)
GIFT = (
    "gift-cards",
    "Answer questions about gift cards, store credit balances and gift card refunds.",
    "# Gift cards\n\nGift cards never expire; balances show on the receipt.\n",
)
SHIPPING = ("shipping-times", "Explain delivery and shipping times for parcels.",
            "# Shipping\n\nParcels arrive in 3 to 5 working days.\n")  # fmt: skip
# Routing cases: (id, prompt, expect). The two near misses share more words with the other
# refund-related description than with their own, so a model choosing by description misroutes
# them: refund-policy and gift-cards collide twice.
ROUTING = [
    ("refund-receipts", "Can I get refunds on store purchases without receipts?",
     ["refund-policy"]),
    ("refund-returns", "How do returns of store purchases work?", ["refund-policy"]),
    ("gift-balance", "How do I check gift card balances?", ["gift-cards"]),
    ("gift-credit", "Can gift cards be used for store credit?", ["gift-cards"]),
    ("near-credit", "Refunds on store credit returns with receipts?", ["gift-cards"]),
    ("near-gift-refund", "Gift card refunds for store purchases?", ["refund-policy"]),
    ("ship-parcels", "How long does delivery of parcels take?", ["shipping-times"]),
    ("ship-abroad", "What are shipping times for delivery abroad?", ["shipping-times"]),
    ("none-haiku", "Write a haiku about autumn leaves.", []),
    ("none-code", "How do I reverse a linked list in Python?", []),
]  # fmt: skip
REFUND_PROMPT = ROUTING[0][1]
ANSWER_FILE = "answer.md"
# A verifier reading the agent's file: passes only when it holds the skill's instruction.
VERIFIER = [sys.executable, "-c", "import sys; t = open('answer.md').read(); "
            "sys.exit(0 if '30 days' in t else 1)"]  # fmt: skip


def _skills(root: Path) -> list[Path]:
    return [write_skill(root, name, desc, body) for name, desc, body in (REFUND, GIFT, SHIPPING)]


def _env(tmp_path: Path, base: Mapping[str, str]) -> dict[str, str]:
    """The caller's environment: the scripted model's endpoint and key, a private TMPDIR (so
    leftover workspaces are visible) and a credential-like variable of the caller's own."""
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_"))}
    env.update(base, TMPDIR=str(tmpdir), DEPLOY_CREDENTIAL="cred-5b0e77")
    return env


def _run(args: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", *args],
        capture_output=True, text=True, timeout=600, env=dict(env),
    )  # fmt: skip


@dataclass(frozen=True)
class Scripted:
    """One agent CLI and its scripted model: ``serve(best_only, write_answer, dump)`` starts the
    model (``dump``: first run ``env > env.txt`` with the shell tool) and yields the runner
    command and the caller's environment."""

    name: str
    serve: Callable[[Path, bool, str | None, bool], contextlib.AbstractContextManager[Any]]
    write_tool: str  # the agent's own file-writing tool, and its path argument
    path_arg: str
    shell_tool: str
    skill_tool: str
    # Where the runner installs skills natively, as the agent tells the model (None: the agent
    # lists names and descriptions only)
    skills_folder: str | None
    # {skill name: listed location} of every conversation's first request to the model
    listings: Callable[[Any], list[dict[str, str]]]


def _gemini_listings(model: fake_gemini.FakeGemini) -> list[dict[str, str]]:
    firsts = [r for r in model.seen if r.model_turns == 0 and not r.wants_json]
    return [{s.name: s.location or "" for s in r.skills} for r in firsts]


def _opencode_listings(model: fake_openai_chat.FakeChat) -> list[dict[str, str]]:
    conversations = [fake_openai_chat.parse_request(body) for body in model.requests]
    firsts = [c for c in conversations if not c.steps and not c.title_request]
    return [{s.name: s.location for s in c.skills} for c in firsts]


@contextlib.contextmanager
def _gemini(
    tmp_path: Path, best_only: bool, write: str | None, dump: bool
) -> Iterator[tuple[str, dict[str, str], Any]]:
    first = ({"functionCall": {"name": "run_shell_command", "args": {"command": "env > env.txt"}}},)
    behaviour = fake_gemini.Behaviour(
        best_only=best_only, write_answer=write, first_calls=first if dump else ()
    )
    with fake_gemini.FakeGemini(behaviour) as model:
        runner = (
            f"{sys.executable} -m skill_evals runner gemini "
            f"--bin {agent_binary('gemini')} --model gemini-2.5-flash"
        )
        base = {"GEMINI_API_KEY": KEY, "GOOGLE_GEMINI_BASE_URL": model.base_url}
        yield runner, _env(tmp_path, base), model


@contextlib.contextmanager
def _opencode(
    tmp_path: Path, best_only: bool, write: str | None, dump: bool
) -> Iterator[tuple[str, dict[str, str], Any]]:
    call = fake_openai_chat.Call("bash", {"command": "env > env.txt", "description": "Env"})
    behaviour = fake_openai_chat.Behaviour(
        best_only=best_only, write_answer=write, first=(call,) if dump else ()
    )
    with fake_openai_chat.FakeChat(behaviour) as model:
        providers = tmp_path / "providers.json"
        options = {"baseURL": model.base_url, "apiKey": "{env:FAKE_MODEL_KEY}"}
        provider = {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
                    "models": {"m1": {}}, "options": options}  # fmt: skip
        providers.write_text(json.dumps({"fake": provider}), encoding="utf-8")
        runner = (
            f"{sys.executable} -m skill_evals runner opencode --bin {agent_binary('opencode')} "
            f"--model fake/m1 --provider-config {providers}"
        )
        env = _env(tmp_path, {"FAKE_MODEL_KEY": KEY})
        env = {k: v for k, v in env.items() if not k.startswith(("OPENCODE_", "XDG_"))}
        yield runner, env, model


def _claude_listings(model: fake_anthropic.FakeAnthropic) -> list[dict[str, str]]:
    return [{name: "" for name in e.offered} for e in model.exchanges if e.turn == 0]


@contextlib.contextmanager
def _claude_code(
    tmp_path: Path, best_only: bool, write: str | None, dump: bool
) -> Iterator[tuple[str, dict[str, str], Any]]:
    # The scripted model always loads only the best-matching skill, so best_only holds anyway.
    first = (("Bash", {"command": "env > env.txt", "description": "Dump the environment"}),)
    with fake_anthropic.FakeAnthropic(first=first if dump else (), write_answer=write) as model:
        runner = (
            f"{sys.executable} -m skill_evals runner claude-code --bin {agent_binary('claude')}"
        )
        base = {**model.env(), "ANTHROPIC_API_KEY": KEY}
        env = {k: v for k, v in _env(tmp_path, base).items()
               if k in base or not k.startswith(("ANTHROPIC_", "CLAUDE_"))}  # fmt: skip
        yield runner, env, model


def _codex_listings(model: fake_openai_responses.FakeResponses) -> list[dict[str, str]]:
    return [{s.name: s.path or "" for s in seen.skills} for seen in model.seen
            if not seen.tool_outputs]  # fmt: skip


@contextlib.contextmanager
def _codex(
    tmp_path: Path, best_only: bool, write: str | None, dump: bool
) -> Iterator[tuple[str, dict[str, str], Any]]:
    behaviour = fake_openai_responses.Behaviour(
        best_only=best_only, write_answer=write, first=("env > env.txt",) if dump else ()
    )
    with fake_openai_responses.FakeResponses(behaviour) as model:
        runner = (
            f"{sys.executable} -m skill_evals runner codex "
            f"--bin {agent_binary('codex')} --model fake-model"
        )
        env = _env(tmp_path, {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": model.base_url})
        yield runner, {k: v for k, v in env.items() if not k.startswith("CODEX_")}, model


@contextlib.contextmanager
def _pi(
    tmp_path: Path, best_only: bool, write: str | None, dump: bool
) -> Iterator[tuple[str, dict[str, str], Any]]:
    """pi speaks the chat-completions API of OpenCode's scripted model; its tools name the file
    ``path`` and it has no skill tool: the model loads a skill by reading the listed SKILL.md."""
    call = fake_openai_chat.Call("bash", {"command": "env > env.txt"})
    behaviour = fake_openai_chat.Behaviour(
        best_only=best_only, write_answer=write, first=(call,) if dump else (),
        load_with="read", path_arg="path",
    )  # fmt: skip
    with fake_openai_chat.FakeChat(behaviour) as model:
        runner = f"{sys.executable} -m skill_evals runner pi --bin {agent_binary('pi')} --model m1"
        env = _env(tmp_path, {"SKILL_EVALS_PI_BASE_URL": model.base_url,
                              "SKILL_EVALS_PI_API_KEY": KEY})  # fmt: skip
        env = {k: v for k, v in env.items() if not k.startswith("PI_")}
        yield runner, env, model


def _copilot_listings(model: fake_copilot_model.FakeCopilotModel) -> list[dict[str, str]]:
    firsts = [fake_copilot_model.parse(body) for body in model.requests]
    return [dict(r.listed) for r in firsts if r.turns == 0]


@contextlib.contextmanager
def _copilot(
    tmp_path: Path, best_only: bool, write: str | None, dump: bool
) -> Iterator[tuple[str, dict[str, str], Any]]:
    first = (("bash", {"command": "env > env.txt", "description": "Dump the environment"}),)
    behaviour = fake_copilot_model.Behaviour(
        best_only=best_only, write_answer=write, first=first if dump else ()
    )
    with fake_copilot_model.FakeCopilotModel(behaviour) as model:
        runner = (
            f"{sys.executable} -m skill_evals runner copilot "
            f"--bin {agent_binary('copilot')} --model claude-sonnet-4"
        )
        base = {"COPILOT_PROVIDER_BASE_URL": model.url, "COPILOT_PROVIDER_TYPE": "anthropic",
                "COPILOT_PROVIDER_API_KEY": KEY}  # fmt: skip
        env = _env(tmp_path, base)
        yield (
            runner,
            {k: v for k, v in env.items() if k in base or not k.startswith("COPILOT_")},
            model,
        )


@contextlib.contextmanager
def _qwen(
    tmp_path: Path, best_only: bool, write: str | None, dump: bool
) -> Iterator[tuple[str, dict[str, str], Any]]:
    call = fake_openai_chat.Call("run_shell_command", {"command": "env > env.txt"})
    behaviour = fake_qwen.Behaviour(
        best_only=best_only, write_answer=write, first=(call,) if dump else ()
    )
    # A short TMPDIR (kept until the tests end: the checks look there after the run): Qwen Code
    # writes no chat log for a working directory past 255 characters.
    short = str(fake_qwen.link_short_tmpdir(tmp_path).resolve())  # the sandbox sees this path
    with fake_qwen.FakeQwenModel(behaviour) as model:
        runner = (
            f"{sys.executable} -m skill_evals runner qwen --bin {agent_binary('qwen')} --model m1"
        )
        env = _env(tmp_path, {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": model.base_url})
        env["TMPDIR"] = short
        yield runner, {k: v for k, v in env.items() if not k.startswith("QWEN_")}, model


AGENTS = [
    Scripted("gemini", _gemini, "write_file", "file_path", "run_shell_command", "activate_skill",
             ".gemini/skills/", _gemini_listings),
    Scripted("opencode", _opencode, "write", "filePath", "bash", "skill", ".opencode/skills/",
             _opencode_listings),
    Scripted("claude-code", _claude_code, "Write", "file_path", "Bash", "Skill", None,
             _claude_listings),
    # Codex names its records by kind: apply_patch edits are `file_change`, commands (skill
    # reads included: it has no skill tool) `command_execution`.
    Scripted("codex", _codex, "file_change", "changes", "command_execution",
             "command_execution", ".codex/skills/", _codex_listings),
    # pi: no skill tool (a load is a `read` of the SKILL.md), skills passed with --skill from the
    # runner's private skills/ folder, never the project; listings read as OpenCode's.
    Scripted("pi", _pi, "write", "path", "bash", "read", "/skills/", _opencode_listings),
    # Copilot lists each skill with where it comes from ("project"), not its path.
    Scripted("copilot", _copilot, "create", "path", "bash", "skill", None, _copilot_listings),
    # Qwen Code, like Copilot, lists where a skill comes from ("project"), not its path.
    Scripted("qwen", _qwen, "write_file", "file_path", "run_shell_command", "skill", None,
             lambda model: model.listings()),
]  # fmt: skip


# test file → the agents it runs, balanced by their cost (OpenCode's CLI is the slowest).
FILES = {
    "test_catalog_and_work_opencode.py": ("opencode",),
    "test_catalog_and_work_qwen_codex.py": ("qwen", "codex"),
    "test_catalog_and_work_copilot_claude.py": ("copilot", "claude-code"),
    "test_catalog_and_work_gemini_pi.py": ("gemini", "pi"),
}


def agents_of(test_file: str) -> list[Any]:
    """The agents ``test_file`` (a key of FILES) runs, as ``pytest.param`` ids by name."""
    by_name = {agent.name: agent for agent in AGENTS}
    return [pytest.param(by_name[name], id=name) for name in FILES[test_file]]


def _check_routing(report: dict[str, Any], proc: subprocess.CompletedProcess[str]) -> None:
    assert report["runner"]["failures"] == [], proc.stderr
    loads = {c["id"]: c["loaded"][0] for c in report["caseResults"]}
    assert loads["refund-receipts"] == ["refund-policy"]
    assert loads["gift-balance"] == ["gift-cards"] and loads["ship-abroad"] == ["shipping-times"]
    assert loads["near-credit"] == ["refund-policy"] and loads["near-gift-refund"] == ["gift-cards"]
    assert loads["none-haiku"] == [] and loads["none-code"] == []
    assert report["accuracy"] == pytest.approx(8 / 10)
    (collision,) = report["collisions"]
    assert {collision["a"], collision["b"]} == {"gift-cards", "refund-policy"}
    assert collision["count"] == 2


def routes_across_the_whole_catalog(agent: Scripted, tmp_path: Path) -> None:
    """`skill-evals route` over the whole catalog: the expected loads, accuracy and the one
    collision; every conversation listed each skill's native copy; no workspace left."""
    skills = _skills(tmp_path / "skills")
    cases = write_jsonl(tmp_path / "routing.jsonl",
                        [{"id": i, "prompt": p, "expect": e} for i, p, e in ROUTING])  # fmt: skip
    report_path = tmp_path / "route.json"
    with agent.serve(tmp_path, True, None, False) as (runner, env, model):
        args = ["route", *(a for s in skills for a in ("--skill", str(s))), "--cases", str(cases),
                "--runner", runner, "--trials", "1", "--jobs", "2",
                "--report", str(report_path)]  # fmt: skip
        proc = _run(args, env)
    report = json.loads(report_path.read_text(encoding="utf-8"))
    _check_routing(report, proc)
    assert "gift-cards" in proc.stdout and "refund-policy" in proc.stdout  # top collisions
    # Every conversation had the whole catalog installed natively: the agent itself listed each
    # skill's copy in the project's skill folder to the model.
    listings = agent.listings(model)
    assert len(listings) == len(ROUTING)
    for listed in listings:
        for name in ("refund-policy", "gift-cards", "shipping-times"):
            assert name in listed, name
            if agent.skills_folder is not None:
                assert f"{agent.skills_folder}{name}/SKILL.md" in listed[name], name
    assert workspaces_in(tmp_path / "tmpdir") == []


# With a fixture and checks; the rest of WORK_ITEMS are trigger-only (one task case proves what
# every task case would: each is judged on its own).
TASK_CASES = 1
WORK_ITEMS = ("shoes", "jacket", "lamp", "kettle", "scarf", "chair", "mug", "desk", "tent", "bag")


def _work_suite(tmp_path: Path, agent: Scripted) -> Path:
    """Ten cases (the engine's minimum) asking about refunds; the first TASK_CASES in a fixture
    project, judged by the verifier and a tool_called check on the agent's write tool, the
    others trigger-only (so `--arms auto` runs `without` for the task cases and a spot-check)."""
    fixture = tmp_path / "evals" / "project"
    fixture.mkdir(parents=True)
    (fixture / "README.md").write_text("a project\n", encoding="utf-8")
    called: dict[str, Any] = {"check": "tool_called", "tool": agent.write_tool}
    # a relative path, the same in every workspace (Qwen Code's write_file takes absolute ones)
    if agent.path_arg == "file_path" and agent.name != "qwen":
        called["input"] = {agent.path_arg: ANSWER_FILE}
    task = [{"check": "command", "run": VERIFIER}, called]
    return write_jsonl(
        tmp_path / "evals" / "cases.jsonl",
        [{"id": f"write-{item}", "prompt": f"Can I get refunds on store purchases of a {item} "
          "without receipts?", "expectTrigger": True}
         | ({"fixture": "project", "task": task} if index < TASK_CASES else {})
         for index, item in enumerate(WORK_ITEMS)],
    )  # fmt: skip


def works_in_the_engine_workspace(agent: Scripted, tmp_path: Path) -> None:
    """The model runs a shell command (its environment dumped into the workspace), loads the
    skill, writes its answer with its own write tool; the verifier passes in `with` only, the
    tool_called check in both; the kept workspace holds the fixture plus the agent's files."""
    skill = write_skill(tmp_path / "skills", *REFUND)
    cases = _work_suite(tmp_path, agent)
    kept = tmp_path / "kept"
    with agent.serve(tmp_path, False, ANSWER_FILE, True) as (runner, env, _):
        proc = _run(["test", "--skill", str(skill), "--cases", str(cases), "--runner", runner,
                     "--trials", "1", "--jobs", "4", "--format", "json", "--arms", "auto",
                     "--keep-workspaces", str(kept), *PYTHON_SANDBOX_PATH], env)  # fmt: skip
    report = json.loads(proc.stdout)
    assert report["runner"]["failures"] == [], proc.stderr
    assert len(report["caseResults"]) == len(WORK_ITEMS)
    # `without` only where a task needs it, plus the isolation spot-check of 3 trigger-only cases
    assert report["runner"]["invocations"] == len(WORK_ITEMS) + TASK_CASES + 3
    for case in report["caseResults"][:TASK_CASES]:
        checks = {c["check"]: (c["with"], c["without"]) for c in case["checks"]}
        assert checks["command"] == ([True], [False]), case["id"]
        assert checks["tool_called"] == ([True], [True]), case["id"]
    assert report["task"]["difference"] == 1.0
    for variant in ("with", "without"):
        work = kept / "write-shoes" / "1" / variant
        left = {p.relative_to(work).as_posix() for p in work.rglob("*")}
        assert left == {ANSWER_FILE, "README.md", "env.txt"}  # no skill copy, no agent config
        dumped = (work / "env.txt").read_text(encoding="utf-8")
        assert KEY not in dumped and "cred-5b0e77" not in dumped and "PWD=" in dumped
    assert "30 days" in (kept / "write-shoes" / "1" / "with" / ANSWER_FILE).read_text("utf-8")
    assert workspaces_in(tmp_path / "tmpdir") == []


def read_only_refuses_edits_and_commands(agent: Scripted, tmp_path: Path) -> None:
    """`--read-only`: the skill loads, the shell and write tools are refused or not offered,
    the engine's workspace stays empty."""
    skill = write_skill(tmp_path / "skills", *REFUND)
    work = tmp_path / "W"
    work.mkdir()
    with agent.serve(tmp_path, False, ANSWER_FILE, True) as (runner, env, model):
        env.update(EVALGATE_SKILL_VARIANT="with", EVALGATE_SKILL_DIR=str(skill),
                   SKILL_EVALS_WORKSPACE=str(work))  # fmt: skip
        env[VERSION_CHECKED_VAR] = "1"  # as under the engine (see e2e.run_runner_cli)
        proc = subprocess.run(
            [*runner.split(), "--read-only"], input=REFUND_PROMPT, capture_output=True,
            text=True, timeout=180, env=env,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    line = json.loads(proc.stdout.splitlines()[-1])
    assert line["invokedSkills"] == ["refund-policy"]
    calls = [(c["name"], c["ok"]) for c in line["toolCalls"]]
    assert (agent.skill_tool, True) in calls
    # Neither the environment dump nor the answer file got written (a skill read may be a
    # shell command too: Codex's).
    edits = [
        c
        for c in line["toolCalls"]
        if c["name"] in (agent.shell_tool, agent.write_tool)
        and ("env.txt" in json.dumps(c["input"]) or ANSWER_FILE in json.dumps(c["input"]))
    ]
    assert not any(c["ok"] for c in edits)
    if isinstance(model, fake_openai_chat.FakeChat):
        # OpenCode and pi do not even offer denied tools (a real model cannot call them)
        offered = {t["function"]["name"] for r in model.requests for t in r.get("tools") or []}
        assert agent.skill_tool in offered
        assert not offered & {agent.shell_tool, agent.write_tool, "edit"}
    elif isinstance(model, fake_openai_responses.FakeResponses):
        # Codex's sandbox refuses both and the model is told so; Codex may record no event for
        # a command or patch its sandbox refused
        shown = [o for seen in model.seen for o in seen.tool_outputs]
        assert any("Read-only file system" in o for o in shown)
        assert any("patch rejected" in o for o in shown)
    else:  # Gemini CLI offers them and denies each call: the model is told so
        assert calls == [(agent.shell_tool, False), (agent.skill_tool, True),
                         (agent.write_tool, False)]  # fmt: skip
    assert list(work.iterdir()) == []  # the engine's workspace is not the project then
