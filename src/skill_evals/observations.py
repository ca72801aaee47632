"""Observations: the runner contract object (§1.4), recorded files (§1.4.1), --record/--resume.

Owner: execution.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .cases import CaseSuite

Variant = Literal["with", "without"]
VARIANTS: tuple[Variant, Variant] = ("with", "without")
META_KEYS = ("durationMs", "costUsd", "inputTokens", "outputTokens")


@dataclass(frozen=True)
class Observation:
    """What one (case, trial, variant) invocation reported."""

    case_id: str
    trial: int  # one-based
    variant: Variant
    invoked_skills: tuple[str, ...]
    output: str
    exit_code: int
    meta: Mapping[str, float] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int, str]:
        """(case id, trial, variant): unique within a run."""
        return (self.case_id, self.trial, self.variant)

    def to_record(self) -> dict[str, Any]:
        """The §1.4.1 line for this observation (``meta`` only when non-empty)."""
        raise NotImplementedError


@dataclass(frozen=True)
class RunnerFailure:
    """A void observation. ``reason`` never contains raw stdout, stderr or the prompt."""

    case_id: str
    trial: int
    variant: Variant
    reason: str


class ContractError(ValueError):
    """The runner's stdout broke the §1.4 contract; str() is a safe reason."""


def parse_runner_object(value: object, expected_variant: Variant) -> dict[str, Any]:
    """Validate one runner object (keys variant, invokedSkills, output, exitCode, optional meta).

    Returns the normalised fields; raises ContractError with a reason that names the field."""
    raise NotImplementedError


def load_observations(
    path: Path, suite: CaseSuite, trials: int, skill_name: str
) -> tuple[list[Observation], list[RunnerFailure]]:
    """Read an --observations file: exactly one per case × trial × variant.

    Duplicate/missing/extra/unknown caseId → InvalidInput (exit 5) naming the key (the whole file
    is checked first). A ``without`` observation listing ``skill_name`` is returned as a
    RunnerFailure "isolation breach" (the evaluation then exits 7), not as an observation."""
    raise NotImplementedError


def load_recorded(path: Path, suite: CaseSuite, trials: int) -> list[Observation]:
    """Read a --resume file: keep observations matching current cases and trials (missing ones
    are fine; later duplicates of a key are ignored). Unknown caseId → InvalidInput (exit 5)."""
    raise NotImplementedError


class RecordWriter:
    """Appends observations to a --record file, flushing and fsyncing each line."""

    def __init__(self, path: Path) -> None:
        raise NotImplementedError

    def write(self, observation: Observation) -> None:
        """Append one §1.4.1 line and flush it to disk."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the file."""
        raise NotImplementedError
