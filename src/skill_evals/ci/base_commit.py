"""The base commit that change detection compares with: which one the pull request (or
merge-queue) event names, and the configuration and skill fingerprints as they were there, read
from git objects (no checkout).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..errors import InvalidInput
from ..suite.walks import MAX_DEPTH, MAX_ENTRIES, depth_problem, entries_problem
from .config import CONFIG_NAMES, parse_config
from .discovery import discover
from .fingerprint import SkillState, dirhash_lines, fingerprint
from .git import HEX_SHA
from .git_tree import MODE_EXECUTABLE, MODE_SYMLINK, GitTree, TreeEntry
from .github import read_event
from .settings import CiConfig

# The events whose payload names the commit the checkout is compared with.
BASE_EVENTS = ("pull_request", "pull_request_target", "merge_group")


def event_base(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The base commit of the pull request (or merge-queue group) that triggered the workflow,
    read from ``$GITHUB_EVENT_PATH``: (sha or None outside such events, why the event file
    could not be used or None)."""
    event_name = env.get("GITHUB_EVENT_NAME", "")
    if event_name not in BASE_EVENTS:
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
    return (sha if isinstance(sha, str) and HEX_SHA.match(sha) else None), None


def event_base_sha(env: Mapping[str, str]) -> str | None:
    """:func:`event_base`'s sha alone."""
    return event_base(env)[0]


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


def _bound_problem(path: str, entries: list[tuple[str, TreeEntry]]) -> str | None:
    """The walk bounds of a working-tree skill, applied to a commit's: nesting past
    MAX_DEPTH directory levels, more than MAX_ENTRIES files and directories."""
    directories = {rel.rsplit("/", 1)[0] for rel, _ in entries if "/" in rel}
    for directory in list(directories):
        while "/" in directory:
            directory = directory.rsplit("/", 1)[0]
            directories.add(directory)
    if len(entries) + len(directories) > MAX_ENTRIES:
        return entries_problem(path)
    if any(rel.count("/") > MAX_DEPTH for rel, _ in entries):
        return depth_problem(path)
    return None


def git_states(tree: GitTree, config: CiConfig, root_name: str) -> list[SkillState]:
    """Discover and fingerprint the skills of a commit. A skill holding a symlink or a submodule
    gets no fingerprint (the working-tree rule: such a skill is invalid), so it never matches."""
    locations, _ = discover(tree, config, root_name, strict=False)
    needed: list[str] = []
    for location in locations:
        needed.extend(e.oid for p, e in tree.entries_under(location.path) if e.kind == "blob")
        if location.cases is not None:
            needed.append(tree.entries[location.cases].oid)
    sha256 = tree.blob_sha256(needed)
    states: list[SkillState] = []
    for location in locations:
        pairs: list[tuple[str, str, bool]] = []
        error = _bound_problem(location.path, tree.entries_under(location.path))
        for rel, entry in [] if error else tree.entries_under(location.path):
            if entry.mode == MODE_SYMLINK:
                error = f"{location.path}/{rel}: symlink in the skill directory"
                break
            if entry.kind != "blob":
                error = f"{location.path}/{rel}: submodule in the skill directory"
                break
            pairs.append((rel, sha256[entry.oid], entry.mode == MODE_EXECUTABLE))
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
