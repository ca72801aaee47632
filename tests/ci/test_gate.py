"""`skill-evals ci` end to end with the simulated runner: change detection, statuses, exit
codes, every output file, GitHub outputs/summary/annotations, plan/--only/merge."""

from __future__ import annotations

import copy
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import cmarkgfm
import junitparser
from cmarkgfm.cmark import Options

from skill_evals.ci.schema import validate_ci_report
from skill_evals.ci.summary import MARKER
from tests.conftest import write_skill

from .conftest import SIMULATED, gh_env, git, make_repo, run_cli


def read_outputs(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        values[key] = value
    return values


def test_only_the_edited_skill_is_evaluated(passing_run: dict[str, Any]) -> None:
    done, out = passing_run["done"], passing_run["out"]
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    validate_ci_report(report)
    statuses = {s["name"]: s["status"] for s in report["skills"]}
    assert statuses == {"alpha": "unchanged", "beta": "unchanged", "refund-policy": "evaluated"}
    refund = next(s for s in report["skills"] if s["name"] == "refund-policy")
    assert refund["report"]["status"] == "pass" and refund["exitCode"] == 0
    assert refund["cases"] == "skills/refund-policy/evals/cases.jsonl"
    assert report["base"]["mode"] == "git" and report["base"]["sha"] == passing_run["base"]
    assert report["status"] == "pass" and report["changedSkills"] == ["refund-policy"]
    assert report["simulated"] is True
    # observations recorded, one line per case × trial × variant: every case has a task check,
    # so ci's --arms auto runs without for each of them (no spot-check)
    lines = (out / "observations" / "refund-policy.jsonl").read_text("utf-8").splitlines()
    assert len(lines) == 14 * 2
    assert refund["report"]["arms"] == {
        "names": ["with", "without"],
        "auto": True,
        "spotCheck": None,
    }
    # progress lines and folding
    assert "[28/28] refund-policy" in done.stderr
    assert "::group::skill-evals refund-policy" in done.stderr and "::endgroup::" in done.stderr


def test_github_outputs_and_step_summary(passing_run: dict[str, Any]) -> None:
    tmp, out = passing_run["tmp"], passing_run["out"]
    outputs = read_outputs(tmp / "output.txt")
    assert outputs == {
        "exit-code": "0",
        "status": "pass",
        "changed-skills": '["refund-policy"]',
        "report-dir": str(out),
        "junit": str(out / "junit.xml"),
        "sandboxed": "true",  # bubblewrap works on the project's CI machines
    }
    summary = (tmp / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("# earlier step\n")  # appended, not replaced
    assert summary.endswith((out / "summary.md").read_text(encoding="utf-8"))
    text = (out / "summary.md").read_text(encoding="utf-8")
    assert "| Skill | Status | Trigger F1 | Uplift [95% CI] | p-value | Runs |" in text
    assert "| refund-policy | ✅ pass | 0.94 |" in text
    # the pass-rate chart: a table of Unicode bars
    assert "| Skill | With the skill | Without |" in text
    assert "| refund-policy | `████" in text
    assert "Simulated runner" in text
    comment = (out / "comment.md").read_text(encoding="utf-8")
    assert comment.startswith(MARKER + "\n") and len(comment) <= 65_000
    assert "2 unchanged skill(s) not evaluated." in comment


def test_junit_read_back_with_junitparser(passing_run: dict[str, Any]) -> None:
    xml = junitparser.JUnitXml.fromfile(str(passing_run["out"] / "junit.xml"))
    suites = list(xml)
    assert [s.name for s in suites] == ["refund-policy"]  # unchanged skills are not tested
    names = [case.name for case in suites[0]]
    assert "trigger[refund-eligible]" in names and "uplift" in names
    assert all(case.time is not None for case in suites[0])


def test_failing_gate_exit_1_with_annotations(failing_run: dict[str, Any]) -> None:
    done, out, tmp = failing_run["done"], failing_run["out"], failing_run["tmp"]
    assert done.returncode == 1, done.stderr
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    validate_ci_report(report)
    assert report["status"] == "fail" and report["base"]["mode"] == "only"
    assert [s["name"] for s in report["skills"]] == ["refund-policy"]
    line = next(
        c["line"]
        for c in report["skills"][0]["report"]["caseResults"]
        if c["id"] == "near-miss-refund-code"
    )
    expected = (
        f"::error file=skills/refund-policy/evals/cases.jsonl,line={line},title=skill-evals::"
        "refund-policy: case near-miss-refund-code: the skill triggered but should not"
    )
    assert expected in done.stdout.splitlines()
    assert read_outputs(tmp / "output.txt")["exit-code"] == "1"
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "### refund-policy: what failed" in summary
    failed_section = summary.split("### refund-policy: what failed", 1)[1]
    gate_line = next(line for line in failed_section.splitlines() if "trigger F1" in line)
    assert "0.99" in gate_line and "ate failed" in gate_line  # said once, with the threshold
    assert failed_section.lower().count("gate failed") == 1
    assert "False triggers: near-miss-refund-code" in summary
    xml = junitparser.JUnitXml.fromfile(str(out / "junit.xml"))
    assert xml.failures >= 1


def test_missing_secrets_skip_or_fail(tmp_path: Path) -> None:
    # (a real agent needs its key; the simulation would need none and be evaluated)
    config = "runner: skill-evals runner claude-code\ntrials: 1\n"
    repo = make_repo(tmp_path / "repo", config=config + "require-env: [SKILL_EVALS_SECRET_X]\n")
    out = tmp_path / "out"
    skip = "--skip-on-missing-secrets"  # (the default outside a fork's pull request: exit 7)
    done = run_cli(["ci", "--all", skip, "--out", str(out)], repo, gh_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (
        "::warning::alpha: skipped, required environment variable(s) empty or unset: "
        "SKILL_EVALS_SECRET_X" in done.stdout
    )
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    validate_ci_report(report)
    assert {s["status"] for s in report["skills"]} == {"skipped"}
    assert report["status"] == "skipped"
    assert not (out / "observations").exists()  # no runner ran
    junit = junitparser.JUnitXml.fromfile(str(out / "junit.xml"))
    assert junit.skipped == 3
    done = run_cli(["ci", "--all", "--fail-on-missing-secrets", "--out", str(out)], repo)
    assert done.returncode == 7
    assert json.loads((out / "report.json").read_text("utf-8"))["status"] == "unavailable"
    done = run_cli(["ci", "--all", "--out", str(out)], repo, {"SKILL_EVALS_SECRET_X": ""})
    assert done.returncode == 7 and "empty or unset" in done.stderr


def test_no_skill_exits_0_with_a_message(tmp_path: Path) -> None:
    done = run_cli(["ci", "--out", str(tmp_path / "out")], tmp_path)
    assert done.returncode == 0
    assert "no skill found in the repository" in done.stderr
    repo = make_repo(tmp_path / "repo")
    done = run_cli(["ci", "--base", "HEAD", "--out", str(tmp_path / "out2")], repo)
    assert done.returncode == 0 and "nothing changed" in done.stderr
    report = json.loads((tmp_path / "out2" / "report.json").read_text("utf-8"))
    assert {s["status"] for s in report["skills"]} == {"unchanged"}


def test_no_cases_fails_unless_allowed(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "lonely")
    (tmp_path / ".skill-evals.yml").write_text(SIMULATED, encoding="utf-8")
    done = run_cli(["ci", "--out", str(tmp_path / "out")], tmp_path)
    assert done.returncode == 1
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    validate_ci_report(report)
    assert report["skills"][0]["status"] == "no-cases"
    junit = junitparser.JUnitXml.fromfile(str(tmp_path / "out" / "junit.xml"))
    assert junit.failures == 1
    (tmp_path / ".skill-evals.yml").write_text(SIMULATED + "allow-missing-cases: true\n", "utf-8")
    done = run_cli(["ci", "--out", str(tmp_path / "out")], tmp_path)
    assert done.returncode == 0, done.stderr


def test_repository_level_errors_exit_5_and_still_write_a_report(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", config="trials: 0\n")
    done = run_cli(["ci", "--out", str(tmp_path / "out")], repo)
    assert done.returncode == 5
    assert "$.trials" in done.stderr
    assert "::error" not in done.stdout  # workflow commands only under GitHub Actions
    under_actions = run_cli(["ci", "--out", str(tmp_path / "o2")], repo, gh_env(tmp_path))
    assert under_actions.stdout.startswith("::error::") and "$.trials" in under_actions.stdout
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    validate_ci_report(report)
    assert report["status"] == "invalid" and report["skills"] == []
    # no runner configured
    (repo / ".skill-evals.yml").write_text("trials: 1\n", encoding="utf-8")
    done = run_cli(["ci", "--all", "--out", str(tmp_path / "out")], repo)
    assert done.returncode == 5 and "no runner configured" in done.stderr
    # --out inside a skill directory
    done = run_cli(["ci", "--all", "--out", "skills/alpha/out"], repo)
    assert done.returncode == 5 and "inside the skill directory skills/alpha" in done.stderr
    assert not (repo / "skills" / "alpha" / "out").exists()  # nothing written into the skill
    assert run_cli(["ci", "--all", "--base", "HEAD"], repo).returncode == 5
    assert run_cli(["ci", "--only", "nope", "--runner", "x"], repo).returncode == 5


def test_plan_prints_the_matrix(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "skills" / "beta" / "x.md").write_text("x", encoding="utf-8")
    env = gh_env(tmp_path)
    done = run_cli(["ci", "plan", "--base", base], repo, env)
    assert done.returncode == 0, done.stderr
    matrix = json.loads(done.stdout)
    assert matrix == {"include": [{"skill": "beta", "path": "skills/beta"}]}
    outputs = read_outputs(tmp_path / "output.txt")
    assert json.loads(outputs["matrix"]) == matrix and outputs["count"] == "1"
    done = run_cli(["ci", "plan", "--all"], repo)
    assert len(json.loads(done.stdout)["include"]) == 3


def test_merge_combines_shards(
    tmp_path: Path, passing_run: dict[str, Any], failing_run: dict[str, Any]
) -> None:
    shards = tmp_path / "shards"
    shutil.copytree(passing_run["out"], shards / "a")
    shutil.copytree(failing_run["out"], shards / "b")
    # make shard b's skill distinct so both show up
    report_b = json.loads((shards / "b" / "report.json").read_text("utf-8"))
    report_b["skills"][0]["path"] = "other/refund-policy-2"
    report_b["skills"][0]["name"] = "refund-policy-2"
    (shards / "b" / "report.json").write_text(json.dumps(report_b), encoding="utf-8")
    out = tmp_path / "merged"
    env = gh_env(tmp_path)
    done = run_cli(
        ["ci", "merge", str(shards / "a"), str(shards / "b"), "--out", str(out)], tmp_path, env
    )
    assert done.returncode == 1, done.stderr
    merged = json.loads((out / "report.json").read_text("utf-8"))
    validate_ci_report(merged)
    assert merged["base"] == {"mode": "merged", "shards": 2}
    names = [s["name"] for s in merged["skills"]]
    assert "refund-policy" in names and "refund-policy-2" in names
    assert (out / "observations" / "refund-policy.jsonl").is_file()
    junit = junitparser.JUnitXml.fromfile(str(out / "junit.xml"))
    assert {s.name for s in junit} == {"refund-policy", "refund-policy-2"}
    assert read_outputs(tmp_path / "output.txt")["exit-code"] == "1"
    assert (out / "comment.md").read_text("utf-8").startswith(MARKER)
    done = run_cli(["ci", "merge", str(tmp_path / "missing"), "--out", str(out)], tmp_path)
    assert done.returncode == 5 and "report.json" in done.stderr


HOSTILE_IDS = ["<script>alert(1)</script>", "a|b|c", "`tick` *bold* [x](http://e.x)", "@octocat"]


def hostile_report(passing_run: dict[str, Any]) -> dict[str, Any]:
    """The passing run's report with hostile case ids and skill name, and a failure."""
    report = json.loads((passing_run["out"] / "report.json").read_text("utf-8"))
    report = copy.deepcopy(report)
    skill = next(s for s in report["skills"] if s["status"] == "evaluated")
    skill["name"] = "<img src=x onerror=alert(2)>|`x`"
    inner = skill["report"]
    for case, hostile in zip(inner["caseResults"], HOSTILE_IDS, strict=False):
        case["id"] = hostile
    inner["trigger"]["missedTriggerCaseIds"] = HOSTILE_IDS[:2]
    inner["trigger"]["falseTriggerCaseIds"] = HOSTILE_IDS[2:]
    inner["messages"] = ["</details><script>alert(3)</script>"]
    skill["exitCode"] = 1
    report["status"], report["exitCode"] = "fail", 1
    return report


def test_hostile_strings_are_escaped_in_markdown(passing_run: dict[str, Any]) -> None:
    from skill_evals.ci.summary import render_comment, render_summary

    report = hostile_report(passing_run)
    comment = render_comment(report)
    html = cmarkgfm.github_flavored_markdown_to_html(comment, options=Options.CMARK_OPT_UNSAFE)
    assert "<img" not in html and "<script" not in html and "<a " not in html
    assert "@octocat" not in re.sub(r"<code>.*?</code>", "", html, flags=re.S)  # no mention
    # report text: code spans (its own `x` a span of its own, so no backtick is shown)
    assert "` <img src=x onerror=alert(2)>\\| ` ` x `" in comment
    for row in (r for r in comment.splitlines() if r.startswith("| ")):
        assert row.count(" | ") - row.count("\\|") <= 6
    for text in (render_summary(report),):
        ours = text
        for own in (MARKER, "<details>", "</details>", "<summary>", "</summary>"):
            ours = ours.replace(own, "")
        assert re.search(r"(?<!\\)<", ours) is None  # every < is escaped
        # the skill name, in the chart and in the comment's <summary> alike: Markdown-escaped
        assert "\\<img src=x onerror=alert\\(2\\)\\>" in text
        assert "\\<script\\>alert\\(1\\)\\</script\\>" in text
        assert "a\\|b\\|c" in text  # a pipe cannot open a table cell
        assert "` tick `" in text and "\\`" not in text and "\\[x\\]\\(` http://e.x `\\)" in text
        assert "@octocat" not in text  # no mention
        for row in (r for r in text.splitlines() if r.startswith("| ")):
            assert row.count(" | ") - row.count("\\|") <= 6


def test_summary_and_comment_limits(passing_run: dict[str, Any]) -> None:
    from skill_evals.ci.summary import render_comment, render_summary

    report = json.loads((passing_run["out"] / "report.json").read_text("utf-8"))
    evaluated = next(s for s in report["skills"] if s["status"] == "evaluated")
    many = []
    for i in range(1500):  # ~1.8 MB of summary uncut: over both limits
        skill = copy.deepcopy(evaluated)
        skill["name"] = f"skill-{i:04d}-" + "x" * 200
        skill["path"] = f"skills/{i}"
        skill["exitCode"] = 1
        skill["report"]["trigger"]["missedTriggerCaseIds"] = [f"case-{j}" for j in range(40)]
        many.append(skill)
    report["skills"] = many
    summary = render_summary(report)
    assert len(summary.encode("utf-8")) <= 1_000_000
    assert "Summary cut at 1,000,000 bytes" in summary
    comment = render_comment(report)
    assert len(comment) <= 65_000 and comment.startswith(MARKER)
    assert "cut to fit" in comment


def test_runners_never_see_the_ci_token(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", skills=("alpha",))
    seen = tmp_path / "seen.txt"
    runner = tmp_path / "runner.py"
    runner.write_text(
        "import json, os, sys\n"
        "sys.stdin.read()\n"
        f"open({str(seen)!r}, 'a').write(repr(os.environ.get('GITHUB_TOKEN')) + '\\n')\n"
        "print(json.dumps({'variant': os.environ['EVALGATE_SKILL_VARIANT'],"
        " 'invokedSkills': [], 'output': 'ok', 'exitCode': 0}))\n",
        encoding="utf-8",
    )
    done = run_cli(
        [
            "ci",
            "--all",
            "--runner",
            f"{sys.executable} {runner}",
            "--out",
            str(tmp_path / "o"),
            "--sandbox-path",
            f"{tmp_path}:rw",
        ],  # the runner's log lies outside its workspace
        repo,
        {"GITHUB_TOKEN": "ghs_secret_value_1234"},
    )
    assert done.returncode in (0, 1), done.stderr
    lines = seen.read_text(encoding="utf-8").splitlines()
    # 12 trigger-only cases with, and (--arms auto) an isolation spot-check of 3 without
    assert len(lines) == 12 + 3 and set(lines) == {"None"}


def test_a_multiline_skill_name_cannot_inject_workflow_commands(tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "evil"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: |\n  evil\n  ::add-mask::x\ndescription: d\n---\nbody\n", encoding="utf-8"
    )
    # → a warning naming it (a real agent's runner: the simulation requires no variable)
    # (validate: warn: the invalid name is a warning, and the skill reaches the skip)
    config = (
        "runner: skill-evals runner claude-code\nrequire-env: [SKILL_EVALS_UNSET_X]\n"
        "validate: warn\n"
    )
    (tmp_path / ".skill-evals.yml").write_text(config, encoding="utf-8")
    argv = ["ci", "--skip-on-missing-secrets", "--out", str(tmp_path / "out")]
    done = run_cli(argv, tmp_path, gh_env(tmp_path))
    assert done.returncode == 0 and "evil\\u000a::add-mask::x: skipped" in done.stderr
    for line in (done.stdout + done.stderr).splitlines():
        assert not line.startswith("::add-mask::"), line


def test_failed_gates_are_listed_when_the_engine_gave_no_message(
    failing_run: dict[str, Any],
) -> None:
    from skill_evals.ci.summary import failure_details

    report = json.loads((failing_run["out"] / "report.json").read_text("utf-8"))
    skill = report["skills"][0]
    skill["report"]["messages"] = []
    assert "- Gate failed: trigger F1 0.94 < 0.99" in failure_details(skill)
    skill["exitCode"] = 0
    assert failure_details(skill) == []  # a passing skill has nothing to explain


def test_summary_cut_inside_a_code_block_stays_within_the_limit() -> None:
    from skill_evals.ci.summary import cut_bytes

    # The cut lands on a line boundary inside an open ```text block: closing the block used to
    # add 4 bytes after the budget was spent (1,000,003 bytes for a 1,000,000 limit).
    for limit in (1000, 1_000_000):
        for shift in range(0, 12):
            text = "```text\n" + "a" * (limit - 140 + shift) + "\n" + "b\n" * limit
            cut = cut_bytes(text, limit)
            assert len(cut.encode("utf-8")) <= limit, (limit, shift)
            assert cut.count("```") % 2 == 0 and f"Summary cut at {limit:,} bytes" in cut


def test_invalid_cases_of_one_skill_exit_5_and_say_why(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with (repo / "skills" / "beta" / "evals" / "cases.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "bad", "prompt": "p", "expectTrigger": "yes"}) + "\n")
    out = tmp_path / "out"
    done = run_cli(["ci", "--all", "--out", str(out)], repo, gh_env(tmp_path))
    assert done.returncode == 5, done.stderr
    report = json.loads((out / "report.json").read_text("utf-8"))
    validate_ci_report(report)
    assert report["status"] == "invalid"
    codes = {s["name"]: s["exitCode"] for s in report["skills"]}
    assert codes == {"alpha": 0, "beta": 5, "gamma": 0}  # the others were still evaluated
    # the reason is in the log (it used to say only "beta: invalid (exit 5)") ...
    assert re.search(r"error: beta: \S*cases\.jsonl:13: field expectTrigger", done.stderr)
    # ... and annotated at the offending line of the cases file
    assert any(
        line.startswith("::error file=skills/beta/evals/cases.jsonl,line=13,title=skill-evals::")
        for line in done.stdout.splitlines()
    ), done.stdout
    assert read_outputs(tmp_path / "output.txt")["status"] == "invalid"


def test_a_failing_runner_makes_the_gate_unavailable_exit_7(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", skills=("alpha", "beta"))
    runner = tmp_path / "broken.py"
    runner.write_text("import sys\nsys.stdin.read()\nsys.exit(3)\n", encoding="utf-8")
    out = tmp_path / "out"
    done = run_cli(
        ["ci", "--all", "--runner", f"{sys.executable} {runner}", "--out", str(out)],
        repo,
        gh_env(tmp_path),
    )
    assert done.returncode == 7, done.stderr
    report = json.loads((out / "report.json").read_text("utf-8"))
    validate_ci_report(report)
    assert report["status"] == "unavailable" and report["simulated"] is False
    for skill in report["skills"]:
        assert skill["exitCode"] == 7 and skill["report"]["runner"]["failures"]
    assert "error: alpha: " in done.stderr and "runner failure" in done.stderr
    assert "::error file=skills/alpha/evals/cases.jsonl,line=1," in done.stdout
    junit = junitparser.JUnitXml.fromfile(str(out / "junit.xml"))
    assert junit.errors >= 2  # runner failures are <error>, not <failure>
    summary = (out / "summary.md").read_text("utf-8")
    assert "### alpha: what failed" in summary
    # Each distinct reason once, with its count, the first case and what to do.
    assert "- Runner failure ×" in summary and "(first: alpha-case-0 trial 1 " in summary
    assert "run it by hand" in summary


def test_merge_of_a_runner_failure_shard_and_a_gate_failure_shard_exits_7(
    tmp_path: Path,
) -> None:
    repo = make_repo(
        tmp_path / "repo",
        skills=("alpha", "beta"),
        config=SIMULATED + "gates: {min-trigger-f1: 0.99}\n",
    )
    broken = tmp_path / "broken.py"
    broken.write_text("import sys\nsys.stdin.read()\nsys.exit(3)\n", encoding="utf-8")
    shard_1 = run_cli(["ci", "--only", "alpha", "-q", "--out", str(tmp_path / "s1")], repo)
    assert shard_1.returncode == 1, shard_1.stderr
    shard_7 = run_cli(
        ["ci", "--only", "beta", "-q", "--runner", f"{sys.executable} {broken}", "--out",
         str(tmp_path / "s7")],
        repo,
    )  # fmt: skip
    assert shard_7.returncode == 7, shard_7.stderr
    out = tmp_path / "merged"
    env = gh_env(tmp_path)
    for order in ((tmp_path / "s1", tmp_path / "s7"), (tmp_path / "s7", tmp_path / "s1")):
        done = run_cli(["ci", "merge", *map(str, order), "--out", str(out)], tmp_path, env)
        assert done.returncode == 7, done.stderr  # 7 wins over 1 whatever the order
        merged = json.loads((out / "report.json").read_text("utf-8"))
        validate_ci_report(merged)
        assert merged["status"] == "unavailable" and merged["exitCode"] == 7
        assert {s["name"]: s["exitCode"] for s in merged["skills"]} == {"alpha": 1, "beta": 7}
    junit = junitparser.JUnitXml.fromfile(str(out / "junit.xml"))
    suites = {s.name: s for s in junit}
    assert set(suites) == {"alpha", "beta"}
    assert suites["alpha"].failures >= 1 and suites["beta"].errors >= 1
    summary = (out / "summary.md").read_text("utf-8")
    assert "### alpha: what failed" in summary and "### beta: what failed" in summary
    comment = (out / "comment.md").read_text("utf-8")
    assert comment.startswith(MARKER) and "alpha: what failed" in comment
    assert "beta: what failed" in comment
    assert read_outputs(tmp_path / "output.txt")["exit-code"] == "7"
    assert sorted(p.name for p in (out / "observations").iterdir()) == [
        "alpha.jsonl",
        "beta.jsonl",
    ]


def test_merge_refuses_a_shard_report_that_is_not_schema_valid(
    tmp_path: Path, failing_run: dict[str, Any]
) -> None:
    # A shard dir comes back through an artifact from a job where an agent ran the PR's skill;
    # a value of the wrong type used to be rendered raw into the merged comment.
    shard = tmp_path / "shard"
    shutil.copytree(failing_run["out"], shard)
    report = json.loads((shard / "report.json").read_text("utf-8"))
    inner = report["skills"][0]["report"]
    inner["loading"]["violations"] = [
        {"caseId": "c", "trial": "<img src=//e.x/p>", "variant": "with", "missing": [],
         "forbidden": ["x"]}
    ]  # fmt: skip
    (shard / "report.json").write_text(json.dumps(report), encoding="utf-8")
    out = tmp_path / "merged"
    done = run_cli(["ci", "merge", str(shard), "--out", str(out)], tmp_path)
    assert done.returncode == 5, done.stderr
    assert "not a valid skill-evals ci report: $.skills[0].report.loading" in done.stderr
    assert not (out / "comment.md").exists()
