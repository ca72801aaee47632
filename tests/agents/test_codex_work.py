"""The Codex runner's work records: tool calls beyond commands (``file_change``, ``web_search``),
the turns read from the session file's per-response usage records (bounded, never fooled by
text inside a record), and a routing catalog served over MCP (``-m agents``, the real CLI
against tests/agents/fake_openai_responses.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents import codex
from skill_evals.agents.codex_events import SESSION_MARKER, model_turns, session_records
from skill_evals.agents.scaffold import contract_tool_calls
from tests.agents.conftest import agent_binary
from tests.agents.fake_openai_responses import Behaviour, FakeResponses
from tests.conftest import write_skill

THREAD = "01a2-thread"


def _item(kind: str, event: str = "item.completed", **fields: Any) -> dict[str, Any]:
    return {"type": event, "item": {"id": fields.pop("id", "item_1"), "type": kind, **fields}}


def test_file_changes_and_web_searches_are_tool_calls_in_call_order() -> None:
    changes = [{"path": "/w/answer.md", "kind": "add"}, {"path": "/w/a.py", "kind": "update"}]
    events = [
        _item("file_change", "item.started", id="i1", changes=changes, status="in_progress"),
        _item("file_change", id="i1", changes=changes, status="completed"),
        _item(
            "file_change", id="i2", changes=[{"path": "/w/x", "kind": "delete"}], status="failed"
        ),
        _item("web_search", id="i3", query="refund law"),
        _item("file_change", "item.started", id="i4", changes="not a list", status="in_progress"),
        _item("reasoning", id="i5", text="thinking"),
    ]
    assert contract_tool_calls(codex.tool_calls(events)) == [
        {"name": "file_change", "input": {"changes": changes}, "ok": True},
        {"name": "file_change", "input": {"changes": [{"path": "/w/x", "kind": "delete"}]},
         "ok": False},
        {"name": "web_search", "input": {"query": "refund law"}, "ok": True},
        {"name": "file_change", "input": {"changes": []}, "ok": False},  # never completed
    ]  # fmt: skip
    many = [{"path": f"/w/{i}", "kind": "add"} for i in range(500)]
    (call,) = codex.tool_calls([_item("file_change", changes=many, status="completed")])
    assert len(call.input["changes"]) == 100  # one patch touching many files stays small


def _record(response: str, thread: str = THREAD) -> dict[str, Any]:
    return {"timestamp": "t", "ordinal": 1, "type": "token_usage_record",
            "payload": {"thread_id": thread, "response_id": response}}  # fmt: skip


def test_turns_are_the_thread_s_model_responses_after_the_marker() -> None:
    started = {"type": "thread.started", "thread_id": THREAD}
    marker = {"type": SESSION_MARKER}
    records = [_record("r1"), _record("r2"), _record("r2"), _record("r9", thread="sub-agent")]
    assert model_turns([started, {"type": "turn.completed"}, marker, *records]) == 2
    assert model_turns([started, _record("r1"), marker]) is None  # before the marker: not ours
    assert model_turns([started, {"type": "turn.completed"}]) is None  # no session records
    assert model_turns([marker, _record("r1"), _record("r2", thread="x")]) == 2  # no thread id


def _rollout(home: Path, lines: list[bytes]) -> None:
    day = home / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True, exist_ok=True)
    (day / "rollout-2026-12-01T00-00-00-x.jsonl").write_bytes(b"".join(lines))


def test_session_records_keep_only_top_level_usage_records(tmp_path: Path) -> None:
    record = json.dumps(_record("r1"), separators=(",", ":")).encode() + b"\n"
    # Text that only *contains* a usage record: inside a payload, or a line too long to be one.
    nested = json.dumps({"timestamp": "t", "type": "response_item",
                         "payload": {"output": {"type": "token_usage_record"}}},
                        separators=(",", ":")).encode() + b"\n"  # fmt: skip
    huge = record[:-2] + b"," + b'"pad":"' + b"x" * 200_000 + b'"}\n'
    _rollout(tmp_path, [nested, huge, record, b"not json\n", record[:-1]])  # last: cut short
    data = session_records(tmp_path)
    lines = data.splitlines()
    assert lines[0] == b"" and json.loads(lines[1]) == {"type": SESSION_MARKER}
    assert lines[2:] == [record[:-1]]
    assert model_turns([json.loads(x) for x in lines if x]) == 1
    # Reading is bounded in all: past the limit nothing more is read.
    assert session_records(tmp_path, limit=len(nested) + 10).splitlines()[2:] == []
    assert session_records(tmp_path / "missing").splitlines()[2:] == []
    # Only regular files are read: a symlink (to a device that never ends) or a FIFO (that
    # would block) planted as a session file is skipped.
    day = tmp_path / "sessions" / "2026" / "12" / "01"
    (day / "rollout-link.jsonl").symlink_to("/dev/zero")
    os.mkfifo(day / "rollout-pipe.jsonl")
    assert session_records(tmp_path).splitlines()[2:] == [record[:-1]]


@pytest.mark.agents
def test_a_routing_catalog_served_over_mcp_offers_every_skill(tmp_path: Path) -> None:
    """SKILL_EVALS_SKILL_DIRS with --delivery mcp: the skill server offers the whole catalog,
    the model loads the matching one through its tool."""
    skills = [
        write_skill(tmp_path / "s", "refund-policy", "Answer questions about refunds, returns "
                    "and receipts for store purchases.", "# Refunds\n\nWithin 30 days.\n"),
        write_skill(tmp_path / "s", "shipping-times", "Explain delivery and shipping times for "
                    "parcels.", "# Shipping\n\nThree days.\n"),
    ]  # fmt: skip
    with FakeResponses() as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALGATE_", "CODEX_"))}
        env.update(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test-not-a-secret",
                   EVALGATE_SKILL_VARIANT="with",
                   SKILL_EVALS_SKILL_DIRS="\n".join(str(s) for s in skills))  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "skill_evals", "runner", "codex", "--bin",
             agent_binary("codex"), "--model", "fake-model", "--delivery", "mcp"],
            input=b"When will my parcel arrive, what are the shipping times?",
            capture_output=True, timeout=120, env=env,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    line = json.loads(proc.stdout)
    assert fake.offered_names() == {"refund-policy", "shipping-times"}
    assert line["invokedSkills"] == ["shipping-times"]
    assert {(e["skill"], e["delivery"]) for e in line["evidence"] if e["state"] == "offered"} == {
        ("refund-policy", "mcp"), ("shipping-times", "mcp")}  # fmt: skip
    assert line["meta"]["turns"] == 2


@pytest.mark.agents
@pytest.mark.skipif(
    os.environ.get(codex.ENV_SANDBOX, "") == "danger-full-access",
    reason="Codex's sandbox is turned off on this host",
)
def test_the_model_writes_in_the_engine_workspace_and_nowhere_else(tmp_path: Path) -> None:
    """workspace-write in the engine's workspace: the project and the private TMPDIR take
    writes; the fixture's .git, the rest of /tmp and HOME do not; nothing of the runner's is
    left in the workspace."""
    skill = write_skill(tmp_path / "s", "refund-policy", "Answer questions about refunds.")
    work = tmp_path / "W"
    (work / ".git").mkdir(parents=True)
    (work / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    script = ["echo done > made.txt", "touch .git/x", f"touch {outside}/x", 'touch "$HOME/x"',
              'touch "$TMPDIR/x" && echo tmpdir-ok']  # fmt: skip
    with FakeResponses(Behaviour(script=script)) as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALGATE_", "CODEX_"))}
        env.update(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test-not-a-secret",
                   EVALGATE_SKILL_VARIANT="with", EVALGATE_SKILL_DIR=str(skill),
                   SKILL_EVALS_WORKSPACE=str(work))  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "skill_evals", "runner", "codex", "--bin",
             agent_binary("codex"), "--model", "fake-model"],
            input=b"Do the steps.", capture_output=True, timeout=120, env=env,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    line = json.loads(proc.stdout)
    oks = [c["ok"] for c in line["toolCalls"] if c["name"] == "command_execution"]
    assert oks[0] is True and oks[-1] is True  # the project and TMPDIR
    shown = fake.seen[-1].tool_outputs  # the last request holds every output
    assert sum("Read-only file system" in o for o in shown) == 3  # .git, /tmp, HOME
    assert sorted(p.relative_to(work).as_posix() for p in work.rglob("*")) == [
        ".git", ".git/HEAD", "made.txt"]  # fmt: skip
    assert list(outside.iterdir()) == []
