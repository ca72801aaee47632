"""How the human outputs cut a long list: at most LIST_LIMIT items, then one line saying how
many more the JSON report has."""

from __future__ import annotations

from collections.abc import Sequence

LIST_LIMIT = 20


def limited(items: Sequence[str], limit: int = LIST_LIMIT) -> list[str]:
    """At most ``limit`` items, plus a line saying how many more the JSON report has."""
    shown = list(items[:limit])
    if len(items) > limit:
        shown.append(f"… and {len(items) - limit} more (see the JSON report)")
    return shown
