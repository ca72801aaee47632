"""The click options several commands take (`test`, `route`, `ci`, `improve`, `lint`, …), each
defined once — its type, range and default —, and the composing of option lists into one
decorator. A command adds its own help text (and, where it differs, a metavar or default)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from ..suite.agent_profiles import PROFILES
from .common import FloatRange

F = TypeVar("F", bound=Callable[..., Any])

OUTPUT_PATH = click.Path(dir_okay=False, path_type=Path)  # a file we write
FORMATS = ("text", "json", "markdown", "junit", "html")
TEXT_OR_JSON = click.Choice(("text", "json"))  # --format of the commands with no report files

_SPECS: dict[str, dict[str, Any]] = {
    "--skill": {"required": True, "type": click.Path(path_type=Path)},
    "--cases": {"required": True, "type": click.Path(path_type=Path)},
    "--agent": {"type": click.Choice(PROFILES), "default": None},
    "--bootstrap-samples": {"type": click.IntRange(1000, 1_000_000), "default": 10_000},
    "--max-invocations": {"type": click.IntRange(1, 10_000_000), "default": None, "metavar": "N"},
    "--max-cost-usd": {
        "type": FloatRange(0, 1_000_000, min_open=True),
        "default": None,
        "metavar": "X",
    },
    "--strict": {"is_flag": True},
    "--runner": {"default": None},
    "--observations": {"type": click.Path(path_type=Path), "default": None},
    "--trials": {"type": click.IntRange(1, 100), "default": 3},
    "--jobs": {"type": click.IntRange(1, 64), "default": 4},
    "--seed": {"type": click.IntRange(0, 2**32 - 1), "default": 42},
    "--timeout-ms": {
        "type": click.IntRange(1, 600_000),
        "default": None,
        "help": "Per invocation: kill the runner after this many milliseconds (a runner "
        "failure). Default: 30000; 300000 for a built-in agent runner (skill-evals runner "
        "claude-code, ...).",
    },
    "--max-bytes": {
        "type": click.IntRange(1, 10_000_000),
        "default": 1_000_000,
        "help": "Per invocation: kill the runner after this many bytes of stdout + stderr.",
    },
    "--retries": {"type": click.IntRange(0, 10), "default": 2},
    # what a proposer or drafter is shown of the skill, and how long one call may take
    "--body-chars": {"type": click.IntRange(0, 100_000), "default": 2000, "metavar": "N"},
    "--proposer-timeout-ms": {
        "type": click.IntRange(1, 600_000),
        "default": 120_000,
        "metavar": "N",
    },
    "--drafter-timeout-ms": {
        "type": click.IntRange(1, 600_000),
        "default": 120_000,
        "metavar": "N",
    },
    "--min-trigger-f1": {"type": FloatRange(0, 1), "default": None, "metavar": "X"},
    "--min-uplift": {"type": FloatRange(-1, 1), "default": None, "metavar": "X"},
    "--format": {"type": click.Choice(FORMATS), "default": "text"},
    "--record": {
        "type": OUTPUT_PATH,
        "default": None,
        "metavar": "FILE",
        "help": "Write every observation to FILE as it completes, for --resume. Default: none.",
    },
    "--resume": {
        "type": click.Path(path_type=Path),
        "default": None,
        "help": "Reuse the observations recorded in FILE; run only the missing ones. "
        "Default: none.",
    },
    "--keep-going": {
        "is_flag": True,
        "help": "Keep starting invocations after a runner failure (default: stop at the first).",
    },
    "--require-verified-isolation": {"is_flag": True},
    "--quiet": {"is_flag": True},
    "--cache": {
        "type": click.Path(file_okay=False, path_type=Path),
        "default": None,
        "metavar": "DIR",
    },
    "--cache-max-age": {"metavar": "AGE"},
    "--judge": {
        "default": None,
        "metavar": "CMD",
        "help": "The judge of the judge checks, run once per request; split like a shell, run "
        "without one (docs/judging.md). Built in: 'skill-evals judge anthropic|openai --model "
        "M'. Named default; a check picks another by its judge field (--judges). Default: "
        "none.",
    },
    "--judges": {
        "multiple": True,
        "metavar": "NAME=CMD",
        "help": 'A named judge a check may pick by its judge field ("judge": "NAME"); CMD is '
        "split like --judge. A case file only names judges, never commands. Repeatable. "
        "Default: none (docs/judging.md).",
    },
    "--judge-timeout-ms": {
        "type": click.IntRange(1, 600_000),
        "default": 120_000,
        "help": "Per judge request: kill the judge after this many milliseconds (a runner "
        "failure of the judged observation).",
    },
    "--judge-fallback": {
        "type": click.Choice(["absolute", "tie"]),
        "default": "absolute",
        "help": "A pairwise pair whose two asks disagree: grade both answers alone by the same "
        "rubric (two more judge calls) and prefer the higher grade past "
        "--judge-fallback-margin ('absolute'), or call it a tie ('tie').",
    },
    "--judge-fallback-margin": {
        "type": click.FloatRange(0.0, 1.0),
        "default": 0.05,
        "metavar": "X",
        "help": "The share of the grading scale two fallback grades must differ by for a "
        "winner; closer is a tie.",
    },
    "--max-judge-calls": {
        "type": click.IntRange(1, 10_000_000),
        "default": None,
        "metavar": "N",
        "help": "Start no judge process after N (retries included); --max-invocations never "
        "counts them, --max-cost-usd counts both. Default: no limit.",
    },
    "--sandbox": {
        "default": None,
        "metavar": "auto|required|off",
        "help": "Run the runner, setup commands and command checks in a bubblewrap sandbox: "
        "auto (when usable, else a warning), required (exit 7 when unusable), off. "
        "Default: SKILL_EVALS_SANDBOX, else auto (docs/sandbox.md).",
    },
    "--credential": {
        "multiple": True,
        "metavar": "ENV,STYLE,UPSTREAM",
        "help": "For a custom runner: serve the key in ENV through a loopback proxy that sets it "
        "on requests to UPSTREAM (an http(s) URL) in STYLE (x-api-key, bearer, x-goog-api-key, "
        "key-query); the runner gets a placeholder and SKILL_EVALS_PROXY_<ENV>. Repeatable. "
        "Default: none (docs/sandbox.md).",
    },
    "--network": {
        "default": None,
        "metavar": "model|allow|host",
        "help": "What a sandbox may reach: model (only the model, through the credential "
        "proxy), allow (also the --network-allow hosts), host (the machine's own network, "
        "uncontained). Default: model (docs/sandbox.md).",
    },
    "--network-allow": {
        "multiple": True,
        "metavar": "HOST[:PORT]",
        "help": "With --network allow: a host the sandbox may reach, e.g. registry.npmjs.org "
        "(no port: 443 and 80). Repeatable. Default: none.",
    },
    "--fail-on-finding": {
        "is_flag": True,
        "default": False,
        "help": "Fail the gate (exit 1) on a behaviour finding: a with run reached a network "
        "destination no without run did, or a run tried a refused one. Default: findings are "
        "warnings (docs/sandbox.md).",
    },
    "--max-invocation-tokens": {
        "type": click.IntRange(min=1),
        "default": None,
        "metavar": "N",
        "help": "Once one invocation's model responses report more than N tokens (input and "
        "output, read at the wire), its next model request gets 429 and the invocation ends as a "
        "budget stop. Needs the contained network. Default: no limit (docs/sandbox.md).",
    },
    "--max-workspace-bytes": {
        "type": click.IntRange(min=1),
        "default": None,
        "metavar": "BYTES",
        "help": "Kill a sandboxed invocation whose workspace, TMPDIR and HOME grow past BYTES "
        "(checked every second). Default: 2147483648 (2 GiB).",
    },
    "--sandbox-path": {
        "multiple": True,
        "metavar": "PATH[:rw]",
        "help": "Also let the sandbox read PATH (a toolchain, a verifier); PATH:rw lets it "
        "write there too. Repeatable. Default: none.",
    },
}


def option(name: str, *decls: str, **given: Any) -> Callable[[F], F]:
    """The click option ``name`` as every command defines it, with this command's ``given``
    settings (its help; a metavar or default where it differs). ``decls``: more names, or the
    keyword argument's name."""
    return click.option(name, *decls, **{**_SPECS[name], **given})


