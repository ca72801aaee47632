"""The GitHub Copilot CLI runner: fast tests of the evidence parser on transcripts captured from
the real CLI (fixtures/copilot/capture.py) and of the runner's setup, and end-to-end tests
(``-m agents``) that drive the real pinned Copilot CLI, sandboxed, against the scripted model
of tests/agents/fake_copilot_model.py. Which skills reached the model is read from what that
server received, never from our own parser."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents import copilot
from skill_evals.agents.base import AgentOptions, RunnerError
from skill_evals.agents.content import SkillText
from skill_evals.agents.copilot_events import final_text, read_transcript, tool_calls, usage_meta
from skill_evals.agents.copilot_outcome import failures_line, outcome, stopper
from skill_evals.agents.evidence import Load, loaded_names, read_events
from skill_evals.agents.proof import prove
from skill_evals.agents.protocol import Finished
from skill_evals.sandbox.credential_proxy import builtin_credentials
from tests.agents.conftest import agent_binary, workspaces_in
from tests.agents.e2e import (
    caller_env,
    gated_repo,
    passed_gate,
    result_line,
    run_runner_cli,
    run_test_cli,
)
from tests.agents.fake_copilot_model import GENERIC_ANSWER, REFUSAL, Behaviour, FakeCopilotModel
from tests.conftest import assert_valid_report, write_jsonl, write_skill

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "copilot"
sys.path.insert(0, str(FIXTURES))
from capture import NEIGHBOUR, PROMPT, SKILL  # noqa: E402

TEXTS = [SkillText.of("refund-policy", SKILL), SkillText.of("shipping-times", NEIGHBOUR)]
# A line of each SKILL.md that only that skill holds: how the server side tells them apart.
UNIQUE = {"refund-policy": "gift cards are never refundable", "shipping-times": "3 to 5 working"}
SCRIPTED_KEY = "sk-scripted-key-0042"


def events(name: str) -> list[dict[str, Any]]:
    return read_events(FIXTURES / f"{name}.jsonl")


def proved(evs: Sequence[dict[str, Any]], skills: Sequence[SkillText] = TEXTS) -> list[Load]:
    known = frozenset({"refund-policy", "shipping-times"})
    return prove(copilot.PLUGIN, evs, skills, available=known)


def states(evs: Sequence[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return [(x.skill, x.state, x.delivery, x.source) for x in proved(evs)]


def _marker(evs: Sequence[dict[str, Any]]) -> int:
    return next(i for i, e in enumerate(evs) if e.get("type") == "skill_evals_session")


# ------------------------------------------------------------------ the parser, on real runs


def test_a_skill_call_confirmed_by_the_session_is_a_native_load() -> None:
    assert states(events("with")) == [("refund-policy", "loaded", "native", "skill tool")]
    assert states(events("without")) == []
    (call,) = [c for c in tool_calls(events("with")) if c.name == "skill"]
    assert "gift cards are never refundable" in call.result  # the body, not "loaded successfully"


def test_a_skill_call_without_the_session_records_is_only_attempted() -> None:
    """The stream alone says "loaded successfully": nothing there shows the body."""
    evs = events("with")
    assert states(evs[: _marker(evs)]) == [("refund-policy", "attempted", "native", "skill tool")]
    session = evs[_marker(evs) + 1 :]  # a raw session file is understood on its own
    assert states(session) == [("refund-policy", "loaded", "native", "skill tool")]


def test_two_skills_in_one_turn_keep_the_models_call_order() -> None:
    evs = events("two-skills")
    assert loaded_names(proved(evs)) == ["refund-policy", "shipping-times"]
    # Whatever order Copilot finishes them in: swap the two completions.
    done = [i for i, e in enumerate(evs[: _marker(evs)]) if e["type"] == "tool.execution_complete"]
    swapped = list(evs)
    swapped[done[0]], swapped[done[1]] = evs[done[1]], evs[done[0]]
    assert loaded_names(proved(swapped)) == ["refund-policy", "shipping-times"]


def test_failed_calls_and_reads_of_a_missing_skill_md_are_failed() -> None:
    """A skill call naming nothing installed, a view of a missing SKILL.md and a `cat` of it
    (exit 1, "No such file"): failed, never loaded nor unverified."""
    found = [(x.skill, x.state, x.source) for x in proved(events("failed-load"))]
    assert found == [
        ("refund-policy-missing", "failed", "skill tool"),
        ("refund-policy", "failed", "view"),
        ("refund-policy", "failed", "bash"),
    ]
    calls = [(c.name, c.ok) for c in tool_calls(events("failed-load"))]
    assert calls == [("skill", False), ("view", False), ("bash", False)]


def test_reads_count_by_content_and_encoded_reads_are_unverified() -> None:
    assert states(events("reads")) == [
        ("refund-policy", "loaded", "read", "view result"),
        ("shipping-times", "loaded", "read", "bash result"),
    ]
    # base64 of SKILL.md, then a tar of the skill's folder through base64
    encoded = ("refund-policy", "unverified", "read", "bash result")
    assert states(events("encoded")) == [encoded, encoded]


def test_an_mcp_load_is_named_by_the_servers_tool() -> None:
    assert states(events("mcp")) == [
        ("refund-policy", "loaded", "mcp", "mcp tool load_refund_policy_skill")
    ]


def test_a_sub_agents_read_is_in_the_transcript_and_counts() -> None:
    """Copilot's `task` tool runs a sub-agent whose own calls are in the stream (marked with
    the task's call id): what it read reached a model."""
    assert states(events("subagent")) == [("refund-policy", "loaded", "read", "view result")]
    assert [c.name for c in tool_calls(events("subagent"))] == ["task", "view"]
    assert usage_meta(read_transcript(events("subagent")))["turns"] == 2  # its own only
    stop = stopper(2)
    stream = events("subagent")[: _marker(events("subagent"))]
    assert stop is not None and not any(stop(e) for e in stream)


