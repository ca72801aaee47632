"""The observation cache's settings: ``--cache DIR`` and ``--cache-max-age`` (docs/cost.md),
the age given as ``30m``, ``12h``, ``7d``, ``90s`` or ``0``.

Owner: execution.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidInput

MAX_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
MAX_AGE_LIMIT_S = 3650 * 86_400


def parse_max_age(text: str, option: str = "--cache-max-age") -> float:
    """Seconds from ``30m``, ``12h``, ``7d``, ``90s`` or ``0`` (never reuse); InvalidInput
    (exit 5) naming ``option`` otherwise."""
    value = text.strip()
    if value == "0":
        return 0.0
    match = re.fullmatch(r"([0-9]{1,7})([smhd])", value)
    if match is None:
        shown = value if len(value) <= 20 else value[:20] + "…"
        raise InvalidInput(
            f"{option} {shown!r}: give a number and a unit, e.g. 30m, 12h or 7d (0 = never reuse)"
        )
    seconds = int(match.group(1)) * MAX_AGE_UNITS[match.group(2)]
    if seconds > MAX_AGE_LIMIT_S:
        raise InvalidInput(f"{option} {value}: at most 3650d")
    return float(seconds)


@dataclass(frozen=True)
class CacheSettings:
    """``--cache DIR`` and ``--cache-max-age`` (in seconds; 0 = never reuse)."""

    directory: Path
    max_age_s: float = 7 * 86_400.0
