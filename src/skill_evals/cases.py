"""Case model, JSONL/YAML loading (incl. the Agent Skill Evals shape) and units (SPEC §1.2).

Owner: inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

MAX_CASES = 10_000
MIN_UNITS = 10

CheckKind = Literal["exit_code", "includes_all", "json_equals"]


@dataclass(frozen=True)
class TaskCheck:
    """A case's task check (§1.5). ``expected`` is already validated for its kind."""

    check: CheckKind
    expected: object


@dataclass(frozen=True)
class Case:
    """One labelled prompt. ``line`` is the 1-based line in the cases file (YAML: the item's line).
    ``unit`` is the 0-based index of its unit (§1.2), units numbered in order of first case."""

    id: str
    prompt: str
    expect_trigger: bool
    line: int
    unit: int
    task: TaskCheck | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class CaseSuite:
    """All cases of one file, in file order."""

    path: Path
    sha256: str  # of the file's bytes
    cases: tuple[Case, ...]
    unit_count: int

    @property
    def with_task(self) -> int:
        """How many cases have a task check."""
        return sum(1 for c in self.cases if c.task is not None)

    def by_id(self) -> dict[str, Case]:
        """Cases keyed by id."""
        return {c.id: c for c in self.cases}


def normalize_prompt(prompt: str) -> str:
    """NFKC, CRLF/CR → LF, trailing spaces/tabs removed per line, whole string stripped."""
    raise NotImplementedError


def load_cases(path: Path, skill_name: str) -> CaseSuite:
    """Load a .jsonl/.yaml/.yml case file for the skill named ``skill_name``.

    Raises InvalidInput (exit 5) naming file, line and field. Does NOT check the 10-unit minimum
    (the caller does, so it can report exit 6 after every exit-5 check)."""
    raise NotImplementedError
