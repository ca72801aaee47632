"""Running a judge once per request (docs/judging.md): no shell, the caller's directory, the
request on stdin, a time bound and a byte cap, its whole session killed afterwards — the
generic helper run (run/helper_process.py): the runner's I/O pump and process sweeper.

The judge is named by the trusted side, but it reads untrusted answers and holds a key: it runs
in the run's sandbox with the built-in runners' allowlist of the caller's environment and its
provider keys through the credential proxy (run/helper_cell.py), never the caller's whole
environment, the engine's variables or the CI's command files and tokens."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..checks.judge_verdict import Verdict, VerdictError, own_error, parse_verdict
from .helper_process import HelperSpec, run_confined, signal_name
from .processes import ProcessSweeper

JudgeSpec = HelperSpec  # how each judge process runs


@dataclass(frozen=True)
class Answer:
    """One judge process's end: its verdict, or a failure reason (``judge: …``) and whether the
    judge called it retryable."""

    verdict: Verdict | None
    failure: str | None = None
    retryable: bool = False


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
    end = run_confined(spec, argv, payload, sweeper, cancel=cancel)
    if end.failure is not None:
        return Answer(None, f"judge: {end.failure}")
    return _answer(end.stdout, end.code, kind, scale)


def _answer(stdout: bytes, code: int, kind: str, scale: tuple[float, float] | None) -> Answer:
    own = own_error(stdout)
    if own is not None:
        return Answer(None, f"judge: {own}", own.retryable)
    if code < 0:
        return Answer(None, f"judge: killed by signal {signal_name(-code)}")
    if code > 0:
        return Answer(None, f"judge: exited with code {code}")
    try:
        return Answer(parse_verdict(stdout, kind, scale))
    except VerdictError as exc:
        return Answer(None, f"judge: {exc}")
