"""What a task check is: one small frozen dataclass per check, validated when cases load.

Observation checks read only what the runner reported (output, exit code, tool calls, meta);
workspace checks read the workspace the engine gave the runner, after the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from .judge_model import Judge, JudgePairwise

# How long one check may take (a `command` has its own timeoutMs instead).
CHECK_SECONDS = 10.0


class _Named:
    """A check whose short name for reasons is its name alone."""

    name: ClassVar[str]
    workspace: ClassVar[bool] = False

    @property
    def label(self) -> str:
        """A short name for reasons: the check."""
        return self.name


@dataclass(frozen=True)
class _ToolCheck:
    """A check about calls of one tool: its label names the check and the tool."""

    name: ClassVar[str]
    workspace: ClassVar[bool] = False
    tool: str
    input: dict[str, object] | None = None

    @property
    def label(self) -> str:
        """A short name for reasons."""
        return f"{self.name} {self.tool}"


@dataclass(frozen=True)
class ExitCode(_Named):
    """The task's exit code equals ``expected``."""

    name: ClassVar[str] = "exit_code"
    expected: int


@dataclass(frozen=True)
class IncludesAll(_Named):
    """Exit code 0 and the output contains every string."""

    name: ClassVar[str] = "includes_all"
    expected: tuple[str, ...]


@dataclass(frozen=True)
class JsonEquals(_Named):
    """Exit code 0 and the output is strict JSON structurally equal to ``expected``."""

    name: ClassVar[str] = "json_equals"
    expected: object


@dataclass(frozen=True)
class OutputMatches(_Named):
    """Exit code 0 and the pattern is found in the output."""

    name: ClassVar[str] = "output_matches"
    pattern: str
    flags: str = ""


@dataclass(frozen=True)
class ToolCalled(_ToolCheck):
    """The number of completed matching tool calls lies in [minimum, maximum]."""

    name: ClassVar[str] = "tool_called"
    minimum: int = 1
    maximum: int | None = None


@dataclass(frozen=True)
class ToolNotCalled(_ToolCheck):
    """No completed tool call matches."""

    name: ClassVar[str] = "tool_not_called"


@dataclass(frozen=True)
class Budget:
    """A runner-reported figure (``meta``) is at most ``value``."""

    workspace: ClassVar[bool] = False
    name: str  # max_turns | max_tokens | max_cost_usd | max_duration_ms
    value: float

    @property
    def label(self) -> str:
        """A short name for reasons."""
        return self.name


BUDGETS = ("max_turns", "max_tokens", "max_cost_usd", "max_duration_ms")


@dataclass(frozen=True)
class _FileCheck:
    """A workspace check about one file: its label names the check and the path."""

    name: ClassVar[str]
    workspace: ClassVar[bool] = True
    path: str

    @property
    def label(self) -> str:
        """A short name for reasons."""
        return f"{self.name} {self.path}"


@dataclass(frozen=True)
class FileExists(_FileCheck):
    """The workspace holds a regular file at ``path``."""

    name: ClassVar[str] = "file_exists"


@dataclass(frozen=True)
class FileAbsent(_FileCheck):
    """Nothing exists at ``path``."""

    name: ClassVar[str] = "file_absent"


@dataclass(frozen=True)
class FileContains(_FileCheck):
    """The file is UTF-8 text containing every string."""

    name: ClassVar[str] = "file_contains"
    text: tuple[str, ...]


@dataclass(frozen=True)
class FileMatches(_FileCheck):
    """The pattern is found in the file's text."""

    name: ClassVar[str] = "file_matches"
    pattern: str
    flags: str = ""


@dataclass(frozen=True)
class JsonFileEquals(_FileCheck):
    """The file is strict JSON structurally equal to ``expected``."""

    name: ClassVar[str] = "json_file_equals"
    expected: object


@dataclass(frozen=True)
class _PathsCheck(_Named):
    """A workspace check about the changes to several paths."""

    workspace: ClassVar[bool] = True
    paths: tuple[str, ...]


@dataclass(frozen=True)
class ChangesWithin(_PathsCheck):
    """Every file created, modified or deleted since setup lies within ``paths``."""

    name: ClassVar[str] = "changes_within"


@dataclass(frozen=True)
class Unchanged(_PathsCheck):
    """None of ``paths`` changed since setup."""

    name: ClassVar[str] = "unchanged"


@dataclass(frozen=True)
class Command:
    """A verifier command, run in the workspace after the runner, exits with ``expect_exit``."""

    name: ClassVar[str] = "command"
    workspace: ClassVar[bool] = True
    run: tuple[str, ...]
    timeout_ms: int = 60_000
    expect_exit: int = 0

    @property
    def label(self) -> str:
        """A short name for reasons: the program's last path part, cut short."""
        program = self.run[0].rsplit("/", 1)[-1]
        return f"{self.name} {program[:40]}"


ObservationCheck = (
    ExitCode | IncludesAll | JsonEquals | OutputMatches | ToolCalled | ToolNotCalled | Budget
)
WorkspaceCheck = (
    FileExists
    | FileAbsent
    | FileContains
    | FileMatches
    | JsonFileEquals
    | ChangesWithin
    | Unchanged
    | Command
)
Check = ObservationCheck | WorkspaceCheck | Judge | JudgePairwise

CHECK_NAMES = (
    "exit_code",
    "includes_all",
    "json_equals",
    "output_matches",
    "file_exists",
    "file_absent",
    "file_contains",
    "file_matches",
    "json_file_equals",
    "changes_within",
    "unchanged",
    "command",
    "tool_called",
    "tool_not_called",
    *BUDGETS,
    "judge",
    "judge_pairwise",
)


@dataclass(frozen=True)
class Task:
    """A case's task: one or more checks that must all pass."""

    checks: tuple[Check, ...]

    @cached_property
    def workspace(self) -> bool:
        """Whether any check reads the workspace (so --observations must carry ``checks``)."""
        return any(check.workspace for check in self.checks)

    @cached_property
    def needs_snapshot(self) -> bool:
        """Whether a check compares the workspace with its state after setup."""
        return any(isinstance(check, (ChangesWithin, Unchanged)) for check in self.checks)

    @cached_property
    def judged(self) -> tuple[int, ...]:
        """The indexes of its model-graded checks (judged after the others, by a judge)."""
        return tuple(i for i, check in enumerate(self.checks) if isinstance(check, Judge))

    @cached_property
    def judge_files(self) -> bool:
        """Whether a judge check is shown workspace files (captured after the run)."""
        return any(
            isinstance(check, (Judge, JudgePairwise)) and check.file_globs for check in self.checks
        )

    @cached_property
    def pairwise(self) -> JudgePairwise | None:
        """Its ``judge_pairwise`` check (then the task's only one), or None."""
        found = [check for check in self.checks if isinstance(check, JudgePairwise)]
        return found[0] if found else None


@dataclass(frozen=True)
class Outcome:
    """One check's verdict on one observation; ``reason`` (for a failure) is short and holds
    no file contents, output or prompt: ``file_contains CHANGELOG.md: '## 1.2.0' not found``."""

    passed: bool
    reason: str | None = None


PASSED = Outcome(True)
