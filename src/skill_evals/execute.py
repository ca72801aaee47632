"""Scheduling invocations: --jobs workers, fail-fast/--keep-going, --record/--resume, progress,
SIGINT/SIGTERM (docs/runner-contract.md).

Owner: execution.

``jobs`` worker threads take the next missing (case, trial, variant) of the plan from a shared
queue under one lock — no polling — and each runs its invocation to the end. The main thread
only waits; it is where Python delivers SIGINT/SIGTERM, whose handler sets the cancel event that
every running invocation watches.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Protocol, runtime_checkable

from .cases import Case, CaseSuite
from .checks import RegexPool, WorkspaceView, judge_task
from .errors import EvalError
from .helper_commands import WORKSPACE_VAR
from .observations import (
    VARIANTS,
    Observation,
    RecordWriter,
    RunnerFailure,
    Variant,
    isolation_breach,
    plan_keys,
)
from .processes import ProcessSweeper
from .runner import InvocationSpec, invocation_env, run_invocation
from .workspace import Prepared, WorkspaceRoot


@dataclass(frozen=True)
class Progress:
    """One finished invocation, for the progress output (progress.py)."""

    done: int
    total: int
    skill: str
    case_id: str
    trial: int
    variant: Variant
    ok: bool  # False for a runner failure
    elapsed_ms: float
    reason: str | None = None  # the failure's reason (never stdout, stderr or the prompt)
    triggered: bool | None = None  # did the run load the tested skill (None: failed)
    expect_trigger: bool | None = None  # the case's label
    running: int = 0  # invocations still running after this one


@runtime_checkable
class StartListener(Protocol):
    """A progress callable that also wants to know when an invocation starts (a live status
    line shows what is running, also while nothing finishes)."""

    def started(self, running: int, done: int, total: int) -> None:
        """An invocation started: ``running`` now run, ``done`` of ``total`` have finished."""


@dataclass(frozen=True)
class ExecutionPlan:
    """What to run. Invocation order: case-file order, trial, then with before without."""

    command: Sequence[str]
    suite: CaseSuite
    skill_name: str
    skill_dir: Path
    trials: int
    jobs: int
    timeout_ms: int
    max_bytes: int
    keep_going: bool = False
    record: Path | None = None
    resumed: Sequence[Observation] = ()
    base_env: Mapping[str, str] | None = None  # default: os.environ
    variants: tuple[Variant, ...] = VARIANTS  # the arms to run, in this order per trial
    # Set on every invocation after the EVALGATE_SKILL_* variables; a None value removes the
    # variable (routing: SKILL_EVALS_SKILL_DIRS set, EVALGATE_SKILL_DIR removed).
    extra_env: Mapping[str, str | None] | None = None
    keep_workspaces: Path | None = None  # move each workspace there instead of deleting it
    retries: int = 2  # re-runs of an invocation whose runner said its failure is retryable
    retry_delay: Callable[[int], float] | None = None  # seconds before re-run n (0-based)


@dataclass
class ExecutionResult:
    """Observations (resumed + new, in plan order), failures, counts."""

    observations: list[Observation] = field(default_factory=list)
    failures: list[RunnerFailure] = field(default_factory=list)
    invocations: int = 0  # runner processes started in this run (resumed ones excluded)
    wall_ms: float = 0.0
    interrupted: bool = False
    not_run: int = 0  # skipped after a failure (fail-fast) or an interrupt
    messages: list[str] = field(default_factory=list)  # e.g. a workspace that could not be kept
    retried: int = 0  # re-runs after retryable failures (counted in invocations too)


def retry_delay(attempt: int) -> float:
    """Seconds to wait before re-run ``attempt`` (0-based): 2, 8, 32, then 60 each time."""
    return min(60.0, 2.0 * 4.0**attempt)


@contextmanager
def _signals_cancel(cancel: threading.Event) -> Iterator[None]:
    """While inside, SIGINT/SIGTERM set ``cancel`` (main thread only; old handlers restored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        cancel.set()

    previous: dict[signal.Signals, Any] = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, handler)
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


