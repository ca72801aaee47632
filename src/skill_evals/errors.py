"""Errors that end a run with a documented exit code (the exit-code table).

Messages name the file, line, option or key and what to fix. They never contain a prompt,
an agent's output or a runner's stderr.
"""

from __future__ import annotations


class EvalError(Exception):
    """Base class: an error that maps to one exit code of the exit-code table."""

    exit_code = 70
    status = "invalid"
    # True when the run was planned and about to start: its report's runner block is there
    # and says 0 invocations (otherwise it is null).
    nothing_started = False


class InvalidInput(EvalError):
    """Invalid options, cases, observations or files (exit 5)."""

    exit_code = 5
    status = "invalid"


class InsufficientUnits(EvalError):
    """Fewer than ten independent paired cases (exit 6)."""

    exit_code = 6
    status = "insufficient"


class EvidenceUnavailable(EvalError):
    """Evidence unavailable, or a runner failed (exit 7)."""

    exit_code = 7
    status = "unavailable"


class Interrupted(EvalError):
    """Ctrl-C or SIGTERM (exit 130)."""

    exit_code = 130
    status = "interrupted"
