"""The options the CI gate's click commands share, and their conversion: the selection
options of `ci` and `ci plan`, ``--base`` / ``--lock`` / ``--all`` into a BaseChoice, the
whole into CiOptions; and the output lines of every command (through the terminal escaper).

Heavy modules are imported inside the functions so that `skill-evals --help` stays fast.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..cli.common import fail
from ..cli.options import compose, file_option, option
from ..escaping.terminal import terminal_safe

DEFAULT_OUT = "skill-evals-report"

F = TypeVar("F", bound=Callable[..., Any])


def say(text: str, err: bool = False) -> None:
    """One line for a person: paths and names in it come from the repository."""
    click.echo(terminal_safe(text), err=err)


def config_option(help_text: str) -> Callable[[F], F]:
    """``--config FILE`` (keyword argument ``config``)."""
    return file_option("--config", "config", help_text=help_text)


def base_option(help_text: str) -> Callable[[F], F]:
    """``--base REF`` (keyword argument ``base``)."""
    return click.option("--base", default=None, metavar="REF", help=help_text)


def lock_option(help_text: str) -> Callable[[F], F]:
    """``--lock FILE`` (keyword argument ``lock_file``)."""
    return file_option("--lock", "lock_file", help_text=help_text)


TRUST_HELP = (
    "On a pull request, take the policy keys (runner, judges, sandbox, credentials, cache, "
    "gates, budgets …) from the pull request's own config instead of the base commit's. Safe "
    "only where every pull request author may already run code with the job's secrets. "
    "Default: off (docs/ci.md)."
)


def trust_option() -> Callable[[F], F]:
    """``--trust-pr-config`` (keyword argument ``trust_pr_config``)."""
    return click.option("--trust-pr-config", is_flag=True, help=TRUST_HELP)


_SELECTION = [
    config_option(
        "The config file (docs/config.md). Default: .skill-evals.yml at the root, when present."
    ),
    base_option(
        "Compare fingerprints with this git commit. Default: the PR's base on pull "
        "requests, else the lock file when present, else every skill."
    ),
    lock_option(
        "Compare with the fingerprints in this lock file. Default: "
        ".skill-evals.lock.json when present (after a PR's base)."
    ),
    click.option("--all", "all_", is_flag=True, help="Evaluate every skill, changed or not."),
    trust_option(),
    click.option(
        "--only",
        multiple=True,
        metavar="NAME",
        help="Evaluate only this skill (name or path; repeatable), changed or not.",
    ),
    # Every option below defaults to the config's value (None: not given).
    option(
        "--runner",
        metavar="CMD",
        help="The runner command for every skill. Default: the config's runner.",
    ),
    option(
        "--trials",
        default=None,
        help="Runs per case and variant, for every skill. Default: the config's (3).",
    ),
    option("--jobs", default=None, help="Runner processes at once. Default: the config's (4)."),
    option(
        "--min-trigger-f1",
        help="Gate on trigger F1 for every skill. Default: the config's gates.",
    ),
    option(
        "--min-uplift",
        help="Gate on the uplift interval's lower bound for every skill. Default: the "
        "config's gates.",
    ),
    option(
        "--require-verified-isolation",
        "require_verified_isolation",
        default=None,
        help="Exit 7 when a without run's command named the skill's files and its result "
        "could not be matched to its text. Default: the config's (off).",
    ),
    click.option(
        "--improve",
        type=click.Choice(["off", "suggest"]),
        default=None,
        help="suggest: a validated description for each skill whose trigger gate failed "
        "(docs/improve.md; needs a proposer). Default: the config's improve (off).",
    ),
    click.option(
        "--proposer",
        metavar="CMD",
        default=None,
        help="The proposer command of --improve suggest. Default: the config's proposer.",
    ),
    click.option(
        "--compare",
        type=click.Choice(["base", "none"]),
        default=None,
        help="base: run each changed skill against its version at the base commit as a "
        "baseline arm (docs/ci.md). Default: the config's compare (none).",
    ),
    option(
        "--sandbox",
        help="Run runners, setup commands and command checks in a bubblewrap sandbox: auto, "
        "required (exit 7 when unusable) or off. Default: SKILL_EVALS_SANDBOX, else the "
        "config's sandbox (on a pull request: the base commit's), else auto (docs/sandbox.md).",
    ),
    option(
        "--sandbox-path",
        "sandbox_path",
        help="Also let the sandbox read PATH (PATH:rw: write too); repeatable, added to the "
        "config's sandbox-paths. Default: none.",
    ),
    option(
        "--network",
        help="What a sandbox may reach: model (only the model, through the credential proxy), "
        "allow (also the --network-allow hosts), host (the machine's own network). Default: the "
        "config's network (on a pull request: the base commit's), else model (docs/sandbox.md).",
    ),
    option(
        "--network-allow",
        "network_allow",
        help="With --network allow: a host the sandbox may reach (HOST or HOST:PORT; no port: "
        "443 and 80); repeatable, added to the config's network-allow. Default: none.",
    ),
    option(
        "--fail-on-finding",
        "fail_on_finding",
        help="Fail a skill's gate (exit 1) on a behaviour finding: a with run reached a network "
        "destination no without run did, or a run tried a refused one. Default: the config's "
        "fail-on-finding, else findings are warnings.",
    ),
    option(
        "--cache",
        help="Reuse valid observations stored in DIR and store new ones (docs/cost.md). "
        "Default: the config's cache (none).",
    ),
    option(
        "--cache-max-age",
        default=None,
        help="Do not reuse cache entries older than AGE: 30m, 12h, 7d; 0 = never reuse. "
        "Default: the config's, else 7d.",
    ),
]

selection_options = compose(_SELECTION)
"""Options shared by `ci` and `ci plan`: where the config is and how changes are found."""


def cli_values(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The selection options as config-style keys (None: not given), for CiConfig.with_cli."""
    return {
        "runner": kwargs.get("runner"),
        "trials": kwargs.get("trials"),
        "jobs": kwargs.get("jobs"),
        "gates": {
            "min-trigger-f1": kwargs.get("min_trigger_f1"),
            "min-uplift": kwargs.get("min_uplift"),
        },
        "compare": kwargs.get("compare"),
        "improve": kwargs.get("improve"),
        "proposer": kwargs.get("proposer"),
        "require-verified-isolation": kwargs.get("require_verified_isolation") or None,
        "cache": str(kwargs["cache"]) if kwargs.get("cache") is not None else None,
        "cache-max-age": kwargs.get("cache_max_age"),
        "sandbox-option": kwargs.get("sandbox"),
        "sandbox-paths": list(kwargs.get("sandbox_path") or ()),
        "network": kwargs.get("network"),
        "network-allow": list(kwargs.get("network_allow") or ()),
        "fail-on-finding": kwargs.get("fail_on_finding") or None,
    }


