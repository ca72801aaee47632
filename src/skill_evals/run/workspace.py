"""The workspace the engine gives every invocation: a fresh private directory with the case's
fixture copied in and its setup commands run, handed to the runner as SKILL_EVALS_WORKSPACE,
judged after the run and then removed (or kept for debugging with --keep-workspaces).

All of a run's workspaces live under one private root in the system temporary directory,
created per run and removed at its end. The root has no read permission, so one invocation
cannot list another's random names; a root left by an engine that was killed outright is
removed by the next run.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..checks.model import CHECK_SECONDS
from ..checks.snapshot import Snapshot, SnapshotProblem, take_snapshot
from ..sandbox.bwrap import Sandbox
from ..suite.fixtures import ROOT_PREFIX, is_git_metadata
from ..suite.walks import TreeTooLarge, copy_tree, remove_tree, walk
from .helper_commands import NO_SKILLS, Confinement, Sight, describe_exit, run_helper
from .processes import pid_alive

SETUP_SECONDS = 60.0


# ------------------------------------------------------------------------------- fixtures


class _FixtureChanged(Exception):
    pass


def copy_fixture(source: Path, target: Path) -> None:
    """Copy the fixture's files and directories into the existing ``target`` (modes kept),
    never following a symlink; _FixtureChanged when one (or a special file) appeared, or the
    fixture grew past the walk bounds since it was checked."""
    try:
        for entry in walk(source):
            dst = target / os.fsdecode(entry.rel)
            mode = entry.info.st_mode
            if is_git_metadata(entry.rel):
                raise _FixtureChanged(f"{entry.path} is .git metadata; it is never copied")
            if stat.S_ISDIR(mode):
                dst.mkdir(mode=0o700)
            elif stat.S_ISREG(mode):
                shutil.copyfile(entry.path, dst, follow_symlinks=False)
                os.chmod(dst, stat.S_IMODE(mode) | stat.S_IRUSR | stat.S_IWUSR)
            else:
                raise _FixtureChanged(f"{entry.path} is no longer a regular file or directory")
    except TreeTooLarge as exc:
        raise _FixtureChanged(str(exc)) from None


# ------------------------------------------------------------------------------ removal


def sweep_stale_roots(tmp: Path) -> list[str]:
    """Remove workspace roots whose engine process is gone (it was killed outright). A root
    that cannot be removed is skipped: the warnings returned name it (it never blocks a run)."""
    pattern = re.compile(re.escape(ROOT_PREFIX) + r"(\d+)-")
    try:
        with os.scandir(tmp) as listing:
            candidates = [e.path for e in listing if e.name.startswith(ROOT_PREFIX)]
    except OSError:
        return []
    warnings: list[str] = []
    for candidate in sorted(candidates):
        match = pattern.match(os.path.basename(candidate))
        if match is None:
            continue
        try:
            owner = os.lstat(candidate).st_uid
        except OSError:
            continue
        pid = int(match.group(1))
        stale = owner == os.getuid() and pid != os.getpid() and not pid_alive(pid)
        if stale and not remove_tree(candidate):
            warnings.append(stale_root_warning(candidate))
    return warnings


def stale_root_warning(path: str | Path) -> str:
    """The warning for a stale workspace root that could not be removed."""
    return (
        f"{path}: a workspace root left by an ended run could not be removed; skipped "
        "(remove it by hand)"
    )


# ----------------------------------------------------------------------------- names


_SAFE = re.compile(r"[A-Za-z0-9_-]")
MAX_NAME_BYTES = 200


def safe_name(case_id: str) -> str:
    """A file name for a case id: letters, digits, ``_`` and ``-`` kept, every other character
    (``%`` and ``.`` too) percent-encoded as UTF-8, so different ids give different names and
    no id gives ``.``, ``..`` or a path. Names past 200 bytes are cut and end in a hash."""
    out = []
    for char in case_id:
        if _SAFE.fullmatch(char):
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
    name = "".join(out)
    if len(name) > MAX_NAME_BYTES:
        digest = hashlib.sha256(case_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        name = name[: MAX_NAME_BYTES - 17] + "-" + digest
    return name


# ------------------------------------------------------------------------ workspaces


@dataclass
class Prepared:
    """One invocation's workspace, ready for the runner (``failure`` None) or not."""

    slot: Path  # the invocation's private directory: workspace/, tmp/ and home/
    workspace: Path  # W, handed to the runner as SKILL_EVALS_WORKSPACE
    tmp: Path  # the runner's TMPDIR, removed with the slot
    home: Path  # the sandbox's empty HOME, removed with the slot
    sight: Sight = field(default_factory=Sight)  # the skills its children see
    before: Snapshot | str | None = None  # after setup, when a check compares with it
    failure: str | None = None  # a runner failure reason ("setup: command 1 ...")
    interrupted: bool = False


