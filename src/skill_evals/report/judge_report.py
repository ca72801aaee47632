"""The judging's part of a `test` report: ``judge`` (null without judge checks) and
``runner.ledger.judge``, kept apart from the runner's own figures (docs/judging.md)."""

from __future__ import annotations

from typing import Any

from ..plan.ledger import Ledger
from ..run.judging import Judging


def add_judging(report: dict[str, Any], judging: Judging | None) -> dict[str, Any]:
    """``report`` with its judge blocks (and the budget's message when it stopped judging)."""
    scored = report.get("judge")
    report["judge"] = judging.ledger.report_block() if judging is not None else None
    if judging is None:
        return report
    if isinstance(report["judge"], dict) and isinstance(scored, dict):
        report["judge"]["swapConsistency"] = scored.get("swapConsistency")
    runner = report.get("runner")
    if isinstance(runner, dict) and runner.get("ledger") is None:
        runner["ledger"] = Ledger(()).to_json()  # --observations: no runner ran, judges may
    if isinstance(runner, dict) and isinstance(runner.get("ledger"), dict):
        runner["ledger"]["judge"] = judging.ledger.ledger_block()
    _judges_sandbox(report, judging)
    if judging.budget_hit:
        reason = judging.budget_reason().removeprefix("judge: ")
        messages = report.setdefault("messages", [])
        if reason not in messages:
            messages.append(reason)
    return report


def _judges_sandbox(report: dict[str, Any], judging: Judging) -> None:
    """When judges ran: the sandbox block names the keys they got through the proxy too, and a
    run where only judges ran (a re-score) has the block, and the warning when unsandboxed."""
    state = judging.cell.state
    if state is None or not judging.ledger.calls:
        return
    block = report.get("sandbox")
    if isinstance(block, dict):
        block["proxied"] = list(dict.fromkeys([*block.get("proxied", []), *state.proxied]))
        return
    report["sandbox"] = state.to_json()
    messages = report.setdefault("messages", [])
    if state.warning is not None and state.warning not in messages:
        messages.append(state.warning)
