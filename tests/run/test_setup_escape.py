"""Setup commands and verifiers leave nothing running: processes they start with `setsid -f`,
or by a double fork that calls setsid and clears its environment, all ignoring SIGTERM and
SIGHUP, are dead before the next setup command, the runner, or the next check starts."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import assert_valid_report, write_jsonl, write_skill

# Starts two escapees that write "escapee-<pid>" into ./.escapees and the shared directory once
# running, then waits for both.
SPAWN = r"""
import os, subprocess, sys, time
shared = sys.argv[1]
ESCAPEE = (
    "import os, signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
    "for d in reversed(sys.argv[1:]):  # the shared record first, the local one last\n"
    "    os.makedirs(d, exist_ok=True)\n"
    "    open(os.path.join(d, 'escapee-' + str(os.getpid())), 'w').close()\n"
    "time.sleep(30)\n"
)
local = os.path.abspath(".escapees")
# 1. setsid -f: a new session, the environment kept.
subprocess.Popen(["setsid", "-f", sys.executable, "-c", ESCAPEE, local, shared],
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
# 2. a double fork that calls setsid and clears its environment.
child = os.fork()
if child == 0:
    os.setsid()
    if os.fork() == 0:
        os.execve(sys.executable, [sys.executable, "-c", ESCAPEE, local, shared], {})
    os._exit(0)
os.waitpid(child, 0)
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    if os.path.isdir(local) and len(os.listdir(local)) >= 2:
        break
    time.sleep(0.02)
"""

CLEAR = "import shutil; shutil.rmtree('.escapees')"  # the setup's records: checked by now

# Exit 1 when an escapee recorded in ./.escapees is still running (a zombie counts as gone).
CHECK = r"""
import os, sys
alive = 0
for name in os.listdir(".escapees") if os.path.isdir(".escapees") else []:
    pid = name.rsplit("-", 1)[1]
    try:
        state = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()[0]
    except OSError:
        continue
    alive += state != "Z"
sys.exit(1 if alive else 0)
"""

# The runner: a runner failure of its own when a setup escapee is alive as it starts.
RUNNER = r"""
import json, os, subprocess, sys
sys.stdin.read()
os.chdir(os.environ["SKILL_EVALS_WORKSPACE"])
if subprocess.run([sys.executable, "-c", sys.argv[1]]).returncode:
    print(json.dumps({"runnerError": "a setup escapee is alive", "retryable": False}))
    sys.exit(0)
variant = os.environ["EVALGATE_SKILL_VARIANT"]
skills = ["escape-skill"] if variant == "with" else []
print(json.dumps({"variant": variant, "invokedSkills": skills, "output": "ok", "exitCode": 0}))
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def escape_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    if not sys.platform.startswith("linux"):
        pytest.skip("the subreaper guarantee is Linux's")
    root = tmp_path_factory.mktemp("escape")
    skill = write_skill(root, name="escape-skill", description="Sets things up.")
    shared = root / "all-escapees"
    py = sys.executable
    cases = [
        {
            "id": f"c{i}",
            "prompt": f"set up {i}",
            "expectTrigger": True,
            "setup": [[py, "-c", SPAWN, str(shared / "setup")], [py, "-c", CHECK]],
            "task": [
                {
                    "check": "command",
                    "run": [py, "-c", "import shutil; shutil.rmtree('.escapees')"],
                },
                {"check": "command", "run": [py, "-c", SPAWN, str(shared / "verify")]},
                {"check": "command", "run": [py, "-c", CHECK]},
            ],
        }
        for i in range(10)
    ]
    cases_file = write_jsonl(root / "cases.jsonl", cases)
    runner = root / "runner.py"
    runner.write_text(RUNNER, encoding="utf-8")
    tmp = root / "tmp"
    tmp.mkdir()
    proc = subprocess.run(
        [
            py, "-m", "skill_evals", "test", "--skill", str(skill), "--cases", str(cases_file),
            "--runner", shlex.join([py, str(runner), CHECK]), "--trials", "1", "--jobs", "1",
            "--arms", "with", "-q", "--format", "json",
            # The unsandboxed sweep: host pids, a shared directory (a sandbox has neither).
            "--sandbox", "off",
        ],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, TMPDIR=str(tmp)),
    )  # fmt: skip
    pids = [int(p.name.rsplit("-", 1)[1]) for p in shared.glob("*/escapee-*")]
    yield {"proc": proc, "pids": pids}
    for pid in pids:  # only the escapees this test started, by their pid
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_setup_escapees_are_dead_before_the_next_command_and_the_runner(
    escape_run: dict[str, Any],
) -> None:
    proc = escape_run["proc"]
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert_valid_report(report)
    assert report["runner"]["failures"] == [], report["runner"]["failures"]
    results = report["caseResults"]
    assert len(results) == 10
    for result in results:
        # The verifier's escapees are dead before the next check runs: every check passed.
        assert result.get("failedCheck") is None, result["failedCheck"]
    # Two escapees per setup and per verifier, all started, none left. (One job: with several,
    # an escapee that cleared its environment may be killed by a concurrent helper's sweep.)
    assert len(escape_run["pids"]) == 10 * 2 * 2
    assert [pid for pid in escape_run["pids"] if alive(pid)] == []
