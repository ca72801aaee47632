"""What every built-in runner shares: reading the invocation the engine hands over (stdin prompt
and EVALGATE_SKILL_* variables), a fresh isolated workspace per invocation, and printing the one
line of the runner contract.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Literal

from ..skill import parse_frontmatter

Variant = Literal["with", "without"]
Delivery = Literal["native", "mcp"]


class RunnerSetupError(Exception):
    """The runner cannot do its job (bad environment, missing binary, …).

    The runner prints ``str(error)`` on stderr and exits 2, which the engine records as a runner
    failure. The message must not contain the prompt."""


@dataclass(frozen=True)
class AgentInvocation:
    """One (case, trial, variant) as handed over by the engine."""

    variant: Variant
    skill_dir: Path
    case_id: str
    trial: int
    prompt: str


@dataclass(frozen=True)
class AgentOptions:
    """Options shared by the agent runners (``skill-evals runner <agent> ...``)."""

    model: str | None = None
    max_turns: int | None = None
    with_skills: tuple[Path, ...] = ()
    fixture: Path | None = None
    bin: str | None = None
    delivery: Delivery = "native"
    keep_workspace: bool = False  # debugging aid: leave the temp dirs behind and say where


@dataclass
class AgentResult:
    """The runner contract object (docs/runner-contract.md)."""

    variant: Variant
    invoked_skills: list[str]
    output: str
    exit_code: int
    meta: dict[str, float] = field(default_factory=dict)

    def to_line(self) -> str:
        """The single JSON line the engine expects on stdout."""
        obj: dict[str, object] = {
            "variant": self.variant,
            "invokedSkills": self.invoked_skills,
            "output": self.output,
            "exitCode": self.exit_code,
        }
        if self.meta:
            obj["meta"] = self.meta
        return json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n"


@dataclass(frozen=True)
class SkillRef:
    """A skill folder and the name agents know it by."""

    name: str
    path: Path
    description: str


def skill_ref(path: Path) -> SkillRef:
    """Read a skill folder's name (frontmatter ``name``, else the folder name) and description."""
    path = path.resolve()
    md = path / "SKILL.md"
    try:
        text = md.read_text(encoding="utf-8")
    except OSError as exc:
        raise RunnerSetupError(f"{md}: cannot read SKILL.md ({exc.strerror})") from exc
    try:
        front, _ = parse_frontmatter(text)
    except ValueError as exc:
        raise RunnerSetupError(f"{md}: invalid frontmatter ({exc})") from exc
    name = front.get("name")
    desc = front.get("description")
    return SkillRef(
        name=name if isinstance(name, str) and name else path.name,
        path=path,
        description=desc if isinstance(desc, str) else "",
    )


def read_invocation(
    stdin: BinaryIO | None = None, env: Mapping[str, str] | None = None
) -> AgentInvocation:
    """Read the prompt (UTF-8, to EOF) and the EVALGATE_SKILL_* variables."""
    env = os.environ if env is None else env
    stream = sys.stdin.buffer if stdin is None else stdin
    variant = env.get("EVALGATE_SKILL_VARIANT", "")
    if variant not in ("with", "without"):
        raise RunnerSetupError(
            "EVALGATE_SKILL_VARIANT must be 'with' or 'without'; run this through skill-evals test"
        )
    skill_dir = env.get("EVALGATE_SKILL_DIR", "")
    if not skill_dir or not Path(skill_dir).is_dir():
        raise RunnerSetupError("EVALGATE_SKILL_DIR must name the skill directory")
    trial_text = env.get("EVALGATE_SKILL_TRIAL", "1")
    if not trial_text.isdigit():
        raise RunnerSetupError("EVALGATE_SKILL_TRIAL must be a positive integer")
    try:
        prompt = stream.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunnerSetupError("the prompt on stdin is not valid UTF-8") from exc
    return AgentInvocation(
        variant="with" if variant == "with" else "without",
        skill_dir=Path(skill_dir).resolve(),
        case_id=env.get("EVALGATE_SKILL_CASE_ID", ""),
        trial=int(trial_text),
        prompt=prompt,
    )


