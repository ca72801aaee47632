"""The contained network through `ci`: the config's network, network-allow and fail-on-finding
(policy keys, read as any other), and a skill's behaviour findings in summary.md and comment.md
whatever its verdict."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from tests.ci.conftest import gh_env, make_repo, run_cli

FETCHER = Path(__file__).resolve().parents[1] / "runners" / "fetch_in_with.py"
URL = "http://registry.example.test/pkg"

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None or not sys.platform.startswith("linux"),
    reason="bubblewrap is not installed here (apt-get install -y bubblewrap)",
)


def _config(*extra: str) -> str:
    runner = shlex.join([sys.executable, str(FETCHER), URL])
    lines = [
        f"runner: {json.dumps(runner)}", "trials: 1", "jobs: 2", "stop-when-settled: false",
        "sandbox: required", f"sandbox-paths: [{json.dumps(str(FETCHER.parent))}]",
        "cache: null", *extra,
    ]  # fmt: skip
    return "\n".join(line for line in lines if line != "cache: null") + "\n"


def _ci(tmp: Path, config: str) -> tuple[int, dict[str, object], str, str]:
    repo = make_repo(tmp / "repo", skills=("alpha",), config=config)
    out = tmp / "out"
    done = run_cli(["ci", "--all", "--out", str(out)], repo, gh_env(tmp))
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    summary = (out / "summary.md").read_text(encoding="utf-8")
    comment = (out / "comment.md").read_text(encoding="utf-8")
    return done.returncode, report, summary, comment


def test_findings_reach_every_ci_output_and_fail_the_gate_only_when_asked(tmp_path: Path) -> None:
    code, report, summary, comment = _ci(tmp_path / "warn", _config())
    assert code == 0, report["messages"]  # a finding alone is a warning
    line = "alpha: behaviour: new destination registry.example.test:80"
    assert any(str(m).startswith(line) for m in report["messages"]), report["messages"]
    assert "registry.example.test:80" in summary and "registry.example.test:80" in comment
    skill = report["skills"][0]["report"]
    assert skill["sandbox"]["network"] == "model"
    assert skill["behaviour"]["arms"]["with"]["refused"][0]["host"] == "registry.example.test"
    strict = _ci(tmp_path / "fail", _config("fail-on-finding: true"))
    assert strict[0] == 1 and strict[1]["skills"][0]["exitCode"] == 1
