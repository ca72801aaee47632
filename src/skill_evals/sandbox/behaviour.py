"""What the skill made the agent do, from the network records of each invocation (the egress
proxy writes them; docs/sandbox.md, "What the skill made the agent do").

The report's ``behaviour`` block lists, per arm, the destinations its runs reached and those
they tried and were refused, and raises *findings*:

- ``new-destination``: a ``with`` (or ``baseline``) run reached or tried a host and port that no
  ``without`` run of the same suite did (only when the suite has ``without`` runs);
- ``refused-destination``: any run tried a destination the network setting refused.

The agent's own model (the credential proxy's upstream, kind ``model``) is listed but never a
finding: both arms talk to it by design.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .usage import Spent

MAX_RECORDS = 100  # network records kept per invocation; later ones are counted only
MAX_FINDING_CASES = 20  # case ids named per finding


@dataclass
class BehaviourLog:
    """The network records of one invocation: the first :data:`MAX_RECORDS`, then a count."""

    records: list[dict[str, object]] = field(default_factory=list)
    dropped: int = 0
    wire: Spent = field(default_factory=Spent)  # tokens the model's responses reported
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def spent(self, spent: Spent) -> None:
        """Add one channel's wire usage."""
        with self.lock:
            self.wire.input += spent.input
            self.wire.output += spent.output
            self.wire.responses += spent.responses
            self.wire.refused = self.wire.refused or spent.refused

    def add(self, record: dict[str, object]) -> None:
        """Keep ``record`` (or count it past the bound)."""
        with self.lock:
            if len(self.records) < MAX_RECORDS:
                self.records.append(record)
            else:
                self.dropped += 1


_CURRENT = threading.local()


@contextlib.contextmanager
def recording(log: BehaviourLog) -> Iterator[BehaviourLog]:
    """While inside, channels opened on this thread (the invocation's runner, its setup
    commands and verifiers, which run on the invocation's own thread) record into ``log``."""
    previous = getattr(_CURRENT, "log", None)
    _CURRENT.log = log
    try:
        yield log
    finally:
        _CURRENT.log = previous


def current_log() -> BehaviourLog:
    """The log of the invocation running on this thread (a throwaway one outside any)."""
    log = getattr(_CURRENT, "log", None)
    return log if isinstance(log, BehaviourLog) else BehaviourLog()


class Recorded(Protocol):
    """What :func:`behaviour_block` reads of an observation."""

    @property
    def case_id(self) -> str: ...
    @property
    def variant(self) -> str: ...
    @property
    def network(self) -> Sequence[Mapping[str, Any]]: ...


Destination = tuple[str, int]


def _count(table: dict[Destination, int], key: Destination) -> None:
    table[key] = table.get(key, 0) + 1


def _listed(table: Mapping[Destination, int]) -> list[dict[str, Any]]:
    return [
        {"host": host, "port": port, "count": count}
        for (host, port), count in sorted(table.items())
    ]


def behaviour_block(observations: Iterable[Recorded]) -> dict[str, Any]:
    """The report's ``behaviour`` block: per arm what was contacted and refused, and the
    findings (ordered by kind, host, port)."""
    contacted: dict[str, dict[Destination, int]] = {}
    refused: dict[str, dict[Destination, int]] = {}
    tried_by: dict[Destination, dict[str, set[str]]] = {}  # non-model: arm → cases
    refused_by: dict[Destination, dict[str, set[str]]] = {}
    variants: set[str] = set()
    for obs in observations:
        variants.add(obs.variant)
        if not obs.network:
            continue  # most observations contacted nothing
        for item in obs.network:
            key = (str(item.get("host", "")), int(item.get("port", 0)))
            allowed = bool(item.get("allowed"))
            _count((contacted if allowed else refused).setdefault(obs.variant, {}), key)
            if item.get("kind") == "model":
                continue
            tried_by.setdefault(key, {}).setdefault(obs.variant, set()).add(obs.case_id)
            if not allowed:
                refused_by.setdefault(key, {}).setdefault(obs.variant, set()).add(obs.case_id)
    arms = sorted(set(contacted) | set(refused))
    new = _new_destinations(tried_by) if "without" in variants else []
    findings = [*new, *_refusals(refused_by)]
    return {
        "arms": {
            arm: {
                "contacted": _listed(contacted.get(arm, {})),
                "refused": _listed(refused.get(arm, {})),
            }
            for arm in arms
        },
        "findings": findings,
    }


def _finding(kind: str, key: Destination, by_arm: Mapping[str, set[str]]) -> dict[str, Any]:
    cases = sorted(set().union(*by_arm.values()))
    return {
        "kind": kind,
        "host": key[0],
        "port": key[1],
        "arms": sorted(by_arm),
        "cases": cases[:MAX_FINDING_CASES],
    }


def _new_destinations(
    tried_by: Mapping[Destination, Mapping[str, set[str]]],
) -> list[dict[str, Any]]:
    found = []
    for key in sorted(tried_by):
        by_arm = tried_by[key]
        if "without" in by_arm:
            continue
        skilled = {arm: cases for arm, cases in by_arm.items() if arm in ("with", "baseline")}
        if skilled:
            found.append(_finding("new-destination", key, skilled))
    return found


def _refusals(refused_by: Mapping[Destination, Mapping[str, set[str]]]) -> list[dict[str, Any]]:
    return [_finding("refused-destination", key, refused_by[key]) for key in sorted(refused_by)]


def finding_text(finding: Mapping[str, Any]) -> str:
    """One line for a person: ``new destination example.com:443 (with: c1, c2)``."""
    kind = "new destination" if finding["kind"] == "new-destination" else "refused destination"
    cases = ", ".join(str(case) for case in finding["cases"])
    arms = "/".join(str(arm) for arm in finding["arms"])
    return f"behaviour: {kind} {finding['host']}:{finding['port']} ({arms}: {cases})"
