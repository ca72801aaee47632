"""Which skills changed (docs/ci.md): against a git commit read from its objects (no checkout),
against the lock file, or all of them. Moved and renamed skills are matched by fingerprint.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import posixpath
import re
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from .config import CONFIG_NAMES, CiConfig, parse_config
from .discovery import SKIPPED_DIRS, discover
from .fingerprint import SkillState, dirhash_lines, fingerprint
from .github import read_event
from .untrusted import load_json_file

GIT_TIMEOUT_S = 300
MAX_GIT_OUTPUT = 256 * 1024 * 1024
MAX_BLOB_BYTES = 50_000_000
MAX_LOCK_BYTES = 50_000_000  # a config or SKILL.md read from a commit (same cap as files)
LOCK_VERSION = 1
_HEX_SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")

_MODE_SYMLINK = "120000"
_MODE_GITLINK = "160000"


class GitError(Exception):
    """A git command failed; str() is safe to print (git's own stderr is not included)."""


def _git_env() -> dict[str, str]:
    # Never wait for a person: no credential prompt, no pager, no editor.
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "GIT_EDITOR": "true"}


class _Killer:
    """Kills a git process group at a deadline: `git fetch` runs helpers that hold the pipes
    open, so killing git alone (what subprocess.run's timeout does) could leave a read hanging."""

    def __init__(self, proc: subprocess.Popen[bytes], seconds: float) -> None:
        self.proc = proc
        self.fired = False
        self._timer = threading.Timer(seconds, self.kill)
        self._timer.daemon = True
        self._timer.start()

    def kill(self) -> None:
        self.fired = True
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def cancel(self) -> None:
        self._timer.cancel()


def _popen(root: Path, args: list[str], stdin: int) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            ["git", *args],
            cwd=root,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_git_env(),
            start_new_session=True,
        )
    except OSError as exc:
        raise GitError(f"git {args[0]}: {type(exc).__name__}") from None


def _git(root: Path, *args: str) -> bytes:
    """git's stdout; bounded in time (GIT_TIMEOUT_S) and size (MAX_GIT_OUTPUT)."""
    proc = _popen(root, list(args), subprocess.DEVNULL)
    assert proc.stdout is not None
    killer = _Killer(proc, GIT_TIMEOUT_S)
    parts: list[bytes] = []
    total = 0
    try:
        while True:
            chunk = proc.stdout.read1(1 << 20)  # type: ignore[attr-defined]
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_GIT_OUTPUT:
                killer.kill()
                raise GitError(f"git {args[0]}: output larger than {MAX_GIT_OUTPUT} bytes")
            parts.append(chunk)
        code = proc.wait()
    finally:
        killer.cancel()
        proc.stdout.close()
        if proc.poll() is None:
            killer.kill()
            proc.wait()
    if killer.fired:
        raise GitError(f"git {args[0]}: no answer within {GIT_TIMEOUT_S} s")
    if code != 0:
        raise GitError(f"git {args[0]} exited {code}")
    return b"".join(parts)


@dataclass(frozen=True)
class _Entry:
    mode: str
    kind: str  # blob, commit (submodule)
    oid: str


