"""A case file is untrusted: its ``fixture`` chooses what is copied into every workspace, so it
must never carry a repository's metadata in (Actions keeps the job token in ``.git/config`` as an
``extraheader``; the workspace, unlike a bound directory, is not searched for ``.git``). Real
CLI, real bubblewrap, a checkout whose ``.git/config`` holds a fake token; the probe compares a
hash of what it finds, never the token."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skill_evals.run import workspace
from tests.conftest import write_jsonl, write_skill
from tests.sandbox.test_network import needs_bwrap

TOKEN_LINE = "extraheader = AUTHORIZATION: basic ZmFrZS1qb2ItdG9rZW4="
RUNNER = """\
import json, os, sys
sys.stdin.read()
ws = os.environ.get("SKILL_EVALS_WORKSPACE", "")
seen = []
for top, dirs, files in os.walk(ws):
    for name in files:
        with open(os.path.join(top, name), "rb") as handle:
            seen.append(b"extraheader" in handle.read())
out = "TOKEN" if any(seen) else "clean"
print(json.dumps({"variant": os.environ["EVALGATE_SKILL_VARIANT"], "invokedSkills": [],
                  "output": out, "exitCode": 0}))
"""


def _checkout(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    with (root / ".git" / "config").open("a", encoding="utf-8") as handle:
        handle.write(f'[http "https://github.com/"]\n\t{TOKEN_LINE}\n')
    (root / "runner.py").write_text(RUNNER, "utf-8")
    write_skill(root / "skills")
    nested = root / "project" / "vendor" / "lib" / ".git"
    nested.mkdir(parents=True)
    (nested / "config").write_text(f"[http]\n\t{TOKEN_LINE}\n", "utf-8")
    (root / "project" / "README.md").write_text("a project\n", "utf-8")
    return root


def _run(root: Path, fixture: str) -> subprocess.CompletedProcess[str]:
    cases = write_jsonl(
        root / "cases.jsonl",
        [
            {"id": f"c{i}", "prompt": f"question {i}", "expectTrigger": False,
             "fixture": fixture, "task": {"check": "output_matches", "pattern": "^clean$"}}
            for i in range(10)
        ],
    )  # fmt: skip
    skill = next((root / "skills").iterdir())
    return subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(cases), "--runner", f"{sys.executable} runner.py"),
            *("--trials", "1", "--sandbox", "required", "--sandbox-path", "runner.py"),
            *("--format", "json"),
        ],
        capture_output=True, text=True, timeout=300, cwd=root, env=dict(os.environ),
    )  # fmt: skip


@needs_bwrap
@pytest.mark.parametrize(
    ("fixture", "named"),
    [
        (".git", "field fixture: names a .git directory"),
        ("project", "field fixture: project/vendor/lib/.git is .git metadata"),
    ],
)
def test_a_fixture_never_brings_git_metadata_into_the_workspace(
    tmp_path: Path, fixture: str, named: str
) -> None:
    root = _checkout(tmp_path / "checkout")
    done = _run(root, fixture)
    assert done.returncode == 5, done.stderr
    assert f"cases.jsonl:1: {named}" in done.stderr.replace(str(root) + "/", "")
    assert "git init" in done.stderr  # what to do instead
    assert "ZmFrZS" not in done.stderr + done.stdout
    # The same project without its nested repository is copied and its runs are clean.
    shutil.rmtree(root / "project" / "vendor" / "lib" / ".git")
    done = _run(root, "project")
    assert done.returncode == 0, done.stderr
    task = json.loads(done.stdout)["task"]
    assert task["with"]["passed"] == task["without"]["passed"] == 10


def test_a_git_directory_that_appears_after_the_check_is_not_copied(tmp_path: Path) -> None:
    source, target = tmp_path / "fixture", tmp_path / "w"
    (source / "sub" / ".git").mkdir(parents=True)
    (source / "sub" / ".git" / "config").write_text(TOKEN_LINE, "utf-8")
    target.mkdir()
    with pytest.raises(workspace._FixtureChanged, match=r"\.git metadata"):
        workspace.copy_fixture(source, target)
    assert not (target / "sub" / ".git").exists()
