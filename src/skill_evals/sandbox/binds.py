"""What a sandboxed child sees of the host beyond the system directories, and who chooses it
(docs/sandbox.md, "What is bound").

Only the trusted side chooses a mount: the runner command (the command line, the job's
configuration), the agent binary, ``--sandbox-path`` and the engine's own places (the
workspace, the skill directories of the arm). A case's ``setup`` and ``command`` argv choose
nothing: what they name is visible only when it lies in those places already.

- The runner's program: the file itself (after the ``PATH`` lookup, and its real path), plus
  the directory above ``bin`` when it lies in one (a toolchain, a virtual environment); a
  program inside a ``node_modules`` tree brings that tree (its packages load their siblings).
  The same for its ``#!`` interpreter. Its arguments naming files bind those files,
  directories those directories.
- A bound virtual environment (``pyvenv.cfg``) brings its base interpreter's prefix (``home``)
  and the targets of its ``bin/python*`` links.
- No ``.git`` directory is ever visible: nothing inside one is bound, and every ``.git`` below
  a bound directory gets an empty read-only tmpfs over it (:class:`GitMasks`).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

SYSTEM_DIRS = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
    "/nix/store", "/run/systemd/resolve",
)  # fmt: skip
GIT = ".git"
_SHEBANG_BYTES = 256
_MAX_ARG_CHARS = 4096
_INTERPRETER_LEVELS = 3
_MAX_LINKS = 40  # as the kernel's own bound on a chain of symbolic links
# The .git walk: directory levels and entries below one bound directory (a toolchain holds
# tens of thousands; scandir reads them cheaply, once per run).
MASK_MAX_DEPTH = 256
MASK_MAX_ENTRIES = 1_000_000


class BindRefused(Exception):
    """A directory the trusted side named cannot be checked for ``.git`` directories (too
    deep or too large): it is not bound, and the child does not start. ``str()`` says why."""


def in_system(path: str) -> bool:
    """Whether ``path`` lies in a system directory (bound for every child anyway)."""
    return any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRS)


def in_git(path: str) -> bool:
    """Whether ``path`` or its real path lies in (or is) a ``.git`` directory."""
    return GIT in Path(path).parts or GIT in Path(os.path.realpath(path)).parts


def lookup(name: str, cwd: str, env: Mapping[str, str]) -> str | None:
    """``name`` as the system would start it: a path relative to ``cwd``, else on ``PATH``."""
    if os.sep in name:
        found = os.path.join(cwd, name)
        return os.path.normpath(found) if os.path.exists(found) else None
    return shutil.which(name, path=env.get("PATH", os.defpath))


def interpreter(path: str, env: Mapping[str, str]) -> str | None:
    """The program a ``#!`` line of ``path`` names (``env NAME``: looked up on ``PATH``)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SHEBANG_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        return shutil.which(rest[0], path=env.get("PATH", os.defpath)) if rest else None
    return words[0]


def _program_file(path: str) -> list[str]:
    """A program's binds: the file, and the prefix above ``bin`` when it lies in one (the
    version manager's tree for one of its ``shims``); the whole tree for a program inside
    ``node_modules`` (the agent CLIs)."""
    parts = Path(path).parts
    if "node_modules" in parts[:-1]:
        return [str(Path(*parts[: parts.index("node_modules") + 1]))]
    found = [path]
    parent = os.path.dirname(path)
    if os.path.basename(parent) == "bin" and os.path.dirname(parent) not in ("", "/"):
        found.append(os.path.dirname(parent))
    if os.path.basename(parent) == "shims" and _version_manager(os.path.dirname(parent)):
        found.append(os.path.dirname(parent))
    return found


def _version_manager(root: str) -> bool:
    """Whether ``root`` is a version manager's tree (pyenv, rbenv, nodenv: ``libexec`` and
    ``versions``; asdf: ``installs``): its shims run the manager from there, so a
    ``#!/usr/bin/env python3`` found in ``shims`` needs the tree. Never ``/`` or the home."""
    if root in ("", "/") or root == os.path.expanduser("~"):
        return False
    marks = (("libexec", "versions"), ("installs",))
    return any(all(os.path.isdir(os.path.join(root, d)) for d in mark) for mark in marks)


def program_paths(argv0: str, cwd: str, env: Mapping[str, str]) -> list[str]:
    """What a trusted program ``argv0`` binds: for it after the ``PATH`` lookup and for its
    real path, and the same for its ``#!`` interpreter (two levels); a bound virtual
    environment brings its base interpreter (:func:`venv_base`)."""
    found: list[str] = []
    program = lookup(argv0, cwd, env)
    for _level in range(_INTERPRETER_LEVELS):
        if program is None:
            break
        real = os.path.realpath(program)
        for path in dict.fromkeys((os.path.abspath(program), real)):
            for bound in _program_file(path):
                found.append(bound)
                found += venv_base(bound)
        program = interpreter(real, env)
    return found


