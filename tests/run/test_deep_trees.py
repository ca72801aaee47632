"""Deep and odd directory trees never crash a run: a 1,100-level chain left in the workspace by
the runner, a setup command or a verifier; a stale workspace root holding one; a skill or a
fixture past the walk bounds (exit 5 naming it); special files in the workspace.

Every tree is made at run time with relative mkdir/chdir steps (no path ever gets long), under
the test's own TMPDIR."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skill_evals.suite.walks import remove_tree
from tests.conftest import PYTHON_SANDBOX_PATH, assert_valid_report, write_jsonl, write_skill

RUNNER = Path(__file__).resolve().parents[1] / "runners" / "deep.py"
LEVELS = 1100
# Made in the `with` arm only (mkdir is slow on some disks: few chains keep the test fast).
CHAIN = (
    "import os, sys\n"
    "if os.environ.get('EVALGATE_SKILL_VARIANT', 'with') != 'with': sys.exit(0)\n"
    "os.makedirs(sys.argv[1], exist_ok=True); os.chdir(sys.argv[1])\n"
    "for _ in range(int(sys.argv[2])):\n"
    "    os.mkdir('d'); os.chdir('d')\n"
    "open('bottom.txt', 'w').write('x')\n"
)
# Odd entries beside the chain: a FIFO, a socket, a symlink loop, an unreadable directory.
ODD = (
    "import os, socket\n"
    "os.mkfifo('fifo'); os.symlink('loop', 'loop'); os.mkdir('locked'); os.chmod('locked', 0)\n"
    "s = socket.socket(socket.AF_UNIX); s.bind('sock'); s.close()\n"
)


@pytest.fixture(autouse=True)
def _removed_after(tmp_path: Path) -> Iterator[None]:
    """pytest removes old temporary directories with shutil.rmtree, which recurses: a chain
    left by a failing run would break every later session. Remove it without recursion."""
    yield
    remove_tree(tmp_path)


def chain(top: Path, levels: int) -> None:
    """``top/d/d/…`` made with relative steps."""
    subprocess.run([sys.executable, "-c", CHAIN, str(top), str(levels)], check=True)


def cli(*args: str, tmp: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TMPDIR=str(tmp))
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=cwd,
    )


def make_project(root: Path) -> dict[str, Path]:
    skill = write_skill(root, name="deep-skill", description="Works in deep trees.")
    evals = root / "evals"
    fixture = evals / "fixtures" / "repo"
    (fixture / "src").mkdir(parents=True)
    (fixture / "src" / "app.py").write_text("print('hi')\n", encoding="utf-8")
    py = sys.executable
    cases: list[dict[str, Any]] = []
    for i in range(10):
        task: list[dict[str, Any]] = [{"check": "unchanged", "paths": ["src/"]}]
        case: dict[str, Any] = {
            "id": f"case-{i}",
            "prompt": f"work deep {i}",
            "expectTrigger": True,
            "fixture": "fixtures/repo",
            "task": task,
        }
        if i == 0:  # a setup command leaves a chain before the runner starts
            case["setup"] = [[py, "-c", CHAIN, "from-setup", str(LEVELS)]]
        if i == 1:  # a verifier leaves one after the runner, then passes
            task.insert(0, {"check": "command", "run": [py, "-c", CHAIN, "verifier", str(LEVELS)]})
        if i == 3:  # odd entries: a FIFO, a socket, a symlink loop, an unreadable directory
            task.insert(0, {"check": "command", "run": [py, "-c", ODD]})
        cases.append(case)
    path = write_jsonl(evals / "cases.jsonl", cases)
    tmp = root / "tmp"
    tmp.mkdir()
    return {"skill": skill, "cases": path, "tmp": tmp}


def run_test(project: dict[str, Path], *extra: str) -> subprocess.CompletedProcess[str]:
    return cli(
        "test",
        "--skill",
        str(project["skill"]),
        "--cases",
        str(project["cases"]),
        "--runner",
        shlex.join([sys.executable, str(RUNNER), "case-2"]),
        *PYTHON_SANDBOX_PATH,
        "--trials",
        "1",
        "--jobs",
        "2",
        "-q",
        "--format",
        "json",
        *extra,
        tmp=project["tmp"],
    )


@pytest.fixture(scope="module")
def deep_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[str, Path], Any]]:
    root = tmp_path_factory.mktemp("deep")
    project = make_project(root)
    yield project, run_test(project)
    remove_tree(root)


def test_deep_workspaces_are_judged_and_removed(deep_run: tuple[dict[str, Path], Any]) -> None:
    project, proc = deep_run
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert_valid_report(report)
    failed = {r["id"]: r.get("failedCheck") for r in report["caseResults"]}
    # The runner's chain (case-2), the setup's (case-0, seen by the snapshot taken after
    # setup) and the verifier's (case-1, seen after it ran): the check fails with the bound.
    for case_id, where in (("case-2", ""), ("case-0", "after setup: "), ("case-1", "")):
        assert failed[case_id] is not None, case_id
        assert failed[case_id]["variant"] == "with"
        assert failed[case_id]["reason"] == (
            f"unchanged: {where}the workspace: directories nest deeper than 256 levels; flatten it"
        )
    # The FIFO, socket, symlink loop and unreadable directory: judged, nothing crashed.
    assert failed["case-3"] is None
    assert sum(1 for f in failed.values() if f is not None) == 3
    # Nothing left behind: workspaces, roots and the runner's TMPDIRs are all gone.
    assert list(project["tmp"].iterdir()) == []


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def immutable(path: Path, on: bool) -> bool:
    """chattr +i / -i (root on ext4 and most Linux filesystems); False when unavailable."""
    try:
        done = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True)
    except OSError:
        return False
    return done.returncode == 0


def test_stale_roots_never_block_a_run(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, name="deep-skill", description="Works in deep trees.")
    cases = [{"id": f"c{i}", "prompt": f"p {i}", "expectTrigger": True} for i in range(10)]
    project = {"skill": skill, "cases": write_jsonl(tmp_path / "cases.jsonl", cases)}
    tmp = project["tmp"] = tmp_path / "tmp"
    tmp.mkdir()
    # A root left by a killed engine, holding a chain deeper than Python's recursion limit.
    deep = tmp / f"skill-evals-ws-{dead_pid()}-deepleft"
    chain(deep / "slot" / "workspace", LEVELS)
    os.chmod(deep, 0o300)
    # One that cannot be removed at all (an immutable file inside), when this system allows it.
    stuck = tmp / f"skill-evals-ws-{dead_pid()}-stuckleft"
    (stuck / "slot").mkdir(parents=True)
    (stuck / "slot" / "pinned").write_text("x", encoding="utf-8")
    pinned = immutable(stuck / "slot" / "pinned", True)
    try:
        proc = run_test(project)
    finally:
        if pinned:
            immutable(stuck / "slot" / "pinned", False)
    assert proc.returncode == 0, proc.stderr
    assert not deep.exists()
    report = json.loads(proc.stdout)
    warning = f"{stuck}: a workspace root left by an ended run could not be removed"
    if pinned:
        assert proc.stderr.count(warning) == 1, proc.stderr
        assert sum(warning in m for m in report["messages"]) == 1
    else:
        assert not stuck.exists()
    assert "internal error" not in proc.stderr


@pytest.fixture(scope="module")
def deep_repo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A repository whose one skill nests 300 directory levels deep (a file at the bottom)."""
    root = tmp_path_factory.mktemp("repo")
    skill = write_skill(root / "skills", name="deep-skill", description="Nests deeply.")
    cases = [{"id": f"c{i}", "prompt": f"p {i}", "expectTrigger": True} for i in range(10)]
    (skill / "evals").mkdir()
    write_jsonl(skill / "evals" / "cases.jsonl", cases)
    chain(skill / "assets", 300)
    routing = [{"id": f"r{i}", "prompt": f"p {i}", "expect": ["deep-skill"]} for i in range(10)]
    write_jsonl(root / "routing.jsonl", routing)
    tmp = root / "tmp"
    tmp.mkdir()
    return {"root": root, "skill": skill, "tmp": tmp}


