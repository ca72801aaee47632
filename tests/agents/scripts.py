"""Scripted tool calls for the fake model servers: a model that reads skills the ways real
models do (globs, loops, ``cd``, ``../``, Python, partial reads) and the ways that only look like
reads (``ls``, ``test -f``, ``echo``, a failed ``cat … || echo``), one call per turn.

A step is ``(tool, arguments)``; string arguments may hold ``{cwd}`` (the agent's working
directory as the request shows it), ``{skill:NAME}`` (the SKILL.md path of an offered skill) and
``{skills}`` (the folder holding the offered skills)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

Step = tuple[str, dict[str, Any]]
_SKILL = re.compile(r"\{skill:([A-Za-z0-9_-]+)\}")


def fill(step: Step, cwd: str, skill_paths: Mapping[str, str]) -> Step:
    """The step with its placeholders replaced (an unknown skill becomes a missing path)."""
    some = next(iter(skill_paths.values()), f"{cwd}/skills/none/SKILL.md")
    skills = posixpath.dirname(posixpath.dirname(some))

    def sub(text: str) -> str:
        text = _SKILL.sub(
            lambda m: skill_paths.get(m.group(1), f"{skills}/{m.group(1)}/SKILL.md"), text
        )
        return text.replace("{cwd}", cwd).replace("{skills}", skills)

    tool, args = step
    return tool, {k: sub(v) if isinstance(v, str) else v for k, v in args.items()}


def shape_description(name: str) -> str:
    """The description of a skill only a scripted shape loads (it matches no prompt)."""
    return f"Shape {name} for tests."


def shape_body(name: str) -> str:
    """The SKILL.md body of such a skill."""
    return f"# {name}\n\nStep of {name}.\n"
