"""The OpenCode runner: fast tests of the transcript reader on captured OpenCode transcripts, of
the configuration, environment and retry guard with a stand-in binary, and end-to-end tests
(``-m agents``) that drive the real OpenCode CLI against the scripted chat-completions server."""

from __future__ import annotations

import json
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents import opencode, opencode_guard
from skill_evals.agents.base import AgentInvocation, AgentOptions, RunnerError, RunnerSetupError
from skill_evals.agents.content import SkillText
from skill_evals.agents.evidence import EvidencePatterns, Load, read_events
from skill_evals.agents.opencode import find_loads
from skill_evals.agents.opencode_config import auth_variables, load_provider_config
from skill_evals.agents.opencode_events import failure, summarize, tool_calls
from tests.agents.conftest import agent_binary, files_holding, workspaces_in
from tests.agents.e2e import (
    REFUND_DESCRIPTION,
    REFUND_PROMPT,
    caller_env,
    run_runner_cli,
    two_skills,
)
from tests.agents.fake_openai_chat import GENERIC_ANSWER, Behaviour, Call, FakeChat
from tests.conftest import assert_valid_report, write_jsonl, write_skill

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "opencode"
# The SKILL.md texts the captured transcripts were made with (capture.py is their one source).
_CAPTURE = runpy.run_path(str(FIXTURES / "capture.py"), run_name="capture")
CAPTURED = [SkillText.of("refund-policy", _CAPTURE["SKILL"]),
            SkillText.of("shipping-times", _CAPTURE["NEIGHBOUR"])]  # fmt: skip
REFUND_BODY = (
    "# Refund policy\n\nRefunds within 30 days with a receipt, to the original payment method.\n"
)
MODEL_KEY = "sk-opencode-test-4b8d1f3a5c7e9b2d"


def events(name: str) -> list[dict[str, Any]]:
    return read_events(FIXTURES / f"{name}.jsonl")


def lines_of(evs: list[dict[str, Any]], kind: str) -> list[int]:
    return [i for i, e in enumerate(evs) if e.get("type") == kind]


def loaded(loads: list[Load]) -> list[tuple[str, str, str]]:
    """(skill, delivery, source) of the loads that count, in order."""
    return [(x.skill, x.delivery, x.source) for x in loads if x.state == "loaded"]


# ------------------------------------------------------------------ parser, captured transcripts


def test_with_transcript_reports_the_completed_skill_tool_and_the_answer() -> None:
    evs = events("with")
    loads = find_loads(evs, EvidencePatterns(), CAPTURED)
    assert loaded(loads) == [("refund-policy", "native", "skill tool")]
    assert {x.agent for x in loads} == {"opencode"}
    assert loads[0].index == lines_of(evs, "tool_use")[0]
    run = summarize(evs)
    assert run.steps == 2 and run.finish == "stop" and run.error is None
    assert run.output.startswith("Following the refund-policy instructions: Refunds within 30")
    assert run.usage and run.input_tokens > 0 and run.output_tokens == 20


def test_without_transcript_reports_nothing() -> None:
    evs = events("without")
    assert find_loads(evs, EvidencePatterns(), CAPTURED) == []
    assert summarize(evs).output == GENERIC_ANSWER


def test_parallel_loads_keep_the_order_the_model_made_them_in() -> None:
    evs = events("neighbour")
    calls = tool_calls(evs)
    assert [c.input["name"] for c in calls] == ["refund-policy", "shipping-times"]
    assert [c.order[1] for c in calls] == [0, 1] and calls[0].order[0] == calls[1].order[0]
    loads = find_loads(evs, EvidencePatterns(), CAPTURED)
    assert [x.skill for x in loads if x.delivery == "native"] == [
        "refund-policy",
        "shipping-times",
    ]


def test_probes_that_only_name_the_path_or_fail_are_not_loads() -> None:
    """A skill-tool call for a skill that is not there, ``ls``/``test -f`` of its missing path
    (exit 1, "No such file or directory": OpenCode says "completed", the exit is in its
    metadata) and a read of a missing SKILL.md: none showed the skill to the model."""
    evs = events("probes")
    by_tool = {c.name: c for c in tool_calls(evs)}
    assert not by_tool["skill"].ok and "not found" in by_tool["skill"].result
    bash = by_tool["bash"]
    assert not bash.ok and "refund-policy/SKILL.md" in bash.input["command"]
    assert "No such file or directory" in bash.result
    assert not by_tool["read"].ok
    available = frozenset({"refund-policy"})
    loads = find_loads(evs, EvidencePatterns(), CAPTURED, available=available)
    assert loaded(loads) == []
    # Each probe is recorded as an attempt of the skill, never as a load, and each failed:
    # the bash command exited 1 on the missing file (failed, never unverified).
    assert [(x.skill, x.state, x.source) for x in loads] == [
        ("refund-policy", "failed", "skill tool"),
        ("refund-policy", "failed", "bash"),
        ("refund-policy", "failed", "read"),
    ]


def test_reads_of_skill_md_count_by_content() -> None:
    """No skill tool: a shell glob (`cat .opencode/skills/*/SKILL.md`) and a read of the file
    showed the skill to the model, so each counts, by content, in the order they were made."""
    loads = find_loads(events("reads"), EvidencePatterns(), CAPTURED)
    assert loaded(loads) == [
        ("refund-policy", "read", "bash result"),
        ("refund-policy", "read", "read result"),
    ]