@pytest.mark.parametrize(
    "command",
    [
        ["test", "--skill", "skills/deep-skill", "--cases", "skills/deep-skill/evals/cases.jsonl"],
        ["ci"],
        ["lock", "--update"],
        ["changed"],
        ["route", "--skill", "skills/deep-skill", "--cases", "routing.jsonl"],
    ],
    ids=lambda c: c[0] if c[0] != "lock" else "lock",
)
def test_a_skill_past_the_depth_bound_is_invalid(
    deep_repo: dict[str, Path], command: list[str]
) -> None:
    marker = deep_repo["tmp"] / "runner-started"
    runner = shlex.join([sys.executable, "-c", f"open({str(marker)!r}, 'a').close()"])
    needs_runner = command[0] in ("test", "ci", "route")
    proc = cli(
        *command,
        *(["--runner", runner] if needs_runner else []),
        tmp=deep_repo["tmp"],
        cwd=deep_repo["root"],
    )
    assert proc.returncode == 5, proc.stderr
    assert f"{deep_repo['skill']}: directories nest deeper than 256 levels" in proc.stderr
    assert not marker.exists()  # decided before any runner started
    assert "internal error" not in proc.stderr


def test_validate_reports_the_depth_bound_as_an_error(deep_repo: dict[str, Path]) -> None:
    proc = cli("validate", "skills/deep-skill", tmp=deep_repo["tmp"], cwd=deep_repo["root"])
    assert proc.returncode == 1
    assert proc.stdout.strip().endswith("directories nest deeper than 256 levels; flatten it")