def test_answer_usage_and_turns_come_from_the_transcript() -> None:
    t = read_transcript(events("with"))
    assert final_text(t).startswith("Following the skill: Refunds within 30 days")
    assert usage_meta(t) == {"inputTokens": 200.0, "outputTokens": 24.0, "turns": 2}
    evs = events("with")
    session = read_transcript(evs[_marker(evs) + 1 :])
    assert final_text(session) == final_text(t) and usage_meta(session)["turns"] == 2


def test_void_runs_are_runner_errors_with_their_reason() -> None:
    run = Finished(1, 5.0, False)
    with pytest.raises(RunnerError, match=r"auth refused by the model API \(HTTP 401\)") as err:
        outcome(events("api-error-401"), run, AgentOptions())
    assert err.value.retryable is False
    for status, retryable in ((429, True), (529, True), (500, True), (400, False)):
        error = [
            {"type": "session.error", "data": {"statusCode": status, "message": "x"}},
            {"type": "result", "exitCode": 1},
        ]
        with pytest.raises(RunnerError, match=f"HTTP {status}") as err:
            outcome(error, run, AgentOptions())
        assert err.value.retryable is retryable
    with pytest.raises(RunnerError, match=r"turn limit reached \(--max-turns 1\)"):
        outcome(events("with"), Finished(-15, 5.0, True), AgentOptions(max_turns=1))
    with pytest.raises(RunnerError, match="no result line") as err:
        outcome([], run, AgentOptions())
    assert "--keep-workspace" in str(err.value)


def test_copilots_own_retries_are_stopped_after_one_with_the_logged_status(
    tmp_path: Path,
) -> None:
    retry = {"type": "session.info", "data": {"infoType": "model_retry", "message": "x"}}
    stop = stopper(None)
    assert [stop(e) for e in (retry, {"type": "assistant.turn_start"}, retry)] == [
        False,
        False,
        True,
    ]
    assert failures_line(tmp_path) == b""
    (tmp_path / "process-1.log").write_text(
        "".join(
            "2026-01-01T00:00:00Z [WARNING] [rust:model_events::producer] Model provider request "
            f'failed {{"stage":"inference","http_status":{status},"failure_kind":"http_error"}}\n'
            for status in (529, 429)
        ),
        encoding="utf-8",
    )
    logged = json.loads(failures_line(tmp_path))
    assert logged == {"type": "skill_evals_failed_requests", "httpStatus": [529, 429]}
    stopped = Finished(-15, 5.0, True)
    with pytest.raises(
        RunnerError,
        match=r"^rate limited by the model API \(HTTP 429\), "
        r"twice: Copilot was stopped at its second retry",
    ) as err:
        outcome([retry, retry, logged], stopped, AgentOptions())
    assert err.value.retryable is True
    with pytest.raises(RunnerError, match=r"no answer from the model API") as err:
        outcome([retry, retry], stopped, AgentOptions())
    assert err.value.retryable is True
    # the session records repeat the stream's retries: one in the stream is no retry stop
    marker = {"type": "skill_evals_session"}
    with pytest.raises(RunnerError, match="turn limit"):
        outcome([retry, marker, retry], stopped, AgentOptions(max_turns=3))


