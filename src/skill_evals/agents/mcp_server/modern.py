"""The modern protocol era (revision 2026-07-28): stateless requests that carry their version
and capabilities in ``params._meta``, ``server/discover``, results with ``resultType`` and
cache hints, and the modern error codes. Transport-free; the HTTP header rules are in
http_modern.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import __version__
from .jsonrpc import INVALID_PARAMS, RpcError, short

MODERN_VERSION = "2026-07-28"
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
ALL_VERSIONS = (MODERN_VERSION, *LEGACY_VERSIONS)
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
UNSUPPORTED_PROTOCOL_VERSION = -32022
HEADER_MISMATCH = -32020
TTL_MS = 300_000
CACHE_SCOPE = "private"  # skills may be private; what is served never changes while it runs
CACHEABLE = frozenset({"server/discover", "tools/list", "resources/list",
                       "resources/templates/list", "resources/read", "skills/list",
                       "skills/get"})  # fmt: skip
# Methods of the legacy era only: unknown in a modern request.
LEGACY_ONLY = frozenset({"initialize", "ping", "logging/setLevel"})


def modern_version(params: object) -> str | None:
    """The version a request claims in ``params._meta`` (None: a legacy request)."""
    if not isinstance(params, Mapping):
        return None
    meta = params.get("_meta")
    if not isinstance(meta, Mapping) or PROTOCOL_VERSION_KEY not in meta:
        return None
    version = meta[PROTOCOL_VERSION_KEY]
    return version if isinstance(version, str) else repr(version)


def unsupported(requested: str) -> RpcError:
    """``-32022`` naming the versions this server offers."""
    return RpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version: {short(requested)}",
        {"supported": list(ALL_VERSIONS), "requested": short(requested)},
    )


def check_envelope(params: Mapping[str, Any]) -> None:
    """A modern request's ``_meta``: an offered version and the client's capabilities."""
    meta = params["_meta"]
    version = meta[PROTOCOL_VERSION_KEY]
    if version != MODERN_VERSION:
        raise unsupported(version if isinstance(version, str) else repr(version))
    if not isinstance(meta.get(CLIENT_CAPABILITIES_KEY), Mapping):
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid params: _meta needs {CLIENT_CAPABILITIES_KEY} (an object)",
        )


def server_info() -> dict[str, str]:
    """The server's name and version."""
    return {"name": "skill-evals", "version": __version__}


def capabilities() -> dict[str, Any]:
    """What the server offers, in both eras: tools, resources and the Skills extension (no
    ``directoryRead``: skills/get and resources/read serve every file)."""
    return {
        "tools": {"listChanged": False},
        "resources": {"subscribe": False, "listChanged": False},
        "extensions": {SKILLS_EXTENSION: {}},
    }


def discover(instructions: str) -> dict[str, Any]:
    """The ``server/discover`` result (before :func:`finish`)."""
    return {
        "supportedVersions": list(ALL_VERSIONS),
        "capabilities": capabilities(),
        "instructions": instructions,
    }


def finish(method: str, result: dict[str, Any]) -> dict[str, Any]:
    """A modern result: ``resultType``, the server's identity in ``_meta``, and for cacheable
    methods ``ttlMs`` and ``cacheScope``."""
    done = {"resultType": "complete", **result}
    done["_meta"] = {**result.get("_meta", {}), SERVER_INFO_KEY: server_info()}
    if method in CACHEABLE:
        done["ttlMs"] = TTL_MS
        done["cacheScope"] = CACHE_SCOPE
    return done
