"""The observation cache: ``--cache DIR`` (docs/cost.md).

Owner: execution.

Every valid observation a run produces is appended to the cache under its key (cache_key.py);
a later run that plans the same invocation reuses it instead of paying for it again, as long as
the entry is younger than ``--cache-max-age``. Failures are never stored.

This module is the cache a run talks to: an invocation's key, lookup and store, under a lock.
The key is cache_key.py, one line's format cache_entry.py, the directory on disk (layout,
concurrency, bounded reading, rotation, pruning) cache_files.py, the settings
cache_settings.py.

A line is visible to readers only once it ends in a newline; a half-written last line (a
killed run) is ignored. A cache is disposable, so nothing in it is ever an error: a file that
is not ours, or a line that is not a valid entry, is skipped with a warning (lines before it
are used), and the run goes on.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from .cache_entry import Entry, canonical_line, stored_checks
from .cache_files import CacheDirectory
from .cache_key import observation_key
from .cases import Case
from .errors import InvalidInput
from .jsonl import MAX_RECORD_BYTES
from .observations import ContractError, Observation, Variant, parse_runner_object
from .skill import directory_sha256, directory_sha256_without
from .workspace import safe_name


class ArmLike(Protocol):
    """What the cache needs of an arm: its name, what the runner echoes, the offered skill."""

    @property
    def name(self) -> Variant: ...

    @property
    def echo(self) -> str: ...

    @property
    def directory_sha256(self) -> str | None: ...

    @property
    def skill_dir(self) -> Path: ...


class ObservationCache:
    """The cache of one skill's runs: reads its directory once (on the first lookup), answers
    :meth:`lookup` before each invocation and keeps every valid observation with
    :meth:`store`. Thread-safe. ``messages`` collects warnings for the report."""

    def __init__(
        self,
        directory: Path,
        skill_name: str,
        runner: Sequence[Any],
        max_age_s: float,
        clock: Callable[[], float] = time.time,
        excluded: Sequence[str] = (),
    ) -> None:
        self.root = directory
        self.directory = directory / safe_name(skill_name)
        self.runner = list(runner)
        self.max_age_s = max_age_s
        self.clock = clock
        self.messages: list[str] = []
        self.hits = 0
        self.stored = 0
        self._lock = threading.Lock()
        self._index: dict[str, Entry] | None = None
        self._fixtures: dict[Path, str | None] = {}
        # The suite's own files inside the skill (cases file, fixtures): keyed per case, so
        # left out of the skill version's hash; versions hashed so, by (directory, hash).
        self.excluded = tuple(excluded)
        self._versions: dict[tuple[Path, str], str | None] = {}
        self._disk = CacheDirectory(self.directory, clock, self._warn)
        self._store_failed = False

    def disable(self, reason: str) -> None:
        """Neither reuse nor store in this run (``reason`` becomes its warning)."""
        self.max_age_s = 0.0
        self._store_failed = True
        self._warn(reason)

    # ----------------------------------------------------------------------------- keys

    def key(self, case: Case, trial: int, arm: ArmLike) -> str | None:
        """The key of one invocation, or None when its fixture cannot be hashed."""
        fixture_sha: str | None = None
        if case.fixture is not None:
            if case.fixture not in self._fixtures:
                try:
                    self._fixtures[case.fixture] = directory_sha256(case.fixture)
                except InvalidInput:
                    self._fixtures[case.fixture] = None  # the run itself reports the fixture
            fixture_sha = self._fixtures[case.fixture]
            if fixture_sha is None:
                return None
        version = self._version(arm)
        if version is None and arm.directory_sha256 is not None:
            return None
        return observation_key(self.runner, version, case, fixture_sha, trial)

    def _version(self, arm: ArmLike) -> str | None:
        """The offered skill version as the key names it: its directory hash without the
        suite's own files (None for ``without``, and when it cannot be hashed)."""
        sha = arm.directory_sha256
        if sha is None or not self.excluded:
            return sha
        memo = (Path(arm.skill_dir), sha)
        if memo not in self._versions:
            try:
                self._versions[memo] = directory_sha256_without(arm.skill_dir, self.excluded)
            except InvalidInput:
                self._versions[memo] = None
        return self._versions[memo]

    # --------------------------------------------------------------------------- lookup

    def lookup(self, case: Case, trial: int, arm: ArmLike) -> Observation | None:
        """The newest stored observation of this invocation younger than the max age, marked
        ``cached``, or None."""
        if self.max_age_s <= 0:
            return None  # 0: never reuse (observations are still stored)
        with self._lock:
            key = self.key(case, trial, arm)
            if key is None:
                return None
            if self._index is None:
                self._index = self._load()
            entry = self._index.get(key)
            if entry is None:
                return None
            observation = self._observation(entry, case, trial, arm)
            if observation is not None:
                self.hits += 1
            return observation

    def stored_meta(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(runner variant, meta) of every usable entry (the newest per key, within the max
        age): what ``ci plan --estimate`` expects the next runs to cost."""
        if self.max_age_s <= 0:
            return
        with self._lock:
            if self._index is None:
                self._index = self._load()
            entries = list(self._index.values())
        for entry in entries:
            body = entry.value["observation"]
            meta = body.get("meta")
            if isinstance(meta, dict) and body.get("variant") in ("with", "without"):
                yield (
                    body["variant"],
                    {
                        k: v
                        for k, v in meta.items()
                        if type(v) in (int, float) and math.isfinite(v) and v >= 0
                    },
                )

    def _observation(
        self, entry: Entry, case: Case, trial: int, arm: ArmLike
    ) -> Observation | None:
        value = entry.value
        try:
            fields = parse_runner_object(value["observation"], arm.echo)  # type: ignore[arg-type]
            checks = stored_checks(value.get("checks"), value.get("reasons"))
        except ContractError as exc:
            self._warn(f"cache {self.directory}: an entry is not a valid observation ({exc})")
            return None
        observation = Observation(
            case_id=case.id,
            trial=trial,
            variant=arm.name,
            invoked_skills=fields["invoked_skills"],
            output=fields["output"],
            exit_code=fields["exit_code"],
            meta=fields["meta"],
            evidence=fields.get("evidence", ()),
            tool_calls=fields["tool_calls"],
            warnings=fields.get("warnings", ()),
            cached=True,
        )
        count = len(case.task.checks) if case.task is not None else 0
        if checks is not None and len(checks[0]) == count and count:
            observation = replace(observation, checks=checks[0], reasons=checks[1])
        elif case.task is not None and case.task.workspace:
            return None  # the workspace verdicts are missing: run it again
        return observation

    def _load(self) -> dict[str, Entry]:
        """Every usable entry of this skill's directory, the newest per key."""
        index: dict[str, Entry] = {}
        oldest_ms = int((self.clock() - self.max_age_s) * 1000)
        for path in self._disk.readable():
            for entry in self._disk.entries(path):
                if entry.stored_at_ms < oldest_ms:
                    continue
                key = entry.value["key"]
                known = index.get(key)
                if known is None or entry.stored_at_ms >= known.stored_at_ms:
                    index[key] = entry
        return index

    # ---------------------------------------------------------------------------- store

    def store(self, case: Case, trial: int, arm: ArmLike, observation: Observation) -> None:
        """Append a valid observation (never a failure, never a reused one). A cache that
        cannot be written is a warning, once; the run goes on."""
        if observation.cached:
            return
        with self._lock:
            if self._store_failed:
                return
            key = self.key(case, trial, arm)
            if key is None:
                return
            line = canonical_line(key, int(self.clock() * 1000), observation, arm.echo)
            if len(line) > MAX_RECORD_BYTES:
                return  # too long to be read back as one record: it will simply run again
            try:
                self._disk.append(line, self.max_age_s)
            except OSError as exc:
                self._store_failed = True
                self._warn(f"cache {self.directory}: cannot write ({exc.strerror}); not stored")
                return
            self.stored += 1

    def close_file(self) -> None:
        """Close the file this process appends to (the next store starts a new one)."""
        self._disk.close()

    def close(self) -> None:
        """Finish: close the file (idempotent)."""
        with self._lock:
            self.close_file()

    def _warn(self, text: str) -> None:
        if text not in self.messages and len(self.messages) < 20:
            self.messages.append(text)
