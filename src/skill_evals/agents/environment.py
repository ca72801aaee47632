"""The agent's environment and binary: what reaches the agent process, and which program runs."""

from __future__ import annotations

import fnmatch
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from .base import RunnerSetupError

# Variables that would point an agent at the user's real config, skills or sessions.
_LEAKY_VARS = (
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "PI_CODING_AGENT_DIR",
    "PI_CODING_AGENT_SESSION_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
)


def isolated_env(base: Mapping[str, str], home: Path) -> dict[str, str]:
    """The caller's environment (auth variables included) with HOME and the XDG dirs moved into
    the fresh ``home`` and every agent-config pointer removed; the EVALGATE_* vars are dropped."""
    env = {k: v for k, v in base.items() if k not in _LEAKY_VARS and not k.startswith("EVALGATE_")}
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    env["XDG_STATE_HOME"] = str(home / ".local" / "state")
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    return env


def find_binary(explicit: str | None, name: str, env: Mapping[str, str]) -> str:
    """The agent binary: ``--bin`` if given, else ``name`` on PATH."""
    if explicit:
        if os.sep in explicit:
            if not os.access(explicit, os.X_OK):
                raise RunnerSetupError(f"--bin {explicit}: not an executable file")
            return explicit
        found = shutil.which(explicit, path=env.get("PATH"))
    else:
        found = shutil.which(name, path=env.get("PATH"))
    if not found:
        raise RunnerSetupError(
            f"'{explicit or name}' not found on PATH; install it or pass --bin PATH"
        )
    return found


# Variables hidden from the commands the model runs (shell globs, matched case-insensitively):
# a prompt or skill that makes the agent print its environment must not expose a key.
SECRET_NAME_PATTERNS = ("*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*")


def secret_names(env: Mapping[str, str]) -> list[str]:
    """Names (never values) of the variables in ``env`` that look like credentials, sorted."""
    return sorted(
        name
        for name in env
        if any(fnmatch.fnmatchcase(name.upper(), pattern) for pattern in SECRET_NAME_PATTERNS)
    )
