"""The files a `test` or `route` run reads and writes, checked before anything runs: which
input modes go together, the output paths (writable, none an input, none twice), and the
observations a ``--resume`` file gives back."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidInput
from ..report.outputs import HeldOutputs, holds_records, output_problem
from ..run.observations import Key, Observation
from ..run.records import load_recorded
from ..suite.cases import CaseSuite


@dataclass(frozen=True)
class RunFiles:
    """The paths of one run: its inputs and every path it will write."""

    cases: Path
    observations: Path | None = None
    record: Path | None = None
    resume: Path | None = None
    outputs: tuple[Path, ...] = ()  # every path we will write (the record file too)

    @property
    def inputs(self) -> tuple[Path, ...]:
        """The input files that were given (an output is never written over one)."""
        return tuple(p for p in (self.cases, self.observations, self.resume) if p is not None)


def path_inside(path: Path, directory: Path) -> bool:
    """Whether ``path`` (resolved, symlinks followed) lies inside ``directory``."""
    return path.resolve().is_relative_to(directory.resolve())


def check_modes(runner: str | None, files: RunFiles) -> None:
    """Exit 5 unless exactly one of --runner and --observations is given, and for --record or
    --resume without a runner."""
    if (runner is None) == (files.observations is None):
        raise InvalidInput("give exactly one of --runner or --observations")
    if files.observations is not None and (files.record or files.resume):
        raise InvalidInput(
            "--record and --resume work with --runner only; with --observations nothing "
            "runs, so there is nothing to record or resume"
        )


def check_outputs_outside(outputs: Sequence[Path], directory: Path, what: str) -> None:
    """Exit 5 for an output inside ``directory`` (``what``: "skill", "catalog skill"), whose
    hash writing there would change."""
    for out in outputs:
        if path_inside(out, directory):
            raise InvalidInput(
                f"{out}: output path lies inside the {what} directory {directory}; "
                "write reports elsewhere (it would change the skill's hash)"
            )


def check_outputs(files: RunFiles, held: HeldOutputs | None = None) -> None:
    """Exit-5 checks of the output paths, before anything runs (no money is spent on a run
    whose report cannot be written): each must be writable (a pipe or device: opened without
    blocking, kept in ``held``), none may be an input file (except ``--record F --resume F``,
    the resume pattern), no two may be the same file, and a ``--record`` file that already
    holds records must also be the ``--resume`` file (no duplicates in a record file)."""
    record = files.record
    inputs = {
        "--cases": files.cases,
        "--observations": files.observations,
        "--resume": files.resume,
    }
    seen: dict[Path, Path] = {}
    for out in files.outputs:
        resolved = out.resolve()
        if resolved in seen:
            raise InvalidInput(f"{out}: the same file is given for two outputs; use two files")
        seen[resolved] = out
        for option, given in inputs.items():
            if given is None or given.resolve() != resolved:
                continue
            if option == "--resume" and record and resolved == record.resolve():
                continue  # --resume F --record F: F is read first, then appended to
            raise InvalidInput(
                f"{out}: output path is also the {option} input file; write outputs elsewhere"
            )
        problem = output_problem(out, held, record=out == record)
        if problem is not None:
            raise InvalidInput(f"{out}: cannot write this output: {problem}")
    if record is not None and holds_records(record):
        resume = files.resume
        if resume is None or resume.resolve() != record.resolve():
            raise InvalidInput(
                f"{record} exists: add --resume {record} to continue it, or remove it"
            )


def resumed_observations(
    files: RunFiles, suite: CaseSuite, trials: int, planned: Sequence[Key] | None = None
) -> list[Observation]:
    """The observations --resume reuses. ``--resume F --record F`` with F missing is the first
    run of a resumable job: it starts from nothing (any other missing --resume file is an
    error: resuming from nothing by mistake would re-run and re-pay everything)."""
    resume, record = files.resume, files.record
    if resume is None:
        return []
    first_run = record is not None and resume.resolve() == record.resolve()
    if first_run and not os.path.lexists(resume):
        return []
    return load_recorded(resume, suite, trials, planned)
