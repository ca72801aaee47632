"""Hashing reads each file once — `skill-evals lock --update` on 500 skills / 200 MB is
within 2× of `sha256sum` over the same files.

The tree: 500 skills, each a SKILL.md, evals/cases.jsonl and four 100 kB data files (~200 MB).
Both sides run with a warm page cache (each is run once before timing).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import median_seconds, verdict, write_cases, write_skill

SKILLS = 500
FILES_PER_SKILL = 4
FILE_BYTES = 100_000


def build_tree(root: Path) -> list[Path]:
    files: list[Path] = []
    for i in range(SKILLS):
        skill = write_skill(root / "skills", f"skill-{i:03d}")
        (skill / "evals").mkdir()
        write_cases(skill / "evals" / "cases.jsonl", 10)
        for j in range(FILES_PER_SKILL):
            data = skill / "references" / f"data-{j}.bin"
            data.parent.mkdir(exist_ok=True)
            data.write_bytes(os.urandom(FILE_BYTES))
        files.extend(p for p in skill.rglob("*") if p.is_file())
    return files


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = build_tree(root)
        total = sum(p.stat().st_size for p in files)
        print(f"tree: {SKILLS} skills, {len(files)} files, {total / 1e6:.0f} MB")
        listing = root / "files.txt"
        listing.write_text("\n".join(str(p) for p in files) + "\n")

        def sha256sum() -> None:
            with listing.open("rb") as names:
                subprocess.run(
                    ["xargs", "-d", "\n", "sha256sum"],
                    stdin=names,
                    check=True,
                    stdout=subprocess.DEVNULL,
                )

        def lock() -> None:
            subprocess.run(
                [sys.executable, "-m", "skill_evals", "lock", "--update"],
                cwd=root,
                check=True,
                stdout=subprocess.DEVNULL,
            )

        sha256sum()
        lock()
        base = median_seconds(sha256sum, repeat=3)
        ours = median_seconds(lock, repeat=3)
    return 0 if verdict("lock --update vs sha256sum", ours, base, 2.0) else 1


if __name__ == "__main__":
    sys.exit(main())