def test_evidence_command_reads_a_saved_transcript(tmp_path: Path) -> None:
    refund = tmp_path / "refund-policy"
    refund.mkdir()
    (refund / "SKILL.md").write_text(SKILL, encoding="utf-8")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "skill_evals",
            "evidence",
            "--agent",
            "copilot",
            "--skill",
            str(refund),
            str(FIXTURES / "reads.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    found = [(x["skill"], x["state"], x["agent"]) for x in json.loads(proc.stdout)]
    assert found[0] == ("refund-policy", "loaded", "copilot")


# ------------------------------------------------------------------------------ runner setup


def test_the_command_never_carries_the_prompt_and_hides_key_names() -> None:
    argv = copilot.build_command("copilot", {"COPILOT_PROVIDER_API_KEY": "v", "A": "b"}, False)
    assert argv[:3] == ["copilot", "--output-format", "json"] and "-p" not in argv
    assert "--secret-env-vars=COPILOT_PROVIDER_API_KEY" in argv and "v" not in argv
    read_only = copilot.build_command("copilot", {}, True)
    assert read_only[-4:] == ["--deny-tool", "shell", "--deny-tool", "write"]


def test_provider_and_model_are_required_and_checked() -> None:
    assert "COPILOT_PROVIDER_BASE_URL" in (copilot.provider_problem({}) or "")
    url = {"COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:9"}
    assert copilot.provider_problem(url) is None
    assert "anthropic or openai" in (
        copilot.provider_problem({**url, "COPILOT_PROVIDER_TYPE": "azure"}) or ""
    )
    assert copilot.model_of(AgentOptions(), {"COPILOT_MODEL": "m2"}) == "m2"
    assert copilot.model_of(AgentOptions(model="m1"), {"COPILOT_MODEL": "m2"}) == "m1"


def test_the_proxy_sends_the_key_the_providers_way() -> None:
    env = {"COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:9", "COPILOT_PROVIDER_API_KEY": "k"}
    (openai,) = builtin_credentials("copilot", env)
    (anthropic,) = builtin_credentials("copilot", {**env, "COPILOT_PROVIDER_TYPE": "anthropic"})
    assert (openai.style, anthropic.style) == ("bearer", "x-api-key")
    assert anthropic.base_url_env == "COPILOT_PROVIDER_BASE_URL"
    assert builtin_credentials("copilot", {"COPILOT_PROVIDER_API_KEY": "k"}) == []


def test_another_release_is_one_warning_and_the_pinned_one_none(tmp_path: Path) -> None:
    from skill_evals.agents.registry import entry
    from skill_evals.agents.versions import version_warning

    stand_in = tmp_path / "copilot"
    stand_in.write_text("#!/bin/sh\necho 'GitHub Copilot CLI 1.1.3.'\n", encoding="utf-8")
    stand_in.chmod(0o755)
    env = {"PATH": os.environ["PATH"]}
    assert version_warning(entry("copilot"), str(stand_in), env) == (
        f"copilot: found copilot 1.1.3 ({stand_in}); tested with 1.0.102, results may differ; "
        "install it: npm install -g @github/copilot@1.0.102"
    )
    assert version_warning(entry("copilot"), agent_binary("copilot"), env) is None


def test_a_tested_skill_named_like_a_bundled_one_is_exit_5_before_any_run(
    tmp_path: Path,
) -> None:
    skill = write_skill(tmp_path / "skills", "github-pr-media")
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [{"id": f"c{i}", "prompt": f"upload {i}", "expectTrigger": True} for i in range(10)],
    )
    proc = run_test_cli(skill, cases, "skill-evals runner copilot --model m", timeout=60)
    assert proc.returncode == 5, proc.stderr
    assert "skill 'github-pr-media'" in proc.stderr and "bundles a skill" in proc.stderr


# -------------------------------------------------------------- the real CLI, end to end

