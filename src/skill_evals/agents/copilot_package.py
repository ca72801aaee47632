"""Copilot's own package, unpacked once per command instead of once per invocation
(docs/agents/copilot.md, "Its package, unpacked once per command").

The Copilot CLI is one executable carrying a ~235 MB package. Before it starts, it looks for
that package unpacked at ``$XDG_CACHE_HOME/copilot/pkg/<platform>/<version>/`` (a folder holding
``.extraction-complete`` and its entry files) and unpacks it there when it is not. Every
invocation's home is fresh, so without help it unpacks on every invocation (about a second and
235 MB written each time).

- Engine side (:class:`SharedPackage`): on the first sandboxed invocation, the engine has the
  CLI unpack itself with its own extract-only mode, in a sandbox of its own (no network, a
  fresh empty home, none of the caller's credentials, the folder it unpacks into its only
  writable place), into a temporary folder of the engine process (one copy per binary for
  the whole command: a ci job's skills, improve's rounds); a copy that is complete is renamed
  into place and bound **read-only** at
  ``~/.cache/copilot/pkg/<platform>/<version>`` in each invocation's sandbox home. An incomplete
  copy is never used: it is made again.
- Runner side (:func:`link_shared`): a complete copy on a read-only mount under the runner's
  HOME is linked into the agent's own fresh home, where Copilot looks.

Anything unexpected (a release that does not unpack this way, a failed unpacking) leaves the
runner as without it: Copilot unpacks into the invocation's home itself.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ..sandbox.binds import BindRefused
from ..suite.fixtures import ROOT_PREFIX
from ..suite.walks import remove_tree
from .environment import agent_env

if TYPE_CHECKING:
    from ..sandbox.bwrap import Sandbox

PACKAGE_DIR = PurePosixPath(".cache", "copilot", "pkg")  # below a HOME: <platform>/<version>
MARKER = ".extraction-complete"
# What Copilot 1.0.102 checks besides the marker before it starts from an unpacked copy.
ENTRY_FILES = ("index.js", "app.js", "cli-main.js")
# The CLI's extract-only mode: unpack into $COPILOT_PKG_CACHE_HOME/pkg/<platform>/<version>.
EXTRACT_ONLY = {"COPILOT_SEA_EXTRACT_ONLY": "1"}
UNPACK_SECONDS = 60.0  # it takes seconds; a CLI that hangs instead is not waited for long

_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def native_binary(binary: str) -> str:
    """The platform binary npm's ``copilot`` (a Node script, ``npm-loader.js``) would start,
    when it is installed next to it; else ``binary``. Started directly, the agent is the
    runner's own child: stopping it (``--max-turns``) stops Copilot, not only the Node loader
    that would leave it running."""
    real = Path(os.path.realpath(binary))
    if real.name != "npm-loader.js" or real.parent.parent.name != "@github":
        return binary
    arch = _ARCH.get(platform.machine().lower())
    system = {"linux": "linux", "darwin": "darwin"}.get(sys.platform)
    if arch is None or system is None:
        return binary
    kinds = ["linux", "linuxmusl"] if system == "linux" else [system]
    for kind in kinds:
        for scope in (real.parent.parent, real.parent / "node_modules" / "@github"):
            candidate = scope / f"copilot-{kind}-{arch}" / "copilot"
            if os.access(candidate, os.X_OK):
                return str(candidate)
    return binary


def complete(folder: Path) -> bool:
    """Whether ``folder`` (``…/<platform>/<version>``) is an unpacked copy Copilot starts
    from: the marker, the entry files and the platform's native runtime, as regular files."""
    runtime = Path("prebuilds", folder.parent.name, "runtime.node")
    needed = (MARKER, *ENTRY_FILES, runtime)
    return folder.is_dir() and all((folder / name).is_file() for name in needed)


def _holds_git(folder: Path) -> bool:
    """Whether a ``.git`` lies anywhere below ``folder`` (a bound copy must hold none)."""
    return any(".git" in dirs + files for _, dirs, files in os.walk(folder))


def unpacked(store: Path) -> Path | None:
    """The one complete copy in ``store`` (``store/pkg/<platform>/<version>``), or None when
    there is none, more than one, or one holds a ``.git``."""
    found = [p for p in sorted(store.glob("pkg/*/*")) if complete(p)]
    if len(found) != 1 or _holds_git(found[0]):
        return None
    return found[0]


def _run_extract_only(
    program: str, temp: Path, env: Mapping[str, str], sandbox: Sandbox | None
) -> bool:
    """The CLI unpacks itself into ``temp/out``; True when it exits 0 in time. A fresh empty
    home ``temp/home``, only the base variables of ``env`` (never a credential), no input; in
    ``sandbox`` unless None, ``temp`` its only writable place and no network."""
    home, out = temp / "home", temp / "out"
    child = {**agent_env(env, home), **EXTRACT_ONLY, "COPILOT_PKG_CACHE_HOME": str(out)}
    argv = [program, "--binary-version"]
    try:
        if sandbox is not None:
            argv = sandbox.trusted_command(argv, child, temp, cwd=home)
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=child, cwd=home, start_new_session=True,
        )  # fmt: skip
    except (OSError, BindRefused):
        return False
    try:
        return proc.wait(UNPACK_SECONDS) == 0
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, 9)
        proc.wait()
        return False


