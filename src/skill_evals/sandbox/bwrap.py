"""The bubblewrap command line of one sandboxed child (docs/sandbox.md): new PID, IPC and UTS
namespaces, an empty root with the system directories (the job's own folders in them empty:
job_folders.py), what the trusted side chose read-only (binds.py), the workspace, a private
TMPDIR and HOME read-write, an empty read-only directory over every ``.git`` and over a hidden
skill, nothing else.

Only the command line is built here; the child is started like any other (runner.py,
helper_commands.py) with its own environment, which bubblewrap passes on unchanged.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .binds import (
    SYSTEM_DIRS,
    GitMasks,
    in_git,
    link_chain,
    lookup,
    named_paths,
    program_paths,
    venv_base,
)
from .egress import Channel, EgressProxy
from .job_folders import JobFolders
from .limits import INSIDE_DIR, Limits, network_env, relay_argv

NAMESPACES = (
    "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session",
)  # fmt: skip
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)  # holds skill_evals/


def _system(root_bytes: int | None = None) -> list[str]:
    """The empty root (at most ``root_bytes`` where bwrap can bound a tmpfs), /proc, /dev and
    the system directories that exist (symlinks kept)."""
    size = ["--size", str(root_bytes)] if root_bytes is not None else []
    args = [*size, "--tmpfs", "/", "--proc", "/proc", "--dev", "/dev"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return [*args, "--perms", "1777", "--dir", "/tmp"]


def probe_argv(program: str) -> list[str]:
    """The probe: ``true`` in a sandbox holding only the system directories."""
    return [program, *NAMESPACES, *_system(), "--", "true"]


def startable(argv0: str, cwd: str, env: Mapping[str, str]) -> bool:
    """Whether ``argv0`` names an executable file (else it fails to start, sandboxed or
    not, and is not wrapped: the reason then reads the same)."""
    found = lookup(argv0, cwd, env)
    return found is not None and os.path.isfile(found) and os.access(found, os.X_OK)


@dataclass(frozen=True)
class Sandbox:
    """How children run sandboxed in one engine run: the bwrap ``program``, the paths the
    caller added (``--sandbox-path``: (absolute path, writable)) and the run's ``.git``
    masks (their count goes to the report)."""

    program: str
    paths: tuple[tuple[str, bool], ...] = ()
    masks: GitMasks = field(default_factory=GitMasks, compare=False)
    # None: the network is the host's (--network host); else each sandbox gets its own.
    egress: EgressProxy | None = None
    limits: Limits = field(default_factory=Limits)
    # bwrap ≥ 0.8 bounds the empty root (where /tmp and the runner's working directory live)
    # to the workspace bound; an older one cannot (docs/sandbox.md).
    sized_root: bool = False
    # The job's own folders, from the engine's environment when the sandbox is made.
    jobs: JobFolders = field(default_factory=lambda: JobFolders.of(os.environ), compare=False)

    def channel(self, by: str) -> Channel | None:
        """A way out for one sandboxed process of kind ``by`` (runner, setup, command), or
        None when the network is the host's. Close it when the process has ended."""
        return self.egress.channel(by) if self.egress is not None else None

    def network_env(self) -> dict[str, str]:
        """The proxy variables of a contained sandbox (none on the host's network)."""
        return network_env() if self.egress is not None else {}

    def command(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        private: Sequence[Path],
        readable: Sequence[str] = (),
        *,
        trusted: bool = True,
        hidden: Sequence[str] = (),
        shared: Sequence[Path] = (),
        channel: Channel | None = None,
        placed: Sequence[tuple[str, str]] = (),
        offline: bool = False,
    ) -> list[str]:
        """The bwrap command line that runs ``argv`` in ``cwd``. ``private``: the
        invocation's own writable places (W, its TMPDIR and HOME); ``readable``: read-only
        places the engine chose (the arm's skill directories, the agent binary);
        ``trusted``: whether ``argv`` is the runner's (its program and arguments are bound)
        or a case's (they bind nothing); ``hidden``: directories that stand empty (the tested
        skill in the ``without`` and ``baseline`` arms); ``shared``: writable places of the
        caller (a transcript folder); ``channel``: the process's way out of a network
        namespace of its own (None: the host's network); ``placed``: (engine folder, place)
        pairs, the folder read-only at a place inside ``private`` (an agent's unpacked
        package in its HOME, copilot_package.py); ``offline``: without a ``channel``, a
        network namespace of its own with no way out at all (instead of the host's network).
        The command is started by the relay under the sandbox's limits. BindRefused when a
        bound directory cannot be checked for ``.git`` directories."""
        binds, masks, gone = self._binds(
            argv, env, cwd, private, readable, trusted=trusted, hidden=hidden, shared=shared
        )
        jobs, nulled, secret_dirs = self._job_places(binds)
        masks += secret_dirs
        unshare, way_out = _network(channel, offline)
        return [
            self.program,
            *NAMESPACES,
            *unshare,
            *_system(self.limits.workspace_bytes if self.sized_root else None),
            *(arg for path in jobs for arg in ("--tmpfs", path)),
            *(arg for path in self.jobs.tools for arg in ("--ro-bind", path, path)),
            *_bind_args(binds, self.jobs.shared),
            *(arg for source, place in placed for arg in ("--ro-bind", source, place)),
            *_empty_over(masks + gone),
            *(arg for path in nulled for arg in ("--ro-bind", os.devnull, path)),
            *way_out,
            "--dir",
            cwd,
            *(arg for path in jobs for arg in ("--remount-ro", path)),
            "--chdir",
            cwd,
            "--",
            *relay_argv(list(argv), self.limits, channel is not None),
        ]

    def _job_places(self, binds: Mapping[str, bool]) -> tuple[list[str], list[str], list[str]]:
        """(the job folders to hide, the runner's secret files to read empty, its secret
        directories to mask) for these binds. Each job folder in a system directory: an empty
        directory, read-only once the binds inside it are made (non-recursive: a writable bind
        there stays writable). One that a bind covers whole needs neither (nor may a writable
        bind turn read-only)."""
        covers = {f for b in binds for f in (b, os.path.realpath(b))}
        jobs = [j for j in self.jobs.hidden if not any(_within(j, b) for b in covers)]
        secret = self.jobs.secrets_below(binds)  # the runner's own, in a bound directory
        nulled = [f for f in secret if not os.path.isdir(f)]
        return jobs, nulled, [f for f in secret if os.path.isdir(f)]

    def trusted_command(
        self, argv: Sequence[str], env: Mapping[str, str], folder: Path, cwd: Path | None = None
    ) -> list[str]:
        """The bwrap command line of a trusted one-shot program the engine starts for itself
        (an agent's ``--version``, Copilot's unpacking; docs/sandbox.md): run in ``cwd``
        (default ``folder``); ``folder`` (its fresh HOME, its output) the only writable place;
        the system directories, the program and the ``--sandbox-path`` paths read-only; no
        network at all; under the sandbox's limits. ``env`` passes unchanged: give it no
        credential. BindRefused as :meth:`command`."""
        own = dataclasses.replace(  # nothing else writable; its .git masks not the run's
            self, paths=tuple((path, False) for path, _ in self.paths), masks=GitMasks()
        )
        where = str(cwd if cwd is not None else folder)
        return own.command(argv, env, where, [folder], offline=True)

    def _binds(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        private: Sequence[Path],
        readable: Sequence[str],
        *,
        trusted: bool,
        hidden: Sequence[str],
        shared: Sequence[Path],
    ) -> tuple[dict[str, bool], list[str], list[str]]:
        """What :meth:`command` binds (path -> writable), the ``.git`` masks among them and
        the ``hidden`` places (real path and as given) that stand empty."""
        binds: dict[str, bool] = {}  # path -> writable
        # The real path first: an empty directory stands there before the link leads to it.
        gone = [os.path.normpath(q) for p in hidden for q in (os.path.realpath(p), p)]

        def add(path: str, rw: bool) -> None:
            path = os.path.normpath(path)
            if path == "/" or not os.path.lexists(path) or self.jobs.shared(path):
                return
            if in_git(path) or self.jobs.secret(path):
                return
            if any(path == h or path.startswith(h + "/") for h in gone):
                return
            binds[path] = binds.get(path, False) or rw

        # The relay, each sandbox's first process, runs on the engine's own interpreter.
        chosen = [_PACKAGE_ROOT, *program_paths(sys.executable, cwd, env), *readable]
        if trusted and argv:
            chosen += program_paths(argv[0], cwd, env) + named_paths(argv[1:], cwd)
        for path in chosen:
            add(path, False)
        for path, rw in self.paths:
            add(path, rw)
            for base in venv_base(path):
                add(base, False)
        for place in shared:
            add(str(place), True)
        masks = self._git_masks(binds)
        for place in private:
            add(str(place), True)
        return binds, masks, gone

    def unseen_program(
        self, argv0: str, cwd: str, env: Mapping[str, str], places: Sequence[str]
    ) -> bool:
        """For a case's command: whether the program ``argv0`` lies outside what its sandbox
        holds (the system directories, ``places`` — W and the arm's skill directories — and
        the ``--sandbox-path`` paths). A path is judged as written, whether it exists or not
        (a case learns nothing of the host's files); a name by the ``PATH`` entries that the
        sandbox holds (inside, the lookup skips the others)."""
        roots = [os.path.normpath(r) for r in (*places, *(p for p, _ in self.paths))]

        def seen(path: str) -> bool:
            return self.jobs.shared(path) or any(_within(path, r) for r in roots)

        if os.sep in argv0:
            return not seen(os.path.normpath(os.path.join(cwd, argv0)))
        found = [
            path
            for entry in env.get("PATH", os.defpath).split(os.pathsep)
            if os.path.isfile(path := os.path.abspath(os.path.join(entry or cwd, argv0)))
            and os.access(path, os.X_OK)
        ]
        return bool(found) and not any(seen(path) for path in found)

    def _git_masks(self, binds: Mapping[str, bool]) -> list[str]:
        """Every ``.git`` below the bound directories (and their link targets)."""
        found: set[str] = set()
        for path in binds:
            real = os.path.realpath(path)
            if os.path.isdir(real) and not self.jobs.shared(real):
                found.update(self.masks.below(real))
                if real != path and not os.path.islink(path):
                    found.update(self.masks.below(path))
        self.masks.used(found)
        return sorted(found, key=lambda p: Path(p).parts)


