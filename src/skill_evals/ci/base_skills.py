"""`compare: base` (docs/ci.md#compare-with-the-base-version): each changed skill's version at
the base commit, written from git objects (``git ls-tree`` / ``git cat-file``, no checkout) into
a private temporary directory that is removed once the skill is evaluated.

A head skill's base version is the base commit's skill at the same path with the same name,
else the one base skill of that name elsewhere (a moved skill). A skill with no such match is
new in the change and runs as before, without a baseline.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import InvalidInput
from ..run.workspace import safe_name
from ..suite.skill import directory_sha256
from ..suite.walks import remove_tree
from .base_commit import base_config, git_states
from .fingerprint import SkillState
from .git import GitError, in_git_repo, resolve_commit
from .git_tree import MODE_EXECUTABLE, GitTree
from .settings import CiConfig

MAX_BASE_FILES = 10_000  # a skill version with more files is not materialised
MAX_BASE_BYTES = 1_000_000_000


@dataclass(frozen=True)
class BaseMatch:
    """How a head skill was matched at the base commit (None when it is new there)."""

    state: SkillState | None
    note: str


class BaseSkills:
    """The skills of the base commit, for matching and materialising."""

    def __init__(self, tree: GitTree, states: list[SkillState]) -> None:
        self.tree = tree
        self.sha = tree.commit
        self.by_path = {s.path: s for s in states}
        self.by_name: dict[str, list[SkillState]] = {}
        for state in states:
            self.by_name.setdefault(state.name, []).append(state)

    def match(self, path: str, name: str) -> BaseMatch:
        """The base version of the head skill at ``path`` called ``name``."""
        short = self.sha[:12]
        same = self.by_path.get(path)
        if same is not None and same.name == name:
            return self._usable(same, f"compared with its version at base {short}")
        named = self.by_name.get(name, [])
        if len(named) == 1:
            moved = named[0]
            return self._usable(moved, f"compared with {moved.path} at base {short} (moved)")
        if len(named) > 1:
            count = len(named)
            return BaseMatch(None, f"{count} skills called {name} at base {short}: no baseline")
        return BaseMatch(None, f"new since base {short}: no baseline")

    @staticmethod
    def _usable(state: SkillState, note: str) -> BaseMatch:
        if state.directory_sha256 is None:
            return BaseMatch(None, f"its base version cannot be used ({state.error}): no baseline")
        return BaseMatch(state, note)

    @contextlib.contextmanager
    def materialised(self, state: SkillState) -> Iterator[Path]:
        """A private temporary copy of the base version of ``state`` (removed on exit).
        InvalidInput when it cannot be written or does not hash as the base commit says."""
        parent = Path(tempfile.mkdtemp(prefix="skill-evals-base-"))  # mode 0700
        try:
            target = parent / safe_name(state.name)
            self._write(state.path, target)
            if directory_sha256(target) != state.directory_sha256:
                raise InvalidInput(
                    f"{state.path} at base {self.sha[:12]}: the copy written from git objects "
                    "does not hash as the commit does"
                )
            yield target
        finally:
            remove_tree(parent)

    def _write(self, path: str, target: Path) -> None:
        entries = self.tree.under(path)
        if len(entries) > MAX_BASE_FILES:
            raise InvalidInput(f"{path} at base: more than {MAX_BASE_FILES} files")
        files: dict[str, list[tuple[Path, bool]]] = {}
        for rel, mode, kind, oid in entries:
            parts = rel.split("/")
            if kind != "blob" or any(p in ("", ".", "..") for p in parts):
                raise InvalidInput(f"{path} at base: an entry that is not a plain file")
            files.setdefault(oid, []).append((target.joinpath(*parts), mode == MODE_EXECUTABLE))
        target.mkdir(mode=0o700)
        handles: dict[str, list[IO[bytes]]] = {}
        total = 0

        def on_chunk(oid: str, chunk: bytes) -> None:
            nonlocal total
            if oid not in handles:
                handles[oid] = [_create(dest, executable) for dest, executable in files[oid]]
            total += len(chunk)
            if total > MAX_BASE_BYTES:
                raise InvalidInput(f"{path} at base: more than {MAX_BASE_BYTES} bytes")
            for handle in handles[oid]:
                handle.write(chunk)

        try:
            self.tree.stream_blobs(files, on_chunk)
        except GitError as exc:
            raise InvalidInput(f"{path} at base: cannot read its files ({exc})") from None
        finally:
            for opened in handles.values():
                for handle in opened:
                    handle.close()
        if len(handles) != len(files):
            raise InvalidInput(f"{path} at base: git did not return every file")


def _create(dest: Path, executable: bool) -> IO[bytes]:
    dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(dest, flags, 0o600)
    os.fchmod(fd, 0o755 if executable else 0o644)  # whatever the umask: the hash reads it
    handle = os.fdopen(fd, "wb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # pragma: no cover - O_EXCL made it
        handle.close()
        raise InvalidInput(f"{dest}: not a regular file")
    return handle


def load_base_skills(
    root: Path, config: CiConfig, ref: str | None
) -> tuple[BaseSkills | None, list[str]]:
    """The base commit's skills for ``compare: base`` (None, with why, when there is none)."""
    if ref is None:
        return None, [
            "compare: base needs a base commit (--base REF, or a pull request event): "
            "skills run without a baseline"
        ]
    if not in_git_repo(root):
        return None, [f"compare: base: {root} is not a git repository; no baseline"]
    sha, messages = resolve_commit(root, ref)
    if sha is None:
        return None, [*messages, f"compare: base: base {ref} is not available; no baseline"]
    try:
        tree = GitTree(root, sha)
        states = git_states(tree, base_config(tree, config, root), root.resolve().name)
    except GitError as exc:
        return None, [*messages, f"compare: base: cannot read base {ref} ({exc}); no baseline"]
    return BaseSkills(tree, states), messages


