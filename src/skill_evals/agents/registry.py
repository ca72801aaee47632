"""The agent runners that ship, in one place: ``skill-evals runner <name>``, ``skill-evals
evidence --agent``, the docs index and the consistency tests all enumerate this list.

Adding an agent = one module implementing :class:`~.protocol.Agent` (with ``PLUGIN = <instance>``)
plus one :class:`Entry` here; no other agent's module changes. Modules are imported only when
used, so ``skill-evals --help`` stays fast.
"""

from __future__ import annotations

import importlib
import os
import re
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
    package: str  # the agent's npm package
    # The release the end-to-end tests run (the pin in .ci/agents/package.json). The tested
    # range runs from it to ``tested_through`` (inclusive), by default every later release of
    # the same major.minor; it widens only when the tests ran on those versions (the agent's
    # page records it).
    tested: str
    node: str | None  # ``engines.node`` of the tested release (None: it declares none)
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

    tested_through: str | None = None
    # What is known of the Node it needs when the package declares no ``engines.node``
    # (shown by ``skill-evals runner --help`` instead of "any Node").
    node_note: str | None = None

    @property
    def tested_range(self) -> str:
        """``2.1.328 – 2.1.x`` (or up to ``tested_through``)."""
        low = self.tested
        high = self.tested_through or ".".join(low.split(".")[:2]) + ".x"
        return f"{low} – {high}"

    @property
    def node_label(self) -> str | None:
        """The lowest Node the tested release installs on: ``22`` for ``>=22.0.0``, ``20.6``
        for ``>=20.6.0``; None when it needs no Node."""
        if self.node is None:
            return None
        parts = [p for p in re.split(r"[^0-9]+", self.node) if p][:3]
        while len(parts) > 1 and int(parts[-1]) == 0:
            parts.pop()
        return ".".join(str(int(p)) for p in parts)

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
        package="@anthropic-ai/claude-code",
        tested="2.1.328",
        node=">=22.0.0",
        catalog=True,
        works=True,
    ),
    Entry(
        "codex",
        "codex",
        "Codex (`codex exec --json`), isolated.",
        "codex.md",
        package="@openai/codex",
        tested="0.169.0",
        node=">=16",
        catalog=True,
        works=True,
    ),
    Entry(
        "pi",
        "pi",
        "pi (`pi --mode json --no-skills`), isolated.",
        "pi.md",
        package="@mariozechner/pi-coding-agent",
        tested="0.73.1",
        node=">=20.6.0",
        catalog=True,
        works=True,
    ),
    Entry(
        "opencode",
        "opencode",
        "OpenCode (`opencode run --format json`), isolated.",
        "opencode.md",
        package="opencode-ai",
        tested="1.18.33",
        node=None,
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
        package="@google/gemini-cli",
        tested="0.61.0",
        node=">=20",
        bundled_skills=("skill-creator", "antigravity-support"),
        catalog=True,
        works=True,
    ),
    Entry(
        "copilot",
        "copilot",
        "GitHub Copilot CLI (`copilot --output-format json`, offline, your provider), isolated.",
        "copilot.md",
        package="@github/copilot",
        tested="1.0.102",
        # 1.0.102 declares no engines.node; its npm loader starts a native binary and ran on
        # Node 20.20 in the end-to-end tests (GitHub's install page asks for Node 22).
        node=None,
        node_note="no engines.node; ran on Node 20, GitHub asks for 22",
        bundled_skills=("customize-cloud-agent", "discover-resources", "github-pr-media"),
        catalog=True,
        works=True,
    ),
    Entry(
        "qwen",
        "qwen",
        "Qwen Code (`qwen --output-format stream-json`), isolated.",
        "qwen.md",
        package="@qwen-code/qwen-code",
        tested="0.24.4",
        node=">=22.0.0",
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
