"""Click commands of the CI gate: `ci` (with `plan`, `merge`, `comment`). `lock` and
`changed` are in ci/commands_lock.py, the shared options in ci/command_options.py.

Heavy modules are imported inside the commands so that `skill-evals --help` stays fast.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from ..cli.common import fail
from ..cli.helptext import CONTEXT, epilog
from ..run.interrupts import sigterm_interrupts
from .command_options import DEFAULT_OUT, ci_options, say, selection_options


@click.group(
    invoke_without_command=True,
    context_settings=CONTEXT,
    short_help="Gate a repository: evaluate every changed skill, write reports, exit 0/1/5/6/7.",
    epilog=epilog(
        "skill-evals ci --base origin/main --runner 'skill-evals runner claude-code'\n"
        "skill-evals ci --config examples/.skill-evals.yml --all",
        "docs/ci.md",
        "docs/config.md",
        "docs/github-actions.md",
    ),
)
@selection_options
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(DEFAULT_OUT),
    show_default=True,
    help="Where report.json, junit.xml, summary.md, comment.md, report.html and "
    "observations/ are written (outside every skill).",
)
@click.option(
    "--comment",
    is_flag=True,
    help="Create or update the sticky PR comment (needs GITHUB_TOKEN on a pull request). "
    "Off by default.",
)
@click.option(
    "--fail-on-missing-secrets/--skip-on-missing-secrets",
    default=None,
    help="When a require-env variable is empty: exit 7 naming it, or skip the skill (exit 0). "
    "Default: skip on a pull request from a fork (it gets no secrets), else exit 7.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@click.pass_context
def ci(
    ctx: click.Context,
    /,
    out: Path,
    comment: bool,
    fail_on_missing_secrets: bool | None,
    quiet: bool,
    **kwargs: Any,
) -> None:
    """Gate a repository: find its skills, work out which changed by content fingerprint, and
    evaluate those with `skill-evals test`.

    Writes report.json, junit.xml, summary.md, comment.md, report.html and observations/ to
    --out; exits with the most severe code over the evaluated skills (5 > 6 > 7 > 1 > 0)."""
    if ctx.invoked_subcommand is not None:
        return
    from .gate import run_ci

    options = ci_options(kwargs, out, comment, fail_on_missing_secrets, quiet)
    _exit_with(lambda: run_ci(options, dict(os.environ)))


@ci.command(
    "plan",
    context_settings=CONTEXT,
    short_help="Print the GitHub Actions matrix of the skills to evaluate (sharded runs).",
    epilog=epilog(
        "skill-evals ci plan --base origin/main", "docs/ci.md#scale-out-ci-plan-and-ci-merge"
    ),
)
@selection_options
@click.option(
    "--estimate",
    is_flag=True,
    help="Instead of the matrix, print per skill the planned invocations, how many the cache "
    "holds, how many would run, and the expected tokens and cost from the cached "
    "observations' meta (docs/cost.md). Nothing runs.",
)
def ci_plan(estimate: bool, **kwargs: Any) -> None:
    """Print the GitHub matrix of skills to evaluate: {"include":[{"skill","path"}]}.

    Also writes `matrix` and `count` to $GITHUB_OUTPUT when set. With --estimate, print what
    the run would cost instead."""
    from ..errors import EvalError
    from . import workflow
    from .plan import plan

    options = ci_options(kwargs, Path(DEFAULT_OUT))
    if estimate:
        from .estimate import render_estimate
        from .plan import estimate as estimate_run

        try:
            estimates = estimate_run(options, dict(os.environ))
        except EvalError as exc:
            fail(str(exc), exc.exit_code)
        click.echo(render_estimate(estimates), nl=False)
        return
    try:
        matrix = plan(options, dict(os.environ))
    except EvalError as exc:
        fail(str(exc), exc.exit_code)
    # ASCII JSON: every non-ASCII character of a name is a \u escape, so the line can neither
    # break nor carry terminal controls, and fromJSON() reads it back unchanged.
    text = json.dumps(matrix, separators=(",", ":"), ensure_ascii=True)
    workflow.write_outputs(os.environ, {"matrix": text, "count": str(len(matrix["include"]))})
    click.echo(text)


@ci.command(
    "merge",
    context_settings=CONTEXT,
    short_help="Combine the shards' output directories into one report and exit code.",
    epilog=epilog(
        "skill-evals ci merge shards/* --comment", "docs/ci.md#scale-out-ci-plan-and-ci-merge"
    ),
)
@click.argument("dirs", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(DEFAULT_OUT),
    help="Where the merged outputs are written (not one of the shard directories).",
)
@click.option(
    "--comment", is_flag=True, help="Create or update the sticky PR comment. Off by default."
)
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def ci_merge(dirs: tuple[Path, ...], out: Path, comment: bool, quiet: bool) -> None:
    """Combine several shards' output directories DIRS (each from `ci --only`) into one
    report.json, summary, JUnit file, comment and exit code."""
    from .console import Console
    from .merge import merge

    env = dict(os.environ)
    console = Console(env, quiet, sys.stderr, sys.stdout)
    resolved_out = out.resolve()
    if any(d.resolve() == resolved_out for d in dirs):
        fail(f"--out {out}: must differ from the shard directories")
    _exit_with(lambda: merge(list(dirs), out, env, comment, console))


@ci.command(
    "comment",
    context_settings=CONTEXT,
    short_help="Render the sticky PR comment from a ci report.json and post it (fork-safe).",
    epilog=epilog(
        'skill-evals ci comment report/report.json --pr "$PR" --head-sha "$HEAD_SHA"',
        "docs/github-actions.md#secrets-and-pull-requests-from-forks",
    ),
)
@click.argument("report", type=click.Path(path_type=Path))
@click.option(
    "--pr",
    "pr",
    type=click.IntRange(1),
    default=None,
    help="The pull request number. Default: from GITHUB_EVENT_PATH.",
)
@click.option(
    "--head-sha",
    default=None,
    metavar="SHA",
    help="Only comment when the PR's head commit is this SHA (workflow_run posters). "
    "Default: no check.",
)
@click.option(
    "--run-id",
    default=None,
    help="Link the comment to this workflow run of the repository (the evaluating run). "
    "Default: no link.",
)
def ci_comment(report: Path, pr: int | None, head_sha: str | None, run_id: str | None) -> None:
    """Render the sticky PR comment from REPORT (a `ci` report.json, or the output directory
    holding it) and post it. The report is validated first (exit 5 when it is not a valid
    skill-evals ci report); the comment is rendered here, never taken from the artifact, so
    a report from an untrusted job cannot post text of its own choosing. Failures to post
    are warnings (exit 0)."""
    from ..errors import EvalError
    from . import github, workflow
    from .comment_names import repository_skill_names
    from .schema import load_ci_report
    from .summary import render_comment

    if head_sha is not None and not (
        7 <= len(head_sha) <= 64 and all(c in "0123456789abcdefABCDEF" for c in head_sha)
    ):
        fail("--head-sha: expected a hex commit SHA")
    if run_id is not None and not (run_id.isascii() and run_id.isdigit()):
        fail("--run-id: expected the digits of a workflow run id")
    path = report / "report.json" if report.is_dir() else report
    try:
        ci_report = load_ci_report(path)
    except EvalError as exc:
        fail(str(exc), exc.exit_code)
    env = dict(os.environ)
    url = workflow.run_url(env, run_id) if run_id is not None else None
    body = render_comment(ci_report, url, names=repository_skill_names(Path.cwd()))
    result = github.post_comment(body, env, number=pr, head_sha=head_sha)
    prefix = "" if result.action in ("created", "updated") else "warning: "
    say(f"skill-evals: {prefix}{result.message}", err=True)


def _exit_with(step: Callable[[], int]) -> NoReturn:
    """Run a gate step with SIGTERM as an interrupt and exit with its code (an EvalError: its
    message and exit code)."""
    from ..errors import EvalError

    try:
        with sigterm_interrupts():
            code = step()
    except EvalError as exc:
        fail(str(exc), exc.exit_code)
    sys.exit(code)