WORKSPACE_PREFIX = "skill-evals-run-"
OWNER_FILE = ".skill-evals-owner"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_workspaces(tmp: Path | None = None) -> list[Path]:
    """Remove workspaces left behind by runners that were killed (their owner process is gone).

    Returns the removed paths. Workspaces kept with --keep-workspace have no owner file and
    are never swept."""
    removed: list[Path] = []
    base = Path(tempfile.gettempdir()) if tmp is None else tmp
    for candidate in base.glob(WORKSPACE_PREFIX + "*"):
        try:
            pid = int((candidate / OWNER_FILE).read_text(encoding="ascii"))
        except (OSError, ValueError):
            continue
        if pid != os.getpid() and not _alive(pid):
            shutil.rmtree(candidate, ignore_errors=True)
            removed.append(candidate)
    return removed


class Workspace:
    """A fresh temporary project dir and agent home per invocation, removed on exit.

    ``root/project`` is the agent's working directory (``--fixture`` copied in);
    ``root/home`` is HOME and the agent's config dir parent, so no user/global skill, setting or
    prior session is visible; ``root/tmp`` is the agent's TMPDIR."""

    def __init__(self, fixture: Path | None = None, keep: bool = False) -> None:
        self._fixture = fixture
        self._keep = keep
        sweep_stale_workspaces()
        self.root = Path(tempfile.mkdtemp(prefix=WORKSPACE_PREFIX))
        # The engine kills a timed-out runner's whole process group with SIGKILL, so this
        # process cannot clean up then; the owner file lets the next runner sweep it.
        (self.root / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
        self.project = self.root / "project"
        self.home = self.root / "home"
        # The agent's TMPDIR: its temporary files go with the workspace, no run sees another's.
        self.tmp = self.root / "tmp"

    def __enter__(self) -> Workspace:
        try:
            if self._fixture is not None:
                if not self._fixture.is_dir():
                    raise RunnerSetupError(f"--fixture {self._fixture}: not a directory")
                shutil.copytree(self._fixture, self.project, symlinks=True)
            else:
                self.project.mkdir()
            self.home.mkdir()
            self.tmp.mkdir()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._keep:
            (self.root / OWNER_FILE).unlink(missing_ok=True)
            print(f"skill-evals: workspace kept at {self.root}", file=sys.stderr)
        else:
            self.cleanup()

    def cleanup(self) -> None:
        """Remove the whole workspace."""
        shutil.rmtree(self.root, ignore_errors=True)

    def install_skill(self, ref: SkillRef, skills_root: Path) -> Path:
        """Copy a skill folder to ``skills_root/<name>/`` and return that path."""
        dest = skills_root / ref.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(ref.path, dest, symlinks=True)
        return dest


# Variables that would point an agent at the user's real config, skills or sessions.
_LEAKY_VARS = (
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "PI_CODING_AGENT_DIR",
    "PI_CODING_AGENT_SESSION_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
)


def isolated_env(base: Mapping[str, str], home: Path) -> dict[str, str]:
    """The caller's environment (auth variables included) with HOME and the XDG dirs moved into
    the fresh ``home`` and every agent-config pointer removed; the EVALGATE_* vars are dropped."""
    env = {k: v for k, v in base.items() if k not in _LEAKY_VARS and not k.startswith("EVALGATE_")}
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    env["XDG_STATE_HOME"] = str(home / ".local" / "state")
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    return env


def find_binary(explicit: str | None, name: str, env: Mapping[str, str]) -> str:
    """The agent binary: ``--bin`` if given, else ``name`` on PATH."""
    if explicit:
        if os.sep in explicit:
            if not os.access(explicit, os.X_OK):
                raise RunnerSetupError(f"--bin {explicit}: not an executable file")
            return explicit
        found = shutil.which(explicit, path=env.get("PATH"))
    else:
        found = shutil.which(name, path=env.get("PATH"))
    if not found:
        raise RunnerSetupError(
            f"'{explicit or name}' not found on PATH; install it or pass --bin PATH"
        )
    return found