SUITE = [  # (id, prompt, expect trigger, expected answer words or None: trigger only)
    ("refund-1", "Can I get refunds on store purchases without receipts?", True, "30 days"),
    ("refund-2", "Are refunds on store purchases paid by card?", True, "30 days"),
    ("refund-3", "Refunds for store purchases bought on sale?", True, "30 days"),
    # Copilot retries a 429 itself (retry-after honoured) and then succeeds.
    ("refund-429", "Refunds for store purchases after a 429 please?", True, "30 days"),
    # Two 529s in a row: the runner stops Copilot at its second retry and reports a retryable
    # reason; the engine's --retries runs the invocation again.
    ("refund-529", "Refunds for store purchases after an overload please?", True, "30 days"),
    # Both skills in one reply.
    ("both", "Refunds and shipping times for store purchases of parcels?", True, "30 days"),
    # A skill call that fails (a name not installed), then the real one.
    ("misnamed", "Refunds on store purchases with a misnamed skill?", True, "30 days"),
    ("other-1", "How do I reverse a linked list in Python?", False, None),
    ("other-2", "Write a haiku about autumn leaves.", False, None),
    ("refusal", "Tell me something forbidden about autumn.", False, None),
]
BEHAVIOUR = Behaviour(
    by_prompt=(
        ("after a 429", Behaviour(fail=(429,), retry_after=1)),
        (
            "after an overload",
            Behaviour(fail=(529,) * 2, retry_after=1, fail_offered="refund-policy"),
        ),
        (
            "misnamed",
            Behaviour(
                script=(
                    (("skill", {"skill": "refund-polcy"}),),
                    (("skill", {"skill": "refund-policy"}),),
                )
            ),
        ),
        ("forbidden", Behaviour(refuse=True)),
    )
)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One sandboxed `skill-evals test` run of the real Copilot CLI over SUITE (both arms, the
    shipping skill offered as a neighbour), its key only through the credential proxy."""
    if shutil.which("bwrap") is None or not sys.platform.startswith("linux"):
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    binary = agent_binary("copilot")
    root = tmp_path_factory.mktemp("copilot-suite")
    for name, text in (("refund-policy", SKILL), ("shipping-times", NEIGHBOUR)):
        (root / "skills" / name).mkdir(parents=True)
        (root / "skills" / name / "SKILL.md").write_text(text, encoding="utf-8")
    rows = [
        {"id": i, "prompt": p, "expectTrigger": t}
        | ({"task": {"check": "includes_all", "expected": [w]}} if w else {})
        for i, p, t, w in SUITE
    ]
    cases = write_jsonl(root / "cases.jsonl", rows)
    key = "sk-copilot-" + secrets.token_hex(16)
    runner = (
        f"{sys.executable} -m skill_evals runner copilot --bin {binary} "
        f"--model claude-sonnet-4 --with-skill {root / 'skills' / 'shipping-times'}"
    )
    with FakeCopilotModel(BEHAVIOUR) as model:
        saved = {"SKILL_EVALS_TRANSCRIPT_DIR": str(root / "saved")}
        env = caller_env(root, ("COPILOT_",), _provider(model.url, key), saved)
        done = run_test_cli(
            root / "skills" / "refund-policy", cases, runner,
            "--trials", "1", "--jobs", "2", "--retries", "1", "--sandbox", "required",
            "--min-trigger-f1", "0.9", "--report", str(root / "report.json"),
            env=env, cwd=root,
        )  # fmt: skip
        yield {
            "done": done,
            "model": model,
            "key": key,
            "root": root,
            "report": json.loads((root / "report.json").read_text(encoding="utf-8")),
        }


@pytest.mark.agents
def test_the_suite_passes_sandboxed_with_retries_and_the_key_only_upstream(
    suite: dict[str, Any],
) -> None:
    done, report, model = suite["done"], suite["report"], suite["model"]
    assert_valid_report(report)
    assert report["runner"]["failures"] == [], done.stderr
    assert report["sandbox"]["mode"] == "bwrap"
    assert report["sandbox"]["proxied"] == ["COPILOT_PROVIDER_API_KEY"]
    trigger = report["trigger"]
    assert (trigger["tp"], trigger["fp"], trigger["fn"], trigger["tn"]) == (7, 0, 0, 3)
    assert report["loading"]["violations"] == []
    assert report["runner"]["retried"] == 1  # the 529 invocation, once
    # Offline: nothing but the model was contacted or tried, in either arm.
    behaviour = report["behaviour"]
    assert behaviour["findings"] == [], behaviour
    for arm in behaviour["arms"].values():
        assert arm["refused"] == [] and len(arm["contacted"]) == 1, behaviour
    assert done.returncode == 0 and report["status"] == "pass", done.stderr
    assert set(model.credentials) == {suite["key"]}  # the real key, upstream only
    assert 429 in model.failed and model.failed.count(529) == 2
    for path in (suite["root"] / "saved").iterdir():
        assert suite["key"] not in path.read_text(encoding="utf-8")
    assert workspaces_in(suite["root"] / "tmpdir") == []


@pytest.mark.agents
def test_what_reached_the_model_is_what_the_runner_reports(suite: dict[str, Any]) -> None:
    """Server side: per conversation, which skills' bodies the model received; runner side:
    the loads its saved transcript proves. Copilot's bundled skills are never offered."""
    model, saved = suite["model"], suite["root"] / "saved"
    received = model.received(UNIQUE)
    arms = {"with": frozenset(UNIQUE), "without": frozenset({"shipping-times"})}
    for case_id, prompt, _, _ in SUITE:
        for variant, offered in arms.items():
            ours = loaded_names(proved(read_events(saved / f"{case_id}.1.{variant}.jsonl")))
            assert ours == received[(prompt, offered)], (case_id, variant)
    both = received[(SUITE[5][1], arms["with"])]
    assert both == ["refund-policy", "shipping-times"]
    assert received[(SUITE[6][1], arms["with"])] == ["refund-policy"]  # after a failed call
    assert set(received) == {(p, o) for _, p, _, _ in SUITE for o in arms.values()}


