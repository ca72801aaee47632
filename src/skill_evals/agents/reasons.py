"""A runner's own reasons: what went wrong in words a user can act on, and whether running the
same invocation again may help (the engine's ``--retries`` reruns only retryable failures).

Every reason holds only what the runner itself knows — an HTTP status, an error *type* the API
names, an option — never the prompt, the answer, the agent's stderr or the API's error message.
One documented exception: an agent that says it has no credentials ("Not logged in") is quoted,
cut to ``AGENT_TEXT`` characters with control and invisible characters escaped, because its own
words are what tells the user which login it wants.
"""

from __future__ import annotations

import re

from ..escaping.terminal import terminal_safe
from .base import RunnerError

_STATUS = re.compile(r"(?<![\d.])([1-5]\d\d)(?![\d.])")
_TYPE = re.compile(r"[a-z][a-z0-9_]{0,39}")
_SCAN = 500  # characters of an agent's error text looked at for a status


AGENT_TEXT = 120  # characters of an agent's own "no credentials" text quoted in a reason
# What an agent says when it has no usable credentials (Claude Code: "Not logged in · Please run
# /login", "Invalid API key · Fix external API key"; Codex, Gemini CLI, OpenCode: "API key",
# "credentials", "OAuth token" in their errors; any OAuth wording: "OAuth access token expired").
_NO_CREDENTIALS = re.compile(
    r"not logged in|/login\b|please log ?in|invalid api[ _-]?key|api[ _-]?key"
    r"|oauth\b|credentials?\b|not signed in|(?:log ?in|sign in) again|login required",
    re.IGNORECASE,
)


def names_credentials(text: str) -> bool:
    """Does an agent's error text say it has no usable login, API key or credentials?"""
    return bool(_NO_CREDENTIALS.search(text[:_SCAN]))


# Anything shaped like a key or token in a quoted text ("Incorrect API key provided: sk-…"):
# a run of 20+ key characters, or what follows a key prefix.
_SECRET_LIKE = re.compile(r"\b(?:sk|pk|rk|key|tok)[-_][A-Za-z0-9_\-*.]{4,}|[A-Za-z0-9_\-]{20,}")


def quoted(text: str, limit: int = AGENT_TEXT) -> str:
    """An agent's own text for a reason: whitespace collapsed, anything shaped like a key
    replaced by ``[redacted]``, control and invisible characters escaped (``\\uXXXX``), at most
    ``limit`` characters (cut with ``…``)."""
    flat = _SECRET_LIKE.sub("[redacted]", " ".join(text[: limit * 4].split()))
    safe = terminal_safe(flat)
    return safe if len(safe) <= limit else safe[: limit - 1] + "…"


def no_credentials(text: str, key_variable: str) -> RunnerError:
    """The reason of an agent that could not log in: final (a rerun fails the same way)."""
    said = quoted(text) or "no text"
    return RunnerError(
        f"not logged in / no credentials: {said}; set {key_variable} (or log in)", False
    )


# The credential proxy's word for an upstream it could not reach (its 502 body), as the
# agent's error text carries it: where (scheme, host, port) and why.
_UNREACHABLE = re.compile(
    r"the model API at (https?://[A-Za-z0-9.\-\[\]:]{1,300}) is unreachable "
    r"\((connection refused|timed out|name not resolved|connection failed)\)"
)


def unreachable(text: str) -> RunnerError | None:
    """The reason of a run whose model API the credential proxy could not reach, when the
    agent's error text carries the proxy's words: ``the model API at <scheme://host:port> is
    unreachable (<cause>)``; retryable only when it timed out. None for any other text."""
    match = _UNREACHABLE.search(text[:4000])
    if match is None:
        return None
    origin, cause = match.groups()
    return RunnerError(
        f"the model API at {origin} is unreachable ({cause}); check the provider's base URL "
        "variable and the network",
        cause in ("timed out", "connection failed"),
    )


def status_in(text: str, *, anchored: bool = False) -> int | None:
    """The HTTP status an agent's error text names ("unexpected status 429", "429 Too Many
    Requests", "last status: 503"); with ``anchored``, only a status at the very start."""
    head = text[:_SCAN]
    if anchored:
        head = head.lstrip()[:3]
    match = _STATUS.search(head)
    return int(match.group(1)) if match else None


def api_failure(status: int | None, kind: str | None = None, hint: str = "") -> RunnerError:
    """The reason for a model request that failed with HTTP ``status`` (None: no response at all)
    and the API's error ``kind`` (e.g. ``rate_limit_error``; anything else is left out).

    Auth refused (401/403) and other refused requests (4xx) are final; rate limits (429),
    overload (529), server errors (5xx), timeouts (408) and no response at all are retryable."""
    label = f" {kind}" if kind and _TYPE.fullmatch(kind) else ""
    after = f"; {hint}" if hint else ""
    if status in (401, 403):
        return RunnerError(f"auth refused by the model API (HTTP {status}{label}){after}")
    if status == 429:
        return RunnerError(f"rate limited by the model API (HTTP 429{label})", True)
    if status == 529:
        return RunnerError(f"the model API is overloaded (HTTP 529{label})", True)
    if status is not None and 500 <= status <= 599:
        return RunnerError(f"server error from the model API (HTTP {status}{label})", True)
    if status == 408:
        return RunnerError(f"the model API timed out (HTTP 408{label})", True)
    if status is not None:
        return RunnerError(f"the model API refused the request (HTTP {status}{label}){after}")
    return RunnerError(
        f"no answer from the model API (connection refused, dropped or timed out{label}){after}",
        True,
    )


def turn_limit(limit: int | None) -> RunnerError:
    """The agent stopped at its turn limit before answering (final: a rerun stops there too)."""
    option = f" (--max-turns {limit})" if limit is not None else ""
    return RunnerError(f"agent turn limit reached{option} before a final answer; raise --max-turns")
