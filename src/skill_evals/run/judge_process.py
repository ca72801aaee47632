"""Running a judge once per request (docs/judging.md): no shell, the caller's directory, the
request on stdin, a time bound and a byte cap, its whole session killed afterwards — the
runner's I/O pump and process sweeper, with the marks of a helper command.

The judge is the user's own trusted program (it is not sandboxed), but it never sees the
engine's variables or the CI's command files and tokens: its environment is the caller's minus
every ``EVALGATE_*`` and ``SKILL_EVALS_*`` variable and minus GitHub's ``GITHUB_TOKEN``,
``GH_TOKEN``, command files and ``ACTIONS_*`` runtime, id-token, cache and results variables."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..checks.judge_verdict import Verdict, VerdictError, own_error, parse_verdict
from .processes import ProcessSweeper, engine_children, forget_child, start_child
from .runner import InvocationSpec, _Pump

_DROPPED = ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT")
_DROPPED_MORE = ("GITHUB_STEP_SUMMARY", "GITHUB_STATE")
_DROPPED_PREFIXES = (
    "EVALGATE_",
    "SKILL_EVALS_",
    "ACTIONS_RUNTIME_",
    "ACTIONS_ID_TOKEN_",
    "ACTIONS_CACHE_",
    "ACTIONS_RESULTS_",
)


def judge_env(base: Mapping[str, str]) -> dict[str, str]:
    """The judge's environment: ``base`` without the engine's and the CI's variables."""
    return {
        name: value
        for name, value in base.items()
        if name not in _DROPPED
        and name not in _DROPPED_MORE
        and not name.upper().startswith(_DROPPED_PREFIXES)
    }


@dataclass(frozen=True)
class JudgeSpec:
    """How each judge process runs."""

    timeout_ms: int
    max_bytes: int
    env: Mapping[str, str]  # already judge_env()


@dataclass(frozen=True)
class Answer:
    """One judge process's end: its verdict, or a failure reason (``judge: …``) and whether the
    judge called it retryable."""

    verdict: Verdict | None
    failure: str | None = None
    retryable: bool = False


class _JudgePump(_Pump):
    """The runner's pump; when the judge exits, its session and marked processes are killed
    as a helper command's are."""

    mark: str
    before: set[tuple[int, int]]

    def _exited(self) -> None:
        self.child_gone = True
        if self.pidfd >= 0:
            self.sel.unregister(self.pidfd)
        self.sweeper.sweep_helper(self.proc.pid, self.mark, self.before)
        self.deadline = min(self.deadline, time.monotonic() + 0.5)


def ask_once(
    argv: Sequence[str],
    request: Mapping[str, object],
    spec: JudgeSpec,
    sweeper: ProcessSweeper,
    cancel: threading.Event | None,
) -> Answer:
    """Start the judge for one request and read its answer; never raises for what it does."""
    kind = str(request["kind"])
    scale_raw = request.get("scale")
    scale = (float(scale_raw[0]), float(scale_raw[1])) if isinstance(scale_raw, list) else None
    payload = json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    # No mark in its environment (it gets none of the engine's variables): what it leaves is
    # found by its session and group and, once its parent is gone, as an orphan of the engine.
    mark = ""
    before = engine_children()
    try:
        proc = start_child(
            lambda: subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(spec.env),
                start_new_session=True,
                bufsize=0,
            )
        )
    except OSError as exc:
        return Answer(None, f"judge: cannot start {argv[0]!r}: {exc.strerror or 'error'}")
    except (ValueError, subprocess.SubprocessError) as exc:
        return Answer(None, f"judge: cannot start {argv[0]!r}: {type(exc).__name__}")
    started = time.monotonic()
    shape = InvocationSpec(tuple(argv), "", {}, "", 0, "with", spec.timeout_ms, spec.max_bytes)
    pump = _JudgePump(proc, payload, started + spec.timeout_ms / 1000.0, shape, cancel, sweeper)
    pump.mark, pump.before = mark, before
    try:
        outcome = pump.run()
    finally:
        sweeper.sweep_helper(proc.pid, mark, before)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        code = proc.wait()
        forget_child(proc.pid)
    if outcome.failure is not None:
        if outcome.failure.startswith("output exceeded"):
            return Answer(None, f"judge: output exceeded {spec.max_bytes} bytes (stdout + stderr)")
        return Answer(None, f"judge: {outcome.failure}")
    return _answer(outcome.stdout, code, kind, scale)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _answer(stdout: bytes, code: int, kind: str, scale: tuple[float, float] | None) -> Answer:
    own = own_error(stdout)
    if own is not None:
        return Answer(None, f"judge: {own}", own.retryable)
    if code < 0:
        return Answer(None, f"judge: killed by signal {_signal_name(-code)}")
    if code > 0:
        return Answer(None, f"judge: exited with code {code}")
    try:
        return Answer(parse_verdict(stdout, kind, scale))
    except VerdictError as exc:
        return Answer(None, f"judge: {exc}")
