"""The exit-code table (`skill-evals codes`) and its precedence."""

from __future__ import annotations

from collections.abc import Iterable

PASS = 0
GATE_FAILED = 1
INVALID = 5
INSUFFICIENT = 6
UNAVAILABLE = 7
INTERNAL = 70
INTERRUPTED = 130

# (exit, meaning, examples) — printed by `skill-evals codes`.
TABLE: tuple[tuple[int, str, str], ...] = (
    (PASS, "the evidence clears every configured gate", "also: no gates set, evidence available"),
    (
        GATE_FAILED,
        "a gate failed",
        "F1 < --min-trigger-f1; interval lower bound < --min-uplift; a loading violation",
    ),
    (
        INVALID,
        "invalid options, cases, observations or files",
        "bad range, bad record, duplicate id, missing observation",
    ),
    (
        INSUFFICIENT,
        "fewer than ten independent paired cases",
        "9 distinct prompts; --min-uplift with < 10 units having tasks",
    ),
    (
        UNAVAILABLE,
        "evidence unavailable, or a runner failed",
        "runner failure; isolation breach; skill dir changed; F1 null while gated; "
        "--min-uplift without task checks",
    ),
    (INTERNAL, "unexpected internal error", "a bug in skill-evals; rerun with --debug"),
    (INTERRUPTED, "interrupted", "Ctrl-C or SIGTERM"),
)

STATUS_BY_CODE: dict[int, str] = {
    PASS: "pass",
    GATE_FAILED: "fail",
    INVALID: "invalid",
    INSUFFICIENT: "insufficient",
    UNAVAILABLE: "unavailable",
    INTERRUPTED: "interrupted",
}

# Most severe first: 130 (the run did not finish), then 5 > 6 > 7 > 1 > 0.
_PRECEDENCE = (INTERRUPTED, INTERNAL, INVALID, INSUFFICIENT, UNAVAILABLE, GATE_FAILED, PASS)


def combine(codes: Iterable[int]) -> int:
    """Return the exit code that wins when several apply (the documented precedence); 0 for none."""
    present = set(codes)
    for code in _PRECEDENCE:
        if code in present:
            return code
    return PASS


def render_table() -> str:
    """The table as plain text for `skill-evals codes`."""
    lines = ["exit  meaning                                          examples"]
    for code, meaning, examples in TABLE:
        lines.append(f"{code:<5} {meaning:<48} {examples}")
    lines.append("")
    lines.append("Precedence when several apply: 5, then 6, then 7, then 1, then 0.")
    return "\n".join(lines)
