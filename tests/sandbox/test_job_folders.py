"""A self-hosted runner installed in a system directory (under ``/opt``): its checkout (the job
token in ``.git/config``), its ``RUNNER_TEMP`` and its own credentials (``.credentials``,
``.runner``) are as unseen from every sandbox as under a home directory. Real CLI, real
bubblewrap; the same runner tree once under ``/opt`` and once under a temporary directory,
with a runner script at the checkout's root started by its own path: the probe sees the
same in both (its own script, nothing else of the job). A ``--sandbox-path`` naming the
runner's root binds it with its credential files empty and its ``.git`` directories masked.
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skill_evals.sandbox.job_folders import JobFolders
from tests.conftest import write_jsonl, write_skill
from tests.sandbox.test_network import needs_bwrap

PROBE = Path(__file__).resolve().parents[1] / "runners" / "sandbox_probe.py"
# Where a runner is installed as root would (skipped when /opt is not writable here).
SYSTEM_PARENT = Path("/opt")
# Each place's path below the runner's root; what the probe is asked about.
PLACES = {
    "credentials": ".credentials",
    "runner_file": ".runner",
    "temp_marker": "_work/_temp/marker.txt",
    "git_config": "_work/repo/repo/.git/config",
    "sibling": "_work/repo/repo/secret_sibling.txt",
    "tools_git_config": "_work/repo/repo/tools/.git/config",
    "tool": "_work/repo/repo/tools/tool.txt",
    "script": "_work/repo/repo/probe_runner.py",
    "cached_tool": "_work/_tool/node/bin/tool.txt",  # RUNNER_TOOL_CACHE: programs, no secret
    "root": ".",
    "temp": "_work/_temp",
}
SECRET_PLACES = ("credentials", "runner_file", "temp_marker", "git_config", "sibling")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _runner_tree(root: Path, secret: str) -> Path:
    """A runner's root with its credentials, a temporary file and a checkout whose
    ``.git/config`` holds the secret; the checkout."""
    checkout = root / "_work" / "repo" / "repo"
    for name in SECRET_PLACES:
        path = root / PLACES[name]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"[http]\n\textraheader = {secret}\n" if name == "git_config" else secret)
    (checkout / "tools" / ".git").mkdir(parents=True)
    (root / PLACES["tools_git_config"]).write_text(secret)
    (root / PLACES["tool"]).write_text("a tool")
    (root / PLACES["cached_tool"]).parent.mkdir(parents=True)
    (root / PLACES["cached_tool"]).write_text("a cached tool")
    script = root / PLACES["script"]
    script.write_text(f"#!{sys.executable}\n" + PROBE.read_text())
    script.chmod(0o755)
    write_skill(checkout / "skills")
    return checkout


def _run(root: Path, secret: str, *extra: str) -> dict[str, Any]:
    """One sandboxed run from the checkout with the job's variables set: the report and
    what each role's probe found, with every target keyed by its place."""
    checkout = _runner_tree(root, secret)
    skill = next((checkout / "skills").iterdir())
    probe = [sys.executable, str(PROBE)]
    cases = write_jsonl(
        checkout.parent / "cases.jsonl",
        [{"id": "c0", "prompt": "q", "expectTrigger": False, "setup": [[*probe, "setup"]],
          "task": {"check": "command", "run": [*probe, "command"]}},
         *({"id": f"p{i}", "prompt": f"plain {i}", "expectTrigger": False} for i in range(9))],
    )  # fmt: skip
    targets = {str(root / rel): name for name, rel in PLACES.items()}
    kept = root.parent / f"kept-{root.parent.name}"
    temp = root / "_work" / "_temp"
    env = dict(
        os.environ,
        HOME=str(root.parent / "home"),
        GITHUB_WORKSPACE=str(checkout),
        RUNNER_WORKSPACE=str(checkout.parent),
        RUNNER_TEMP=str(temp),
        RUNNER_TOOL_CACHE=str(root / "_work" / "_tool"),
        TMPDIR=str(temp),  # the workspaces too lie in the hidden folder
        PROBE_TARGETS=json.dumps(list(targets)),
    )
    env.pop("SKILL_EVALS_SANDBOX", None)
    runner = f"{checkout / 'probe_runner.py'} runner {checkout / 'tools'}"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(cases), "--runner", runner, "--trials", "1", "-q"),
            *("--jobs", "2"),
            *("--sandbox", "required", "--keep-workspaces", str(kept), "--format", "json"),
            *("--sandbox-path", sys.prefix, "--sandbox-path", str(PROBE), *extra),
        ],
        capture_output=True, text=True, timeout=300, env=env, cwd=checkout,
    )  # fmt: skip
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for path in kept.rglob("probe-*.json"):
        data = json.loads(path.read_text())
        data["targets"] = {targets[p]: entry for p, entry in data["targets"].items()}
        found[(path.parent.parent.parent.name, path.parent.name, data["role"])] = data
    return {"proc": proc, "report": json.loads(proc.stdout or "{}"), "found": found}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The same runner tree under /opt, under a temporary directory, and under /opt with
    its root named by ``--sandbox-path``."""
    if not os.access(SYSTEM_PARENT, os.W_OK):
        pytest.skip(f"{SYSTEM_PARENT} is not writable here")
    secret = secrets.token_hex(24)
    system = Path(tempfile.mkdtemp(prefix="skill-evals-job-", dir=SYSTEM_PARENT))
    try:
        named = system / "named" / "actions-runner"
        yield {
            "secret": _sha(secret.encode()),
            "opt": _run(system / "plain" / "actions-runner", secret),
            "home": _run(tmp_path_factory.mktemp("home") / "actions-runner", secret),
            "named": _run(named, secret, "--sandbox-path", str(named)),
        }
    finally:
        shutil.rmtree(system)


@needs_bwrap
@pytest.mark.parametrize("where", ["opt", "home", "named"])
def test_the_runs_complete_sandboxed(runs: dict[str, Any], where: str) -> None:
    run = runs[where]
    assert run["report"].get("exitCode") == 0, run["proc"].stderr
    assert run["report"]["sandbox"]["mode"] == "bwrap"
    for arm in ("with", "without"):
        for role in ("setup", "runner", "command"):
            assert ("c0", arm, role) in run["found"], (arm, role)
    assert len(run["found"]) == 2 * (3 + 9)


@needs_bwrap
def test_no_job_secret_is_read_under_opt(runs: dict[str, Any]) -> None:
    assert len(runs["opt"]["found"]) == 2 * (3 + 9), runs["opt"]["proc"].stderr
    for key, found in runs["opt"]["found"].items():
        assert runs["secret"] not in found["hashes"], key
        for name, entry in found["targets"].items():
            assert entry.get("sha256") != runs["secret"], (key, name)
        for name in (*SECRET_PLACES, "tools_git_config"):
            assert found["targets"][name]["exists"] is False, (key, name)


@needs_bwrap
def test_under_opt_the_probe_sees_what_it_sees_under_a_home(runs: dict[str, Any]) -> None:
    """Its own script and the tools it names (their .git empty), nothing else of the job."""
    opt, home = runs["opt"]["found"], runs["home"]["found"]
    assert opt.keys() == home.keys()
    for key in opt:
        # The tool cache alone differs: under /opt it is shared like the system directory it
        # lies in (setup-python's and setup-node's programs, no secret), under a home not.
        assert opt[key]["targets"].pop("cached_tool")["exists"] is True, key
        assert home[key]["targets"].pop("cached_tool")["exists"] is False, key
        assert opt[key]["targets"] == home[key]["targets"], key
        seen = {name for name, entry in opt[key]["targets"].items() if entry["exists"]}
        if key[2] == "runner":
            assert {"script", "tool", "root", "temp"} <= seen, key
            assert opt[key]["targets"]["root"]["entries"] == 1  # only the way to _work
        assert not seen & {*SECRET_PLACES, "tools_git_config"}, key


@needs_bwrap
def test_a_named_runner_root_keeps_its_credentials_empty(runs: dict[str, Any]) -> None:
    for key, found in runs["named"]["found"].items():
        targets = found["targets"]
        assert targets["sibling"]["exists"] is True, key  # the named root is bound
        for name in ("git_config", "tools_git_config"):
            assert targets[name]["exists"] is False, (key, name)
        for name in ("credentials", "runner_file"):
            assert targets[name] == {"exists": True}, (key, name)  # an empty device stands there


def test_the_job_folders_come_from_the_job_s_variables(tmp_path: Path) -> None:
    """The runner's root is the folder holding ``_work`` (from GITHUB_WORKSPACE, and from
    RUNNER_WORKSPACE's parent); a relative value, a system directory itself and ``/`` are
    never hidden; nothing outside the system directories needs hiding."""
    root = "/usr/local/actions-runner"
    jobs = JobFolders.of({"GITHUB_WORKSPACE": f"{root}/_work/r/r", "RUNNER_TEMP": "tmp"})
    assert jobs.inside == (root,)
    assert jobs.shared("/usr/local/bin") and not jobs.shared(f"{root}/_work/r/r/x")
    jobs = JobFolders.of({"RUNNER_WORKSPACE": "/srv/x/_work/r", "RUNNER_TOOL_CACHE": "/opt"})
    assert jobs.inside == ()  # /srv is no system directory; /opt is one itself
    # GitHub's hosted runners: the tool cache is in /opt, the job's folders in /home.
    jobs = JobFolders.of({"GITHUB_WORKSPACE": "/home/runner/work/r/r",
                          "RUNNER_TOOL_CACHE": "/opt/hostedtoolcache"})  # fmt: skip
    assert jobs.inside == () and jobs.shared("/opt/hostedtoolcache/Python/3.12/x64/bin/python3")
    jobs = JobFolders.of({"RUNNER_WORKSPACE": "/opt/ar/_work/r", "GITHUB_WORKSPACE": "/_work/r"})
    assert jobs.inside == ("/opt/ar",)
    (tmp_path / "_work").mkdir()
    (tmp_path / ".credentials").write_text("x")
    jobs = JobFolders.of({"GITHUB_WORKSPACE": str(tmp_path / "_work" / "r" / "r")})
    assert jobs.inside == () and jobs.secrets == (str(tmp_path / ".credentials"),)
    assert jobs.secrets_below([str(tmp_path)]) == list(jobs.secrets)
    assert jobs.secret(str(tmp_path / ".credentials")) and not jobs.secret(str(tmp_path))
