"""What is bound is chosen by the trusted side, against a fake CI job with real bubblewrap and
the real CLI: a case's setup and command argv name the job's secrets (absolute, relative,
``{workspace}/../..``, through a symlink) and see none of them; a runner script at the
checkout's root sees its own file, not its siblings; every ``.git`` below a bound directory
stands empty (and is counted); the ``without`` and ``baseline`` arms see nothing of the tested
skill; a kept workspace keeps no outward symlink; a venv made from pyenv's Python runs inside.
The probe reports hashes of what it read; it is never told the secrets."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import assert_valid_report, write_jsonl, write_skill

PROBE = Path(__file__).resolve().parents[1] / "runners" / "sandbox_probe.py"
BWRAP = shutil.which("bwrap")

pytestmark = pytest.mark.skipif(
    BWRAP is None or not sys.platform.startswith("linux"),
    reason="bubblewrap is not installed here (apt-get install -y bubblewrap)",
)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _git_dirs(top: str) -> int:
    return sum(1 for _, dirs, _ in os.walk(top) for d in dirs if d == ".git")


def _checkout(root: Path, secret: str) -> dict[str, Path]:
    """A fake job's checkout: .git/config with an extraheader, a runner script at its root
    beside a secret, a tools folder and a data folder holding .git directories at depth."""
    places = {
        "git_config": root / ".git" / "config",
        "sibling": root / "secret_sibling.txt",
        "id_rsa": root / "home" / ".ssh" / "id_rsa",
        "tools_git": root / "tools" / "a" / "b" / "c" / ".git",
        "tools_top_git": root / "tools" / ".git",
        "data_git": root / "data" / "x" / "y" / ".git",
    }
    for name in ("git_config", "sibling", "id_rsa"):
        places[name].parent.mkdir(parents=True, exist_ok=True)
    places["git_config"].write_text(f'[http]\n\textraheader = "AUTHORIZATION: basic {secret}"\n')
    places["sibling"].write_text(secret)
    places["id_rsa"].write_text(secret)
    for name in ("tools_git", "tools_top_git", "data_git"):
        places[name].mkdir(parents=True)
        (places[name] / "config").write_text(f"[http]\n\textraheader = {secret}\n")
    (root / "tools" / "tool.txt").write_text("a tool")
    runner = root / "probe_runner.py"  # at the checkout's root, started by its own path
    runner.write_text(f"#!{sys.executable}\n" + PROBE.read_text())
    runner.chmod(0o755)
    interp = root / "interp" / "bin"  # a #! interpreter outside W: never bound for a case
    interp.mkdir(parents=True)
    (interp / "sh").symlink_to("/bin/sh")
    (root / "interp" / "secret.txt").write_text(secret)
    fixture = root / "fixture"
    fixture.mkdir()
    (fixture / "run.sh").write_text(f"#!{interp / 'sh'}\nexit 0\n")
    (fixture / "run.sh").chmod(0o755)
    return places


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run, three arms (with, without, baseline), two probe cases and one whose check is
    a W script with an outside interpreter; the workspaces are kept."""
    root = tmp_path_factory.mktemp("binds")
    secret = secrets.token_hex(24)
    places = _checkout(root, secret)
    skill = write_skill(root / "skills")
    baseline = write_skill(root / "base", body="# Refund policy\n\nOld text.\n")
    relative = os.path.relpath(places["git_config"], tempfile.gettempdir())
    (root / "ssh_link").symlink_to(places["id_rsa"].parent)  # a symlinked way to the key
    attacks = [
        str(places["id_rsa"]),
        str(places["git_config"]),
        f"{{workspace}}/../../../{relative}",
        f"../../../{relative}",
        "{workspace}/../..",
        str(skill / "SKILL.md"),
        str(places["sibling"]),
        str(root / "ssh_link" / "id_rsa"),
    ]
    probe = [sys.executable, str(PROBE)]
    setup = [
        [*probe, "setup", *attacks],
        ["ln", "-s", str(places["id_rsa"]), "leak"],
        ["ln", "-s", "probe-setup.json", "inner"],
    ]
    records: list[dict[str, Any]] = [
        {
            "id": f"c{i}",
            "prompt": f"question {i}",
            "expectTrigger": False,
            "setup": setup,
            "task": {"check": "command", "run": [*probe, "command", *attacks, "leak"]},
        }
        for i in range(2)
    ]
    records.append(
        {
            "id": "interp",
            "prompt": "question 3",
            "expectTrigger": False,
            "fixture": "fixture",
            "task": {"check": "command", "run": ["./run.sh"]},
        }
    )
    outside = [str(root / "probe_runner.py"), "command"]  # a program the case names: not there
    records.append(
        {"id": "outside", "prompt": "question 4", "expectTrigger": False,
         "task": {"check": "command", "run": outside}}
    )  # fmt: skip
    records += [{"id": f"p{i}", "prompt": f"plain {i}", "expectTrigger": False} for i in range(6)]
    cases = write_jsonl(root / "cases.jsonl", records)
    targets = [
        str(places["id_rsa"]), str(places["git_config"]), str(places["sibling"]),
        str(places["tools_git"]), str(places["tools_git"] / "config"),
        str(places["tools_top_git"]), str(places["tools_top_git"] / "config"),
        str(places["data_git"]),
        str(places["data_git"] / "config"), str(root / "tools" / "tool.txt"),
        str(skill / "SKILL.md"), str(skill), str(baseline / "SKILL.md"),
    ]  # fmt: skip
    github_env = root / "github_env"
    github_env.write_text("")
    env = dict(
        os.environ,
        HOME=str(root / "home"),
        GITHUB_TOKEN=secret,
        SKILL_EVALS_PI_API_KEY=secret,  # pi's key: a custom runner never gets it
        GITHUB_ENV=str(github_env),
        PROBE_TARGETS=json.dumps(targets),
    )
    env.pop("SKILL_EVALS_SANDBOX", None)
    kept = root / "kept"
    runner = f"{root / 'probe_runner.py'} runner {root / 'data'} {skill}"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(cases), "--runner", runner, "--trials", "1", "-q"),
            *("--baseline", str(baseline), "--arms", "with,without,baseline"),
            *("--sandbox", "required", "--keep-workspaces", str(kept), "--format", "json"),
            *("--sandbox-path", sys.prefix, "--sandbox-path", str(PROBE)),
            *("--sandbox-path", str(root / "tools"), "--jobs", "2"),
            *("--sandbox-path", str(root / "skills")),  # the hidden skill stays hidden
        ],
        capture_output=True, text=True, timeout=300, env=env, cwd=root,
    )  # fmt: skip
    findings: dict[tuple[str, str, str], dict[str, Any]] = {}
    for path in kept.rglob("probe-*.json"):
        data = json.loads(path.read_text())
        arm, case = path.parent.name, path.parent.parent.parent.name
        findings[(case, arm, data["role"])] = data
    return {
        "proc": proc,
        "report": json.loads(proc.stdout),
        "findings": findings,
        "secret": _sha(secret.encode()),
        "places": places,
        "skill": skill,
        "baseline": baseline,
        "kept": kept,
        "github_env": github_env,
        "skill_sha": _sha((skill / "SKILL.md").read_bytes()),
    }