def test_read_results_lose_opencode_line_numbers() -> None:
    """OpenCode's read tool prefixes lines with ``N: ``; the result handed to the content
    matcher is the file's text."""
    reads = [c for c in tool_calls(events("reads")) if c.name == "read"]
    assert reads and reads[0].ok
    assert "\nRefunds within 30 days with a receipt" in reads[0].result
    assert "1: ---" not in reads[0].result
    cat = next(c for c in tool_calls(events("reads")) if c.name == "bash")
    assert "Refunds within 30 days" in cat.result and "Parcels" not in cat.result


def test_mcp_tool_loads_are_mcp_evidence() -> None:
    loads = find_loads(events("mcp-with"), EvidencePatterns(), CAPTURED)
    assert loaded(loads)[0] == ("refund-policy", "mcp", "mcp tool load_refund_policy_skill")


def test_explicit_invocation_needs_the_prompt_and_a_started_step() -> None:
    evs = events("explicit")
    available = frozenset({"refund-policy"})
    prompt = "/refund-policy " + _CAPTURE["PROMPT"]
    loads = find_loads(evs, EvidencePatterns(), CAPTURED, prompt, available)
    assert loaded(loads) == [("refund-policy", "explicit", "/refund-policy command")]
    assert find_loads(evs, EvidencePatterns(), CAPTURED, None, available) == []
    assert find_loads([], EvidencePatterns(), CAPTURED, prompt, available) == []


def test_failures_are_classified_without_quoting_the_provider() -> None:
    run = summarize(events("api-error-401"))
    assert run.error is not None and run.steps == 0
    reason, retryable = failure(run.error)
    assert reason.startswith("auth refused (HTTP 401)") and not retryable
    assert "scripted" not in reason
    for status, start, again in (
        (429, "rate limited", True),
        (529, "overloaded", True),
        (503, "server error (HTTP 503)", True),
        (400, "model request refused (HTTP 400)", False),
    ):
        reason, retryable = failure({"name": "APIError", "data": {"statusCode": status}})
        assert reason.startswith(start) and retryable is again
    unknown = {"name": "UnknownError", "data": {"message": "x"}}
    reason, _ = failure(unknown, ["ProviderModelNotFoundError"])
    assert reason.startswith("model not found")
    reason, _ = failure({"name": "bad name\n", "data": {}})
    assert reason == "OpenCode failed (an unnamed error)"


def test_the_retry_cap_marker_is_read() -> None:
    run = summarize(events("retry-cap"))
    assert run.retry_cap is not None and run.retry_cap["kind"] == "server error"
    assert run.steps == 0 and run.error is None  # no step started: every request failed


def test_max_turns_transcript_has_the_forced_last_step() -> None:
    run = summarize(events("max-turns"))
    assert run.steps == 2 and run.finish == "stop"


def test_evidence_command_reads_opencode_transcripts() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "evidence", "--agent", "opencode",
         str(FIXTURES / "with.jsonl")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [x["skill"] for x in json.loads(proc.stdout)] == ["refund-policy"]


# ------------------------------------------------------------- configuration, with a stand-in


