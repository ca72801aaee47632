"""Nothing survives an invocation: descendants that left the runner's process group (timeout,
job control), its session (setsid), or both and their environment too, are killed and reaped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from skill_evals.run.observations import Observation
from skill_evals.run.processes import ProcessSweeper
from skill_evals.run.runner import InvocationSpec, invocation_env, run_invocation
from tests.conftest import write_jsonl, write_skill

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="sessions are swept through /proc (Linux)"
)

ANSWER = (
    """printf '{"variant":"%s","invokedSkills":[],"output":"%s","exitCode":0}\\n' """
    """"$EVALGATE_SKILL_VARIANT" "$1" """
)


def _spec(script: str, *, case_id: str = "case-1", trial: int = 1) -> InvocationSpec:
    env = invocation_env(os.environ, "with", "/nonexistent-skill", case_id, trial)
    return InvocationSpec(
        argv=("bash", "-c", script, "runner"),
        prompt="p",
        env=env,
        case_id=case_id,
        trial=trial,
        variant="with",
        timeout_ms=20_000,
        max_bytes=100_000,
    )


def _state(pid: int) -> str | None:
    """The process state letter, or None when no such process exists any more."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return data.rpartition(b")")[2].split()[0].decode()


def _assert_gone(pid_file: Path) -> None:
    pid = int(pid_file.read_text().split()[0])
    deadline = time.monotonic() + 5
    # Killed and reaped. A process whose parent is not the engine is reaped by that parent
    # (init, in the end), so give that a moment; our own children must not stay zombies.
    while (state := _state(pid)) is not None and time.monotonic() < deadline:
        if state == "Z" and _parent(pid) == os.getpid():
            pytest.fail(f"process {pid} is a zombie child of the engine")
        time.sleep(0.02)
    assert state is None or state == "Z", f"process {pid} survived ({state})"


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


SHAPES = {
    # `timeout` moves itself and its child into a group of their own.
    "timeout": "timeout 100 sleep 100 & echo $! > {pids}; sleep 0.1; " + ANSWER,
    # A shell with job control puts each background job in its own group.
    "set -m": "set -m; sleep 100 & echo $! > {pids}; " + ANSWER,
    # A new session: reparented to the engine (a child subreaper) once bash exits.
    "setsid": "setsid sleep 100 & echo $! > {pids}; sleep 0.1; " + ANSWER,
    # A new session, twice removed: the setsid'd shell's own child.
    "setsid grandchild": (
        "setsid bash -c 'sleep 100 & echo $! > {pids}; wait' & sleep 0.2; " + ANSWER
    ),
    # Double fork inside a new session: the daemon's parent exits at once.
    "daemon": "setsid bash -c '(sleep 100 & echo $! > {pids}) ' & sleep 0.2; " + ANSWER,
}


@pytest.mark.parametrize("shape", SHAPES)
def test_descendants_that_left_the_group_or_session_die(shape: str, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    with ProcessSweeper().running() as sweeper:
        result = run_invocation(_spec(SHAPES[shape].replace("{pids}", str(pids))), sweeper=sweeper)
        assert isinstance(result.outcome, Observation), result.outcome
        _assert_gone(pids)


@pytest.mark.parametrize("shape", ["timeout", "set -m"])
def test_session_members_die_even_without_a_subreaper(shape: str, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    result = run_invocation(_spec(SHAPES[shape].replace("{pids}", str(pids))))
    assert isinstance(result.outcome, Observation)
    _assert_gone(pids)


def test_a_process_that_left_the_session_and_cleared_its_environment_dies_at_the_end(
    tmp_path: Path,
) -> None:
    pids = tmp_path / "pids"
    script = f"setsid env -i bash -c 'sleep 100 & echo $! > {pids}; wait' & sleep 0.2; " + ANSWER
    with ProcessSweeper().running() as sweeper:
        result = run_invocation(_spec(script), sweeper=sweeper)
        assert isinstance(result.outcome, Observation)
    _assert_gone(pids)


def test_a_timed_out_runner_leaves_nothing_either(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = (
        f"setsid sleep 100 & echo $! > {pids}; timeout 100 sleep 100 & echo $! >> {pids}; sleep 100"
    )
    spec = _spec(script)
    spec = InvocationSpec(**{**spec.__dict__, "timeout_ms": 500})
    with ProcessSweeper().running() as sweeper:
        result = run_invocation(spec, sweeper=sweeper)
    assert not isinstance(result.outcome, Observation)
    for pid in pids.read_text().split():
        single = tmp_path / f"pid-{pid}"
        single.write_text(pid)
        _assert_gone(single)


def test_one_invocations_sweep_spares_a_concurrent_invocations_processes(tmp_path: Path) -> None:
    # B keeps a helper in a session of its own while A ends and is swept.
    helper = tmp_path / "helper"
    b_script = (
        f"setsid sleep 30 & h=$!; echo $h > {helper}; sleep 1.0; "
        "if kill -0 $h 2>/dev/null; then set -- alive; else set -- dead; fi; " + ANSWER
    )
    a_script = f"setsid sleep 100 & echo $! > {tmp_path / 'a'}; " + ANSWER
    with ProcessSweeper().running() as sweeper:
        results: dict[str, object] = {}
        b = threading.Thread(
            target=lambda: results.update(
                b=run_invocation(_spec(b_script, case_id="b"), sweeper=sweeper)
            )
        )
        b.start()
        time.sleep(0.3)
        results["a"] = run_invocation(_spec(a_script, case_id="a"), sweeper=sweeper)
        b.join(20)
    outcome_b = results["b"].outcome  # type: ignore[attr-defined]
    assert isinstance(outcome_b, Observation)
    assert outcome_b.output == "alive"
    _assert_gone(tmp_path / "a")
    _assert_gone(helper)


def test_skill_evals_test_leaves_no_process_behind(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {"id": f"c{i}", "prompt": f"refund question {i}", "expectTrigger": False}
            for i in range(10)
        ],
    )
    pids = tmp_path / "pids"
    runner = tmp_path / "runner.sh"
    runner.write_text(
        "#!/bin/bash\n"
        f"setsid sleep 100 & echo $! >> {pids}\n"
        f"set -m; sleep 100 & echo $! >> {pids}\n"
        f"timeout 100 sleep 100 & echo $! >> {pids}\n" + ANSWER.replace("$1", "x") + "\n"
    )
    runner.chmod(0o755)
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(cases), "--runner", str(runner), "--trials", "1", "--quiet"),
            # The unsandboxed sweep: host pids (a sandbox has pids of its own).
            *("--format", "json", "--sandbox", "off"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(proc.stdout)["exitCode"] == 0, proc.stderr
    all_pids = pids.read_text().split()
    assert len(all_pids) == 60
    for pid in all_pids:
        single = tmp_path / f"pid-{pid}"
        single.write_text(pid)
        _assert_gone(single)
