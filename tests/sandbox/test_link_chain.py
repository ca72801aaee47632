"""A runner started as ``env X=1 <venv>/bin/python script`` works sandboxed: the venv's
``python`` is a chain of links (``python`` -> ``python3`` -> the base interpreter outside the
system directories), and every link of the chain stands in the sandbox, not only the first.
Needs bubblewrap (the sandboxed case) and a venv over a non-system Python (this test suite's
own, as the README makes it); the unsandboxed case runs everywhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skill_evals.sandbox.binds import link_chain
from tests.conftest import write_jsonl, write_skill

VENV_PYTHON = os.path.join(sys.prefix, "bin", "python")
_RUNNER = """import json, os, sys
sys.stdin.read()
print(json.dumps({"variant": os.environ["EVALGATE_SKILL_VARIANT"], "invokedSkills": [],
                  "output": "answer", "exitCode": 0}))
"""


def test_link_chain_follows_every_link(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("")
    (tmp_path / "b").symlink_to("real")
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    assert link_chain(str(tmp_path / "a")) == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert link_chain(str(tmp_path / "real")) == []
    assert link_chain(str(tmp_path / "loop1")) == [str(tmp_path / "loop1"), str(tmp_path / "loop2")]


def _run(tmp_path: Path, sandbox: str) -> dict[str, Any]:
    skill = write_skill(tmp_path / "skills")
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {
                "id": f"c{i}",
                "prompt": f"question {i} about topic {chr(97 + i)}",
                "expectTrigger": False,
            }
            for i in range(10)
        ],
    )
    script = tmp_path / "runner.py"
    script.write_text(_RUNNER)
    runner = f"env X=1 {VENV_PYTHON} {script}"
    env = {k: v for k, v in os.environ.items() if k != "SKILL_EVALS_SANDBOX"}
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(cases), "--runner", runner, "--trials", "1", "-q"),
            *("--sandbox", sandbox, "--format", "json"),
        ],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


@pytest.mark.parametrize("sandbox", ["required", "off"])
def test_a_venv_python_behind_env_runs(tmp_path: Path, sandbox: str) -> None:
    chain = link_chain(VENV_PYTHON)
    if len(chain) < 2 or os.path.realpath(VENV_PYTHON).startswith(("/usr/", "/bin/")):
        pytest.skip("this venv's python is not a chain of links to a non-system interpreter")
    if sandbox == "required" and (shutil.which("bwrap") is None or sys.platform != "linux"):
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    report = _run(tmp_path, sandbox)
    assert report["runner"]["failures"] == [], report["messages"]
    assert report["exitCode"] == 0
    assert report["sandbox"]["mode"] == ("bwrap" if sandbox == "required" else "off")
