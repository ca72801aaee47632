"""Running a plan: --jobs workers, fail-fast/--keep-going, --record/--resume, budgets, stop when
settled, progress, SIGINT/SIGTERM (docs/runner-contract.md, docs/comparison.md).

Owner: execution.

``jobs`` worker threads (scheduler.py) take the next missing (case, trial, arm) of the plan from
a shared queue under one lock — no polling — and each runs its invocation to the end. The main
thread only waits; it is where Python delivers SIGINT/SIGTERM, whose handler sets the cancel
event that every running invocation watches.

Invocations start trial-major — trial 1 of every case and arm, then trial 2, … — always, not only
when the run may stop early: a run cut short by a budget, a settled verdict or an interrupt then
holds whole early trials of every case (the fairest partial figures) instead of a few cases in
full, and the order does not depend on the options.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from ..agents.opencode_keys import provider_credentials
from ..agents.registry import builtin_agent
from ..errors import EvalError
from ..escaping.terminal import terminal_safe
from ..plan.arms import Arm, run_order
from ..plan.ledger import Ledger
from ..plan.run_control import Stopped, retry_delay, signals_cancel
from ..plan.settle import Settler, Verdict
from ..sandbox.bwrap import Sandbox, sizes_tmpfs
from ..sandbox.credential_proxy import CredentialProxy, builtin_credentials
from ..sandbox.egress import INSIDE_PORT, EgressProxy
from ..sandbox.probe import SandboxChoice, SandboxState
from ..sandbox.usage import Meter
from ..score.task_results import task_passed
from .execution_plan import ExecutionPlan, ExecutionResult, SettleSpec
from .helper_commands import probe_environment
from .judge_pairs import Pairs, judge_pairs
from .observations import Key, Observation, RunnerFailure, isolation_breach
from .processes import ProcessSweeper
from .progress_types import Progress, StartListener
from .record_writer import RecordWriter
from .regex import RegexPool
from .scheduler import Scheduler
from .workspace import WorkspaceRoot

__all__ = [
    "ExecutionPlan",
    "ExecutionResult",
    "Progress",
    "SettleSpec",
    "StartListener",
    "execute",
    "retry_delay",
]


def execute(
    plan: ExecutionPlan, progress: Callable[[Progress], None] | None = None
) -> ExecutionResult:
    """Run every missing invocation of ``plan`` up to ``plan.jobs`` at a time.

    A ``without`` observation that lists the tested skill becomes a RunnerFailure
    ("isolation breach"). After the first failure no new invocation starts unless keep_going.
    SIGINT/SIGTERM: stop starting, kill running groups, return with interrupted=True. A budget
    that is reached, or (with ``plan.settle.stop``) a settled verdict, stops starting too.

    Only valid observations are appended to ``plan.record`` (resumed ones are not written again).
    Progress counts over the whole plan: resumed and cached observations count as done."""
    started = time.monotonic()
    keys = plan.keys()
    arms = plan.arm_table()
    resumed, cached = _known(plan, keys, arms)
    # A resumed (or cached) `without` observation listing the skill (a hand-edited file)
    # breaches isolation exactly as in --observations: a failure, not re-run.
    known = {**resumed, **cached}
    breaches = {
        k: b for k, o in known.items() if (b := isolation_breach(o, plan.skill_name)) is not None
    }
    todo = run_order([k for k in keys if k not in known], plan.trials)
    ledger = Ledger(arms)
    for key in known:
        ledger.reused(key[2], cached=key in cached)
    if plan.judging is not None:  # --max-cost-usd counts the runners' cost and the judges'
        plan.judging.runner_spent = lambda: ledger.spent_usd
    sched = _run_workers(plan, progress, arms, keys, todo, known, cached, breaches, ledger)
    if sched.error is not None:
        if isinstance(sched.error, EvalError):
            raise sched.error
        raise RuntimeError("an invocation worker failed") from sched.error
    return _result(sched, keys, known, breaches, started)


def _known(
    plan: ExecutionPlan, keys: Sequence[Key], arms: Mapping[str, Arm]
) -> tuple[dict[Key, Observation], dict[Key, Observation]]:
    """The planned observations that need no run: resumed ones, and the cache's hits for the
    rest."""
    wanted = set(keys)
    resumed = {o.key: o for o in plan.resumed if o.key in wanted}
    cases = plan.suite.by_id()
    cached: dict[Key, Observation] = {}
    if plan.cache is not None:
        for key in keys:
            if key not in resumed:
                hit = plan.cache.lookup(cases[key[0]], key[1], arms[key[2]])
                if hit is not None:
                    cached[key] = hit
    return resumed, cached


def _run_workers(
    plan: ExecutionPlan,
    progress: Callable[[Progress], None] | None,
    arms: Mapping[str, Arm],
    keys: Sequence[Key],
    todo: list[Key],
    known: Mapping[Key, Observation],
    cached: Mapping[Key, Observation],
    breaches: Mapping[Key, RunnerFailure],
    ledger: Ledger,
) -> Scheduler:
    """Run ``todo`` on ``plan.jobs`` worker threads until done, stopped or interrupted; the
    scheduler holds what they did."""
    state = _sandbox_state(plan) if todo else None
    sandbox, state, host_warning = _run_sandbox(plan, state)
    writer = RecordWriter(plan.record) if plan.record is not None else None
    with ExitStack() as stack:
        if writer is not None:
            stack.callback(writer.close)
        # Entered first, left last: the engine's own helpers (regex checks, workspaces) are
        # closed before the leftovers of the runners are swept.
        sweeper = stack.enter_context(ProcessSweeper().running())
        workspaces = stack.enter_context(WorkspaceRoot(plan.keep_workspaces, sandbox=sandbox))
        regex = stack.enter_context(RegexPool())
        settler = _settler(plan, keys, regex)
        if settler is not None:
            for key, obs in known.items():
                settler.observe(key, breaches.get(key) or obs)
        sched = Scheduler(
            plan, arms, todo, len(known), len(keys), writer, progress, workspaces, regex
        )
        sched.sweeper = sweeper
        if plan.judging is not None:  # its judges die with the run's interrupt, as runners do
            plan.judging.cancel, plan.judging.sweeper = sched.cancel, sweeper
        sched.sandbox = sandbox
        if todo:
            state = _start_credential_proxy(stack, plan, sched, state)
        if sandbox is not None:
            sched.proxy_env.update(sandbox.network_env())
        sched.sandbox_state = state
        if state is not None and state.warning is not None:
            sched.messages.append(state.warning)
        if host_warning is not None:
            sched.messages.append(host_warning)
        for warning in workspaces.warnings:  # a stale root that could not be removed
            print(f"skill-evals: warning: {terminal_safe(warning)}", file=sys.stderr)
            sched.messages.append(warning)
        sched.ledger = ledger
        sched.settler = settler
        for key, obs in cached.items():
            if writer is not None and key not in breaches:
                writer.write(obs)  # a record holds the whole run, cached observations too
        with signals_cancel(sched.cancel):
            sched.check_settled()  # what was resumed or cached may settle it already
            _work(sched, max(1, min(plan.jobs, len(todo))))
            if sched.held:
                _finish_pairs(sched, plan, known)
    return sched


def _run_sandbox(
    plan: ExecutionPlan, state: SandboxState | None
) -> tuple[Sandbox | None, SandboxState | None, str | None]:
    """The run's sandbox (with its egress proxy unless the network is the host's), the state
    it reports, and the warning a host network gives; no sandbox when none is usable."""
    if state is None or state.program is None:
        return None, state, None
    choice = plan.sandbox if plan.sandbox is not None else SandboxChoice()
    contained = choice.network.mode != "host"
    meter = Meter(choice.max_invocation_tokens) if contained else None
    egress = EgressProxy(choice.network, meter=meter) if contained else None
    sandbox = Sandbox(
        state.program,
        choice.paths,
        egress=egress,
        limits=choice.limits,
        sized_root=sizes_tmpfs(state.version),
    )
    state = dataclasses.replace(state, network=choice.network.mode)
    return sandbox, state, choice.network_warning()


def _start_credential_proxy(
    stack: ExitStack, plan: ExecutionPlan, sched: Scheduler, state: SandboxState | None
) -> SandboxState | None:
    """Start the run's credential proxy when a key is to be proxied (closed with ``stack``,
    after the last invocation): the runners' environment names it, a contained network routes
    to it; the returned state lists the proxied keys."""
    sandbox = sched.sandbox
    egress = sandbox.egress if sandbox is not None else None
    proxy = _credential_proxy(plan, sched.base_env, egress.meter if egress else None)
    if proxy is None:
        return state
    stack.enter_context(proxy)
    inside = f"http://127.0.0.1:{INSIDE_PORT}" if egress is not None else None
    sched.proxy_env = proxy.child_environment(inside)
    if egress is not None:
        egress.routes.update(proxy.routes())
    return dataclasses.replace(state, proxied=tuple(proxy.names)) if state is not None else None


def _work(sched: Scheduler, count: int) -> None:
    """Run ``count`` worker threads until the scheduler has nothing left."""
    threads = [
        threading.Thread(target=sched.worker, name=f"skill-evals-job-{i}", daemon=True)
        for i in range(count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()  # interruptible: the signal handler runs meanwhile


def _finish_pairs(sched: Scheduler, plan: ExecutionPlan, known: Mapping[Key, Observation]) -> None:
    """Judge the pairs whose with observation this run made (unless interrupted), then record
    and cache those observations with their verdicts; a judge failure is the with one's."""
    judging = plan.judging
    assert judging is not None
    made = {(key[0], key[1]) for key in sched.held}
    wanted = [pair for pair in judging.draws if (pair[0], pair[1]) in made]
    pairs: Pairs = {}
    if not sched.cancel.is_set():
        found = {**known, **sched.observations}
        pairs = judge_pairs(judging, plan.suite, found, wanted, judging.draws, plan.jobs)
    cases = plan.suite.by_id()
    arms = plan.arm_table()
    for key, held in sched.held.items():
        obs, failure = pairs.get((key[0], key[1]), (held, None))
        if sched.writer is not None and obs is not held:
            sched.writer.write(obs)  # again, now with its verdicts (records.py: completes)
        if plan.cache is not None:
            plan.cache.store(cases[key[0]], key[1], arms[key[2]], obs)
        sched.observations[key] = obs
        if failure is not None:
            del sched.observations[key]
            sched.failures[key] = RunnerFailure(key[0], key[1], key[2], failure)


