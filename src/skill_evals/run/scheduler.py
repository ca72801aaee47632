"""The shared state of one run's workers: which invocation starts next, what finished, when to
stop starting (a failure, an interrupt, a budget, a settled verdict).

Owner: execution. Used by execute.py only.

The one place an invocation's life is decided is :meth:`Scheduler.run_one`: the arm's
environment, the attempts (with retries), then — under the lock — the record, the cache store,
the ledger, the settle bookkeeping and the progress line, in that order.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shlex
import threading
from collections.abc import Callable, Mapping

from ..agents.copilot_package import shared_package
from ..agents.registry import builtin_agent
from ..agents.runner_env import agent_program, builtin_runner_env
from ..checks import WorkspaceView
from ..plan.arms import ARM_VAR, Arm
from ..plan.ledger import Ledger
from ..plan.run_control import StopReason, retry_delay
from ..plan.settle import Settler
from ..sandbox.behaviour import BehaviourLog, recording
from ..sandbox.binds import BindRefused
from ..sandbox.bwrap import Sandbox
from ..sandbox.child_env import without_foreign_keys, without_job_secrets
from ..sandbox.egress import Channel
from ..sandbox.probe import SandboxState
from ..suite.cases import Case
from . import runner_stderr
from .confined import judge_outcome, run_confined, with_behaviour
from .execution_plan import ExecutionPlan
from .helper_commands import WORKSPACE_VAR, Sight
from .observations import Key, Observation, RunnerFailure, isolation_breach
from .processes import ProcessSweeper
from .progress_types import Progress, StartListener
from .record_writer import RecordWriter
from .regex import RegexPool
from .runner import InvocationSpec, invocation_env
from .runner_sandbox import arm_sight, runner_argv
from .workspace import Prepared, WorkspaceRoot

Outcome = Observation | RunnerFailure


class Scheduler:
    """Shared state of one execute() call; every field is guarded by ``lock``."""

    def __init__(
        self,
        plan: ExecutionPlan,
        arms: Mapping[str, Arm],
        todo: list[Key],
        done: int,
        total: int,
        writer: RecordWriter | None,
        progress: Callable[[Progress], None] | None,
        workspaces: WorkspaceRoot,
        regex: RegexPool,
    ) -> None:
        self.plan = plan
        self.arms = arms
        self.workspaces = workspaces
        self.regex = regex
        self.messages: list[str] = []
        self.lock = threading.Lock()
        self.cancel = threading.Event()
        self.sweeper = ProcessSweeper()  # one per run: it knows every live runner
        self.ledger = Ledger(arms)
        self.settler: Settler | None = None
        self.todo = todo
        self.next_index = 0
        self.done = done
        self.total = total
        self.writer = writer
        self.progress = progress
        self.on_start = progress.started if isinstance(progress, StartListener) else None
        self.stop_starting = False
        self.stop_reason: StopReason | None = None
        self.checking = False  # a settle check runs (outside the lock)
        self.recheck = False  # something finished while it ran
        self.started = 0
        self.retried = 0
        self.running = 0
        self.observations: dict[Key, Observation] = {}
        self.failures: dict[Key, RunnerFailure] = {}
        self.held: dict[Key, Observation] = {}  # with observations waiting for their pair
        self.error: BaseException | None = None
        base = os.environ if plan.base_env is None else plan.base_env
        self.base_env: Mapping[str, str] = base
        # A built-in runner starts with its agent's allowlist only; no child gets the job's
        # own secrets nor another runner's key (child_env.py).
        command = shlex.join(plan.command)
        start = builtin_runner_env(command, base)
        self.agent_program = agent_program(command)
        # Copilot's package, unpacked once and bound read-only in each sandbox.
        self.package = shared_package(builtin_agent(command), self.agent_program, base)
        if start is None:  # a custom runner: the caller's, less a built-in runner's key
            start = without_foreign_keys(base, frozenset(c.env for c in plan.credentials))
        self.runner_base = without_job_secrets(start)
        self.sandbox: Sandbox | None = None
        self.sandbox_state: SandboxState | None = None
        self.proxy_env: dict[str, str] = {}  # the credential proxy's placeholders and URLs
        self.cases: dict[str, Case] = plan.suite.by_id()
        self.expect = {case.id: case.expect_trigger for case in plan.suite.cases}

    def env_for(self, case_id: str, trial: int, arm: Arm) -> dict[str, str]:
        """The runner's environment for one invocation of ``arm``."""
        env = invocation_env(self.runner_base, arm.echo, str(arm.skill_dir), case_id, trial)
        env[ARM_VAR] = arm.name
        env.update(self.proxy_env)
        for name, value in (self.plan.extra_env or {}).items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return env

    def _budget_reached(self) -> bool:
        """Under the lock: whether the budget forbids another runner process; says why once."""
        budget = self.plan.budget
        judging = self.plan.judging
        spent = self.ledger.spent_usd + (judging.ledger.spent_usd if judging is not None else 0.0)
        if budget is None or not budget.reached(self.started, spent):
            return False
        if self.stop_reason is None:
            self.stop_reason = "budget"
        self.stop_starting = True
        return True

    def take(self) -> Key | None:
        """The next key to run, or None when nothing more may start."""
        with self.lock:
            if self.stop_starting or self.cancel.is_set() or self.next_index >= len(self.todo):
                return None
            if self._budget_reached():
                return None
            key = self.todo[self.next_index]
            self.next_index += 1
            self.started += 1
            self.running += 1
            if self.on_start is not None:
                self.on_start(self.running, self.done, self.total)
            return key

    def run_one(self, key: Key) -> None:
        """Run one invocation to its end and account for it."""
        case_id, trial, arm_name = key
        arm = self.arms[arm_name]
        outcome, elapsed_ms, attempts = self._attempts(key, arm)
        if outcome is None:
            with self.lock:
                self.running -= 1
            return  # interrupted by our own cancel: not the runner's failure, just not run
        judge_failure = None
        if isinstance(outcome, Observation) and self.plan.judging is not None:
            outcome, judge_failure = self.plan.judging.judge(
                self.cases[case_id], outcome, self.regex
            )
            if judge_failure is not None and self.cancel.is_set():
                # Our own interrupt stopped the judge: recorded (a resume judges it), but
                # neither scored nor a failure.
                with self.lock:
                    if self.writer is not None:
                        self.writer.write(outcome)
                    self.running -= 1
                return
        with self.lock:
            if isinstance(outcome, Observation) and self._holds(key):
                # Recorded now (nothing is lost), again with its verdicts once its pair is
                # judged (execute.py); cached only then.
                if self.writer is not None:
                    self.writer.write(outcome)
                self.held[key] = outcome
                self.observations[key] = outcome
            elif isinstance(outcome, Observation):
                if self.writer is not None:
                    self.writer.write(outcome)  # before anything else sees it: nothing is lost
                self.observations[key] = outcome
                if self.plan.cache is not None:
                    self.plan.cache.store(self.cases[case_id], trial, arm, outcome)
            if judge_failure is not None and isinstance(outcome, Observation):
                # Recorded and cached all the same, never scored.
                self.ledger.ran(arm_name, attempts, outcome)
                outcome = RunnerFailure(case_id, trial, arm_name, judge_failure)
                self.observations.pop(key, None)
                attempts = 0
            if isinstance(outcome, RunnerFailure):
                self.failures[key] = outcome
                if not self.plan.keep_going:
                    self.stop_starting = True
            if attempts:
                self.ledger.ran(
                    arm_name, attempts, outcome if isinstance(outcome, Observation) else None
                )
            if self.settler is not None:
                self.settler.observe(key, outcome)
            self.done += 1
            self.running -= 1
            self._report(key, outcome, elapsed_ms)
        self.check_settled()

    def _holds(self, key: Key) -> bool:
        """Whether a with observation waits for its pairwise verdict (to be cached, and
        recorded once more with it)."""
        task = self.cases[key[0]].task
        return (
            key[2] == "with"
            and self.plan.judging is not None
            and task is not None
            and task.pairwise is not None
        )

    def _report(self, key: Key, outcome: Outcome, elapsed_ms: float) -> None:
        if self.progress is None:
            return
        case_id, trial, arm_name = key
        ok = isinstance(outcome, Observation)
        self.progress(
            Progress(
                done=self.done,
                total=self.total,
                skill=self.plan.skill_name,
                case_id=case_id,
                trial=trial,
                variant=arm_name,
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

    def check_settled(self) -> None:
        """With --stop-when-settled: stop starting when the verdict is settled. The check runs
        outside the lock (a bootstrap may take a moment; the other workers go on meanwhile), one
        at a time; a completion during a check asks for one more check after it."""
        spec = self.plan.settle
        if self.settler is None or spec is None or not spec.stop:
            return
        while True:
            with self.lock:
                if self.stop_starting or self.cancel.is_set() or self.next_index >= len(self.todo):
                    return
                if self.checking:
                    self.recheck = True
                    return
                self.checking, self.recheck = True, False
                state = self.settler.snapshot()
            try:
                verdict = self.settler.decide(state)
            finally:
                with self.lock:
                    self.checking = False
            with self.lock:
                if verdict is not None:
                    if not self.stop_starting:
                        self.stop_starting = True
                        self.stop_reason = "settled"
                    return
                if not self.recheck:
                    return

    def _attempts(self, key: Key, arm: Arm) -> tuple[Outcome | None, float, int]:
        """Run ``key`` in a fresh workspace; while the runner says its failure is retryable, run
        it again (in a fresh workspace again) after a backoff, at most ``plan.retries`` more
        times, while the budget allows. Only the last result counts; an interrupt cuts the wait
        short (the invocation then counts as not run). Returns (outcome, ms, processes)."""
        case_id, trial, _ = key
        case = self.cases[case_id]
        needs_snapshot = case.task is not None and case.task.needs_snapshot
        delay = self.plan.retry_delay or retry_delay
        attempt = 0
        while True:
            log = BehaviourLog()  # what this attempt's runner, setup and verifiers reached
            with recording(log):
                prepared = self.workspaces.prepare(
                    case.fixture, case.setup, self.base_env, needs_snapshot, self.cancel,
                    self._sight(arm),
                )  # fmt: skip
            try:
                with recording(log):
                    outcome, elapsed_ms, retryable = self._invoke(case, key, arm, prepared)
                outcome = with_behaviour(outcome, log, self.sandbox)
                if log.wire.refused:
                    retryable = False  # another try would only spend more
            finally:
                # The runner's processes are gone and the checks are done: nothing reads W.
                problem = self.workspaces.dispose(prepared, case_id, trial, arm.name)
                if problem is not None:
                    with self.lock:
                        self.messages.append(f"{case_id} trial {trial} {arm.name}: {problem}")
            if not retryable or attempt >= self.plan.retries or outcome is None:
                return outcome, elapsed_ms, attempt + 1
            if self.cancel.wait(delay(attempt)):
                return None, elapsed_ms, attempt + 1  # interrupted while waiting: not run
            with self.lock:
                if self._budget_reached():
                    return outcome, elapsed_ms, attempt + 1  # no money for another try
                self.started += 1
                self.retried += 1
            attempt += 1

    def _invoke(
        self, case: Case, key: Key, arm: Arm, prepared: Prepared
    ) -> tuple[Outcome | None, float, bool]:
        """Run the runner in the prepared workspace and judge the case's checks there.
        None when our own interrupt stopped it; the flag: the runner called its failure
        retryable."""
        case_id, trial, _ = key
        if prepared.interrupted or self.cancel.is_set():
            return None, 0.0, False
        if prepared.failure is not None:
            return RunnerFailure(case_id, trial, arm.name, prepared.failure), 0.0, False
        env = self.env_for(case_id, trial, arm)
        env[WORKSPACE_VAR] = str(prepared.workspace)
        # The runner's temporary files go with its workspace, even when it is killed.
        env["TMPDIR"] = str(prepared.tmp)
        spec = InvocationSpec(
            argv=(),
            prompt=case.prompt,
            env=env,
            case_id=case_id,
            trial=trial,
            variant=arm.echo,
            timeout_ms=self.plan.timeout_ms,
            max_bytes=self.plan.max_bytes,
            show_stderr=runner_stderr.wanted(),
        )
        argv_for = functools.partial(self._argv, env, prepared)
        try:
            result = run_confined(self.sandbox, spec, argv_for, prepared, self.cancel, self.sweeper)
        except BindRefused as exc:
            return RunnerFailure(case_id, trial, arm.name, f"sandbox: {exc}"), 0.0, False
        outcome = result.outcome
        if arm.name != arm.echo:  # a baseline run is a with-run of another directory
            outcome = dataclasses.replace(outcome, variant=arm.name)
        if isinstance(outcome, RunnerFailure):
            if self.cancel.is_set():
                return None, result.elapsed_ms, False
            return outcome, result.elapsed_ms, result.retryable
        breach = isolation_breach(outcome, self.plan.skill_name)
        if breach is not None:
            return breach, result.elapsed_ms, False
        if case.task is not None:
            view = WorkspaceView(
                prepared.workspace,
                self.base_env,
                prepared.before,
                self.cancel,
                self.workspaces.confinement(prepared),
            )
            judged = judge_outcome(case.task, outcome, view, self.regex)
            if judged is None or self.cancel.is_set():
                return None, result.elapsed_ms, False  # a verifier was interrupted: not judged
            outcome = judged
        return outcome, result.elapsed_ms, False

    def _argv(
        self, env: dict[str, str], prepared: Prepared, channel: Channel | None = None
    ) -> tuple[str, ...]:
        """The runner's command line, in its own sandbox when the run is sandboxed."""
        return runner_argv(
            self.sandbox, self.plan.command, env, prepared, self.agent_program, channel,
            self.package,
        )  # fmt: skip

    def _sight(self, arm: Arm) -> Sight:
        """What of the skills an invocation of ``arm`` sees (runner_sandbox.py)."""
        return arm_sight(arm, self.plan.skill_dir, self.env_for("", 0, arm))

    def worker(self) -> None:
        """One job: take and run invocations until nothing more may start."""
        try:
            while (key := self.take()) is not None:
                self.run_one(key)
        except BaseException as exc:  # a record write error or a bug: stop everything
            with self.lock:
                if self.error is None:
                    self.error = exc
                self.stop_starting = True
            self.cancel.set()
