"""Judging the model-graded checks of an observation (docs/judging.md): after its other checks,
only when they passed, one request per check to the judge, a verdict reused whenever the
observation already holds one for the same request key.

A request key is the SHA-256 of the canonical JSON of the judge (its argv, each argument naming
a file by that file's content) and the request itself; so an unchanged re-score asks nothing,
and a new rubric, scale, threshold or judge asks again. A judge failure is a runner failure of
the observation (``judge: …``), never a failed task; the observation keeps the verdicts that
did come back."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..cache.key import Uncacheable, canonical_json, runner_identity
from ..checks import Matcher, judge_task
from ..checks.judge_files import select
from ..checks.judge_model import Judge, JudgePairwise
from ..plan.run_control import retry_delay
from ..sandbox.probe import SandboxChoice
from ..suite.cases import Case
from .helper_cell import HelperCell
from .judge_ledger import JudgeLedger
from .judge_process import Answer, JudgeSpec, ask_once
from .observations import Observation, Variant
from .processes import ProcessSweeper

DEFAULT_JUDGE_TIMEOUT_MS = 120_000


@dataclass(frozen=True)
class JudgeSettings:
    """The run's judging: the default judge (--judge / config), its bounds and retries, and
    --max-judge-calls (None: no limit)."""

    command: tuple[str, ...] | None = None
    named: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # --judges
    timeout_ms: int = DEFAULT_JUDGE_TIMEOUT_MS
    max_bytes: int = 1_000_000
    retries: int = 2
    retry_delay: Callable[[int], float] | None = None
    max_calls: int | None = None
    max_cost_usd: float | None = None  # --max-cost-usd: runners' and judges' reported cost
    env: Mapping[str, str] | None = None
    cwd: Path | None = None
    sandbox: SandboxChoice | None = None  # the run's (None: SKILL_EVALS_SANDBOX, else auto)
    # --judge-fallback: an inconsistent pair is decided by absolute grades ("absolute") or is a
    # tie ("tie"); the grades must differ by --judge-fallback-margin (a share of the scale).
    fallback: str = "absolute"
    fallback_margin: float = 0.05


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def absolute_request(case: Case, check: Judge, obs: Observation) -> dict[str, Any]:
    """The request of one ``judge`` check on one observation: never a case id, trial, arm or
    skill name."""
    answer = {
        "output": obs.output if "output" in check.include else None,
        "files": select(check.file_globs, obs.judge_files or ()),
    }
    return {
        "kind": "absolute",
        "prompt": case.prompt,
        "rubric": check.rubric,
        "scale": [_number(check.scale[0]), _number(check.scale[1])],
        "threshold": None if check.threshold is None else _number(check.threshold),
        "answer": answer,
    }


class Judging:
    """One run's judge calls (thread-safe): bounds, retries, the call budget and the ledger."""

    def __init__(self, settings: JudgeSettings, sweeper: ProcessSweeper | None = None) -> None:
        self.settings = settings
        self.sweeper = sweeper or ProcessSweeper()
        self.cancel: threading.Event | None = None
        self.ledger = JudgeLedger()
        self.budget_hit = False
        self.cost_hit = False  # the budget reached was --max-cost-usd
        # The cost the run's runners reported so far (set by the run; 0 when nothing runs).
        self.runner_spent: Callable[[], float] = lambda: 0.0
        self.judged: set[tuple[str, int, str]] = set()  # observations judged by this run already
        # Pairs (case id, trial, compared arm) judged by this run already, and each planned
        # pair's draw (judge_pairs.py).
        self.pairs_judged: set[tuple[str, int, Variant]] = set()
        self.draws: dict[tuple[str, int, Variant], float] = {}
        self.lock = threading.Lock()
        self._identities: dict[tuple[str, ...], Any] = {}
        base = settings.env if settings.env is not None else os.environ
        self.cell = HelperCell(base, settings.sandbox)
        self._spec = JudgeSpec(settings.timeout_ms, settings.max_bytes, self.cell)

    def argv(self, check: Judge | JudgePairwise) -> tuple[str, ...]:
        """The judge ``check`` names (--judges), else the run's default (validated before
        the run)."""
        name = check.judge
        argv = self.settings.named[name] if name and name != "default" else self.settings.command
        assert argv is not None, "a judge check without a judge is refused when planning"
        return argv

    def request_key(self, argv: tuple[str, ...], request: Mapping[str, Any]) -> str:
        """The request's key: the judge by content and the request."""
        with self.lock:
            identity = self._identities.get(argv)
            if identity is None:
                cwd = self.settings.cwd or Path.cwd()
                try:
                    identity = runner_identity(argv, cwd)
                except Uncacheable:
                    identity = list(argv)
                self._identities[argv] = identity
        payload = {"judge": identity, "request": request}
        return hashlib.sha256(canonical_json(payload)).hexdigest()

    def judge(
        self, case: Case, obs: Observation, matcher: Matcher
    ) -> tuple[Observation, str | None]:
        """``obs`` with its judge checks judged (verdicts, entries, reasons), and the reason of
        a judge failure (None when every judge asked answered)."""
        task = case.task
        if task is None or not task.judged:
            return obs, None
        self.ledger.used = True
        outcomes = judge_task(task, obs, matcher, None)
        checks: list[bool | None] = [o.passed for o in outcomes]
        reasons: list[str | None] = [o.reason for o in outcomes]
        blocked = obs.exit_code != 0 or any(
            not o.passed for i, o in enumerate(outcomes) if i not in task.judged
        )
        previous = {entry["check"]: entry for entry in obs.judged}
        entries: list[Mapping[str, Any]] = []
        failure: str | None = None
        for index in task.judged:
            check = task.checks[index]
            assert isinstance(check, Judge)
            if blocked or failure is not None:
                checks[index], reasons[index] = None, None
                continue
            argv = self.argv(check)
            request = absolute_request(case, check, obs)
            key = self.request_key(argv, request)
            entry = previous.get(index)
            if entry is not None and entry["key"] == key:
                self.ledger.reused(cached=obs.cached)
            else:
                entry, failure = self._ask(argv, request, key, index)
                if entry is None:
                    checks[index], reasons[index] = None, None
                    continue
            entries.append(entry)
            passed = entry["pass"] if check.threshold is None else entry["score"] >= check.threshold
            checks[index] = bool(passed)
            reasons[index] = None if passed else f"judge: {entry['reason'] or 'failed'}"
            blocked = blocked or not passed
        with self.lock:
            self.judged.add(obs.key)
        judged = dataclasses.replace(
            obs, checks=tuple(checks), reasons=tuple(reasons), judged=tuple(entries)
        )
        return judged, failure

    def _ask(
        self, argv: tuple[str, ...], request: Mapping[str, Any], key: str, index: int
    ) -> tuple[dict[str, Any] | None, str | None]:
        """Ask the judge (with retries, within the budget): the entry, or why not."""
        answer = self.call(argv, request)
        if answer.verdict is None:
            return None, answer.failure
        verdict = answer.verdict
        entry: dict[str, Any] = {
            "check": index,
            "key": key,
            "score": verdict.score,
            "pass": verdict.passed,
            "reason": verdict.reason,
        }
        if verdict.meta:
            entry["meta"] = dict(verdict.meta)
        return entry, None

    def _start(self) -> bool:
        """Count one more judge process, unless the budget forbids it."""
        with self.ledger.lock:
            limit = self.settings.max_calls
            if limit is not None and self.ledger.calls >= limit:
                self.budget_hit = True
                return False
            cost = self.settings.max_cost_usd
            if cost is not None and self.runner_spent() + math.fsum(self.ledger.cost_usd) >= cost:
                self.budget_hit = self.cost_hit = True
                return False
            self.ledger.calls += 1
            return True

    def call(self, argv: tuple[str, ...], request: Mapping[str, Any]) -> Answer:
        """One request answered: judge processes started (with retries) within the budget. A
        request left without a verdict is counted in the ledger's failures."""
        answer = self._attempts(argv, request)
        if answer.verdict is None:
            with self.ledger.lock:
                self.ledger.failures += 1
        return answer

    def _attempts(self, argv: tuple[str, ...], request: Mapping[str, Any]) -> Answer:
        delay = self.settings.retry_delay or retry_delay
        attempt = 0
        while True:
            if not self._start():
                return Answer(None, self.budget_reason())
            answer = ask_once(argv, request, self._spec, self.sweeper, self.cancel)
            self.ledger.answered(answer.verdict.meta if answer.verdict is not None else None)
            if answer.verdict is not None or not answer.retryable:
                return answer
            if attempt >= self.settings.retries:
                return answer
            if self.cancel is not None and self.cancel.wait(delay(attempt)):
                return answer
            if self.cancel is None:
                threading.Event().wait(delay(attempt))
            with self.ledger.lock:
                self.ledger.retried += 1
            attempt += 1

    def budget_reason(self) -> str:
        """Why a judge call did not start."""
        if self.cost_hit:
            spent = self.runner_spent() + self.ledger.spent_usd
            return (
                f"judge: cost budget reached: ${spent:.4f} reported by the runners and judges "
                f"(--max-cost-usd {self.settings.max_cost_usd:g}); no more judge calls started"
            )
        return f"judge: judge budget reached after {self.settings.max_calls} judge calls"


T = TypeVar("T")
R = TypeVar("R")


def in_parallel(items: Sequence[T], work: Callable[[T], R], jobs: int) -> list[R]:
    """``work`` over ``items`` on ``jobs`` threads, the results in the items' order."""
    results: list[R | None] = [None] * len(items)
    lock = threading.Lock()
    position = 0

    def worker() -> None:
        nonlocal position
        while True:
            with lock:
                if position >= len(items):
                    return
                mine = position
                position += 1
            results[mine] = work(items[mine])

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [r for r in results if r is not None]


def judge_all(
    items: Sequence[tuple[Case, Observation]], judging: Judging, matcher: Matcher, jobs: int
) -> list[tuple[Observation, str | None]]:
    """Judge observations that no worker judged (resumed, cached, recorded), ``jobs`` at a
    time, in their order."""
    with judging.sweeper.running():
        return in_parallel(items, lambda item: judging.judge(item[0], item[1], matcher), jobs)