class WorkspaceRoot:
    """The private root of one run's workspaces. Use as a context manager: leaving it removes
    every workspace that is still there."""

    def __init__(
        self, keep_dir: Path | None = None, tmp: Path | None = None, sandbox: Sandbox | None = None
    ) -> None:
        base = Path(tempfile.gettempdir()) if tmp is None else tmp
        # Shown once each (stderr and the report's messages); never a reason to stop.
        self.warnings = sweep_stale_roots(base)
        self.path = Path(tempfile.mkdtemp(prefix=f"{ROOT_PREFIX}{os.getpid()}-", dir=base))
        os.chmod(self.path, 0o300)  # enter by name, never list
        self.keep_dir = keep_dir
        self.sandbox = sandbox  # setup commands and `command` checks run in it when set
        self._lock = threading.Lock()

    def prepare(
        self,
        fixture: Path | None,
        setup: tuple[tuple[str, ...], ...],
        env: Mapping[str, str],
        snapshot: bool,
        cancel: threading.Event | None = None,
        sight: Sight = NO_SKILLS,
    ) -> Prepared:
        """A fresh workspace with the fixture copied in and the setup commands run in it
        (seeing the skills ``sight`` allows)."""
        slot = self.path / secrets.token_hex(16)
        prepared = Prepared(slot, slot / "workspace", slot / "tmp", slot / "home", sight)
        try:
            for directory in (slot, prepared.workspace, prepared.tmp, prepared.home):
                directory.mkdir(mode=0o700)
        except OSError as exc:
            prepared.failure = f"workspace: cannot create it in {self.path} ({exc.strerror})"
            return prepared
        if fixture is not None:
            try:
                copy_fixture(fixture, prepared.workspace)
            except _FixtureChanged as exc:
                prepared.failure = f"fixture: {exc}"
                return prepared
            except OSError as exc:
                prepared.failure = f"fixture: cannot copy {fixture} ({exc.strerror})"
                return prepared
        for number, argv in enumerate(setup, 1):
            finished = run_helper(
                argv,
                prepared.workspace,
                env,
                SETUP_SECONDS,
                cancel,
                self.confinement(prepared),
                by="setup",
            )
            if finished.problem == "interrupted":
                prepared.interrupted = True
                return prepared
            if finished.returncode != 0:
                prepared.failure = f"setup: command {number} {describe_exit(finished)}"
                return prepared
        if snapshot:
            try:
                prepared.before = take_snapshot(
                    prepared.workspace, time.monotonic() + CHECK_SECONDS
                )
            except SnapshotProblem as exc:
                prepared.before = str(exc)  # the checks comparing with it fail with this
            except OSError as exc:
                prepared.before = f"cannot read the workspace ({exc.strerror})"
        return prepared

    def confinement(self, prepared: Prepared) -> Confinement:
        """Where the invocation's setup commands and `command` checks run."""
        return Confinement(self.sandbox, prepared.tmp, prepared.home, prepared.sight)

    def dispose(self, prepared: Prepared, case_id: str, trial: int, variant: str) -> str | None:
        """Remove the invocation's directory, after moving the workspace to
        ``keep_dir/<case id>/<trial>/<variant>/`` when keeping. A problem moving it is
        returned (the workspace is removed anyway)."""
        problem = None
        if self.keep_dir is not None:
            target = self.keep_dir / safe_name(case_id) / str(trial) / variant
            try:
                with self._lock:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    if target.exists() or target.is_symlink():
                        remove_tree(target)  # an earlier attempt of this invocation
                _move_tree(prepared.workspace, target)
                try:
                    cut_outward_links(target)
                except (OSError, TreeTooLarge):
                    remove_tree(target)  # never kept with an outward symlink left in it
                    raise
            except OSError as exc:
                problem = f"cannot keep the workspace in {target} ({exc.strerror})"
            except TreeTooLarge as exc:
                problem = f"cannot keep the workspace in {target}: {exc}"
        remove_tree(prepared.slot)
        return problem

    def close(self) -> None:
        """Remove the root and everything still in it."""
        with contextlib.suppress(OSError):
            os.chmod(self.path, 0o700)
        remove_tree(self.path)

    def __enter__(self) -> WorkspaceRoot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _move_tree(source: Path, target: Path) -> None:
    try:
        os.rename(source, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        copy_tree(source, target)  # another filesystem; TreeTooLarge past the walk bounds


def cut_outward_links(root: Path) -> None:
    """In a kept workspace, replace each symlink whose target lies outside ``root`` (an agent
    may plant one to ``~/.ssh/id_rsa``) with a regular file holding ``symlink to <target>
    removed`` (the target text escaped). TreeTooLarge past the walk bounds."""
    given, top = os.path.abspath(root), os.path.realpath(root)
    for entry in walk(given):
        if not stat.S_ISLNK(entry.info.st_mode):
            continue
        try:
            text = os.readlink(entry.path)
        except OSError:
            continue
        lexical = os.path.normpath(os.path.join(os.path.dirname(entry.path), text))
        if _within(lexical, given) and _within(os.path.realpath(entry.path), top):
            continue
        shown = os.fsencode(text).decode("ascii", "backslashreplace")
        shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in shown)
        os.unlink(entry.path)
        fd = os.open(entry.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(f"symlink to {shown} removed\n")


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def check_keep_dir(keep_dir: Path) -> str | None:
    """Why --keep-workspaces DIR cannot be used (it must be new or empty), or None."""
    if keep_dir.exists() and not keep_dir.is_dir():
        return "not a directory"
    if keep_dir.is_dir():
        try:
            if any(keep_dir.iterdir()):
                return "not empty; give a new or empty directory (workspaces are moved there)"
        except OSError as exc:
            return f"cannot read it ({exc.strerror})"
    return None
