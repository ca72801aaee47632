"""The variables no child of the engine ever gets, in every sandbox mode and with any runner:
the job's GitHub token and the files and endpoints through which a process could act on the
job's later steps (docs/sandbox.md), and the engine's own credential variables
(``SKILL_EVALS_*`` holding a key) of a runner other than the child's. The engine itself keeps
them (its own outputs, summary and comment work as before).
"""

from __future__ import annotations

from collections.abc import Mapping

WITHHELD = frozenset(
    {
        "GITHUB_TOKEN", "GH_TOKEN", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT",
        "GITHUB_STEP_SUMMARY", "GITHUB_STATE", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_RUNTIME_URL",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_CACHE_URL",
        "ACTIONS_RESULTS_URL",
    }
)  # fmt: skip


def without_job_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the :data:`WITHHELD` variables."""
    return {name: value for name, value in env.items() if name not in WITHHELD}


ENGINE_PREFIX = "SKILL_EVALS_"
_CREDENTIAL_WORDS = (
    "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "APIKEY", "PASSWD", "PRIVATE_KEY", "WEBHOOK",
)  # fmt: skip
# Name endings of credentials: SMTP_PASS, NPM_AUTH, GH_PAT, SENTRY_DSN (its key inside), …
_CREDENTIAL_ENDINGS = ("_KEY", "_KEYS", "_PASS", "_AUTH", "_PAT", "_DSN")


def credential_like(name: str) -> bool:
    """Whether a variable name looks like it holds a credential: it contains TOKEN, SECRET,
    PASSWORD, CREDENTIAL, APIKEY, PASSWD, PRIVATE_KEY or WEBHOOK, or ends in _KEY, _KEYS,
    _PASS, _AUTH, _PAT or _DSN (any case)."""
    upper = name.upper()
    return upper.endswith(_CREDENTIAL_ENDINGS) or any(w in upper for w in _CREDENTIAL_WORDS)


def engine_credential(name: str) -> bool:
    """Whether ``name`` is one of the engine's own credential variables (``SKILL_EVALS_*``
    holding a key, e.g. ``SKILL_EVALS_PI_API_KEY``): it belongs to one built-in runner."""
    return name.startswith(ENGINE_PREFIX) and credential_like(name)


def without_foreign_keys(env: Mapping[str, str], own: frozenset[str]) -> dict[str, str]:
    """``env`` without the engine's credential variables other than ``own`` (the child's
    runner's: a built-in agent's allowlist, a custom runner's ``--credential`` names)."""
    return {k: v for k, v in env.items() if k in own or not engine_credential(k)}
