"""Running a judge once per request (docs/judging.md): no shell, the caller's directory, the
request on stdin, a time bound and a byte cap, its whole session killed afterwards — the
generic helper run (run/helper_process.py): the runner's I/O pump and process sweeper.

The judge is the user's own trusted program (it is not sandboxed), but it never sees the
engine's variables or the CI's command files and tokens: its environment is the caller's minus
every ``EVALGATE_*`` and ``SKILL_EVALS_*`` variable and minus GitHub's ``GITHUB_TOKEN``,
``GH_TOKEN``, command files and ``ACTIONS_*`` runtime, id-token, cache and results variables."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..checks.judge_verdict import Verdict, VerdictError, own_error, parse_verdict
from .helper_process import run_helper, signal_name
from .processes import ProcessSweeper

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
    end = run_helper(
        argv,
        payload,
        timeout_ms=spec.timeout_ms,
        max_bytes=spec.max_bytes,
        env=spec.env,
        sweeper=sweeper,
        cancel=cancel,
    )
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
