"""The click command of a built-in model helper (`judge`, `propose`): one request read from
stdin (bounded), one call to the Anthropic or OpenAI API, one JSON line printed."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from .common import fail
from .helptext import CONTEXT, epilog

MAX_REQUEST_BYTES = 64 << 20

Ask = Callable[[str, dict[str, Any], str, int], dict[str, Any]]


@dataclass(frozen=True)
class ModelCommand:
    """What tells one built-in model helper's command from another's."""

    name: str
    short_help: str
    help: str
    example: str
    doc: str
    model_help: str
    is_request: Callable[[dict[str, Any]], bool]
    not_a_request: dict[str, Any]
    load: Callable[[], Ask]  # imports the model module only when the command runs
    max_tokens: int = 1024  # --max-tokens' default


def model_command(spec: ModelCommand) -> click.Command:
    """``skill-evals <name> anthropic|openai --model M [--max-tokens N]``: read one request,
    ask ``spec.load()`` once, print its answer, or ``spec.not_a_request`` for stdin that is
    not one request (too large, not JSON, not ``spec.is_request``)."""

    @click.command(
        spec.name,
        context_settings=CONTEXT,
        short_help=spec.short_help,
        help=spec.help,
        epilog=epilog(spec.example, spec.doc),
    )
    @click.argument("provider", type=click.Choice(["anthropic", "openai"]))
    @click.option("--model", metavar="M", default=None, help=spec.model_help)
    @click.option(
        "--max-tokens",
        type=click.IntRange(1, 64_000),
        default=spec.max_tokens,
        show_default=True,
        help="The most tokens the model may answer with.",
    )
    def command(provider: str, model: str | None, max_tokens: int) -> None:
        ask = spec.load()
        if not model:
            fail(f"{spec.name}: --model is required (e.g. --model claude-sonnet-4-5)")
        data = sys.stdin.buffer.read(MAX_REQUEST_BYTES + 1)
        try:
            if len(data) > MAX_REQUEST_BYTES:
                raise ValueError("too large")
            request = json.loads(data.decode("utf-8"))
            if not isinstance(request, dict) or not spec.is_request(request):
                raise ValueError("not a request")
            answer = ask(provider, request, model, max_tokens)
        except (ValueError, KeyError, TypeError):
            answer = spec.not_a_request
        click.echo(json.dumps(answer, ensure_ascii=False))

    return command
