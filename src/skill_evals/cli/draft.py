"""`skill-evals draft anthropic|openai`: the built-in drafters, the click command only
(docs/drafting.md#built-in-drafters)."""

from __future__ import annotations

from typing import Any

from .model_command import Ask, ModelCommand, model_command

_EXAMPLE = """
export ANTHROPIC_API_KEY=...
skill-evals cases draft --skill skills/xlsx --catalog 'skills/*' \\
  --drafter 'skill-evals draft anthropic --model claude-sonnet-4-5'
"""

_HELP = """Read one draft request on stdin, ask the model once (temperature 0, the fixed prompt
    of docs/drafting.md) and print one line with the drafted cases, or a runnerError line
    saying why not. The key comes from ANTHROPIC_API_KEY / OPENAI_API_KEY, the address from
    ANTHROPIC_BASE_URL / OPENAI_BASE_URL. Give it to `cases draft --drafter`."""


def _is_request(request: dict[str, Any]) -> bool:
    return isinstance(request.get("skill"), dict) and isinstance(request.get("buckets"), dict)


def _load() -> Ask:
    from ..agents.model_drafters import draft_once

    return draft_once


draft = model_command(
    ModelCommand(
        name="draft",
        short_help="A built-in drafter for cases draft: ask the Anthropic or OpenAI API once.",
        help=_HELP,
        example=_EXAMPLE,
        doc="docs/drafting.md",
        model_help="The model to ask. No default: required (exit 5 without it).",
        is_request=_is_request,
        not_a_request={"runnerError": "stdin is not one draft request", "retryable": False},
        load=_load,
        max_tokens=8192,
    )
)