def venv_base(directory: str) -> list[str]:
    """For a virtual environment (``pyvenv.cfg``): its base interpreter's prefix (``home``,
    the directory above ``bin``) and the targets of its ``bin/python*`` links, so a pyenv,
    uv or asdf Python works inside. Nothing for anything else."""
    config = os.path.join(directory, "pyvenv.cfg")
    if not os.path.isfile(config):
        return []
    found: list[str] = []
    try:
        with open(config, encoding="utf-8", errors="replace") as handle:
            lines = handle.read(64 * 1024).splitlines()
    except OSError:
        lines = []
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and key.strip() == "home" and os.path.isabs(value.strip()):
            home = os.path.normpath(value.strip())
            found.append(os.path.dirname(home) if os.path.basename(home) == "bin" else home)
    bindir = os.path.join(directory, "bin")
    try:
        names = sorted(n for n in os.listdir(bindir) if n.startswith("python"))
    except OSError:
        names = []
    for name in names:
        link = os.path.join(bindir, name)
        if os.path.islink(link):
            target = os.path.realpath(link)
            if os.path.exists(target) and not target.startswith(directory.rstrip("/") + "/"):
                found += _program_file(target)
    return [p for p in found if p not in ("", "/") and os.path.exists(p)]


def link_chain(path: str) -> list[str]:
    """Every symbolic link on the way from ``path`` to the file it finally names, ``path``
    first (a venv's ``python`` -> ``python3`` -> the base interpreter): each must stand in the
    sandbox, or the first one dangles. Bounded; empty when ``path`` is no link."""
    chain: list[str] = []
    current = path
    while os.path.islink(current) and len(chain) < _MAX_LINKS and current not in chain:
        chain.append(current)
        try:
            text = os.readlink(current)
        except OSError:
            break
        current = os.path.normpath(os.path.join(os.path.realpath(os.path.dirname(current)), text))
    return chain


def named_paths(args: Iterable[str], cwd: str) -> list[str]:
    """The trusted arguments that name an existing file or directory (absolute, or relative
    to ``cwd``), never ``/``."""
    found: list[str] = []
    for arg in args:
        if not arg or len(arg) > _MAX_ARG_CHARS or "\0" in arg:
            continue
        path = os.path.normpath(os.path.join(cwd, arg))
        if path != "/" and os.path.lexists(path):
            found.append(path)
    return found


def skill_paths(env: Mapping[str, str]) -> list[str]:
    """The skill directories a child may read: the arm's ``EVALGATE_SKILL_DIR`` and each
    ``SKILL_EVALS_SKILL_DIRS`` entry."""
    found = [env["EVALGATE_SKILL_DIR"]] if env.get("EVALGATE_SKILL_DIR") else []
    found += [line for line in env.get("SKILL_EVALS_SKILL_DIRS", "").splitlines() if line]
    return found


# The walks of this engine process: a toolchain is walked once, however many runs bind it (a
# ci run's skills, improve's rounds).
_WALKED: dict[str, tuple[str, ...]] = {}
_WALKED_LOCK = threading.Lock()


class GitMasks:
    """The ``.git`` directories below bound directories, found once per directory (a bounded
    walk that never follows a link nor enters a ``.git``); ``count`` is how many distinct
    ones were masked in the run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._masked: set[str] = set()

    def below(self, directory: str) -> tuple[str, ...]:
        """The ``.git`` directories at any depth below ``directory`` (its own name included);
        BindRefused past the walk's bounds."""
        with _WALKED_LOCK:
            known = _WALKED.get(directory)
        if known is None:
            known = _find_git(directory)
            with _WALKED_LOCK:
                _WALKED[directory] = known
        return known

    def used(self, paths: Iterable[str]) -> None:
        """Count ``paths`` as masked in this run."""
        with self._lock:
            self._masked.update(paths)

    @property
    def count(self) -> int:
        """How many distinct ``.git`` directories were masked so far."""
        with self._lock:
            return len(self._masked)


def _find_git(top: str) -> tuple[str, ...]:
    found: list[str] = []
    count = 0
    stack: list[tuple[str, int]] = [(top, 0)]
    while stack:
        directory, depth = stack.pop()
        try:
            with os.scandir(directory) as listing:
                entries = [(e.name, e.path, e.is_dir(follow_symlinks=False)) for e in listing]
        except OSError:
            continue  # unreadable here: unreadable in the sandbox too
        count += len(entries)
        if count > MASK_MAX_ENTRIES:
            raise BindRefused(
                f"{top}: holds more than {MASK_MAX_ENTRIES:,} entries, too many to check for "
                ".git directories; bind a smaller directory with --sandbox-path"
            )
        for name, path, is_dir in entries:
            if not is_dir:
                continue
            if name == GIT:
                found.append(path)
            elif depth + 1 > MASK_MAX_DEPTH:
                raise BindRefused(
                    f"{top}: directories nest deeper than {MASK_MAX_DEPTH} levels, too deep "
                    "to check for .git directories; bind a smaller directory with --sandbox-path"
                )
            else:
                stack.append((path, depth + 1))
    return tuple(sorted(found))
