"""The folders of a GitHub Actions job, which no sandbox may see just because they lie in a
system directory (docs/sandbox.md, "What stays shared").

A self-hosted runner installed under ``/opt`` (or ``/usr/local``, ``/srv`` …) keeps the
checkout (the job token in ``.git/config``), its temporary files and its own credentials
inside a directory that every sandbox shares read-only. These folders get the treatment of
any other place outside the system directories: an empty directory stands over them, and
only what the trusted side names is bound inside (its ``.git`` directories masked). The
runner's credential files stand empty wherever a bound directory holds them.

The folders come from the engine's own environment (the job's), read once when the
sandbox is made: never from a case, a skill or a child's environment.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .binds import SYSTEM_DIRS, in_system

# The runner's own secrets at its root (its registration, its key, its OAuth client).
RUNNER_SECRETS = (".credentials", ".credentials_rsaparams", ".runner")
_WORK = "_work"


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _named(environ: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """The job's folders as the environment names them (absolute paths only), and the
    runner roots among them (the folder holding ``_work``)."""
    folders: list[str] = []
    roots: list[str] = []
    for key in ("GITHUB_WORKSPACE", "RUNNER_TEMP"):
        value = environ.get(key, "")
        if os.path.isabs(value):
            folders.append(os.path.normpath(value))
    workspace = environ.get("GITHUB_WORKSPACE", "")
    if os.path.isabs(workspace):
        parts = Path(os.path.normpath(workspace)).parts
        if _WORK in parts[1:]:
            last = len(parts) - 1 - parts[::-1].index(_WORK)
            roots.append(str(Path(*parts[:last])))
    runner_workspace = environ.get("RUNNER_WORKSPACE", "")
    if os.path.isabs(runner_workspace):
        work = os.path.dirname(os.path.normpath(runner_workspace))
        folders.append(work)
        if os.path.basename(work) == _WORK:
            roots.append(os.path.dirname(work))
    roots = [r for r in dict.fromkeys(roots) if r != "/"]
    return [*folders, *roots], roots


def _strictly_in_system(path: str) -> bool:
    """In a system directory, and neither one of them nor above one (hiding ``/opt`` or
    ``/`` would hide the system itself)."""
    return in_system(path) and not any(_within(d, path) for d in SYSTEM_DIRS)


def _outermost(paths: Iterable[str]) -> tuple[str, ...]:
    found: list[str] = []
    for path in sorted(set(paths), key=lambda p: Path(p).parts):
        if not any(_within(path, kept) for kept in found):
            found.append(path)
    return tuple(found)


@dataclass(frozen=True)
class JobFolders:
    """``hidden``: the real directories that stand empty (outermost first); ``inside``:
    every form (as named, and real) of a job folder in a system directory, where nothing
    is shared as a system directory; ``secrets``: the runner's credential files."""

    hidden: tuple[str, ...] = ()
    inside: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()  # the tool cache inside a job folder: shared read-only

    @classmethod
    def of(cls, environ: Mapping[str, str]) -> JobFolders:
        """The job folders that ``environ`` (the engine's own) names."""
        folders, roots = _named(environ)
        forms = {f for folder in folders for f in (folder, os.path.realpath(folder))}
        inside = _outermost(f for f in forms if _strictly_in_system(f))
        hidden = tuple(f for f in inside if os.path.isdir(f) and f == os.path.realpath(f))
        secrets = {
            os.path.join(form, name)
            for root in roots
            for form in (root, os.path.realpath(root))
            for name in RUNNER_SECRETS
            if os.path.lexists(os.path.join(form, name))
        }
        # The tool cache (setup-python's, setup-node's …) holds programs and no secret: like
        # a system directory it stays in sight, also inside the runner's hidden root.
        cache = environ.get("RUNNER_TOOL_CACHE", "")
        tools: tuple[str, ...] = ()
        if os.path.isabs(cache):
            real = os.path.realpath(cache)
            if os.path.isdir(real) and any(_within(real, j) and real != j for j in hidden):
                tools = (real,)
        return cls(hidden, inside, tuple(sorted(secrets)), tools)

    def shared(self, path: str) -> bool:
        """Whether ``path`` is shared as part of a system directory: in one, and in no job
        folder (as written or by its real path) unless in the tool cache."""
        if not in_system(path):
            return False
        real = os.path.realpath(path)
        if any(_within(real, t) for t in self.tools):
            return True
        return not any(_within(path, j) or _within(real, j) for j in self.inside)

    def secret(self, path: str) -> bool:
        """Whether ``path`` is (or lies in) one of the runner's credential files."""
        forms = (path, os.path.realpath(path))
        return any(_within(f, s) for f in forms for s in self.secrets)

    def secrets_below(self, directories: Iterable[str]) -> list[str]:
        """The credential files that lie below one of ``directories``."""
        dirs = [d for path in directories for d in (path, os.path.realpath(path))]
        return [s for s in self.secrets if any(_within(s, d) and s != d for d in dirs)]
