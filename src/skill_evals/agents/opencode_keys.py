"""OpenCode's ``--provider-config`` keys through the credential proxy (docs/agents/opencode.md).

A provider entry with ``options.apiKey: "{env:X}"`` reads its key from ``X``. The engine proxies
``X`` to that provider's endpoint (its ``options.baseURL``, else the known default of OpenCode's
own ``anthropic``, ``openai`` and ``google`` providers), and the runner points the provider's
``baseURL`` at the proxy: the upstream gets the real key, OpenCode only the placeholder. A key
that cannot be routed so is refused (exit 5 naming the provider), never sent as a placeholder
upstream nor passed in clear.
"""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..sandbox.credential_proxy import PLACEHOLDER, PROXY_VARIABLE_PREFIX, Credential
from .base import RunnerSetupError
from .opencode_config import load_provider_config

_ENV_REFERENCE = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]{0,127})\}")
# The header an AI SDK package (``npm``) sends its key in; any other speaks OpenAI's Bearer.
_NPM_STYLES = {"@ai-sdk/anthropic": "x-api-key", "@ai-sdk/google": "x-goog-api-key"}
# OpenCode's own providers: their SDK's default endpoint and header, for an entry without
# ``options.baseURL``.
_DEFAULTS = {
    "anthropic": ("https://api.anthropic.com/v1", "x-api-key"),
    "openai": ("https://api.openai.com/v1", "bearer"),
    "google": ("https://generativelanguage.googleapis.com/v1beta", "x-goog-api-key"),
}


@dataclass(frozen=True)
class KeyRoute:
    """One provider's key: the variable it reads, the header style and the upstream (None
    when neither ``options.baseURL`` nor a known default gives one)."""

    provider: str
    env: str
    style: str
    upstream: str | None


def key_routes(providers: Mapping[str, Any]) -> list[KeyRoute]:
    """The ``{env:X}`` keys of a checked provider config, one per provider that has one."""
    routes = []
    for provider, entry in providers.items():
        options = entry.get("options", {})
        match = _ENV_REFERENCE.fullmatch(str(options.get("apiKey", "")))
        if match is None:
            continue
        default_url, default_style = _DEFAULTS.get(provider, (None, "bearer"))
        style = _NPM_STYLES.get(str(entry.get("npm", "")), default_style)
        upstream = options.get("baseURL") or default_url
        routes.append(KeyRoute(provider, match.group(1), style, upstream))
    return routes


def provider_config_arg(argv: Sequence[str]) -> str | None:
    """The ``--provider-config`` value of a runner command line, if any (the last one)."""
    path: str | None = None
    for index, arg in enumerate(argv):
        if arg == "--provider-config" and index + 1 < len(argv):
            path = argv[index + 1]
        elif arg.startswith("--provider-config="):
            path = arg.split("=", 1)[1]
    return path


def provider_credentials(
    command: str, environ: Mapping[str, str], taken: Mapping[str, str]
) -> list[Credential]:
    """What the engine proxies for ``runner opencode --provider-config FILE``: each provider's
    ``{env:X}`` key that is set, to that provider's endpoint. InvalidInput (exit 5, naming the
    provider) for a key with no endpoint to send it to, or one that OpenCode's own provider
    already proxies elsewhere (``taken``: variable → upstream). An unreadable file is the
    runner's to report."""
    path = provider_config_arg(shlex.split(command))
    if path is None:
        return []
    try:
        providers, _ = load_provider_config(Path(path))
    except RunnerSetupError:
        return []
    found = []
    for route in key_routes(providers):
        secret = environ.get(route.env, "")
        if not secret:
            continue
        where = f"runner opencode --provider-config {path}: provider.{route.provider}"
        if route.upstream is None:
            raise InvalidInput(
                f"{where} reads its key from {route.env} but has no options.baseURL: give "
                "the endpoint, so the key can reach it through the credential proxy"
            )
        if taken.get(route.env, route.upstream) != route.upstream:
            raise InvalidInput(
                f"{where}: {route.env} is also OpenCode's own key for another endpoint; "
                "give this provider a variable of its own"
            )
        found.append(Credential(route.env, route.style, route.upstream, None, secret))
    return found


def routed_providers(providers: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The provider section OpenCode gets: each ``{env:X}`` provider's ``baseURL`` pointed at
    the proxy serving ``X``. RunnerSetupError naming the provider when ``X`` holds the
    placeholder but no proxy serves it (the placeholder would go upstream)."""
    routed = copy.deepcopy(dict(providers))
    for route in key_routes(providers):
        url = env.get(PROXY_VARIABLE_PREFIX + route.env, "")
        if url:
            routed[route.provider].setdefault("options", {})["baseURL"] = url
        elif env.get(route.env) == PLACEHOLDER:
            raise RunnerSetupError(
                f"--provider-config: provider.{route.provider}: {route.env} is a credential "
                "proxy placeholder but no proxy serves it; run this through skill-evals test"
            )
    return routed
