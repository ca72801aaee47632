"""The proposer of `improve` holds a key and reads the skill and its failing prompts, so it runs
like a judge: sandboxed, with the runners' allowlist of the caller's environment, its provider
key only through the credential proxy. The built-in proposer reaches a loopback fake of the
Messages API with the real key (set by the proxy) and a JSON user message; a hostile probe
proposer finds no token, no SSH key and no real key, and cannot write the job's GITHUB_ENV."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.agents.fake_judge_api import FakeJudgeApi, anthropic_text
from tests.cli.test_improve import setup  # noqa: F401  (the fixture)

PROBE = Path(__file__).resolve().parents[1] / "runners" / "judge_probe.py"
REAL_KEY = "sk-ant-real-proposer-0123456789"
GITHUB_TOKEN = "ghs_fakeJobToken-proposer-0123"
ANSWER = '{"description": "Audit invoices, receipts and billing totals.", "rationale": "r"}'


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _improve(tmp: Path, paths: dict[str, Path], proposer: str, url: str) -> dict[str, Any]:
    home = tmp / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text("fake private key\n", "utf-8")
    (tmp / "gh").mkdir(exist_ok=True)
    (tmp / "gh" / "env").write_text("KEEP=1\n", "utf-8")
    env = {
        "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
        "HOME": str(home),
        "GITHUB_TOKEN": GITHUB_TOKEN,
        "GITHUB_ENV": str(tmp / "gh" / "env"),
        "ANTHROPIC_API_KEY": REAL_KEY,
        "ANTHROPIC_BASE_URL": url,
        "NO_PROXY": "127.0.0.1",
    }
    args = [
        sys.executable, "-m", "skill_evals", "improve", "--skill", str(paths["skill"]),
        "--cases", str(paths["cases"]), "--runner", f"{sys.executable} {tmp / 'runner.py'}",
        "--proposer", proposer, "--trials", "1", "--rounds", "1", "--format", "json",
        "--sandbox", "required", "--sandbox-path", f"{tmp / 'work'}:rw",
    ]  # fmt: skip
    (tmp / "work").mkdir(exist_ok=True)
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=tmp, env=env)
    assert done.returncode in (0, 1), done.stderr
    assert REAL_KEY not in done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["proposer"]["calls"] == 1
    return report


def test_the_builtin_proposer_gets_its_key_through_the_proxy(
    setup: dict[str, Path],  # noqa: F811
) -> None:
    fake = FakeJudgeApi([anthropic_text(ANSWER)])
    try:
        _improve(setup["tmp"], setup, "skill-evals propose anthropic --model claude-x", fake.url)
    finally:
        fake.stop()
    (seen,) = fake.log
    assert seen["path"] == "/v1/messages" and seen["headers"]["x-api-key"] == REAL_KEY
    shown = json.loads(seen["body"]["messages"][0]["content"])  # one JSON document
    assert set(shown) == {"skill", "limits", "train", "failures", "history"}
    assert "JSON document" in seen["body"]["system"]


def test_a_probe_proposer_finds_no_secret(setup: dict[str, Path]) -> None:  # noqa: F811
    tmp = setup["tmp"]
    log = tmp / "work" / "probe.jsonl"
    probe = " ".join([
        sys.executable, str(PROBE), f"--log={log}", f"--home={tmp / 'home'}",
        f"--github-env={tmp / 'gh' / 'env'}", "--kind=proposer",
    ])  # fmt: skip
    fake = FakeJudgeApi([anthropic_text(ANSWER)])
    try:
        _improve(tmp, setup, probe, fake.url)
    finally:
        fake.stop()
    (line,) = log.read_text("utf-8").splitlines()
    found = json.loads(line)
    assert found["keyHash"] == _sha("skill-evals-proxy-placeholder")
    assert _sha(REAL_KEY) not in found["seen"] and _sha(GITHUB_TOKEN) not in found["seen"]
    assert found["ssh"] is None and found["appended"] is False and found["api"] == 200
    assert "SKILL_EVALS_ROUND" in found["names"] and "GITHUB_TOKEN" not in found["names"]
    assert (tmp / "gh" / "env").read_text("utf-8") == "KEEP=1\n"
    (seen,) = fake.log
    assert seen["headers"]["x-api-key"] == REAL_KEY
