"""`skill-evals propose anthropic|openai`: the built-in proposers, the click command only
(docs/improve.md#built-in-proposers)."""

from __future__ import annotations

from typing import Any

from .model_command import Ask, ModelCommand, model_command

_EXAMPLE = """
export ANTHROPIC_API_KEY=...
skill-evals improve --skill skills/xlsx --cases skills/xlsx/evals/cases.jsonl \\
  --runner 'skill-evals runner claude-code' \\
  --proposer 'skill-evals propose anthropic --model claude-sonnet-4-5'
"""

_HELP = """Read one improve request on stdin, ask the model once (temperature 0, the fixed prompt
    of docs/improve.md) and print one line with a description, or a proposerError line saying
    why not. The key comes from ANTHROPIC_API_KEY / OPENAI_API_KEY, the address from
    ANTHROPIC_BASE_URL / OPENAI_BASE_URL. Give it to `improve --proposer`."""


def _is_request(request: dict[str, Any]) -> bool:
    return isinstance(request.get("skill"), dict)


def _load() -> Ask:
    from ..agents.model_proposers import propose_once

    return propose_once


propose = model_command(
    ModelCommand(
        name="propose",
        short_help="A built-in proposer for improve: ask the Anthropic or OpenAI API once.",
        help=_HELP,
        example=_EXAMPLE,
        doc="docs/improve.md",
        model_help="The model to ask. No default: required (exit 5 without it).",
        is_request=_is_request,
        not_a_request={"proposerError": "stdin is not one improve request", "retryable": False},
        load=_load,
    )
)
