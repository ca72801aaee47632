"""A fresh, private workspace per agent invocation: project dir, agent home, agent TMPDIR."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import TracebackType

from .base import RunnerSetupError, SkillRef

WORKSPACE_PREFIX = "skill-evals-run-"
OWNER_FILE = ".skill-evals-owner"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_workspaces(tmp: Path | None = None) -> list[Path]:
    """Remove workspaces left behind by runners that were killed (their owner process is gone).

    Returns the removed paths. Workspaces kept with --keep-workspace have no owner file and
    are never swept."""
    removed: list[Path] = []
    base = Path(tempfile.gettempdir()) if tmp is None else tmp
    for candidate in base.glob(WORKSPACE_PREFIX + "*"):
        try:
            pid = int((candidate / OWNER_FILE).read_text(encoding="ascii"))
        except (OSError, ValueError):
            continue
        if pid != os.getpid() and not _alive(pid):
            shutil.rmtree(candidate, ignore_errors=True)
            removed.append(candidate)
    return removed


class Workspace:
    """A fresh temporary project dir and agent home per invocation, removed on exit.

    ``root/project`` is the agent's working directory (``--fixture`` copied in);
    ``root/home`` is HOME and the agent's config dir parent, so no user/global skill, setting or
    prior session is visible; ``root/tmp`` is the agent's TMPDIR."""

    def __init__(self, fixture: Path | None = None, keep: bool = False) -> None:
        self._fixture = fixture
        self._keep = keep
        sweep_stale_workspaces()
        self.root = Path(tempfile.mkdtemp(prefix=WORKSPACE_PREFIX))
        # The engine kills a timed-out runner's whole process group with SIGKILL, so this
        # process cannot clean up then; the owner file lets the next runner sweep it.
        (self.root / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
        self.project = self.root / "project"
        self.home = self.root / "home"
        # The agent's TMPDIR: its temporary files go with the workspace, no run sees another's.
        self.tmp = self.root / "tmp"

    def __enter__(self) -> Workspace:
        try:
            if self._fixture is not None:
                if not self._fixture.is_dir():
                    raise RunnerSetupError(f"--fixture {self._fixture}: not a directory")
                shutil.copytree(self._fixture, self.project, symlinks=True)
            else:
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
        shutil.rmtree(self.root, ignore_errors=True)

    def install_skill(self, ref: SkillRef, skills_root: Path) -> Path:
        """Copy a skill folder to ``skills_root/<name>/`` and return that path."""
        dest = skills_root / ref.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(ref.path, dest, symlinks=True)
        return dest