def compare_ref(
    base: Mapping[str, Any], choice_base: str | None, event_sha: str | None
) -> str | None:
    """The base commit ``compare: base`` compares with: the one change detection used, else
    ``--base``, else the pull request's base (``--only`` shards detect no changes)."""
    sha = base.get("sha")
    if isinstance(sha, str) and sha:
        return sha
    return choice_base or event_sha


class CompareBase:
    """``compare: base`` for one ``ci`` run: the base commit's skills are read once, when the
    first skill that asks for a baseline is evaluated. ``messages`` holds what the run's
    report should say (no base commit, an unreadable one)."""

    def __init__(self, root: Path, config: CiConfig, ref: str | None) -> None:
        self.root = root
        self.config = config
        self.ref = ref
        self.messages: list[str] = []
        self._skills: BaseSkills | None = None
        self._loaded = False

    def _base(self) -> BaseSkills | None:
        if not self._loaded:
            self._loaded = True
            self._skills, messages = load_base_skills(self.root, self.config, self.ref)
            self.messages.extend(messages)
        return self._skills

    @contextlib.contextmanager
    def baseline(self, state: SkillState) -> Iterator[tuple[Path | None, str | None]]:
        """(the base version's private copy or None, a note saying which it is) for a skill
        whose settings ask for ``compare: base``; (None, None) for the others."""
        if not state.location.settings.compare_base:
            yield None, None
            return
        skills = self._base()
        if skills is None:
            yield None, "compare: base: no base commit to compare with"
            return
        match = skills.match(state.path, state.name)
        if match.state is None:
            yield None, match.note
            return
        with contextlib.ExitStack() as stack:
            try:
                copy: Path | None = stack.enter_context(skills.materialised(match.state))
                note = match.note
            except InvalidInput as exc:
                copy, note = None, f"compare: base: {exc}; no baseline"
            yield copy, note