def test_a_fixture_past_the_depth_bound_is_invalid(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, name="deep-skill", description="Nests deeply.")
    chain(tmp_path / "fixtures" / "repo", 300)
    cases = [
        {"id": f"c{i}", "prompt": f"p {i}", "expectTrigger": True, "fixture": "fixtures/repo"}
        for i in range(10)
    ]
    path = write_jsonl(tmp_path / "cases.jsonl", cases)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = cli("test", "--skill", str(skill), "--cases", str(path), "--runner", "false", tmp=tmp)
    assert proc.returncode == 5, proc.stderr
    fixture = tmp_path / "fixtures" / "repo"
    bound = f"{fixture}: directories nest deeper than 256 levels"
    assert f"{path}:1: field fixture: {bound}" in proc.stderr


def test_walk_bounds_count_files_and_directories(tmp_path: Path) -> None:
    from skill_evals.suite.walks import TreeTooLarge, walk

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "f").write_text("x", encoding="utf-8")
    assert [e.rel for e in walk(tmp_path, max_entries=3)] == [b"a", b"a/b", b"a/f"]
    with pytest.raises(TreeTooLarge, match="holds more than 2 entries"):
        list(walk(tmp_path, max_entries=2))
    with pytest.raises(TreeTooLarge, match="deeper than 1 levels"):
        list(walk(tmp_path, max_depth=1))
    assert [e.rel for e in walk(tmp_path, max_depth=1, prune=True)] == [b"a", b"a/b", b"a/f"]


def test_a_built_in_runner_sweeps_a_deep_stale_workspace(tmp_path: Path) -> None:
    """A built-in agent runner removes the stale workspaces of runners that were killed: one
    holding a 1,100-level chain is removed too, and the runner goes on."""
    from skill_evals.agents.workspace import OWNER_FILE, PARENT_PREFIX

    tmp = tmp_path / "tmp"
    parent = tmp / f"{PARENT_PREFIX}{os.getuid()}"
    stale = parent / ("0" * 32)
    chain(stale / "project", LEVELS)
    (stale / OWNER_FILE).write_text(str(dead_pid()), encoding="ascii")
    os.chmod(parent, 0o300)
    skill = write_skill(tmp_path, name="deep-skill", description="Works in deep trees.")
    fake = tmp_path / "claude"  # answers nothing: the runner reports why, in its own line
    fake.write_text(f"#!{sys.executable}\nimport sys\nsys.stdin.read()\nsys.exit(1)\n", "utf-8")
    fake.chmod(0o755)
    env = dict(
        os.environ,
        TMPDIR=str(tmp),
        EVALGATE_SKILL_DIR=str(skill),
        EVALGATE_SKILL_CASE_ID="c1",
        EVALGATE_SKILL_TRIAL="1",
        EVALGATE_SKILL_VARIANT="with",
        ANTHROPIC_API_KEY="sk-test-not-used",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "runner", "claude-code", "--bin", str(fake)],
        input="a prompt",
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr, proc.stderr
    assert "runnerError" in proc.stdout or "invokedSkills" in proc.stdout, proc.stdout
    os.chmod(parent, 0o700)
    assert not stale.exists()