def compose(decorators: Sequence[Callable[[Any], Any]]) -> Callable[[F], F]:
    """One decorator adding ``decorators`` in the order given (the order of --help)."""

    def apply(func: F) -> F:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


def file_option(*decls: str, help_text: str) -> Callable[[F], F]:
    """An optional ``FILE`` option: a path that is not a directory, none by default."""
    return click.option(
        *decls,
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        metavar="FILE",
        help=help_text,
    )


def dir_option(*decls: str, help_text: str) -> Callable[[F], F]:
    """An optional ``DIR`` option: a path that is not a file, none by default."""
    return click.option(
        *decls,
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        metavar="DIR",
        help=help_text,
    )


def report_file_option(name: str, what: str) -> Callable[[F], F]:
    """``--report FILE``, ``--junit FILE``, …: also write ``what`` to FILE."""
    return click.option(
        name,
        type=OUTPUT_PATH,
        default=None,
        metavar="FILE",
        help=f"Also write {what} to FILE. Default: none.",
    )


def _show_runner_stderr(_ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        from ..run import runner_stderr

        runner_stderr.show()


show_runner_stderr_option = click.option(
    "--show-runner-stderr",
    is_flag=True,
    expose_value=False,
    callback=_show_runner_stderr,
    help="Print the last 2,000 characters of the first failing runner invocation's stderr "
    "to this terminal (escaped), with its case id; never into a report or file.",
)


# The sandbox, network and limit options of the commands that run a suite (test, route), in
# their --help order.
sandbox_run_options: list[Callable[[Any], Any]] = [
    option("--sandbox"),
    option("--sandbox-path", "sandbox_path"),
    show_runner_stderr_option,
    option("--network"),
    option("--network-allow", "network_allow"),
    option("--fail-on-finding", "fail_on_finding"),
    option("--max-invocation-tokens", "max_invocation_tokens"),
    option("--max-workspace-bytes", "max_workspace_bytes"),
    option("--credential", "credential"),
]