def _credential_proxy(
    plan: ExecutionPlan, base: Mapping[str, str], meter: Meter | None
) -> CredentialProxy | None:
    """The proxy of this run's credentials: a built-in agent runner's provider keys, or a
    custom runner's --credential variables; None when there is none to serve."""
    command = shlex.join(plan.command)
    agent = builtin_agent(command)
    credentials = [*plan.credentials]
    if agent is not None:
        own = builtin_credentials(agent, base)
        if agent == "opencode":  # its --provider-config keys, each to its provider's endpoint
            taken = {c.env: c.upstream for c in own}
            credentials += provider_credentials(command, base, taken)
        credentials += own
    return CredentialProxy(credentials, meter) if credentials else None


def _sandbox_state(plan: ExecutionPlan) -> SandboxState:
    """The run's sandbox decision (probed once per engine run): SandboxUnusable (exit 7)
    before anything starts when it is required and unusable."""
    choice = plan.sandbox if plan.sandbox is not None else SandboxChoice()
    base = os.environ if plan.base_env is None else plan.base_env
    return choice.state(base, probe_environment(base))


def _result(
    sched: Scheduler,
    keys: Sequence[Key],
    known: Mapping[Key, Observation],
    breaches: Mapping[Key, RunnerFailure],
    started: float,
) -> ExecutionResult:
    """What the run gives back: observations and failures in plan order, the counts, and why
    it stopped early (with the settled verdict) when it did."""
    interrupted = sched.cancel.is_set()
    found = {**known, **sched.observations}
    observations = [found[k] for k in keys if k in found and k not in breaches]
    failures = [
        sched.failures.get(k) or breaches[k] for k in keys if k in sched.failures or k in breaches
    ]
    not_started = [k for k in sched.todo[sched.next_index :]]
    stopped: Stopped | None = None
    settled: Verdict | None = None
    if not interrupted and sched.stop_reason is not None and not_started:
        for key in not_started:
            sched.ledger.stopped(key[2])
        done = len(observations) + len(failures)
        stopped = Stopped(sched.stop_reason, done, len(keys), sched.started)
        if sched.settler is not None:
            # Exact (never skipped): the stop was taken on a check of fewer observations, so
            # this one is settled too, with the same verdict; after a budget it may not be.
            settled = sched.settler.decide(sched.settler.snapshot(), force=True)
    return ExecutionResult(
        observations=observations,
        failures=failures,
        invocations=sched.started,
        retried=sched.retried,
        wall_ms=(time.monotonic() - started) * 1000.0,
        interrupted=interrupted,
        not_run=len(keys) - len(observations) - len(failures),
        messages=sched.messages,
        planned=len(keys),
        ledger=sched.ledger.to_json(),
        stopped=stopped,
        settled=settled,
        sandbox=_sandbox_block(sched),
    )


def _sandbox_block(sched: Scheduler) -> dict[str, Any] | None:
    """The report's sandbox block, with how many ``.git`` directories the run masked."""
    state = sched.sandbox_state
    if state is None:
        return None
    if sched.sandbox is not None:
        state = dataclasses.replace(state, masked=sched.sandbox.masks.count)
    return state.to_json()


def _settler(plan: ExecutionPlan, keys: Sequence[Key], regex: RegexPool) -> Settler | None:
    spec = plan.settle
    if spec is None or not spec.gates.any:
        return None

    def passed(case: object, obs: Observation) -> bool:
        task = getattr(case, "task", None)
        return task is not None and task_passed(task, obs, regex)

    return Settler(plan.suite, keys, plan.skill_name, spec.gates, spec.samples, spec.seed, passed)
