"""`skill-evals test` and `skill-evals ci` through the real pinned Qwen Code (``-m agents``),
sandboxed with the contained network (the default), against the scripted model of
tests/agents/fake_qwen.py: a few invocations each, the first request rate limited. Routing,
workspace tasks and ``--read-only`` are in catalog_work.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from skill_evals.agents import qwen
from skill_evals.agents.content import SkillText
from skill_evals.agents.evidence import loaded_names, read_events
from skill_evals.agents.proof import prove
from tests.agents.conftest import agent_binary, workspaces_in
from tests.agents.e2e import (
    LONG_REFUND_SKILL,
    caller_env,
    gated_repo,
    passed_gate,
    two_skills,
)
from tests.agents.fake_qwen import Behaviour, FakeQwenModel, short_tmpdir
from tests.agents.test_qwen import REFUND_BODY
from tests.conftest import assert_valid_report, write_jsonl

pytestmark = pytest.mark.agents

KEY = "sk-qwen-gate-0123456789abcdef"
# (id, prompt, expected to load refund-policy)
CASES = [
    ("receipts", "Can I get refunds on store purchases without receipts?", True),
    ("returns", "How do returns and refunds of store purchases work?", True),
    ("receipt-lost", "I lost the receipts for store purchases, refunds?", True),
    ("receipt-gift", "Refunds for store purchases given as gifts without receipts?", True),
    ("return-window", "Is there a window for returns and refunds of store purchases?", True),
    ("receipts-online", "Do online store purchases need receipts for refunds?", True),
    ("haiku", "Write a haiku about autumn leaves.", False),
    ("code", "How do I reverse a linked list in Python?", False),
    ("weather", "What is the weather like on Mars?", False),
    ("recipe", "Give me a recipe for pancakes.", False),
]  # the engine's minimum of ten independent cases


@pytest.fixture
def _short_tmpdir(tmp_path: Path) -> Iterator[Path]:
    """Every run here under a short TMPDIR (tmp_path/tmpdir links there): see short_tmpdir."""
    with short_tmpdir(tmp_path) as link:
        yield link


def _bwrap() -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")


def test_a_sandboxed_test_run_gates_on_what_reached_the_model(
    tmp_path: Path, _short_tmpdir: Path
) -> None:
    """Ten trigger cases with ``--arms auto`` (every case `with`, three `without` as the
    isolation spot-check: 13 invocations); one case's first two model requests are answered 429
    with Retry-After (Qwen Code retries once, then the guard ends it: a retryable runner error
    the engine runs again, and the rerun is answered); the
    runner's loads are what its saved transcripts prove, and only the tested skill's body ever
    reached the model."""
    _bwrap()
    short = str(_short_tmpdir.resolve())  # the sandbox sees the real path, not the link
    skills = two_skills(tmp_path, REFUND_BODY)
    cases = write_jsonl(tmp_path / "cases.jsonl", [
        {"id": i, "prompt": p, "expectTrigger": t} for i, p, t in CASES])  # fmt: skip
    runner = f"{sys.executable} -m skill_evals runner qwen --bin {agent_binary('qwen')} --model m1"
    report_path, saved = tmp_path / "report.json", tmp_path / "saved"
    with FakeQwenModel(
        Behaviour(fail_status=429, fail_times=2, retry_after="1", fail_prompt=CASES[3][1])
    ) as model:
        env = caller_env(tmp_path, ("OPENAI_", "QWEN_"),
                         {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": model.base_url},
                         {"SKILL_EVALS_TRANSCRIPT_DIR": str(saved), "TMPDIR": short})  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "skill_evals", "test", "--skill", str(skills["refund-policy"]),
             "--cases", str(cases), "--runner", runner, "--trials", "1", "--jobs", "2",
             "--arms", "auto", "--min-trigger-f1", "0.9", "--report", str(report_path)],
            capture_output=True, text=True, timeout=600, env=env,
        )  # fmt: skip
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert_valid_report(report)
    assert proc.returncode == 0 and report["status"] == "pass", proc.stderr[-3000:]
    assert report["sandbox"]["mode"] == "bwrap" and report["sandbox"]["proxied"] == [
        "OPENAI_API_KEY"
    ]
    trigger = report["trigger"]
    assert (trigger["tp"], trigger["fp"], trigger["fn"], trigger["tn"]) == (6, 0, 0, 4)
    assert report["runner"]["invocations"] == 14  # 13 and the rate-limited one again
    assert report["runner"]["retried"] == 1 and report["runner"]["failures"] == []
    assert report["loading"]["violations"] == []
    # Qwen Code reached nothing but the model (no update check, telemetry or registry)
    assert report["behaviour"]["findings"] == []
    for arm in report["behaviour"]["arms"].values():
        assert arm["refused"] == []
    assert set(model.credentials) == {KEY}  # the real key, upstream of the proxy only
    text = SkillText.of("refund-policy", (skills["refund-policy"] / "SKILL.md").read_text())
    expected = {case_id: expect for case_id, _, expect in CASES}
    transcripts = sorted(saved.glob("*.jsonl"))
    assert len(transcripts) == 13
    for path in transcripts:
        case_id, _, variant, _ = path.name.split(".")
        events = read_events(path)
        ours = loaded_names(prove(qwen.PLUGIN, events, [text], None, None))
        assert ours == (["refund-policy"] if expected[case_id] and variant == "with" else [])
        assert KEY not in json.dumps(events)
    received = model.bodies_received()
    assert received == {"refund-policy"} and model.offered_names() <= {
        "refund-policy", "shipping-times"}  # fmt: skip
    assert workspaces_in(tmp_path / "tmpdir") == []


def test_ci_gates_a_repository_through_qwen(tmp_path: Path, _short_tmpdir: Path) -> None:
    """`skill-evals ci --all` over a repository whose config names the Qwen runner: the skill's
    cases run sandboxed through the real CLI and the gate passes."""
    from tests.ci.conftest import run_cli

    _bwrap()
    short = str(_short_tmpdir.resolve())
    rows = [{"id": i, "prompt": p, "expectTrigger": t} for i, p, t in CASES]
    runner = f"{sys.executable} -m skill_evals runner qwen --bin {agent_binary('qwen')} --model m1"
    repo = gated_repo(tmp_path, LONG_REFUND_SKILL, rows, runner)
    with FakeQwenModel() as model:
        env = caller_env(tmp_path, ("OPENAI_", "QWEN_"),
                         {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": model.base_url},
                         {"TMPDIR": short})  # fmt: skip
        done = run_cli(["ci", "--all", "--out", str(tmp_path / "out")], repo, env=env, timeout=600)
        assert set(model.credentials) == {KEY}, done.stderr[-3000:]
    passed_gate(done, tmp_path / "out", "OPENAI_API_KEY")
    assert model.bodies_received() == {"refund-policy"}
