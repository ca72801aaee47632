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

from ..errors import InvalidInput
from ..run.judge_records import split_judge
from ..run.network_records import split_network, with_network
from ..run.observations import (
    ContractError,
    Observation,
    Variant,
    observation_from,
    parse_runner_object,
)
from ..run.workspace import safe_name
from ..suite.cases import Case
from ..suite.jsonl import MAX_RECORD_BYTES
from ..suite.skill import directory_sha256, directory_sha256_without
from .entry import Entry, canonical_line, stored_checks
from .files import CacheDirectory
from .key import case_payload, observation_key
from .misses import (
    MAX_PARTS_PER_SLOT,
    KeyParts,
    MissTally,
    key_parts,
    miss_reason,
    nearest_parts,
)


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
        argv: Sequence[str] = (),
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
        # Why invocations found no entry (runner.cacheMisses): the command's words, the
        # newest entry per (case id, trial, arm) whatever its age, keys present but too old.
        self.argv = list(argv)
        self.misses = MissTally()
        self.disabled = False
        self._nearest: dict[tuple[str, int, str], dict[KeyParts, int]] = {}
        self._expired: set[str] = set()

    def disable(self, reason: str) -> None:
        """Neither reuse nor store in this run (``reason`` becomes its warning)."""
        self.max_age_s = 0.0
        self._store_failed = True
        self.disabled = True
        self._warn(reason)

    # ----------------------------------------------------------------------------- keys

    def key(self, case: Case, trial: int, arm: ArmLike) -> str | None:
        """The key of one invocation, or None when its fixture cannot be hashed."""
        inputs = self._inputs(case, arm)
        if inputs is None:
            return None
        return observation_key(self.runner, inputs[1], case, inputs[0], trial)

    def parts(self, case: Case, trial: int, arm: ArmLike) -> KeyParts | None:
        """The hashes of the parts of one invocation's key (None: no key)."""
        inputs = self._inputs(case, arm)
        if inputs is None:
            return None
        payload = case_payload(case, inputs[0])
        return key_parts(self.argv, self.runner, inputs[1], payload, (case.id, trial, arm.name))

    def _inputs(self, case: Case, arm: ArmLike) -> tuple[str | None, str | None] | None:
        """(fixture hash, skill version) of one invocation, or None when one cannot be hashed."""
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
        return fixture_sha, version

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
        slot = (case.id, trial, str(arm.name))
        if self.max_age_s <= 0:
            if not self.disabled:
                self.misses.add(slot, "reuse-off", "--cache-max-age 0: never reused")
            return None  # 0: never reuse (observations are still stored)
        with self._lock:
            key = self.key(case, trial, arm)
            if key is None:
                return None
            if self._index is None:
                self._index = self._load()
            entry = self._index.get(key)
            observation = None if entry is None else self._observation(entry, case, trial, arm)
            if observation is not None:
                self.hits += 1
            else:
                self._explain(key, case, trial, arm)
            return observation

    def _explain(self, key: str, case: Case, trial: int, arm: ArmLike) -> None:
        """Record why this invocation found no usable entry (the nearest entry decides)."""
        now = self.parts(case, trial, arm)
        if now is None:
            return
        nearest = nearest_parts(now, self._nearest.get(now.slot, {}))
        reason, detail = miss_reason(now, nearest, self.argv, key in self._expired)
        self.misses.add(now.slot, reason, detail)

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
            body, judged, judge_files = split_judge(value["observation"])
            body, network = split_network(body)
            fields = parse_runner_object(body, arm.echo)  # type: ignore[arg-type]
            checks = stored_checks(value.get("checks"), value.get("reasons"))
        except ContractError as exc:
            self._warn(f"cache {self.directory}: an entry is not a valid observation ({exc})")
            return None
        observation = observation_from(fields, (case.id, trial, arm.name), cached=True)
        observation.judged, observation.judge_files = judged, judge_files
        observation = with_network(observation, network)
        count = len(case.task.checks) if case.task is not None else 0
        if checks is not None and len(checks[0]) == count and count:
            observation = replace(observation, checks=checks[0], reasons=checks[1])
        elif case.task is not None and case.task.workspace:
            return None  # the workspace verdicts are missing: run it again
        if case.task is not None and case.task.judge_files and judge_files is None:
            return None  # the files its judge checks are shown are missing: run it again
        return observation

    def _load(self) -> dict[str, Entry]:
        """Every usable entry of this skill's directory, the newest per key."""
        index: dict[str, Entry] = {}
        oldest_ms = int((self.clock() - self.max_age_s) * 1000)
        for path in self._disk.readable():
            for entry in self._disk.entries(path):
                self._remember(entry)
                if entry.stored_at_ms < oldest_ms:
                    self._expired.add(entry.value["key"])
                    continue
                key = entry.value["key"]
                known = index.get(key)
                if known is None or entry.stored_at_ms >= known.stored_at_ms:
                    index[key] = entry
        return index

    def _remember(self, entry: Entry) -> None:
        """Keep the distinct key parts stored per (case id, trial, arm), to explain misses."""
        parts = KeyParts.from_json(entry.value.get("parts"))
        if parts is None:
            return
        known = self._nearest.setdefault(parts.slot, {})
        if parts in known or len(known) < MAX_PARTS_PER_SLOT:
            known[parts] = max(known.get(parts, 0), entry.stored_at_ms)

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
            parts = self.parts(case, trial, arm)
            line = canonical_line(
                key,
                int(self.clock() * 1000),
                observation,
                arm.echo,
                None if parts is None else parts.to_json(),
            )
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