class _Scheduler:
    """Shared state of one execute() call; every field is guarded by ``lock``."""

    def __init__(
        self,
        plan: ExecutionPlan,
        todo: list[tuple[str, int, Variant]],
        done: int,
        total: int,
        writer: RecordWriter | None,
        progress: Callable[[Progress], None] | None,
        workspaces: WorkspaceRoot,
        regex: RegexPool,
    ) -> None:
        self.plan = plan
        self.workspaces = workspaces
        self.regex = regex
        self.messages: list[str] = []
        self.lock = threading.Lock()
        self.cancel = threading.Event()
        self.sweeper = ProcessSweeper()  # one per run: it knows every live runner
        self.todo = todo
        self.next_index = 0
        self.done = done
        self.total = total
        self.writer = writer
        self.progress = progress
        self.on_start = progress.started if isinstance(progress, StartListener) else None
        self.stop_starting = False
        self.started = 0
        self.retried = 0
        self.running = 0
        self.observations: dict[tuple[str, int, str], Observation] = {}
        self.failures: dict[tuple[str, int, str], RunnerFailure] = {}
        self.error: BaseException | None = None
        base = os.environ if plan.base_env is None else plan.base_env
        self.base_env: Mapping[str, str] = base
        self.skill_dir = str(Path(plan.skill_dir).resolve())
        self.cases: dict[str, Case] = plan.suite.by_id()
        self.expect = {case.id: case.expect_trigger for case in plan.suite.cases}

    def env_for(self, case_id: str, trial: int, variant: Variant) -> dict[str, str]:
        """The runner's environment for one invocation."""
        env = invocation_env(self.base_env, variant, self.skill_dir, case_id, trial)
        for name, value in (self.plan.extra_env or {}).items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return env

    def take(self) -> tuple[str, int, Variant] | None:
        """The next key to run, or None when nothing more may start."""
        with self.lock:
            if self.stop_starting or self.cancel.is_set() or self.next_index >= len(self.todo):
                return None
            key = self.todo[self.next_index]
            self.next_index += 1
            self.started += 1
            self.running += 1
            if self.on_start is not None:
                self.on_start(self.running, self.done, self.total)
            return key

    def run_one(self, key: tuple[str, int, Variant]) -> None:
        case_id, trial, variant = key
        outcome, elapsed_ms = self._attempts(key)
        if outcome is None:
            with self.lock:
                self.running -= 1
            return  # interrupted by our own cancel: not the runner's failure, just not run
        with self.lock:
            if isinstance(outcome, Observation):
                if self.writer is not None:
                    self.writer.write(outcome)  # before anything else sees it: nothing is lost
                self.observations[key] = outcome
            else:
                self.failures[key] = outcome
                if not self.plan.keep_going:
                    self.stop_starting = True
            self.done += 1
            self.running -= 1
            if self.progress is not None:
                ok = isinstance(outcome, Observation)
                self.progress(
                    Progress(
                        done=self.done,
                        total=self.total,
                        skill=self.plan.skill_name,
                        case_id=case_id,
                        trial=trial,
                        variant=variant,
                        ok=ok,
                        elapsed_ms=elapsed_ms,
                        reason=None if isinstance(outcome, Observation) else outcome.reason,
                        triggered=(
                            self.plan.skill_name in outcome.invoked_skills
                            if isinstance(outcome, Observation)
                            else None
                        ),
                        expect_trigger=self.expect.get(case_id),
                        running=self.running,
                    )
                )

    def _attempts(
        self, key: tuple[str, int, Variant]
    ) -> tuple[Observation | RunnerFailure | None, float]:
        """Run ``key`` in a fresh workspace; while the runner says its failure is retryable, run
        it again (in a fresh workspace again) after a backoff, at most ``plan.retries`` more
        times. Only the last result counts; an interrupt cuts the wait short (the invocation
        then counts as not run)."""
        case_id, trial, variant = key
        case = self.cases[case_id]
        needs_snapshot = case.task is not None and case.task.needs_snapshot
        delay = self.plan.retry_delay or retry_delay
        attempt = 0
        while True:
            prepared = self.workspaces.prepare(
                case.fixture, case.setup, self.base_env, needs_snapshot, self.cancel
            )
            try:
                outcome, elapsed_ms, retryable = self._invoke(case, key, prepared)
            finally:
                # The runner's processes are gone and the checks are done: nothing reads W.
                problem = self.workspaces.dispose(prepared, case_id, trial, variant)
                if problem is not None:
                    with self.lock:
                        self.messages.append(f"{case_id} trial {trial} {variant}: {problem}")
            if not retryable or attempt >= self.plan.retries or outcome is None:
                return outcome, elapsed_ms
            if self.cancel.wait(delay(attempt)):
                return None, elapsed_ms  # interrupted while waiting: not run
            attempt += 1
            with self.lock:
                self.started += 1
                self.retried += 1

    def _invoke(
        self, case: Case, key: tuple[str, int, Variant], prepared: Prepared
    ) -> tuple[Observation | RunnerFailure | None, float, bool]:
        """Run the runner in the prepared workspace and judge the case's checks there.
        None when our own interrupt stopped it; the flag: the runner called its failure
        retryable."""
        case_id, trial, variant = key
        if prepared.interrupted or self.cancel.is_set():
            return None, 0.0, False
        if prepared.failure is not None:
            return RunnerFailure(case_id, trial, variant, prepared.failure), 0.0, False
        env = self.env_for(case_id, trial, variant)
        env[WORKSPACE_VAR] = str(prepared.workspace)
        # The runner's temporary files go with its workspace, even when it is killed.
        env["TMPDIR"] = str(prepared.tmp)
        spec = InvocationSpec(
            argv=tuple(self.plan.command),
            prompt=case.prompt,
            env=env,
            case_id=case_id,
            trial=trial,
            variant=variant,
            timeout_ms=self.plan.timeout_ms,
            max_bytes=self.plan.max_bytes,
        )
        result = run_invocation(spec, self.cancel, self.sweeper)
        outcome = result.outcome
        if isinstance(outcome, RunnerFailure):
            if self.cancel.is_set():
                return None, result.elapsed_ms, False
            return outcome, result.elapsed_ms, result.retryable
        breach = isolation_breach(outcome, self.plan.skill_name)
        if breach is not None:
            return breach, result.elapsed_ms, False
        if case.task is not None:
            view = WorkspaceView(prepared.workspace, self.base_env, prepared.before, self.cancel)
            outcomes = judge_task(case.task, outcome, self.regex, view)
            if self.cancel.is_set():
                return None, result.elapsed_ms, False  # a verifier was interrupted: not judged
            outcome = dataclasses.replace(
                outcome,
                checks=tuple(o.passed for o in outcomes),
                reasons=tuple(o.reason for o in outcomes),
            )
        return outcome, result.elapsed_ms, False

    def worker(self) -> None:
        try:
            while (key := self.take()) is not None:
                self.run_one(key)
        except BaseException as exc:  # a record write error or a bug: stop everything
            with self.lock:
                if self.error is None:
                    self.error = exc
                self.stop_starting = True
            self.cancel.set()