class GitTree:
    """A commit's tree read with ``git ls-tree -r`` and ``git cat-file --batch``, restricted to
    the directory the command runs in (``prefix``)."""

    def __init__(self, root: Path, commit: str) -> None:
        self.root = root
        self.commit = commit
        prefix = _git(root, "rev-parse", "--show-prefix").decode("utf-8", "surrogateescape")
        self.prefix = prefix.strip()
        raw = _git(root, "ls-tree", "-r", "-z", "--full-tree", commit)
        self.entries: dict[str, _Entry] = {}
        for record in raw.split(b"\0"):
            if not record:
                continue
            meta, _, path_bytes = record.partition(b"\t")
            mode, kind, oid = meta.decode("ascii").split(" ")
            path = path_bytes.decode("utf-8", "surrogateescape")
            if self.prefix:
                if not path.startswith(self.prefix):
                    continue
                path = path[len(self.prefix) :]
            if any(part in SKIPPED_DIRS for part in path.split("/")[:-1]):
                continue
            self.entries[path] = _Entry(mode, kind, oid)
        self._sha256: dict[str, str] = {}

    def files(self) -> Iterable[str]:
        """Every path of the commit (below the prefix)."""
        return self.entries.keys()

    def is_file(self, path: str) -> bool:
        """A regular blob (not a symlink, not a submodule)."""
        entry = self.entries.get(path)
        return entry is not None and entry.kind == "blob" and entry.mode != _MODE_SYMLINK

    def read(self, path: str) -> bytes | None:
        """A regular blob's bytes."""
        if not self.is_file(path):
            return None
        contents = self.read_blobs([self.entries[path].oid])
        return contents.get(self.entries[path].oid)

    def read_blobs(self, oids: Iterable[str]) -> dict[str, bytes]:
        """Contents of blobs by object id (one ``git cat-file --batch`` process); a blob over
        MAX_BLOB_BYTES is left out (read as absent), never held in memory."""
        chunks: dict[str, list[bytes]] = {}
        sizes: dict[str, int] = {}

        def keep(oid: str, chunk: bytes) -> None:
            sizes[oid] = sizes.get(oid, 0) + len(chunk)
            if sizes[oid] > MAX_BLOB_BYTES:
                chunks.pop(oid, None)
            else:
                chunks.setdefault(oid, []).append(chunk)

        self._batch(list(dict.fromkeys(oids)), keep)
        return {
            oid: b"".join(parts) for oid, parts in chunks.items() if sizes[oid] <= MAX_BLOB_BYTES
        }

    def blob_sha256(self, oids: Iterable[str]) -> dict[str, str]:
        """SHA-256 of blobs by object id, streamed: each blob is read once and never held
        whole in memory."""
        wanted = [oid for oid in dict.fromkeys(oids) if oid not in self._sha256]
        digests = {oid: hashlib.sha256() for oid in wanted}
        self._batch(wanted, lambda oid, chunk: digests[oid].update(chunk))
        for oid, digest in digests.items():
            self._sha256[oid] = digest.hexdigest()
        return self._sha256

    def stream_blobs(self, oids: Iterable[str], on_chunk: Callable[[str, bytes], None]) -> None:
        """Stream blobs through ``on_chunk(oid, chunk)`` (one ``git cat-file --batch``; called
        at least once per blob, first with b""), never holding a blob whole in memory."""
        self._batch(list(dict.fromkeys(oids)), on_chunk)

    def under(self, path: str) -> list[tuple[str, str, str, str]]:
        """(path relative to ``path``, mode, kind, object id) of every entry below ``path``."""
        return [(rel, e.mode, e.kind, e.oid) for rel, e in _under(self, path)]

    def _batch(self, oids: list[str], on_chunk: Callable[[str, bytes], None]) -> None:
        """Stream every blob through ``on_chunk`` (called at least once per blob, with b"" for
        an empty one)."""
        if not oids:
            return
        proc = _popen(self.root, ["cat-file", "--batch"], subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        killer = _Killer(proc, GIT_TIMEOUT_S)

        def feed() -> None:
            assert proc.stdin is not None
            try:
                proc.stdin.write("".join(f"{oid}\n" for oid in oids).encode("ascii"))
                proc.stdin.close()
            except OSError:
                pass

        # A writer thread: git answers while we are still writing, and both pipes can fill up.
        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        try:
            for oid in oids:
                header = proc.stdout.readline(200).decode("ascii", "replace").split()
                if len(header) != 3 or not header[2].isdigit():
                    raise GitError(
                        f"git cat-file: no answer within {GIT_TIMEOUT_S} s"
                        if killer.fired
                        else f"git cat-file: object {oid} is missing"
                    )
                remaining = int(header[2])
                on_chunk(oid, b"")
                while remaining:
                    chunk = proc.stdout.read(min(remaining, 1 << 20))
                    if not chunk:
                        raise GitError("git cat-file: output ended early")
                    on_chunk(oid, chunk)
                    remaining -= len(chunk)
                proc.stdout.read(1)  # the newline after the contents
        finally:
            killer.cancel()
            proc.stdout.close()
            if proc.poll() is None:
                killer.kill()
            proc.wait()
            writer.join(timeout=5)


def git_states(tree: GitTree, config: CiConfig, root_name: str) -> list[SkillState]:
    """Discover and fingerprint the skills of a commit. A skill holding a symlink or a submodule
    gets no fingerprint (the working-tree rule: such a skill is invalid), so it never matches."""
    locations, _ = discover(tree, config, root_name, strict=False)
    needed: list[str] = []
    for location in locations:
        needed.extend(e.oid for p, e in _under(tree, location.path) if e.kind == "blob")
        if location.cases is not None:
            needed.append(tree.entries[location.cases].oid)
    sha256 = tree.blob_sha256(needed)
    states: list[SkillState] = []
    for location in locations:
        pairs: list[tuple[str, str]] = []
        error = None
        for rel, entry in _under(tree, location.path):
            if entry.mode == _MODE_SYMLINK:
                error = f"{location.path}/{rel}: symlink in the skill directory"
                break
            if entry.kind != "blob":
                error = f"{location.path}/{rel}: submodule in the skill directory"
                break
            pairs.append((rel, sha256[entry.oid]))
        if error is None:
            try:
                dir_sha = dirhash_lines(pairs)
            except InvalidInput as exc:
                error = str(exc)
        if error is not None:
            states.append(SkillState(location, None, None, None, error))
            continue
        cases_sha = sha256[tree.entries[location.cases].oid] if location.cases else None
        states.append(
            SkillState(
                location, dir_sha, cases_sha, fingerprint(dir_sha, cases_sha, location.settings)
            )
        )
    return states


def _under(tree: GitTree, path: str) -> list[tuple[str, _Entry]]:
    if path == ".":
        return list(tree.entries.items())
    prefix = path + "/"
    return [(p[len(prefix) :], e) for p, e in tree.entries.items() if p.startswith(prefix)]


# ------------------------------------------------------------------------------- base commit


def event_base(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The base commit of the pull request (or merge-queue group) that triggered the workflow,
    read from ``$GITHUB_EVENT_PATH``: (sha or None outside such events, why the event file
    could not be used or None)."""
    event_name = env.get("GITHUB_EVENT_NAME", "")
    if event_name not in ("pull_request", "pull_request_target", "merge_group"):
        return None, None
    event, problem = read_event(env)
    if event is None:
        return None, problem
    if event_name == "merge_group":
        group = event.get("merge_group")
        sha = group.get("base_sha") if isinstance(group, dict) else None
    else:
        pull = event.get("pull_request")
        base = pull.get("base") if isinstance(pull, dict) else None
        sha = base.get("sha") if isinstance(base, dict) else None
    return (sha if isinstance(sha, str) and _HEX_SHA.match(sha) else None), None


def event_base_sha(env: Mapping[str, str]) -> str | None:
    """:func:`event_base`'s sha alone."""
    return event_base(env)[0]


def resolve_commit(root: Path, ref: str) -> tuple[str | None, list[str]]:
    """The commit ``ref`` names, fetching it from ``origin`` when the object is missing (a
    shallow checkout). Returns (sha or None, messages)."""
    messages: list[str] = []
    if ref.startswith("-"):
        raise InvalidInput(f"--base {ref}: not a git revision")
    sha = _rev_parse(root, ref)
    if sha is not None:
        return sha, messages
    try:
        _git(root, "fetch", "--no-tags", "--depth=1", "origin", ref)
    except GitError as exc:
        messages.append(f"base {ref} is not in the clone and fetching it failed ({exc})")
        return None, messages
    messages.append(f"fetched base {ref} from origin (shallow clone)")
    sha = _rev_parse(root, ref if _HEX_SHA.match(ref) else "FETCH_HEAD")
    if sha is None:
        messages.append(f"base {ref} could not be resolved after fetching")
    return sha, messages


def _rev_parse(root: Path, ref: str) -> str | None:
    try:
        out = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", ref + "^{commit}")
    except GitError:
        return None
    return out.decode("ascii").strip() or None


def in_git_repo(root: Path) -> bool:
    """True when ``root`` is inside a git work tree."""
    try:
        return _git(root, "rev-parse", "--is-inside-work-tree").strip() == b"true"
    except GitError:
        return False


def base_config(tree: GitTree, config: CiConfig, root: Path) -> CiConfig:
    """The configuration as it was in the base commit (so a settings change in the PR changes
    fingerprints). The CLI flags of this run apply to both sides. A config file outside the
    repository is used for both sides; a broken base config falls back to the defaults."""
    rel: str | None = None
    if config.path is not None:
        try:
            rel = config.path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return config
    candidates = [rel] if rel else list(CONFIG_NAMES)
    for candidate in candidates:
        data = tree.read(candidate)
        if data is not None:
            try:
                return parse_config(data, f"{tree.commit[:12]}:{candidate}").with_cli(config.cli)
            except InvalidInput:
                return CiConfig().with_cli(config.cli)
    return CiConfig().with_cli(config.cli)


# ------------------------------------------------------------------------------------- lock


@dataclass
class ChangeSet:
    """The outcome of change detection: per head skill path, changed or not and why."""

    base: dict[str, Any]
    changed: dict[str, str] = field(default_factory=dict)  # path → reason
    unchanged: dict[str, str] = field(default_factory=dict)  # path → reason
    removed: list[dict[str, str]] = field(default_factory=list)  # base skills gone

    def is_changed(self, path: str) -> bool:
        """True when the skill at ``path`` must be evaluated."""
        return path in self.changed


def lock_document(
    states: Iterable[SkillState], routing: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The lock file's JSON for the given (fingerprinted) states, and the routing entry's
    fingerprint when the config has one (ci/routing.py)."""
    skills: dict[str, Any] = {}
    for state in states:
        if state.fingerprint is None:
            raise InvalidInput(f"{state.path}: cannot fingerprint this skill: {state.error}")
        skills[state.path] = {
            "name": state.name,
            "fingerprint": state.fingerprint,
            "directorySha256": state.directory_sha256,
            "cases": state.location.cases,
            "casesSha256": state.cases_sha256,
        }
    doc: dict[str, Any] = {"version": LOCK_VERSION, "tool": "skill-evals", "skills": skills}
    if routing is not None:
        doc["routing"] = dict(routing)
    return doc


def render_lock(states: Iterable[SkillState], routing: Mapping[str, Any] | None = None) -> str:
    """Lock file text: stable key order and a final newline, so diffs stay readable."""
    return json.dumps(lock_document(states, routing), indent=2, sort_keys=True) + "\n"


def read_lock_routing(path: Path) -> str | None:
    """The routing fingerprint recorded in a lock file (None when it has none)."""
    doc = load_json_file(path, "the lock file", MAX_LOCK_BYTES)
    routing = doc.get("routing") if isinstance(doc, dict) else None
    if routing is None:
        return None
    if not isinstance(routing, dict) or not isinstance(routing.get("fingerprint"), str):
        raise InvalidInput(f"{path}: $.routing.fingerprint must be a string")
    return str(routing["fingerprint"])


def read_lock(path: Path) -> dict[str, dict[str, Any]]:
    """The ``skills`` mapping of a lock file (path → entry); InvalidInput naming the file."""
    doc = load_json_file(path, "the lock file", MAX_LOCK_BYTES)
    if not isinstance(doc, dict) or doc.get("version") != LOCK_VERSION:
        raise InvalidInput(f"{path}: not a skill-evals lock file of version {LOCK_VERSION}")
    skills = doc.get("skills")
    if not isinstance(skills, dict):
        raise InvalidInput(f"{path}: $.skills must be an object")
    for key, entry in skills.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("fingerprint"), str):
            raise InvalidInput(f"{path}: $.skills[{key!r}].fingerprint must be a string")
    return skills


def compare(
    states: Iterable[SkillState],
    base: Mapping[str, tuple[str, str | None]],
    info: dict[str, Any],
    what: str,
) -> ChangeSet:
    """Compare head states with base fingerprints (base path → (name, fingerprint)).

    A head skill is unchanged when some base skill has its fingerprint (at the same path, or
    moved/renamed); every other head skill is changed. Base skills left unmatched are removed."""
    by_fp: dict[str, list[str]] = {}
    for path, (_, fp) in base.items():
        if fp is not None:
            by_fp.setdefault(fp, []).append(path)
    result = ChangeSet(base=info)
    matched: set[str] = set()
    for state in states:
        fp = state.fingerprint
        if fp is None:
            result.changed[state.path] = f"cannot be fingerprinted: {state.error}"
            continue
        paths = by_fp.get(fp, [])
        if state.path in paths:
            matched.add(state.path)
            result.unchanged[state.path] = f"fingerprint unchanged since {what}"
        elif paths:
            matched.add(paths[0])
            result.unchanged[state.path] = f"moved from {paths[0]}, fingerprint unchanged"
        elif state.path in base:
            matched.add(state.path)
            result.changed[state.path] = f"changed since {what}"
        else:
            result.changed[state.path] = f"new since {what}"
    for path, (name, _) in sorted(base.items()):
        if path not in matched and path not in {s.path for s in states}:
            result.removed.append({"name": name, "path": path})
    return result


def all_changed(states: Iterable[SkillState], info: dict[str, Any]) -> ChangeSet:
    """Every skill is to be evaluated (``--all``, or no base available)."""
    result = ChangeSet(base=info)
    for state in states:
        result.changed[state.path] = info.get("reason", "every skill is evaluated")
    return result


@dataclass(frozen=True)
class BaseChoice:
    """How to find changes: the CLI flags plus the environment."""

    base: str | None = None
    lock: Path | None = None
    all: bool = False


def detect_changes(
    root: Path,
    config: CiConfig,
    states: list[SkillState],
    choice: BaseChoice,
    env: Mapping[str, str],
) -> ChangeSet:
    """Decide which skills changed. Order: ``--all``; ``--base REF``; ``--lock FILE``; the pull
    request's base commit from the event; the default lock file when present; else all."""
    if choice.all:
        return all_changed(states, {"mode": "all", "reason": "--all: every skill is evaluated"})
    if choice.base is not None:
        return _against_git(root, config, states, choice.base, "--base")
    if choice.lock is not None:
        return _against_lock(states, choice.lock, root)
    event_sha, problem = event_base(env)
    if event_sha is not None:
        return _against_git(root, config, states, event_sha, "pull request base")
    messages = [f"{problem}; the pull request's base is unknown"] if problem else []
    default_lock = root / config.lock
    if default_lock.is_file():
        changes = _against_lock(states, default_lock, root)
        if messages:
            changes.base["messages"] = messages
        return changes
    info: dict[str, Any] = {
        "mode": "all",
        "reason": "no --base, no pull request event and no lock file: every skill is evaluated",
    }
    if messages:
        info["messages"] = messages
    return all_changed(states, info)


def _against_lock(states: list[SkillState], lock: Path, root: Path) -> ChangeSet:
    skills = read_lock(lock)
    base = {path: (str(e.get("name", path)), e["fingerprint"]) for path, e in skills.items()}
    # Named relative to the repository when it lies inside (outputs never show the runner's
    # absolute checkout path).
    try:
        shown = lock.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        shown = str(lock)
    info = {"mode": "lock", "lockFile": shown}
    return compare(states, base, info, f"the lock file {lock.name}")


def _against_git(
    root: Path, config: CiConfig, states: list[SkillState], ref: str, source: str
) -> ChangeSet:
    info: dict[str, Any] = {"mode": "git", "ref": ref, "source": source}
    if not in_git_repo(root):
        info.update(mode="all", reason=f"{root} is not a git repository: every skill is evaluated")
        return all_changed(states, info)
    sha, messages = resolve_commit(root, ref)
    if messages:
        info["messages"] = messages
    if sha is None:
        info.update(mode="all", reason=f"base {ref} is not available: every skill is evaluated")
        return all_changed(states, info)
    info["sha"] = sha
    try:
        tree = GitTree(root, sha)
        base_states = git_states(tree, base_config(tree, config, root), _root_name(root))
    except GitError as exc:
        info.update(mode="all", reason=f"cannot read base {ref} ({exc}): every skill is evaluated")
        return all_changed(states, info)
    base = {s.path: (s.name, s.fingerprint) for s in base_states}
    return compare(states, base, info, f"base {sha[:12]}")


def describe_base(base: Mapping[str, Any]) -> str:
    """How changes were found, in words (plain text; callers escape it for their output)."""
    mode = base.get("mode")
    if mode == "git":
        sha = str(base.get("sha", ""))[:12]
        return f"changes found against {base.get('source', 'base')} {base.get('ref')} ({sha})"
    if mode == "lock":
        return f"changes found against the lock file {base.get('lockFile', '')}"
    if mode == "only":
        return "skills chosen with --only"
    if mode == "merged":
        return f"merged from {base.get('shards', 0)} shard(s)"
    return str(base.get("reason") or "every skill is evaluated")


def _root_name(root: Path) -> str:
    return root.resolve().name


def normalize_rel(path: str) -> str:
    """A relative path with / separators and no ``./``."""
    return posixpath.normpath(path.replace(os.sep, "/"))
