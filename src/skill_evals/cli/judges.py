"""`skill-evals judge anthropic|openai`: the built-in judges, the click command only
(docs/judging.md#built-in-judges)."""

from __future__ import annotations

from typing import Any

from .model_command import Ask, ModelCommand, model_command

_EXAMPLE = """
export ANTHROPIC_API_KEY=...
skill-evals test --skill skills/release-notes --cases skills/release-notes/evals/cases.jsonl \\
  --runner 'skill-evals runner claude-code' \\
  --judge 'skill-evals judge anthropic --model claude-sonnet-4-5'
"""

_HELP = """Read one judge request on stdin, ask the model once (temperature 0, the fixed prompt
    of docs/judging.md) and print one verdict line, or a runnerError line saying why not. The
    key comes from ANTHROPIC_API_KEY / OPENAI_API_KEY, the address from ANTHROPIC_BASE_URL /
    OPENAI_BASE_URL. Give it to `test --judge`; it is not meant to be run by hand."""


def _is_request(request: dict[str, Any]) -> bool:
    return request.get("kind") in ("absolute", "pairwise")


def _load() -> Ask:
    from ..agents.model_judges import judge_once

    return judge_once


judge = model_command(
    ModelCommand(
        name="judge",
        short_help="A built-in judge: grade one request with the Anthropic or OpenAI API.",
        help=_HELP,
        example=_EXAMPLE,
        doc="docs/judging.md",
        model_help="The model to grade with. No default: required (exit 5 without it).",
        is_request=_is_request,
        not_a_request={"runnerError": "stdin is not one judge request", "retryable": False},
        load=_load,
    )
)
