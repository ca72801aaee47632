"""The report's ``behaviour`` block and its findings (sandbox/behaviour.py computes them): each
finding is a warning in ``messages`` (so every output shows it, escaped by that output's own
function), and with ``--fail-on-finding`` a failed gate (exit 1)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..codes import GATE_FAILED
from ..messages import Messages
from ..sandbox.behaviour import Recorded, behaviour_block, finding_text


def behaviour_notes(
    observations: Iterable[Recorded],
    codes: list[int],
    notes: Messages,
    fail_on_finding: bool,
) -> dict[str, Any]:
    """The ``behaviour`` block; its findings said in ``notes`` (errors with
    ``fail_on_finding``, which also fails the gate)."""
    block = behaviour_block(observations)
    for finding in block["findings"]:
        if fail_on_finding:
            notes.append(f"{finding_text(finding)} (--fail-on-finding)")
        else:
            notes.warning(finding_text(finding))
    if fail_on_finding and block["findings"]:
        codes.append(GATE_FAILED)
    return block