def test_the_run_completes_sandboxed(attacked: dict[str, Any]) -> None:
    report = attacked["report"]
    assert report["exitCode"] == 0, attacked["proc"].stderr
    assert_valid_report(report)
    assert report["sandbox"]["mode"] == "bwrap"
    roles = {(case, arm, role) for case, arm, role in attacked["findings"]}
    for case in ("c0", "c1"):
        for arm in ("with", "without", "baseline"):
            for role in ("setup", "runner", "command"):
                assert (case, arm, role) in roles, (case, arm, role)
    assert attacked["github_env"].read_text() == ""


@pytest.mark.parametrize("role", ["setup", "runner", "command"])
def test_no_secret_is_read_whoever_names_it(attacked: dict[str, Any], role: str) -> None:
    """Through the runner's argv, a setup's and a verifier's: absolute, relative, ../.., a
    symlink in W; the environment of every process in the sandbox."""
    places = attacked["places"]
    for (case, arm, found_role), found in attacked["findings"].items():
        if found_role != role:
            continue
        assert attacked["secret"] not in found["hashes"], (case, arm, role)
        readable = [t for t in (*found["targets"].values(), *found["args"]) if "sha256" in t]
        assert all(t["sha256"] != attacked["secret"] for t in readable), (case, arm, role)
        for name in ("id_rsa", "git_config", "sibling"):
            assert found["targets"][str(places[name])]["exists"] is False, (name, arm, role)
        if role != "runner":
            id_rsa, git_config, dotdot, relative, root, _, sibling, *linked = found["args"]
            for entry in (id_rsa, git_config, dotdot, relative, sibling, *linked):
                assert entry["exists"] is False, (case, arm, role, entry)
            assert root["entries"] == 1  # its own slot: no other invocation's workspace


