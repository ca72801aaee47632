"""The gate's history (docs/report.md, "Trends"): one line per skill and run in
``history.jsonl`` beside the cache, read back for the trend charts of summary.md, the comment
and report.html.

A history is disposable: a line that is not valid JSON or not exactly a history record is
skipped with one warning naming the file and line, never an error. The file stays bounded:
before a run appends, a skill with more than :data:`KEEP_PER_SKILL` records makes the file be
rewritten (a temporary file in the same folder, then a rename) keeping each skill's newest.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..report.trends import CHARTED
from ..suite.jsonl import MAX_FILE_BYTES, MAX_RECORD_BYTES, loads_strict, open_regular_file
from .git import GitError, run_git

SCHEMA_VERSION = 1
KEEP_PER_SKILL = 500
FILE_NAME = "history.jsonl"
KEYS = ("schemaVersion", "skill", "date", "commit", "status", "f1", "uplift", "passRate",
        "costUsd")  # fmt: skip
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_SHA = re.compile(r"[0-9a-f]{40}")

Warn = Callable[[str], None]


def history_path(setting: str | bool | None, cache_dir: str | None, root: Path) -> Path | None:
    """Where the history lives: ``history: FILE`` (relative to the repository root), else
    ``history.jsonl`` in the cache directory; None with ``history: false`` or no cache."""
    if setting is False:
        return None
    if isinstance(setting, str):
        return root / setting
    return None if cache_dir is None else root / cache_dir / FILE_NAME


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _nullable_number(value: object) -> bool:
    return value is None or _number(value)


def record_problem(value: Mapping[str, Any]) -> str | None:
    """Why ``value`` is not a history record (None when it is one)."""
    if tuple(sorted(value)) != tuple(sorted(KEYS)):
        return "not a history record (its keys differ)"
    checks: list[tuple[bool, str]] = [
        (value["schemaVersion"] == SCHEMA_VERSION and _number(value["schemaVersion"]),
         "schemaVersion is not 1"),
        (isinstance(value["skill"], str) and 0 < len(value["skill"]) <= 1024, "skill"),
        (isinstance(value["date"], str) and bool(_DATE.fullmatch(value["date"])), "date"),
        (value["commit"] is None or (isinstance(value["commit"], str)
                                     and bool(_SHA.fullmatch(value["commit"]))), "commit"),
        (value["status"] in ("pass", "fail"), "status"),
        (_nullable_number(value["f1"]), "f1"),
        (_uplift_ok(value["uplift"]), "uplift"),
        (_pass_rate_ok(value["passRate"]), "passRate"),
        (_nullable_number(value["costUsd"]), "costUsd"),
    ]  # fmt: skip
    for ok, field in checks:
        if not ok:
            return field if " " in field else f"field {field} is not valid"
    return None


def _uplift_ok(value: object) -> bool:
    if value is None:
        return True
    return (
        isinstance(value, dict)
        and set(value) == {"difference", "lower", "upper"}
        and all(_nullable_number(v) for v in value.values())
    )


def _pass_rate_ok(value: object) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"with", "without"}
        and all(_nullable_number(v) for v in value.values())
    )


def _read_bytes(path: Path, warn: Warn) -> bytes:
    """The file's first MAX_FILE_BYTES bytes (b"" when it does not exist or cannot be read)."""
    if not os.path.lexists(path):
        return b""  # the first run: nothing to read yet
    try:
        fd = open_regular_file(path, "history file")
    except (InvalidInput, OSError) as exc:
        warn(f"{exc}; the history is not used")
        return b""
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        warn(f"{path}: larger than {MAX_FILE_BYTES:,} bytes; only the first are read")
        data = data[:MAX_FILE_BYTES]
        data = data[: data.rfind(b"\n") + 1]
    return data


def read_history(path: Path, warn: Warn) -> list[dict[str, Any]]:
    """The valid records of ``path`` in file order; one warning per line skipped."""
    records = []
    data = _read_bytes(path, warn)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        raw = raw.removesuffix(b"\r")
        if not raw.strip(b" \t"):
            continue
        problem, value = _parse(raw)
        if problem is None and value is not None:
            problem = record_problem(value)
        if problem is not None or value is None:
            warn(f"{path}:{lineno}: {problem}; skipped")
            continue
        records.append(value)
    return records


