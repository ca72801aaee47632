"""Which configuration decides how the gate runs (docs/ci.md#what-a-pull-request-may-change).

The command line, the action's inputs, the job's environment and — on a pull request — the
configuration at the base commit are trusted; what the pull request brings is data. Policy keys
(the runner, judges, sandbox, credentials, cache, gates, budgets …) are therefore read from the
base commit's config file on ``pull_request`` and ``pull_request_target`` events; the head's
config supplies only data (which skills, where their cases are, routing data). A head value of
a policy key that differs is ignored and named.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# Every key whose value decides how the work under test is run or judged. Keys other workers
# add later (network, judges, drafters …) are listed here already, so they are policy from the
# start; any key named min-* or max-* is a gate or a budget, hence policy too.
POLICY_KEYS: frozenset[str] = frozenset(
    {
        "runner",
        "judge",
        "judges",
        "judge-timeout-ms",
        "judge-fallback",
        "judge-fallback-margin",
        "proposer",
        "drafter",
        "draft",
        "credentials",
        "sandbox",
        "sandbox-paths",
        "network",
        "network-allow",
        "cache",
        "cache-max-age",
        "history",
        "require-env",
        "gates",
        "compare",
        "improve",
        "improve-options",
        "budget",
        "budget-total",
        "trials",
        "jobs",
        "timeout-ms",
        "max-bytes",
        "retries",
        "seed",
        "bootstrap-samples",
        "arms",
        "stop-when-settled",
        "keep-going",
        "allow-missing-cases",
        "require-verified-isolation",
        "include-outputs",
        "strict",
        "validate",
        "evidence",
        "listing",
        "fail-on-finding",
    }
)

# What the pull request may decide: what is tested, not how. `overrides` and `routing` hold both
# (their policy keys are taken from the base one by one).
DATA_KEYS: frozenset[str] = frozenset({"skills", "cases", "lock", "agent", "overrides", "routing"})
POLICY_CHANGE = "the pull request changes `"  # how each ignored policy change is said
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_ABSENT = object()


def is_policy(key: str) -> bool:
    """True for a key the trusted side decides (POLICY_KEYS, and every ``min-*`` / ``max-*``)."""
    return key in POLICY_KEYS or key.startswith(("min-", "max-"))


def trusted_raw(
    head: Mapping[str, Any], base: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The configuration to run with: ``head``'s data keys with ``base``'s policy keys, and
    the names of the policy keys whose head value differs (in the order found)."""
    merged: dict[str, Any] = {}
    changed: list[str] = []
    for key in dict.fromkeys([*head, *base]):
        if key == "overrides":
            merged[key] = _overrides(head.get(key, {}), base.get(key, {}), changed)
        elif key == "routing":
            routing = _routing(head.get(key), base.get(key), changed)
            if routing is not None:
                merged[key] = routing
        elif key == "skills":
            # In scope when either side selects it: a pull request cannot narrow the scope.
            if key in head and key in base:
                merged[key] = list(dict.fromkeys([*base[key], *head[key]]))
        elif is_policy(key):
            _policy_value(key, head, base, merged, changed, key)
        elif key in head:
            merged[key] = head[key]
    return merged, changed


def _policy_value(
    key: str,
    head: Mapping[str, Any],
    base: Mapping[str, Any],
    merged: dict[str, Any],
    changed: list[str],
    shown: str,
) -> None:
    """Take ``key`` from ``base``; name it (``gates``: each gate) when ``head`` differs."""
    if key in base:
        merged[key] = base[key]
    head_value, base_value = head.get(key, _ABSENT), base.get(key, _ABSENT)
    if head_value == base_value:
        return
    if key == "gates":
        head_gates = head_value if isinstance(head_value, dict) else {}
        base_gates = base_value if isinstance(base_value, dict) else {}
        for gate in dict.fromkeys([*head_gates, *base_gates]):
            if head_gates.get(gate, _ABSENT) != base_gates.get(gate, _ABSENT):
                changed.append(f"{shown}.{gate}")
    else:
        changed.append(shown)


def _overrides(
    head: Mapping[str, Any], base: Mapping[str, Any], changed: list[str]
) -> dict[str, Any]:
    """Per skill: the head's data keys with the base's policy keys."""
    merged: dict[str, Any] = {}
    for name in dict.fromkeys([*head, *base]):
        shown = f"overrides.{name}" if _PLAIN_NAME.match(name) else "overrides (a skill's entry)"
        head_entry, base_entry = head.get(name, {}), base.get(name, {})
        entry: dict[str, Any] = {}
        for key in dict.fromkeys([*head_entry, *base_entry]):
            if is_policy(key):
                _policy_value(key, head_entry, base_entry, entry, changed, f"{shown}.{key}")
            elif key in head_entry:
                entry[key] = head_entry[key]
        merged[name] = entry
    return merged


def _routing(
    head: Mapping[str, Any] | None, base: Mapping[str, Any] | None, changed: list[str]
) -> dict[str, Any] | None:
    """The head's routing entry (data) with the base's routing gates. Removing the entry
    cannot take routing out of scope (as with ``skills``): the base's entry holds then."""
    if head is None:
        if base is None:
            return None
        changed.append("routing")
        return dict(base)
    merged = {k: v for k, v in head.items() if k != "gates"}
    base_entry = base or {}
    _policy_value("gates", head, base_entry, merged, changed, "routing.gates")
    return merged


def changed_message(key: str, config_name: str) -> str:
    """The line naming one ignored policy change (never its values)."""
    return f"{POLICY_CHANGE}{key}` in {config_name}; the base commit's value holds until it merges"