@pytest.mark.agents
def test_a_refusal_is_the_models_answer(suite: dict[str, Any]) -> None:
    saved = suite["root"] / "saved"
    evs = read_events(saved / "refusal.1.with.jsonl")
    assert final_text(read_transcript(evs)) == REFUSAL
    assert proved(evs) == []


@pytest.mark.agents
def test_mcp_delivery_serves_the_skill_and_is_reported(tmp_path: Path) -> None:
    """--delivery mcp: no project skill, the skill is a `skills-load_<name>_skill` tool the
    model calls; its result (the SKILL.md) reached the model."""
    skill = tmp_path / "skills" / "refund-policy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL, encoding="utf-8")
    with FakeCopilotModel() as model:
        proc = _copilot_run(tmp_path, skill, _provider(model.url), ["--delivery", "mcp"])
        received = model.received(UNIQUE)
    line = result_line(proc)
    assert line["invokedSkills"] == ["refund-policy"], proc.stderr
    assert {
        "skill": "refund-policy",
        "state": "loaded",
        "delivery": "mcp",
        "source": "mcp tool load_refund_policy_skill",
    } in line["evidence"]
    assert received == {(PROMPT, frozenset({"refund-policy"})): ["refund-policy"]}
    assert line["toolCalls"] == [{"name": "load_refund_policy_skill", "input": {}, "ok": True}]


@pytest.mark.agents
def test_the_turn_limit_stops_copilot_and_is_a_runner_error(tmp_path: Path) -> None:
    """--max-turns 1: the model loads the skill in its first turn; Copilot is stopped when it
    starts the second, and the run is void (not retryable)."""
    skill = write_skill(tmp_path / "skills")
    with FakeCopilotModel() as model:
        proc = _copilot_run(tmp_path, skill, _provider(model.url), ["--max-turns", "1"])
    line = result_line(proc)
    assert line == {
        "runnerError": "agent turn limit reached (--max-turns 1) before a final "
        "answer; raise --max-turns",
        "retryable": False,
    }, proc.stderr
    assert len(model.requests) <= 2 and workspaces_in(tmp_path / "tmpdir") == []


def _provider(url: str, key: str = SCRIPTED_KEY, kind: str = "anthropic") -> dict[str, str]:
    """The caller's COPILOT_PROVIDER_* settings for a model API at ``url`` with ``key``."""
    return {
        "COPILOT_PROVIDER_BASE_URL": url,
        "COPILOT_PROVIDER_TYPE": kind,
        "COPILOT_PROVIDER_API_KEY": key,
    }