def _parse(raw: bytes) -> tuple[str | None, dict[str, Any] | None]:
    if len(raw) > MAX_RECORD_BYTES:
        return f"longer than {MAX_RECORD_BYTES} bytes", None
    try:
        value = loads_strict(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return "not UTF-8", None
    except ValueError as exc:
        return f"not valid JSON ({str(exc).split(':', 1)[0][:80]})", None
    if not isinstance(value, dict):
        return "not a JSON object", None
    return None, value


def run_commit(env: Mapping[str, str], root: Path) -> str | None:
    """The commit the run evaluated: ``$GITHUB_SHA``, else ``git rev-parse HEAD``, else None."""
    given = env.get("GITHUB_SHA", "").strip().lower()
    if _SHA.fullmatch(given):
        return given
    try:
        head = run_git(root, "rev-parse", "--verify", "--quiet", "HEAD").decode("ascii").strip()
    except (GitError, UnicodeDecodeError):
        return None
    return head if _SHA.fullmatch(head) else None


def new_record(
    name: str, report: Mapping[str, Any], date: str, commit: str | None
) -> dict[str, Any]:
    """This run's line for one skill, its figures taken from the skill's report."""
    task = report.get("task") if isinstance(report.get("task"), dict) else None
    uplift = None
    if task is not None and _number(task.get("difference")):
        interval = task.get("interval") or {}
        uplift = {"difference": task["difference"], "lower": interval.get("lower"),
                  "upper": interval.get("upper")}  # fmt: skip
    rates = {arm: ((task or {}).get(arm) or {}).get("passRate") for arm in ("with", "without")}
    runner = report.get("runner") or {}
    cost = (runner.get("meta") or {}).get("costUsd")
    return {
        "schemaVersion": SCHEMA_VERSION, "skill": name, "date": date, "commit": commit,
        "status": report["status"], "f1": (report.get("trigger") or {}).get("f1"),
        "uplift": uplift, "passRate": rates, "costUsd": cost if _number(cost) else None,
    }  # fmt: skip


def _line(record: Mapping[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def _rewrite(path: Path, records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Keep each skill's newest KEEP_PER_SKILL records (in file order): a temporary file in
    the same folder, renamed over ``path``. Returns what was kept."""
    seen: dict[str, int] = {}
    kept: list[dict[str, Any]] = []
    for record in reversed(records):
        count = seen.get(record["skill"], 0)
        if count < KEEP_PER_SKILL:
            seen[record["skill"]] = count + 1
            kept.append(dict(record))
    kept.reverse()
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(b"".join(_line(r) for r in kept))
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return kept


def _append(path: Path, data: bytes) -> None:
    """Append ``data`` in one write to the regular file ``path`` (created when missing). A
    symlink, FIFO or device there is never written through: OSError."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        os.write(fd, data)
    finally:
        os.close(fd)


def update_history(
    path: Path, entries: Sequence[tuple[str, Mapping[str, Any]]], commit: str | None, warn: Warn
) -> list[dict[str, Any]]:
    """Append one record per (skill name, report) whose status is pass or fail; return every
    valid record after the run (for the charts). Trouble writing is a warning."""
    records = read_history(path, warn)
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    added = [new_record(name, report, date, commit) for name, report in entries
             if report.get("status") in ("pass", "fail")]  # fmt: skip
    if not added:
        return records
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        counts: dict[str, int] = {}
        for record in records:
            counts[record["skill"]] = counts.get(record["skill"], 0) + 1
        if any(count > KEEP_PER_SKILL for count in counts.values()):
            records = _rewrite(path, records)
        _append(path, b"".join(_line(r) for r in added))
    except OSError as exc:
        warn(f"{path}: cannot write the history ({exc.strerror}); this run is not recorded")
        return records
    return [*records, *added]


def trends_of(names: Sequence[str], records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per skill of ``names`` that has records, its last CHARTED records' figures: the
    report.json ``trends`` items."""
    by_skill: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        by_skill.setdefault(record["skill"], []).append(record)
    trends = []
    for name in names:
        charted = by_skill.get(name, [])[-CHARTED:]
        if charted:
            f1 = [r["f1"] for r in charted]
            uplift = [(r["uplift"] or {}).get("difference") for r in charted]
            trends.append({"skill": name, "f1": f1, "uplift": uplift})
    return trends


def record_run(
    setting: str | bool | None,
    cache_dir: str | None,
    root: Path,
    ci_report: Mapping[str, Any],
    env: Mapping[str, str],
    warn: Warn,
) -> list[dict[str, Any]] | None:
    """After a gate run: append its records to the history and return the trends of the
    skills it evaluated (None: the run keeps no history)."""
    path = history_path(setting, cache_dir, root)
    if path is None:
        return None
    evaluated = [
        (str(s["name"]), s["report"])
        for s in ci_report.get("skills") or []
        if s.get("status") == "evaluated" and isinstance(s.get("report"), dict)
    ]
    if not evaluated:
        return []
    commit = run_commit(env, root)
    records = update_history(path, evaluated, commit, warn)
    return trends_of([name for name, _ in evaluated], records)
