"""`skill-evals propose anthropic|openai`: the built-in proposers, the click command only
(docs/improve.md#built-in-proposers)."""

from __future__ import annotations

import json
import sys

import click

from .common import fail
from .helptext import CONTEXT, epilog

MAX_REQUEST_BYTES = 64 << 20

_EXAMPLE = """
export ANTHROPIC_API_KEY=...
skill-evals improve --skill skills/xlsx --cases skills/xlsx/evals/cases.jsonl \\
  --runner 'skill-evals runner claude-code' \\
  --proposer 'skill-evals propose anthropic --model claude-sonnet-4-5'
"""


@click.command(
    "propose",
    context_settings=CONTEXT,
    short_help="A built-in proposer for improve: ask the Anthropic or OpenAI API once.",
    epilog=epilog(_EXAMPLE, "docs/improve.md"),
)
@click.argument("provider", type=click.Choice(["anthropic", "openai"]))
@click.option(
    "--model",
    metavar="M",
    default=None,
    help="The model to ask. No default: required (exit 5 without it).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(1, 64_000),
    default=1024,
    show_default=True,
    help="The most tokens the model may answer with.",
)
def propose(provider: str, model: str | None, max_tokens: int) -> None:
    """Read one improve request on stdin, ask the model once (temperature 0, the fixed prompt
    of docs/improve.md) and print one line with a description, or a proposerError line saying
    why not. The key comes from ANTHROPIC_API_KEY / OPENAI_API_KEY, the address from
    ANTHROPIC_BASE_URL / OPENAI_BASE_URL. Give it to `improve --proposer`."""
    from ..agents.model_proposers import propose_once

    if not model:
        fail("propose: --model is required (e.g. --model claude-sonnet-4-5)")
    data = sys.stdin.buffer.read(MAX_REQUEST_BYTES + 1)
    try:
        if len(data) > MAX_REQUEST_BYTES:
            raise ValueError("too large")
        request = json.loads(data.decode("utf-8"))
        if not isinstance(request, dict) or not isinstance(request.get("skill"), dict):
            raise ValueError("not a request")
        answer = propose_once(provider, request, model, max_tokens)
    except (ValueError, KeyError, TypeError):
        answer = {"proposerError": "stdin is not one improve request", "retryable": False}
    click.echo(json.dumps(answer, ensure_ascii=False))
