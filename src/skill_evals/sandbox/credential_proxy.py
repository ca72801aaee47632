"""The credential proxy: the real provider key stays in the engine; the sandbox gets a placeholder.

For each proxied variable the engine starts one HTTP/1.1 server on 127.0.0.1 (an ephemeral port).
The child gets ``ENV=skill-evals-proxy-placeholder`` and ``SKILL_EVALS_PROXY_<ENV>`` (and, for a
built-in agent runner, the provider's base-URL variable) pointing at
``http://127.0.0.1:<port>/<prefix>``, where the prefix is 128 random bits, new per engine run. The
server forwards only ``GET``/``POST`` under that prefix to the upstream with the real credential set
in the provider's header style (:mod:`.proxy_http` does the HTTP). The key is in no file, record,
report or log line; anything in the sandbox may *use* the proxy while the run lasts, but nothing
there can read the key (docs/sandbox.md).
"""

from __future__ import annotations

import re
import secrets
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType

from ..errors import InvalidInput
from .egress import Route
from .proxy_http import ProxyServer
from .upstream import Upstream
from .usage import Meter

PLACEHOLDER = "skill-evals-proxy-placeholder"
PROXY_VARIABLE_PREFIX = "SKILL_EVALS_PROXY_"
STYLES = ("x-api-key", "bearer", "x-goog-api-key", "key-query")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_CONFIG_KEYS = ("env", "header", "upstream")


class CredentialError(ValueError):
    """A ``--credential`` option or ``credentials:`` entry that cannot be used; the message names
    the option or config entry and what to fix, never a secret."""


@dataclass(frozen=True)
class Credential:
    """One proxied variable: its name, how the upstream wants it, and where the upstream is."""

    env: str
    style: str
    upstream: str
    base_url_env: str | None
    secret: str = field(repr=False)


@dataclass(frozen=True)
class _Row:
    """One row of the built-in providers' table (docs/sandbox.md)."""

    env: str
    style: str
    base_url_env: str
    public: str | None  # the provider's public endpoint; None: proxied only with a base URL