def stand_in(tmp_path: Path, transcript: Path) -> str:
    """An executable that records its argv, environment, stdin and what it finds in its project,
    then prints ``transcript``."""
    record = tmp_path / "record.json"
    script = tmp_path / "opencode"
    script.write_text(
        "#!" + sys.executable + "\n"
        "import json, os, sys\n"
        "root = os.environ['PWD']\n"
        "found = {p: os.path.exists(os.path.join(root, p)) for p in ('.git',\n"
        "         '.opencode/skills/refund-policy/SKILL.md', '.opencode/package-lock.json')}\n"
        "shell = json.loads(os.environ['OPENCODE_CONFIG_CONTENT'])['shell']\n"
        f"json.dump({{'argv': sys.argv, 'env': dict(os.environ), 'stdin': sys.stdin.read(),\n"
        f"           'found': found, 'cwd': os.getcwd(), 'shell': open(shell).read()}},\n"
        f"          open({str(record)!r}, 'w'))\n"
        f"sys.stdout.write(open({str(transcript)!r}).read())\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return str(script)


def replay(
    tmp_path: Path,
    transcript: str,
    variant: str = "with",
    prompt: str = REFUND_PROMPT,
    caller: Mapping[str, str] | None = None,
    **options: Any,
) -> tuple[Any, dict[str, Any]]:
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir(parents=True, exist_ok=True)
    skill = write_skill(tmp_path / "skills", body=REFUND_BODY)
    invocation = AgentInvocation("with" if variant == "with" else "without", skill, "c", 1, prompt)
    binary = stand_in(tmp_path, FIXTURES / f"{transcript}.jsonl")
    opts = AgentOptions(bin=binary, model="fake/m1", **options)
    env = {"PATH": os.environ["PATH"], "TMPDIR": str(private_tmp), **(caller or {})}
    old = tempfile.tempdir
    tempfile.tempdir = str(private_tmp)
    try:
        result = opencode.run(invocation, opts, env)
    finally:
        tempfile.tempdir = old
    return result, json.loads((tmp_path / "record.json").read_text(encoding="utf-8"))


def test_the_agent_gets_its_configuration_and_an_allowlisted_environment(tmp_path: Path) -> None:
    providers = tmp_path / "providers.json"
    providers.write_text(
        json.dumps({"fake": {"npm": "@ai-sdk/openai-compatible", "models": {"m1": {}},
                             "options": {"baseURL": "http://127.0.0.1:9/v1",
                                         "apiKey": "{env:MY_LLM_SECRET}"}}}),
        encoding="utf-8",
    )  # fmt: skip
    caller = {
        "MY_LLM_SECRET": "s1", "ANTHROPIC_API_KEY": "s2", "LC_ALL": "C.UTF-8",
        "OPENCODE_CONFIG_DIR": "/leak", "OPENCODE_CONFIG": "/leak.json",
        "OPENCODE_CONFIG_CONTENT": "{}", "XDG_CONFIG_HOME": "/leak", "CLAUDE_CONFIG_DIR": "/x",
        "npm_config_registry": "http://leak", "GIT_DIR": "/leak", "UNRELATED": "u",
        "HOME": "/home/caller",
    }  # fmt: skip
    result, seen = replay(tmp_path, "with", caller=caller, provider_config=providers)
    assert result.invoked_skills == ["refund-policy"] and result.exit_code == 0
    env = seen["env"]
    assert env["MY_LLM_SECRET"] == "s1" and env["ANTHROPIC_API_KEY"] == "s2"
    assert env["LC_ALL"] == "C.UTF-8"
    for leaked in ("OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG", "CLAUDE_CONFIG_DIR", "GIT_DIR",
                   "npm_config_registry", "UNRELATED"):  # fmt: skip
        assert leaked not in env
    workspace = Path(env["PWD"]).parent
    assert seen["cwd"] == env["PWD"] and env["HOME"].startswith(str(workspace))
    assert all(env[k].startswith(str(workspace)) for k in env if k.startswith("XDG_"))
    assert env["TMPDIR"] == str(workspace / "tmp") and env["OPENCODE_DB"] == ":memory:"
    assert seen["found"] == {
        ".git": True,
        ".opencode/skills/refund-policy/SKILL.md": True,
        ".opencode/package-lock.json": True,
    }
    config = json.loads(env["OPENCODE_CONFIG_CONTENT"])
    assert config["model"] == config["small_model"] == "fake/m1"
    assert config["provider"]["fake"]["options"]["apiKey"] == "{env:MY_LLM_SECRET}"
    assert config["permission"]["external_directory"] == "deny"
    assert config["permission"]["task"] == "deny" and config["permission"]["webfetch"] == "deny"
    assert config["permission"]["bash"] == config["permission"]["edit"] == "allow"
    assert config["autoupdate"] is False and config["share"] == "disabled"
    # The model's commands run through a wrapper that drops the credentials by name.
    wrapper = seen["shell"]
    assert "-u MY_LLM_SECRET" in wrapper and "-u ANTHROPIC_API_KEY" in wrapper
    assert "s1" not in wrapper and "s2" not in wrapper
    argv = seen["argv"]
    assert argv[1:6] == ["run", "--format", "json", "--model", "fake/m1"]
    assert "--title" in argv and "--command" not in argv
    assert seen["stdin"] == REFUND_PROMPT
    assert workspaces_in(tmp_path / "tmp") == []  # workspace removed


def test_a_slash_prompt_runs_the_skill_as_a_command_and_counts_as_explicit(
    tmp_path: Path,
) -> None:
    result, seen = replay(tmp_path, "explicit", prompt="/refund-policy  may I return this?")
    argv = seen["argv"]
    assert argv[argv.index("--command") + 1] == "refund-policy"
    assert seen["stdin"] == "may I return this?"
    assert result.invoked_skills == ["refund-policy"]
    # In `without` the skill is not installed: the prompt goes to the model as written.
    result, seen = replay(tmp_path / "w", "without", "without", "/refund-policy hello")
    assert "--command" not in seen["argv"] and seen["stdin"] == "/refund-policy hello"
    assert result.invoked_skills == []


def test_explicit_command_needs_an_available_name() -> None:
    available = frozenset({"refund-policy"})
    assert opencode.explicit_command("/refund-policy", available) == ("refund-policy", "")
    assert opencode.explicit_command("/refund-policyx hi", available) is None
    assert opencode.explicit_command(" /refund-policy hi", available) is None
    assert opencode.explicit_command("see /refund-policy", available) is None


@pytest.mark.parametrize(
    ("transcript", "options", "message", "retryable"),
    [
        ("api-error-401", {}, "auth refused (HTTP 401)", False),
        ("retry-cap", {}, "the model API failed twice (server error)", True),
        ("max-turns", {"max_turns": 2}, "turn limit reached (--max-turns 2)", False),
    ],
)
def test_void_runs_are_the_runners_own_reasons(
    tmp_path: Path, transcript: str, options: dict[str, Any], message: str, retryable: bool
) -> None:
    with pytest.raises(RunnerError) as info:
        replay(tmp_path, transcript, prompt="SECRET-PROMPT refunds", **options)
    assert message in str(info.value) and "SECRET-PROMPT" not in str(info.value)
    assert "scripted" not in str(info.value) and info.value.retryable is retryable
    line = json.loads(info.value.to_line())
    assert line == {"runnerError": str(info.value), "retryable": retryable}


def test_bad_options_are_refused_before_anything_runs(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    invocation = AgentInvocation("with", skill, "c", 1, "p")
    env = {"PATH": os.environ["PATH"]}
    for model in (None, "no-provider", "/m", "p/"):
        with pytest.raises(RunnerSetupError, match="--model: OpenCode needs provider/model"):
            opencode.run(invocation, AgentOptions(bin=sys.executable, model=model), env)
    bundled = write_skill(tmp_path / "b", "customize-opencode")
    with pytest.raises(RunnerSetupError, match="'customize-opencode' is a skill OpenCode ships"):
        opencode.run(
            AgentInvocation("with", bundled, "c", 1, "p"),
            AgentOptions(bin=sys.executable, model="p/m"),
            env,
        )


def test_the_engine_refuses_a_tested_skill_named_like_the_bundled_one(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills", "customize-opencode")
    cases = write_jsonl(tmp_path / "cases.jsonl", [{"id": "a", "prompt": "hi"}])
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(cases), "--runner", "skill-evals runner opencode --model p/m"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 5, proc.stderr
    assert "bundles a skill of that name" in proc.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1]", "must be a non-empty JSON object of providers"),
        ("{}", "must be a non-empty JSON object of providers"),
        ('{"a": {}, "a": {}}', "duplicate key 'a'"),
        ("{", "not JSON (line 1"),
        ('{"bad id": {}}', "provider id 'bad id'"),
        ('{"p": []}', "provider.p: must be an object"),
        ('{"p": {"nmp": "x"}}', "provider.p: unknown key 'nmp'"),
        ('{"p": {"models": []}}', "provider.p.models: must be an object"),
        ('{"p": {"models": {"m": 1}}}', "provider.p.models.m: must be an object"),
        ('{"p": {"env": [1]}}', "provider.p.env: must be an array of strings"),
        ('{"p": {"options": {"baseURL": "ftp://x"}}}', "options.baseURL: must be an http"),
        ('{"p": {"options": {"apiKey": "sk-literal"}}}', 'options.apiKey: write "{env:NAME}"'),
    ],
)
def test_provider_config_is_checked_strictly(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "providers.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(RunnerSetupError) as info:
        load_provider_config(path)
    assert str(info.value).startswith(f"--provider-config {path}: ") and message in str(info.value)
    assert "sk-literal" not in str(info.value)


def test_provider_config_limits_and_references(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text('{"p": {"name": "' + "x" * 70000 + '"}}', encoding="utf-8")
    with pytest.raises(RunnerSetupError, match="larger than 64 KiB"):
        load_provider_config(big)
    with pytest.raises(RunnerSetupError, match="cannot read"):
        load_provider_config(tmp_path / "missing.json")
    good = tmp_path / "good.json"
    good.write_text(
        '{"p": {"options": {"apiKey": "{env:K1}", "headers": {"X": "{env:K2}"}}}}',
        encoding="utf-8",
    )
    providers, referenced = load_provider_config(good)
    assert referenced == ["K1", "K2"] and set(providers) == {"p"}
    assert auth_variables({"K2": "v", "OTHER": "o", "A_API_KEY": "k"}, referenced) == [
        "A_API_KEY",
        "K2",
    ]


# ----------------------------------------------------------------------------- the retry guard


def _fake_agent(tmp_path: Path, stderr_lines: list[str], status: int = 0) -> list[str]:
    script = tmp_path / "agent.py"
    script.write_text(
        "import sys, time\n"
        'print(\'{"type": "step_start"}\', flush=True)\n'
        f"for line in {stderr_lines!r}:\n"
        "    sys.stderr.write(line + '\\n'); sys.stderr.flush()\n"
        "time.sleep(0.2)\n"
        f"sys.exit({status})\n",
        encoding="utf-8",
    )
    return [sys.executable, str(script)]


def _guard(argv: list[str]) -> subprocess.CompletedProcess[str]:
    guard = Path(opencode_guard.__file__)
    return subprocess.run(
        [sys.executable, "-I", str(guard), *argv], capture_output=True, text=True, timeout=60
    )


STREAM_ERROR = (
    'timestamp=x level=ERROR message="stream error" providerID=p small=false agent=build '
    'error.error="AI_APICallError: {text}"'
)


def test_the_guard_stops_the_agent_at_the_second_failed_attempt(tmp_path: Path) -> None:
    argv = _fake_agent(tmp_path, [STREAM_ERROR.format(text="Too Many Requests")] * 3 + ["x"])
    done = _guard(argv)
    assert done.returncode == 0
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.strip()]
    assert lines[-1] == {"type": "skill_evals.retry_cap", "attempts": 2, "kind": "rate limit"}
    assert done.stderr.count("stream error") == 2  # the rest never came: the agent was ended


def test_the_guard_passes_status_and_names_logged_errors(tmp_path: Path) -> None:
    title = STREAM_ERROR.format(text="HTTP 500").replace("small=false", "small=true")
    line = 'level=ERROR message=failed error="ProviderModelNotFoundError: Model not found: p/m"'
    done = _guard(_fake_agent(tmp_path, [title, title, line], status=3))
    assert done.returncode == 3
    last = json.loads(done.stdout.splitlines()[-1])
    assert last == {"type": "skill_evals.errors", "names": ["ProviderModelNotFoundError"]}


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Rate limit reached for model", "rate limit"),
        ("Overloaded", "overloaded"),
        ("Internal Server Error", "server error"),
        ("fetch failed", "connection failed"),
        ("something odd", "retryable error"),
    ],
)
def test_guard_classification(text: str, kind: str) -> None:
    assert opencode_guard.classify(STREAM_ERROR.format(text=text).encode()) == kind


