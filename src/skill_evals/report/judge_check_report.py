"""The report of `skill-evals judge-check` (its own schema, judge-check.schema.json) and its
text rendering: how well the judge agreed with the labels, never an answer or a prompt."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..codes import GATE_FAILED, UNAVAILABLE
from ..escaping.terminal import terminal_safe
from ..run.judge_check import Checked
from ..run.judging import Judging
from ..score.agreement import absolute_agreement, pairwise_agreement
from ..suite.judge_labels import Example
from .blocks import envelope


def absolute_verdict(example: Example, verdict: Mapping[str, Any]) -> bool:
    """The check's verdict: ``score ≥ threshold`` with a threshold, else the judge's pass."""
    if example.threshold is not None:
        return bool(verdict["score"] >= example.threshold)
    return bool(verdict["pass"])


def pairwise_verdict(verdicts: Sequence[Mapping[str, Any]]) -> tuple[str, bool]:
    """The verdict in the file's terms (the first ask showed the file's a as a) and whether the
    two asks agreed; disagreeing asks are a tie."""
    first = verdicts[0]["winner"]
    second = {"a": "b", "b": "a", "tie": "tie"}[verdicts[1]["winner"]]
    return (first if first == second else "tie"), first == second


def build_report(
    kind: str,
    examples: Sequence[Example],
    checked: Sequence[Checked],
    judging: Judging,
    min_agreement: float | None,
) -> dict[str, Any]:
    """The judge-check report (exit 7 on a judge failure, 1 below --min-agreement)."""
    failures = [
        {"caseId": e.id, "reason": c.failure}
        for e, c in zip(examples, checked, strict=True)
        if c.failure is not None
    ]
    judged = [(e, c) for e, c in zip(examples, checked, strict=True) if c.failure is None]
    swap: float | None = None
    if kind == "absolute":
        verdicts: list[Any] = [absolute_verdict(e, c.verdicts[0]) for e, c in judged]
        figures = absolute_agreement([bool(e.label) for e, _ in judged], verdicts)
    else:
        decided = [pairwise_verdict(c.verdicts) for _, c in judged]
        verdicts = [v for v, _ in decided]
        figures = pairwise_agreement([str(e.label) for e, _ in judged], verdicts)
        swap = sum(ok for _, ok in decided) / len(decided) if decided else None
    disagreements = [e.id for (e, _), v in zip(judged, verdicts, strict=True) if v != e.label]
    gate = None
    if min_agreement is not None:
        value = figures["agreement"]
        passed = None if failures or value is None else value >= min_agreement
        gate = {"threshold": min_agreement, "value": value, "passed": passed}
    code = UNAVAILABLE if failures else GATE_FAILED if gate and gate["passed"] is False else 0
    report = envelope(code)
    report.update(
        {
            "kind": kind,
            "cases": len(examples),
            "agreement": figures["agreement"],
            "kappa": figures["kappa"],
            "swapConsistency": swap,
            "confusion": figures["confusion"],
            "disagreements": disagreements,
            "failures": failures,
            "judge": judging.ledger.ledger_block(),
            "gates": {"minAgreement": gate},
            "messages": [],
        }
    )
    return report


def error_report(code: int, message: str) -> dict[str, Any]:
    """The report of a judge-check that stopped before asking (exit 5 or 6)."""
    report = envelope(code)
    report.update(
        {
            "kind": None, "cases": None, "agreement": None, "kappa": None,
            "swapConsistency": None, "confusion": None, "disagreements": [], "failures": [],
            "judge": None, "gates": {"minAgreement": None}, "messages": [message],
        }
    )  # fmt: skip
    return report


def _figure(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "n/a"


def render_text(report: Mapping[str, Any]) -> str:
    """The report for a person: the verdict line, the confusion, disagreements and failures."""
    status = str(report["status"]).upper()
    if report.get("kind") is None:
        message = terminal_safe(str((report.get("messages") or [""])[0]))
        return f"{status}  judge-check — {message} (exit {report['exitCode']})\n"
    lines = [
        f"{status}  judge-check — agreement {_figure(report['agreement'])}, kappa "
        f"{_figure(report['kappa'])} over {report['cases']} {report['kind']} example(s) "
        f"(exit {report['exitCode']})",
        "",
    ]
    confusion = report["confusion"]
    if report["kind"] == "absolute":
        lines.append("  label × verdict: tp {tp}  fp {fp}  fn {fn}  tn {tn}".format(**confusion))
    else:
        lines.append("  label \\ verdict     a     b   tie")
        for label, row in zip(confusion["labels"], confusion["counts"], strict=True):
            lines.append(f"  {label:<15} " + " ".join(f"{n:5d}" for n in row))
        lines.append(f"  swap consistency {_figure(report['swapConsistency'])}")
    if report["disagreements"]:
        shown = ", ".join(terminal_safe(i) for i in report["disagreements"][:20])
        more = len(report["disagreements"]) - 20
        lines.append(f"  disagreements: {shown}" + (f" (and {more} more)" if more > 0 else ""))
    for failure in report["failures"][:20]:
        lines.append(
            f"  failed: {terminal_safe(failure['caseId'])}: {terminal_safe(failure['reason'])}"
        )
    gate = report["gates"]["minAgreement"]
    if gate is not None:
        verdict = {True: "passed", False: "FAILED", None: "not decided"}[gate["passed"]]
        lines.append(f"  gate agreement ≥ {gate['threshold']}: {verdict}")
    judge = report["judge"]
    lines.append(
        f"  judge: {judge['calls']} calls ({judge['retried']} retried), {judge['cached']} cached"
    )
    return "\n".join(lines) + "\n"
