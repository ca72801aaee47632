"""The bubblewrap command line of one sandboxed child (docs/sandbox.md): new PID, IPC and UTS
namespaces, an empty root with the system directories, the program and the paths the command
names read-only, the workspace, a private TMPDIR and HOME read-write, nothing else.

Only the command line is built here; the child is started like any other (runner.py,
helper_commands.py) with its own environment, which bubblewrap passes on unchanged.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SYSTEM_DIRS = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
    "/nix/store", "/run/systemd/resolve",
)  # fmt: skip
NAMESPACES = (
    "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session",
)  # fmt: skip
_SHEBANG_BYTES = 256
_MAX_ARG_CHARS = 4096
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)  # holds skill_evals/


def _system() -> list[str]:
    """The empty root, /proc, /dev and the system directories that exist (symlinks kept)."""
    args = ["--tmpfs", "/", "--proc", "/proc", "--dev", "/dev"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return [*args, "--perms", "1777", "--dir", "/tmp"]


def probe_argv(program: str) -> list[str]:
    """The probe: ``true`` in a sandbox holding only the system directories."""
    return [program, *NAMESPACES, *_system(), "--", "true"]


def _program_dir(path: str) -> str | None:
    """The directory bound for a program at ``path``: the one above ``bin``, else its own;
    for a program inside a ``node_modules`` tree, that whole tree (its packages load their
    siblings)."""
    parts = Path(path).parts
    if "node_modules" in parts[:-1]:
        return str(Path(*parts[: parts.index("node_modules") + 1]))
    parent = os.path.dirname(path)
    if os.path.basename(parent) == "bin":
        parent = os.path.dirname(parent)
    return parent if parent not in ("", "/") else None


def _lookup(name: str, cwd: str, env: Mapping[str, str]) -> str | None:
    if os.sep in name:
        found = os.path.join(cwd, name)
        return os.path.normpath(found) if os.path.exists(found) else None
    return shutil.which(name, path=env.get("PATH", os.defpath))


def startable(argv0: str, cwd: str, env: Mapping[str, str]) -> bool:
    """Whether ``argv0`` names an executable file (else it fails to start, sandboxed or
    not, and is not wrapped: the reason then reads the same)."""
    found = _lookup(argv0, cwd, env)
    return found is not None and os.path.isfile(found) and os.access(found, os.X_OK)


def _interpreter(path: str, env: Mapping[str, str]) -> str | None:
    """The program a ``#!`` line of ``path`` names (looked up on PATH after ``env``)."""
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


def program_paths(argv0: str, cwd: str, env: Mapping[str, str]) -> list[str]:
    """What is bound for the program ``argv0``: for it after the PATH lookup and its real
    path, and the same for its ``#!`` interpreter (two levels)."""
    found: list[str] = []
    program = _lookup(argv0, cwd, env)
    for _level in range(3):
        if program is None:
            break
        real = os.path.realpath(program)
        for path in dict.fromkeys((os.path.abspath(program), real)):
            directory = _program_dir(path)
            if directory is not None:
                found.append(directory)
                found += _venv_base(directory)
        program = _interpreter(real, env)
    return found


def _venv_base(directory: str) -> list[str]:
    """For a Python venv, the interpreter it links to: pip's console scripts under a long
    path start ``#!/bin/sh`` and exec the venv's python, whose real file lies elsewhere."""
    if not os.path.isfile(os.path.join(directory, "pyvenv.cfg")):
        return []
    found = []
    for name in ("python", "python3"):
        link = os.path.join(directory, "bin", name)
        if os.path.lexists(link):
            base = _program_dir(os.path.realpath(link))
            if base is not None and base != directory:
                found.append(base)
    return found


def named_paths(args: Iterable[str], cwd: str) -> list[str]:
    """The arguments that name an existing file or directory (absolute, or relative to
    ``cwd``), never ``/``."""
    found: list[str] = []
    for arg in args:
        if not arg or len(arg) > _MAX_ARG_CHARS or "\0" in arg:
            continue
        path = os.path.normpath(os.path.join(cwd, arg))
        if path != "/" and os.path.lexists(path):
            found.append(path)
    return found


@dataclass(frozen=True)
class Sandbox:
    """How children run sandboxed in one engine run: the bwrap ``program`` and the paths the
    caller added (``--sandbox-path``: (absolute path, writable))."""

    program: str
    paths: tuple[tuple[str, bool], ...] = ()

    def command(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        writable: Sequence[Path],
        readable: Sequence[str] = (),
    ) -> list[str]:
        """The bwrap command line that runs ``argv`` in ``cwd`` (``writable``: the workspace,
        its TMPDIR and HOME; ``readable``: more read-only paths, e.g. the skill directories)."""
        binds: dict[str, bool] = {}  # path -> writable

        def add(path: str, rw: bool) -> None:
            path = os.path.normpath(path)
            if path != "/" and os.path.lexists(path):
                binds[path] = binds.get(path, False) or rw

        for path in (_PACKAGE_ROOT, *program_paths(argv[0], cwd, env), *readable):
            add(path, False)
        for path in named_paths(argv[1:], cwd):
            add(path, False)
        for path, rw in self.paths:
            add(path, rw)
        for place in writable:
            add(str(place), True)
        return [
            self.program,
            *NAMESPACES,
            *_system(),
            *_bind_args(binds),
            "--dir",
            cwd,
            "--chdir",
            cwd,
            "--",
            *argv,
        ]


def _bind_args(binds: Mapping[str, bool]) -> list[str]:
    """Parents before children (a later bind lies on top); a symlink is made as one, and its
    target bound."""
    args: list[str] = []
    targets: dict[str, bool] = {}
    for path, rw in binds.items():
        if os.path.islink(path):
            real = os.path.realpath(path)
            if os.path.exists(real) and real != "/":
                targets[real] = targets.get(real, False) or rw
    everything = {**targets, **binds}
    done: set[str] = set()
    writable: set[str] = set()
    for path in sorted(everything, key=lambda p: Path(p).parts):
        rw = everything[path]
        if os.path.islink(path):
            if not _inside_any(path, done):
                args += ["--symlink", os.readlink(path), path]
            continue
        if not rw and _inside_any(path, writable):
            continue  # already there, writable: a read-only bind would take that away
        args += ["--bind" if rw else "--ro-bind", path, path]
        done.add(path)
        if rw:
            writable.add(path)
    return args


def _inside_any(path: str, directories: Iterable[str]) -> bool:
    return any(path.startswith(d.rstrip("/") + "/") for d in directories)


def skill_paths(env: Mapping[str, str]) -> list[str]:
    """The skill directories a child may read: the arm's ``EVALGATE_SKILL_DIR`` and each
    ``SKILL_EVALS_SKILL_DIRS`` entry."""
    found = [env["EVALGATE_SKILL_DIR"]] if env.get("EVALGATE_SKILL_DIR") else []
    found += [line for line in env.get("SKILL_EVALS_SKILL_DIRS", "").splitlines() if line]
    return found
