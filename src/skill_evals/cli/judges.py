"""`skill-evals judge anthropic|openai`: the built-in judges, the click command only
(docs/judging.md#built-in-judges)."""

from __future__ import annotations

import json
import sys

import click

from .common import fail
from .helptext import CONTEXT, epilog

MAX_REQUEST_BYTES = 64 << 20

_EXAMPLE = """
export ANTHROPIC_API_KEY=...
skill-evals test --skill skills/release-notes --cases skills/release-notes/evals/cases.jsonl \\
  --runner 'skill-evals runner claude-code' \\
  --judge 'skill-evals judge anthropic --model claude-sonnet-4-5'
"""


@click.command(
    "judge",
    context_settings=CONTEXT,
    short_help="A built-in judge: grade one request with the Anthropic or OpenAI API.",
    epilog=epilog(_EXAMPLE, "docs/judging.md"),
)
@click.argument("provider", type=click.Choice(["anthropic", "openai"]))
@click.option(
    "--model",
    metavar="M",
    default=None,
    help="The model to grade with. No default: required (exit 5 without it).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(1, 64_000),
    default=1024,
    show_default=True,
    help="The most tokens the model may answer with.",
)
def judge(provider: str, model: str | None, max_tokens: int) -> None:
    """Read one judge request on stdin, ask the model once (temperature 0, the fixed prompt
    of docs/judging.md) and print one verdict line, or a runnerError line saying why not. The
    key comes from ANTHROPIC_API_KEY / OPENAI_API_KEY, the address from ANTHROPIC_BASE_URL /
    OPENAI_BASE_URL. Give it to `test --judge`; it is not meant to be run by hand."""
    from ..agents.model_judges import judge_once

    if not model:
        fail("judge: --model is required (e.g. --model claude-sonnet-4-5)")
    data = sys.stdin.buffer.read(MAX_REQUEST_BYTES + 1)
    try:
        if len(data) > MAX_REQUEST_BYTES:
            raise ValueError("too large")
        request = json.loads(data.decode("utf-8"))
        if not isinstance(request, dict) or request.get("kind") not in ("absolute", "pairwise"):
            raise ValueError("not a request")
        answer = judge_once(provider, request, model, max_tokens)
    except (ValueError, KeyError, TypeError):
        answer = {"runnerError": "stdin is not one judge request", "retryable": False}
    click.echo(json.dumps(answer, ensure_ascii=False))
