"""Task checks (SPEC §1.5): exit_code, includes_all, json_equals.

Owner: scoring.
"""

from __future__ import annotations

from .cases import TaskCheck


def validate_expected(check: str, expected: object) -> str | None:
    """Return a problem (e.g. "task.expected must be a non-empty list of non-empty strings") or
    None when ``expected`` is valid for ``check``. Used by the case loader (exit 5)."""
    raise NotImplementedError


def passes(check: TaskCheck, output: str, exit_code: int) -> bool:
    """Whether one observation passes the case's task check."""
    raise NotImplementedError
