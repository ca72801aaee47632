"""Model-graded checks: ``judge`` grades one answer against a rubric, ``judge_pairwise``
prefers one of two answers.
Their verdicts come from a judge program (docs/judging.md), computed by the engine after the run
and kept with each observation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

MAX_RUBRIC_CHARS = 20_000
MAX_JUDGE_FILES = 20  # files one include captures at most
MAX_JUDGE_FILE_BYTES = 65_536  # a captured file is cut here


class _JudgeCheck:
    """What both model-graded checks share: the judge reads only the observation."""

    name: ClassVar[str]
    workspace: ClassVar[bool] = False
    include: tuple[str, ...]

    @property
    def label(self) -> str:
        """A short name for reasons."""
        return self.name

    @property
    def file_globs(self) -> tuple[str, ...]:
        """The ``files:<glob>`` entries of ``include``, without the prefix."""
        return tuple(item[len("files:") :] for item in self.include if item.startswith("files:"))


@dataclass(frozen=True)
class Judge(_JudgeCheck):
    """A model-graded check: the judge's ``score`` within ``scale`` passes at ``threshold``
    (without a threshold, the judge's own ``pass``). ``include``: ``output`` and/or
    ``files:<glob>`` (what the judge is shown). ``judge``: the name of the check's judge (one
    the trusted side defines: ``default`` is --judge), None for the default."""

    name: ClassVar[str] = "judge"
    rubric: str
    scale: tuple[float, float] = (0.0, 1.0)
    threshold: float | None = None
    include: tuple[str, ...] = ("output",)
    judge: str | None = None


@dataclass(frozen=True)
class JudgePairwise(_JudgeCheck):
    """A relative check: the judge compares the ``with`` answer with the compared arm's (both
    orders asked, the first chosen by the seeded stream), scored by preference."""

    name: ClassVar[str] = "judge_pairwise"
    rubric: str
    include: tuple[str, ...] = ("output",)
    judge: str | None = None


JudgeCheck = Judge | JudgePairwise
