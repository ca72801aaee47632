"""How a check reports a problem while the cases file loads: the loader's checker names the
file, line and field."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

Where = tuple[object, ...]


class Reporter(Protocol):
    """How a check reports a problem: the cases loader's checker (file, line, field)."""

    def fail(self, where: Where, reason: str) -> Exception:
        """An input error at ``where`` inside the case."""

    def wrong_type(self, where: Where, expected: str, value: object) -> Exception:
        """An input error: ``value`` is not ``expected``."""

    def keys(self, obj: dict[str, Any], where: Where, allowed: Sequence[str]) -> None:
        """Raise for the first key of ``obj`` not in ``allowed``."""
