"""The real Claude Code in the sandbox, through ``skill-evals test``: the model's own Bash command
searches every ``/proc/*/environ`` and ``/proc/*/cmdline`` it can see for the provider key and
for a secret planted in the engine's environment. The probe is told only their SHA-256 hashes
and lengths, never the values; it finds the proxy's placeholder (so it did read the agent's
environment) and neither secret, while the scripted model upstream still gets the real key."""

from __future__ import annotations

import hashlib
import json
import secrets
import shlex
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from skill_evals.agents.evidence import read_events
from tests.agents.e2e import claude_code_runner, run_test_cli, without_claude_settings
from tests.agents.fake_anthropic import FakeAnthropic
from tests.conftest import assert_valid_report, write_jsonl, write_skill

PLACEHOLDER = "skill-evals-proxy-placeholder"
CASES = 10  # the fewest a run takes

# Sliding windows of each secret's length over every readable environ and cmdline (so a key
# inside a longer value, a header say, is found too); only hashes are compared.
_PROBE = """
import hashlib, os
want = {WANT}
sizes = {SIZES}
found, pids, files = set(), 0, 0
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    pids += 1
    for part in ("environ", "cmdline"):
        try:
            with open("/proc/" + pid + "/" + part, "rb") as fh:
                data = fh.read(1 << 20)
        except OSError:
            continue
        files += 1
        for n in sizes:
            for i in range(len(data) - n + 1):
                name = want.get(hashlib.sha256(data[i:i + n]).hexdigest())
                if name:
                    found.add(name)
print("proc-probe pids=%d files=%d found=%s" % (pids, files, ",".join(sorted(found)) or "none"))
"""


def _probe_command(named: dict[str, str]) -> str:
    """The Bash command: the probe with the hashes and lengths of ``named``'s values."""
    want = {hashlib.sha256(v.encode()).hexdigest(): k for k, v in named.items()}
    sizes = sorted({len(v.encode()) for v in named.values()})
    script = _PROBE.replace("{WANT}", repr(want)).replace("{SIZES}", repr(sizes))
    return f"python3 -c {shlex.quote(script)}"


@pytest.fixture(scope="module")
def sandboxed_claude(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One sandboxed run of the real Claude Code over 10 cases (the ``with`` arm), the model
    running the probe in every invocation."""
    if shutil.which("bwrap") is None or not sys.platform.startswith("linux"):
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    root = tmp_path_factory.mktemp("claude-sandbox")
    key = "sk-ant-" + secrets.token_hex(20)
    planted = "deploy-" + secrets.token_hex(20)
    command = _probe_command({"key": key, "planted": planted, "placeholder": PLACEHOLDER})
    skill = write_skill(root / "skills")
    rows = [
        {"id": f"c{i}", "prompt": f"List the files of project number {i}", "expectTrigger": False}
        for i in range(CASES)
    ]
    cases = write_jsonl(root / "cases.jsonl", rows)
    transcripts = root / "transcripts"
    with FakeAnthropic(run=command) as fake:
        env = without_claude_settings() | fake.env()
        env |= {"ANTHROPIC_API_KEY": key, "DEPLOY_TOKEN": planted}
        env["SKILL_EVALS_TRANSCRIPT_DIR"] = str(transcripts)
        done = run_test_cli(
            skill, cases, claude_code_runner(), "--arms", "with",
            *("--trials", "1", "--jobs", "2", "--timeout-ms", "120000"),
            *("--sandbox", "required", "--report", str(root / "report.json")),
            env=env, cwd=root,
        )  # fmt: skip
        yield {
            "done": done,
            "report": json.loads((root / "report.json").read_text(encoding="utf-8")),
            "fake": fake,
            "transcripts": transcripts,
            "key": key,
            "planted": planted,
        }


@pytest.mark.agents
def test_the_models_proc_search_ran_and_found_only_the_placeholder(
    sandboxed_claude: dict[str, Any],
) -> None:
    done, report = sandboxed_claude["done"], sandboxed_claude["report"]
    assert_valid_report(report)
    assert report["runner"]["failures"] == [], done.stderr[-2000:]
    assert report["sandbox"]["mode"] == "bwrap"
    assert report["sandbox"]["proxied"] == ["ANTHROPIC_API_KEY"]
    assert report["runner"]["invocations"] == CASES
    for i in range(CASES):
        events = read_events(sandboxed_claude["transcripts"] / f"c{i}.1.with.jsonl")
        calls = {
            b["id"]: b["input"]["command"]
            for e in events
            if e.get("type") == "assistant"
            for b in e["message"]["content"]
            if b.get("type") == "tool_use" and b.get("name") == "Bash"
        }
        results = [
            (b["tool_use_id"], json.dumps(b.get("content")), b.get("is_error"))
            for e in events
            if e.get("type") == "user" and isinstance(e["message"]["content"], list)
            for b in e["message"]["content"]
            if b.get("type") == "tool_result"
        ]
        # The transcript holds the probe's call and its answer: it ran inside the agent.
        assert len(calls) == 1 and "proc-probe" in next(iter(calls.values()))
        ((use, shown, error),) = results
        assert use in calls and not error, shown
        # It read other processes' environments (the agent's placeholder) and found no secret.
        assert "found=placeholder" in shown, shown
        pids = int(shown.split("pids=")[1].split()[0])
        assert 3 <= pids < 40  # the agent, its shell, the probe: never the engine or the host


@pytest.mark.agents
def test_the_upstream_got_the_real_key_and_the_model_never_saw_a_secret(
    sandboxed_claude: dict[str, Any],
) -> None:
    fake: FakeAnthropic = sandboxed_claude["fake"]
    key, planted = sandboxed_claude["key"], sandboxed_claude["planted"]
    assert fake.credentials and all(key in credential for credential in fake.credentials)
    assert not any(key in text or planted in text for text in fake.texts)
    assert [e.action for e in fake.exchanges].count("run") == CASES
    stderr = sandboxed_claude["done"].stderr
    assert key not in stderr and planted not in stderr and "not sandboxed" not in stderr
    for saved in sandboxed_claude["transcripts"].iterdir():
        data = saved.read_text(encoding="utf-8")
        assert key not in data and planted not in data
