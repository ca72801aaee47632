"""The types every built-in runner shares: the invocation the engine hands over (stdin prompt
and EVALGATE_SKILL_* variables), the runner options, the skills involved and the one line of the
runner contract printed at the end.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal

from ..suite.frontmatter import name_and_description, parse_frontmatter

Variant = Literal["with", "without"]
Delivery = Literal["native", "mcp"]


class RunnerSetupError(Exception):
    """The runner cannot do its job (bad environment, missing binary, the model API failed, …).

    The runner prints :meth:`to_line` on stdout (the runner contract's own-reason line: the
    engine reports ``runner: <message>`` and, when ``retryable``, runs the invocation again),
    ``str(error)`` on stderr, and exits 2. The message must not contain the prompt, the answer
    or anything the agent printed."""

    def __init__(self, message: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable

    def to_line(self) -> str:
        """``{"runnerError": …, "retryable": …}`` and a newline."""
        line = {"runnerError": str(self), "retryable": self.retryable}
        return json.dumps(line, ensure_ascii=False) + "\n"


class RunnerError(RunnerSetupError):
    """A reason the runner reports to the engine as its own (a ``runnerError`` line on stdout,
    shown in the report; the runner exits 0 and says nothing on stderr), with whether running
    the invocation again may help (a rate limit, an overload, a server error). The message must
    not contain the prompt."""


class CatalogUnsupported(RunnerError):
    """A routing invocation (SKILL_EVALS_SKILL_DIRS) for a runner that cannot install a catalog:
    reported to the engine as the runner's own, non-retryable reason (docs/routing.md)."""


@dataclass(frozen=True)
class AgentInvocation:
    """One (case, trial, variant) as handed over by the engine."""

    variant: Variant
    skill_dir: Path
    case_id: str
    trial: int
    prompt: str
    # A routing run's whole catalog (SKILL_EVALS_SKILL_DIRS); skill_dir is then its first.
    skill_dirs: tuple[Path, ...] = ()
    # The engine's workspace for this invocation (SKILL_EVALS_WORKSPACE), None when not given.
    workspace: Path | None = None


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
    # Agent-specific (offered only by the runners whose registry entry lists the option):
    provider_config: Path | None = None  # OpenCode: a JSON file merged as its `provider` section
    # Runners that work in the engine's workspace: a private project, no edits, no commands.
    read_only: bool = False


@dataclass
class AgentResult:
    """The runner contract object (docs/runner-contract.md)."""

    variant: Variant
    invoked_skills: list[str]
    output: str
    exit_code: int
    meta: dict[str, float] = field(default_factory=dict)
    # {"skill", "state", "delivery", "source"} items: what was offered, tried and loaded.
    evidence: list[dict[str, str]] = field(default_factory=list)
    # {"name", "input", "ok"} per tool call, in call order.
    tool_calls: list[dict[str, object]] = field(default_factory=list)

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
        if self.evidence:
            obj["evidence"] = self.evidence
        if self.tool_calls:
            obj["toolCalls"] = self.tool_calls
        return json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n"


@dataclass(frozen=True)
class SkillRef:
    """A skill folder and the name agents know it by."""

    name: str
    path: Path
    description: str
    text: str = field(default="", repr=False, compare=False)  # the whole SKILL.md


def skill_ref(path: Path, text: str | None = None) -> SkillRef:
    """Read a skill folder's name (frontmatter ``name``, else the folder name) and description.

    ``text`` is the SKILL.md content when the caller has already read it (with its own bounds)."""
    path = path.resolve()
    md = path / "SKILL.md"
    if text is None:
        try:
            text = md.read_text(encoding="utf-8")
        except OSError as exc:
            raise RunnerSetupError(f"{md}: cannot read SKILL.md ({exc.strerror})") from exc
    try:
        front, _ = parse_frontmatter(text)
    except ValueError as exc:
        raise RunnerSetupError(f"{md}: invalid frontmatter ({exc})") from exc
    name, description = name_and_description(front, path.name)
    return SkillRef(name=name, path=path, description=description, text=text)


def _catalog_dirs(value: str) -> tuple[Path, ...]:
    """SKILL_EVALS_SKILL_DIRS: absolute skill directories, one per line."""
    dirs = tuple(Path(line) for line in value.split("\n") if line)
    for path in dirs:
        if not path.is_absolute() or not path.is_dir():
            raise RunnerSetupError(
                "SKILL_EVALS_SKILL_DIRS must list absolute skill directories, one per line"
            )
    return dirs


def read_invocation(
    stdin: BinaryIO | None = None,
    env: Mapping[str, str] | None = None,
    *,
    catalog: bool = False,
) -> AgentInvocation:
    """Read the prompt (UTF-8, to EOF) and the EVALGATE_SKILL_* variables.

    ``catalog``: the runner installs a routing run's whole catalog (SKILL_EVALS_SKILL_DIRS,
    docs/routing.md). A runner that does not is refused such a run, so it never measures a
    one-skill catalog instead."""
    env = os.environ if env is None else env
    stream = sys.stdin.buffer if stdin is None else stdin
    variant = env.get("EVALGATE_SKILL_VARIANT", "")
    if variant not in ("with", "without"):
        raise RunnerSetupError(
            "EVALGATE_SKILL_VARIANT must be 'with' or 'without'; run this through skill-evals test"
        )
    skill_dirs: tuple[Path, ...] = ()
    if "SKILL_EVALS_SKILL_DIRS" in env:
        if not catalog:
            raise CatalogUnsupported(
                "this runner does not install a catalog of skills (SKILL_EVALS_SKILL_DIRS) yet, "
                "so it cannot serve skill-evals route; see docs/routing.md"
            )
        skill_dirs = _catalog_dirs(env["SKILL_EVALS_SKILL_DIRS"])
        if not skill_dirs:
            raise RunnerSetupError("SKILL_EVALS_SKILL_DIRS is empty; it must list skill dirs")
    skill_dir = env.get("EVALGATE_SKILL_DIR", "") or (str(skill_dirs[0]) if skill_dirs else "")
    if not skill_dir or not Path(skill_dir).is_dir():
        raise RunnerSetupError("EVALGATE_SKILL_DIR must name the skill directory")
    trial_text = env.get("EVALGATE_SKILL_TRIAL", "1")
    if not trial_text.isdigit():
        raise RunnerSetupError("EVALGATE_SKILL_TRIAL must be a positive integer")
    try:
        prompt = stream.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunnerSetupError("the prompt on stdin is not valid UTF-8") from exc
    workspace = env.get("SKILL_EVALS_WORKSPACE", "")
    if workspace and not Path(workspace).is_dir():
        raise RunnerSetupError("SKILL_EVALS_WORKSPACE must name a directory")
    return AgentInvocation(
        variant="with" if variant == "with" else "without",
        skill_dir=Path(skill_dir).resolve(),
        case_id=env.get("EVALGATE_SKILL_CASE_ID", ""),
        trial=int(trial_text),
        prompt=prompt,
        skill_dirs=skill_dirs,
        workspace=Path(workspace) if workspace else None,
    )
