"""The improve loop: round 0 (the original on train), proposer rounds on train, then the best
candidate once on held-out next to the original, and the decision."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..run.processes import ProcessSweeper
from ..suite.cases import Case, CaseSuite
from ..suite.frontmatter import parse_frontmatter
from ..suite.skill import Skill
from .edit import candidate_copy, description_problems, rewrite
from .evaluate import Evaluator
from .figures import Trials, f1, figures, total
from .held_out import held_out_step
from .proposer import Proposal, ProposerSpec, propose, request
from .select import COPY_PENALTY, Candidate, copied_words, train_halves
from .split import Split


@dataclass(frozen=True)
class ImproveSettings:
    """The loop's parameters (range-checked by the CLI)."""

    rounds: int
    min_gain: float
    body_chars: int
    entry_cap: int | None
    trials: int
    seed: int
    bootstrap_samples: int
    max_invocations: int | None
    max_cost_usd: float | None
    finalists: int = 2
    max_heldout_trials: int = 9  # adaptive held-out trials stop here


@dataclass
class Outcome:
    """Everything the report needs."""

    split: Split
    rounds: list[dict[str, Any]] = field(default_factory=list)
    original: Candidate | None = None
    selected: Candidate | None = None
    held_out: dict[str, dict[str, Trials]] = field(default_factory=dict)
    interval: Any = None
    accepted: bool = False
    reason: str = ""
    finalists: list[dict[str, Any]] = field(default_factory=list)  # held-out per finalist
    mde: float | None = None
    held_out_trials: int | None = None  # the trials held-out ran at last (adaptive)
    accepted_alpha: float = 0.05  # the Holm level the chosen finalist was tested at
    invocations: int = 0
    proposer_calls: int = 0
    cost_usd: float = 0.0
    status: str = "unchanged"


def _failures(candidate: Candidate, cases: tuple[Case, ...]) -> list[dict[str, Any]]:
    found = []
    for case in cases:
        trials = candidate.train[case.id]
        wrong = [triggered != case.expect_trigger for triggered, _ in trials]
        if any(wrong):
            found.append(
                {
                    "id": case.id,
                    "prompt": case.prompt,
                    "expectTrigger": case.expect_trigger,
                    "trials": len(trials),
                    "triggered": sum(1 for t, _ in trials if t),
                    "loaded": [list(loaded) for _, loaded in trials],
                }
            )
    return found


