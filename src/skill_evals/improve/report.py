"""The improve report (improve-report.schema.json), its text verdict and the diff."""

from __future__ import annotations

from typing import Any

from .. import __version__
from ..escaping.terminal import terminal_safe
from .figures import figures, total
from .loop import Outcome, held_out_difference
from .select import Candidate
from .split import Split

_EXIT = {"accepted": 0, "unchanged": 1}


def _split_block(split: Split, seed: int, holdout: float) -> dict[str, Any]:
    return {
        "seed": seed,
        "holdout": holdout,
        "train": [c.id for c in split.train],
        "heldOut": [c.id for c in split.held_out],
    }


def _candidate_block(candidate: Candidate | None, outcome: Outcome, key: str) -> Any:
    if candidate is None:
        return None
    held = outcome.held_out.get(key)
    return {
        "round": candidate.round,
        "description": candidate.description,
        "train": figures(candidate.counts),
        "heldOut": None if held is None else figures(total(outcome.split.held_out, held)),
    }


def _train_f1(outcome: Outcome) -> dict[str, Any] | None:
    """Train F1 of the original and the selected candidate: the selection figures, never the
    reported gain."""
    if outcome.original is None:
        return None
    selected = outcome.selected
    return {
        "original": float(outcome.original.f1),
        "selected": None if selected is None else float(selected.f1),
    }


def _held_out_block(outcome: Outcome) -> dict[str, Any]:
    """The held-out side: the pre-flight MDE, each finalist's difference and Holm interval,
    and the reported gain (the accepted finalist's held-out difference, else null)."""
    accepted = [f for f in outcome.finalists if f.get("accepted")]
    return {
        "mde": outcome.mde,
        "units": len({c.unit for c in outcome.split.held_out}),
        "trials": outcome.held_out_trials,
        "finalists": outcome.finalists,
        "reportedGain": accepted[0]["f1Difference"] if accepted else None,
    }


def improve_report(
    skill_name: str,
    outcome: Outcome,
    *,
    seed: int,
    holdout: float,
    min_gain: float,
    diff: str | None,
) -> dict[str, Any]:
    """The report of a finished loop."""
    comparison = None
    if outcome.interval is not None:
        difference = held_out_difference(outcome, outcome.split.held_out)
        comparison = {
            "f1Difference": None if difference is None else float(difference),
            "interval": outcome.interval.to_json(),
        }
    return {
        "schemaVersion": 1,
        "tool": {"name": "skill-evals", "version": __version__},
        "status": outcome.status,
        "exitCode": _EXIT[outcome.status],
        "skill": skill_name,
        "split": _split_block(outcome.split, seed, holdout),
        "rounds": [
            {k: r[k] for k in ("round", "status", "description", "problems", "train", "ranking")}
            for r in outcome.rounds
        ],
        "original": _candidate_block(outcome.original, outcome, "original"),
        "candidate": _candidate_block(outcome.selected, outcome, "candidate"),
        "heldOutComparison": comparison,
        "trainF1": _train_f1(outcome),
        "heldOut": _held_out_block(outcome),
        "decision": {"accepted": outcome.accepted, "reason": outcome.reason, "minGain": min_gain},
        "diff": diff,
        "runner": {"invocations": outcome.invocations},
        "proposer": {"calls": outcome.proposer_calls},
        "messages": [],
    }


def failed_report(
    skill_name: str | None, status: str, exit_code: int, message: str, split: Split | None
) -> dict[str, Any]:
    """The report of a run stopped by an error (exit 5, 6, 7 or 130)."""
    return {
        "schemaVersion": 1,
        "tool": {"name": "skill-evals", "version": __version__},
        "status": status,
        "exitCode": exit_code,
        "skill": skill_name,
        "split": None,
        "rounds": [],
        "original": None,
        "candidate": None,
        "heldOutComparison": None,
        "trainF1": None,
        "heldOut": None,
        "decision": {"accepted": False, "reason": message, "minGain": None},
        "diff": None,
        "runner": {"invocations": 0},
        "proposer": {"calls": 0},
        "messages": [message],
    }


def stopped_report(
    skill_name: str, outcome: Outcome, message: str, *, seed: int, holdout: float
) -> dict[str, Any]:
    """The report of a loop a proposer failure stopped (exit 7): what it reached on train
    before stopping (the original's figures, the rounds run), never a held-out verdict."""
    report = failed_report(skill_name, "unavailable", 7, message, outcome.split)
    report["split"] = _split_block(outcome.split, seed, holdout)
    report["rounds"] = list(outcome.rounds)
    report["original"] = _candidate_block(outcome.original, outcome, "original")
    report["runner"] = {"invocations": outcome.invocations}
    report["proposer"] = {"calls": outcome.proposer_calls}
    return report


def _train_line(report: dict[str, Any]) -> str:
    """``train before stopping: …`` of a stopped run that reached train figures, else ""."""
    original = report.get("original")
    if report["status"] != "unavailable" or not isinstance(original, dict):
        return ""
    line = f"train before stopping: F1 {_f1(original, 'train')} for the original"
    scored = [r for r in report.get("rounds") or [] if r.get("train")]
    if scored:
        best = max(scored, key=lambda r: r["train"].get("f1") or 0.0)
        line += f", best candidate {_f1(best, 'train')} (round {best['round']})"
    figures_ = original["train"]
    return line + (
        f"; original: {figures_['tp']} hit, {figures_['fn']} missed, {figures_['fp']} false "
        f"trigger(s), {figures_['tn']} correctly ignored\n"
    )


def _f1(block: Any, side: str) -> str:
    value = (block or {}).get(side, {}) or {}
    f1 = value.get("f1")
    return "n/a" if f1 is None else f"{f1:.2f}"


def render_text(report: dict[str, Any]) -> str:
    """The verdict line (and the diff when accepted) for a person."""
    skill = terminal_safe(str(report.get("skill") or "skill"))
    decision = report["decision"]
    if report["status"] == "accepted":
        comparison = report["heldOutComparison"]
        interval = comparison["interval"]
        held = len(report["split"]["heldOut"])
        line = (
            f"ACCEPTED {skill}: held-out F1 {_f1(report['original'], 'heldOut')} → "
            f"{_f1(report['candidate'], 'heldOut')} ({comparison['f1Difference']:+.2f} "
            f"[{interval['lower']:+.2f}, {interval['upper']:+.2f}]) on {held} held-out cases; "
            f"train {_f1(report['original'], 'train')} → {_f1(report['candidate'], 'train')}"
        )
        diff = "".join(terminal_safe(row) + "\n" for row in (report["diff"] or "").splitlines())
        return line + "\n\n" + diff
    word = report["status"].upper()
    return f"{word} {skill}: {terminal_safe(str(decision['reason']))}\n" + _train_line(report)
