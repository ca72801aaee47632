"""`ci` decides a built-in runner that cannot start for every chosen skill (and routing)
before the first one runs, naming where the command was given — the config's `runner:`, an
override, or --runner — not the option the user never typed. The real CLI; the counting
runner's log proves that nothing ran (unsandboxed: the log lies outside any sandbox)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

from .conftest import commit_all, make_repo, run_cli

COUNTING = REPO / "tests" / "runners" / "counting.sh"


def _ci(tmp_path: Path, config: str, *args: str) -> tuple[int, str, Path]:
    repo = make_repo(tmp_path / "repo", skills=("alpha", "beta"), config=config)
    log, out = tmp_path / "invocations.log", tmp_path / "out"
    env = {"COUNTING_LOG": str(log), "SKILL_EVALS_SANDBOX": "off"}
    env.update({k: "" for k in ("COPILOT_PROVIDER_BASE_URL", "COPILOT_MODEL")})
    done = run_cli(["ci", "--all", "--out", str(out), *args], repo, env)
    assert not log.exists(), "a runner started"
    return done.returncode, done.stderr, out


@pytest.mark.parametrize(
    ("config", "args", "code", "said"),
    [
        # alpha (first) has a working runner; beta's override cannot start: nothing runs
        (f"runner: {COUNTING}\ntrials: 1\noverrides:\n  beta:\n"
         "    runner: skill-evals runner qwen --bin /nonexistent/qwen\n", (), 7,
         "skill beta: overrides.beta.runner in .skill-evals.yml: the qwen CLI "
         "'/nonexistent/qwen' is missing or not executable"),
        ("runner: skill-evals runner opencode\ntrials: 1\n", (), 5,
         "skill alpha: runner in .skill-evals.yml: skill-evals runner opencode needs --model"),
        ("runner: skill-evals runner simulated\ntrials: 1\n",
         ("--runner", "skill-evals runner copilot --model m"), 7,
         "skill alpha: --runner: skill-evals runner copilot needs COPILOT_PROVIDER_BASE_URL"),
    ],
)  # fmt: skip
def test_a_runner_that_cannot_start_stops_ci_before_any_skill_runs(
    tmp_path: Path, config: str, args: tuple[str, ...], code: int, said: str
) -> None:
    returncode, stderr, out = _ci(tmp_path, config, *args)
    assert returncode == code, stderr
    assert said in stderr
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert said in " ".join(report["messages"])


def test_routing_with_a_runner_that_cannot_start_is_refused_first(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", skills=("alpha", "beta"), config=None)
    cases = [
        {"id": f"r{i}", "prompt": f"alpha question {i}", "expect": ["alpha"]} for i in range(10)
    ]
    (repo / "routing.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (repo / ".skill-evals.yml").write_text(
        "runner: skill-evals runner gemini --bin /nonexistent/gemini\ntrials: 1\n"
        "routing: {cases: routing.jsonl}\n"
    )
    done = run_cli(["ci", "--only", "routing", "--out", str(tmp_path / "out")], repo)
    assert done.returncode == 7, done.stderr
    assert "routing: runner in .skill-evals.yml: the gemini CLI" in done.stderr


@pytest.mark.parametrize("named", [False, True])
def test_a_judge_without_its_key_stops_ci_before_any_skill_runs(
    tmp_path: Path, named: bool
) -> None:
    """beta (second) judges its answers with the built-in Anthropic judge and no key is set:
    ci stops before alpha runs, naming the skill and where the judge was given."""
    judge = (
        "judges:\n  notes: skill-evals judge anthropic\n"
        if named
        else "judge: skill-evals judge anthropic\n"
    )
    repo = make_repo(tmp_path / "repo", skills=("alpha", "beta"),
                     config=f"runner: {COUNTING}\ntrials: 1\n{judge}")  # fmt: skip
    cases = repo / "skills" / "beta" / "evals" / "cases.jsonl"
    rows = [json.loads(line) for line in cases.read_text().splitlines()]
    task = {"check": "judge", "rubric": "Good notes."}
    rows[0]["task"] = {**task, "judge": "notes"} if named else task
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    commit_all(repo, "judged")
    log, out = tmp_path / "invocations.log", tmp_path / "out"
    env = {"COUNTING_LOG": str(log), "SKILL_EVALS_SANDBOX": "off", "ANTHROPIC_API_KEY": ""}
    done = run_cli(["ci", "--all", "--out", str(out)], repo, env)
    assert not log.exists(), "a runner started"
    assert done.returncode == 7, done.stderr
    where = "judges.notes in .skill-evals.yml" if named else "judge in .skill-evals.yml"
    assert f"skill beta: {where}: skill-evals judge anthropic needs ANTHROPIC_API_KEY" in (
        done.stderr
    )


def test_a_judged_skills_case_file_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judge pre-check loads beta's case file and hands it to beta's run: ci reads each
    case file once (alpha, without a judge check, is read by its run only)."""
    from click.testing import CliRunner

    import skill_evals.suite.cases as cases_module
    from skill_evals.cli.main import cli

    log = tmp_path / "judge.log"
    judge = f"{sys.executable} {REPO / 'tests' / 'runners' / 'judge.py'} --log={log}"
    config = f"runner: skill-evals runner simulated\ntrials: 1\njudge: {judge}\n"
    repo = make_repo(tmp_path / "repo", skills=("alpha", "beta"), config=config)
    cases = repo / "skills" / "beta" / "evals" / "cases.jsonl"
    rows = [json.loads(line) for line in cases.read_text().splitlines()]
    rows[0]["task"] = {"check": "judge", "rubric": "Good notes."}
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    commit_all(repo, "judged")
    reads: list[str] = []
    real = cases_module.read_regular_file

    def counted(path: Path, what: str) -> bytes:
        reads.append(Path(path).relative_to(repo).as_posix())
        return real(path, what)

    monkeypatch.setattr(cases_module, "read_regular_file", counted)
    monkeypatch.chdir(repo)
    monkeypatch.setenv("SKILL_EVALS_SANDBOX", "off")
    out = tmp_path / "out"
    done = CliRunner().invoke(cli, ["ci", "--all", "--out", str(out)])
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert [s["status"] for s in report["skills"]] == ["evaluated"] * 2, done.output
    assert log.exists()  # beta's judge check was judged
    assert sorted(reads) == ["skills/alpha/evals/cases.jsonl", "skills/beta/evals/cases.jsonl"]