def test_every_git_directory_below_a_bound_one_stands_empty(attacked: dict[str, Any]) -> None:
    places = attacked["places"]
    runner = attacked["findings"][("c0", "with", "runner")]["targets"]
    for name in ("tools_git", "tools_top_git", "data_git"):
        assert runner[str(places[name])] == {"exists": True, "entries": 0}, name
        assert runner[str(places[name] / "config")]["exists"] is False, name
    assert runner[str(places["tools_git"].parents[3] / "tool.txt")]["exists"] is True
    bases = {sys.prefix, sys.base_prefix}
    expected = 3 + sum(_git_dirs(p) for p in bases)
    assert attacked["report"]["sandbox"]["masked"] == expected
    assert str(places["tools_git"]) not in attacked["proc"].stdout


@pytest.mark.parametrize("role", ["setup", "runner", "command"])
def test_only_the_with_arm_sees_the_tested_skill(attacked: dict[str, Any], role: str) -> None:
    skill, baseline = attacked["skill"], attacked["baseline"]
    for arm in ("with", "without", "baseline"):
        found = attacked["findings"][("c0", arm, role)]
        md = found["targets"][str(skill / "SKILL.md")]
        if arm == "with":
            assert md["sha256"] == attacked["skill_sha"], role
            continue
        assert md["exists"] is False, (arm, role)
        if role == "runner":  # an empty directory stands at its path, named or not
            assert found["targets"][str(skill)] == {"exists": True, "entries": 0}, arm
            assert found["args"][1] == {"exists": True, "entries": 0}, arm
    runner = attacked["findings"][("c0", "baseline", "runner")]["targets"]
    assert runner[str(baseline / "SKILL.md")]["exists"] is True
    without = attacked["findings"][("c0", "without", "runner")]
    assert _sha(str(skill).encode()) in without["hashes"]  # EVALGATE_SKILL_DIR as documented


def test_a_w_script_with_an_outside_interpreter_cannot_start(attacked: dict[str, Any]) -> None:
    results = {r["id"]: r for r in attacked["report"]["caseResults"]}
    assert results["interp"]["with"] == [False], results["interp"]["failedCheck"]
    assert results["c0"]["with"] == results["c0"]["without"] == [True]
    failed = results["outside"]["failedCheck"]
    assert results["outside"]["with"] == [False]
    assert "cannot start" in failed["reason"] and "--sandbox-path" in failed["reason"], failed


def test_a_venv_from_pyenv_python_runs_inside(attacked: dict[str, Any]) -> None:
    if sys.base_prefix.startswith(("/usr", "/opt")) or sys.prefix == sys.base_prefix:
        pytest.skip("this Python is not a venv over a non-system interpreter")
    # The runner's interpreter is this venv's python: it ran in every arm.
    assert all(("c1", arm, "runner") in attacked["findings"] for arm in ("with", "without"))


def test_a_kept_workspace_keeps_no_outward_symlink(attacked: dict[str, Any]) -> None:
    kept = attacked["kept"] / "c0" / "1" / "with"
    leak = kept / "leak"
    assert not leak.is_symlink() and leak.is_file()
    assert leak.read_text() == f"symlink to {attacked['places']['id_rsa']} removed\n"
    assert (kept / "inner").is_symlink()
    assert os.readlink(kept / "inner") == "probe-setup.json"
