"""The simulated runner: deterministic routing on description words, answers from the body,
never loads in `without`, and labels itself as a simulation."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skill_evals.agents.base import AgentInvocation, RunnerSetupError, read_invocation
from skill_evals.agents.simulated import (
    GENERIC_ANSWER,
    answer_file,
    content_words,
    run,
    should_load,
)
from tests.conftest import EXAMPLE_SKILL


def invoke(
    prompt: str, variant: str, skill: Path = EXAMPLE_SKILL
) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ,
        EVALGATE_SKILL_VARIANT=variant,
        EVALGATE_SKILL_DIR=str(skill),
        EVALGATE_SKILL_CASE_ID="c1",
        EVALGATE_SKILL_TRIAL="1",
    )
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", "runner", "simulated"],
        input=prompt,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_content_words_drop_stopwords_and_plurals() -> None:
    assert content_words("What are the Refunds for returns?") == {"refund", "return"}


def test_routing_needs_two_shared_words() -> None:
    description = "Answer questions about refunds and returns."
    assert should_load("Can I get refunds on returns?", description)
    assert not should_load("Return the list reversed", description)


def test_with_loads_and_answers_from_the_body() -> None:
    proc = invoke("Can I get a refund? I have the receipt.", "with")
    assert proc.returncode == 0
    line = json.loads(proc.stdout)
    assert line["variant"] == "with"
    assert line["invokedSkills"] == ["refund-policy"]
    assert "30 days" in line["output"]
    assert "SIMULATION" in proc.stderr


def test_json_section_answers_with_the_json_block() -> None:
    line = json.loads(invoke("Give me the refund policy windows as JSON.", "with").stdout)
    assert json.loads(line["output"]) == {
        "standardDays": 30,
        "electronicsDays": 14,
        "receiptRequired": True,
    }


def test_without_never_loads() -> None:
    line = json.loads(invoke("Can I get a refund? I have the receipt.", "without").stdout)
    assert line == {
        "variant": "without",
        "invokedSkills": [],
        "output": GENERIC_ANSWER,
        "exitCode": 0,
        "meta": {"turns": 1},
    }


def test_exactly_one_stdout_line() -> None:
    proc = invoke("Store hours?", "with")
    assert proc.stdout.count("\n") == 1


def test_missing_environment_is_a_setup_error() -> None:
    with pytest.raises(RunnerSetupError, match="EVALGATE_SKILL_VARIANT"):
        read_invocation(io.BytesIO(b"hi"), {})


def test_unreadable_skill_is_a_setup_error(tmp_path: Path) -> None:
    invocation = read_invocation(
        io.BytesIO(b"refund returns"),
        {"EVALGATE_SKILL_VARIANT": "with", "EVALGATE_SKILL_DIR": str(tmp_path)},
    )
    with pytest.raises(RunnerSetupError, match=r"SKILL\.md"):
        run(invocation)


def test_runner_exits_2_with_one_line_on_setup_error(tmp_path: Path) -> None:
    proc = invoke("refund returns", "maybe", skill=tmp_path)
    assert proc.returncode == 2
    # The runner's own reason, for the engine to report: one runnerError line, not retryable.
    assert json.loads(proc.stdout) == {
        "runnerError": "EVALGATE_SKILL_VARIANT must be 'with' or 'without'; run this through "
        "skill-evals test",
        "retryable": False,
    }
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "refund returns" not in proc.stderr


# ------------------------------------------------------------------------- workspace files


def invocation_in(workspace: Path, prompt: str, variant: str = "with") -> AgentInvocation:
    return read_invocation(
        io.BytesIO(prompt.encode()),
        {
            "EVALGATE_SKILL_VARIANT": variant,
            "EVALGATE_SKILL_DIR": str(EXAMPLE_SKILL),
            "SKILL_EVALS_WORKSPACE": str(workspace),
        },
    )


def test_answer_file_is_the_first_backticked_file_name() -> None:
    assert answer_file("Add it to `CHANGELOG.md` please") == "CHANGELOG.md"
    assert answer_file("`x` then `docs/notes.txt` then `b.md`") == "docs/notes.txt"
    assert answer_file("no file named here") == "answer.md"
    assert answer_file("`../escape.md` or `/abs.md` or `a//b.md`") == "answer.md"
    assert answer_file("unclosed `name.md") == "answer.md"
    assert answer_file("`" + "a" * 300 + ".md`") == "answer.md"
    # Linear: a long prompt of backticks and dots does not backtrack.
    assert answer_file("`" + "a." * 200_000 + "`") == "answer.md"


def test_with_a_workspace_it_appends_a_labelled_answer(tmp_path: Path) -> None:
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n", encoding="utf-8")
    result = run(
        invocation_in(tmp_path, "Can I get a refund? I have the receipt. Write to `CHANGELOG.md`.")
    )
    text = (tmp_path / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n\n[simulated] written by skill-evals runner simulated")
    assert result.output in text
    assert result.tool_calls == [
        {"name": "skill", "input": {"name": "refund-policy"}, "ok": True},
        {"name": "write", "input": {"path": "CHANGELOG.md"}, "ok": True},
    ]
    assert result.meta == {"turns": 3}
    run(invocation_in(tmp_path, "Refund rules for receipts, in `out/notes.md`", "without"))
    assert "no model was called" in (tmp_path / "out" / "notes.md").read_text(encoding="utf-8")


def test_the_simulation_never_writes_through_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace = tmp_path / "w"
    workspace.mkdir()
    (workspace / "answer.md").symlink_to(outside / "target.md")
    with pytest.raises(RunnerSetupError, match=r"cannot write answer\.md in the workspace"):
        run(invocation_in(workspace, "What is the refund policy?"))
    assert not (outside / "target.md").exists()


def test_without_a_workspace_it_writes_nothing(tmp_path: Path) -> None:
    line = json.loads(invoke("Can I get a refund? I have the receipt.", "with").stdout)
    assert line["toolCalls"] == [{"name": "skill", "input": {"name": "refund-policy"}, "ok": True}]
    assert line["meta"] == {"turns": 2}
