"""How changes were found, in words shared by the command line and the job summary (each
escapes the parts it shows its own way)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# The words of each way of finding changes but git's (told differently by each output).
_BASE_WORDS = {
    "lock": "changes found against the lock file {lock_file}",
    "only": "skills chosen with --only",
    "merged": "merged from {shards} shard(s)",
}


def base_words(
    base: Mapping[str, Any],
    text: Callable[[object], str] = str,
    number: Callable[[object], str] = str,
) -> str | None:
    """How changes were found from a lock file, ``--only`` or merged shards (None for the
    other modes), the lock file written by ``text`` and the shard count by ``number``."""
    mode = base.get("mode")
    words = _BASE_WORDS.get(mode) if isinstance(mode, str) else None
    if words is None:
        return None
    return words.format(
        lock_file=text(base.get("lockFile", "")), shards=number(base.get("shards", 0))
    )
