"""The agent runners that ship, in one place: ``skill-evals runner <name>``, ``skill-evals
evidence --agent``, the docs index and the consistency tests all enumerate this list.

Adding an agent = one module implementing :class:`~.protocol.Agent` (with ``PLUGIN = <instance>``)
plus one :class:`Entry` here; no other agent's module changes. Modules are imported only when
used, so ``skill-evals --help`` stays fast.
"""

from __future__ import annotations

import importlib
import os
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the protocol imports the heavier modules; --help must not
    from .protocol import Agent


@dataclass(frozen=True)
class Entry:
    """One shipped agent runner."""

    name: str  # the runner name, e.g. "claude-code"
    module: str  # the module under skill_evals.agents defining PLUGIN
    summary: str  # one line for `skill-evals runner --help`
    doc: str  # its page under docs/agents/
    # Options only this runner takes, beyond the shared ones (names as on the command line).
    extra_options: tuple[str, ...] = ()
    # Skills the agent ships and offers in both variants: a tested skill of one of these names
    # (compared case-insensitively) is refused before anything runs (exit 5).
    bundled_skills: tuple[str, ...] = ()
    # Installs a routing run's whole catalog (SKILL_EVALS_SKILL_DIRS) the agent's native way;
    # a runner that does not is refused such a run (docs/routing.md).
    catalog: bool = False
    # Runs the agent in the engine's workspace (SKILL_EVALS_WORKSPACE) and lets it edit files
    # and run commands there; offers --read-only for the private read-only project instead.
    works: bool = False

    def load(self) -> Agent:
        """The agent plug-in (imports its module)."""
        module = importlib.import_module(f"{__package__}.{self.module}")
        plugin: Agent = module.PLUGIN
        return plugin


ENTRIES: tuple[Entry, ...] = (
    Entry(
        "claude-code",
        "claude_code",
        "Claude Code (`claude -p --verbose --output-format stream-json`), isolated.",
        "claude-code.md",
        catalog=True,
        works=True,
    ),
    Entry(
        "codex",
        "codex",
        "Codex (`codex exec --json`), isolated.",
        "codex.md",
        catalog=True,
        works=True,
    ),
    Entry(
        "pi",
        "pi",
        "pi (`pi --mode json --no-skills`), isolated.",
        "pi.md",
        catalog=True,
        works=True,
    ),
    Entry(
        "opencode",
        "opencode",
        "OpenCode (`opencode run --format json`), isolated.",
        "opencode.md",
        extra_options=("provider-config",),
        bundled_skills=("customize-opencode",),
        catalog=True,
        works=True,
    ),
    Entry(
        "gemini",
        "gemini",
        "Gemini CLI (`gemini --output-format stream-json`), isolated.",
        "gemini.md",
        bundled_skills=("skill-creator", "antigravity-support"),
        catalog=True,
        works=True,
    ),
)


def names() -> list[str]:
    """The agent names, in registry order."""
    return [entry.name for entry in ENTRIES]


def entry(name: str) -> Entry:
    """The registry entry named ``name``; ValueError for an unknown one."""
    for candidate in ENTRIES:
        if candidate.name == name:
            return candidate
    raise ValueError(f"unknown agent {name!r}; expected one of {', '.join(names())}")


def agent(name: str) -> Agent:
    """The agent plug-in named ``name``; ValueError for an unknown one."""
    return entry(name).load()


def shipped_runner(command: str | None) -> str | None:
    """The runner of a ``skill-evals runner <name>`` (or ``python -m skill_evals runner
    <name>``) command line — an agent's name or ``simulated`` — when the command is exactly
    that runner (a wrapper or shell around it is another runner); None otherwise."""
    try:
        argv = shlex.split(command or "")
    except ValueError:
        return None
    if not argv:
        return None
    program = os.path.basename(argv[0])
    if program == "skill-evals":
        rest = argv[1:]
    elif program.startswith("python") and argv[1:3] == ["-m", "skill_evals"]:
        rest = argv[3:]
    else:
        return None
    while rest and rest[0].startswith("-"):  # the group's own options, e.g. --debug
        rest = rest[1:]
    if len(rest) >= 2 and rest[0] == "runner" and rest[1] in (*names(), "simulated"):
        return rest[1]
    return None


def builtin_agent(command: str | None) -> str | None:
    """The agent of a shipped agent runner's command line (the simulation excepted); None for
    any other command."""
    runner = shipped_runner(command)
    return None if runner == "simulated" else runner