def _copilot_run(
    tmp_path: Path,
    skill: Path,
    settings: dict[str, str],
    args: Sequence[str] = (),
    variant: str = "with",
    prompt: str = PROMPT,
    timeout: float = 120,
    extra: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``skill-evals runner copilot`` (claude-sonnet-4, then ``args``) for one ``variant`` of
    ``skill``, the caller's environment with ``settings`` and ``extra``."""
    argv = ["copilot", "--bin", agent_binary("copilot"), "--model", "claude-sonnet-4", *args]
    env = caller_env(tmp_path, ("COPILOT_",), settings, extra)
    return run_runner_cli(argv, variant, skill, env, prompt, timeout)


SHAPES = ("glob-skill", "loop-skill", "cd-skill", "dotdot-skill", "python-skill")
SKILLS_DIR = "{cwd}/.github/skills"


def _shapes_run(tmp_path: Path, variant: str, script: tuple[Any, ...], names: Sequence[str]) -> Any:
    """The runner with the tested skill and ``names`` as neighbours, the model running
    ``script`` (one call per turn); its result line and saved transcript."""
    from tests.agents.scripts import shape_body, shape_description

    skill = write_skill(tmp_path / "skills")
    args = []
    for name in names:
        path = write_skill(tmp_path / "shapes", name, shape_description(name), shape_body(name))
        args += ["--with-skill", str(path)]
    saved = {"SKILL_EVALS_TRANSCRIPT_DIR": str(tmp_path / "saved")}
    with FakeCopilotModel(Behaviour(script=tuple((call,) for call in script))) as model:
        proc = _copilot_run(
            tmp_path, skill, _provider(model.url), args, variant, "Do the steps.", 180, saved
        )
    assert proc.returncode == 0, proc.stderr
    return result_line(proc), tmp_path / "saved" / f"case.1.{variant}.jsonl"


def _bash(command: str) -> tuple[str, dict[str, str]]:
    """A scripted call of Copilot's ``bash`` tool."""
    return ("bash", {"command": command, "description": "step"})


@pytest.mark.agents
def test_every_way_of_reading_a_skill_counts_by_content(tmp_path: Path) -> None:
    """Globs, loops, cd, ../ paths, Python through `bash`, and `view`: whatever shows the
    content is a load, in the order the calls were made."""
    from tests.agents.conftest import keep_fixture

    script = (
        _bash(f"cat {SKILLS_DIR}/glob*/SKILL.md"),
        _bash(f'for d in {SKILLS_DIR}/loop*; do cat "$d/SKILL.md"; done'),
        _bash(f"cd {SKILLS_DIR}/cd-skill && cat SKILL.md"),
        _bash(f"cat {SKILLS_DIR}/../skills/dotdot-skill/../dotdot-skill/SKILL.md"),
        _bash("python3 -c \"print(open('{skill:python-skill}').read())\""),
        ("view", {"path": "{skill:refund-policy}"}),
    )
    line, saved = _shapes_run(tmp_path, "with", script, SHAPES)
    keep_fixture(saved, "copilot", "shapes-read")
    assert line["invokedSkills"] == [*SHAPES, "refund-policy"]


@pytest.mark.agents
def test_calls_that_only_name_a_skill_are_never_loads(tmp_path: Path) -> None:
    """A failed `cat … || echo`, `ls`, `test -f`, `echo`, a view of a missing file and a view
    past the end name SKILL.md paths and show no content: never loads."""
    from tests.agents.conftest import keep_fixture

    script = (
        _bash(f"cat {SKILLS_DIR}/refund-policy/SKILL.md 2>/dev/null || echo no"),
        _bash("ls -l {skill:glob-skill}"),
        _bash("test -f {skill:glob-skill} && echo present"),
        _bash("echo {skill:glob-skill}"),
        ("view", {"path": f"{SKILLS_DIR}/refund-policy/SKILL.md"}),
        ("view", {"path": "{skill:glob-skill}", "view_range": [500, 600]}),
    )
    line, saved = _shapes_run(tmp_path, "without", script, ["glob-skill"])
    keep_fixture(saved, "copilot", "shapes-named")
    assert line["invokedSkills"] == []
    states = {(e["skill"], e["state"]) for e in line["evidence"]}
    assert ("refund-policy", "failed") in states and ("glob-skill", "unverified") in states
    assert not any(state == "loaded" for _, state in states)


@pytest.mark.agents
def test_copilots_own_retries_stop_after_one_behind_a_dead_upstream(tmp_path: Path) -> None:
    """The credential proxy answers 502 (its upstream is gone): Copilot retries once, is
    stopped at its second retry, and the reason names the status it logged."""
    from skill_evals.sandbox.credential_proxy import Credential, CredentialProxy

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    upstream = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    closed.close()  # nothing listens there now
    skill = write_skill(tmp_path / "skills")
    credential = Credential("COPILOT_PROVIDER_API_KEY", "x-api-key", upstream, None, "k-dead")
    with CredentialProxy([credential]) as proxy:
        url = proxy.url("COPILOT_PROVIDER_API_KEY")
        proc = _copilot_run(tmp_path, skill, _provider(url, "skill-evals-proxy-placeholder"))
    line = result_line(proc)
    assert line["runnerError"].startswith(
        "server error from the model API (HTTP 502), twice: Copilot was stopped at its second retry"
    ), proc.stderr
    assert line["retryable"] is True and workspaces_in(tmp_path / "tmpdir") == []


@pytest.mark.agents
def test_an_error_result_is_a_final_runner_error(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    with FakeCopilotModel(Behaviour(error_result=400)) as model:
        proc = _copilot_run(tmp_path, skill, _provider(model.url))
    line = result_line(proc)
    assert line == {
        "runnerError": "the model API refused the request (HTTP 400); check "
        "COPILOT_PROVIDER_BASE_URL, COPILOT_PROVIDER_API_KEY and --model",
        "retryable": False,
    }, proc.stderr
    assert model.failed == [400] and PROMPT not in proc.stderr
    assert GENERIC_ANSWER not in proc.stdout
    assert workspaces_in(tmp_path / "tmpdir") == []


@pytest.mark.agents
def test_ci_gates_a_repository_through_copilot(tmp_path: Path) -> None:
    """`skill-evals ci --all` over a repository whose config names the Copilot runner: the
    skill's ten cases run sandboxed through the real CLI and the gate passes."""
    from tests.ci.conftest import run_cli

    rows = [{"id": i, "prompt": p, "expectTrigger": t} for i, p, t, _ in SUITE[:3] + SUITE[7:9]]
    rows += [
        {
            "id": f"more-{n}",
            "prompt": f"Refunds for store purchases number {n}?",
            "expectTrigger": True,
        }
        for n in range(3)
    ]
    rows += [
        {"id": "haiku-2", "prompt": "Write a haiku about spring rain.", "expectTrigger": False},
        {"id": "code-2", "prompt": "How do I sort a list in Python?", "expectTrigger": False},
    ]
    runner = f"{sys.executable} -m skill_evals runner copilot --bin {agent_binary('copilot')}"
    repo = gated_repo(tmp_path, SKILL, rows, runner + " --model claude-sonnet-4")
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    with FakeCopilotModel() as model:
        env = caller_env(tmp_path, ("COPILOT_",), _provider(model.url, "sk-ci-key"))
        done = run_cli(["ci", "--all", "--out", str(tmp_path / "out")], repo, env=env, timeout=600)
        assert set(model.credentials) == {"sk-ci-key"}, done.stderr[-3000:]
    passed_gate(done, tmp_path / "out", "COPILOT_PROVIDER_API_KEY")


def _plant(root: Path) -> dict[str, str]:
    """Skills and instructions where a plain Copilot run would find them: the caller's home,
    COPILOT_HOME, COPILOT_CUSTOM_INSTRUCTIONS_DIRS and a git repository above the workspace.
    Returns the caller variables pointing there (TMPDIR inside that repository)."""
    places = {
        "home-copilot": root / "home" / ".copilot" / "skills",
        "home-agents": root / "home" / ".agents" / "skills",
        "copilot-home": root / "copilot-home" / "skills",
        "above": root / "above" / ".github" / "skills",
    }
    for place, folder in places.items():
        write_skill(
            folder, f"planted-{place}", f"Planted {place} refunds store purchases receipts."
        )
    rules = root / "instructions" / ".github" / "instructions"
    rules.mkdir(parents=True)
    text = '---\napplyTo: "**"\n---\nPLANTED-instructions\n'
    (rules / "planted.instructions.md").write_text(text, encoding="utf-8")
    (root / "above" / "AGENTS.md").write_text("PLANTED-above-agents\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root / "above")], check=True)
    (root / "above" / "tmpdir").mkdir()
    return {
        "HOME": str(root / "home"),
        "COPILOT_HOME": str(root / "copilot-home"),
        "COPILOT_CUSTOM_INSTRUCTIONS_DIRS": str(root / "instructions"),
        "XDG_CONFIG_HOME": str(root / "home"),
        "TMPDIR": str(root / "above" / "tmpdir"),
    }


PLANTED = (
    "planted-home-copilot",
    "planted-home-agents",
    "planted-copilot-home",
    "planted-above",
    "PLANTED-instructions",
    "PLANTED-above-agents",
)


def _seen(model: FakeCopilotModel) -> set[str]:
    from tests.agents.fake_copilot_model import parse

    text = "\n".join(parse(body).system + "\n".join(parse(body).texts) for body in model.requests)
    return {marker for marker in PLANTED if marker in text}


@pytest.mark.agents
def test_planted_copies_and_caller_variables_never_reach_the_run(tmp_path: Path) -> None:
    """Nothing planted reaches a runner's `without` run; the same places reach a plain
    Copilot run (so they are real places), and the bundled skills are not offered."""
    planted = _plant(tmp_path)
    binary = agent_binary("copilot")
    skill = write_skill(tmp_path / "skills")
    with FakeCopilotModel() as model:
        settings = _provider(model.url) | {"COPILOT_MODEL": "claude-sonnet-4"}
        env = {**caller_env(tmp_path, ("COPILOT_",), settings), **planted}
        argv = ["copilot", "--bin", binary]
        proc = run_runner_cli(argv, "without", skill, env, PROMPT, 120)
        line = result_line(proc)
        assert line["invokedSkills"] == [] and line["output"] == GENERIC_ANSWER, proc.stderr
        assert model.offered() == set() and _seen(model) == set()
        # The same caller running Copilot itself, in the repository above: each place is real.
        # (COPILOT_HOME replaces ~/.copilot, and ~/.agents/skills with it)
        home = {"planted-copilot-home", "planted-home-copilot", "planted-home-agents"}
        for drop, found in (
            ("COPILOT_HOME", {"planted-home-copilot", "planted-home-agents"}),
            ("", {"planted-copilot-home"}),
        ):
            count = len(model.requests)
            plain = {k: v for k, v in env.items() if k != drop} | {"COPILOT_OFFLINE": "true"}
            subprocess.run(
                [binary, "--output-format", "json", "--allow-all-tools"],
                input=PROMPT,
                cwd=tmp_path / "above",
                env=plain,
                capture_output=True,
                text=True,
                timeout=120,
                check=True,
            )
            del model.requests[:count]
            assert _seen(model) == set(PLANTED) - home | found, drop
            assert {"customize-cloud-agent", "github-pr-media"} <= model.offered()
    assert workspaces_in(tmp_path / "above" / "tmpdir") == []


@pytest.mark.agents
def test_an_openai_provider_gets_its_key_as_a_bearer_token_through_the_proxy(
    tmp_path: Path,
) -> None:
    """COPILOT_PROVIDER_TYPE=openai: Copilot speaks Chat Completions (OpenCode's scripted
    server), sandboxed; the proxy sends the real key as a bearer token."""
    from tests.agents.fake_openai_chat import Behaviour as ChatBehaviour
    from tests.agents.fake_openai_chat import FakeChat

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    skill = write_skill(tmp_path / "skills")
    rows = [
        {"id": f"c{i}", "prompt": f"Hello number {i}", "expectTrigger": False} for i in range(10)
    ]
    cases = write_jsonl(tmp_path / "cases.jsonl", rows)
    key = "sk-openai-" + secrets.token_hex(12)
    runner = f"{sys.executable} -m skill_evals runner copilot --bin {agent_binary('copilot')}"
    with FakeChat(ChatBehaviour(min_overlap=99)) as model:
        settings = _provider(model.base_url, key, "openai") | {"COPILOT_MODEL": "gpt-4.1"}
        done = run_test_cli(
            skill, cases, runner,
            "--arms", "with", "--trials", "1", "--jobs", "2", "--sandbox", "required",
            "--report", str(tmp_path / "report.json"),
            env=caller_env(tmp_path, ("COPILOT_",), settings),
        )  # fmt: skip
        assert set(model.credentials) == {f"Bearer {key}"}, done.stderr[-3000:]
        assert model.offered_names() == {"refund-policy"}
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["runner"]["failures"] == [] and report["runner"]["invocations"] == 10
    assert report["sandbox"]["proxied"] == ["COPILOT_PROVIDER_API_KEY"]
    assert key not in done.stdout + done.stderr
