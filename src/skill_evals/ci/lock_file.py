"""The lock file (docs/ci.md#the-lock-file): every skill's fingerprint (and the routing
entry's) written as stable JSON, and read back bounded and checked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from .fingerprint import SkillState
from .untrusted import load_json_file

MAX_LOCK_BYTES = 50_000_000
LOCK_VERSION = 1


def lock_document(
    states: Iterable[SkillState], routing: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The lock file's JSON for the given (fingerprinted) states, and the routing entry's
    fingerprint when the config has one (ci/routing.py)."""
    skills: dict[str, Any] = {}
    for state in states:
        if state.fingerprint is None:
            raise InvalidInput(f"{state.path}: cannot fingerprint this skill: {state.error}")
        skills[state.path] = {
            "name": state.name,
            "fingerprint": state.fingerprint,
            "directorySha256": state.directory_sha256,
            "cases": state.location.cases,
            "casesSha256": state.cases_sha256,
        }
    doc: dict[str, Any] = {"version": LOCK_VERSION, "tool": "skill-evals", "skills": skills}
    if routing is not None:
        doc["routing"] = dict(routing)
    return doc


def render_lock(states: Iterable[SkillState], routing: Mapping[str, Any] | None = None) -> str:
    """Lock file text: stable key order and a final newline, so diffs stay readable."""
    return json.dumps(lock_document(states, routing), indent=2, sort_keys=True) + "\n"


def read_lock_routing(path: Path) -> str | None:
    """The routing fingerprint recorded in a lock file (None when it has none)."""
    doc = load_json_file(path, "the lock file", MAX_LOCK_BYTES)
    routing = doc.get("routing") if isinstance(doc, dict) else None
    if routing is None:
        return None
    if not isinstance(routing, dict) or not isinstance(routing.get("fingerprint"), str):
        raise InvalidInput(f"{path}: $.routing.fingerprint must be a string")
    return str(routing["fingerprint"])


def lock_fingerprints(skills: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """A lock file's skills (:func:`read_lock`) as change detection compares them: path →
    (name, fingerprint)."""
    return {path: (str(e.get("name", path)), e["fingerprint"]) for path, e in skills.items()}


def read_lock(path: Path) -> dict[str, dict[str, Any]]:
    """The ``skills`` mapping of a lock file (path → entry); InvalidInput naming the file."""
    doc = load_json_file(path, "the lock file", MAX_LOCK_BYTES)
    if not isinstance(doc, dict) or doc.get("version") != LOCK_VERSION:
        raise InvalidInput(f"{path}: not a skill-evals lock file of version {LOCK_VERSION}")
    skills = doc.get("skills")
    if not isinstance(skills, dict):
        raise InvalidInput(f"{path}: $.skills must be an object")
    for key, entry in skills.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("fingerprint"), str):
            raise InvalidInput(f"{path}: $.skills[{key!r}].fingerprint must be a string")
    return skills
