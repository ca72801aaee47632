"""Fixtures: the directory a case names to be copied into each of its workspaces, checked when
the cases are loaded (a relative path without ``..``, no symlinks, regular files and
directories only, no ``.git`` anywhere, within the size bounds, and short enough to fit in a
workspace below TMPDIR). The copying and the workspaces themselves: run/workspace.py."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from ..checks.parse import path_problem
from .walks import TreeTooLarge, long_path_problem, walk

# The name prefix of a run's workspace root (run/workspace.py): a fixture's paths must fit below it.
ROOT_PREFIX = "skill-evals-ws-"
MAX_FIXTURE_FILES = 100_000
# A repository's metadata: never copied into a workspace, whatever the case file says (its
# config holds what CI keeps there, e.g. the job token as an extraheader).
GIT_METADATA = ".git"
_NO_GIT = (
    "fixtures never carry a repository's metadata (CI keeps its token there): "
    "make a repository in the workspace with a setup command (git init) instead"
)
MAX_FIXTURE_BYTES = 1_000_000_000
_PATH_MAX = 4096  # Linux's limit on a path, its final NUL included


def workspace_room() -> int:
    """How many bytes a path relative to a workspace may have: the system's path limit less
    the longest workspace path below TMPDIR (``<root>-<pid>-<8>/<32 hex>/workspace/``)."""
    base = len(os.fsencode(tempfile.gettempdir()))
    prefix = len(f"/{ROOT_PREFIX}{'9' * 7}-{'x' * 8}/{'x' * 32}/workspace/")
    return _PATH_MAX - 1 - base - prefix


def is_git_metadata(rel: str | bytes) -> bool:
    """Whether a fixture entry (its path relative to the fixture) is a ``.git`` file or
    directory."""
    return os.path.basename(os.fsdecode(rel)) == GIT_METADATA


def fixture_problem(base: Path, rel: str) -> str | None:
    """Why ``rel`` (relative to the cases file's directory ``base``) is not a usable fixture:
    it must be a relative path without ``..``, a directory, with no symlink on the way or
    inside, only regular files and directories, no ``.git`` on the way or inside, within the
    size bounds. None when usable."""
    problem = path_problem(rel, directory_ok=True)
    if problem is not None:
        return problem
    if GIT_METADATA in rel.rstrip("/").split("/"):
        return f"names a {GIT_METADATA} directory; {_NO_GIT}"
    current = base
    for part in rel.rstrip("/").split("/"):
        current = current / part
        try:
            info = current.lstat()
        except FileNotFoundError:
            return f"no such directory: {current}"
        except OSError as exc:
            return f"cannot read {current} ({exc.strerror})"
        if stat.S_ISLNK(info.st_mode):
            return f"{current} is a symlink; fixtures may not contain or pass through symlinks"
    if not stat.S_ISDIR(info.st_mode):
        return f"{current} is not a directory"
    files = size = 0
    room = workspace_room()
    try:
        for entry in walk(current):
            if len(entry.rel) > room:
                # Readable where it is, but its copy in a workspace below TMPDIR would pass the
                # system's limit: the same problem, found before any runner starts.
                return (
                    f"{long_path_problem(current)} (a workspace below TMPDIR leaves {room} "
                    "bytes for a path inside it)"
                )
            mode = entry.info.st_mode
            if is_git_metadata(entry.rel):
                return f"{entry.path} is {GIT_METADATA} metadata; {_NO_GIT}"
            if stat.S_ISDIR(mode):
                continue
            if stat.S_ISLNK(mode):
                return f"{entry.path} is a symlink; fixtures may not contain symlinks"
            if not stat.S_ISREG(mode):
                return f"{entry.path} is not a regular file or directory"
            files += 1
            size += entry.info.st_size
            if files > MAX_FIXTURE_FILES or size > MAX_FIXTURE_BYTES:
                return (
                    f"larger than {MAX_FIXTURE_FILES} files or {MAX_FIXTURE_BYTES} bytes; "
                    "keep fixtures small"
                )
    except TreeTooLarge as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot read {current} ({exc.strerror})"
    return None
