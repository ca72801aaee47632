"""Workspace checks: files the agent left in the workspace, what changed since setup, and
verifier commands run there after the runner's processes are gone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..suite.jsonl import loads_strict
from .model import (
    CHECK_SECONDS,
    PASSED,
    ChangesWithin,
    Check,
    Command,
    FileAbsent,
    FileContains,
    FileExists,
    FileMatches,
    JsonFileEquals,
    Outcome,
    Unchanged,
)
from .observed import TOO_LONG, Matcher, json_equal, shown
from .paths import PathProblem, describe, lookup, read_text
from .snapshot import Snapshot, SnapshotProblem, changed_paths, covers, take_snapshot

if TYPE_CHECKING:
    from ..run.helper_commands import Confinement


@dataclass
class WorkspaceView:
    """A finished invocation's workspace as the checks see it.

    ``before`` is the snapshot taken after setup (None when no check needs one, a string
    saying why when it could not be taken: the checks comparing with it fail with that);
    ``env`` the caller's environment (credentials are removed before a command sees it)."""

    root: Path
    env: Mapping[str, str]
    before: Snapshot | str | None = None  # a str: why the snapshot after setup failed
    cancel: threading.Event | None = None
    confinement: Confinement | None = None  # the invocation's sandbox, for `command`
    _after: Snapshot | str | None = field(default=None, repr=False)

    def after(self) -> Snapshot | str:
        """The snapshot after the run (taken once), or why it could not be taken."""
        if self._after is None:
            try:
                self._after = take_snapshot(self.root, time.monotonic() + CHECK_SECONDS)
            except SnapshotProblem as exc:
                self._after = str(exc)
            except OSError as exc:
                self._after = f"cannot read the workspace ({exc.strerror})"
        return self._after


def _fail(check: Check, why: str) -> Outcome:
    return Outcome(False, f"{check.label}: {why}")


def judge_workspace(check: Check, view: WorkspaceView, matcher: Matcher) -> Outcome:
    """One workspace check's verdict on a finished invocation's workspace (TypeError for an
    observation check)."""
    try:
        if isinstance(check, Command):
            return _command(check, view)
        if isinstance(check, (ChangesWithin, Unchanged)):
            return _changes(check, view)
        if isinstance(check, (FileExists, FileAbsent, FileContains, FileMatches, JsonFileEquals)):
            return _file(check, view.root, matcher)
        raise TypeError(f"{check.name} is an observation check")
    except OSError as exc:
        return _fail(check, f"cannot read the workspace ({exc.strerror or type(exc).__name__})")


def _file(
    check: FileExists | FileAbsent | FileContains | FileMatches | JsonFileEquals,
    root: Path,
    matcher: Matcher,
) -> Outcome:
    if isinstance(check, (FileExists, FileAbsent)):
        found = lookup(root, check.path)
        if isinstance(check, FileAbsent):
            if found.kind == "missing":
                return PASSED
            if found.kind in ("symlink", "outside", "unreadable"):
                return _fail(check, describe(found))
            return _fail(check, f"exists ({'a file' if found.kind == 'file' else found.kind})")
        return PASSED if found.kind == "file" else _fail(check, describe(found))
    try:
        text = read_text(root, check.path)
    except PathProblem as exc:
        return _fail(check, str(exc))
    if isinstance(check, FileContains):
        deadline = time.monotonic() + CHECK_SECONDS
        missing = []
        for wanted in check.text:  # a long list of strings in a large file: stay in the bound
            if time.monotonic() > deadline:
                return _fail(check, TOO_LONG)
            if wanted not in text:
                missing.append(wanted)
        if not missing:
            return PASSED
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        return _fail(check, f"{shown(missing[0])} not found{more}")
    if isinstance(check, FileMatches):
        found_match = matcher.search(check.pattern, check.flags, text)
        if found_match is None:
            return _fail(check, TOO_LONG)
        if found_match:
            return PASSED
        return _fail(check, f"pattern {shown(check.pattern)} not found")
    try:
        actual = loads_strict(text.strip())
    except (ValueError, RecursionError):
        return _fail(check, "not strict JSON")
    if json_equal(actual, check.expected):
        return PASSED
    return _fail(check, "its JSON differs from expected")


def _changes(check: ChangesWithin | Unchanged, view: WorkspaceView) -> Outcome:
    if view.before is None:
        return _fail(check, "no snapshot of the workspace after setup")
    if isinstance(view.before, str):
        return _fail(check, f"after setup: {view.before}")
    after = view.after()
    if isinstance(after, str):
        return _fail(check, after)
    changed = changed_paths(view.before, after)
    if isinstance(check, ChangesWithin):
        outside = [p for p in changed if not any(covers(entry, p) for entry in check.paths)]
        if not outside:
            return PASSED
        # Only counts: the names come from the agent and are not shown.
        return _fail(check, f"{len(outside)} file(s) changed outside the allowed paths")
    for entry in check.paths:
        touched = sum(1 for p in changed if covers(entry, p))
        if touched:
            return _fail(check, f"{shown(entry)} changed ({touched} file(s))")
    return PASSED


def _command(check: Command, view: WorkspaceView) -> Outcome:
    # Imported here: reading and scoring recorded runs never starts a process, and the helper
    # commands bring the sandbox and its proxies with them.
    from ..run.helper_commands import describe_exit, run_helper

    finished = run_helper(
        check.run, view.root, view.env, check.timeout_ms / 1000.0, view.cancel, view.confinement
    )
    if finished.returncode is not None and finished.returncode == check.expect_exit:
        return PASSED
    why = describe_exit(finished)
    if finished.returncode is not None and finished.returncode >= 0:
        why += f", expected {check.expect_exit}"
    return _fail(check, why)
