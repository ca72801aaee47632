"""The cache key of one invocation (docs/cost.md#the-cache-key).

Owner: execution.

An observation depends on the program that produced it, the skill version it was offered, the
case it answered and the trial; the key is the SHA-256 of the canonical JSON of exactly these:

- the runner's argv, each argument that names an existing regular file replaced by the file's
  SHA-256 and each that names an existing directory by its directory hash (the skill rule), so
  editing a runner script changes the key and moving the checkout does not. A built-in runner
  (``skill-evals runner …``) is this package itself: its source files' hash stands for it;
- the arm's skill ``directorySha256`` (null for ``without``, which offers no skill);
- the case's prompt (exact bytes), its fixture's directory hash and its setup commands, and its
  task definition when the task has a workspace check (those verdicts are stored with the
  observation; observation checks are judged again from the stored fields every time);
- the trial number.

Labels (``expectTrigger``, ``loaded``, tags) and the case id are not part of it: relabelling a
case reuses its observations.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..checks.judge_model import Judge, JudgePairwise
from ..errors import InvalidInput
from ..suite.cases import Case
from ..suite.skill import directory_sha256
from ..suite.walks import TreeTooLarge, walk

KEY_VERSION = 1
MAX_ARG_FILE_BYTES = 2_000_000_000  # a runner argument naming a bigger file is not hashed
MAX_ARG_DIR_FILES = 10_000  # nor a directory with more entries (files, directories) than this
MAX_ARG_DIR_BYTES = 1_000_000_000  # or more bytes than this
_CHUNK = 1 << 20


class Uncacheable(Exception):
    """The runner command names something whose content cannot be hashed (the run goes on
    without the cache); str() says which argument and why, never the argument's text."""


def _file_sha256(path: Path) -> str:
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    digest = hashlib.sha256()
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb", buffering=0) as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("no longer a regular file")
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_dir_size(path: Path) -> str | None:
    """Why the directory is too large to hash on every run, or None (a bounded walk)."""
    files = 0
    size = 0
    stack = [path]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                files += 1  # directories count too: a deep tree of empty ones is no cheaper
                if files > MAX_ARG_DIR_FILES:
                    return f"it holds more than {MAX_ARG_DIR_FILES} files and directories"
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    size += entry.stat(follow_symlinks=False).st_size
                if size > MAX_ARG_DIR_BYTES:
                    return f"it holds more than {MAX_ARG_DIR_BYTES} bytes"
    return None


def _argument(arg: str, index: int, cwd: Path) -> str | dict[str, str]:
    """One argv element as it enters the key: the text, or the content hash of what it names."""
    if not arg or "\0" in arg:
        return arg
    path = Path(arg) if os.path.isabs(arg) else cwd / arg
    try:
        st = os.stat(path)  # what the runner would open: symlinks followed
    except (OSError, ValueError):
        return arg  # names nothing (a flag, a word, a program found on PATH): as written
    where = f"runner argument {index}"
    try:
        if stat.S_ISREG(st.st_mode):
            if st.st_size > MAX_ARG_FILE_BYTES:
                raise Uncacheable(f"{where} names a file larger than {MAX_ARG_FILE_BYTES} bytes")
            return {"file": _file_sha256(path)}
        if stat.S_ISDIR(st.st_mode):
            problem = _check_dir_size(path)
            if problem is not None:
                raise Uncacheable(f"{where} names a directory too large to hash: {problem}")
            return {"directory": directory_sha256(path)}
    except TreeTooLarge as exc:
        raise Uncacheable(f"{where} names a directory too large to hash: {exc}") from None
    except InvalidInput:
        raise Uncacheable(
            f"{where} names a directory that cannot be hashed (it holds a symlink, a special "
            "file or a name with a newline)"
        ) from None
    except OSError as exc:
        raise Uncacheable(f"{where} names a file that cannot be read ({exc.strerror})") from None
    return arg  # a device, FIFO or socket: no content to hash (and opening one could block)


@functools.lru_cache(maxsize=1)
def package_sha256() -> str:
    """The hash of this package's own files (compiled caches left out): what a built-in
    runner runs. Computed once per process."""
    root = Path(__file__).resolve().parent
    pairs: list[tuple[bytes, str]] = []
    for entry in walk(root, on_error=lambda *_: None):
        parts = entry.rel.split(b"/")
        if b"__pycache__" in parts[:-1] or not stat.S_ISREG(entry.info.st_mode):
            continue
        if entry.rel.endswith((b".pyc", b".pyo")):
            continue
        pairs.append((entry.rel, _file_sha256(Path(entry.path))))
    digest = hashlib.sha256()
    for rel, sha in sorted(pairs):
        digest.update(sha.encode("ascii") + b"  " + rel + b"\n")
    return digest.hexdigest()


def runner_identity(argv: Sequence[str], cwd: Path, builtin: bool = False) -> list[Any]:
    """The runner part of every key of a run, computed once before the first invocation.
    ``builtin``: the command is one of this package's runners. Raises Uncacheable."""
    identity: list[Any] = [_argument(arg, index, cwd) for index, arg in enumerate(argv)]
    if builtin:
        identity.append({"package": package_sha256()})
    return identity


def _canonical(value: object) -> Any:
    """A check definition (frozen dataclasses, tuples, JSON values) as plain JSON."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"check": getattr(value, "name", type(value).__name__), **fields}
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    return value


def task_definition(case: Case) -> Any:
    """The task as it enters the key: its checks when one reads the workspace or a judge check
    is shown workspace files, else None. Of a judge check only ``include`` enters (when it
    names files): a new rubric, scale, threshold or judge re-judges, it never re-runs."""
    task = case.task
    if task is None or not (task.workspace or task.judge_files):
        return None
    return [
        _judge_part(c) if isinstance(c, (Judge, JudgePairwise)) else _canonical(c)
        for c in task.checks
    ]


def _judge_part(check: Judge | JudgePairwise) -> dict[str, Any]:
    files = [item for item in check.include if item.startswith("files:")]
    return {"check": check.name, "include": files} if files else {"check": check.name}


def canonical_json(value: object) -> bytes:
    """Sorted keys, no whitespace, ASCII only: one byte string per value."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text.encode("ascii")


def case_payload(case: Case, fixture_sha256: str | None) -> dict[str, Any]:
    """The case's part of the key: its prompt, fixture hash, setup and task definition."""
    return {
        "prompt": case.prompt,
        "fixture": fixture_sha256,
        "setup": [list(argv) for argv in case.setup],
        "task": task_definition(case),
    }


def observation_key(
    runner: Sequence[Any],
    skill_sha256: str | None,
    case: Case,
    fixture_sha256: str | None,
    trial: int,
) -> str:
    """The hex SHA-256 key of one invocation (see the module's docstring)."""
    payload = {
        "v": KEY_VERSION,
        "runner": list(runner),
        "skill": skill_sha256,
        **case_payload(case, fixture_sha256),
        "trial": trial,
    }
    return hashlib.sha256(canonical_json(payload)).hexdigest()