class ImproveLoop:
    """One `skill-evals improve` run."""

    def __init__(
        self,
        skill: Skill,
        suite: CaseSuite,
        split: Split,
        evaluator: Evaluator,
        proposer: ProposerSpec,
        settings: ImproveSettings,
    ) -> None:
        self.skill, self.suite, self.split = skill, suite, split
        self.evaluator, self.proposer, self.settings = evaluator, proposer, settings
        self.text = (skill.path / "SKILL.md").read_bytes().decode("utf-8")
        front, body = parse_frontmatter(self.text)
        when = front.get("when_to_use")
        self.when_to_use = when if isinstance(when, str) else ""
        self.body = body[: settings.body_chars]
        self.outcome = Outcome(split)
        self.sweeper = ProcessSweeper()
        self.halves = train_halves(split.train, settings.seed)

    # ------------------------------------------------------------------------------ budgets

    def _fits(self, invocations: int) -> bool:
        """Whether ``invocations`` more fit beside the reserve of the held-out step."""
        limit = self.settings.max_invocations
        reserve = 2 * len(self.split.held_out) * self.settings.trials
        if limit is not None and self.outcome.invocations + invocations + reserve > limit:
            return False
        cap = self.settings.max_cost_usd
        return cap is None or self.outcome.cost_usd < cap

    def _evaluate(
        self, directory: Path, cases: tuple[Case, ...], trials: range | None = None
    ) -> dict[str, Trials]:
        evaluation = self.evaluator.evaluate(directory, cases, trials)
        self.outcome.invocations += evaluation.invocations
        self.outcome.cost_usd += evaluation.cost_usd
        return evaluation.results

    def _on_train(
        self, round_no: int, description: str, text: str, scratch: Path, cases: tuple[Case, ...]
    ) -> Candidate:
        if round_no == 0:
            results = self._evaluate(self.skill.path, cases)
        else:
            with candidate_copy(self.skill.path, text, scratch) as copy:
                results = self._evaluate(copy, cases)
        return Candidate(round_no, description, text, results, total(cases, results))

    def _missing(self, candidate: Candidate, cases: tuple[Case, ...]) -> tuple[Case, ...]:
        return tuple(c for c in cases if c.id not in candidate.train)

    def _complete(self, candidate: Candidate, cases: tuple[Case, ...], scratch: Path) -> None:
        """Run ``candidate`` on those of ``cases`` it has not run on (a round builds on it and
        shows that half's failures), so its figures cover them too."""
        missing = self._missing(candidate, cases)
        if not missing:
            return
        with candidate_copy(self.skill.path, candidate.text, scratch) as copy:
            more = self._evaluate(copy, missing)
        results = {**candidate.train, **more}
        ran = tuple(c for c in self.split.train if c.id in results)
        candidate.train, candidate.counts = results, total(ran, results)

    # ------------------------------------------------------------------------------- rounds

    def run(self) -> Outcome:
        """Run the loop; EvalErrors (5, 7, 130) propagate to the caller."""
        with tempfile.TemporaryDirectory(prefix="skill-evals-improve-") as scratch_dir:
            scratch = Path(scratch_dir)
            original = self._on_train(0, self.skill.description, self.text, scratch,
                                      self.split.train)  # fmt: skip
            self.outcome.original = original
            best = original
            candidates = [original]
            trials = self.settings.trials
            for round_no in range(1, self.settings.rounds + 1):
                shown, ranked = self.halves_of(round_no)
                needed = (len(ranked) + len(self._missing(best, shown))) * trials
                if best.f1 == 1 or not self._fits(needed):
                    break
                self._complete(best, shown, scratch)
                entry = self._round(round_no, best, candidates, scratch)
                self.outcome.rounds.append(entry)
                newest = candidates[-1]
                # The next round builds on the largest F1 gain over the original so far, each
                # measured on train cases its proposal never saw.
                if entry["status"] == "evaluated" and (newest.gain or 0) > (best.gain or 0):
                    best = newest
            held_out_step(self, original, candidates[1:], scratch)
        return self.outcome

    def halves_of(self, round_no: int) -> tuple[tuple[Case, ...], tuple[Case, ...]]:
        """(the half whose failures round ``round_no`` shows, the half it is ranked on)."""
        shown, ranked = self.halves if round_no % 2 == 1 else self.halves[::-1]
        return shown, ranked

    def _round(
        self, round_no: int, best: Candidate, candidates: list[Candidate], scratch: Path
    ) -> dict[str, Any]:
        proposal = self._ask(round_no, best)
        description = proposal.description
        problems = description_problems(description, self.when_to_use, self.settings.entry_cap)
        entry: dict[str, Any] = {
            "round": round_no,
            "description": description,
            "train": None,
            "ranking": None,
        }
        if problems:
            return {**entry, "status": "invalid", "problems": problems}
        seen = {c.description for c in candidates} | {r["description"] for r in self.outcome.rounds}
        if description in seen:
            return {**entry, "status": "duplicate", "problems": []}
        try:
            text = rewrite(self.text, description)
        except ValueError as exc:
            return {**entry, "status": "invalid", "problems": [str(exc)]}
        shown, ranked = self.halves_of(round_no)
        # Ranked on the half it was not proposed from, it runs there only: the shown half
        # could not rank it, so those runs go to held-out instead.
        candidate = self._on_train(round_no, description, text, scratch, ranked)
        original = candidates[0]
        gain = half_f1(candidate, ranked) - half_f1(original, ranked)
        candidate.copied = tuple(copied_words(description, best.description, shown, ranked))
        candidate.gain = gain
        candidate.score = gain - COPY_PENALTY * len(candidate.copied)
        candidates.append(candidate)
        ranking = {"score": float(candidate.score), "copiedWords": len(candidate.copied)}
        return {
            **entry,
            "status": "evaluated",
            "problems": [],
            "train": figures(candidate.counts),
            "ranking": ranking,
        }

    def _ask(self, round_no: int, best: Candidate) -> Proposal:
        history = [
            {k: r[k] for k in ("round", "status", "description", "problems", "train")}
            for r in self.outcome.rounds
        ]
        skill = {
            "name": self.skill.name,
            "description": best.description,
            "whenToUse": self.when_to_use,
            "body": self.body,
        }
        limits = {"descriptionMaxChars": 1024, "entryMaxChars": self.settings.entry_cap}
        asked = request(
            round_no,
            self.settings.rounds,
            skill,
            limits,
            figures(best.counts),
            _failures(best, self.halves_of(round_no)[0]),
            history,
        )
        self.outcome.proposer_calls += 1
        proposal = propose(self.proposer, asked, self.sweeper)
        if proposal.cost_usd is not None:
            self.outcome.cost_usd += proposal.cost_usd
        return proposal


def held_out_f1(results: Mapping[str, Trials], cases: tuple[Case, ...]) -> Fraction | None:
    """F1 of one description on the held-out cases, exactly."""
    counts = total(cases, results)
    return f1(counts.tp, counts.fp, counts.fn)


def half_f1(candidate: Candidate, cases: tuple[Case, ...]) -> Fraction:
    """A candidate's F1 on some train cases (0 when undefined)."""
    value = held_out_f1(candidate.train, cases)
    return Fraction(0) if value is None else value


def held_out_difference(outcome: Outcome, cases: tuple[Case, ...]) -> Fraction | None:
    """Selected − original F1 on held-out, exactly (None when either is undefined)."""
    new = held_out_f1(outcome.held_out["candidate"], cases)
    old = held_out_f1(outcome.held_out["original"], cases)
    return None if new is None or old is None else new - old


def minimum_invocations(split: Split, trials: int, seed: int) -> int:
    """(Nₜ + N₂)·T + 2·Nₕ·T: round 0 on train, round 1's candidate on the half it is ranked on
    (the second, N₂ cases), the original and that candidate on held-out (further finalists
    run on held-out only while the budget allows)."""
    ranked = train_halves(split.train, seed)[1]
    return (len(split.train) + len(ranked) + 2 * len(split.held_out)) * trials


def check_budget(split: Split, trials: int, max_invocations: int | None, seed: int) -> None:
    """Exit 5 when --max-invocations cannot cover one candidate round and the held-out step."""
    minimum = minimum_invocations(split, trials, seed)
    if max_invocations is not None and max_invocations < minimum:
        raise InvalidInput(
            f"--max-invocations {max_invocations}: improve needs at least {minimum} here "
            "(the original on train, one candidate on the half it is ranked on, both on "
            "held-out)"
        )
