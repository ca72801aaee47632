"""What every evaluated entry of `skill-evals ci` — a skill through `test`, the routing entry
through `route` — shares: the options its settings give the pipeline, the runners'
environment without the CI's own tokens, its log group, the run with progress on stderr, and
the lines that say how it ended."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..agents import simulated
from .console import Console
from .settings import SkillSettings

Report = dict[str, Any]

# Credentials of the CI itself: a runner (an agent that reads untrusted prompts) never needs them.
CI_SECRETS = ("GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN")


def runner_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment handed to runners: the caller's minus the CI's own tokens."""
    return {k: v for k, v in env.items() if k not in CI_SECRETS}


def run_fields(
    settings: SkillSettings, record: Path, out: Path, env: Mapping[str, str]
) -> dict[str, Any]:
    """The fields of TestOptions / RouteOptions an entry takes from its settings: the runner
    and its limits, the record file, the outputs it must not collide with, and ``env`` (the
    runners' environment)."""
    return {
        "runner": settings.runner,
        "trials": settings.trials,
        "seed": settings.seed,
        "timeout_ms": settings.timeout_ms,
        "max_bytes": settings.max_bytes,
        "jobs": settings.jobs,
        "retries": settings.retries,
        "keep_going": settings.keep_going,
        "record": record,
        "outputs": (record, out / "report.json"),
        "env": env,
        "sandbox": settings.sandbox_option,
        "sandbox_config": settings.sandbox,
        "sandbox_where": settings.sandbox_option_where,
        "sandbox_config_where": settings.sandbox_where,
        "sandbox_path": settings.sandbox_paths,
        "credentials_config": settings.credentials,
        "network": settings.network,
        "network_allow": settings.network_allow,
        "fail_on_finding": settings.fail_on_finding,
        "max_invocation_tokens": settings.max_invocation_tokens,
        "max_workspace_bytes": settings.max_workspace_bytes,
    }


@contextlib.contextmanager
def entry_group(
    console: Console, title: str, intro: str, label: str, runner: str | None
) -> Iterator[None]:
    """The log group of one evaluated entry: its title, why it runs, and the simulation's
    notice when ``runner`` is the simulation."""
    console.group(title)
    try:
        console.info(intro)
        if simulated.is_simulated_command(runner):
            console.info(f"note: {label}: {simulated.NOTICE}")
        yield
    finally:
        console.endgroup()


def run_with_progress(console: Console, quiet: bool, run: Callable[[Any], Report]) -> Report | None:
    """``run(progress)`` with the progress printer on stderr (none with --quiet); None when
    Ctrl-C/SIGTERM arrived outside the runner's own handling (loading, hashing, scoring)."""
    from ..run.progress import ProgressPrinter

    printer = None if quiet else ProgressPrinter(console.err)
    try:
        return run(printer)
    except KeyboardInterrupt:
        return None
    finally:
        if printer is not None:
            printer.close()


def say_result(console: Console, label: str, report: Report) -> int:
    """Log how the entry ended and why (each message with its own severity); its exit code."""
    code = int(report.get("exitCode", 70))
    console.info(f"{label}: {report.get('status')} (exit {code})")
    # Why it did not pass belongs in the log too (an invalid cases line, too few cases,
    # runner failures), not only inside the artifact. Messages never hold prompts, outputs or
    # runner stderr (docs/report.md).
    console.report_messages(label, report, said=simulated.NOTICE)
    return code
