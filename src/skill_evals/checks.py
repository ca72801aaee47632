"""Task checks (SPEC §1.5): exit_code, includes_all, json_equals.

Owner: scoring. (Validating ``expected`` when cases load is cases.py's job.)
"""

from __future__ import annotations

from .cases import TaskCheck


def passes(check: TaskCheck, output: str, exit_code: int) -> bool:
    """Whether one observation passes the case's task check."""
    raise NotImplementedError