def unpack(
    binary: str, store: Path, env: Mapping[str, str], sandbox: Sandbox | None
) -> Path | None:
    """The complete copy of ``binary``'s package in ``store``: the one there, else unpacked
    now (in ``sandbox`` unless None) into a temporary folder beside it and renamed into place
    once complete (an incomplete one is removed first). None when the CLI does not unpack
    that way."""
    found = unpacked(store)
    if found is not None:
        return found
    if os.path.lexists(store) and not remove_tree(store):
        return None
    store.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{store.name}-", dir=store.parent))
    try:
        (temp / "home").mkdir()
        out = temp / "out"
        if not _run_extract_only(native_binary(binary), temp, env, sandbox):
            return None
        if unpacked(out) is None:
            return None  # another layout: Copilot unpacks by itself, as without this
        with contextlib.suppress(OSError):  # made meanwhile elsewhere: used when complete
            os.rename(out, store)
        return unpacked(store)
    finally:
        remove_tree(temp)


def _process_root() -> Path:
    """A folder of this engine process, named like the runs' workspace roots (so a run after a
    killed engine sweeps it), removed when the process ends."""
    root = Path(tempfile.mkdtemp(prefix=f"{ROOT_PREFIX}{os.getpid()}-copilot-"))
    atexit.register(remove_tree, root)
    return root


class SharedPackage:
    """Engine side: one unpacked copy of Copilot's package (made on first use, under
    a lock: a parallel invocation waits for it), bound read-only into each sandbox home.
    ``root``: where; None for a folder of the engine process, made on first use."""

    def __init__(self, binary: str, root: Path | None, env: Mapping[str, str]) -> None:
        self._key = hashlib.sha256(os.path.realpath(binary).encode()).hexdigest()[:16]
        self._root = root
        self._binary = binary
        self._env = dict(env)
        self._lock = threading.Lock()
        self._found: Path | None = None
        self._unusable = False

    @property
    def store(self) -> Path:
        """The folder holding the copy (``store/pkg/<platform>/<version>``)."""
        if self._root is None:
            self._root = _process_root()
        return self._root / f"copilot-package-{self._key}"

    def copy(self, sandbox: Sandbox | None) -> Path | None:
        """The complete copy (``…/pkg/<platform>/<version>``), unpacked now (in ``sandbox``
        unless None) when missing or incomplete; None when this CLI cannot be unpacked ahead
        (then for the whole run)."""
        with self._lock:
            if self._unusable:
                return None
            if self._found is None or not complete(self._found):
                self._found = unpack(self._binary, self.store, self._env, sandbox)
                self._unusable = self._found is None
            return self._found

    def binds(self, home: Path, sandbox: Sandbox | None) -> list[tuple[str, str]]:
        """``(copy, place)``: where the copy stands read-only in a sandbox whose HOME is
        ``home`` (its mount point made here); none without a copy. It is unpacked in
        ``sandbox`` (the run's) unless None."""
        found = self.copy(sandbox)
        if found is None:
            return []
        place = home / PACKAGE_DIR / found.parent.name / found.name
        place.mkdir(parents=True, exist_ok=True)
        return [(str(found), str(place))]


# One copy per binary for the whole engine process (a ci job's skills, improve's rounds).
_SHARED: dict[str, SharedPackage] = {}
_SHARED_LOCK = threading.Lock()


def shared_package(
    agent: str | None, program: str | None, env: Mapping[str, str]
) -> SharedPackage | None:
    """The engine process's :class:`SharedPackage` for the built-in Copilot runner whose
    binary ``program`` (``--bin`` or a name on ``PATH`` of ``env``) is found; else None."""
    if agent != "copilot" or not program:
        return None
    found = program if os.sep in program else shutil.which(program, path=env.get("PATH"))
    if found is None or not os.path.isfile(found):
        return None
    binary = os.path.abspath(found)
    with _SHARED_LOCK:
        if binary not in _SHARED:
            _SHARED[binary] = SharedPackage(binary, None, env)
        return _SHARED[binary]


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def link_shared(home: str | None, agent_home: Path) -> list[Path]:
    """Runner side: link each complete copy on a read-only mount under ``home`` (the runner's
    HOME, where the engine bound it) into ``agent_home`` at the same place, so Copilot starts
    from it and unpacks nothing. A writable copy (a user's own cache) is never shared with an
    agent. Returns the links made."""
    if not home:
        return []
    made: list[Path] = []
    base = Path(home)
    for folder in sorted((base / PACKAGE_DIR).glob("*/*")):
        if not (_read_only(folder) and complete(folder)):
            continue
        link = agent_home / folder.relative_to(base)
        if os.path.lexists(link):
            continue
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(folder, target_is_directory=True)
        made.append(link)
    return made