# ------------------------------------------------------------------- end to end, the real CLI


@pytest.fixture
def opencode_binary() -> str:
    return agent_binary("opencode")


@pytest.fixture
def skills(tmp_path: Path) -> dict[str, Path]:
    return two_skills(tmp_path, REFUND_BODY)


@pytest.fixture
def model() -> Iterator[FakeChat]:
    with FakeChat() as server:
        yield server


def runner_env(
    model: FakeChat, tmp_path: Path, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The caller's environment: a provider file for the scripted model, its key, a private
    TMPDIR (leftover workspaces are visible) and no OpenCode variables of the developer's."""
    providers = tmp_path / "providers.json"
    options = {"baseURL": model.base_url, "apiKey": "{env:FAKE_MODEL_KEY}"}
    provider = {"npm": "@ai-sdk/openai-compatible", "name": "Scripted", "models": {"m1": {}}}
    provider["options"] = options
    providers.write_text(json.dumps({"fake": provider}), encoding="utf-8")
    settings = {"FAKE_MODEL_KEY": MODEL_KEY, "SKILL_EVALS_PROVIDERS": str(providers)}
    return caller_env(tmp_path, ("OPENCODE_", "XDG_"), settings, extra)


def runner_args(binary: str, env: Mapping[str, str], *args: str) -> list[str]:
    """``skill-evals runner``'s arguments for OpenCode on the scripted model."""
    providers = env["SKILL_EVALS_PROVIDERS"]
    return ["opencode", "--bin", binary, "--model", "fake/m1", "--provider-config", providers,
            *args]  # fmt: skip


def runner_command(binary: str, env: Mapping[str, str], *args: str) -> list[str]:
    return [sys.executable, "-m", "skill_evals", "runner", *runner_args(binary, env, *args)]


def run_runner(
    binary: str, variant: str, skill: Path, env: Mapping[str, str], *args: str,
    prompt: str = REFUND_PROMPT,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:  # fmt: skip
    proc = run_runner_cli(runner_args(binary, env, *args), variant, skill, env, prompt, 300)
    line = json.loads(proc.stdout) if proc.returncode == 0 else {}
    return proc, line


def _plant(root: Path, *folders: str) -> None:
    for folder in folders:
        write_skill(root / folder, "refund-policy", REFUND_DESCRIPTION, "LEAKED-SKILL-BODY\n")


@pytest.mark.agents
def test_skills_and_instructions_from_home_ancestors_and_variables_do_not_leak(
    opencode_binary: str, skills: dict[str, Path], model: FakeChat, tmp_path: Path
) -> None:
    """Copies of the tested skill where OpenCode looks by default — the user's config dir, the
    Claude Code and agents compatibility dirs in HOME, a config dir and config file named by
    OPENCODE_* variables, `.opencode`/`.claude` folders above the workspace — and instruction
    files (AGENTS.md, CLAUDE.md, opencode.json `instructions`) there never reach `without`; a
    plain OpenCode run in the same places shows the plants are real."""
    home = tmp_path / "home"
    _plant(home, ".config/opencode/skills", ".claude/skills", ".agents/skills", "ocdir/skills")
    (home / ".config/opencode/AGENTS.md").write_text("LEAKED-GLOBAL-AGENTS\n", encoding="utf-8")
    (home / ".claude/CLAUDE.md").write_text("LEAKED-CLAUDE-MEMORY\n", encoding="utf-8")
    extra_config = tmp_path / "extra.json"
    extra_config.write_text(json.dumps({"instructions": [str(tmp_path / "i.md")]}), "utf-8")
    (tmp_path / "i.md").write_text("LEAKED-CONFIG-INSTRUCTIONS\n", encoding="utf-8")
    env = runner_env(model, tmp_path, {
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
        "OPENCODE_CONFIG_DIR": str(home / "ocdir"), "OPENCODE_CONFIG": str(extra_config),
        "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
    })  # fmt: skip
    tmpdir = Path(env["TMPDIR"])
    _plant(tmpdir, ".opencode/skills", ".claude/skills")
    (tmpdir / "AGENTS.md").write_text("LEAKED-ANCESTOR-AGENTS\n", encoding="utf-8")
    (tmpdir / "CLAUDE.md").write_text("LEAKED-ANCESTOR-CLAUDE\n", encoding="utf-8")

    proc, line = run_runner(opencode_binary, "without", skills["refund-policy"], env)
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == [] and line["output"] == GENERIC_ANSWER
    assert model.offered_names() == {"customize-opencode"}
    assert "LEAKED" not in json.dumps(model.requests)
    assert any(MODEL_KEY in credential for credential in model.credentials)
    assert workspaces_in(tmpdir) == []
    assert sorted(p.name for p in tmpdir.iterdir() if not p.name.startswith("skill-evals-")) == [
        ".claude", ".opencode", "AGENTS.md", "CLAUDE.md"]  # fmt: skip

    # Control: OpenCode left to its defaults in the same places sees the plants.
    project = tmpdir / "project"
    project.mkdir()
    config = {"provider": json.loads(Path(env["SKILL_EVALS_PROVIDERS"]).read_text("utf-8"))}
    control_env = {**env, "PWD": str(project), "OPENCODE_CONFIG_CONTENT": json.dumps(config),
                   "OPENCODE_DISABLE_MODELS_FETCH": "1", "npm_config_offline": "true"}  # fmt: skip
    del control_env["OPENCODE_DISABLE_PROJECT_CONFIG"]
    subprocess.run(
        [opencode_binary, "run", "--format", "json", "--model", "fake/m1", "--title", "c"],
        input=REFUND_PROMPT, capture_output=True, text=True, timeout=300, cwd=project,
        env=control_env,
    )  # fmt: skip
    seen = json.dumps(model.requests[-2:])
    for marker in ("LEAKED-ANCESTOR-AGENTS", "LEAKED-CONFIG-INSTRUCTIONS", "LEAKED-SKILL-BODY"):
        assert marker in seen, marker
    assert "refund-policy" in model.offered_names()


@pytest.mark.agents
def test_probes_that_name_the_skill_are_not_loads_in_without(
    opencode_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """A model that calls the skill tool for a skill that is not offered, runs `ls -l` and
    `test -f` on its would-be path and reads that missing SKILL.md: no load, so no false
    isolation breach; each call did happen and its result went back to the model."""
    probes = (
        Call("skill", {"name": "refund-policy"}),
        Call("bash", {"command": "ls -l {cwd}/.opencode/skills/refund-policy/SKILL.md; test -f "
                                 "{cwd}/.opencode/skills/refund-policy/SKILL.md && echo found",
                      "description": "Look for the skill"}),
        Call("read", {"filePath": "{cwd}/.opencode/skills/refund-policy/SKILL.md"}),
    )  # fmt: skip
    with FakeChat(Behaviour(first=probes)) as model:
        env = runner_env(model, tmp_path)
        proc, line = run_runner(opencode_binary, "without", skills["refund-policy"], env)
        conversations = model.conversations()
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == [] and line["output"] == GENERIC_ANSWER
    (step,) = conversations[-1].steps
    results = {tool: result for tool, _, result in step}
    assert "not found" in results["skill"] and "No such file" in results["bash"]
    assert "not found" in results["read"].lower()


@pytest.mark.agents
def test_reading_skill_md_without_the_skill_tool_counts_by_content(
    opencode_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """A model that never calls the skill tool but reads the SKILL.md — a shell glob, `cd` then
    `cat`, OpenCode's read tool — was shown the skill: each read counts, by content."""
    reads = (
        Call("bash", {"command": "cat .opencode/skills/*/SKILL.md", "description": "Read"}),
        Call("bash", {"command": "cd .opencode/skills/refund-policy && cat SKILL.md",
                      "description": "Read"}),
        Call("read", {"filePath": "{cwd}/.opencode/skills/refund-policy/SKILL.md"}),
    )  # fmt: skip
    with FakeChat(Behaviour(min_overlap=99, first=reads)) as model:
        env = runner_env(model, tmp_path)
        proc, line = run_runner(opencode_binary, "with", skills["refund-policy"], env)
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == ["refund-policy"] and "30 days" in line["output"]
    shown = [(e["delivery"], e["source"]) for e in line["evidence"] if e["state"] == "loaded"]
    assert shown == [("read", "bash result"), ("read", "read result")]


@pytest.mark.agents
def test_a_slash_prompt_loads_the_skill_explicitly(
    opencode_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    with FakeChat(Behaviour(min_overlap=99)) as model:
        env = runner_env(model, tmp_path)
        proc, line = run_runner(
            opencode_binary, "with", skills["refund-policy"], env,
            prompt="/refund-policy may I return this without a receipt?",
        )  # fmt: skip
        (conv,) = model.conversations()
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == ["refund-policy"]
    # OpenCode put the skill's body in front of the model, with the question after it.
    assert "Refunds within 30 days" in conv.prompt and conv.prompt.endswith("receipt?")


@pytest.mark.agents
def test_neighbour_and_fixture_skills_are_offered_and_commands_see_no_key(
    opencode_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """`without` with a neighbour and a fixture skill in `.claude/skills` (which OpenCode reads
    for Claude Code compatibility): both offered, the neighbour loaded and reported; the model's
    `env` command sees no credential; the kept workspace and the saved transcript hold no key."""
    fixture = tmp_path / "fixture"
    write_skill(fixture / ".claude" / "skills", "gift-cards", "Gift card balances and expiry.",
                "# Gift cards\n\nGift cards never expire.\n")  # fmt: skip
    behaviour = Behaviour(also_load=("shipping-times",), first=(Call("bash", {
        "command": "env", "description": "Show the environment"}),))  # fmt: skip
    transcripts = tmp_path / "saved"
    with FakeChat(behaviour) as model:
        env = runner_env(model, tmp_path, {"SKILL_EVALS_TRANSCRIPT_DIR": str(transcripts),
                                           "GITHUB_TOKEN": "gh-not-a-secret"})  # fmt: skip
        proc, line = run_runner(
            opencode_binary, "without", skills["refund-policy"], env,
            "--with-skill", str(skills["shipping-times"]), "--fixture", str(fixture),
            "--keep-workspace",
        )  # fmt: skip
        conversations = model.conversations()
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == ["shipping-times"]
    assert "3 to 5 working days" in line["output"]
    offered = {s.name for s in conversations[0].skills}
    assert offered == {"customize-opencode", "gift-cards", "shipping-times"}
    env_output = conversations[1].steps[0][0][2]
    assert "HOME=" in env_output and "PATH=" in env_output
    assert MODEL_KEY not in env_output and "gh-not-a-secret" not in env_output
    (kept,) = workspaces_in(Path(env["TMPDIR"]))
    assert files_holding([kept, transcripts], MODEL_KEY) == []
    assert (transcripts / "case.1.without.jsonl").is_file()


def _group_members(pgid: int) -> list[int]:
    """Live processes of a process group (Linux /proc)."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


@pytest.mark.agents
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_without_run_reading_a_concurrent_runs_copy_is_never_a_silent_pass(
    opencode_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """A `with` run hangs (its model never answers, so its workspace stays) while a `without`
    run's model looks for the other run's SKILL.md. Naming the path outright is denied by
    OpenCode itself (`external_directory`); through `$TMPDIR/../..` it escapes OpenCode's check.
    The workspaces are private (mode 700, random names), which stops other users; root reads
    them anyway, and then the content reaches the model and is reported — an isolation breach
    for the engine, never a silent pass. Killing the `with` runner's process group ends the
    guard and OpenCode with it."""
    tmpdir = tmp_path / "tmpdir"
    skill_md = "*/project/.opencode/skills/*/SKILL.md"
    looks = (
        Call("bash", {"command": f"cat {tmpdir}/*/{skill_md}", "description": "Look"}),
        Call("bash", {"command": f'cat "$TMPDIR"/../../{skill_md} 2>/dev/null',
                      "description": "Look"}),
    )  # fmt: skip
    with FakeChat(Behaviour(hang=True)) as hanging:
        env = runner_env(hanging, tmp_path)
        env.update(EVALGATE_SKILL_VARIANT="with", EVALGATE_SKILL_DIR=str(skills["refund-policy"]))
        proc = subprocess.Popen(
            runner_command(opencode_binary, env), stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True,
        )  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.write(REFUND_PROMPT.encode())
        proc.stdin.close()
        deadline = time.monotonic() + 240
        while not hanging.requests and time.monotonic() < deadline:
            time.sleep(0.2)
        assert hanging.requests, "the `with` run never called its model"
        with FakeChat(Behaviour(first=looks, min_overlap=99)) as model:
            done, line = run_runner(
                opencode_binary, "without", skills["refund-policy"], runner_env(model, tmp_path)
            )
            conversations = model.conversations()
        assert len(_group_members(proc.pid)) >= 3  # the runner, the guard, OpenCode
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 20
        while _group_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _group_members(proc.pid) == []
    assert done.returncode == 0, done.stderr
    (named, relative) = (result for _, _, result in conversations[-1].steps[0])
    assert "prevents you from using this specific tool call" in named  # OpenCode's own denial
    shown = relative
    if os.geteuid() == 0:
        assert "Refunds within 30 days" in shown
        assert line["invokedSkills"] == ["refund-policy"], line
        assert {"skill": "refund-policy", "state": "loaded", "delivery": "read",
                "source": "bash result"} in line["evidence"]  # fmt: skip
    else:
        assert "Refunds within 30 days" not in shown and line["invokedSkills"] == []


@pytest.mark.agents
def test_mcp_delivery_serves_the_skill_and_reports_it(
    opencode_binary: str, skills: dict[str, Path], model: FakeChat, tmp_path: Path
) -> None:
    env = runner_env(model, tmp_path)
    proc, line = run_runner(
        opencode_binary, "with", skills["refund-policy"], env, "--delivery", "mcp"
    )
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == ["refund-policy"] and "30 days" in line["output"]
    (first, *_) = model.conversations()
    assert {s.name: s.mcp_tool for s in first.skills}["refund-policy"] == (
        "skills_load_refund_policy_skill"
    )


@pytest.mark.agents
@pytest.mark.parametrize(
    ("status", "message", "retryable"),
    [
        (401, "auth refused (HTTP 401)", False),
        (500, "the model API failed twice (server error)", True),
    ],
)
def test_api_failures_are_the_runners_own_reasons(
    opencode_binary: str,
    skills: dict[str, Path],
    tmp_path: Path,
    status: int,
    message: str,
    retryable: bool,
) -> None:
    """A 401 fails at once; a 500 is retried by OpenCode once, then the guard ends it (OpenCode
    alone would retry five times over about a minute). Either way the runner's line says why."""
    with FakeChat(Behaviour(fail_status=status)) as model:
        env = runner_env(model, tmp_path)
        proc, line = run_runner(
            opencode_binary, "with", skills["refund-policy"], env,
            prompt="SECRET-PROMPT-TEXT about refunds",
        )  # fmt: skip
        attempts = len(model.requests)
    assert proc.returncode == 0 and set(line) == {"runnerError", "retryable"}, proc.stderr
    assert message in line["runnerError"] and line["retryable"] is retryable
    assert "SECRET-PROMPT-TEXT" not in proc.stdout + proc.stderr
    assert "scripted" not in proc.stdout + proc.stderr
    assert attempts == (1 if status == 401 else 2)
    assert workspaces_in(Path(env["TMPDIR"])) == []


@pytest.mark.agents
def test_turn_limit_is_a_runner_failure(
    opencode_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    with FakeChat(Behaviour(loop_tools=True)) as model:
        env = runner_env(model, tmp_path)
        proc, line = run_runner(
            opencode_binary, "with", skills["refund-policy"], env, "--max-turns", "2"
        )
        requests = len(model.requests)
    assert proc.returncode == 0, proc.stderr
    assert "turn limit reached (--max-turns 2)" in line["runnerError"]
    assert line["retryable"] is False and requests == 2


# 10 independent prompts (the minimum): 6 about refunds (trigger), 2 about shipping (the
# neighbour's), 2 unrelated. Refund tasks need the skill's "30 days"; the others pass in both
# variants. Expected: F1 = 1; uplift = 6 of 10 units improve = 0.6.
SUITE: list[tuple[str, str, bool, list[str]]] = [
    ("refund-1", REFUND_PROMPT, True, ["30 days"]),
    ("refund-2", "What are the rules for returns of store purchases?", True, ["30 days"]),
    ("refund-3", "Do I need receipts for refunds?", True, ["30 days"]),
    ("refund-4", "How long do refunds take for purchases made online?", True, ["30 days"]),
    ("refund-5", "Are returns accepted without receipts?", True, ["30 days"]),
    ("refund-6", "My store purchases broke, can I get refunds?", True, ["30 days"]),
    ("ship-1", "What are the shipping times for parcels?", False, ["3 to 5 working days"]),
    ("ship-2", "How long does delivery of parcels take?", False, ["3 to 5 working days"]),
    ("other-1", "How do I reverse a linked list in Python?", False, ["general answer"]),
    ("other-2", "Write a haiku about autumn leaves.", False, ["general answer"]),
]


@pytest.mark.agents
def test_full_skill_evals_run_through_opencode(
    opencode_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """Ten cases through the engine, F1 and uplift as expected. The model is rate limited (HTTP
    429) on the first four requests of one case: OpenCode retries once, the guard stops it at
    the second failure, the runner says "retryable", and the engine's --retries run it again."""
    with FakeChat(Behaviour(fail_status=429, fail_times=4, fail_prompt="autumn")) as model:
        _full_run(opencode_binary, skills, model, tmp_path)


def _full_run(
    opencode_binary: str, skills: dict[str, Path], model: FakeChat, tmp_path: Path
) -> None:
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {
                "id": case_id,
                "prompt": prompt,
                "expectTrigger": trigger,
                "task": {"check": "includes_all", "expected": expected},
                **({} if trigger else {"loaded": {"exclude": ["refund-policy"]}}),
            }
            for case_id, prompt, trigger, expected in SUITE
        ],
    )
    env = runner_env(model, tmp_path, {"SKILL_EVALS_TRANSCRIPT_DIR": str(tmp_path / "saved")})
    runner = " ".join(runner_command(opencode_binary, env, "--with-skill",
                                     str(skills["shipping-times"])))  # fmt: skip
    report_path = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skills["refund-policy"]),
         "--cases", str(cases), "--runner", runner, "--trials", "1", "--jobs", "2",
         "--timeout-ms", "300000", "--min-trigger-f1", "0.9", "--min-uplift", "0.1",
         "--report", str(report_path)],
        capture_output=True, text=True, timeout=1200, env=env,
    )  # fmt: skip
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert_valid_report(report)
    assert report["runner"]["failures"] == [], proc.stderr
    trigger = report["trigger"]
    assert (trigger["tp"], trigger["fp"], trigger["fn"], trigger["tn"]) == (6, 0, 0, 4)
    assert trigger["f1"] == 1.0
    task = report["task"]
    assert task["units"] == 10 and task["insufficient"] is False
    assert (task["with"]["passed"], task["without"]["passed"]) == (10, 4)
    assert task["difference"] == 0.6
    assert task["signTest"]["positive"] == 6 and task["signTest"]["negative"] == 0
    assert report["loading"]["violations"] == []
    assert report["runner"]["retried"] >= 1
    assert report["runner"]["invocations"] == 20 + report["runner"]["retried"]
    assert proc.returncode == 0 and report["exitCode"] == 0 and report["status"] == "pass"
    assert workspaces_in(Path(env["TMPDIR"])) == []  # every workspace removed
    # Every request offered OpenCode's bundled skill; refund-policy only from a workspace copy.
    for conv in model.conversations():
        names = {s.name: s.location for s in conv.skills}
        assert "customize-opencode" in names
        location = names.get("refund-policy")
        assert location is None or (
            "/.opencode/skills/refund-policy/SKILL.md" in location
            and str(skills["refund-policy"]) not in location
        )
    # The runner's claims are the saved transcripts' evidence, case by case.
    for case_id, _, expect, _ in SUITE:
        for variant in ("with", "without"):
            saved = read_events(tmp_path / "saved" / f"{case_id}.1.{variant}.jsonl")
            texts = [SkillText.of(name, (path / "SKILL.md").read_text("utf-8"))
                     for name, path in skills.items()]  # fmt: skip
            got = {skill for skill, _, _ in loaded(find_loads(saved, None, texts))}
            wanted = {"refund-policy"} if expect and variant == "with" else set()
            if case_id.startswith("ship-"):
                wanted.add("shipping-times")
            assert got == wanted, (case_id, variant)