def _empty_over(paths: Sequence[str]) -> list[str]:
    """An empty read-only directory over each of ``paths`` (after every bind)."""
    args: list[str] = []
    for path in dict.fromkeys(paths):
        args += ["--tmpfs", path, "--remount-ro", path]
    return args


def _network(channel: Channel | None, offline: bool) -> tuple[list[str], list[str]]:
    """(the namespace arguments, the way out): the host's network, a namespace of its own
    whose only way out is ``channel`` (bound last: nothing lies on top of it), or with
    ``offline`` one with no way out at all."""
    if channel is not None:
        return ["--unshare-net"], ["--ro-bind", channel.directory, INSIDE_DIR]
    return (["--unshare-net"] if offline else []), []


def _bind_args(binds: Mapping[str, bool], shared: Callable[[str], bool]) -> list[str]:
    """Parents before children (a later bind lies on top); a symlink is made as one, and its
    target bound unless ``shared`` (a system directory holds it already)."""
    args: list[str] = []
    targets: dict[str, bool] = {}
    for path, rw in binds.items():
        if os.path.islink(path):
            for link in link_chain(path)[1:]:  # the links between: made as links too
                if not shared(link) and not in_git(link):
                    targets.setdefault(link, False)
            real = os.path.realpath(path)
            if os.path.exists(real) and real != "/" and not shared(real):
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


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _inside_any(path: str, directories: Iterable[str]) -> bool:
    return any(path.startswith(d.rstrip("/") + "/") for d in directories)


def sizes_tmpfs(version: str | None) -> bool:
    """Whether this bwrap (its ``--version`` line) takes ``--size`` for a tmpfs (0.8 and
    later)."""
    words = (version or "").split()
    try:
        major, minor = (int(part) for part in words[-1].split(".")[:2])
    except (IndexError, ValueError):
        return False
    return (major, minor) >= (0, 8)
