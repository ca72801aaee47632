"""What the engine starts a built-in runner with: its agent's allowlist (the variables the agent
reads, see each agent's page) plus the engine's own variables, never the rest of the caller's
environment, nor an engine credential variable of another runner (``SKILL_EVALS_PI_API_KEY``
reaches pi only). The runner builds the agent's own environment from this one (environment.py).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from ..sandbox.child_env import engine_credential
from .environment import BASE_PREFIXES, BASE_VARIABLES, DENIED_PREFIXES
from .registry import shipped_runner

# The engine's own variables and what the runner process itself needs to start.
ENGINE_PREFIXES = ("EVALGATE_SKILL_", "SKILL_EVALS_")
PI_KEY, PI_BASE_URL = "SKILL_EVALS_PI_API_KEY", "SKILL_EVALS_PI_BASE_URL"
ENGINE_NAMES = frozenset({"HOME", "TMPDIR", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE"})


def _provider_names(argv: list[str]) -> list[str]:
    """The variables an OpenCode ``--provider-config`` names with ``{env:NAME}`` (none when
    the file cannot be read: the runner then reports it)."""
    from .opencode_keys import provider_config_arg

    path = provider_config_arg(argv)
    if path is None:
        return []
    from .opencode_config import load_provider_config

    try:
        return list(load_provider_config(Path(path))[1])
    except Exception:  # any problem is the runner's to report, with its own message
        return []


def _patterns(runner: str, argv: list[str], caller: Mapping[str, str]) -> tuple[str, ...]:
    from .registry import agent

    if runner == "opencode":
        from .opencode_config import auth_variables

        return tuple(auth_variables(caller, _provider_names(argv)))
    return tuple(agent(runner).environment)


def agent_program(command: str) -> str | None:
    """The agent binary a built-in agent runner's command starts: its ``--bin`` value, else
    the agent's program name (looked up on PATH); None for any other command."""
    runner = shipped_runner(command)
    if runner is None or runner == "simulated":
        return None
    argv = shlex.split(command)
    for index, arg in enumerate(argv):
        if arg == "--bin" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--bin="):
            return arg.split("=", 1)[1]
    from .registry import agent

    return agent(runner).binary


def builtin_runner_env(command: str, caller: Mapping[str, str]) -> dict[str, str] | None:
    """The environment a built-in runner starts with, from ``caller``: the shared base
    variables, its agent's own names (``NAME`` or ``PREFIX*``) and the engine's; None when
    ``command`` is not a built-in runner (a custom runner gets the caller's)."""
    runner = shipped_runner(command)
    if runner is None:
        return None
    argv = shlex.split(command)
    allowed = () if runner == "simulated" else _patterns(runner, argv, caller)
    names = frozenset(a for a in allowed if not a.endswith("*"))
    prefixes = tuple(a[:-1] for a in allowed if a.endswith("*"))

    def keep(name: str) -> bool:
        if name in names or name in BASE_VARIABLES or name in ENGINE_NAMES:
            return True
        if name.startswith(ENGINE_PREFIXES):  # another runner's key never passes
            return not engine_credential(name) or name in names
        if name.startswith(DENIED_PREFIXES):
            return False
        return name.startswith(BASE_PREFIXES) or bool(prefixes and name.startswith(prefixes))

    env = {name: value for name, value in caller.items() if keep(name)}
    if runner == "pi" and not caller.get(PI_BASE_URL, "").strip():
        env.pop(PI_KEY, None)  # unused without its base URL, so never proxied: not passed
    return env
