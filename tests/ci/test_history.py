"""The gate's history: several real `ci` runs against one cache in a temporary git repository
(runs that change the figures, one whose runner fails), then history.jsonl, the trends of
summary.md and the comment, and the SVG charts of report.html (rendered by Chromium too)."""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from skill_evals.ci.schema import validate_ci_report
from skill_evals.report.trends import LEVELS
from tests.conftest import REPO, write_jsonl, write_skill
from tests.report.test_junit_task import CASES

from .conftest import commit_all, git, run_cli
from .test_html import CHROMIUM, _chromium

TASKY = REPO / "tests" / "runners" / "tasky.py"
KEYS = {"schemaVersion", "skill", "date", "commit", "status", "f1", "uplift", "passRate",
        "costUsd"}  # fmt: skip
# beta's runner per run: the figures change, run 3's runner fails every invocation.
RUNS = [[], ["c-ok:*:miss", "c-late:*:miss"], ["*:*:error"], ["c-ok:*:fail"], ["c-flaky:1:miss"],
        ["c-late:2:fail", "c-ok:1:miss"]]  # fmt: skip


def _config(rules: list[str]) -> str:
    beta = json.dumps(" ".join([sys.executable, str(TASKY), "beta", *rules]))
    return (
        "runner: skill-evals runner simulated\ntrials: 2\ncache: ../se-cache\n"
        f'cache-max-age: "0"\nstop-when-settled: false\noverrides:\n  beta: {{runner: {beta}}}\n'
    )


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("history")
    repo = tmp / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for name in ("alpha", "beta"):
        skill = write_skill(repo / "skills", name, description=f"Answer {name} refund questions.")
        (skill / "evals").mkdir()
        write_jsonl(skill / "evals" / "cases.jsonl", CASES)
    file = repo / ".." / "se-cache" / "history.jsonl"  # outside the work tree, as ci requires
    runs = []
    for index, rules in enumerate(RUNS):
        (repo / ".skill-evals.yml").write_text(_config(rules), "utf-8")
        commit = commit_all(repo, f"run {index}")
        if index == 4:  # a corrupt line, a foreign one and 501 records of another skill
            old = file.read_text("utf-8")
            zeta = json.loads(old.splitlines()[0]) | {"skill": "zeta"}
            lines = [json.dumps(zeta | {"date": f"2020-01-01T00:00:{i % 60:02d}Z",
                                        "costUsd": float(i)}) for i in range(501)]  # fmt: skip
            file.write_text(old + "{not json\n" + '{"other": 1}\n' + "\n".join(lines) + "\n")
        out = tmp / f"out{index}"
        done = run_cli(["ci", "--all", "--out", str(out)], repo)
        runs.append({"done": done, "out": out, "commit": commit})
    return {"repo": repo, "file": file, "runs": runs}


def _records(file: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in file.read_text("utf-8").splitlines() if line.strip()]


def _report(run: dict[str, Any], name: str) -> dict[str, Any]:
    report = json.loads((run["out"] / "report.json").read_text("utf-8"))
    return next(s["report"] for s in report["skills"] if s["name"] == name)


def test_runs_exit_as_their_verdicts_never_because_of_the_history(history: dict[str, Any]) -> None:
    codes = [run["done"].returncode for run in history["runs"]]
    assert codes[2] == 7  # beta's runner failed every invocation: unavailable
    assert all(code in (0, 1) for i, code in enumerate(codes) if i != 2), codes


def test_one_record_per_pass_or_fail_skill_and_run(history: dict[str, Any]) -> None:
    records = [r for r in _records(history["file"]) if r["skill"] != "zeta"]
    assert all(set(r) == KEYS for r in records)
    alpha = [r for r in records if r["skill"] == "alpha"]
    beta = [r for r in records if r["skill"] == "beta"]
    assert len(alpha) == len(RUNS)
    assert len(beta) == len(RUNS) - 1  # nothing for the unavailable run
    commits = [run["commit"] for i, run in enumerate(history["runs"]) if i != 2]
    assert [r["commit"] for r in beta] == commits
    for record in beta:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", record["date"])
    # the figures equal the run's report
    runs = [run for i, run in enumerate(history["runs"]) if i != 2]
    for record, run in zip(beta, runs, strict=True):
        report = _report(run, "beta")
        assert record["status"] == report["status"]
        assert record["f1"] == report["trigger"]["f1"]
        assert record["uplift"] == {
            "difference": report["task"]["difference"],
            "lower": report["task"]["interval"]["lower"],
            "upper": report["task"]["interval"]["upper"],
        }
        assert record["passRate"] == {
            "with": report["task"]["with"]["passRate"],
            "without": report["task"]["without"]["passRate"],
        }
    assert len({r["f1"] for r in beta}) > 1 and len({r["uplift"]["difference"] for r in beta}) > 1


def test_bad_lines_are_skipped_with_a_warning_and_the_file_stays_bounded(
    history: dict[str, Any],
) -> None:
    stderr = history["runs"][4]["done"].stderr
    file = history["file"]
    for problem in ("not valid JSON", "not a history record"):
        assert re.search(rf"{re.escape(str(file))}:\d+: {problem}", stderr), stderr[-3000:]
    zeta = [r for r in _records(file) if r["skill"] == "zeta"]
    # more than 500: rewritten keeping the newest 500 (the oldest record went), bad lines gone
    assert len(zeta) == 500 and zeta[0]["costUsd"] == 1.0
    assert "{not json" not in file.read_text("utf-8")
    assert "not valid JSON" not in history["runs"][5]["done"].stderr


