"""The agent's environment and binary: what reaches the agent process, and which program runs."""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import skill_evals

from .base import RunnerSetupError

# What reaches every agent from the caller's environment: the path, locale, time zone, terminal,
# proxy and CA settings, the user's name and shell. Everything else is dropped unless the agent
# names it (its auth and endpoint variables) or the runner sets it itself.
BASE_VARIABLES = frozenset(
    {
        "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM", "NO_COLOR", "USER", "LOGNAME",
        "SHELL", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy",
        "https_proxy", "no_proxy", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "NODE_USE_ENV_PROXY",
    }
)  # fmt: skip
BASE_PREFIXES = ("LC_",)
# Prefixes that never pass by pattern (agent config, plugin, skill and session pointers); an
# agent may still name one exact auth variable among them (e.g. CODEX_API_KEY).
DENIED_PREFIXES = (
    "CLAUDE_",
    "CODEX_",
    "PI_",
    "GEMINI_",
    "OPENCODE_",
    "COPILOT_",
    "XDG_",
    "EVALGATE_",
)


def _allowed(name: str, names: frozenset[str], prefixes: tuple[str, ...]) -> bool:
    if name in names or name in BASE_VARIABLES:
        return True
    if name.startswith(DENIED_PREFIXES):
        return False
    return name.startswith(BASE_PREFIXES) or name.startswith(prefixes)


def agent_env(caller: Mapping[str, str], home: Path, allowed: Iterable[str] = ()) -> dict[str, str]:
    """The agent's environment, built from an allowlist: :data:`BASE_VARIABLES` and ``LC_*``,
    plus the agent's own ``allowed`` names (``NAME`` exactly, ``PREFIX*`` by prefix; a prefix
    never admits a :data:`DENIED_PREFIXES` name). ``HOME`` and the XDG dirs point into the fresh
    ``home``."""
    names = frozenset(a for a in allowed if not a.endswith("*"))
    prefixes = tuple(a[:-1] for a in allowed if a.endswith("*"))
    env = {k: v for k, v in caller.items() if _allowed(k, names, prefixes)}
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    env["XDG_STATE_HOME"] = str(home / ".local" / "state")
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    return env


def find_binary(explicit: str | None, name: str, env: Mapping[str, str], hint: str = "") -> str:
    """The agent binary: ``--bin`` if given, else ``name`` on PATH. ``hint`` ends the reason
    of a binary not found (how to install the tested release)."""
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
            f"'{explicit or name}' not found on PATH; install it or pass --bin PATH{hint}"
        )
    return found


# Variables hidden from the commands the model runs (shell globs, matched case-insensitively):
# a prompt or skill that makes the agent print its environment must not expose a key.
SECRET_NAME_PATTERNS = ("*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*", "*CREDENTIAL*")


def secret_names(env: Mapping[str, str]) -> list[str]:
    """Names (never values) of the variables in ``env`` that look like credentials, sorted."""
    return sorted(
        name
        for name in env
        if any(fnmatch.fnmatchcase(name.upper(), pattern) for pattern in SECRET_NAME_PATTERNS)
    )


_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def secretless_shell(
    folder: Path,
    env: Mapping[str, str],
    also: Iterable[str] = (),
    shells: Sequence[str] = ("bash", "sh"),
) -> Path:
    """A wrapper for the shell an agent runs the model's commands with: it starts the real shell
    (the first of ``shells`` on ``env``'s PATH) without the credential-like variables of ``env``
    (:func:`secret_names`) and without the ``also`` names (variables the agent adds itself).
    It is ``folder/<that shell's name>``, since agents pick the shell's arguments by its name,
    and holds variable *names* only."""
    names = [n for n in (*secret_names(env), *also) if _SHELL_NAME.fullmatch(n)]
    real = next((found for s in shells if (found := shutil.which(s, path=env.get("PATH")))), None)
    if real is None:
        raise RunnerSetupError(f"no {' or '.join(shells)} found on PATH: the agent needs a shell")
    wrapper = folder / Path(real).name
    folder.mkdir(parents=True, exist_ok=True)
    unset = "".join(f"-u {name} " for name in dict.fromkeys(names))
    wrapper.write_text(f'#!/bin/sh\nexec env {unset}{shlex.quote(real)} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper


def mcp_serve_args(skill_dirs: Sequence[Path]) -> list[str]:
    """Arguments for this Python that start the package's ``mcp-serve`` for ``skill_dirs``. The
    package's location goes into the code: agents that start MCP servers drop PYTHONPATH."""
    package_root = str(Path(skill_evals.__file__).resolve().parent.parent)
    code = (
        f"import sys; sys.path.insert(0, {package_root!r}); "
        "from skill_evals.cli.main import main; main()"
    )
    return ["-c", code, "mcp-serve", *(a for d in skill_dirs for a in ("--skill", str(d)))]
