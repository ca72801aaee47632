"""``--show-runner-stderr``: the last characters of the first failing runner invocation's
stderr, for the user's own terminal (stderr), escaped so it cannot drive the terminal — never
into a report, record or file. Off by default: a runner's stderr is otherwise only counted.

One per engine process (a command's whole run: improve's rounds, route's skills): once an
invocation's tail was shown, later invocations keep none.
"""

from __future__ import annotations

import sys
import threading

from ..escaping.terminal import terminal_safe

TAIL_CHARS = 2_000
KEEP_BYTES = 4 * TAIL_CHARS  # enough bytes for TAIL_CHARS characters of UTF-8

_lock = threading.Lock()
_state = {"wanted": False, "shown": False}
_shown_where: list[tuple[str, int, str]] = []  # the invocation whose tail was shown


def show() -> None:
    """Turn it on for this process (the command-line flag)."""
    with _lock:
        _state["wanted"] = True


def wanted() -> bool:
    """Whether an invocation starting now should keep its stderr's tail."""
    with _lock:
        return _state["wanted"] and not _state["shown"]


def offer(case_id: str, trial: int, variant: str, tail: bytes) -> None:
    """An invocation failed: show its stderr's tail unless another one's was shown already."""
    with _lock:
        if not _state["wanted"] or _state["shown"]:
            return
        _state["shown"] = True
        _shown_where.append((case_id, trial, variant))
        text = tail.decode("utf-8", "replace")[-TAIL_CHARS:]
        where = f"{terminal_safe(case_id)} trial {trial} {variant}"
        if not text.strip():
            print(f"skill-evals: the first failing runner invocation ({where}) wrote nothing "
                  "on stderr", file=sys.stderr)  # fmt: skip
            return
        lines = [f"  | {terminal_safe(line)}" for line in text.splitlines()]
        print(
            f"skill-evals: stderr of the first failing runner invocation ({where}), its last "
            f"{len(text)} characters (shown here only, never in a report):",
            *lines,
            sep="\n",
            file=sys.stderr,
            flush=True,
        )


def shown_for() -> tuple[str, int, str] | None:
    """(case id, trial, arm) of the invocation whose stderr was shown, if one was: an error
    about the run names that one, so the two agree."""
    with _lock:
        return _shown_where[0] if _shown_where else None
