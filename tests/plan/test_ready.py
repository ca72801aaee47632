"""Decided before anything starts, naming what to fix: a built-in runner whose agent CLI is
missing or not executable, a built-in judge or proposer whose key is unset (exit 7);
`runner opencode` (or `runner copilot`) without a model, a --credential whose variable is unset
(exit 5); `runner copilot` without its provider's URL (exit 7). The real
CLI; a counting runner logs every invocation, so "nothing started" is a file that stays
empty. Unsandboxed (--sandbox off): the counting log lies outside any sandbox. `test` and
`improve` first, then `route` (the runner and --credential checks; it has no judge or
proposer)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, write_jsonl, write_skill

COUNTING = REPO / "tests" / "runners" / "counting.sh"
KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "MY_KEY")


def _setup(tmp_path: Path, judged: bool = False) -> tuple[Path, Path, dict[str, str]]:
    skill = write_skill(tmp_path / "skills")
    task = {"check": "judge", "rubric": "Is it right?"} if judged else None
    cases = [
        {"id": f"c{i}", "prompt": f"refund question {i} about {chr(97 + i)}",
         "expectTrigger": i < 5, **({"task": task} if task else {})}
        for i in range(10)
    ]  # fmt: skip
    log = tmp_path / "invocations.log"
    dropped = ("SKILL_EVALS_SANDBOX", *KEYS)
    env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("COPILOT_")}
    env["COUNTING_LOG"] = str(log)
    return skill, write_jsonl(tmp_path / "cases.jsonl", cases), env


def _cli(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", *args, "--sandbox", "off"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip


def _run(
    tmp_path: Path, command: str, runner: str, *args: str, judged: bool = False
) -> subprocess.CompletedProcess[str]:
    """``command`` (test or improve) over the counting suite with ``runner`` and ``args``."""
    skill, cases, env = _setup(tmp_path, judged=judged)
    return _cli(
        tmp_path, env, command, "--skill", str(skill), "--cases", str(cases), "--runner", runner,
        *args,
    )  # fmt: skip


# Built-in runners that cannot start: (runner, exit code, what stderr says); {missing},
# {plain} and {fake} stand for the places of :func:`_places`.
_UNSTARTABLE = [
        ("skill-evals runner claude-code --bin {missing}", 7,
         "--runner: the claude-code CLI '{missing}' is missing or not executable"),
        ("skill-evals runner codex --bin {plain}", 7,
         "--runner: the codex CLI '{plain}' is missing or not executable"),
        ("skill-evals runner opencode --bin {fake}", 5,
         "--runner: skill-evals runner opencode needs --model provider/model"),
]  # fmt: skip


def _places(tmp_path: Path) -> dict[str, str]:
    """A missing program, a file that is not executable and the counting runner."""
    (tmp_path / "plain").write_text("not a program\n")  # exists, not executable
    return {
        "missing": str(tmp_path / "no" / "claude"),
        "plain": str(tmp_path / "plain"),
        "fake": str(COUNTING),
    }


@pytest.mark.parametrize(
    ("runner", "code", "said"),
    [
        *_UNSTARTABLE,
        ("skill-evals runner copilot --bin {fake}", 5,
         "--runner: skill-evals runner copilot needs --model (or COPILOT_MODEL set)"),
        ("skill-evals runner copilot --bin {fake} --model m", 7,
         "--runner: skill-evals runner copilot needs COPILOT_PROVIDER_BASE_URL"),
    ],
)  # fmt: skip
def test_a_runner_that_cannot_start_is_refused_first(
    tmp_path: Path, runner: str, code: int, said: str
) -> None:
    places = _places(tmp_path)
    proc = _run(tmp_path, "test", runner.format(**places))
    assert proc.returncode == code, proc.stderr
    assert said.format(**places) in proc.stderr
    assert not (tmp_path / "invocations.log").exists()


@pytest.mark.parametrize(
    ("provider", "said"),
    [
        ({"COPILOT_PROVIDER_BASE_URL": "api.anthropic.com"},
         "COPILOT_PROVIDER_BASE_URL must be an http:// or https:// URL"),
        ({"COPILOT_PROVIDER_BASE_URL": "https://x.test", "COPILOT_PROVIDER_TYPE": "azure"},
         "COPILOT_PROVIDER_TYPE must be anthropic or openai"),
    ],
)  # fmt: skip
def test_a_copilot_provider_every_invocation_would_refuse_is_refused_first(
    tmp_path: Path, provider: dict[str, str], said: str
) -> None:
    """Refused once before anything starts (exit 5), not once per invocation."""
    skill, cases, env = _setup(tmp_path)
    runner = f"skill-evals runner copilot --bin {COUNTING} --model m"
    proc = _cli(
        tmp_path, {**env, **provider}, "test", "--skill", str(skill), "--cases", str(cases),
        "--runner", runner,
    )  # fmt: skip
    assert proc.returncode == 5, proc.stderr
    assert f"--runner: skill-evals runner copilot: {said}" in proc.stderr
    assert not (tmp_path / "invocations.log").exists()


# The agent's own refusals (its plug-in's check), taken once before anything starts: each
# failed every invocation the same way before.
_AGENT_REFUSALS = [
    ("qwen", "", 7, "skill-evals runner qwen: no API key: set OPENAI_API_KEY"),
    ("gemini", "", 7, "skill-evals runner gemini: no API key: set GEMINI_API_KEY"),
    ("codex", "", 7, "skill-evals runner codex: no API key: set CODEX_API_KEY or OPENAI_API_KEY"),
    ("pi", "--model anthropic/claude-x", 7,
     "skill-evals runner pi: no API key: set SKILL_EVALS_PI_API_KEY or the provider's variable"),
    ("codex", "--max-turns 3", 5, "skill-evals runner codex: --max-turns: codex exec has no "
     "turn limit; remove the option"),
    ("pi", "--delivery mcp", 5, "skill-evals runner pi: --delivery mcp: pi has no MCP support"),
]  # fmt: skip


@pytest.mark.parametrize(("agent", "options", "code", "said"), _AGENT_REFUSALS)
def test_an_agents_own_refusal_is_taken_before_anything_starts(
    tmp_path: Path, agent: str, options: str, code: int, said: str
) -> None:
    skill, cases, env = _setup(tmp_path)
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL"):
        env.pop(name, None)
    runner = f"skill-evals runner {agent} --bin {COUNTING} {options}"
    proc = _cli(tmp_path, env, "test", "--skill", str(skill), "--cases", str(cases),
                "--runner", runner)  # fmt: skip
    assert proc.returncode == code, proc.stderr
    assert f"--runner: {said}" in proc.stderr
    assert not (tmp_path / "invocations.log").exists()


def test_a_builtin_judge_without_its_key_is_refused_first(tmp_path: Path) -> None:
    judge = "skill-evals judge anthropic --model m"
    proc = _run(tmp_path, "test", str(COUNTING), "--judge", judge, judged=True)
    assert proc.returncode == 7, proc.stderr
    assert (
        "--judge: skill-evals judge anthropic needs ANTHROPIC_API_KEY, which is not set"
        in proc.stderr
    )
    assert not (tmp_path / "invocations.log").exists()


def test_a_builtin_proposer_without_its_key_is_refused_first(tmp_path: Path) -> None:
    proposer = "skill-evals propose openai --model m"
    proc = _run(tmp_path, "improve", str(COUNTING), "--proposer", proposer)
    assert proc.returncode == 7, proc.stderr
    assert "--proposer: skill-evals propose openai needs OPENAI_API_KEY" in proc.stdout
    assert not (tmp_path / "invocations.log").exists()


def test_a_credential_whose_variable_is_unset_is_refused_first(tmp_path: Path) -> None:
    credential = "MY_KEY,bearer,http://127.0.0.1:9"
    proc = _run(tmp_path, "test", str(COUNTING), "--credential", credential)
    assert proc.returncode == 5, proc.stderr
    assert "MY_KEY" in proc.stderr
    assert not (tmp_path / "invocations.log").exists()


def test_the_same_runs_start_when_nothing_is_missing(tmp_path: Path) -> None:
    """The control: the counting runner does run (the log is the proof it would show)."""
    proc = _run(tmp_path, "test", str(COUNTING), "--trials", "1")
    assert proc.returncode == 0, proc.stderr
    assert len((tmp_path / "invocations.log").read_text().splitlines()) == 20


# ------------------------------------------------------------------------------------ route
# `route` takes the same decisions before its first invocation (it has no judge or proposer).


def _route(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    from tests._route_helpers import make_catalog, route_cases

    make_catalog(tmp_path)
    cases = route_cases(tmp_path / "routes.jsonl", {"a": ["alpha"], "b": ["beta"]})
    return _cli(tmp_path, env, "route", "--catalog", "skills/*", "--cases", str(cases), *args)


@pytest.mark.parametrize(
    ("runner", "code", "said"),
    [
        *_UNSTARTABLE,
        ("{fake} --credential", 5, "--credential: MY_KEY is not set"),
        ("{fake}", 0, ""),  # the control: the same runner does start (the log would show it)
    ],
)  # fmt: skip
def test_route_refuses_what_cannot_start_before_any_invocation(
    tmp_path: Path, runner: str, code: int, said: str
) -> None:
    _, _, env = _setup(tmp_path)
    places = _places(tmp_path)
    extra = ["--trials", "1"]
    if runner.endswith(" --credential"):
        runner = runner.removesuffix(" --credential")
        extra += ["--credential", "MY_KEY,bearer,http://127.0.0.1:9"]
    proc = _route(tmp_path, env, "--runner", runner.format(**places), *extra)
    assert proc.returncode == code, proc.stderr
    log = tmp_path / "invocations.log"
    if code:
        assert said.format(**places) in proc.stderr
        assert not log.exists()
    else:
        assert len(log.read_text().splitlines()) == 10  # 10 routing cases × 1 trial