def test_report_json_carries_the_trends_and_ci_merge_keeps_them(
    history: dict[str, Any], tmp_path: Path
) -> None:
    last = history["runs"][-1]["out"]
    report = json.loads((last / "report.json").read_text("utf-8"))
    validate_ci_report(report)
    beta = [r for r in _records(history["file"]) if r["skill"] == "beta"]
    trends = {t["skill"]: t for t in report["trends"]}
    assert trends["beta"] == {
        "skill": "beta",
        "f1": [r["f1"] for r in beta],
        "uplift": [r["uplift"]["difference"] for r in beta],
    }
    merged = tmp_path / "merged"
    done = run_cli(["ci", "merge", str(last), "--out", str(merged)], tmp_path)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert (merged / "summary.md").read_text("utf-8").count("## Trends (last 6 runs)") == 1
    assert json.loads((merged / "report.json").read_text("utf-8"))["trends"] == report["trends"]


def _spark(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    low, high = min(known), max(known)
    if low == high:
        return "".join("·" if v is None else "▄" for v in values)
    return "".join(
        "·" if v is None else LEVELS[math.floor((v - low) / (high - low) * 7 + 0.5)] for v in values
    )


def _trend_rows(text: str, runs: int = len(RUNS)) -> dict[str, list[str]]:
    """The rows of the trends table, by skill."""
    section = text.split(f"## Trends (last {runs} runs)\n\n", 1)[1]
    rows = {}
    for line in section.splitlines()[2:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows[cells[0]] = cells
    return rows


@pytest.mark.parametrize("name", ["summary.md", "comment.md"])
def test_summary_and_comment_chart_the_last_runs(history: dict[str, Any], name: str) -> None:
    records = _records(history["file"])
    text = (history["runs"][-1]["out"] / name).read_text("utf-8")
    rows = _trend_rows(text)
    assert set(rows) == {"alpha", "beta"}
    beta = [r for r in records if r["skill"] == "beta"]
    f1 = [r["f1"] for r in beta]
    uplift = [r["uplift"]["difference"] for r in beta]
    assert rows["beta"][1] == str(len(beta))
    assert rows["beta"][2] == f"{_spark(f1)} {f1[-1]:.3f}"
    assert rows["beta"][3].startswith(f"{_spark(uplift)} ")
    assert "insufficient signal" not in rows["beta"][2]  # five values are enough
    # the first runs had fewer than five values
    early = _trend_rows((history["runs"][1]["out"] / name).read_text("utf-8"), 2)
    assert early["beta"][2].endswith("insufficient signal (2 of 5)")


class _Svgs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict[str, str | None]] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "svg":
            self.found.append(dict(attrs))
        elif tag == "polyline" and self.found:
            self.found[-1]["points"] = dict(attrs).get("points")
        elif tag == "script":
            self.scripts += 1


def test_report_html_has_one_polyline_per_skill_and_series(history: dict[str, Any]) -> None:
    html = (history["runs"][-1]["out"] / "report.html").read_text("utf-8")
    parser = _Svgs()
    parser.feed(html)
    svgs = {(s["data-skill"], s["data-series"]): s for s in parser.found if "data-series" in s}
    assert set(svgs) == {(n, s) for n in ("alpha", "beta") for s in ("f1", "uplift")}
    beta = [r for r in _records(history["file"]) if r["skill"] == "beta"]
    points = (svgs[("beta", "f1")]["points"] or "").split()
    assert len(points) == sum(r["f1"] is not None for r in beta)
    assert all(re.fullmatch(r"[\d.]+,[\d.]+", p) for p in points)
    assert all(s["role"] == "img" and s["aria-label"] for s in svgs.values())
    assert parser.scripts == 0
    early = (history["runs"][1]["out"] / "report.html").read_text("utf-8")
    assert "insufficient signal (2 of 5)" in early


@pytest.mark.browser
@pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="no Chromium")
def test_chromium_renders_the_charts(history: dict[str, Any], tmp_path: Path) -> None:
    page = (history["runs"][-1]["out"] / "report.html").as_uri()
    dom = _chromium(["--dump-dom", page], tmp_path / "profile")
    assert dom.count("<polyline") == 4 and 'data-series="uplift"' in dom


def test_a_symlinked_history_is_never_written_through(tmp_path: Path) -> None:
    """`history: FILE` naming a symlink (a pull request can commit one): a warning, the exit
    code of the verdict, and the file it points to untouched."""
    from .conftest import make_repo

    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me\n", "utf-8")
    config = "runner: skill-evals runner simulated\ntrials: 1\nhistory: trend.jsonl\n"
    repo = make_repo(tmp_path / "repo", skills=("alpha",), config=config)
    (repo / "trend.jsonl").symlink_to(target)
    done = run_cli(["ci", "--all", "--out", str(tmp_path / "out")], repo)
    assert done.returncode == 0, done.stderr[-2000:]
    assert target.read_text("utf-8") == "keep me\n"
    assert "trend.jsonl" in done.stderr and "this run is not recorded" in done.stderr
