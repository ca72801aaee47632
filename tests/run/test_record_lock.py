"""One run per record file: while a run holds ``--resume F --record F``, a second run naming F
in either option, in any spelling (relative, ``./F``, through a symlink, a hard link), exits 5
before it starts anything, naming the holder's pid; the lock dies with its process (SIGKILL), and
the run after it completes F with exactly one line per observation. Two real processes."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write_jsonl, write_skill

RUNNER = Path(__file__).resolve().parents[1] / "runners" / "good.py"
N_CASES = 10


def command(tmp: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "skill_evals", *args]


def env_for(tmp: Path) -> dict[str, str]:
    return dict(os.environ, TMPDIR=str(tmp))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    root = tmp_path_factory.mktemp("lock")
    skill = write_skill(root)
    cases = [
        {"id": f"c{i}", "prompt": f"refund question {i}", "expectTrigger": True}
        for i in range(N_CASES)
    ]
    routing = [{"id": f"r{i}", "prompt": f"refund {i}", "expect": [skill.name]} for i in range(10)]
    tmp = root / "tmp"
    tmp.mkdir()
    yield {
        "root": root,
        "skill": skill,
        "cases": write_jsonl(root / "cases.jsonl", cases),
        "routing": write_jsonl(root / "routing.jsonl", routing),
        "log": root / "invocations.log",
        "tmp": tmp,
    }


def run_args(project: dict[str, Path], record: str, resume: str, *runner: str) -> list[str]:
    run = shlex.join([sys.executable, str(RUNNER), "--invoke", "refund-policy", *runner])
    return command(
        project["tmp"],
        "test",
        "--skill",
        str(project["skill"]),
        "--cases",
        str(project["cases"]),
        "--runner",
        run,
        "--trials",
        "1",
        "--jobs",
        "1",
        "-q",
        "--format",
        "json",
        "--record",
        record,
        "--resume",
        resume,
    )


def wait_for_lines(path: Path, count: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text(encoding="utf-8").splitlines()) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path}: fewer than {count} lines after {seconds} s")


def test_a_second_run_on_the_same_record_file_exits_5(project: dict[str, Path]) -> None:
    root = project["root"]
    record = root / "runs" / "obs.jsonl"
    record.parent.mkdir()
    (root / "alias").symlink_to(record.parent)
    log = project["log"]
    # The first run: slow invocations, so it is still running when the others start and end
    # (at 0.4 s an invocation it sometimes finished first on a loaded machine).
    first = subprocess.Popen(
        run_args(project, str(record), str(record), "--sleep", "1.5", "--log", str(log)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env_for(project["tmp"]),
        start_new_session=True,
    )
    try:
        wait_for_lines(record, 2)  # it holds the lock and has recorded something
        os.link(record, root / "hard.jsonl")  # the same file under another name
        lock = Path(str(record) + ".lock")
        assert lock.stat().st_mode & 0o777 == 0o600
        holder = f"(pid {first.pid})"
        expected = f"is in use by another skill-evals run {holder}; wait for it or use another file"
        spellings = [
            ("runs/obs.jsonl", "runs/obs.jsonl"),  # relative, both options
            ("other.jsonl", "./runs/obs.jsonl"),  # ./F in --resume only
            ("alias/obs.jsonl", "elsewhere.jsonl"),  # through a symlink, --record only
            ("hard.jsonl", "hard.jsonl"),  # a hard link: its own .lock, the same file
        ]
        for record_arg, resume_arg in spellings:
            second_log = root / "second.log"
            proc = subprocess.run(
                run_args(project, record_arg, resume_arg, "--log", str(second_log)),
                capture_output=True,
                text=True,
                timeout=60,
                cwd=root,
                env=env_for(project["tmp"]),
            )
            assert proc.returncode == 5, proc.stderr
            named = "obs" in record_arg or record_arg == resume_arg
            locked = Path(record_arg if named else resume_arg)  # as click reads it
            assert proc.stderr.endswith(f"skill-evals: error: {locked} {expected}\n")
            assert not second_log.exists()  # nothing started
            assert not (root / "other.jsonl").exists() and not (root / "elsewhere.jsonl").exists()
        # `route` honours the same lock.
        route = subprocess.run(
            command(
                project["tmp"], "route", "--skill", str(project["skill"]), "--cases",
                str(project["routing"]), "--runner", "false", "--record", str(record),
            ),
            capture_output=True, text=True, timeout=60, env=env_for(project["tmp"]),
        )  # fmt: skip
        assert route.returncode == 5, route.stderr
        assert f"{record} {expected}" in route.stderr
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the lock dies with its process
        first.wait()
    done = len(record.read_text(encoding="utf-8").splitlines())
    assert 0 < done < N_CASES * 2
    # The next run is not blocked, runs only what is missing and leaves one line per key.
    again = subprocess.run(
        run_args(project, str(record), str(record)),
        capture_output=True,
        text=True,
        timeout=120,
        env=env_for(project["tmp"]),
    )
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["runner"]["invocations"] == N_CASES * 2 - done
    keys = [
        (o["caseId"], o["trial"], o["variant"])
        for o in map(json.loads, record.read_text(encoding="utf-8").splitlines())
    ]
    assert len(keys) == len(set(keys)) == N_CASES * 2


HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, str(os.getpid()).encode())
print("locked", flush=True)
time.sleep(60)
"""


def test_ci_does_not_run_a_skill_whose_observations_file_is_in_use(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    (skill / "evals").mkdir()
    cases = [{"id": f"c{i}", "prompt": f"refund {i}", "expectTrigger": True} for i in range(10)]
    write_jsonl(skill / "evals" / "cases.jsonl", cases)
    record = tmp_path / "out" / "observations" / "refund-policy.jsonl"
    record.parent.mkdir(parents=True)
    (tmp_path / "tmp").mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(record) + ".lock"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        log = tmp_path / "ci.log"
        run = shlex.join(
            [sys.executable, str(RUNNER), "--invoke", "refund-policy", "--log", str(log)]
        )
        proc = subprocess.run(
            command(tmp_path, "ci", "--all", "--out", "out", "--runner", run, "-q"),
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
            env=env_for(tmp_path / "tmp"),
        )  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 5, proc.stderr
    assert f"is in use by another skill-evals run (pid {holder.pid})" in proc.stderr
    assert not log.exists()  # the skill did not run
