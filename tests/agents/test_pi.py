"""The pi runner: fast tests of the evidence parser on captured pi transcripts, and end-to-end
tests (``-m agents``) that drive the real pi CLI against the scripted model server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents import pi
from skill_evals.agents.base import AgentInvocation, AgentOptions, RunnerSetupError
from skill_evals.agents.content import SkillText
from skill_evals.agents.evidence import EvidencePatterns, loaded_names, read_events
from tests.agents.conftest import agent_binary, files_holding, keep_fixture, workspaces_in
from tests.agents.e2e import (
    REFUND_DESCRIPTION,
    REFUND_PROMPT,
    SHIPPING_BODY,
    SHIPPING_DESCRIPTION,
    caller_env,
    run_runner_cli,
    two_skills,
)
from tests.agents.fake_pi_model import (
    GENERIC_ANSWER,
    Behaviour,
    FakePiModel,
    Reply,
    decide,
    parse_request,
)
from tests.agents.scripts import shape_body, shape_description
from tests.conftest import assert_valid_report, skill_md, write_jsonl, write_skill

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "pi"
REFUND_BODY = "# Refund policy\n\nRefunds within 30 days with a receipt.\n"


def events(name: str) -> list[dict[str, Any]]:
    return read_events(FIXTURES / f"{name}.jsonl")


def index_of(evs: Sequence[Mapping[str, Any]], kind: str, n: int = 0) -> int:
    """Index of the n-th event of a type."""
    return [i for i, e in enumerate(evs) if e.get("type") == kind][n]


SKILLS = [
    SkillText.of("refund-policy", skill_md("refund-policy", REFUND_DESCRIPTION, REFUND_BODY)),
    SkillText.of("shipping-times", skill_md("shipping-times", SHIPPING_DESCRIPTION, SHIPPING_BODY)),
]


def found(evs: Sequence[Mapping[str, Any]], skills: list[SkillText] = SKILLS) -> list[Any]:
    return pi.find_loads(evs, EvidencePatterns(), skills)


def loaded(evs: Sequence[Mapping[str, Any]], skills: list[SkillText] = SKILLS) -> list[str]:
    return loaded_names(found(evs, skills))


# ------------------------------------------------------------------ parser, captured transcripts


def test_with_transcript_reports_the_completed_read() -> None:
    evs = events("with")
    loads = found(evs)
    assert [(x.skill, x.state, x.delivery, x.agent, x.source) for x in loads] == [
        ("refund-policy", "loaded", "read", "pi", "read result")
    ]
    assert loads[0].index == index_of(evs, "tool_execution_end")


def test_without_transcript_reports_nothing() -> None:
    assert found(events("without")) == []


def test_failed_read_is_a_failed_attempt() -> None:
    evs = events("failed-read")
    end = evs[index_of(evs, "tool_execution_end")]
    assert end["isError"] is True  # the captured read really failed
    assert "refund-policy/SKILL.md" in json.dumps(evs[index_of(evs, "tool_execution_start")])
    assert loaded(evs) == [] and loaded(evs, []) == []
    assert [(x.skill, x.state) for x in found(evs)] == [("refund-policy", "failed")]


def test_neighbour_transcript_reports_both_in_call_order() -> None:
    evs = events("neighbour")
    assert loaded(evs) == ["refund-policy", "shipping-times"]
    # pi runs the two reads at once: whichever finishes first, the order is the model's.
    ends = [i for i, e in enumerate(evs) if e.get("type") == "tool_execution_end"]
    swapped = list(evs)
    swapped[ends[0]], swapped[ends[1]] = evs[ends[1]], evs[ends[0]]
    assert loaded(swapped) == ["refund-policy", "shipping-times"]


def test_without_the_skill_text_nothing_is_proven() -> None:
    assert loaded(events("with"), []) == []


def test_a_read_that_never_completed_is_an_attempt() -> None:
    evs = [e for e in events("with") if e.get("type") != "tool_execution_end"]
    # the toolResult message_end still completes it (session-style evidence) ...
    assert loaded(evs) == ["refund-policy"]
    # ... but without any completion there is no load.
    started_only = [e for e in evs if _role(e) != "toolResult"]
    assert loaded(started_only) == []
    assert [(x.skill, x.state) for x in found(started_only)] == [("refund-policy", "attempted")]


def _role(event: Mapping[str, Any]) -> Any:
    message = event.get("message")
    return message.get("role") if isinstance(message, dict) else None


def test_session_file_entries_are_understood() -> None:
    """pi session files hold ``{"type": "message"}`` entries and no tool_execution events."""
    session = [
        {"type": "message", "message": e["message"]}
        for e in events("neighbour")
        if e.get("type") == "message_end"
    ]
    loads = found(session)
    assert loaded_names(loads) == ["refund-policy", "shipping-times"]
    assert all(_role(session[x.index]) == "toolResult" for x in loads)


def _end(call_id: str, name: str, text: str, error: bool = False) -> dict[str, Any]:
    return {"type": "tool_execution_end", "toolCallId": call_id, "toolName": name,
            "result": {"content": [{"type": "text", "text": text}]}, "isError": error}  # fmt: skip


def _start(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_execution_start", "toolCallId": call_id, "toolName": name,
            "args": args}  # fmt: skip


REFUND_MD = skill_md("refund-policy", REFUND_DESCRIPTION, REFUND_BODY)


def test_each_call_counts_once_and_only_content_proves() -> None:
    evs: list[dict[str, Any]] = [
        _start("a", "read", path="@../skills/refund-policy/SKILL.md"),
        _end("a", "read", REFUND_MD),
        {"type": "message_end", "message": {"role": "toolResult", "toolCallId": "a",
                                            "isError": False, "content": REFUND_MD}},
        _start("b", "read", file_path="/x/skills/shipping-times/SKILL.md"),
        _end("b", "read", "ENOENT", error=True),
        _start("c", "read", path="/x/skills/shipping-times/SKILL.md", offset=99),
        _end("c", "read", "Offset 99 is beyond end of file (7 lines total)", error=True),
        _start("d", "bash", command="ls /x/skills/shipping-times/SKILL.md; echo $?"),
        _end("d", "bash", "/x/skills/shipping-times/SKILL.md\n0\n"),
    ]  # fmt: skip
    loads = found(evs)
    assert [(x.skill, x.state, x.index) for x in loads] == [
        ("refund-policy", "loaded", 1), ("shipping-times", "failed", 4),
        ("shipping-times", "failed", 6), ("shipping-times", "unverified", 8),
    ]  # fmt: skip


def test_bash_output_and_mcp_style_tools_count() -> None:
    evs: list[dict[str, Any]] = [
        _start("a", "bash", command="cat /w/skills/*/SKILL.md | head -50"),
        _end("a", "bash", skill_md("shipping-times", SHIPPING_DESCRIPTION, SHIPPING_BODY)),
        _start("b", "load_refund_policy_skill"),
        _end("b", "load_refund_policy_skill", REFUND_MD),
        _start("c", "load_other_skill"),
        _end("c", "load_other_skill", "body"),
    ]
    assert [(x.skill, x.delivery, x.source) for x in found(evs)] == [
        ("shipping-times", "read", "bash result"),
        ("refund-policy", "mcp", "mcp tool load_refund_policy_skill"),
        ("other", "mcp", "mcp tool load_other_skill"),
    ]


def test_skill_command_expansion_is_explicit() -> None:
    block = '<skill name="refund-policy" location="/w/skills/refund-policy/SKILL.md">\nx\n</skill>'
    text = [{"type": "text", "text": block}]
    user = {"type": "message_end", "message": {"role": "user", "content": text}}
    offered = frozenset({"refund-policy"})
    found = pi.explicit([user], "/skill:refund-policy", offered)
    assert [(x.skill, x.delivery) for x in found] == [("refund-policy", "explicit")]
    assert pi.explicit([user], "/skill:refund-policy", frozenset()) == []
    assert pi.explicit([user], block, offered) == []  # a prompt imitating it is not trusted


def test_evidence_command_prints_the_loads(tmp_path: Path) -> None:
    refund = write_skill(tmp_path, "refund-policy", REFUND_DESCRIPTION, REFUND_BODY)
    shipping = write_skill(tmp_path, "shipping-times", SHIPPING_DESCRIPTION, SHIPPING_BODY)
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "evidence", "--agent", "pi", "--skill", str(refund),
         "--skill", str(shipping), str(FIXTURES / "neighbour.jsonl")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert [(x["skill"], x["delivery"], x["agent"]) for x in found] == [
        ("refund-policy", "read", "pi"),
        ("shipping-times", "read", "pi"),
    ]


def test_output_and_usage_come_from_the_transcript() -> None:
    evs = events("with")
    assistants = [
        e["message"] for e in evs if e.get("type") == "message_end" and _role(e) == "assistant"
    ]
    assert pi.final_text(assistants[-1]) == (
        "Following the refund-policy skill: Refunds within 30 days with a receipt."
    )
    # two model calls of 100 prompt / 10 completion tokens each; the custom model has no price
    assert pi.usage_meta(assistants) == {"inputTokens": 200, "outputTokens": 20}
    priced = [{"usage": {"input": 5, "output": 1, "cost": {"total": 0.25}}}]
    assert pi.usage_meta(priced) == {"inputTokens": 5, "outputTokens": 1, "costUsd": 0.25}
    # meta.turns: the model's replies (one that asked for the read, one that answered)
    transcript = pi.Transcript()
    for event in evs:
        transcript.add(event)
    assert pi.outcome(transcript, 0, 7, None).meta["turns"] == 2
    # every tool call for the runner line, the read with its input
    (read,) = pi.tool_calls(evs)
    assert (read.name, read.ok, sorted(read.input)) == ("read", True, ["path"])


# ------------------------------------------------------------------------ command line, setup


def test_command_offers_only_the_given_skills_and_disables_discovery() -> None:
    argv = pi.build_command("pi", [Path("/w/skills/a")], ["--model", "m"])
    assert argv[:3] == ["pi", "--mode", "json"]
    for flag in ("--no-session", "--no-skills", "--no-extensions", "--no-context-files"):
        assert flag in argv
    assert argv[argv.index("--skill") + 1] == "/w/skills/a"
    assert argv[-2:] == ["--model", "m"]
    # pi's default tools (it works in the project), or only the reading ones with --read-only
    assert argv[argv.index("--tools") + 1] == "read,bash,edit,write"
    read_only = pi.build_command("pi", [], [], None, pi.READ_ONLY_TOOLS)
    assert read_only[read_only.index("--tools") + 1] == "read,grep,find,ls"
    assert "--extension" not in read_only
    # A project's own AGENTS.md reaches the model without pi's discovery, which walks up to /.
    with_context = pi.build_command("pi", [], [], Path("/w/project/AGENTS.md"))
    assert "--no-context-files" in with_context
    assert with_context[with_context.index("--append-system-prompt") + 1] == "/w/project/AGENTS.md"


def test_the_bash_extension_hides_credential_names_and_holds_no_value(tmp_path: Path) -> None:
    env = {"PATH": "/bin", "SKILL_EVALS_PI_API_KEY": "sk-1", "GITHUB_TOKEN": "gh-2",
           "weird\"name_secret": "v-3"}  # fmt: skip
    ext = pi.secretless_bash(tmp_path, env)
    assert ext is not None and ext.parent.parent == tmp_path
    text = ext.read_text(encoding="utf-8")
    hidden = json.loads(text.split("const HIDDEN = ", 1)[1].split(";\n", 1)[0])
    assert hidden == ["GITHUB_TOKEN", "SKILL_EVALS_PI_API_KEY", 'weird"name_secret']
    assert not any(value in text for value in ("sk-1", "gh-2", "v-3", "/bin"))
    assert pi.secretless_bash(tmp_path / "none", {"PATH": "/bin"}) is None


def test_custom_base_url_writes_models_json_without_the_secret(tmp_path: Path) -> None:
    env = {"SKILL_EVALS_PI_BASE_URL": "http://127.0.0.1:9/v1", "SKILL_EVALS_PI_API_KEY": "sk-1"}
    args = pi._model_args(AgentOptions(model="m1"), env, tmp_path)
    assert args == ["--provider", "skill-evals", "--model", "m1"]
    text = (tmp_path / "models.json").read_text(encoding="utf-8")
    assert "sk-1" not in text
    provider = json.loads(text)["providers"]["skill-evals"]
    assert provider["apiKey"] == "SKILL_EVALS_PI_API_KEY"  # a variable name pi resolves
    assert provider["api"] == "openai-completions"
    assert provider["models"] == [{"id": "m1"}]
    with pytest.raises(RunnerSetupError, match="--model"):
        pi._model_args(AgentOptions(), env, tmp_path)
    with pytest.raises(RunnerSetupError, match="SKILL_EVALS_PI_API=soap"):
        pi._model_args(AgentOptions(model="m"), {**env, "SKILL_EVALS_PI_API": "soap"}, tmp_path)
    assert pi._model_args(AgentOptions(model="anthropic/x"), {}, tmp_path) == [
        "--model",
        "anthropic/x",
    ]


def _finished(stop_reason: str) -> pi.Transcript:
    transcript = pi.Transcript()
    message = {"role": "assistant", "content": [{"type": "text", "text": "partial"}],
               "stopReason": stop_reason}  # fmt: skip
    for event in ({"type": "message_end", "message": message}, {"type": "turn_end"},
                  {"type": "agent_end"}):  # fmt: skip
        transcript.add(event)
    return transcript


def test_a_failed_model_request_voids_the_run_and_a_cut_answer_fails_the_task(
    tmp_path: Path,
) -> None:
    args = (5, None)
    with pytest.raises(RunnerSetupError, match="no answer from the model API") as err:
        pi.outcome(_finished("error"), 0, *args)
    assert "partial" not in str(err.value) and err.value.retryable
    with pytest.raises(RunnerSetupError, match="before the agent finished"):
        pi.outcome(pi.Transcript(), 1, *args)
    with pytest.raises(RunnerSetupError, match=f"see {tmp_path}/agent.stderr"):
        pi.outcome(pi.Transcript(), 1, 5, tmp_path)
    cut = pi.outcome(_finished("length"), 0, *args)
    assert (cut.exit_code, cut.output, cut.meta) == (1, "partial", {"durationMs": 5, "turns": 1})
    assert pi.outcome(_finished("stop"), 0, *args).exit_code == 0


def test_mcp_delivery_is_refused(tmp_path: Path) -> None:
    skill = write_skill(tmp_path)
    invocation = AgentInvocation("with", skill, "c", 1, "p")
    with pytest.raises(RunnerSetupError, match="no MCP support"):
        pi.run(invocation, AgentOptions(delivery="mcp"))


def test_neighbour_with_the_tested_name_is_refused(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "a")
    twin = write_skill(tmp_path / "b")
    invocation = AgentInvocation("with", skill, "c", 1, "p")
    with pytest.raises(RunnerSetupError, match="already used"):
        pi.run(invocation, AgentOptions(with_skills=(twin,), bin=sys.executable))


def test_fixture_holding_an_offered_skill_is_refused(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "s", "refund-policy")
    neighbour = write_skill(tmp_path / "n", "shipping-times")
    for folder in (".pi/skills", ".agents/skills"):
        for name in ("refund-policy", "shipping-times"):
            fixture = tmp_path / f"fixture-{name}-{folder[1:3]}"
            write_skill(fixture / folder, name)
            for variant in ("with", "without"):
                invocation = AgentInvocation(variant, skill, "c", 1, "p")
                options = AgentOptions(
                    fixture=fixture, bin=sys.executable, with_skills=(neighbour,)
                )
                with pytest.raises(RunnerSetupError, match=rf"already contains {folder}/{name}"):
                    pi.run(invocation, options, {"PATH": os.environ["PATH"]})


def test_scripted_model_routes_on_description_words() -> None:
    system = (
        "<available_skills>\n  <skill>\n    <name>refund-policy</name>\n"
        f"    <description>{REFUND_DESCRIPTION}</description>\n"
        "    <location>/w/skills/refund-policy/SKILL.md</location>\n  </skill>\n"
        "</available_skills>"
    )

    def ask(prompt: str, behaviour: Behaviour | None = None) -> Reply:
        user = {"role": "user", "content": [{"type": "text", "text": prompt}]}
        body = {"messages": [{"role": "system", "content": system}, user]}
        return decide(parse_request(body), behaviour or Behaviour())

    assert ask(REFUND_PROMPT).reads == ["/w/skills/refund-policy/SKILL.md"]
    assert ask("Write a haiku about autumn").text == GENERIC_ANSWER
    assert ask(REFUND_PROMPT, Behaviour(fail_read=True)).reads == [
        "/nonexistent/skills/refund-policy/SKILL.md"
    ]


# ------------------------------------------------------------------ end to end, the real pi CLI


@pytest.fixture
def pi_binary() -> str:
    return agent_binary("pi")


@pytest.fixture
def skills(tmp_path: Path) -> dict[str, Path]:
    return two_skills(tmp_path, REFUND_BODY)


@pytest.fixture
def model() -> Iterator[FakePiModel]:
    with FakePiModel() as server:
        yield server


def runner_env(
    model: FakePiModel, tmp_path: Path, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The caller's environment for a runner: the scripted model, a private TMPDIR (so leftover
    workspaces are visible) and no stray pi variables from the developer's shell."""
    settings = {"SKILL_EVALS_PI_BASE_URL": model.base_url}
    return caller_env(tmp_path, ("PI_", "SKILL_EVALS_PI_"), settings, extra)


