"""A built-in runner's own refusals, taken once before anything starts: its agent plug-in's
``check`` (a key, a provider, an option the agent cannot honour) with the options of the
runner's command line and the caller's environment. Each of these fails every invocation the
same way, so it is decided here rather than once per invocation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..agents.base import AgentOptions, RunnerError, RunnerSetupError
from ..agents.registry import agent as load_agent
from ..errors import EvidenceUnavailable, InvalidInput

# The runner options the plug-ins' checks read (docs/agents/README.md), by spelling.
_VALUED = {
    "--model": "model",
    "-m": "model",
    "--max-turns": "max_turns",
    "--delivery": "delivery",
    "--bin": "bin",
    "--provider-config": "provider_config",
}
_FLAGS = {"--read-only": "read_only", "--keep-workspace": "keep_workspace"}


def runner_options(words: Sequence[str]) -> AgentOptions | None:
    """The options of ``skill-evals runner <agent> WORDS``; None when they do not parse (the
    runner then refuses them itself, with click's message)."""
    values: dict[str, Any] = {}
    index = 0
    while index < len(words):
        name, eq, inline = words[index].partition("=")
        if name in _VALUED:
            if not eq:
                if index + 1 >= len(words):
                    return None
                index += 1
                inline = words[index]
            values[_VALUED[name]] = inline
        elif words[index] in _FLAGS:
            values[_FLAGS[words[index]]] = True
        index += 1
    try:
        if "max_turns" in values:
            values["max_turns"] = int(values["max_turns"])
    except ValueError:
        return None
    if values.get("delivery", "native") not in ("native", "mcp"):
        return None
    if "provider_config" in values:
        values["provider_config"] = Path(values["provider_config"])
    return AgentOptions(**values)


def check_agent(agent: str, words: Sequence[str], env: Mapping[str, str], where: str) -> None:
    """Exit 7 for what the environment lacks (a key, a provider), exit 5 for an option the
    agent refuses; the plug-in's own message, prefixed with where the command was given."""
    options = runner_options(words)
    if options is None:
        return
    try:
        load_agent(agent).check(options, env)
    except RunnerSetupError as exc:
        message = f"{where}: skill-evals runner {agent}: {exc}"
        if isinstance(exc, RunnerError) or str(exc).startswith("no API key"):
            raise EvidenceUnavailable(message) from None
        raise InvalidInput(message) from None
