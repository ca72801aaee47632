"""The observation cache: ``--cache DIR`` (docs/cost.md).

Owner: execution.

Every valid observation a run produces is appended to the cache under its key (cache_key.py);
a later run that plans the same invocation reuses it instead of paying for it again, as long as
the entry is younger than ``--cache-max-age``. Failures are never stored.

Layout and concurrency: ``DIR/<skill>/<time>-<pid>-<random>.jsonl``. Each process appends only
to files it created itself (``O_EXCL``), one ``write`` per line under a lock, and starts a new
file before one could pass the input-file limit, so any number of skills, jobs and matrix
shards can share a directory without ever interleaving lines. A line is visible to readers
only once it ends in a newline; a half-written last line (a killed run) is ignored.

Reading follows the strict JSONL rules, bounded: newest files first, at most MAX_FILES files and
MAX_TOTAL_BYTES bytes per skill. A cache is disposable, so nothing in it is ever an error: a
file that is not ours, or a line that is not a valid entry, is skipped with a warning (lines
before it are used), and the run goes on.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from .cache_key import canonical_json, observation_key
from .cases import Case
from .errors import InvalidInput
from .jsonl import MAX_FILE_BYTES, MAX_RECORD_BYTES, iter_jsonl_values, open_regular_file
from .observations import ContractError, Observation, Variant, parse_runner_object
from .skill import directory_sha256, directory_sha256_without
from .workspace import safe_name

FORMAT = 1  # the "skillEvalsCache" value of every entry
MAX_FILES = 10_000  # per skill directory, newest first
MAX_TOTAL_BYTES = 200_000_000  # per skill directory, newest first
ROTATE_BYTES = MAX_FILE_BYTES - 2 * MAX_RECORD_BYTES  # a file always stays readable
PRUNE_AFTER_S = 30 * 86_400  # cache files last written longer ago are removed (see _prune)
_FILE_NAME = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9]+-[0-9a-f]{8}\.jsonl")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ENTRY_KEYS = frozenset({"skillEvalsCache", "key", "storedAt", "observation", "checks", "reasons"})
MAX_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
MAX_AGE_LIMIT_S = 3650 * 86_400
DEFAULT_MAX_AGE = "7d"


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


@dataclass(frozen=True)
class Entry:
    """One usable line of the cache: when it was stored, and the line's object."""

    stored_at_ms: int
    value: dict[str, Any]


