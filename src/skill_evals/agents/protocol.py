"""The one interface every agent module implements (see docs/agents/README.md, "Adding an agent").

The shared scaffolding (:mod:`.scaffold`) does everything that is the same for every agent:
finding the binary, checking skill names, the fresh workspace, the allowlisted environment,
running the process with the prompt on stdin, saving the transcript and printing the result
line. An agent module only says what differs: how to offer skills and build the command
(:meth:`Agent.prepare`) and how to read its own JSON event stream (:meth:`Agent.finish`,
:meth:`Agent.tool_calls`, :meth:`Agent.skill_tool`, :meth:`Agent.explicit`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .base import AgentInvocation, AgentOptions, SkillRef
from .evidence import Event
from .proof import TranscriptReader
from .workspace import Workspace


@dataclass(frozen=True)
class RunSetup:
    """One invocation as the scaffold prepared it, handed to :meth:`Agent.prepare` and
    :meth:`Agent.finish`."""

    invocation: AgentInvocation
    options: AgentOptions
    binary: str  # the agent executable (``--bin`` or found on PATH)
    tested: SkillRef
    neighbours: tuple[SkillRef, ...]  # --with-skill, offered in both variants
    fixture_skills: tuple[SkillRef, ...]  # skills the --fixture brings in ``Agent.skill_folders``
    workspace: Workspace
    caller_env: Mapping[str, str]  # the runner's own environment (read auth/endpoints here)
    env: dict[str, str]  # the agent's environment so far (allowlisted); prepare may add to it

    @property
    def offered(self) -> list[SkillRef]:
        """The skills the runner installs: the tested one (``with`` only) and the neighbours."""
        tested = [self.tested] if self.invocation.variant == "with" else []
        return [*tested, *self.neighbours]

    @property
    def aliases(self) -> dict[str, str]:
        """``{folder name: skill name}`` for fixture skills whose folder is named differently."""
        return {r.path.name: r.name for r in self.fixture_skills if r.path.name != r.name}

    @property
    def known(self) -> frozenset[str]:
        """Every skill name the run could load (the tested one in both variants, so a leak into
        ``without`` is reported), plus fixture folder aliases."""
        names = [self.tested.name, *(r.name for r in (*self.neighbours, *self.fixture_skills))]
        return frozenset([*names, *self.aliases])


@dataclass
class Launch:
    """How to start the agent for one invocation."""

    argv: list[str]  # never holds the prompt (argv is visible to every local user)
    stdin: bytes  # the prompt, in the form the agent reads it
    # Called with each JSON event as it arrives; True ends the agent there (pi's emulated
    # --max-turns). The scaffold then reports ``Finished.stopped``.
    stop_after: Callable[[Event], bool] | None = None
    # Called once the agent has exited, before the workspace goes: JSON lines appended to the
    # transcript (records the agent keeps only in its own files, e.g. Codex's session file).
    epilogue: Callable[[], bytes] | None = None


@dataclass(frozen=True)
class Finished:
    """How the agent process ended."""

    status: int  # its exit status (negative: killed by that signal)
    duration_ms: float  # measured around the process
    stopped: bool  # ended by ``Launch.stop_after``


@dataclass
class Outcome:
    """What an agent's transcript says besides the loads (those follow from the shared rules of
    :mod:`.proof` applied to :meth:`Agent.tool_calls`)."""

    output: str
    exit_code: int
    meta: dict[str, float] = field(default_factory=dict)
    # Skills the agent itself listed as available (e.g. Claude Code's init event): printed on
    # stderr with the offered ones, and resolvable by an explicit invocation; never a load.
    offered: list[str] = field(default_factory=list)


class Agent(TranscriptReader, Protocol):
    """An agent plug-in: a :class:`~.proof.TranscriptReader` (``tool_calls``, ``skill_tool``,
    ``explicit``) that can also run. Modules define one instance ``PLUGIN`` and a registry
    entry."""

    @property
    def name(self) -> str:
        """The runner name: ``skill-evals runner <name>``, ``evidence --agent <name>``."""
        ...

    @property
    def binary(self) -> str:
        """The executable looked up on PATH when ``--bin`` is not given."""
        ...

    @property
    def environment(self) -> tuple[str, ...]:
        """The caller's variables the agent needs besides the base allowlist (see
        :func:`~.environment.agent_env`): its auth and endpoint variables, ``NAME`` or
        ``PREFIX*``. Everything else of the caller's environment is dropped."""
        ...

    @property
    def skill_folders(self) -> tuple[str, ...]:
        """Project-relative folders where the agent discovers a project's own skills (a
        ``--fixture``'s skills there are offered in both variants; one with an offered name is
        refused)."""
        ...

    def check(self, options: AgentOptions, env: Mapping[str, str]) -> None:
        """Refuse options or environment this agent cannot honour (raise RunnerSetupError),
        before anything is created."""
        ...

    def prepare(self, setup: RunSetup) -> Launch:
        """Offer ``setup.offered`` the agent's native way (or through MCP), write its config into
        the workspace, add its variables to ``setup.env`` and return the command."""
        ...

    def finish(self, events: Sequence[Event], setup: RunSetup, run: Finished) -> Outcome:
        """Read the transcript: output, task exit code, meta. Raise RunnerSetupError when the
        run is void (no result, the model API failed)."""
        ...
