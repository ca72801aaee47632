"""Which train runs a round pays for, through the real CLI: a candidate runs only on the half
it is ranked on; the next round builds on the largest gain so far; a round that shows a half
its current best never ran on runs it there first (counted), and shows that best's own
failures there. The halves are recomputed from the documented rule (tests/cli/test_improve.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_improve import (
    ORIGINAL,
    _cases,
    _counts,
    _expected_halves,
    _expected_split,
    _f1,
    _improve,
    setup,  # noqa: F401  (the fixture)
)

FIRST = "Audit invoice and receipt totals and tax lines."  # gains on the receipt prompts
FLAT = "Audit invoice totals and tax lines, carefully."  # the original's words: no gain
LAST = "Audit invoice, receipt and billing totals and tax."

# Appended to the shared proposer script: round 1 FIRST, round 2 FLAT, round 3 LAST.
LAZY = f"""
if mode == "lazy":
    picked = {{1: {FIRST!r}, 2: {FLAT!r}}}.get(request["round"], {LAST!r})
    print(json.dumps({{"description": picked}}))
"""


def test_a_best_from_two_rounds_back_runs_on_the_half_shown_first(
    setup: dict[str, Path],  # noqa: F811
) -> None:
    with (setup["tmp"] / "proposer.py").open("a", encoding="utf-8") as script:
        script.write(LAZY)
    _, report = _improve(
        setup, "lazy", "--rounds", "3", "--finalists", "1", "--max-heldout-trials", "1"
    )
    train, held = _expected_split(42, "0.4")
    first, second = _expected_halves(train, 42)
    rounds = report["rounds"]
    assert [r["description"] for r in rounds] == [FIRST, FLAT, LAST]
    # Each candidate's train figures are those of the half it is ranked on (odd rounds: the
    # second half, even rounds: the first), and its gain is measured there.
    for entry, ranked in zip(rounds, (second, first, second), strict=True):
        assert entry["train"]["f1"] == _f1(*_counts(ranked, entry["description"]))
    gain_1 = _f1(*_counts(second, FIRST)) - _f1(*_counts(second, ORIGINAL))
    gain_2 = _f1(*_counts(first, FLAT)) - _f1(*_counts(first, ORIGINAL))
    assert gain_1 > 0 >= gain_2 and rounds[0]["train"]["f1"] < 1  # the setting of this test
    requests = [
        json.loads(line)["request"]
        for line in (setup["tmp"] / "log-lazy.jsonl").read_text().splitlines()
    ]
    # Rounds 2 and 3 build on round 1's candidate (round 2 gained nothing). Round 3 shows the
    # first half, where that candidate never ran: it runs there first, and the failures are its.
    assert [r["skill"]["description"] for r in requests] == [ORIGINAL, FIRST, FIRST]
    cases = {c["id"]: c for c in _cases()}
    failing = {i for i in first if sum(_counts([i], FIRST)[1:]) > 0}  # a false or missed trigger
    assert {f["id"] for f in requests[2]["failures"]} == failing
    assert all(cases[f["id"]]["prompt"] == f["prompt"] for f in requests[2]["failures"])
    # Train: the original on all of it, each candidate on its half, round 1's on the first half
    # once more; held-out: the original and one finalist at one trial.
    ran = len(train) + len(second) + len(first) + len(first) + len(second)
    assert report["runner"]["invocations"] == ran + 2 * len(held)