def _complete_lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The chunks up to the last newline: a line still being written (or torn by a kill) is
    not an entry yet."""
    held = b""
    for chunk in chunks:
        data = held + chunk if held else chunk
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut]
        held = data[cut:]


def _entry_problem(value: dict[str, Any]) -> str | None:
    """Why a line is not a cache entry of this format, or None."""
    if value.get("skillEvalsCache") != FORMAT:
        return "not a skill-evals cache entry (of this format)"
    if not set(value) <= _ENTRY_KEYS:
        return "an entry with an unknown key"
    key, stored = value.get("key"), value.get("storedAt")
    if not isinstance(key, str) or not _HEX64.fullmatch(key):
        return "key 'key' must be a SHA-256 in hex"
    if type(stored) is not int or stored < 0:
        return "key 'storedAt' must be a non-negative integer (milliseconds)"
    if not isinstance(value.get("observation"), dict):
        return "key 'observation' must be an object"
    return None


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
        self._fd: int | None = None
        self._written = 0
        self._store_failed = False
        self._pruned = False

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
            checks = _checks(value.get("checks"), value.get("reasons"))
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
        for path in self._files():
            for entry in self._read(path):
                if entry.stored_at_ms < oldest_ms:
                    continue
                key = entry.value["key"]
                known = index.get(key)
                if known is None or entry.stored_at_ms >= known.stored_at_ms:
                    index[key] = entry
        return index

    def _files(self) -> list[Path]:
        """The cache files to read, newest first, within the bounds; warnings for the rest."""
        try:
            st = os.lstat(self.directory)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self._warn(f"cache {self.directory}: cannot read ({exc.strerror}); not used")
            return []
        if not stat.S_ISDIR(st.st_mode):
            self._warn(f"cache {self.directory}: not a directory; not used")
            return []
        found: list[tuple[str, Path, int]] = []
        foreign: list[str] = []
        try:
            with os.scandir(self.directory) as entries:
                for item in entries:
                    if _FILE_NAME.fullmatch(item.name) and item.is_file(follow_symlinks=False):
                        found.append((item.name, Path(item.path), item.stat().st_size))
                    elif not item.name.startswith(".nfs"):
                        foreign.append(item.name)
        except OSError as exc:
            self._warn(f"cache {self.directory}: cannot list ({exc.strerror}); not used")
            return []
        if foreign:
            more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
            self._warn(
                f"cache {self.directory}: {_shown(sorted(foreign)[0])}{more} is not a cache "
                "file; skipped"
            )
        found.sort(reverse=True)  # names start with the UTC time they were created
        chosen: list[Path] = []
        total = 0
        for _, path, size in found:
            if len(chosen) >= MAX_FILES or total + size > MAX_TOTAL_BYTES:
                self._warn(
                    f"cache {self.directory}: {len(found) - len(chosen)} older file(s) past "
                    f"the reading bound ({MAX_FILES} files, {MAX_TOTAL_BYTES} bytes) ignored; "
                    "remove the directory to start afresh"
                )
                break
            chosen.append(path)
            total += size
        return chosen

    def _read(self, path: Path) -> Iterator[Entry]:
        """The entries of one file, up to its first line that is not one (then a warning)."""
        try:
            fd = open_regular_file(path, "cache file")
        except InvalidInput as exc:
            self._warn(f"{exc}; skipped")
            return
        handle = os.fdopen(fd, "rb", buffering=0)
        with handle:
            chunks = iter(lambda: handle.read(1 << 20), b"")
            try:
                for line, value in iter_jsonl_values(_complete_lines(chunks), path):
                    problem = _entry_problem(value)
                    if problem is not None:
                        self._warn(f"cache file {path}:{line}: {problem}; the rest is skipped")
                        return
                    yield Entry(value["storedAt"], value)
            except InvalidInput as exc:
                self._warn(f"cache file {exc}; the rest is skipped")
            except OSError as exc:
                self._warn(f"cache file {path}: cannot read ({exc.strerror}); the rest is skipped")

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
                self._append(line)
            except OSError as exc:
                self._store_failed = True
                self._warn(f"cache {self.directory}: cannot write ({exc.strerror}); not stored")
                return
            self.stored += 1

    def _append(self, line: bytes) -> None:
        if self._fd is not None and self._written + len(line) > ROTATE_BYTES:
            self.close_file()
        if self._fd is None:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not self._pruned:
                self._pruned = True
                self._prune()
            name = "{}-{}-{}.jsonl".format(
                time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self.clock())),
                os.getpid(),
                secrets.token_hex(4),
            )
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
            self._fd = os.open(self.directory / name, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
            self._written = 0
        view = memoryview(line)
        while view:
            view = view[os.write(self._fd, view) :]
        self._written += len(line)

    def _prune(self) -> None:
        """Remove this skill's cache files last written more than PRUNE_AFTER_S ago (or twice
        the max age, if that is longer): their entries are past any age a run reuses, and a
        cache restored and saved run after run would otherwise only grow. Only files named as
        this cache names them are touched; a file that cannot be removed stays."""
        keep_s = max(PRUNE_AFTER_S, 2 * self.max_age_s)
        oldest = self.clock() - keep_s
        try:
            with os.scandir(self.directory) as entries:
                stale = [
                    Path(item.path)
                    for item in entries
                    if _FILE_NAME.fullmatch(item.name)
                    and item.is_file(follow_symlinks=False)
                    and item.stat(follow_symlinks=False).st_mtime < oldest
                ]
        except OSError:
            return
        for path in stale:
            with contextlib.suppress(OSError):
                path.unlink()

    def close_file(self) -> None:
        """Close the file this process appends to (the next store starts a new one)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        """Finish: close the file (idempotent)."""
        with self._lock:
            self.close_file()

    def _warn(self, text: str) -> None:
        if text not in self.messages and len(self.messages) < 20:
            self.messages.append(text)


def _checks(
    raw: object, raw_reasons: object
) -> tuple[tuple[bool, ...], tuple[str | None, ...] | None] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(item, bool) for item in raw):
        raise ContractError("wrong-typed key 'checks': must be an array of booleans")
    reasons: tuple[str | None, ...] | None = None
    if isinstance(raw_reasons, list) and len(raw_reasons) == len(raw):
        reasons = tuple(r[:300] if isinstance(r, str) else None for r in raw_reasons)
    return tuple(raw), reasons


def canonical_line(key: str, stored_at_ms: int, observation: Observation, echo: str) -> bytes:
    """The cache line of one observation (the runner's fields, the engine's check verdicts
    and their short reasons), newline-terminated."""
    record = observation.to_record()
    body = {k: v for k, v in record.items() if k not in ("caseId", "trial", "checks", "cached")}
    body["variant"] = echo
    entry: dict[str, Any] = {
        "skillEvalsCache": FORMAT,
        "key": key,
        "storedAt": stored_at_ms,
        "observation": body,
    }
    if observation.checks is not None:
        entry["checks"] = list(observation.checks)
        if observation.reasons is not None:
            entry["reasons"] = list(observation.reasons)
    return canonical_json(entry) + b"\n"


def _shown(name: str) -> str:
    clean = "".join(c if c.isprintable() else "?" for c in name)
    return repr(clean if len(clean) <= 60 else clean[:60] + "…")
