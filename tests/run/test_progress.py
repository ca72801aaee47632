"""Progress on stderr: unambiguous status lines when stderr is a log or pipe, a live status line
with colour on a terminal (checked through a real pseudo-terminal), NO_COLOR respected, a
hanging run visible while it hangs."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

from skill_evals.run.execute import Progress
from skill_evals.run.progress import CLEAR_LINE, ProgressPrinter, outcome
from tests.conftest import write_jsonl, write_skill

SKILL = "refund-policy"
COLOUR = re.compile(r"\x1b\[3\dm")


def event(done: int, ok: bool = True, **kw: object) -> Progress:
    fields: dict[str, object] = {
        "done": done,
        "total": 8,
        "skill": SKILL,
        "case_id": f"c{done}",
        "trial": 1,
        "variant": "with",
        "ok": ok,
        "elapsed_ms": 1500.0,
    }
    fields.update(kw)
    return Progress(**fields)  # type: ignore[arg-type]


def test_outcome_says_what_the_runner_and_the_run_did() -> None:
    assert outcome(event(1, triggered=True, expect_trigger=True)) == (
        "runner ok, skill loaded (expected)"
    )
    assert outcome(event(1, triggered=True, expect_trigger=False)) == (
        "runner ok, skill loaded (should not have)"
    )
    assert outcome(event(1, triggered=False, expect_trigger=True)) == (
        "runner ok, skill not loaded (should have)"
    )
    assert outcome(event(1, variant="without", triggered=False, expect_trigger=True)) == (
        "runner ok, skill not loaded"
    )
    failed = event(1, ok=False, reason="runner: rate limited\x1b[2J")
    assert outcome(failed) == "runner FAILED (runner: rate limited\\u001b[2J)"


def test_lines_without_a_terminal_have_no_colour_and_no_rewriting() -> None:
    stream = io.StringIO()
    printer = ProgressPrinter(stream, env={})
    printer.started(1, 0, 8)
    printer(event(1, triggered=True, expect_trigger=True))
    printer(event(2, ok=False, reason="timed out after 30000 ms"))
    printer.close()
    lines = stream.getvalue().splitlines()
    assert lines == [
        "[1/8] refund-policy c1 trial 1 with: runner ok, skill loaded (expected) 1.5s",
        "[2/8] refund-policy c2 trial 1 with: runner FAILED (timed out after 30000 ms) 1.5s",
    ]
    assert "\x1b" not in stream.getvalue() and "\r" not in stream.getvalue()


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_live_line_counts_done_running_failed_elapsed_and_eta() -> None:
    stream = io.StringIO()
    clock = FakeClock()
    printer = ProgressPrinter(stream, live=True, colour=False, clock=clock, tick_seconds=60)
    printer.started(1, 2, 8)  # resumed: 2 of 8 were done before this run
    printer.started(2, 2, 8)
    clock.now += 10
    printer(event(3, running=1, triggered=True, expect_trigger=True))
    last = stream.getvalue().rsplit(CLEAR_LINE, 1)[1]
    # 1 finished in 10 s, 5 left → ETA 50 s (resumed ones do not count towards the rate).
    assert last == "refund-policy: 3/8 done · 1 running · 0 failed · 0:10 elapsed · ETA 0:50"
    printer(event(4, ok=False, reason="exited with code 2", running=0))
    text = stream.getvalue()
    # A failure gets a line of its own, above the status line.
    assert (
        CLEAR_LINE + "[4/8] refund-policy c4 trial 1 with: runner FAILED (exited with code 2)"
    ) in text
    printer.close()
    assert stream.getvalue().endswith(
        CLEAR_LINE + "refund-policy: 4/8 done · 1 failed · 0:10 elapsed\n"
    )


def test_live_line_never_wraps() -> None:
    stream = io.StringIO()
    printer = ProgressPrinter(stream, live=True, colour=True, tick_seconds=60)
    printer(event(1, skill="s" * 300, running=3, triggered=True, expect_trigger=True))
    printer.close()
    for chunk in stream.getvalue().split(CLEAR_LINE):
        visible = COLOUR.sub("", chunk).replace("\x1b[0m", "").rstrip("\n")
        assert len(visible) < 80, visible


# ------------------------------------------------------------------ through a real terminal


def _suite(tmp_path: Path) -> tuple[Path, Path, Path]:
    skill = write_skill(tmp_path)
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {"id": f"c{i}", "prompt": f"refund question {i}", "expectTrigger": i % 2 == 0}
            for i in range(10)
        ],
    )
    # c0 hangs until the test has seen the live line (or 20 s pass); every other run is quick.
    gate = tmp_path / "go"
    runner = tmp_path / "runner.py"
    runner.write_text(
        "import json, os, sys, time\n"
        "sys.stdin.read()\n"
        "if os.environ['EVALGATE_SKILL_CASE_ID'] == 'c0':\n"
        "    end = time.monotonic() + 20\n"
        f"    while not os.path.exists({str(gate)!r}) and time.monotonic() < end:\n"
        "        time.sleep(0.05)\n"
        "v = os.environ['EVALGATE_SKILL_VARIANT']\n"
        "print(json.dumps({'variant': v, 'invokedSkills': [], 'output': 'x', 'exitCode': 0}))\n",
        encoding="utf-8",
    )
    return skill, cases, runner


def _run_on_pty(
    tmp_path: Path, env_extra: dict[str, str], release_after: str | None
) -> tuple[int, str]:
    skill, cases, runner = _suite(tmp_path)
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update(TERM="xterm", **env_extra)
    proc = subprocess.Popen(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(cases), "--runner", f"{sys.executable} {runner}", "--trials", "1", "--jobs", "2",
         "--format", "json", "--sandbox-path", str(tmp_path)],  # the runner waits for a file there
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, env=env,
    )  # fmt: skip
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
                if release_after and release_after.encode() in seen:
                    (tmp_path / "go").touch()
            elif proc.poll() is not None:
                break
    finally:
        (tmp_path / "go").touch()
        code = proc.wait(timeout=60)
        os.close(master)
    return code, seen.decode("utf-8", "replace")


def test_a_hanging_run_shows_running_and_elapsed_on_a_terminal(tmp_path: Path) -> None:
    # c0 hangs until the live line has shown one second passing with it still running.
    code, text = _run_on_pty(tmp_path, {}, release_after="0:01 elapsed")
    assert code == 0, text
    assert "\r\x1b[2K" in text  # rewritten in place
    frames = [COLOUR.sub("", f).replace("\x1b[0m", "") for f in text.split(CLEAR_LINE)]
    hanging = [f for f in frames if "0:01 elapsed" in f and "running" in f]
    assert hanging, frames[-5:]
    assert re.search(r"\d+/20 done · [12] running · 0 failed · 0:01 elapsed", hanging[0])
    assert COLOUR.search(text)  # colour on a terminal
    # At the end the live line gives way to a summary.
    assert re.fullmatch(r"refund-policy: 20/20 done · 0 failed · 0:0\d elapsed\r?\n", frames[-1])


def test_no_color_on_a_terminal_keeps_the_live_line_without_colour(tmp_path: Path) -> None:
    code, text = _run_on_pty(tmp_path, {"NO_COLOR": "1"}, release_after="done")
    assert code == 0, text
    assert "\r\x1b[2K" in text and "20/20 done" in text
    assert not COLOUR.search(text)


def test_without_a_terminal_one_line_per_invocation(tmp_path: Path) -> None:
    skill, cases, runner = _suite(tmp_path)
    (tmp_path / "go").touch()
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(cases), "--runner", f"{sys.executable} {runner}", "--trials", "1", "--format",
         "json"],
        capture_output=True, text=True, timeout=120, env=dict(os.environ, TERM="xterm"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 20
    assert all(
        re.fullmatch(r"\[\d+/20\] refund-policy c\d trial 1 \w+: .* \d+\.\ds", x) for x in lines
    )
    assert any("with: runner ok, skill not loaded (should have)" in line for line in lines)
    assert any("with: runner ok, skill not loaded (expected)" in line for line in lines)
    assert "\x1b" not in proc.stderr and "\r" not in proc.stderr
