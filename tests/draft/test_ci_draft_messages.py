"""`draft: suggest` in `ci` when drafting fails: what report.json, summary.md and stderr say
names the drafted file as the report does (``drafts/<skill>.jsonl``, never the machine's --out
path) and the drafter as the config key it came from (never a --drafter the run was not
given)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ci.conftest import commit_all, run_cli
from tests.ci.test_ci_draft import BASE, _repo

SHORT = (
    "import json, sys\njson.load(sys.stdin)\n"
    "print(json.dumps({'cases': [{'bucket': 'unrelated', 'expectTrigger': False,"
    " 'prompt': 'What is the capital of Peru?'}]}))\n"
)


def _ci(tmp: Path, drafter: str) -> tuple[str, str]:
    repo = _repo(tmp, BASE + f"draft: suggest\ndrafter: {json.dumps(drafter)}\n")
    (repo / "drafters" / "short.py").write_text(SHORT, "utf-8")
    commit_all(repo, "a drafter")
    out = tmp / "out"
    done = run_cli(["ci", "--all", "--out", str(out)], repo)
    assert done.returncode == 1, done.stderr
    report = json.loads((out / "report.json").read_text("utf-8"))
    skill = next(s for s in report["skills"] if s["name"] == "refund-policy")
    assert skill["draft"]["path"] is None
    summary = (out / "summary.md").read_text("utf-8")
    said = [line for line in done.stderr.splitlines() if "drafted suite" in line]
    for text in [skill["draft"]["reason"], summary, *said]:
        assert str(tmp) not in text  # no machine path
    return skill["draft"]["reason"], done.stderr


@pytest.mark.parametrize(
    ("drafter", "wanted"),
    [
        ("python3 drafters/short.py", "drafts/refund-policy.jsonl: only 1 independent case(s)"),
        ("python3 'drafters", "drafter in .skill-evals.yml: cannot split the command"),
        ("no-such-drafter --x", "drafter in .skill-evals.yml: the program 'no-such-drafter'"),
    ],
    ids=["too-few", "unsplittable", "missing"],
)
def test_a_failed_draft_names_the_file_and_the_config_key(
    tmp_path: Path, drafter: str, wanted: str
) -> None:
    reason, stderr = _ci(tmp_path, drafter)
    assert reason.startswith(wanted) and wanted in stderr
    assert "--drafter" not in reason