def base_choice(base: str | None, lock_file: Path | None, all_: bool) -> Any:
    """The BaseChoice of ``--base``, ``--lock`` and ``--all`` (at most one of them)."""
    from .changes import BaseChoice

    if sum((base is not None, lock_file is not None, all_)) > 1:
        fail("give at most one of --base, --lock and --all")
    return BaseChoice(base=base, lock=lock_file, all=all_)


def ci_options(
    kwargs: dict[str, Any],
    out: Path,
    comment: bool = False,
    fail_on_missing_secrets: bool | None = False,
    quiet: bool = False,
) -> Any:
    """The CiOptions of a `ci` or `ci plan` invocation (exit 5 on a malformed option)."""
    from .pr_event import from_fork
    from .selection import CiOptions

    if fail_on_missing_secrets is None:
        # Only a fork's pull request runs without the job's secrets by design: skip there,
        # fail everywhere else (a secret that should be there and is not).
        fail_on_missing_secrets = not from_fork(os.environ)
    if kwargs.get("runner") is not None and not kwargs["runner"].strip():
        fail("--runner: give a command, e.g. 'skill-evals runner simulated'")
    if kwargs.get("cache_max_age") is not None:
        from ..cache.settings import parse_max_age
        from ..errors import InvalidInput

        try:
            parse_max_age(kwargs["cache_max_age"])
        except InvalidInput as exc:
            fail(str(exc))
    return CiOptions(
        root=Path.cwd(),
        out=out,
        config=kwargs.get("config"),
        choice=base_choice(kwargs.get("base"), kwargs.get("lock_file"), bool(kwargs.get("all_"))),
        only=tuple(kwargs.get("only") or ()),
        comment=comment,
        fail_on_missing_secrets=fail_on_missing_secrets,
        cli=cli_values(kwargs),
        quiet=quiet,
        trust_pr_config=bool(kwargs.get("trust_pr_config")),
    )
