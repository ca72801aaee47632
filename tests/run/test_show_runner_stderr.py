"""Runner failures say when the sandbox may be the cause, and --show-runner-stderr shows the
user (on their terminal only) the end of the first failing invocation's stderr: escaped, with
its case id, at most 2,000 characters, never in the report, JUnit, Markdown, HTML or record.
One sandboxed run (needs bubblewrap) and one unsandboxed run: the sandbox advice is said once in
the first, never in the second."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_jsonl, write_skill

MARK = "STDERR-MARK-7f3a"
# Fails for case c3 only (after a long stderr: only its tail is shown), answers the rest.
RUNNER = f"""#!/bin/sh
cat >/dev/null
if [ "$EVALGATE_SKILL_CASE_ID" = c3 ]; then
  i=0; while [ $i -lt 300 ]; do echo "filler line $i of noise"; i=$((i+1)); done >&2
  printf '{MARK} \\033[31mred\\033[0m end\\n' >&2
  exit 3
fi
line='{{"variant":"%s","invokedSkills":[],"output":"x","exitCode":0}}'
printf "$line\\n" "$EVALGATE_SKILL_VARIANT"
"""
ADVICE = (
    "what to do: the runner ran in the sandbox (docs/sandbox.md): it sees the system directories, "
    "its own file or bin/ prefix, its arguments, the skill and --sandbox-path paths; try once with "
    "--sandbox off to tell; give what it needs with --sandbox-path"
)


def _run(root: Path, sandbox: str, *extra: str) -> dict[str, Any]:
    root.mkdir()
    skill = write_skill(root / "skills")
    records = [
        {"id": f"c{i}", "prompt": f"question {i} about topic {chr(97 + i)}", "expectTrigger": False}
        for i in range(10)
    ]
    cases = write_jsonl(root / "cases.jsonl", records)
    runner = root / "runner.sh"
    runner.write_text(RUNNER)
    runner.chmod(0o755)
    outputs = {name: root / name for name in ("r.json", "j.xml", "m.md", "h.html", "rec.jsonl")}
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(cases), "--runner", str(runner), "--trials", "2"),
            *("--sandbox", sandbox, "--report", str(outputs["r.json"])),
            *("--junit", str(outputs["j.xml"]), "--markdown", str(outputs["m.md"])),
            *("--html", str(outputs["h.html"]), "--record", str(outputs["rec.jsonl"])),
            *("--retries", "0", *extra),
        ],
        capture_output=True, text=True, timeout=120, cwd=root,
    )  # fmt: skip
    files = {name: path.read_text() for name, path in outputs.items() if path.exists()}
    return {"proc": proc, "files": files}


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if shutil.which("bwrap") is None or sys.platform != "linux":
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    return _run(tmp_path_factory.mktemp("show") / "run", "required", "--show-runner-stderr")


@pytest.fixture(scope="module")
def unsandboxed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run(tmp_path_factory.mktemp("off") / "run", "off")


def test_the_first_failing_invocations_stderr_tail_is_shown_once(sandboxed: dict[str, Any]):
    err = sandboxed["proc"].stderr
    assert sandboxed["proc"].returncode == 7, err
    assert err.count("stderr of the first failing runner invocation") == 1
    header = next(line for line in err.splitlines() if "first failing runner" in line)
    assert "(c3 trial " in header
    shown = [line[4:] for line in err.splitlines() if line.startswith("  | ")]
    assert shown[-1] == f"{MARK} \\u001b[31mred\\u001b[0m end"  # escaped, never raw
    assert "\x1b" not in err
    assert sum(len(line) for line in shown) <= 2000
    assert "filler line 0 " not in err  # only the tail


def test_stderr_never_reaches_a_report_or_file(sandboxed: dict[str, Any]) -> None:
    assert set(sandboxed["files"]) == {"r.json", "j.xml", "m.md", "h.html", "rec.jsonl"}
    for name, text in sandboxed["files"].items():
        assert MARK not in text and "filler line" not in text, name
    assert MARK not in sandboxed["proc"].stdout


def test_a_sandboxed_failure_says_the_sandbox_may_be_why_once(sandboxed: dict[str, Any]):
    assert sandboxed["proc"].stdout.count(ADVICE) == 1
    report = json.loads(sandboxed["files"]["r.json"])
    assert report["sandbox"]["mode"] == "bwrap"
    assert sandboxed["files"]["m.md"].count("the runner ran in the sandbox") == 1
    assert sandboxed["files"]["h.html"].count("the runner ran in the sandbox") == 1


def test_unsandboxed_no_sandbox_advice_and_no_stderr_without_the_flag(
    unsandboxed: dict[str, Any],
) -> None:
    proc = unsandboxed["proc"]
    assert proc.returncode == 7, proc.stderr
    assert "exited with code 3" in proc.stdout
    assert "the runner ran in the sandbox" not in proc.stdout
    assert MARK not in proc.stderr and "first failing runner invocation" not in proc.stderr
    assert "--show-runner-stderr" in proc.stdout  # the advice names the flag


@pytest.mark.parametrize("command", ["test", "route", "improve"])
def test_the_flag_is_documented_on_each_command(command: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", command, "--help"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "--show-runner-stderr" in proc.stdout
