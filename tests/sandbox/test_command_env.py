"""What a case's setup and verifier commands get of the job's environment, sandboxed: no
variable whose name says it holds a credential (the job may map any secret into its
environment). Real CLI, real bubblewrap; the verifier reports only which names it saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skill_evals.sandbox.child_env import credential_like
from tests.conftest import write_jsonl, write_skill
from tests.sandbox.test_network import needs_bwrap

SECRETS = {
    "OPENAI_APIKEY": "a", "SMTP_PASS": "b", "NPM_AUTH": "c", "GH_PAT": "d", "SENTRY_DSN": "e",
    "SLACK_WEBHOOK_URL": "f", "DB_PASSWD": "g", "SIGNING_PRIVATE_KEY_B64": "h",
    "DEPLOY_KEYS": "i", "MY_TOKEN": "j", "X_API_KEY": "k",
}  # fmt: skip
KEPT = {"GIT_AUTHOR_NAME": "a", "SSH_AUTH_SOCK_DIR": "x", "KEYBOARD": "us", "PATHWAY": "p"}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_credential_names_are_recognised(name: str) -> None:
    assert credential_like(name) and credential_like(name.lower())


@pytest.mark.parametrize("name", sorted(KEPT))
def test_ordinary_names_are_not(name: str) -> None:
    assert not credential_like(name)


@needs_bwrap
def test_setup_and_verifier_commands_never_see_them(tmp_path: Path) -> None:
    names = sorted(SECRETS) + sorted(KEPT)
    probe = (
        "import json, os, sys; names = json.loads(sys.argv[1]); "
        "seen = [n for n in names if n in os.environ]; "
        "open(sys.argv[2], 'w').write(json.dumps(seen))"
    )
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {"id": f"c{i}", "prompt": f"question {i}", "expectTrigger": False,
             "setup": [["python3", "-c", probe, json.dumps(names), "{workspace}/setup.json"]],
             "task": {"check": "command",
                      "run": ["python3", "-c", probe, json.dumps(names),
                              "{workspace}/command.json"]}}
            for i in range(10)
        ],
    )  # fmt: skip
    runner = tmp_path / "runner.py"
    runner.write_text(
        "import json, os, sys\nsys.stdin.read()\nprint(json.dumps({'variant': "
        "os.environ['EVALGATE_SKILL_VARIANT'], 'invokedSkills': [], 'output': 'ok', "
        "'exitCode': 0}))\n",
        "utf-8",
    )
    kept = tmp_path / "kept"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill",
              str(write_skill(tmp_path / "skills"))),
            *("--cases", str(cases), "--runner", f"{sys.executable} {runner}"),
            *("--trials", "1", "--sandbox", "required", "--sandbox-path", str(runner)),
            *("--keep-workspaces", str(kept), "--format", "json"),
        ],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, **SECRETS, **KEPT},
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    found = [json.loads(p.read_text()) for p in kept.rglob("*.json") if p.name in
             ("setup.json", "command.json")]  # fmt: skip
    assert len(found) >= 2
    for seen in found:
        assert seen == sorted(KEPT), seen
