"""Skill fingerprints (docs/ci.md): SHA-256 over the skill's directorySha256, its cases file's
SHA-256 and the effective settings that change results.

The same function serves the working tree, a git commit (``changes``) and the lock file, so a
fingerprint means the same thing wherever it was computed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidInput
from .discovery import SkillLocation
from .settings import SkillSettings

FINGERPRINT_VERSION = 1


@dataclass(frozen=True)
class SkillState:
    """A discovered skill with its hashes. ``fingerprint`` is None when the skill cannot be
    hashed (a symlink inside, a path with a newline); ``error`` then says why."""

    location: SkillLocation
    directory_sha256: str | None
    cases_sha256: str | None
    fingerprint: str | None
    error: str | None = None

    @property
    def name(self) -> str:
        """The skill's name."""
        return self.location.name

    @property
    def path(self) -> str:
        """The skill's path relative to the repository root."""
        return self.location.path


def dirhash_lines(entries: Iterable[tuple[str, str, bool]]) -> str:
    """The directorySha256 from (relative path, hex sha256 of the bytes, owner-executable)
    triples: sha256 of ``"<sha>  <path>\\n"`` lines (``"<sha> x <path>\\n"`` for an executable
    file) sorted by the path's UTF-8 bytes (Go's dirhash.Hash1 in hex, plus the executable bit),
    exactly as :func:`skill_evals.suite.skill.directory_sha256` computes it from a working tree."""
    from ..suite.skill import hash_line

    digest = hashlib.sha256()
    encoded = [(path.encode("utf-8", "surrogateescape"), sha, x) for path, sha, x in entries]
    for path, sha, executable in sorted(encoded, key=lambda e: e[0]):
        if b"\n" in path:
            raise InvalidInput(f"{path!r}: a path inside a skill contains a newline")
        digest.update(hash_line(sha, executable, path))
    return digest.hexdigest()


def fingerprint(directory_sha256: str, cases_sha256: str | None, settings: SkillSettings) -> str:
    """SHA-256 (hex) of the canonical JSON of the three inputs. The skill's path is not part of
    it, so a moved or renamed directory keeps its fingerprint."""
    payload = {
        "v": FINGERPRINT_VERSION,
        "directorySha256": directory_sha256,
        "casesSha256": cases_sha256,
        "settings": settings.result_settings(),
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of a regular file's bytes, read in blocks (InvalidInput for a symlink,
    FIFO or device: the open never blocks, and such a cases file is refused anyway)."""
    from ..suite.jsonl import open_regular_file

    digest = hashlib.sha256()
    with os.fdopen(open_regular_file(path, "cases file"), "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def worktree_states(root: Path, locations: Iterable[SkillLocation]) -> list[SkillState]:
    """Hash every skill of the working tree at ``root``."""
    from ..suite.skill import directory_sha256
    from ..suite.walks import TreeTooLarge

    states: list[SkillState] = []
    for location in locations:
        skill_dir = root / location.path
        cases_sha: str | None = None
        try:
            dir_sha = directory_sha256(skill_dir)
            if location.cases is not None:
                cases_sha = file_sha256(root / location.cases)
        except TreeTooLarge:
            raise  # past the walk bounds: the whole command stops (exit 5), before any run
        except InvalidInput as exc:
            states.append(SkillState(location, None, None, None, str(exc)))
            continue
        except OSError as exc:
            message = f"{location.path}: cannot read ({exc.strerror})"
            states.append(SkillState(location, None, None, None, message))
            continue
        states.append(
            SkillState(
                location, dir_sha, cases_sha, fingerprint(dir_sha, cases_sha, location.settings)
            )
        )
    return states
