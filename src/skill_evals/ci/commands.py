"""Click commands of the CI gate: `ci` (with `plan`, `merge`), `lock`, `changed`.

Owner: ci. Heavy modules are imported inside the commands.
"""

from __future__ import annotations

import click

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(invoke_without_command=True, context_settings=CONTEXT)
@click.pass_context
def ci(ctx: click.Context) -> None:
    """Gate a repository: evaluate every changed skill (SPEC §3)."""
    raise click.UsageError("skill-evals ci is not built yet")


@click.command(context_settings=CONTEXT)
def lock() -> None:
    """Write or check the lock file of skill fingerprints."""
    raise click.UsageError("skill-evals lock is not built yet")


@click.command(context_settings=CONTEXT)
def changed() -> None:
    """List the skills whose fingerprint changed."""
    raise click.UsageError("skill-evals changed is not built yet")
