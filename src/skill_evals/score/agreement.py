"""How well a judge agrees with people (`skill-evals judge-check`, docs/judging.md): agreement,
Cohen's kappa and the confusion of labels × verdicts, for absolute (true/false) and pairwise
(a/b/tie) examples. Undefined figures are None, never 0."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

PAIR_LABELS = ("a", "b", "tie")


def absolute_agreement(labels: Sequence[bool], verdicts: Sequence[bool]) -> dict[str, Any]:
    """``confusion {tp, fp, fn, tn}`` (label × verdict), ``agreement`` = (tp + tn) / n and
    ``kappa`` = (po − pe) / (1 − pe), pe = ((tp+fp)(tp+fn) + (fn+tn)(fp+tn)) / n²."""
    pairs = list(zip(labels, verdicts, strict=True))
    tp = sum(1 for label, verdict in pairs if label and verdict)
    fp = sum(1 for label, verdict in pairs if not label and verdict)
    fn = sum(1 for label, verdict in pairs if label and not verdict)
    tn = sum(1 for label, verdict in pairs if not label and not verdict)
    n = len(pairs)
    if not n:
        return {"confusion": {"tp": 0, "fp": 0, "fn": 0, "tn": 0}, "agreement": None, "kappa": None}
    po = Fraction(tp + tn, n)
    pe = Fraction((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn), n * n)
    return {
        "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
        "agreement": float(po),
        "kappa": None if pe == 1 else float((po - pe) / (1 - pe)),
    }


def pairwise_agreement(labels: Sequence[str], verdicts: Sequence[str]) -> dict[str, Any]:
    """``confusion {"labels", "counts"}`` (rows = label, columns = verdict), ``agreement`` and
    ``kappa`` over a/b/tie (pe = Σ the judge's share × the labels' share)."""
    counts = [[0] * 3 for _ in PAIR_LABELS]
    for label, verdict in zip(labels, verdicts, strict=True):
        counts[PAIR_LABELS.index(label)][PAIR_LABELS.index(verdict)] += 1
    n = len(labels)
    confusion = {"labels": list(PAIR_LABELS), "counts": counts}
    if not n:
        return {"confusion": confusion, "agreement": None, "kappa": None}
    po = Fraction(sum(counts[i][i] for i in range(3)), n)
    pe = sum(
        (
            Fraction(sum(counts[i]), n) * Fraction(sum(row[i] for row in counts), n)
            for i in range(3)
        ),
        Fraction(0),
    )
    return {
        "confusion": confusion,
        "agreement": float(po),
        "kappa": None if pe == 1 else float((po - pe) / (1 - pe)),
    }