_ANTHROPIC = (
    _Row("ANTHROPIC_API_KEY", "x-api-key", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    _Row("ANTHROPIC_AUTH_TOKEN", "bearer", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
)
_OPENAI = (
    _Row("OPENAI_API_KEY", "bearer", "OPENAI_BASE_URL", "https://api.openai.com/v1"),
    _Row("CODEX_API_KEY", "bearer", "OPENAI_BASE_URL", "https://api.openai.com/v1"),
)
_GEMINI_PUBLIC = "https://generativelanguage.googleapis.com"
_GEMINI = (
    _Row("GEMINI_API_KEY", "x-goog-api-key", "GOOGLE_GEMINI_BASE_URL", _GEMINI_PUBLIC),
    _Row("GOOGLE_API_KEY", "x-goog-api-key", "GOOGLE_GEMINI_BASE_URL", _GEMINI_PUBLIC),
)
# pi's built-in providers whose key it may read, each upstream pi's own endpoint for it (its
# model table), so the pi runner points that provider's baseUrl at the proxy as it is.
_PI_GEMINI = "https://generativelanguage.googleapis.com/v1beta"
PI_PROVIDERS: tuple[tuple[str, _Row], ...] = (
    ("anthropic", _ANTHROPIC[0]),
    ("openai", _OPENAI[0]),
    ("google", _Row("GEMINI_API_KEY", "x-goog-api-key", "", _PI_GEMINI)),
    ("groq", _Row("GROQ_API_KEY", "bearer", "", "https://api.groq.com/openai/v1")),
    ("xai", _Row("XAI_API_KEY", "bearer", "", "https://api.x.ai/v1")),
    ("cerebras", _Row("CEREBRAS_API_KEY", "bearer", "", "https://api.cerebras.ai/v1")),
    ("openrouter", _Row("OPENROUTER_API_KEY", "bearer", "", "https://openrouter.ai/api/v1")),
    ("deepseek", _Row("DEEPSEEK_API_KEY", "bearer", "", "https://api.deepseek.com")),
    ("mistral", _Row("MISTRAL_API_KEY", "bearer", "", "https://api.mistral.ai")),
)
# pi's own custom provider exists only with SKILL_EVALS_PI_BASE_URL, so it has no public endpoint.
_PI_API = "SKILL_EVALS_PI_API"
_PI_KEY = "SKILL_EVALS_PI_API_KEY"
_PI_BASE_URL = "SKILL_EVALS_PI_BASE_URL"
_ROWS: dict[str, tuple[_Row, ...]] = {
    "claude-code": _ANTHROPIC,
    "codex": _OPENAI,
    "gemini": _GEMINI,
    "qwen": _OPENAI[:1],
    "opencode": (*_ANTHROPIC, *_OPENAI, *_GEMINI),
}


def _pi_style(environ: Mapping[str, str]) -> str:
    api = environ.get(_PI_API, "").strip()
    if api == "anthropic-messages":
        return "x-api-key"
    if api.startswith("google-"):
        return "x-goog-api-key"
    return "bearer"


def _copilot_row(environ: Mapping[str, str]) -> _Row:
    """Copilot's provider key: sent as ``x-api-key`` to an Anthropic provider, as a bearer
    token to an OpenAI one; only with its base URL (the provider has no public endpoint)."""
    kind = environ.get("COPILOT_PROVIDER_TYPE", "").strip()
    style = "x-api-key" if kind == "anthropic" else "bearer"
    return _Row("COPILOT_PROVIDER_API_KEY", style, "COPILOT_PROVIDER_BASE_URL", None)


def builtin_credentials(agent: str, environ: Mapping[str, str]) -> list[Credential]:
    """The credentials a built-in agent runner's proxy serves: each row of the agent's provider
    table whose variable is set and non-empty, upstream = the caller's base URL, else the
    provider's public endpoint. pi: its custom provider's key (proxied only when its base URL
    is set: without it the key is not used) and every built-in provider key it may read
    (:data:`PI_PROVIDERS`). Copilot: its provider's key, in that provider's header style.
    ``simulated`` and unknown agents get none."""
    rows: Sequence[_Row] = _ROWS.get(agent, ())
    if agent == "pi":
        custom = _Row(_PI_KEY, _pi_style(environ), _PI_BASE_URL, None)
        rows = (custom, *(row for _, row in PI_PROVIDERS))
    elif agent == "copilot":
        rows = (_copilot_row(environ),)
    found = []
    for row in rows:
        secret = environ.get(row.env, "")
        given = environ.get(row.base_url_env, "").strip() if row.base_url_env else ""
        upstream = given or row.public
        if not secret or upstream is None or not _is_http_url(upstream):
            continue
        found.append(Credential(row.env, row.style, upstream, row.base_url_env or None, secret))
    return found


def _is_http_url(text: str) -> bool:
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _credential(
    env: str, style: str, upstream: str, environ: Mapping[str, str], source: str
) -> Credential:
    if not _ENV_NAME.fullmatch(env):
        raise CredentialError(f"{source}: {env!r} is not an environment variable name")
    if style not in STYLES:
        raise CredentialError(
            f"{source}: unknown style {style!r} for {env}: use one of {', '.join(STYLES)}"
        )
    if not _is_http_url(upstream):
        raise CredentialError(
            f"{source}: the upstream of {env} must be an http:// or https:// URL with a host"
        )
    secret = environ.get(env, "")
    if not secret:
        raise CredentialError(f"{source}: {env} is not set (or empty): set it or drop the entry")
    return Credential(env, style, upstream, None, secret)


def parse_credential_option(text: str, environ: Mapping[str, str], *, source: str) -> Credential:
    """``--credential ENV,STYLE,UPSTREAM`` for a custom runner."""
    parts = text.split(",", 2)
    if len(parts) != 3:
        raise CredentialError(
            f"{source}: expected ENV,STYLE,UPSTREAM (three parts, comma-separated)"
        )
    env, style, upstream = (p.strip() for p in parts)
    return _credential(env, style, upstream, environ, source)


def credential_from_config(entry: object, environ: Mapping[str, str], *, source: str) -> Credential:
    """One ``credentials:`` entry of the config: a mapping of exactly ``env``, ``header`` (the
    style) and ``upstream``, each a string."""
    if not isinstance(entry, Mapping):
        raise CredentialError(f"{source}: expected a mapping with env, header and upstream")
    unknown = sorted(str(k) for k in entry if k not in _CONFIG_KEYS)
    if unknown:
        raise CredentialError(f"{source}: unknown key {unknown[0]!r}: use env, header, upstream")
    values = []
    for key in _CONFIG_KEYS:
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            raise CredentialError(f"{source}.{key}: expected a non-empty string")
        values.append(value.strip())
    return _credential(values[0], values[1], values[2], environ, source)


def proxied_credentials(
    options: Sequence[str], entries: Sequence[object], environ: Mapping[str, str]
) -> tuple[Credential, ...]:
    """A custom runner's credentials: ``--credential`` options and config ``credentials:``
    entries (InvalidInput, exit 5, naming the first bad one)."""
    try:
        found = [parse_credential_option(t, environ, source="--credential") for t in options]
        found += [
            credential_from_config(entry, environ, source=f"config credentials[{i}]")
            for i, entry in enumerate(entries)
        ]
    except CredentialError as exc:
        raise InvalidInput(str(exc)) from None
    return tuple(found)


def _distinct(credentials: Sequence[Credential]) -> list[Credential]:
    seen: set[str] = set()
    kept = []
    for credential in credentials:
        if credential.env not in seen:
            seen.add(credential.env)
            kept.append(credential)
    return kept


class CredentialProxy:
    """The proxies of one engine run, one loopback server per credential, all under one random
    path prefix. Start before the first invocation, close after the last (or use ``with``)."""

    def __init__(self, credentials: Sequence[Credential], meter: Meter | None = None) -> None:
        self._credentials = _distinct(credentials)
        self._meter = meter
        # One secret prefix per credential: inside a contained sandbox every proxy is reached
        # at the same address, told apart by its prefix.
        self._prefixes = {c.env: secrets.token_hex(16) for c in self._credentials}
        self._servers: list[tuple[Credential, ProxyServer]] = []

    @property
    def names(self) -> list[str]:
        """The proxied variable names (for the report's ``sandbox.proxied``)."""
        return [c.env for c in self._credentials]

    def start(self) -> None:
        """Start one server per credential (idempotent)."""
        if self._servers:
            return
        try:
            for credential in self._credentials:
                upstream = Upstream.from_url(
                    credential.upstream, credential.style, credential.secret
                )
                server = ProxyServer(self._prefixes[credential.env], upstream, self._meter)
                server.start()
                self._servers.append((credential, server))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop every server and drop open connections."""
        servers, self._servers = self._servers, []
        for _, server in servers:
            server.close()

    def url(self, env: str, inside: str | None = None) -> str:
        """The proxy URL that stands for ``env`` (after :meth:`start`): on the engine's
        loopback, or under ``inside`` (a contained sandbox's way out)."""
        for credential, server in self._servers:
            if credential.env == env:
                base = inside or f"http://127.0.0.1:{server.port}"
                return f"{base}/{self._prefixes[env]}"
        raise KeyError(env)

    def routes(self) -> dict[str, Route]:
        """Prefix → where the egress proxy passes a contained sandbox's requests under it."""
        found = {}
        for credential, server in self._servers:
            parts = urllib.parse.urlsplit(credential.upstream)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            found[self._prefixes[credential.env]] = Route(server.port, parts.hostname or "", port)
        return found

    def child_environment(self, inside: str | None = None) -> dict[str, str]:
        """What the child gets instead of the keys: the placeholder, ``SKILL_EVALS_PROXY_<ENV>``
        and, for built-in rows, the base-URL variable (the first proxied row of a provider wins
        when several share it); the URLs under ``inside`` for a contained sandbox."""
        env: dict[str, str] = {}
        for credential, _server in self._servers:
            url = self.url(credential.env, inside)
            env[credential.env] = PLACEHOLDER
            env[PROXY_VARIABLE_PREFIX + credential.env] = url
            if credential.base_url_env and credential.base_url_env not in env:
                env[credential.base_url_env] = url
        return env

    def __enter__(self) -> CredentialProxy:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
