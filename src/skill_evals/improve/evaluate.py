"""One description on a set of cases: every case × trial run in the ``with`` arm
(``SKILL_EVALS_ARM=improve``) with the shared runner machinery, and what each trial loaded."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import EvidenceUnavailable, Interrupted
from ..plan.arms import ARM_VAR, Arm
from ..plan.run_settings import RunSettings
from ..report.diagnosis import SANDBOX_ADVICE, advice_for
from ..run import runner_stderr
from ..run.cached_run import run_plan
from ..run.observations import Key, RunnerFailure
from ..suite.cases import Case, CaseSuite
from ..suite.skill import directory_sha256
from .figures import Trials

IMPROVE_ARM = "improve"


@dataclass(frozen=True)
class Evaluation:
    """Per case id, per trial: triggered and the skills it loaded; what it cost."""

    results: dict[str, Trials]
    invocations: int
    cost_usd: float


@dataclass(frozen=True)
class Evaluator:
    """Runs descriptions of one skill on subsets of one suite."""

    run: RunSettings
    command: tuple[str, ...]
    skill_name: str
    suite: CaseSuite

    def evaluate(
        self, skill_dir: Path, cases: Sequence[Case], trials: range | None = None
    ) -> Evaluation:
        """Run every case × trial of ``cases`` with the skill at ``skill_dir`` (``trials``: the
        trial numbers, default 1…--trials). A runner failure is exit 7 (an improve run has no
        partial figures); an interrupt is 130."""
        numbers = trials if trials is not None else range(1, self.run.trials + 1)
        run = dataclasses.replace(self.run, trials=max(numbers))
        subset = CaseSuite(
            path=self.suite.path,
            sha256=self.suite.sha256,
            cases=tuple(cases),
            unit_count=len({c.unit for c in cases}),
        )
        planned: list[Key] = [  # report order: case-file order, then trial
            (c.id, t, "with") for c in cases for t in numbers
        ]
        plan = run.execution_plan(
            self.command,
            subset,
            self.skill_name,
            skill_dir,
            None,
            (),
            variants=("with",),
            arms=(Arm("with", "with", skill_dir, directory_sha256(skill_dir)),),
            planned=planned,
            extra_env={ARM_VAR: IMPROVE_ARM},
        )
        result = run_plan(plan, None, [skill_dir]).result
        if result.interrupted:
            raise Interrupted("interrupted")
        if result.failures:
            raise EvidenceUnavailable(self._failure_message(result.failures))
        results: dict[str, list[tuple[bool, tuple[str, ...]]]] = {c.id: [] for c in cases}
        cost = 0.0
        for obs in sorted(result.observations, key=lambda o: o.trial):
            loaded = tuple(obs.invoked_skills)
            results[obs.case_id].append((self.skill_name in loaded, loaded))
            cost += float(obs.meta.get("costUsd", 0.0) or 0.0)
        return Evaluation(dict(results), result.invocations, cost)

    def _failure_message(self, failures: Sequence[RunnerFailure]) -> str:
        """The first failure (the one whose stderr --show-runner-stderr showed, if any) and
        what to do, as ``test`` and ``route`` advise: the reason's advice, then the sandbox's
        when the run was sandboxed."""
        where = runner_stderr.shown_for()
        first = next((f for f in failures if (f.case_id, f.trial, f.variant) == where), failures[0])
        advice = [advice_for(first.reason)]
        decided = self.run.sandbox.decided if self.run.sandbox is not None else None
        if decided is not None and decided.mode == "bwrap":
            advice.append(SANDBOX_ADVICE)
        return (
            f"runner failed on case {first.case_id!r} trial {first.trial}: {first.reason}; "
            f"what to do: {'; '.join(advice)}"
        )
