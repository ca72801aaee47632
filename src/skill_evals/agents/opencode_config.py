"""OpenCode's per-invocation configuration (docs/agents/opencode.md): the ``--provider-config``
file, the environment allowlist, and the JSON the runner passes in ``OPENCODE_CONFIG_CONTENT``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..sandbox.child_env import engine_credential
from .base import RunnerSetupError
from .opencode_events import MCP_SERVER

MAX_PROVIDER_CONFIG_BYTES = 64 * 1024
_PROVIDER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_ENV_REFERENCE = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]{0,127})\}")
# The keys of one entry of OpenCode's ``provider`` section and the JSON type each must have.
_PROVIDER_KEYS: dict[str, type | tuple[type, ...]] = {
    "api": str,
    "name": str,
    "id": str,
    "npm": str,
    "env": list,
    "options": dict,
    "models": dict,
    "whitelist": list,
    "blacklist": list,
}
_TYPE_NAMES = {str: "a string", list: "an array", dict: "an object"}

# Provider credentials and endpoints, which OpenCode's providers read from the environment:
# by suffix (ANTHROPIC_API_KEY, OPENAI_BASE_URL, OPENCODE_API_KEY, …) and the cloud providers'
# own families (Bedrock, Azure, Vertex).
_AUTH_SUFFIXES = ("_API_KEY", "_API_TOKEN", "_AUTH_TOKEN", "_BASE_URL")
_AUTH_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "VERTEX_")


def auth_variables(caller: Mapping[str, str], referenced: Sequence[str]) -> list[str]:
    """The caller's variables OpenCode may see besides the shared base ones: provider auth and
    endpoint variables (names ending in ``_API_KEY``, ``_API_TOKEN``, ``_AUTH_TOKEN``,
    ``_BASE_URL``; the ``AWS_``, ``AZURE_``, ``GOOGLE_``, ``VERTEX_`` families) and the variables
    ``--provider-config`` names with ``{env:NAME}``; never another runner's ``SKILL_EVALS_*``
    key unless named so. Nothing else (``OPENCODE_*`` config pointers,
    ``XDG_*``, ``npm_config_*``, …) passes."""
    wanted = set(referenced)
    return sorted(
        name
        for name in caller
        if name in wanted
        or (name.endswith(_AUTH_SUFFIXES) and not engine_credential(name))  # not pi's key
        or name.startswith(_AUTH_PREFIXES)
    )


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def load_provider_config(path: Path) -> tuple[dict[str, Any], list[str]]:
    """Read ``--provider-config FILE``: a JSON object merged as OpenCode's ``provider`` section.
    Returns it and the variable names it references as ``{env:NAME}`` (those reach OpenCode).

    Checked strictly, so a typo fails here with the file named rather than as an obscure OpenCode
    error: at most 64 KiB of UTF-8 JSON, no duplicate keys; each key a provider id, each value an
    object with only OpenCode's provider keys, correctly typed; ``options.baseURL`` an http(s)
    URL; ``options.apiKey`` only as ``{env:NAME}`` (a literal key would sit in the agent's
    environment and config)."""
    where = f"--provider-config {path}"
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_PROVIDER_CONFIG_BYTES + 1)
    except OSError as exc:
        raise RunnerSetupError(f"{where}: cannot read ({exc.strerror})") from exc
    if len(raw) > MAX_PROVIDER_CONFIG_BYTES:
        raise RunnerSetupError(f"{where}: larger than {MAX_PROVIDER_CONFIG_BYTES // 1024} KiB")
    try:
        value = json.loads(raw.decode("utf-8"), object_pairs_hook=_reject_duplicates)
    except UnicodeDecodeError:
        raise RunnerSetupError(f"{where}: not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise RunnerSetupError(
            f"{where}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise RunnerSetupError(f"{where}: {exc}") from None
    if not isinstance(value, dict) or not value:
        raise RunnerSetupError(
            f'{where}: must be a non-empty JSON object of providers, e.g. {{"my-llm": '
            '{"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "https://…"}, '
            '"models": {"my-model": {}}}}'
        )
    for provider, entry in value.items():
        _check_provider(where, provider, entry)
    referenced = sorted({m for s in _strings(value) for m in _ENV_REFERENCE.findall(s)})
    return value, referenced


def _check_provider(where: str, provider: str, entry: Any) -> None:
    if not _PROVIDER_ID.fullmatch(provider):
        raise RunnerSetupError(
            f"{where}: provider id {provider[:80]!r} must be letters, digits, '.', '_' or '-'"
        )
    at = f"{where}: provider.{provider}"
    if not isinstance(entry, dict):
        raise RunnerSetupError(f"{at}: must be an object")
    for key, item in entry.items():
        expected = _PROVIDER_KEYS.get(key)
        if expected is None:
            allowed = ", ".join(sorted(_PROVIDER_KEYS))
            raise RunnerSetupError(f"{at}: unknown key {key[:80]!r} (allowed: {allowed})")
        if not isinstance(item, expected):
            raise RunnerSetupError(f"{at}.{key}: must be {_TYPE_NAMES[expected]}")  # type: ignore[index]
        if isinstance(item, list) and not all(isinstance(s, str) for s in item):
            raise RunnerSetupError(f"{at}.{key}: must be an array of strings")
    for model, spec in entry.get("models", {}).items():
        if not isinstance(spec, dict):
            raise RunnerSetupError(f"{at}.models.{model[:80]}: must be an object")
    options = entry.get("options", {})
    base_url = options.get("baseURL")
    if base_url is not None and (
        not isinstance(base_url, str) or not re.match(r"https?://[^\s/]", base_url)
    ):
        raise RunnerSetupError(f"{at}.options.baseURL: must be an http:// or https:// URL")
    api_key = options.get("apiKey")
    if api_key is not None and not (isinstance(api_key, str) and _ENV_REFERENCE.fullmatch(api_key)):
        raise RunnerSetupError(
            f'{at}.options.apiKey: write "{{env:NAME}}" and set NAME in the environment; '
            "a literal key would be written into the agent's environment"
        )


def build_config(
    model: str,
    shell: Path | None,
    providers: Mapping[str, Any] | None,
    max_turns: int | None,
    mcp_command: Sequence[str] | None,
    mcp_env: Mapping[str, str],
    read_only: bool = False,
) -> dict[str, Any]:
    """The whole configuration of one invocation (``OPENCODE_CONFIG_CONTENT``).

    The agent may edit files and run commands inside the workspace; every path outside it is
    denied (a denial is an error the model sees, where OpenCode's default "ask" would end the
    headless run); no web tools; no subagents (their events are not printed, so a skill they
    loaded could not be seen); no updates, sharing, snapshots, LSP servers or formatters.
    ``read_only`` (``--read-only``): edits and commands are denied too."""
    config: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "model": model,
        "small_model": model,  # no other (default, networked) model for summaries
        "autoupdate": False,
        "share": "disabled",
        "snapshot": False,
        "lsp": False,
        "formatter": False,
        "instructions": [],
        "permission": _permissions(read_only),
    }
    if shell is not None:
        config["shell"] = str(shell)
    if providers:
        config["provider"] = dict(providers)
    if max_turns is not None:
        config["agent"] = {"build": {"steps": max_turns}}
    if mcp_command:
        config["mcp"] = {
            MCP_SERVER: {
                "type": "local",
                "command": list(mcp_command),
                "environment": dict(mcp_env),
                "enabled": True,
            }
        }
    return config


def _permissions(read_only: bool) -> dict[str, str]:
    """What the agent may do: everything inside the workspace (with ``read_only`` no edits and
    no commands), nothing outside it, no web, subagents, questions or loop prompts."""
    permission = {
        "read": "allow",
        "edit": "allow",
        "glob": "allow",
        "grep": "allow",
        "list": "allow",
        "bash": "allow",
        "skill": "allow",
        "todowrite": "allow",
        "task": "deny",
        "webfetch": "deny",
        "websearch": "deny",
        "question": "deny",
        "doom_loop": "deny",
        "external_directory": "deny",
    }
    if read_only:
        permission.update(edit="deny", bash="deny")
    return permission
