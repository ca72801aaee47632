"""Ctrl-C / SIGTERM during `skill-evals ci`: stop, write what there is, exit 130
(docs/ci.md). Two moments: while invocations run (execute() owns the signals) and while a skill is
loaded or scored (no invocation runs; the `ci` command's own handler must turn the signal into
an interrupt instead of dying with 143 and no outputs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skill_evals.ci.schema import validate_ci_report

from .conftest import GIT_ENV, make_repo

SLOW_RUNNER = """\
import json, os, sys, time
sys.stdin.read()
time.sleep(1.0)
print(json.dumps({"variant": os.environ["EVALGATE_SKILL_VARIANT"], "invokedSkills": [],
                  "output": "ok", "exitCode": 0}))
"""

# Loaded at start-up through PYTHONPATH: the moment the gate starts scoring a skill (all its
# invocations are over), the process signals itself — a deterministic "signal outside execute()".
SITECUSTOMIZE = """\
import os, signal

def _patch():
    import skill_evals.pipeline as pipeline
    original = pipeline.build_test_report

    def evaluate(*args, **kwargs):
        os.kill(os.getpid(), getattr(signal, os.environ["SKILL_EVALS_TEST_SIGNAL"]))
        return original(*args, **kwargs)

    pipeline.build_test_report = evaluate

if os.environ.get("SKILL_EVALS_TEST_SIGNAL"):
    _patch()
"""


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    base.pop("CI", None)
    return {**base, **GIT_ENV, **(extra or {})}


def _read_report(out: Path) -> dict[str, object]:
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    validate_ci_report(report)
    return report


def test_sigterm_while_invocations_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    runner = tmp_path / "slow.py"
    runner.write_text(SLOW_RUNNER, encoding="utf-8")
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "skill_evals", "ci", "--all", "--jobs", "2", "-q", "--out",
         str(out), "--runner", f"{sys.executable} {runner}"],
        cwd=repo, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    record = out / "observations" / "alpha.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if record.is_file() and record.read_text(encoding="utf-8").count("\n") >= 2:
            break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("the runner never finished an invocation")
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert time.monotonic() - sent < 10  # stopped, did not run the other 40+ invocations
    report = _read_report(out)
    assert report["status"] == "interrupted" and report["exitCode"] == 130
    skills = {s["name"]: s for s in report["skills"]}  # type: ignore[union-attr]
    assert skills["alpha"]["status"] == "evaluated" and skills["alpha"]["exitCode"] == 130
    assert skills["alpha"]["report"]["status"] == "interrupted"
    for name in ("beta", "gamma"):
        assert skills[name]["status"] == "skipped"
        assert skills[name]["reason"] == "not run: interrupted"
    # nothing that finished is lost
    assert record.read_text(encoding="utf-8").count("\n") >= 2
    for name in ("junit.xml", "summary.md", "comment.md", "report.html"):
        assert (out / name).is_file(), name


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_signal_while_a_skill_is_scored(tmp_path: Path, signame: str) -> None:
    # Both arms for every case and no early stop (ci's defaults would run fewer): 12 × 2
    # invocations, all of them before scoring, the moment signalled.
    config = (
        "runner: skill-evals runner simulated\ntrials: 1\narms: with,without\n"
        "stop-when-settled: false\n"
    )
    repo = make_repo(tmp_path / "repo", skills=("alpha", "beta"), config=config)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", "ci", "--all", "-q", "--out", str(out)],
        cwd=repo,
        env=_env({"PYTHONPATH": str(hooks), "SKILL_EVALS_TEST_SIGNAL": signame}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        # Outside execute() SIGINT keeps the disposition the process started with, and a
        # suite started in the background (`… &`) hands its children SIGINT ignored.
        preexec_fn=_default_sigint,
    )
    # before the fix SIGTERM here killed the process: exit -15/143 and no report at all
    assert done.returncode == 130, done.stderr
    report = _read_report(out)
    assert report["status"] == "interrupted" and report["exitCode"] == 130
    skills = {s["name"]: s for s in report["skills"]}  # type: ignore[union-attr]
    assert skills["alpha"]["status"] == "skipped" and skills["alpha"]["exitCode"] == 130
    assert "interrupted during its evaluation" in skills["alpha"]["reason"]
    assert skills["beta"]["reason"] == "not run: interrupted"
    # every invocation of alpha had finished and was recorded before scoring began
    lines = (out / "observations" / "alpha.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 12 * 2
    assert not (out / "observations" / "beta.jsonl").exists()
