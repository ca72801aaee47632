"""One invocation in its sandbox: the runner started with its network channel and under the bound
on its workspace; afterwards what its sandbox recorded (network attempts, wire tokens, a
token-budget stop) and the verdicts of the case's checks."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

from ..checks import NOT_CALLED, WorkspaceView, judge_task
from ..checks.judge_files import capture
from ..checks.judge_model import Judge, JudgePairwise
from ..checks.model import Task
from ..sandbox.behaviour import BehaviourLog
from ..sandbox.bwrap import Sandbox
from ..sandbox.egress import Channel
from ..sandbox.limits import workspace_watch
from .observations import Observation, RunnerFailure
from .processes import ProcessSweeper
from .regex import RegexPool
from .runner import InvocationResult, InvocationSpec, run_invocation
from .workspace import Prepared

Outcome = Observation | RunnerFailure


def workspace_bound(sandbox: Sandbox | None, prepared: Prepared) -> Callable[[], str | None] | None:
    """A sandboxed invocation's bound on its workspace, TMPDIR and HOME (None unsandboxed)."""
    if sandbox is None:
        return None
    roots = [prepared.workspace, prepared.tmp, prepared.home]
    return workspace_watch(roots, sandbox.limits.workspace_bytes)


def with_behaviour(
    outcome: Outcome | None, log: BehaviourLog, sandbox: Sandbox | None
) -> Outcome | None:
    """The outcome with what its sandbox recorded: the network attempts, the wire tokens;
    a budget stop when the invocation's model requests were refused for its token budget."""
    if outcome is None:
        return outcome
    if log.wire.refused:  # whatever the runner made of the 429
        meter = sandbox.egress.meter if sandbox is not None and sandbox.egress else None
        most = meter.max_tokens if meter is not None else None
        return RunnerFailure(
            outcome.case_id,
            outcome.trial,
            outcome.variant,
            f"budget: the model's responses passed --max-invocation-tokens {most} "
            f"({log.wire.total} tokens at the wire); its next request was refused",
        )
    wire = (log.wire.input, log.wire.output) if log.wire.responses else None
    if isinstance(outcome, RunnerFailure) or not (log.records or log.dropped or wire):
        return outcome
    return dataclasses.replace(
        outcome, network=tuple(log.records), network_dropped=log.dropped, wire_tokens=wire
    )


def run_confined(
    sandbox: Sandbox | None,
    spec: InvocationSpec,
    argv_for: Callable[[Channel | None], tuple[str, ...]],
    prepared: Prepared,
    cancel: threading.Event,
    sweeper: ProcessSweeper,
) -> InvocationResult:
    """Run the runner once: its command line from ``argv_for`` (given its channel out, None
    on the host's network or unsandboxed), the channel closed once its processes are gone."""
    channel = sandbox.channel("runner") if sandbox is not None else None
    try:
        argv = argv_for(channel)
        watch = workspace_bound(sandbox, prepared)
        return run_invocation(dataclasses.replace(spec, argv=argv, watch=watch), cancel, sweeper)
    finally:
        if channel is not None:
            channel.close()  # the runner's processes are gone: its records are complete


def judge_outcome(
    task: Task, outcome: Observation, view: WorkspaceView, regex: RegexPool
) -> Observation | None:
    """``outcome`` with the verdicts of the task's checks (and the files its judge checks are
    shown); None when a verifier was interrupted."""
    if task.judge_files:
        globs = [c.file_globs for c in task.checks if isinstance(c, (Judge, JudgePairwise))]
        files = capture(view.root, globs)
        outcome = dataclasses.replace(outcome, judge_files=tuple(files))
    outcomes = judge_task(task, outcome, regex, view)
    if view.cancel is not None and view.cancel.is_set():
        return None
    return dataclasses.replace(
        outcome,
        checks=tuple(None if o is NOT_CALLED else o.passed for o in outcomes),
        reasons=tuple(o.reason for o in outcomes),
    )
