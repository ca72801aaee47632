"""Which skills a run could expose to the agent, and which of them no content can prove: a
skill whose every 200-character part also occurs in another exposed skill's ``SKILL.md`` (a
shared footer, a copied section) can be proven loaded only by a skill tool or an explicit
invocation. Said once at load by ``test``, ``ci`` and ``route`` (a warning, never a failure).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from ..suite.jsonl import MAX_FILE_BYTES
from .content import index_skills, not_unique_warnings
from .registry import builtin_agent

_NEIGHBOUR_OPTION = "--with-skill"


def runner_neighbours(command: str | None) -> list[Path]:
    """The ``--with-skill DIR`` values of a built-in agent runner command line, in order
    (relative ones as the runner resolves them: from the directory skill-evals runs in)."""
    if builtin_agent(command) is None:
        return []
    try:
        argv = shlex.split(command or "")
    except ValueError:
        return []
    found: list[Path] = []
    for index, word in enumerate(argv):
        if word == _NEIGHBOUR_OPTION and index + 1 < len(argv):
            found.append(Path(argv[index + 1]))
        elif word.startswith(_NEIGHBOUR_OPTION + "="):
            found.append(Path(word.split("=", 1)[1]))
    return found


def _skill_text(folder: Path) -> tuple[str, str] | None:
    """(name, SKILL.md text) of a skill folder, None when it cannot be read (the runner then
    reports that itself). Reads at most the engine's file bound."""
    from .base import RunnerSetupError, skill_ref

    md = folder / "SKILL.md"
    try:
        with md.open("rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_FILE_BYTES:
        return None
    text = data.decode("utf-8", errors="replace")
    try:
        ref = skill_ref(folder, text)
    except RunnerSetupError:
        return None
    return ref.name, text


def exposure_warnings(folders: Sequence[Path]) -> list[str]:
    """One warning per skill among ``folders`` with no 200 characters unique to it (naming the
    skills that hold its text); folders that cannot be read are left to the runner."""
    named: list[tuple[str, str]] = []
    seen: set[str] = set()
    for folder in folders:
        key = os.path.realpath(folder)
        if key in seen:
            continue
        seen.add(key)
        skill = _skill_text(folder)
        if skill is not None:
            named.append(skill)
    if len(named) < 2:
        return []
    return not_unique_warnings(index_skills(named))
