"""The Gemini CLI runner: fast tests of the evidence parser on captured transcripts and of the
runner's setup, and end-to-end tests (``-m agents``) that drive the real Gemini CLI against the
scripted Gemini API server (tests/agents/fake_gemini.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents import gemini, gemini_outcome
from skill_evals.agents.base import AgentInvocation, AgentOptions, RunnerSetupError
from skill_evals.agents.content import SkillText
from skill_evals.agents.environment import agent_env
from skill_evals.agents.evidence import Load, read_events
from skill_evals.agents.gemini_events import final_text, read_transcript, usage_meta
from skill_evals.agents.gemini_outcome import api_status
from skill_evals.agents.proof import prove
from tests.agents.conftest import agent_binary, files_holding, workspaces_in
from tests.agents.e2e import (
    LONG_REFUND_BODY,
    REFUND_DESCRIPTION,
    REFUND_PROMPT,
    SHIPPING_BODY,
    SHIPPING_DESCRIPTION,
    caller_env,
    run_runner_cli,
    two_skills,
    two_texts,
)
from tests.agents.fake_gemini import GENERIC_ANSWER, Behaviour, FakeGemini
from tests.conftest import assert_valid_report, write_jsonl, write_skill

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "gemini"
KNOWN = frozenset({"refund-policy", "shipping-times"})
REFUND_BODY = LONG_REFUND_BODY
SKILL_PATH = ".gemini/skills/refund-policy/SKILL.md"
# The SKILL.md texts the captured transcripts were made with (capture.py, write_skill).
TEXTS = two_texts(REFUND_BODY)


def events(name: str) -> list[dict[str, Any]]:
    return read_events(FIXTURES / f"{name}.jsonl")


def proved(evs: Sequence[dict[str, Any]], skills: Sequence[SkillText] = TEXTS) -> list[Load]:
    """The shared loading rules applied to a Gemini transcript (as ``skill-evals evidence``)."""
    return prove(gemini.PLUGIN, evs, skills, None, None, KNOWN)


def loaded(name: str) -> list[tuple[str, str, str]]:
    return [(x.skill, x.delivery, x.source) for x in proved(events(name)) if x.state == "loaded"]


def _types(evs: Sequence[Mapping[str, Any]], kind: str) -> list[int]:
    return [i for i, e in enumerate(evs) if e.get("type") == kind]


# ------------------------------------------------------------------ parser, captured transcripts


def test_completed_activation_is_a_native_load_at_its_result() -> None:
    evs = events("with")
    (load,) = proved(evs)
    assert (load.skill, load.state, load.delivery, load.agent, load.source) == (
        "refund-policy", "loaded", "native", "gemini", "activate_skill tool"
    )  # fmt: skip
    assert evs[load.index]["type"] == "tool_result" and evs[load.index]["status"] == "success"
    assert load.order == (_types(evs, "tool_use")[0], 0)


def test_without_transcript_shows_no_load() -> None:
    assert proved(events("without")) == []


def test_failed_shapes_are_attempts_never_loads() -> None:
    """A failed activation (a name outside the tool's list), a read outside the workspace, and
    shell commands that only name the path (ls, test -f): all completed, none a load."""
    states = {"failed-activate": "failed", "failed-read": "failed", "shell-probe": "unverified"}
    for name, state in states.items():
        evs = events(name)
        (attempt,) = proved(evs)
        assert attempt.state == state and attempt.skill.lower() == "refund-policy", name
    results = [events(n)[_types(events(n), "tool_result")[0]] for n in ("failed-activate",
               "failed-read", "shell-probe")]  # fmt: skip
    assert [r["status"] for r in results] == ["error", "error", "success"]


def test_reads_count_by_content_however_they_were_made() -> None:
    assert loaded("read-file") == [("refund-policy", "read", "read_file result")]
    # one shell glob over every skill folder shows both skills
    assert loaded("shell-glob") == [
        ("refund-policy", "read", "run_shell_command result"),
        ("shipping-times", "read", "run_shell_command result"),
    ]
    # the stream's read_file result is empty: the proof is the session record the model saw
    evs = events("read-file")
    marker = next(i for i, e in enumerate(evs) if e.get("type") == "skill_evals_session")
    assert [x.state for x in proved(evs[:marker])] == ["unverified"]
    assert [x.state for x in proved(evs, [])] == ["unverified"]  # without the skill's text


def test_an_expanded_at_mention_is_an_explicit_load() -> None:
    evs = events("explicit")
    assert loaded("explicit") == [
        ("refund-policy", "explicit", "@ mention"),
        ("refund-policy", "native", "injected message"),  # the attached file's text
    ]
    assert evs[proved(evs)[0].index]["type"] == "user"  # the session record of the user turn
    prompt = "Use @.gemini/skills/refund-policy/SKILL.md for my refund"
    assert gemini.PLUGIN.explicit(events("without"), prompt, KNOWN)[0].state == "failed"


def test_mcp_tool_is_an_mcp_load() -> None:
    assert loaded("mcp") == [("refund-policy", "mcp", "mcp tool load_refund_policy_skill")]


def test_parallel_loads_are_ordered_by_call_position() -> None:
    evs = events("neighbour")
    uses = [evs[i]["parameters"]["name"] for i in _types(evs, "tool_use")]
    assert [x.skill for x in proved(evs)] == uses
    assert sorted(uses) == ["refund-policy", "shipping-times"]
    reordered = list(evs)
    a, b = _types(evs, "tool_result")
    reordered[a], reordered[b] = reordered[b], reordered[a]  # completion order swapped
    assert [x.skill for x in proved(reordered)] == uses


def test_a_raw_session_file_is_understood() -> None:
    """The chat session file alone (no stream): its tool calls and what the model was sent."""
    evs = events("read-file")
    marker = next(i for i, e in enumerate(evs) if e.get("type") == "skill_evals_session")
    assert [(x.skill, x.state) for x in proved(evs[marker + 1 :])] == [("refund-policy", "loaded")]


def test_answer_usage_and_turns_come_from_the_transcript() -> None:
    t = read_transcript(events("with"))
    assert final_text(t).startswith("Following the skill: Refund policy Refunds within 30 days")
    meta = usage_meta(t)
    assert meta["turns"] == 2 and meta["outputTokens"] == 14 and meta["inputTokens"] > 0


def test_evidence_command_reads_a_saved_transcript(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    refund = write_skill(root, "refund-policy", REFUND_DESCRIPTION, REFUND_BODY)
    shipping = write_skill(root, "shipping-times", SHIPPING_DESCRIPTION, SHIPPING_BODY)
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "evidence", "--agent", "gemini", "--skill",
         str(refund), "--skill", str(shipping), str(FIXTURES / "shell-glob.jsonl")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [(x["skill"], x["agent"], x["state"]) for x in json.loads(proc.stdout)] == [
        ("refund-policy", "gemini", "loaded"),
        ("shipping-times", "gemini", "loaded"),
    ]


# ------------------------------------------------------------------------------ runner setup


def test_environment_is_an_allowlist(tmp_path: Path) -> None:
    caller = {
        "PATH": "/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "HTTPS_PROXY": "http://p:1",
        "GEMINI_API_KEY": "k1", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",
        "GEMINI_CLI_HOME": "/leak", "GEMINI_SYSTEM_MD": "/leak.md", "XDG_CONFIG_HOME": "/leak",
        "GOOGLE_CLOUD_PROJECT": "p", "NODE_OPTIONS": "--require /leak.js", "CLAUDE_X": "1",
        "PYTHONPATH": "/leak", "GEMINI_CLI_SYSTEM_SETTINGS_PATH": "/leak.json",
    }  # fmt: skip
    shared = agent_env(caller, tmp_path / "home", gemini.PLUGIN.environment)
    env = gemini.gemini_env(shared, tmp_path)
    assert env["GEMINI_API_KEY"] == "k1" and env["GOOGLE_GEMINI_BASE_URL"].endswith(":9")
    assert env["HOME"] == str(tmp_path / "home")
    assert env["XDG_CONFIG_HOME"].startswith(str(tmp_path / "home"))
    assert env["LANG"] == "C.UTF-8" and env["LC_ALL"] == "C" and env["HTTPS_PROXY"]
    for leaked in ("GEMINI_CLI_HOME", "GEMINI_SYSTEM_MD", "GOOGLE_CLOUD_PROJECT", "NODE_OPTIONS",
                   "CLAUDE_X", "PYTHONPATH"):  # fmt: skip
        assert leaked not in env
    assert env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] == str(tmp_path / "no-system-settings.json")
    google = gemini.gemini_env({"GOOGLE_API_KEY": "g1"}, tmp_path)
    assert google["GEMINI_API_KEY"] == "g1" and "GOOGLE_API_KEY" not in google
    with pytest.raises(RunnerSetupError, match="GEMINI_API_KEY"):
        gemini.gemini_env({"PATH": "/bin"}, tmp_path)


def test_settings_hold_names_never_values() -> None:
    settings = gemini.build_settings(AgentOptions(max_turns=3), ["GEMINI_API_KEY"], ["-c", "x"])
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["security"]["environmentVariableRedaction"]["blocked"] == ["GEMINI_API_KEY"]
    assert settings["general"]["maxAttempts"] == 1
    assert settings["privacy"]["usageStatisticsEnabled"] is False
    assert settings["context"]["memoryBoundaryMarkers"] == []
    assert settings["model"] == {"maxSessionTurns": 3}
    assert settings["mcpServers"]["skills"]["args"] == ["-c", "x"]
    assert "mcpServers" not in gemini.build_settings(AgentOptions(), [], None)


def test_command_never_carries_the_prompt() -> None:
    argv = gemini.build_command("gemini", "m1")
    assert argv[:3] == ["gemini", "--output-format", "stream-json"]
    assert "--skip-trust" in argv and argv[-2:] == ["--model", "m1"] and "-p" not in argv


def test_bundled_skill_names_are_found_and_refused(tmp_path: Path) -> None:
    bundled = gemini.bundled_skills(agent_binary("gemini"))
    assert {"skill-creator", "antigravity-support"} <= set(bundled)
    assert gemini.bundled_skills(sys.executable) == {
        name: f"(bundled with Gemini CLI) {name}" for name in gemini.BUNDLED_SKILLS
    }
    skill = write_skill(tmp_path, "Skill-Creator")
    invocation = AgentInvocation("without", skill, "c", 1, "p")
    env = {"GEMINI_API_KEY": "k", "PATH": os.environ["PATH"]}
    with pytest.raises(gemini.RunnerError, match="Gemini CLI bundles") as err:
        gemini.run(invocation, AgentOptions(bin=agent_binary("gemini")), env)
    assert err.value.retryable is False


def test_a_tested_skill_named_like_a_bundled_one_is_exit_5_before_any_run(
    tmp_path: Path,
) -> None:
    skill = write_skill(tmp_path / "skills", "skill-creator")
    cases = write_jsonl(tmp_path / "cases.jsonl", [{"id": f"c{i}", "prompt": f"make skill {i}",
                        "expectTrigger": True} for i in range(10)])  # fmt: skip
    runner = "skill-evals runner gemini --model m"
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(cases), "--runner", runner],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 5, proc.stderr
    assert "skill 'skill-creator'" in proc.stderr and "bundles a skill" in proc.stderr


def test_api_status_from_message_or_exit_status() -> None:
    assert api_status('[API Error: {"error":{"code":403,"message":"x"}}]', 147) == 403
    assert api_status("[API Error: quota]", 173) == 429
    assert api_status("[API Error: RESOURCE_EXHAUSTED]", 1) == 429
    assert api_status("[API Error: overloaded]", 17) == 529
    assert api_status("[API Error: fetch failed]", 1) is None


def test_failed_runs_are_runner_errors_with_reasons() -> None:
    args = (5.0, AgentOptions(max_turns=1), "hint")
    with pytest.raises(gemini.RunnerError, match=r"refused the key \(HTTP 401\)") as err:
        gemini_outcome.outcome(events("api-error-401"), 145, *args)
    assert err.value.retryable is False and "scripted failure" not in str(err.value)
    assert json.loads(err.value.to_line()) == {
        "runnerError": "model API refused the key (HTTP 401)", "retryable": False
    }  # fmt: skip
    with pytest.raises(gemini.RunnerError, match="turn limit"):
        gemini_outcome.outcome(events("max-turns"), 53, *args)
    with pytest.raises(gemini.RunnerError, match="status 52"):
        gemini_outcome.outcome([], 52, *args)
    for status, retryable in ((500, True), (529, True), (429, True), (400, False)):
        error = gemini_outcome.api_error(f'{{"code":{status}}}', status & 0xFF)
        assert error.retryable is retryable
    done = gemini_outcome.outcome(events("with"), 0, *args)
    assert done.exit_code == 0 and done.meta["durationMs"] == 5 and "30 days" in done.output


def test_option_and_name_clashes_are_refused(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "a", "refund-policy")
    twin = write_skill(tmp_path / "b", "Refund-Policy")
    invocation = AgentInvocation("with", skill, "c", 1, "p")
    env = {"GEMINI_API_KEY": "k", "PATH": os.environ["PATH"]}
    gemini_bin = agent_binary("gemini")
    with pytest.raises(RunnerSetupError, match="differ only in case"):
        gemini.run(invocation, AgentOptions(with_skills=(twin,), bin=gemini_bin), env)
    fixture = tmp_path / "fixture"
    write_skill(fixture / ".agents" / "skills", "refund-policy")
    with pytest.raises(RunnerSetupError, match=r"\.agents/skills/refund-policy"):
        gemini.run(invocation, AgentOptions(fixture=fixture, bin=gemini_bin), env)
    with pytest.raises(gemini.RunnerError, match="not found on PATH"):
        gemini.run(invocation, AgentOptions(bin="no-such-gemini"), env)
    with pytest.raises(gemini.RunnerError, match="no API key"):
        gemini.run(invocation, AgentOptions(bin=gemini_bin), {"PATH": os.environ["PATH"]})


# -------------------------------------------------------------- end to end, the real Gemini CLI


@pytest.fixture
def gemini_binary() -> str:
    return agent_binary("gemini")


@pytest.fixture
def skills(tmp_path: Path) -> dict[str, Path]:
    return two_skills(tmp_path, REFUND_BODY)


@pytest.fixture
def model() -> Iterator[FakeGemini]:
    with FakeGemini() as server:
        yield server


def runner_env(
    model: FakeGemini, tmp_path: Path, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The caller's environment for a runner: the scripted model, a private TMPDIR (so leftover
    workspaces are visible) and no Gemini variables from the developer's shell."""
    settings = {"GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": model.base_url}
    return caller_env(tmp_path, ("GEMINI_", "GOOGLE_"), settings, extra)


def run_runner(
    binary: str,
    variant: str,
    skill: Path,
    env: Mapping[str, str],
    *args: str,
    prompt: str = REFUND_PROMPT,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run ``skill-evals runner gemini``; the parsed stdout line (result or runner error)."""
    argv = ["gemini", "--bin", binary, "--model", "gemini-2.5-flash", *args]
    proc = run_runner_cli(argv, variant, skill, env, prompt, 180)
    lines = proc.stdout.splitlines()
    return proc, json.loads(lines[-1]) if lines else {}


@pytest.mark.agents
def test_with_loads_the_skill_and_without_never_sees_it(
    gemini_binary: str, skills: dict[str, Path], model: FakeGemini, tmp_path: Path
) -> None:
    env = runner_env(model, tmp_path)
    proc, line = run_runner(gemini_binary, "with", skills["refund-policy"], env)
    assert proc.returncode == 0, proc.stderr
    assert line["variant"] == "with" and line["invokedSkills"] == ["refund-policy"]
    assert line["output"].startswith("Following the skill: Refund policy Refunds within 30 days")
    assert line["exitCode"] == 0
    meta = line["meta"]
    assert meta["durationMs"] > 0 and meta["inputTokens"] > 0 and meta["turns"] == 2
    (first, *_) = model.seen
    assert first.model == "gemini-2.5-flash" and "activate_skill" in first.tools
    offered = [s for s in first.skills if s.name == "refund-policy"]
    assert offered and str(skills["refund-policy"]) not in (offered[0].location or "")
    assert all(c == "test-key" for c in model.credentials)

    count = len(model.seen)
    proc, line = run_runner(gemini_binary, "without", skills["refund-policy"], env)
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == [] and line["output"] == GENERIC_ANSWER
    assert all(s.name != "refund-policy" for r in model.seen[count:] for s in r.skills)
    # the bundled skills are offered in both variants
    assert {"skill-creator", "antigravity-support"} <= {s.name for s in model.seen[-1].skills}
    assert workspaces_in(tmp_path / "tmpdir") == []  # workspaces removed


PROBES = (
    {"functionCall": {"name": "run_shell_command", "args": {
        "command": f"ls -l {SKILL_PATH}; test -f {SKILL_PATH} && echo present"}}},
    {"functionCall": {"name": "run_shell_command", "args": {
        "command": f"cat missing/{SKILL_PATH} 2>/dev/null || echo none"}}},
    {"functionCall": {"name": "read_file", "args": {"file_path": "/nonexistent/" + SKILL_PATH}}},
    {"functionCall": {"name": "read_file", "args": {
        "file_path": ".gemini/skills/refund-policy/missing/SKILL.md"}}},
)  # fmt: skip


@pytest.mark.agents
def test_commands_naming_the_path_and_failed_loads_are_not_loads(
    gemini_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """One turn: a failed activation of the skill, `ls`/`test -f` of its SKILL.md, a `cat` that
    fails into `|| echo`, a read outside the workspace and a read of a missing file."""
    with FakeGemini(Behaviour(fail_load=True, extra_calls=PROBES)) as model:
        env = runner_env(model, tmp_path, {"SKILL_EVALS_TRANSCRIPT_DIR": str(tmp_path / "t")})
        proc, line = run_runner(gemini_binary, "with", skills["refund-policy"], env)
        results = model.seen[-1].tool_results
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == [] and line["output"] == GENERIC_ANSWER
    assert len(results) == 5 and any("present" in r for r in results)  # all of them ran
    saved = read_events(next((tmp_path / "t").iterdir()))
    statuses = [(e["status"], e.get("output")) for e in saved if e.get("type") == "tool_result"]
    assert [s for s, _ in statuses].count("success") == 2, statuses  # ls/test -f, cat || echo


@pytest.mark.agents
def test_reads_by_other_tools_count_by_content(
    gemini_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """`read_file` of the listed SKILL.md in `with`; in `without`, a shell glob over every skill
    folder shows the neighbour only (the tested skill is not there to read)."""
    with FakeGemini(Behaviour(load_with="read_file")) as model:
        proc, line = run_runner(
            gemini_binary, "with", skills["refund-policy"], runner_env(model, tmp_path)
        )
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == ["refund-policy"] and "30 days" in line["output"]
    with FakeGemini(Behaviour(load_with="glob", also_load=("shipping-times",))) as model:
        proc, line = run_runner(
            gemini_binary, "without", skills["refund-policy"], runner_env(model, tmp_path),
            "--with-skill", str(skills["shipping-times"]),
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == ["shipping-times"] and "working days" in line["output"]


@pytest.mark.agents
def test_an_at_mention_of_the_skill_is_an_explicit_load(
    gemini_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    prompt = f"Use @{SKILL_PATH} for my refund"
    with FakeGemini(Behaviour(min_overlap=99)) as model:  # never activates on its own
        proc, line = run_runner(
            gemini_binary, "with", skills["refund-policy"], runner_env(model, tmp_path),
            prompt=prompt,
        )  # fmt: skip
        assert any("Refunds within 30 days" in t for t in model.seen[0].user_texts)
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == ["refund-policy"] and "30 days" in line["output"]


def _plant(root: Path, tag: str) -> None:
    write_skill(root / ".gemini" / "skills", "refund-policy", REFUND_DESCRIPTION, REFUND_BODY)
    write_skill(root / ".agents" / "skills", "refund-policy", REFUND_DESCRIPTION, REFUND_BODY)
    (root / "GEMINI.md").write_text(f"LEAKED-{tag} GEMINI.md\n", encoding="utf-8")
    (root / ".gemini" / "GEMINI.md").write_text(f"LEAKED-{tag} global\n", encoding="utf-8")
    (root / ".gemini" / ".env").write_text("GEMINI_SYSTEM_MD=" + str(root / "sys.md") + "\n")
    (root / "sys.md").write_text("LEAKED-SYSTEM-PROMPT\n", encoding="utf-8")
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (root / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    (root / ".gemini" / "policies").mkdir()
    (root / ".gemini" / "policies" / "p.toml").write_text(
        '[[rule]]\ntoolName = "activate_skill"\ndecision = "allow"\npriority = 100\n'
    )


@pytest.mark.agents
def test_planted_copies_and_caller_variables_never_reach_without(
    gemini_binary: str, skills: dict[str, Path], model: FakeGemini, tmp_path: Path
) -> None:
    """Copies of the tested skill and context files in the caller's HOME, above the workspace
    (TMPDIR, with a .git marking a project root) and behind GEMINI_* variables; a plain
    `gemini` run in the same places shows the plants are real."""
    home, above = tmp_path / "home", tmp_path / "tmpdir"
    _plant(home, "HOME")
    _plant(above, "ANCESTOR")
    (above / ".git").mkdir()
    other_home = tmp_path / "other"
    _plant(other_home, "OTHER")
    system = tmp_path / "system.json"
    system.write_text(json.dumps({"context": {"fileName": ["NOTES.md"]}}), encoding="utf-8")
    extra = {"HOME": str(home), "GEMINI_CLI_HOME": str(other_home),
             "GEMINI_SYSTEM_MD": str(home / "sys.md"), "GEMINI_CLI_SYSTEM_SETTINGS_PATH":
             str(system), "XDG_CONFIG_HOME": str(home / ".config")}  # fmt: skip
    env = runner_env(model, tmp_path, extra)
    proc, line = run_runner(gemini_binary, "without", skills["refund-policy"], env)
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == []
    (request,) = model.seen
    assert "refund-policy" not in request.system and "LEAKED" not in request.system
    assert not any("LEAKED" in t for t in request.user_texts)

    # Control: Gemini CLI left to its defaults under the same HOME and TMPDIR sees them.
    project = above / "project"
    project.mkdir()
    plain = {**env, "GEMINI_CLI_NO_RELAUNCH": "true"}
    del plain["GEMINI_CLI_HOME"]
    done = subprocess.run(
        [gemini_binary, "--output-format", "stream-json", "--skip-trust", "-m", "gemini-2.5-flash"],
        input=REFUND_PROMPT, capture_output=True, text=True, timeout=180, cwd=project, env=plain,
    )  # fmt: skip
    assert len(model.seen) == 2, done.stdout + done.stderr
    control = json.dumps(model.requests[-1])
    assert "'refund-policy'" in json.dumps(model.requests[-1]["tools"])  # activate_skill's list
    assert "LEAKED-SYSTEM-PROMPT" in control  # the system prompt named in a .gemini/.env
    assert "LEAKED-HOME global" in control and "LEAKED-ANCESTOR GEMINI.md" in control


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
    gemini_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """`with` runs (its model never answers, so its workspace stays) while a `without` run's
    model searches the whole TMPDIR for the tested skill's SKILL.md. The workspaces are private
    (mode 700, random names), which stops any other user; root reads them anyway, and then the
    content reaches the model and is reported — an isolation breach for the engine, never a
    silent pass. Killing the `with` runner's process group ends Gemini CLI and its wrapper."""
    tmpdir = tmp_path / "tmpdir"
    # (`find -exec` would be refused: Gemini CLI asks before commands it deems dangerous.)
    search = f"cat {tmpdir}/*/*/project/.gemini/skills/*/SKILL.md 2>/dev/null"
    looks = ({"functionCall": {"name": "run_shell_command", "args": {"command": search}}},)
    with FakeGemini(Behaviour(hang=True)) as hanging:
        env = runner_env(hanging, tmp_path)
        env.update(EVALGATE_SKILL_VARIANT="with", EVALGATE_SKILL_DIR=str(skills["refund-policy"]))
        proc = subprocess.Popen(
            [sys.executable, "-m", "skill_evals", "runner", "gemini", "--bin", gemini_binary,
             "--model", "m"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=env, start_new_session=True,
        )  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.write(REFUND_PROMPT.encode())
        proc.stdin.close()
        deadline = time.monotonic() + 120
        while not hanging.requests and time.monotonic() < deadline:
            time.sleep(0.2)
        assert hanging.requests, "the `with` run never called its model"
        with FakeGemini(Behaviour(first_calls=looks, min_overlap=99)) as model:
            done, line = run_runner(
                gemini_binary, "without", skills["refund-policy"], runner_env(model, tmp_path)
            )
            shown = [r for seen in model.seen for r in seen.tool_results]
        assert len(_group_members(proc.pid)) >= 3  # the runner, the sh wrapper, Gemini CLI
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 20
        while _group_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _group_members(proc.pid) == []
    assert done.returncode == 0, done.stderr
    if os.geteuid() == 0:
        assert line["invokedSkills"] == ["refund-policy"], (shown, line)
        assert {"skill": "refund-policy", "state": "loaded", "delivery": "read",
                "source": "run_shell_command result"} in line["evidence"]  # fmt: skip
    else:
        assert line["invokedSkills"] == []


@pytest.mark.agents
def test_mcp_delivery_serves_the_skill_and_is_reported(
    gemini_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    with FakeGemini(Behaviour(load_with="mcp")) as model:
        proc, line = run_runner(
            gemini_binary, "with", skills["refund-policy"], runner_env(model, tmp_path),
            "--delivery", "mcp",
        )  # fmt: skip
        tools = model.seen[0].tools
    assert proc.returncode == 0, proc.stderr
    assert "mcp_skills_load_refund_policy_skill" in tools
    assert all("<name>refund-policy</name>" not in r.system for r in model.seen)
    assert line["invokedSkills"] == ["refund-policy"] and "30 days" in line["output"]


@pytest.mark.agents
def test_the_key_reaches_the_model_but_no_command_and_no_file(
    gemini_binary: str, skills: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "gm-test-4c1e9a7b5d3f2a8c6e0b"
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    env_call = ({"functionCall": {"name": "run_shell_command", "args": {"command": "env"}}},)
    with FakeGemini(Behaviour(first_calls=env_call)) as model:
        env = runner_env(
            model,
            tmp_path,
            {
                "GEMINI_API_KEY": secret,
                "GITHUB_TOKEN": "gh-x-1",
                "SKILL_EVALS_TRANSCRIPT_DIR": str(tmp_path / "t"),
            },
        )
        invocation = AgentInvocation("with", skills["refund-policy"], "key", 1, REFUND_PROMPT)
        options = AgentOptions(bin=gemini_binary, model="gemini-2.5-flash", keep_workspace=True)
        result = gemini.run(invocation, options, env)
        outputs = [r for seen in model.seen for r in seen.tool_results]
    assert result.invoked_skills == ["refund-policy"]
    assert any("HOME=" in o for o in outputs)
    assert not any(secret in o or "gh-x-1" in o for o in outputs)
    assert all(c == secret for c in model.credentials)
    (kept,) = private_tmp.iterdir()
    assert files_holding([kept, tmp_path / "t"], secret) == []
    assert secret not in result.to_line()


@pytest.mark.agents
@pytest.mark.parametrize(
    ("status", "reason", "retryable"),
    [(401, "refused the key (HTTP 401)", False), (429, "rate limit (HTTP 429)", True),
     (503, "server error (HTTP 503)", True)],
)  # fmt: skip
def test_a_failed_model_request_is_a_runner_error_with_its_reason(
    gemini_binary: str, skills: dict[str, Path], tmp_path: Path, status: int, reason: str,
    retryable: bool,
) -> None:  # fmt: skip
    with FakeGemini(Behaviour(fail_status=status)) as model:
        proc, line = run_runner(
            gemini_binary, "with", skills["refund-policy"], runner_env(model, tmp_path),
            prompt="SECRET-PROMPT-TEXT about refunds for store purchases",
        )  # fmt: skip
        assert len(model.requests) == 1  # no retry of its own
    assert proc.returncode == 2
    assert line == {"runnerError": f"model API {reason}", "retryable": retryable}
    assert "SECRET-PROMPT-TEXT" not in proc.stdout + proc.stderr
    assert "scripted failure" not in proc.stdout + proc.stderr


@pytest.mark.agents
def test_the_turn_limit_is_a_runner_error(
    gemini_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    first = ({"functionCall": {"name": "list_directory", "args": {"dir_path": "."}}},)
    with FakeGemini(Behaviour(first_calls=first)) as model:
        proc, line = run_runner(
            gemini_binary, "with", skills["refund-policy"], runner_env(model, tmp_path),
            "--max-turns", "1",
        )  # fmt: skip
        assert len(model.requests) == 1
    assert proc.returncode == 2
    assert line == {"runnerError": "turn limit reached (--max-turns 1)", "retryable": False}


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
def test_full_skill_evals_run_through_gemini(
    gemini_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """Ten cases through `skill-evals test`; the very first model request is rate limited
    (HTTP 429), so that invocation reports a retryable runner error and the engine runs it
    again."""
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
    runner = (
        f"{sys.executable} -m skill_evals runner gemini --bin {gemini_binary} "
        f"--model gemini-2.5-flash --with-skill {skills['shipping-times']}"
    )
    report_path = tmp_path / "report.json"
    keep_transcripts = {"SKILL_EVALS_TRANSCRIPT_DIR": str(tmp_path / "saved")}
    with FakeGemini(Behaviour(fail_status=429, fail_first=1)) as model:
        proc = subprocess.run(
            [sys.executable, "-m", "skill_evals", "test", "--skill", str(skills["refund-policy"]),
             "--cases", str(cases), "--runner", runner, "--trials", "1", "--jobs", "2",
             "--min-trigger-f1", "0.9", "--min-uplift", "0.1", "--report", str(report_path)],
            capture_output=True, text=True, timeout=900,
            env=runner_env(model, tmp_path, keep_transcripts),
        )  # fmt: skip
        assert model.credentials.count("test-key") == len(model.requests)
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
    assert report["runner"]["invocations"] == 21 and report["runner"]["retried"] == 1
    assert proc.returncode == 0 and report["exitCode"] == 0 and report["status"] == "pass"
    assert workspaces_in(tmp_path / "tmpdir") == []  # every workspace removed
    # The runner's claims are the saved transcripts' evidence, case by case.
    for case_id, _, expect, _ in SUITE:
        for variant in ("with", "without"):
            saved = read_events(tmp_path / "saved" / f"{case_id}.1.{variant}.jsonl")
            loaded = {x.skill for x in proved(saved) if x.state == "loaded"}
            wanted = {"refund-policy"} if expect and variant == "with" else set()
            if case_id.startswith("ship-"):
                wanted.add("shipping-times")
            assert loaded == wanted, (case_id, variant)
