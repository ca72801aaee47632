"""Opening the observation cache for one run (docs/cost.md): the checks of ``--cache DIR``
before anything runs, the runner's identity, and the note a run that reused entries gets.

Owner: execution.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..suite.cases import CaseSuite
from .key import Uncacheable, runner_identity
from .misses import misses_line
from .settings import CacheSettings
from .store import ObservationCache

if TYPE_CHECKING:
    from ..run.execute import ExecutionResult


def _inside(path: Path, directory: Path) -> bool:
    return path.resolve().is_relative_to(directory.resolve())


def check_cache_dir(settings: CacheSettings | None, *inside: Path) -> None:
    """Exit 5 for a ``--cache`` that is not a directory, or that lies inside (or holds) one of
    the offered skill directories (its files would change that directory's hash)."""
    if settings is None:
        return
    directory = settings.directory
    if os.path.lexists(directory) and not directory.is_dir():
        raise InvalidInput(f"--cache {directory}: not a directory; give a directory for the cache")
    for other in inside:
        if _inside(directory, other) or _inside(other, directory):
            raise InvalidInput(
                f"--cache {directory}: must lie outside the skill directory {other} "
                "(cache files would change the skill's hash)"
            )


def suite_paths(suite: CaseSuite, skill_dir: Path) -> tuple[str, ...]:
    """The suite's own files inside the skill directory — the cases file and the fixtures —
    relative to it: keyed per case, they are left out of the skill version's cache key, so
    editing one case re-runs that case only."""
    root = skill_dir.resolve()
    found: list[str] = []
    for path in (suite.path, *(c.fixture for c in suite.cases if c.fixture is not None)):
        try:
            rel = path.resolve().relative_to(root).as_posix()
        except ValueError:
            continue  # outside the skill: not part of its hash anyway
        if rel != "." and rel not in found:
            found.append(rel)
    return tuple(found)


def open_cache(
    settings: CacheSettings | None,
    builtin: bool,
    command: Sequence[str],
    scope: str,
    excluded: Sequence[str] = (),
) -> ObservationCache | None:
    """The observation cache of this run (None without --cache). ``builtin``: the command runs
    one of this package's runners; ``excluded``: :func:`suite_paths`. A runner command whose
    arguments cannot be hashed runs without the cache, with a warning in the report."""
    if settings is None:
        return None
    try:
        identity = runner_identity(command, Path.cwd(), builtin=builtin)
    except Uncacheable as exc:
        cache = ObservationCache(settings.directory, scope, [], 0.0)
        cache.disable(f"cache off for this run: {exc}")
        return cache
    return ObservationCache(
        settings.directory, scope, identity, settings.max_age_s, excluded=excluded, argv=command
    )


def cache_note(cache: ObservationCache) -> str:
    """The note of a run that reused observations from the cache."""
    return (
        f"{cache.hits} observation(s) reused from the cache {cache.root} (not run again; "
        "marked cached in records)"
    )


def finish_cache(
    cache: ObservationCache | None, result: ExecutionResult, notes: tuple[str, ...]
) -> tuple[tuple[str, ...], list[dict[str, Any]] | None]:
    """After the run: the cache's warnings into ``result.messages``; the notes with the reuse
    note and the line every output prints (``cache: 0 of 10 reused; 10 re-run: …``); and
    ``runner.cacheMisses``, over the invocations that ran although the cache was given (None
    without a cache)."""
    if cache is None:
        return notes, None
    result.messages.extend(cache.messages)
    ran = [o.key for o in result.observations if not o.cached]
    misses = cache.misses.report(dict.fromkeys([*ran, *(f.key for f in result.failures)]))
    if cache.hits:
        notes = (*notes, cache_note(cache))
    if not cache.disabled:  # (a cache switched off says why in its own warning)
        notes = (*notes, misses_line(cache.hits, misses))
    return notes, misses
