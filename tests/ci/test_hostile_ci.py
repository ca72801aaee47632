"""Hostile repository content and artifacts against the CI gate: paths and names that try to
forge lines or workflow commands, control characters on the way to annotations, Markdown and
HTML, colliding observation files, poisoned shard reports, and git that hangs or floods."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import time
from pathlib import Path
from typing import Any

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from skill_evals.ci import git as ci_git
from skill_evals.ci.skill_runs import safe_file_name
from skill_evals.ci.summary import MARKER, render_comment, render_summary
from skill_evals.ci.workflow import annotation, workflow_escape
from skill_evals.report.html import render_html
from tests.conftest import write_skill

from .conftest import SIMULATED, cases_for, commit_all, gh_env, make_repo, run_cli

CONTROLS = "\x00\x01\x07\x08\x1b\x7f\x85\x9b"
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
FORGERY = "::error::forged"


def _add_skill(repo: Path, rel: str, name: str | None = None) -> Path:
    skill = repo / rel
    skill.mkdir(parents=True)
    yaml_name = json.dumps(name if name is not None else Path(rel).name)  # JSON ⊂ YAML
    (skill / "SKILL.md").write_text(
        f"---\nname: {yaml_name}\ndescription: Answers questions about odd things.\n---\nbody\n",
        encoding="utf-8",
    )
    cases = skill / "evals" / "cases.jsonl"
    cases.parent.mkdir()
    cases.write_text("".join(json.dumps(c) + "\n" for c in cases_for("odd")), "utf-8")
    return skill


def _no_forged_lines(text: str) -> None:
    for line in text.splitlines():
        assert not line.lstrip().startswith(FORGERY), line
        assert not any(c in line for c in "\x1b\x07\x9b"), repr(line)


# --------------------------------------------------------------------------- paths, names


@pytest.mark.parametrize("sep", ["\n", "\r", "\u2028"])
def test_a_skill_path_with_a_line_break_is_exit_5_everywhere(tmp_path: Path, sep: str) -> None:
    repo = make_repo(tmp_path / "repo", skills=("alpha",))
    _add_skill(repo, f"skills/nl{sep}{FORGERY}", name="nl")
    commit_all(repo)
    for args in (["changed"], ["lock"], ["lock", "--update"], ["ci", "--all"], ["ci", "plan"]):
        done = run_cli(args, repo, gh_env(tmp_path))
        assert done.returncode == 5, (args, done.stdout, done.stderr)
        assert "the path contains a line break" in done.stderr
        _no_forged_lines(done.stdout + done.stderr)
    assert not (repo / ".skill-evals.lock.json").exists()


def test_control_characters_in_paths_are_escaped_on_the_terminal(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", skills=("alpha",))
    rel = "skills/esc\x1b[31mred\x07\u202eevil"
    _add_skill(repo, rel, name="escaped")
    commit_all(repo)
    lines = run_cli(["changed", "--all"], repo)
    assert lines.returncode == 0, lines.stderr
    assert "skills/esc\\u001b[31mred\\u0007\\u202eevil" in lines.stdout.splitlines()
    as_json = run_cli(["changed", "--all", "--format", "json"], repo)
    doc = json.loads(as_json.stdout)  # ASCII JSON: escaped, and still the same path
    assert rel in [item["path"] for item in doc["changed"]]
    assert as_json.stdout.isascii()
    assert run_cli(["lock", "--update"], repo).returncode == 0
    (repo / rel / "SKILL.md").write_text(
        '---\nname: "escaped"\ndescription: changed\n---\n', encoding="utf-8"
    )
    stale = run_cli(["lock"], repo)
    assert stale.returncode == 1 and "skills/esc\\u001b[31mred" in stale.stdout
    plan = run_cli(["ci", "plan", "--all"], repo)
    assert plan.returncode == 0 and plan.stdout.isascii()
    assert rel in [m["path"] for m in json.loads(plan.stdout)["include"]]
    validate = run_cli(["validate", str(repo / rel)], repo)
    for done in (lines, as_json, stale, plan, validate):
        _no_forged_lines(done.stdout + done.stderr)


def test_annotations_escape_names_and_paths(tmp_path: Path) -> None:
    """A failing skill whose name holds ESC, BEL, bidi controls and a forged command, in a
    directory whose path holds the property separators: every annotation stays one command
    and shows the text without the controls."""
    config = SIMULATED + "gates: {min-trigger-f1: 0.999}\nvalidate: warn\n"  # the name is invalid
    repo = make_repo(tmp_path / "repo", skills=(), config=config)
    name = f"odd\x1b[2J\x07{BIDI}\n{FORGERY}"
    _add_skill(repo, "skills/we,ird:dir", name=name)
    commit_all(repo)
    done = run_cli(["ci", "--all", "--out", str(tmp_path / "out")], repo, gh_env(tmp_path))
    assert done.returncode == 1, done.stderr[-3000:]
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error ")]
    assert errors, done.stdout
    for line in errors:
        assert "file=skills/we%2Cird%3Adir/evals/cases.jsonl" in line
        shown = "".join(f"\\u{ord(c):04x}" for c in BIDI)
        # the newline escaped, the controls gone, the bidi controls shown as \uXXXX
        assert f"odd[2J{shown}%0A{FORGERY}" in line
        assert not any(c in line for c in CONTROLS + BIDI)
    _no_forged_lines(done.stdout + done.stderr)


def test_workflow_escape_rules() -> None:
    assert workflow_escape("50% a\r\nb") == "50%25 a%0D%0Ab"
    assert workflow_escape("a:b,c", prop=True) == "a%3Ab%2Cc"
    assert workflow_escape("a:b,c") == "a:b,c"  # only properties escape : and ,
    shown = "".join(f"\\u{ord(c):04x}" for c in BIDI)
    assert workflow_escape("x" + CONTROLS + BIDI + "\u2028\ud800y") == f"x{shown}\\u2028y"
    line = annotation("error", "m\n::warning::x", file="f,1:2", title="t\x1b", line=3)
    assert line == "::error file=f%2C1%3A2,line=3,title=t::m%0A::warning::x"
    with pytest.raises(ValueError):
        annotation("error\n::set-output", "x")


# ------------------------------------------------------------------------ Markdown, HTML


def _failing_report(name: str, reason: str) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "tool": {"name": "skill-evals", "version": "0"},
        "status": "fail",
        "exitCode": 1,
        "base": {"mode": "all", "reason": reason},
        "skills": [
            {
                "name": name,
                "path": f"skills/{name}",
                "cases": None,
                "fingerprint": None,
                "status": "no-cases",
                "reason": reason,
                "exitCode": 1,
                "simulated": False,
                "report": None,
            }
        ],
        "changedSkills": [name],
        "simulated": False,
        "messages": [reason],
    }


@pytest.mark.parametrize(
    "name",
    [
        "@octocat",
        "team @org/admins",
        f"bidi{BIDI}x",
        f"ctl{CONTROLS}x",
        "</summary><img src=x>",
        "<details open>",
        "![t](http://evil.example/p.png)",
        "line1\nline2\r\n## heading",
    ],
)
def test_every_markdown_string_is_escaped_the_same_way(name: str) -> None:
    """The summary escapes every string as Markdown, the comment writes it as a code span; as
    GitHub renders either, no mention, tag, image or link comes out, and no bidi or control
    character is written raw."""
    report = _failing_report(name, f"no cases for {name}")
    for text in (render_comment(report), render_summary(report)):
        assert not any(c in text for c in CONTROLS + BIDI), repr(text)
        assert "\n## heading" not in text
        html = cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)
        outside = re.sub(r"<code>.*?</code>", "", html, flags=re.S)
        assert "@octocat" not in outside and "@org" not in outside  # no mention pings anyone
        assert "<img" not in html and "<details open" not in html
        if text.startswith(MARKER):  # the comment: not even a bare URL becomes a link
            assert "<a " not in html
        assert "<h2>heading" not in html


def test_the_comment_summary_is_markdown_between_blank_lines() -> None:
    text = render_comment(_failing_report("a_b*c", "no cases"))
    assert "\n<details>\n<summary>\n\n` a_b*c `: what failed\n\n</summary>\n" in text


def test_html_makes_invisible_characters_visible() -> None:
    name = f"h{CONTROLS}{BIDI}<b>"
    page = render_html(_failing_report(name, "r\x1b"))
    assert not any(c in page for c in CONTROLS + BIDI)
    assert "\\u001b" in page and "\\u202e" in page and "&lt;b&gt;" in page


# ------------------------------------------------------------------- observation files


def test_observation_file_names_are_distinct_for_distinct_names() -> None:
    long_a, long_b = "a" * 130 + "-one", "a" * 130 + "-two"
    names = [long_a, long_b, "Refund", "refund", "x/y", "x_y", "x?y", ".hidden", "é", "e"]
    files = [safe_file_name(n) for n in names]
    assert len(set(files)) == len(files), files
    for file in files:
        assert "/" not in file and not file.startswith(".") and len(file) <= 100
        assert file == file.lower()  # case-insensitive disks cannot merge two of them
    assert safe_file_name("refund-policy") == "refund-policy"  # readable when it can be


def test_two_long_skill_names_keep_their_own_observations(tmp_path: Path) -> None:
    config = "runner: skill-evals runner simulated\ntrials: 1\nvalidate: warn\n"  # too long
    repo = make_repo(tmp_path / "repo", skills=(), config=config)
    first, second = "s" * 125 + "-first", "s" * 125 + "-second"
    _add_skill(repo, "skills/first", name=first)
    _add_skill(repo, "skills/second", name=second)
    commit_all(repo)
    out = tmp_path / "out"
    done = run_cli(["ci", "--all", "--out", str(out)], repo)
    assert done.returncode == 0, done.stderr[-3000:]
    files = sorted((out / "observations").glob("*.jsonl"))
    assert len(files) == 2
    # 12 trigger-only cases with, plus the isolation spot-check of --arms auto (3 without)
    assert all(f.read_text("utf-8").count("\n") == 12 + 3 for f in files)


# ------------------------------------------------------------------------- ci merge


def _shard(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    write_skill(repo / "skills", "lonely")
    (repo / ".skill-evals.yml").write_text("runner: skill-evals runner simulated\n", "utf-8")
    out = tmp_path / "good-shard"
    assert run_cli(["ci", "--out", str(out)], repo).returncode == 1
    return out


@pytest.mark.parametrize(
    "poison",
    ["nan", "infinity", "deep", "nested", "huge-int", "duplicate", "bom-garbage", "type", "fifo"],
)
def test_merge_refuses_a_poisoned_shard_naming_it(tmp_path: Path, poison: str) -> None:
    good = _shard(tmp_path)
    bad = tmp_path / "bad-shard"
    shutil.copytree(good, bad)
    report_path = bad / "report.json"
    text = report_path.read_text("utf-8")
    if poison == "nan":
        text = text.replace('"exitCode": 1', '"exitCode": NaN', 1)
    elif poison == "infinity":
        text = text.replace('"exitCode": 1', '"exitCode": -Infinity', 1)
    elif poison == "deep":
        text = text.replace(
            '"messages": [', '"messages": [' + "[" * 200_000 + "]" * 200_000 + ",", 1
        )
    elif poison == "nested":  # parses, but deeper than a report ever is
        text = text.replace('"mode": "none"', '"mode": ' + "[" * 300 + "]" * 300, 1)
        text = text.replace('"mode": "all"', '"mode": ' + "[" * 300 + "]" * 300, 1)
    elif poison == "huge-int":
        text = text.replace('"exitCode": 1', '"exitCode": 1' + "0" * 5000, 1)
    elif poison == "duplicate":
        text = text.replace('"exitCode": 1', '"exitCode": 0, "exitCode": 1', 1)
    elif poison == "bom-garbage":
        text = "\ufeff" + text + "\x00"
    elif poison == "type":
        doc = json.loads(text)
        doc["skills"][0]["reason"] = {"@everyone": "x"}
        text = json.dumps(doc)
    if poison == "fifo":
        report_path.unlink()
        os.mkfifo(report_path)
    else:
        report_path.write_text(text, encoding="utf-8")
    started = time.monotonic()
    done = run_cli(["ci", "merge", str(good), str(bad), "--out", str(tmp_path / "m")], tmp_path)
    assert done.returncode == 5, (poison, done.stderr[-2000:])
    assert str(report_path) in done.stderr
    assert "Traceback" not in done.stderr and "@everyone" not in done.stderr
    assert time.monotonic() - started < 60


def test_merge_copies_only_regular_observation_files(tmp_path: Path) -> None:
    good = _shard(tmp_path)
    obs = good / "observations"
    obs.mkdir(exist_ok=True)
    (obs / "real.jsonl").write_text("{}\n", "utf-8")
    os.mkfifo(obs / "pipe.jsonl")
    secret = tmp_path / "secret.txt"
    secret.write_text("token", "utf-8")
    (obs / "link.jsonl").symlink_to(secret)
    out = tmp_path / "m"
    done = run_cli(["ci", "merge", str(good), "--out", str(out)], tmp_path, timeout=60)
    assert done.returncode == 1, done.stderr
    copied = sorted(p.name for p in (out / "observations").iterdir())
    assert copied == ["real.jsonl"]
    assert stat.S_ISREG(os.lstat(out / "observations" / "real.jsonl").st_mode)


# ------------------------------------------------------------------------------------ git


def _fake_git(tmp_path: Path, body: str) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git = bin_dir / "git"
    git.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    git.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def test_git_that_hangs_with_a_child_holding_the_pipe_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `git fetch` runs helpers that inherit stdout; killing git alone would leave the read
    # waiting for them.
    path = _fake_git(tmp_path, "sleep 60 &\nsleep 60\n")
    monkeypatch.setenv("PATH", path)
    monkeypatch.setattr(ci_git, "GIT_TIMEOUT_S", 0.5)
    started = time.monotonic()
    with pytest.raises(ci_git.GitError, match="no answer within"):
        ci_git.run_git(tmp_path, "fetch", "origin", "x")
    assert time.monotonic() - started < 5


def test_git_output_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _fake_git(tmp_path, "exec yes\n")
    monkeypatch.setenv("PATH", path)
    monkeypatch.setattr(ci_git, "MAX_GIT_OUTPUT", 1 << 20)
    with pytest.raises(ci_git.GitError, match="output larger than"):
        ci_git.run_git(tmp_path, "ls-tree", "-r", "HEAD")


def test_git_never_prompts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _fake_git(tmp_path, 'printf "%s" "$GIT_TERMINAL_PROMPT"\n')
    monkeypatch.setenv("PATH", path)
    assert ci_git.run_git(tmp_path, "fetch") == b"0"


# ----------------------------------------------------------------------------- outputs


def test_outputs_replace_fifos_and_symlinks_instead_of_writing_through(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_skill(repo / "skills", "lonely")  # no cases: exit 1, nothing runs
    (repo / ".skill-evals.yml").write_text("runner: skill-evals runner simulated\n", "utf-8")
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "junit.xml")  # no reader: opening it for writing would block forever
    outside = tmp_path / "outside.txt"
    outside.write_text("keep", "utf-8")
    (out / "report.json").symlink_to(outside)
    done = run_cli(["ci", "--out", str(out)], repo, timeout=60)
    assert done.returncode == 1, done.stderr
    assert outside.read_text("utf-8") == "keep"
    for name in ("junit.xml", "report.json"):
        assert stat.S_ISREG(os.lstat(out / name).st_mode)
    # the lock file too
    os.mkfifo(repo / ".skill-evals.lock.json")
    assert run_cli(["lock", "--update"], repo, timeout=60).returncode == 0
    assert json.loads((repo / ".skill-evals.lock.json").read_text("utf-8"))["version"] == 1


def test_an_unusable_out_directory_is_exit_5_before_anything_runs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", skills=("alpha",))
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x", "utf-8")
    done = run_cli(["ci", "--all", "--out", str(not_a_dir)], repo)
    assert done.returncode == 5 and "--out" in done.stderr and "Traceback" not in done.stderr
    shard = tmp_path / "shard"
    assert run_cli(["ci", "--all", "--only", "alpha", "--out", str(shard)], repo).returncode == 0
    out = tmp_path / "merged"
    (out / "summary.md").mkdir(parents=True)
    merged = run_cli(["ci", "merge", str(shard), "--out", str(out)], tmp_path)
    assert merged.returncode == 5 and "summary.md is a directory" in merged.stderr
