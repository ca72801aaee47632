"""compare: base — matching each changed skill with its base version and writing that version
from git objects into a private temporary directory (no checkout, removed afterwards)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from skill_evals.ci.base_skills import BaseSkills, compare_ref, load_base_skills
from skill_evals.ci.settings import CiConfig
from skill_evals.suite.skill import directory_sha256

from .conftest import commit_all, git, make_repo


def _base(repo: Path, ref: str = "HEAD~1") -> BaseSkills:
    skills, messages = load_base_skills(repo, CiConfig(), git(repo, "rev-parse", ref))
    assert skills is not None, messages
    return skills


def test_the_base_version_is_written_from_git_objects(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", ["alpha", "beta"])
    alpha = repo / "skills" / "alpha"
    script = alpha / "scripts" / "run.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\necho base\n", encoding="utf-8")
    script.chmod(0o755)
    (alpha / "empty.txt").write_bytes(b"")
    (alpha / "copy.txt").write_text("same\n", encoding="utf-8")
    (alpha / "copy2.txt").write_text("same\n", encoding="utf-8")  # one blob, two paths
    commit_all(repo, "base")
    base_sha = directory_sha256(alpha)
    (alpha / "SKILL.md").write_text(
        (alpha / "SKILL.md").read_text("utf-8") + "\nnew\n", encoding="utf-8"
    )
    script.write_text("#!/bin/sh\necho head\n", encoding="utf-8")
    commit_all(repo, "head")
    skills = _base(repo)
    match = skills.match("skills/alpha", "alpha")
    assert match.state is not None and "its version at base" in match.note
    assert match.state is not None
    with skills.materialised(match.state) as copy:
        assert directory_sha256(copy) == base_sha == match.state.directory_sha256
        assert copy.name == "alpha"
        assert (copy / "scripts" / "run.sh").read_text("utf-8") == "#!/bin/sh\necho base\n"
        assert os.stat(copy / "scripts" / "run.sh").st_mode & stat.S_IXUSR
        assert (copy / "empty.txt").read_bytes() == b""
        assert stat.S_IMODE(os.stat(copy.parent).st_mode) == 0o700
        assert not copy.is_relative_to(repo)
        parent = copy.parent
    assert not parent.exists()  # removed afterwards
    assert git(repo, "status", "--porcelain") == ""  # nothing checked out or touched


def test_removed_even_when_the_evaluation_fails(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", ["alpha"])
    commit_all(repo, "again")
    skills = _base(repo)
    match = skills.match("skills/alpha", "alpha")
    seen: list[Path] = []
    assert match.state is not None
    try:
        with skills.materialised(match.state) as copy:
            seen.append(copy)
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert seen and not seen[0].exists()


def test_moved_new_renamed_and_ambiguous_skills(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", ["alpha", "beta", "gamma"])
    shutil.move(repo / "skills" / "alpha", repo / "moved-alpha")
    (repo / "skills" / "delta").mkdir()
    (repo / "skills" / "delta" / "SKILL.md").write_text(
        "---\nname: delta\ndescription: New.\n---\nbody\n", encoding="utf-8"
    )
    beta_md = repo / "skills" / "beta" / "SKILL.md"
    beta_md.write_text(beta_md.read_text("utf-8").replace("name: beta", "name: beta2"), "utf-8")
    commit_all(repo, "head")
    skills = _base(repo)
    moved = skills.match("moved-alpha", "alpha")
    assert moved.state is not None and moved.state.path == "skills/alpha"
    assert "(moved)" in moved.note
    assert skills.match("skills/delta", "delta").state is None
    renamed = skills.match("skills/beta", "beta2")
    assert renamed.state is None and "new since base" in renamed.note


def test_a_base_version_holding_a_symlink_is_no_baseline(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", ["alpha"])
    (repo / "skills" / "alpha" / "link").symlink_to("SKILL.md")
    commit_all(repo, "base with a symlink")
    (repo / "skills" / "alpha" / "link").unlink()
    commit_all(repo, "head")
    match = _base(repo).match("skills/alpha", "alpha")
    assert match.state is None and "cannot be used" in match.note


def test_without_a_base_commit_there_is_no_baseline(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", ["alpha"])
    skills, messages = load_base_skills(repo, CiConfig(), None)
    assert skills is None and "needs a base commit" in messages[0]
    skills, messages = load_base_skills(repo, CiConfig(), "no-such-ref")
    assert skills is None and "not available" in messages[-1]
    assert compare_ref({"sha": "abc"}, "main", None) == "abc"
    assert compare_ref({"mode": "only"}, None, "def") == "def"
    assert compare_ref({"mode": "only"}, "main", "def") == "main"