def test_discovery_walks_a_repository_holding_a_deep_chain(tmp_path: Path) -> None:
    """`changed` (skill discovery over the working tree) with a 1,100-level chain beside the
    skills: the skills are found, nothing crashes."""
    skill = write_skill(tmp_path / "skills", name="deep-skill", description="Nests deeply.")
    (skill / "evals").mkdir()
    cases = [{"id": f"c{i}", "prompt": f"p {i}", "expectTrigger": True} for i in range(10)]
    write_jsonl(skill / "evals" / "cases.jsonl", cases)
    chain(tmp_path / "build" / "cache", LEVELS)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = cli("changed", tmp=tmp, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["skills/deep-skill"]


def test_a_skill_path_too_long_for_the_system_is_invalid(tmp_path: Path) -> None:
    """Twenty levels of 250-character names: the paths pass PATH_MAX (4096) well within the
    depth bound; the skill is refused like one past a bound, naming it."""
    skill = write_skill(tmp_path, name="long-skill", description="Long names.")
    code = (
        "import os, sys\nos.chdir(sys.argv[1])\n"
        "for _ in range(20):\n    os.mkdir('n' * 250); os.chdir('n' * 250)\n"
        "open('f', 'w').close()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(skill)], check=True)
    cases = [{"id": f"c{i}", "prompt": f"p {i}", "expectTrigger": True} for i in range(10)]
    path = write_jsonl(tmp_path / "cases.jsonl", cases)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = cli("test", "--skill", str(skill), "--cases", str(path), "--runner", "false", tmp=tmp)
    assert proc.returncode == 5, proc.stderr
    assert f"{skill}: a path inside it is longer than the system allows" in proc.stderr


def test_a_fixture_whose_workspace_copy_would_be_too_long_is_invalid(tmp_path: Path) -> None:
    """A fixture readable where it is (its paths stay below PATH_MAX) whose copy in a
    workspace below a long TMPDIR would pass the limit: refused before any runner starts,
    naming the fixture, not a runner failure per invocation."""
    skill = write_skill(tmp_path, name="long-skill", description="Long names.")
    fixture = tmp_path / "fixtures" / "edge"
    fixture.mkdir(parents=True)
    room = 4095 - len(os.fsencode(fixture)) - 2  # what a path inside it may take here
    levels = room // 201
    assert levels * 201 > 4095 - 1000  # needs to fill most of the limit
    code = (
        "import os, sys\nos.chdir(sys.argv[1])\n"
        f"for _ in range({levels}):\n    os.mkdir('n' * 200); os.chdir('n' * 200)\n"
        "open('f', 'w').close()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(fixture)], check=True)
    cases = [
        {"id": f"c{i}", "prompt": f"p {i}", "expectTrigger": True, "fixture": "fixtures/edge"}
        for i in range(10)
    ]
    path = write_jsonl(tmp_path / "cases.jsonl", cases)
    tmp = tmp_path / ("t" * 200) / ("u" * 200)  # the workspace root adds ~75 bytes more
    tmp.mkdir(parents=True)
    marker = tmp_path / "runner-started"
    runner = shlex.join([sys.executable, "-c", f"open({str(marker)!r}, 'a').close()"])
    proc = cli("test", "--skill", str(skill), "--cases", str(path), "--runner", runner, tmp=tmp)
    assert proc.returncode == 5, proc.stderr
    problem = f"{fixture}: a path inside it is longer than the system allows"
    assert f"{path}:1: field fixture: {problem}" in proc.stderr
    assert not marker.exists()