def run_runner(
    pi_binary: str,
    variant: str,
    skill: Path,
    env: Mapping[str, str],
    *args: str,
    prompt: str = REFUND_PROMPT,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    argv = ["pi", "--bin", pi_binary, "--model", "fake", *args]
    proc = run_runner_cli(argv, variant, skill, env, prompt, 120)
    # A result line (exit 0) or the runner's own reason (a runnerError line, exit 2).
    line = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc, line


@pytest.mark.agents
def test_with_loads_the_skill_and_answers_from_it(
    pi_binary: str, skills: dict[str, Path], model: FakePiModel, tmp_path: Path
) -> None:
    env = runner_env(model, tmp_path)
    proc, line = run_runner(pi_binary, "with", skills["refund-policy"], env)
    assert proc.returncode == 0, proc.stderr
    assert line["variant"] == "with"
    assert line["invokedSkills"] == ["refund-policy"]
    assert (
        line["output"]
        == "Following the refund-policy skill: Refunds within 30 days with a receipt."
    )
    assert line["exitCode"] == 0
    assert line["meta"]["durationMs"] > 0 and line["meta"]["inputTokens"] == 200
    # pi offered exactly the skill under test, from a copy inside the workspace
    assert "<name>refund-policy</name>" in model.system_prompts()[0]
    assert str(skills["refund-policy"]) not in model.system_prompts()[0]
    assert workspaces_in(tmp_path / "tmpdir") == []  # workspace removed


@pytest.mark.agents
def test_without_does_not_offer_or_load_the_skill(
    pi_binary: str, skills: dict[str, Path], model: FakePiModel, tmp_path: Path
) -> None:
    proc, line = run_runner(
        pi_binary, "without", skills["refund-policy"], runner_env(model, tmp_path)
    )
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == []
    assert line["output"] == GENERIC_ANSWER
    assert all("<available_skills>" not in s for s in model.system_prompts())


@pytest.mark.agents
def test_user_and_ancestor_skills_do_not_leak(
    pi_binary: str, skills: dict[str, Path], model: FakePiModel, tmp_path: Path
) -> None:
    """The skill under test planted where pi looks by default (user dirs, the agent dir from
    PI_CODING_AGENT_DIR, `.agents/skills` and AGENTS.md in an ancestor of the workspace) must
    not reach a `without` run; a plain pi run shows the plants are real."""
    home = tmp_path / "home"
    for where in (".pi/agent/skills", ".agents/skills", "agentdir/skills"):
        write_skill(home / where, "refund-policy", REFUND_DESCRIPTION, REFUND_BODY)
    (home / ".pi/agent/AGENTS.md").write_text("LEAKED-GLOBAL-CONTEXT\n", encoding="utf-8")
    env = runner_env(
        model,
        tmp_path,
        {
            "HOME": str(home),
            "PI_CODING_AGENT_DIR": str(home / "agentdir"),
            "PI_CODING_AGENT_SESSION_DIR": str(tmp_path / "sessions"),
        },
    )
    tmpdir = Path(env["TMPDIR"])
    write_skill(tmpdir / ".agents" / "skills", "refund-policy", REFUND_DESCRIPTION, REFUND_BODY)
    (tmpdir / "AGENTS.md").write_text("LEAKED-ANCESTOR-CONTEXT\n", encoding="utf-8")

    proc, line = run_runner(pi_binary, "without", skills["refund-policy"], env)
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == []
    (prompt,) = model.system_prompts()
    assert "<available_skills>" not in prompt and "LEAKED" not in prompt
    assert not (tmp_path / "sessions").exists()
    assert workspaces_in(tmpdir) == []
    assert sorted(p.name for p in tmpdir.iterdir() if p.name.startswith((".", "A"))) == [
        ".agents",
        "AGENTS.md",
    ]

    # Control: pi left to its defaults in the same places does see the planted skill.
    project = tmpdir / "project"
    project.mkdir()
    subprocess.run(
        [pi_binary, "--mode", "json", "--no-session", "--model", "skill-evals/fake"],
        input=REFUND_PROMPT, capture_output=True, text=True, timeout=120, cwd=project,
        env={**env, "PI_CODING_AGENT_DIR": str(_control_agent_dir(tmp_path, model)),
             "PI_OFFLINE": "1"},
    )  # fmt: skip
    control = model.system_prompts()[-1]
    assert "<name>refund-policy</name>" in control and "LEAKED-ANCESTOR-CONTEXT" in control


def _control_agent_dir(tmp_path: Path, model: FakePiModel) -> Path:
    agent_dir = tmp_path / "home" / "agentdir"
    provider = {"baseUrl": model.base_url, "api": "openai-completions", "apiKey": "x",
                "models": [{"id": "fake"}]}  # fmt: skip
    (agent_dir / "models.json").write_text(
        json.dumps({"providers": {"skill-evals": provider}}), encoding="utf-8"
    )
    return agent_dir


SHAPES = ("glob-skill", "loop-skill", "cd-skill", "dotdot-skill", "python-skill")


def shape_skills(root: Path) -> list[str]:
    """``--with-skill`` arguments for skills that only the scripted shapes load."""
    paths = [write_skill(root, n, shape_description(n), shape_body(n)) for n in SHAPES]
    return [arg for path in paths for arg in ("--with-skill", str(path))]


@pytest.mark.agents
def test_every_way_of_reading_a_skill_counts_by_content(
    pi_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """Globs, loops, cd, ../ paths, Python through `bash`, and `read`: whatever shows the
    content is a load, in the order the calls were made."""
    script = [
        ("bash", {"command": "cat {skills}/glob*/SKILL.md"}),
        ("bash", {"command": 'for d in {skills}/loop*; do cat "$d/SKILL.md"; done'}),
        ("bash", {"command": "cd {skills}/cd-skill && cat SKILL.md"}),
        ("bash", {"command": "cat {skills}/../skills/dotdot-skill/../dotdot-skill/SKILL.md"}),
        ("bash", {"command": "python3 -c \"print(open('{skill:python-skill}').read())\""}),
        ("read", {"path": "{skill:refund-policy}"}),
    ]
    with FakePiModel(Behaviour(script=script)) as model:
        env = runner_env(model, tmp_path, {"SKILL_EVALS_TRANSCRIPT_DIR": str(tmp_path / "saved")})
        shapes = shape_skills(tmp_path / "shapes")
        proc, line = run_runner(
            pi_binary, "with", skills["refund-policy"], env, *shapes, prompt="Do the steps."
        )
    assert proc.returncode == 0, proc.stderr
    keep_fixture(tmp_path / "saved" / "case.1.with.jsonl", "pi", "shapes-read")
    assert line["invokedSkills"] == [*SHAPES, "refund-policy"]


@pytest.mark.agents
def test_calls_that_only_name_a_skill_are_never_loads(
    pi_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """A failed `cat … || echo`, `ls`, `test -f`, `echo`, a read of a missing file and a read
    past the end name SKILL.md paths and show no content: attempts, never loads."""
    script = [
        ("bash", {"command": "cat {skills}/refund-policy/SKILL.md 2>/dev/null || echo no"}),
        ("bash", {"command": "ls -l {skill:glob-skill}"}),
        ("bash", {"command": "test -f {skill:glob-skill} && echo present"}),
        ("bash", {"command": "echo {skill:glob-skill}"}),
        ("read", {"path": "{skills}/refund-policy/SKILL.md"}),
        ("read", {"path": "{skill:glob-skill}", "offset": 500}),
    ]
    name = "glob-skill"
    neighbour = write_skill(tmp_path / "shapes", name, shape_description(name), shape_body(name))
    with FakePiModel(Behaviour(script=script)) as model:
        env = runner_env(model, tmp_path, {"SKILL_EVALS_TRANSCRIPT_DIR": str(tmp_path / "saved")})
        proc, line = run_runner(
            pi_binary, "without", skills["refund-policy"], env, "--with-skill", str(neighbour)
        )
    assert proc.returncode == 0, proc.stderr
    keep_fixture(tmp_path / "saved" / "case.1.without.jsonl", "pi", "shapes-named")
    assert line["invokedSkills"] == []
    states = {(e["skill"], e["state"]) for e in line["evidence"]}
    # Completed calls that named the files: unverified; failed ones: failed. Never loaded.
    tried = {skill for skill, state in states if state in ("failed", "unverified")}
    assert {"refund-policy", "glob-skill"} <= tried
    assert not any(state == "loaded" for _, state in states)


@pytest.mark.agents
def test_a_skill_command_is_an_explicit_load(
    pi_binary: str, skills: dict[str, Path], model: FakePiModel, tmp_path: Path
) -> None:
    """`/skill:refund-policy` is expanded by pi itself into a `<skill …>` user message."""
    env = runner_env(model, tmp_path)
    proc, line = run_runner(
        pi_binary, "with", skills["refund-policy"], env, prompt="/skill:refund-policy hi"
    )
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == ["refund-policy"]
    assert {"skill": "refund-policy", "state": "loaded", "delivery": "explicit",
            "source": "skill message"} in line["evidence"]  # fmt: skip


@pytest.mark.agents
def test_a_copy_read_from_anywhere_in_without_is_a_reported_breach(
    pi_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """A copy of the tested skill in the user's home, read by its absolute path in `without`:
    by its content it is the tested skill, and the engine sees the breach."""
    planted = write_skill(tmp_path / "user-home" / ".pi" / "agent" / "skills", "refund-policy",
                          REFUND_DESCRIPTION, REFUND_BODY)  # fmt: skip
    script = [("bash", {"command": f"cat {planted}/SKILL.md"})]
    with FakePiModel(Behaviour(script=script)) as model:
        proc, line = run_runner(pi_binary, "without", skills["refund-policy"],
                                runner_env(model, tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == ["refund-policy"]


def _sandboxed(argv: list[str], env: dict[str, str], tmp_path: Path, pi_binary: str) -> list[str]:
    """``argv`` in the sandbox the engine gives a runner invocation: its own TMPDIR and HOME,
    the agent's package readable, nothing of another invocation."""
    from skill_evals.sandbox.bwrap import Sandbox

    own = [tmp_path / "own-tmp", tmp_path / "own-home"]
    for place in own:
        place.mkdir()
    env.update(TMPDIR=str(own[0]), HOME=str(own[1]))
    package = Path(pi_binary).parents[1]  # node_modules/.bin/pi: the agent's whole tree
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    readable = [str(package), pi_binary, env["EVALGATE_SKILL_DIR"]]
    return Sandbox(bwrap).command(argv, env, str(tmp_path), own, readable)


@pytest.mark.agents
@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_a_without_run_that_globs_a_concurrent_with_run_is_a_reported_breach(
    pi_binary: str, skills: dict[str, Path], tmp_path: Path, sandbox: str
) -> None:
    """Two invocations at once: the `with` run holds its workspace until the `without` run has
    finished (a marker, not a delay: the test needs no timing). Unsandboxed, the `with` run's
    workspace sits under a parent nobody can list, with a random name, so a `without` run that
    globs for it finds nothing — unless it runs as root (root bypasses permissions): then its
    evidence reports the tested skill, a breach the engine sees, never a silent pass. In the
    engine's sandbox (needs bubblewrap) the `without` run sees no other invocation's files,
    root or not."""
    if sandbox == "on" and (shutil.which("bwrap") is None or sys.platform != "linux"):
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    tmpdir = tmp_path / "shared-tmp"
    tmpdir.mkdir()
    done = tmp_path / "without-done"
    glob = [("bash", {"command": "cat $TMPDIR/../../*/skills/*/SKILL.md 2>&1"})]
    wait = f"for i in $(seq 1200); do [ -e {done} ] && break; sleep 0.1; done"
    hold = [("bash", {"command": wait})]
    with FakePiModel(Behaviour(script=hold)) as busy_model, \
            FakePiModel(Behaviour(script=glob)) as glob_model:  # fmt: skip
        busy_env = runner_env(busy_model, tmp_path, {"TMPDIR": str(tmpdir)})
        busy = subprocess.Popen(
            [sys.executable, "-m", "skill_evals", "runner", "pi", "--bin", pi_binary,
             "--model", "fake"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**busy_env, "EVALGATE_SKILL_VARIANT": "with",
                 "EVALGATE_SKILL_DIR": str(skills["refund-policy"])},
        )  # fmt: skip
        assert busy.stdin is not None
        busy.stdin.write(REFUND_PROMPT)
        busy.stdin.close()
        try:
            for _ in range(1200):  # until the `with` workspace holds its skill
                if any((w / "skills" / "refund-policy").is_dir() for w in workspaces_in(tmpdir)):
                    break
                time.sleep(0.05)
            glob_env = runner_env(glob_model, tmp_path, {"TMPDIR": str(tmpdir)})
            glob_env.update(EVALGATE_SKILL_VARIANT="without")
            glob_env.update(EVALGATE_SKILL_DIR=str(skills["refund-policy"]))
            argv = [sys.executable, "-m", "skill_evals", "runner", "pi", "--bin", pi_binary]
            argv += ["--model", "fake"]
            if sandbox == "on":
                argv = _sandboxed(argv, glob_env, tmp_path, pi_binary)
            proc = subprocess.run(
                argv, input=REFUND_PROMPT, capture_output=True, text=True, timeout=120,
                env=glob_env,
            )  # fmt: skip
        finally:
            done.touch()
            busy.wait(timeout=120)
        shown = any("Refunds within 30 days" in str(body) for body in glob_model.requests)
    assert proc.returncode == 0, proc.stderr
    line = json.loads(proc.stdout)
    assert line["invokedSkills"] == (["refund-policy"] if shown else [])
    # Only root lists the private parent, and only outside the sandbox.
    assert shown == (sandbox == "off" and os.geteuid() == 0)


@pytest.mark.agents
def test_neighbour_is_offered_in_both_variants_and_reported_when_loaded(
    pi_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    with FakePiModel(Behaviour(load_neighbour="shipping-times")) as model:
        env = runner_env(model, tmp_path)
        neighbour = ["--with-skill", str(skills["shipping-times"])]
        proc, without = run_runner(pi_binary, "without", skills["refund-policy"], env, *neighbour)
        assert proc.returncode == 0, proc.stderr
        proc, with_ = run_runner(pi_binary, "with", skills["refund-policy"], env, *neighbour)
        assert proc.returncode == 0, proc.stderr
    assert without["invokedSkills"] == ["shipping-times"]
    # pi runs the two reads in parallel, so either may complete first
    assert sorted(with_["invokedSkills"]) == ["refund-policy", "shipping-times"]
    assert "3 to 5 working days" in without["output"]


@pytest.mark.agents
def test_fixture_skill_is_offered_and_reported_and_no_secret_reaches_disk(
    pi_binary: str,
    skills: dict[str, Path],
    model: FakePiModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A skill the fixture brings in .agents/skills is part of the project: passed with --skill
    (pi's own discovery is off), offered in both variants and reported when loaded. The key
    reaches pi (the model server saw it) but no file of the kept workspace (agent dir with
    settings and models.json, stderr, transcript) nor the saved transcript holds it."""
    secret = "sk-pi-test-9e1f3a5c7b2d4f6a8c0e2b4d"
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    fixture = tmp_path / "fixture"
    write_skill(
        fixture / ".agents" / "skills", "shipping-times", SHIPPING_DESCRIPTION, SHIPPING_BODY
    )
    transcripts = tmp_path / "transcripts"
    env = runner_env(
        model,
        tmp_path,
        {"SKILL_EVALS_PI_API_KEY": secret, "SKILL_EVALS_TRANSCRIPT_DIR": str(transcripts)},
    )
    invocation = AgentInvocation(
        "without", skills["refund-policy"], "fixture", 1, "What are the shipping times for parcels?"
    )
    options = AgentOptions(bin=pi_binary, model="fake", fixture=fixture, keep_workspace=True)
    result = pi.run(invocation, options, env)
    assert result.invoked_skills == ["shipping-times"] and "working days" in result.output
    (prompt, *_) = model.system_prompts()
    assert "<name>shipping-times</name>" in prompt and "<name>refund-policy</name>" not in prompt
    assert any(secret in credential for credential in model.credentials)
    (kept,) = workspaces_in(private_tmp)
    assert (kept / "transcript.jsonl").is_file() and (kept / "home" / ".pi" / "agent").is_dir()
    assert (transcripts / "fixture.1.without.jsonl").is_file()
    assert files_holding([kept, transcripts], secret) == []
    assert secret not in result.to_line()


@pytest.mark.agents
def test_commands_the_model_runs_never_see_the_api_key(
    pi_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """pi's bash tool is the runner's extension, whose spawn hook drops credential-like
    variables (as Codex's shell_environment_policy does), even when the project's own
    .pi/settings.json (which overrides the agent dir's) names a plain shell; the request itself
    was still authorised."""
    extra = {"SKILL_EVALS_PI_API_KEY": "sk-pi-not-a-secret-1", "GITHUB_TOKEN": "gh-not-a-secret-2"}
    fixture = tmp_path / "fixture"
    (fixture / ".pi").mkdir(parents=True)
    plain = {"shellPath": "/bin/sh", "shellCommandPrefix": "export LEAK=1"}
    (fixture / ".pi" / "settings.json").write_text(json.dumps(plain), encoding="utf-8")
    with FakePiModel(Behaviour(run_command="env")) as model:
        proc, line = run_runner(
            pi_binary, "with", skills["refund-policy"], runner_env(model, tmp_path, extra),
            "--fixture", str(fixture),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        outputs = [r for body in model.requests for r in parse_request(body).tool_results.values()]
        credentials = list(model.credentials)
    assert outputs and any("HOME=" in o for o in outputs) and any("PATH=" in o for o in outputs)
    assert not any("not-a-secret" in o for o in outputs)
    assert not any("LEAK=" in o for o in outputs)  # the project's shell settings do not apply
    assert any("sk-pi-not-a-secret-1" in c for c in credentials)
    assert line["exitCode"] == 0 and line["invokedSkills"] == []


@pytest.mark.agents
def test_failed_read_is_not_reported(
    pi_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    with FakePiModel(Behaviour(fail_read=True)) as model:
        proc, line = run_runner(
            pi_binary, "with", skills["refund-policy"], runner_env(model, tmp_path)
        )
        assert len(model.requests) == 2  # the read was attempted and its error sent back
    assert proc.returncode == 0, proc.stderr
    assert line["invokedSkills"] == []
    assert line["output"] == GENERIC_ANSWER


@pytest.mark.agents
def test_max_turns_stops_pi_with_the_turn_limit_reason(
    pi_binary: str, skills: dict[str, Path], model: FakePiModel, tmp_path: Path
) -> None:
    env = runner_env(model, tmp_path)
    proc, line = run_runner(pi_binary, "with", skills["refund-policy"], env, "--max-turns", "1")
    assert proc.returncode == 0 and proc.stderr == ""  # the reason goes to the engine
    assert line == {"runnerError": "agent turn limit reached (--max-turns 1) before a final "
                    "answer; raise --max-turns", "retryable": False}  # fmt: skip


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
def test_pi_dies_with_the_runner_group(
    pi_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """The engine kills the runner's process group on a timeout: pi must be in it."""
    with FakePiModel(Behaviour(hang=True)) as model:
        env = runner_env(model, tmp_path)
        env.update(EVALGATE_SKILL_VARIANT="with", EVALGATE_SKILL_DIR=str(skills["refund-policy"]))
        proc = subprocess.Popen(
            [sys.executable, "-m", "skill_evals", "runner", "pi", "--bin", pi_binary,
             "--model", "fake"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=env, start_new_session=True,
        )  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.write(REFUND_PROMPT.encode())
        proc.stdin.close()
        deadline = time.monotonic() + 60
        while not model.requests and time.monotonic() < deadline:
            time.sleep(0.1)
        assert model.requests, "pi never called the model"
        members = _group_members(proc.pid)
        assert len(members) >= 2  # the runner and pi (node)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while _group_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _group_members(proc.pid) == []


@pytest.mark.agents
def test_api_failures_are_reasons_by_status_and_a_429_is_retried(
    pi_binary: str, skills: dict[str, Path], tmp_path: Path
) -> None:
    """A failed model call is the runner's own reason (the run is void, as for Claude Code and
    Codex), by the status pi reports; pi retries once at most, so one 429 is retried."""
    expected = {401: ("auth refused", False), 429: ("rate limited", True),
                529: ("overloaded", True), 500: ("server error", True)}  # fmt: skip

    def fails(status: int) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], int]:
        with FakePiModel(Behaviour(fail_status=status)) as model:
            proc, line = run_runner(
                pi_binary, "with", skills["refund-policy"], runner_env(model, tmp_path),
                prompt="SECRET-PROMPT-TEXT about refunds for store purchases",
            )  # fmt: skip
            return proc, line, len(model.requests)

    def retried() -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
        with FakePiModel(Behaviour(fail_first=[429])) as model:
            return run_runner(pi_binary, "with", skills["refund-policy"],
                              runner_env(model, tmp_path))  # fmt: skip

    # Independent runs that mostly wait on pi's retry backoff: all at once.
    with ThreadPoolExecutor(max_workers=len(expected) + 1) as pool:
        failed = dict(zip(expected, pool.map(fails, expected), strict=True))
        proc, line = pool.submit(retried).result()
    assert proc.returncode == 0 and line["invokedSkills"] == ["refund-policy"]
    for status, (words, retryable) in expected.items():
        proc, line, requests = failed[status]
        assert 1 <= requests <= 2  # the first request and one retry at most
        assert proc.returncode == 0 and set(line) == {"runnerError", "retryable"}
        assert words in line["runnerError"] and f"HTTP {status}" in line["runnerError"], line
        assert line["retryable"] is retryable
        assert "SECRET-PROMPT-TEXT" not in proc.stderr + proc.stdout
        assert "scripted failure" not in proc.stderr + proc.stdout


@pytest.mark.agents
def test_pi_that_cannot_start_is_a_setup_error(
    pi_binary: str, skills: dict[str, Path], model: FakePiModel, tmp_path: Path
) -> None:
    env = runner_env(model, tmp_path)
    del env["SKILL_EVALS_PI_BASE_URL"]
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "runner", "pi", "--bin", pi_binary,
         "--model", "no-such-provider/none"],
        input="SECRET-PROMPT-TEXT", capture_output=True, text=True, timeout=120,
        env={**env, "EVALGATE_SKILL_VARIANT": "with",
             "EVALGATE_SKILL_DIR": str(skills["refund-policy"])},
    )  # fmt: skip
    assert proc.returncode == 2
    line = json.loads(proc.stdout)
    assert "before the agent finished" in line["runnerError"] and line["retryable"] is False
    assert "before the agent finished" in proc.stderr
    assert "SECRET-PROMPT-TEXT" not in proc.stderr + proc.stdout


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
def test_full_skill_evals_run_through_pi(
    pi_binary: str, skills: dict[str, Path], model: FakePiModel, tmp_path: Path
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
    runner = (
        f"{sys.executable} -m skill_evals runner pi --bin {pi_binary} --model fake "
        f"--with-skill {skills['shipping-times']}"
    )
    report_path = tmp_path / "report.json"
    # The first request and pi's one retry are rate limited: the runner says so (retryable)
    # and the engine runs that invocation again.
    model.behaviour.fail_first = [429, 429]
    # One invocation's (case 1, `with`), whatever runs beside it.
    model.behaviour.fail_prompt, model.behaviour.fail_offered = SUITE[0][1], "refund-policy"
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skills["refund-policy"]),
         "--cases", str(cases), "--runner", runner, "--trials", "1", "--jobs", "2",
         "--timeout-ms", "120000", "--min-trigger-f1", "0.9", "--min-uplift", "0.1",
         "--report", str(report_path)],
        capture_output=True, text=True, timeout=900,
        # A key, as a user gives one: in the contained network the model is reached only
        # through the credential proxy (the scripted model takes any key).
        env=runner_env(model, tmp_path, {"SKILL_EVALS_TRANSCRIPT_DIR": str(tmp_path / "saved"),
                                         "SKILL_EVALS_PI_API_KEY": "pi-test-key"}),
    )  # fmt: skip
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert_valid_report(report)
    assert report["runner"]["failures"] == [], proc.stderr
    assert report["sandbox"]["network"] == "model"
    assert report["runner"]["retried"] == 1
    trigger = report["trigger"]
    assert (trigger["tp"], trigger["fp"], trigger["fn"], trigger["tn"]) == (6, 0, 0, 4)
    assert trigger["f1"] == 1.0
    task = report["task"]
    assert task["units"] == 10 and task["insufficient"] is False
    assert (task["with"]["passed"], task["without"]["passed"]) == (10, 4)
    assert task["difference"] == 0.6
    assert task["signTest"]["positive"] == 6 and task["signTest"]["negative"] == 0
    assert task["signTest"]["pValue"] == 0.03125
    assert 0.1 < task["interval"]["lower"] <= 0.6 <= task["interval"]["upper"]
    assert report["loading"]["violations"] == []
    assert report["runner"]["invocations"] == 21  # 20 and the retried one
    assert proc.returncode == 0 and report["exitCode"] == 0 and report["status"] == "pass"
    assert workspaces_in(tmp_path / "tmpdir") == []  # every workspace removed
    # The runner's claims are the saved transcripts' evidence, case by case.
    for case_id, _, expect, _ in SUITE:
        for variant in ("with", "without"):
            saved = read_events(tmp_path / "saved" / f"{case_id}.1.{variant}.jsonl")
            loaded = set(loaded_names(pi.find_loads(saved, None, SKILLS)))
            wanted = {"refund-policy"} if expect and variant == "with" else set()
            if case_id.startswith("ship-"):
                wanted.add("shipping-times")
            assert loaded == wanted, (case_id, variant)


def test_fixture_skill_in_a_differently_named_folder_is_reported_by_name(tmp_path: Path) -> None:
    """A stand-in `pi` replays a read of the fixture skill's SKILL.md, which shows its folder
    (`ship`); the runner reports the skill by its name."""
    fixture = tmp_path / "fixture"
    write_skill(fixture / ".agents" / "skills", "shipping-times").rename(
        fixture / ".agents" / "skills" / "ship"
    )
    path = "/w/project/.agents/skills/ship/SKILL.md"
    lines = [
        {"type": "tool_execution_start", "toolCallId": "a", "toolName": "read",
         "args": {"path": path}},
        {"type": "tool_execution_end", "toolCallId": "a", "toolName": "read", "isError": False,
         "result": {"content": [{"type": "text", "text": skill_md("shipping-times")}]}},
        {"type": "message_end", "message": {"role": "assistant", "stopReason": "stop",
                                            "content": [{"type": "text", "text": "ok"}]}},
        {"type": "agent_end"},
    ]  # fmt: skip
    stand_in = tmp_path / "pi"
    stand_in.write_text(
        "#!/bin/sh\ncat >/dev/null\ncat <<'EOF'\n"
        + "".join(json.dumps(line) + "\n" for line in lines)
        + "EOF\n",
        encoding="utf-8",
    )
    stand_in.chmod(0o755)
    skill = write_skill(tmp_path / "s", "refund-policy")
    invocation = AgentInvocation("without", skill, "c", 1, "When will my parcel arrive?")
    result = pi.run(invocation, AgentOptions(bin=str(stand_in), fixture=fixture),
                    {"PATH": os.environ["PATH"]})  # fmt: skip
    assert (result.invoked_skills, result.output, result.exit_code) == (["shipping-times"], "ok", 0)