def execute(
    plan: ExecutionPlan, progress: Callable[[Progress], None] | None = None
) -> ExecutionResult:
    """Run every missing invocation of ``plan`` up to ``plan.jobs`` at a time.

    A ``without`` observation that lists the tested skill becomes a RunnerFailure
    ("isolation breach"). After the first failure no new invocation starts unless keep_going.
    SIGINT/SIGTERM: stop starting, kill running groups, return with interrupted=True.

    Only valid observations are appended to ``plan.record`` (resumed ones are not written again).
    Progress counts over the whole plan: resumed observations count as already done."""
    started = time.monotonic()
    keys = plan_keys(plan.suite, plan.trials, plan.variants)
    wanted = set(keys)
    resumed = {o.key: o for o in plan.resumed if o.key in wanted}
    todo = [k for k in keys if k not in resumed]
    writer = RecordWriter(plan.record) if plan.record is not None else None
    with ExitStack() as stack:
        if writer is not None:
            stack.callback(writer.close)
        # Entered first, left last: the engine's own helpers (regex checks, workspaces) are
        # closed before the leftovers of the runners are swept.
        sweeper = stack.enter_context(ProcessSweeper().running())
        workspaces = stack.enter_context(WorkspaceRoot(plan.keep_workspaces))
        regex = stack.enter_context(RegexPool())
        sched = _Scheduler(plan, todo, len(resumed), len(keys), writer, progress, workspaces, regex)
        sched.sweeper = sweeper
        with _signals_cancel(sched.cancel):
            threads = [
                threading.Thread(target=sched.worker, name=f"skill-evals-job-{i}", daemon=True)
                for i in range(max(1, min(plan.jobs, len(todo))))
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()  # interruptible: the signal handler runs meanwhile
    if sched.error is not None:
        if isinstance(sched.error, EvalError):
            raise sched.error
        raise RuntimeError("an invocation worker failed") from sched.error
    interrupted = sched.cancel.is_set()
    observations = [
        resumed.get(k) or sched.observations[k]
        for k in keys
        if k in resumed or k in sched.observations
    ]
    failures = [sched.failures[k] for k in keys if k in sched.failures]
    # A resumed `without` observation listing the skill (a hand-edited file) breaches isolation
    # exactly as in --observations: a failure, not re-run.
    breaches = {
        o.key: b for o in observations if (b := isolation_breach(o, plan.skill_name)) is not None
    }
    if breaches:
        observations = [o for o in observations if o.key not in breaches]
        failures = [*failures, *breaches.values()]
        order: dict[tuple[str, int, str], int] = {k: i for i, k in enumerate(keys)}
        failures.sort(key=lambda f: order[f.key])
    return ExecutionResult(
        observations=observations,
        failures=failures,
        invocations=sched.started,
        retried=sched.retried,
        wall_ms=(time.monotonic() - started) * 1000.0,
        interrupted=interrupted,
        not_run=len(keys) - len(observations) - len(failures),
        messages=sched.messages,
    )
