"""A fresh, private workspace per agent invocation: project dir, agent home, agent TMPDIR, under
a parent directory nobody can list (``$TMPDIR/skill-evals-runs-<uid>/``, mode 0300) with a
random 128-bit name."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from ..run.processes import pid_alive
from ..suite.walks import copy_tree, remove_tree, walk
from .base import RunnerSetupError, SkillRef

PARENT_PREFIX = "skill-evals-runs-"
OWNER_FILE = ".skill-evals-owner"
# The parent of every workspace: its owner may create and enter entries (write + search) but not
# list them, so one invocation cannot list another's workspace; the 128-bit random names cannot
# be guessed. (Root, and an owner who chmods it back, bypass this; content-proven evidence then
# reports any read of the tested skill in `without` as an isolation breach.)
PARENT_MODE = 0o300
NAME_BYTES = 16


def private_parent(tmp: Path | None = None) -> Path:
    """``$TMPDIR/skill-evals-runs-<uid>/`` with mode 0300, created when missing.

    Raises RunnerSetupError when it exists as something else (a symlink, a file, another
    user's directory): the runner will not put workspaces where others control them."""
    base = Path(tempfile.gettempdir()) if tmp is None else tmp
    uid = os.getuid() if hasattr(os, "getuid") else 0
    parent = base / f"{PARENT_PREFIX}{uid}"
    try:
        parent.mkdir(mode=PARENT_MODE)
    except FileExistsError:
        pass
    except OSError as exc:
        raise RunnerSetupError(f"{parent}: cannot create ({exc.strerror}); check TMPDIR") from exc
    info = os.lstat(parent)
    if not stat.S_ISDIR(info.st_mode) or (hasattr(os, "getuid") and info.st_uid != uid):
        raise RunnerSetupError(
            f"{parent}: not a directory of this user; remove it or set TMPDIR elsewhere"
        )
    if stat.S_IMODE(info.st_mode) != PARENT_MODE:
        os.chmod(parent, PARENT_MODE)
    return parent


@contextlib.contextmanager
def _listable(parent: Path) -> Iterator[None]:
    """Let this process list ``parent`` for a moment (the sweep needs to)."""
    os.chmod(parent, 0o700)
    try:
        yield
    finally:
        os.chmod(parent, PARENT_MODE)


def workspaces(parent: Path) -> list[Path]:
    """The workspaces under ``parent`` (an empty list when it cannot be listed right now)."""
    try:
        with _listable(parent):
            return sorted(parent.iterdir())
    except OSError:
        return []


def sweep_stale_workspaces(tmp: Path | None = None) -> list[Path]:
    """Remove workspaces left behind by runners that were killed (their owner process is gone).

    Returns the removed paths. Workspaces kept with --keep-workspace have no owner file and
    are never swept."""
    removed: list[Path] = []
    for candidate in workspaces(private_parent(tmp)):
        try:
            pid = int((candidate / OWNER_FILE).read_text(encoding="ascii"))
        except (OSError, ValueError):
            continue
        if pid != os.getpid() and not pid_alive(pid) and remove_tree(candidate):
            removed.append(candidate)  # one that cannot be removed is skipped, never fatal
    return removed


class Workspace:
    """A fresh temporary project dir and agent home per invocation, removed on exit.

    ``root/project`` is the agent's working directory (``--fixture`` copied in), or the
    engine's workspace ``project`` when given (never removed here);
    ``root/home`` is HOME and the agent's config dir parent, so no user/global skill, setting or
    prior session is visible; ``root/tmp`` is the agent's TMPDIR."""

    def __init__(
        self, fixture: Path | None = None, keep: bool = False, project: Path | None = None
    ) -> None:
        self._fixture = fixture
        self._keep = keep
        self._external = project is not None
        sweep_stale_workspaces()
        self.root = private_parent() / secrets.token_hex(NAME_BYTES)
        try:
            self.root.mkdir(mode=0o700)
        except OSError as exc:
            raise RunnerSetupError(f"{self.root}: cannot create ({exc.strerror})") from exc
        # The engine kills a timed-out runner's whole process group with SIGKILL, so this
        # process cannot clean up then; the owner file lets the next runner sweep it.
        (self.root / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
        # The engine's workspace when given (it owns and removes it), else a private one.
        self.project = project if project is not None else self.root / "project"
        self.home = self.root / "home"
        # The agent's TMPDIR: its temporary files go with the workspace, no run sees another's.
        self.tmp = self.root / "tmp"

    def __enter__(self) -> Workspace:
        try:
            if self._fixture is not None:
                if not self._fixture.is_dir():
                    raise RunnerSetupError(f"--fixture {self._fixture}: not a directory")
                # Into the engine's workspace, files the case's own fixture put there win.
                copy_tree(self._fixture, self.project, keep_existing=self._external)
            elif not self._external:
                self.project.mkdir()
            self.home.mkdir()
            self.tmp.mkdir()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._keep:
            (self.root / OWNER_FILE).unlink(missing_ok=True)
            print(f"skill-evals: workspace kept at {self.root}", file=sys.stderr)
        else:
            self.cleanup()

    def cleanup(self) -> None:
        """Remove the whole workspace."""
        remove_tree(self.root)

    def install_skill(self, ref: SkillRef, skills_root: Path) -> Path:
        """Copy a skill folder to ``skills_root/<name>/`` and return that path, leaving out
        what the run is judged by (:data:`JUDGING_FILES`): the agent must not read its own
        cases, expected answers or fixtures."""
        dest = skills_root / ref.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        copy_tree(ref.path, dest, skip_top=JUDGING_FILES)
        return dest

    def offer(self, refs: Sequence[SkillRef], delivery: str, native: Path) -> list[Path]:
        """Install the offered skills ``refs``: into ``native`` (the agent's own skills folder;
        nothing to serve), or for ``delivery`` ``mcp`` outside the project, returning the
        folders the MCP server is to serve."""
        if delivery == "mcp":
            return [self.install_skill(ref, self.root / "mcp-skills") for ref in refs]
        for ref in refs:
            self.install_skill(ref, native)
        return []


# Top-level entries of a skill folder that hold its evaluation, not its instructions: the
# default case-file locations (evals/cases.jsonl, evals/cases.yaml, cases.jsonl) and the
# fixtures beside them. They are never installed where the agent can read them.
JUDGING_FILES = frozenset({"evals", "cases.jsonl"})


# What a runner adds to the engine's workspace (skill folders, agent config) lies near its top;
# the listing that finds it does not enter deeper, so no depth of the agent's or a setup
# command's directories can stop a runner.
TREE_DEPTH = 16
TREE_ENTRIES = 1_000_000


def tree(project: Path) -> set[str]:
    """Every path under ``project`` down to TREE_DEPTH levels, relative (symlinks listed,
    never followed; unreadable directories skipped). TreeTooLarge past TREE_ENTRIES."""
    listing = walk(project, TREE_DEPTH, TREE_ENTRIES, on_error=lambda *_: None, prune=True)
    return {os.fsdecode(entry.rel) for entry in listing}


def remove_added(project: Path, added: set[str]) -> None:
    """Remove what the runner added to the engine's workspace (skill copies, agent config), so
    it holds the fixture plus the agent's work. A directory the runner created goes with all it
    holds by then (the agent's own config files, e.g. a ``.gitignore`` OpenCode writes into its
    ``.opencode/``); symlinks are removed, never followed."""
    for relative in sorted(added):
        if any(parent.as_posix() in added for parent in Path(relative).parents):
            continue  # inside a directory the runner added: removed with it
        remove_tree(project / relative)


def git_root(project: Path, env: Mapping[str, str], agent: str, reads: str) -> None:
    """Make ``project`` its own git root, so the agent's upward searches stop there.

    ``agent`` is the agent's display name and ``reads`` what it would read above the project
    without git; both go into the RunnerSetupError raised when git is missing or fails."""
    if (project / ".git").exists():
        return
    git = shutil.which("git", path=env.get("PATH"))
    if git is None:
        raise RunnerSetupError(
            f"git not found on PATH: {agent} needs it to treat the workspace as the project "
            f"root (without it {agent} reads {reads}); install git"
        )
    done = subprocess.run(
        [git, "init", "--quiet", "--template=", str(project)],
        env=dict(env), stdin=subprocess.DEVNULL, capture_output=True, check=False, timeout=60,
    )  # fmt: skip
    if done.returncode != 0:
        raise RunnerSetupError(f"git init in the workspace failed (status {done.returncode})")


def refuse_bundled_names(
    refs: Iterable[SkillRef], bundled: Iterable[str], ships: str, why: str
) -> None:
    """Refuse a skill named like one the agent ships (compared case-insensitively): the
    RunnerSetupError names its path, says the agent ``ships`` it and ``why`` that matters."""
    names = {name.lower() for name in bundled}
    for ref in refs:
        if ref.name.lower() in names:
            raise RunnerSetupError(
                f"{ref.path}: skill name '{ref.name}' is a skill {ships}; rename the skill ({why})"
            )
