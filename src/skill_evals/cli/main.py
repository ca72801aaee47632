"""Command line: click commands only — parse, call, print, exit.

Heavy modules are imported inside the commands so that `skill-evals --help` starts fast.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from .. import __version__
from ..codes import INTERNAL
from ..errors import EvalError
from ..escaping.terminal import terminal_safe
from .common import fail
from .helptext import CONTEXT, epilog


@click.group(
    context_settings=CONTEXT,
    epilog=epilog(
        "skill-evals test --skill examples/skills/refund-policy \\\n"
        "  --cases examples/skills/refund-policy/evals/cases.jsonl \\\n"
        "  --runner 'skill-evals runner simulated' --min-trigger-f1 0.8\n"
        "skill-evals COMMAND --help",
        "docs/README.md",
        "docs/first-suite.md",
    ),
)
@click.version_option(__version__, prog_name="skill-evals")
@click.option("--debug", is_flag=True, help="Print a traceback on internal errors (exit 70).")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Gate pull requests and releases on agent skills.

    Measures trigger precision/recall/F1 and paired uplift for a skill, proves from the run's
    own records which skills were loaded, and exits with a documented code (`skill-evals codes`).
    """
    ctx.obj = {"debug": debug}


@cli.command(
    context_settings=CONTEXT,
    short_help="Print the exit codes and what each means.",
    epilog=epilog("skill-evals codes", "docs/README.md#commands", "docs/statistics.md"),
)
def codes() -> None:
    """Print the exit-code table and the precedence when several apply."""
    from ..codes import render_table

    click.echo(render_table())


# -------------------------------------------------------------------------- ci, lock, changed

from ..ci.commands import ci  # noqa: E402  (click commands only; lazy inside)
from ..ci.commands_lock import changed, lock  # noqa: E402

cli.add_command(ci)
cli.add_command(lock)
cli.add_command(changed)

from .cases_draft import cases  # noqa: E402  (the click commands only; lazy inside)
from .draft import draft  # noqa: E402  (the click command only; lazy inside)
from .improve import improve  # noqa: E402  (the click command only; lazy inside)
from .lint import lint  # noqa: E402  (the click command only; lazy inside)
from .propose import propose  # noqa: E402  (the click command only; lazy inside)
from .route import route  # noqa: E402  (the click command only; lazy inside)
from .validate import validate  # noqa: E402  (the click command only; lazy inside)

cli.add_command(route)
cli.add_command(cases)
cli.add_command(draft)
cli.add_command(lint)
cli.add_command(improve)
cli.add_command(propose)
cli.add_command(validate)

from .runners import evidence, mcp_serve, runner  # noqa: E402  (click commands only)
from .test import test  # noqa: E402  (the click command only; lazy inside)

cli.add_command(test)
cli.add_command(runner)
cli.add_command(evidence)
cli.add_command(mcp_serve)

from .judge_check import judge_check  # noqa: E402  (the click command only; lazy inside)
from .judges import judge  # noqa: E402  (the click command only; lazy inside)

cli.add_command(judge)
cli.add_command(judge_check)


# ---------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> NoReturn:
    """Console entry point: click usage errors exit 5, internal errors 70."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        cli.main(args=argv, prog_name="skill-evals", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("skill-evals: interrupted", err=True)
        sys.exit(130)
    except EvalError as exc:
        # A documented failure outside `test` (e.g. a bad config): its exit code, one line.
        fail(str(exc), exc.exit_code)
    except click.ClickException as exc:
        # Usage errors (bad option, out of range, missing argument) → exit 5, one line.
        fail(exc.format_message())
    except SystemExit:
        raise
    except KeyboardInterrupt:
        click.echo("skill-evals: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:
        if debug:
            import traceback

            traceback.print_exc()
        click.echo(
            f"skill-evals: internal error: {type(exc).__name__}: {terminal_safe(exc)} "
            "(rerun with --debug)",
            err=True,
        )
        sys.exit(INTERNAL)
    sys.exit(0)
