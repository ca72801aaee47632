"""`skill-evals route` end to end: figures, gates, exit codes and their precedence, the catalog
in every invocation's environment, --observations, --record/--resume, errors that name the
file, line and field (never the prompt). Every report is validated against the schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests._route_helpers import (
    make_catalog,
    observation_file,
    route_cases,
    route_json,
    router_command,
    run_route,
)
from tests.conftest import write_jsonl, write_skill

EXPECTS = {
    "c1": ["alpha"],
    "c2": ["alpha"],
    "c3": ["alpha", "beta"],
    "c4": ["alpha", "beta"],
    "c5": ["alpha", "beta"],
    "c6": [],
    "c7": [],
    "c8": ["gamma"],
    "c9": ["beta"],
    "c10": [],
}
LOADS = {
    "c1": [["alpha"]],
    "c2": [["beta"]],
    "c3": [["beta", "alpha"]],
    "c4": [["alpha"]],
    "c5": [["alpha", "gamma"]],
    "c6": [[]],
    "c7": [["gamma", "outside"]],
    "c8": [["other"]],
    "c9": [["beta", "alpha"]],
    "c10": [[]],
}


def _setup(tmp_path: Path) -> tuple[list[str], Path, Path]:
    dirs = make_catalog(tmp_path)
    cases = route_cases(tmp_path / "routing.jsonl", EXPECTS)
    observations = observation_file(tmp_path / "obs.jsonl", LOADS)
    skills = [arg for d in dirs for arg in ("--skill", str(d))]
    return skills, cases, observations


def test_observations_mode_figures(tmp_path: Path) -> None:
    skills, cases, obs = _setup(tmp_path)
    code, report, _ = route_json(
        [*skills, "--cases", str(cases), "--observations", str(obs), "--trials", "1"]
    )
    assert code == 0 and report["status"] == "pass"
    assert report["settings"]["mode"] == "observations"
    assert report["accuracy"] == 0.4  # c1 c6 c10 and c3 (a correct two-skill load) of 10
    assert report["otherLoads"] == 2
    per = {s["name"]: s for s in report["perSkill"]}
    assert (per["alpha"]["tp"], per["alpha"]["fp"], per["alpha"]["fn"]) == (4, 1, 1)
    assert (per["gamma"]["tp"], per["gamma"]["fp"], per["gamma"]["fn"]) == (0, 2, 1)
    assert report["confusion"]["labels"] == ["alpha", "beta", "gamma", "none"]
    assert report["confusion"]["counts"][3] == [0, 0, 1, 2]  # c7 → gamma; c6, c10 → none
    assert [(c["a"], c["b"], c["count"]) for c in report["collisions"]] == [
        ("alpha", "beta", 2),
        ("alpha", "gamma", 1),
        ("beta", "gamma", 1),
    ]
    result = {r["id"]: r for r in report["caseResults"]}
    assert result["c5"]["loaded"] == [["alpha", "gamma"]] and result["c5"]["correct"] == [False]
    assert result["c3"]["correct"] == [True]
    assert [c["name"] for c in report["catalog"]] == ["alpha", "beta", "gamma"]


def test_gates_pass_fail_and_precedence(tmp_path: Path) -> None:
    skills, cases, obs = _setup(tmp_path)
    base = [*skills, "--cases", str(cases), "--observations", str(obs), "--trials", "1"]
    code, report, _ = route_json([*base, "--min-accuracy", "0.4"])
    assert code == 0 and report["gates"]["minAccuracy"]["passed"] is True
    code, report, _ = route_json([*base, "--min-accuracy", "0.5"])
    assert code == 1 and report["gates"]["minAccuracy"] == {
        "threshold": 0.5,
        "value": 0.4,
        "passed": False,
    }
    code, report, _ = route_json([*base, "--min-skill-f1", "0.5"])
    gate = report["gates"]["minSkillF1"]
    assert code == 1 and gate["failing"] == ["gamma"] and gate["value"] == 0.0
    assert gate["skills"] == ["alpha", "beta", "gamma"]
    assert any("gamma 0" in m for m in report["messages"])


def test_f1_undefined_while_gated_is_7(tmp_path: Path) -> None:
    skills, cases, _ = _setup(tmp_path)
    # gamma is expected (c8) but never loaded: precision 0/0, so its F1 is undefined
    loads = {**LOADS, "c5": [["alpha"]], "c7": [[]]}
    obs = observation_file(tmp_path / "obs2.jsonl", loads)
    base = [*skills, "--cases", str(cases), "--observations", str(obs), "--trials", "1"]
    code, report, _ = route_json([*base, "--min-skill-f1", "0.1", "--min-accuracy", "0.99"])
    assert code == 7  # 7 wins over the failed accuracy gate (1)
    assert report["gates"]["minSkillF1"]["undefined"] == ["gamma"]
    assert report["gates"]["minAccuracy"]["passed"] is False
    per = {s["name"]: s for s in report["perSkill"]}
    assert per["gamma"]["precision"] is None and per["gamma"]["recall"] == 0.0
    assert per["gamma"]["f1"] is None


def test_exit_code_precedence_before_running(tmp_path: Path) -> None:
    dirs = make_catalog(tmp_path)
    skills = [arg for d in dirs for arg in ("--skill", str(d))]
    never = router_command(tmp_path / "absent-map.json", "--env-log", str(tmp_path / "ran"))
    # 9 units, an unknown skill in expect and no expecting case at all: 5 first
    few = write_jsonl(
        tmp_path / "few.jsonl",
        [
            {"id": f"x{i}", "prompt": f"p {i}", "expect": ["nope"] if i == 8 else []}
            for i in range(9)
        ],
    )
    code, report, err = route_json(
        [*skills, "--cases", str(few), "--runner", never, "--min-skill-f1", "0.5"]
    )
    assert code == 5 and "few.jsonl:9: field expect[0]" in err and "'nope'" in err
    # the same without the unknown name: 6 (fewer than 10 units) beats 7
    few = write_jsonl(
        tmp_path / "few.jsonl",
        [{"id": f"x{i}", "prompt": f"p {i}", "expect": []} for i in range(9)],
    )
    code, report, err = route_json(
        [*skills, "--cases", str(few), "--runner", never, "--min-skill-f1", "0.5"]
    )
    assert code == 6 and report["status"] == "insufficient"
    # ten units, none expecting a skill, F1 gated: 7 before any runner starts
    none = route_cases(tmp_path / "none.jsonl", {})
    code, report, err = route_json(
        [*skills, "--cases", str(none), "--runner", never, "--min-skill-f1", "0.5"]
    )
    assert code == 7 and "no case" in err
    assert not (tmp_path / "ran").exists()


def test_invalid_options_and_catalogs(tmp_path: Path) -> None:
    dirs = make_catalog(tmp_path)
    cases = route_cases(tmp_path / "routing.jsonl", EXPECTS)
    obs = observation_file(tmp_path / "obs.jsonl", LOADS)
    one = ["--skill", str(dirs[0])]
    both = run_route(
        [*one, "--catalog", "skills/*", "--cases", str(cases), "--observations", str(obs)]
    )
    assert both.returncode == 5 and "not both" in both.stderr
    neither = run_route([*one, "--cases", str(cases)])
    assert neither.returncode == 5 and "exactly one of --runner or --observations" in neither.stderr
    assert run_route(["--cases", str(cases), "--observations", str(obs)]).returncode == 5
    twin = write_skill(tmp_path / "elsewhere", "alpha", "another alpha")
    dup = run_route([*one, "--skill", str(twin), "--cases", str(cases), "--observations", str(obs)])
    assert dup.returncode == 5 and "unique" in dup.stderr
    reserved = write_skill(tmp_path / "r", "none", "a skill called none")
    bad = run_route(["--skill", str(reserved), "--cases", str(cases), "--observations", str(obs)])
    assert bad.returncode == 5 and "'none'" in bad.stderr
    inside = run_route(
        [
            *one,
            "--cases",
            str(cases),
            "--observations",
            str(obs),
            "--report",
            str(dirs[0] / "r.json"),
        ]
    )
    assert inside.returncode == 5 and "inside the catalog skill" in inside.stderr
    assert not (dirs[0] / "r.json").exists()
    glob = run_route(
        ["--catalog", "nothing/*", "--cases", str(cases), "--observations", str(obs)], cwd=tmp_path
    )
    assert glob.returncode == 5 and "matched no directory" in glob.stderr
    out_of_range = run_route(
        [*one, "--cases", str(cases), "--observations", str(obs), "--min-accuracy", "1.5"]
    )
    assert out_of_range.returncode == 5
    nan = run_route(
        [*one, "--cases", str(cases), "--observations", str(obs), "--min-skill-f1", "nan"]
    )
    assert nan.returncode == 5


def test_case_file_errors_name_line_and_field_never_the_prompt(tmp_path: Path) -> None:
    dirs = make_catalog(tmp_path)
    secret = "SECRET PROMPT TEXT"
    bad_lines = [
        ({"id": "a", "prompt": secret, "expect": "alpha"}, "field expect: must be an array"),
        ({"id": "a", "prompt": secret}, 'missing required field "expect"'),
        ({"id": "a", "prompt": secret, "expect": [], "expectTrigger": True}, "unknown field"),
        ({"id": "a", "prompt": secret, "expect": ["alpha", "alpha"]}, "listed twice"),
        ({"id": 3, "prompt": secret, "expect": []}, "field id: must be a string"),
    ]
    for record, wanted in bad_lines:
        path = write_jsonl(
            tmp_path / "bad.jsonl", [{"id": "ok", "prompt": "fine", "expect": []}, record]
        )
        done = run_route(
            ["--skill", str(dirs[0]), "--cases", str(path), "--runner", "true", "--format", "json"]
        )
        assert done.returncode == 5, record
        assert "bad.jsonl:2:" in done.stderr and wanted in done.stderr, done.stderr
        assert secret not in done.stderr and secret not in done.stdout
    dup = write_jsonl(
        tmp_path / "dup.jsonl",
        [{"id": "x", "prompt": "one", "expect": []}, {"id": "x", "prompt": "two", "expect": []}],
    )
    done = run_route(["--skill", str(dirs[0]), "--cases", str(dup), "--runner", "true"])
    assert done.returncode == 5 and "dup.jsonl:2: field id: duplicate id" in done.stderr
    yaml_cases = tmp_path / "routing.yaml"
    yaml_cases.write_text(
        "cases:\n  - id: y1\n    prompt: hello\n    expect: [alpha]\n  - id: y2\n"
        f"    prompt: {secret}\n    expect: [omega]\n",
        encoding="utf-8",
    )
    done = run_route(["--skill", str(dirs[0]), "--cases", str(yaml_cases), "--runner", "true"])
    assert done.returncode == 5 and "routing.yaml:7: field expect[0]" in done.stderr
    assert secret not in done.stderr


def test_observation_file_errors(tmp_path: Path) -> None:
    skills, cases, _ = _setup(tmp_path)
    base = [*skills, "--cases", str(cases), "--trials", "1", "--observations"]
    missing = observation_file(tmp_path / "m.jsonl", {k: v for k, v in LOADS.items() if k != "c4"})
    done = run_route([*base, str(missing)])
    assert done.returncode == 5 and "missing observation caseId 'c4' trial 1" in done.stderr
    extra = observation_file(tmp_path / "e.jsonl", {**LOADS, "c1": [["alpha"], ["alpha"]]})
    done = run_route([*base, str(extra)])
    assert done.returncode == 5 and "trial must be 1..1" in done.stderr
    without = tmp_path / "w.jsonl"
    lines = (
        observation_file(tmp_path / "w0.jsonl", LOADS).read_text().replace('"with"', '"without"', 1)
    )
    without.write_text(lines)
    done = run_route([*base, str(without)])
    assert done.returncode == 5 and "w.jsonl:1: key 'variant' must be" in done.stderr
    unknown = observation_file(tmp_path / "u.jsonl", {**LOADS, "ghost": [[]]})
    done = run_route([*base, str(unknown)])
    assert done.returncode == 5 and "unknown caseId 'ghost'" in done.stderr


def _sandboxed_args(
    skills: list[str], cases: Path, runner: str, writable: Path, trials: int = 1
) -> list[str]:
    """Route arguments over ``skills`` with ``runner``, whose files in ``writable`` (outside
    its workspace) are named writable in its sandbox."""
    return [*skills, "--cases", str(cases), "--runner", runner, "--trials", str(trials),
            "--sandbox-path", f"{writable}:rw"]  # fmt: skip


def test_runner_sees_the_whole_catalog(tmp_path: Path) -> None:
    dirs = make_catalog(tmp_path)
    cases = route_cases(tmp_path / "routing.jsonl", EXPECTS)
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps(LOADS))
    log = tmp_path / "env.jsonl"
    runner = router_command(mapping, "--env-log", str(log))
    # the runner logs outside its workspace
    args = _sandboxed_args(["--catalog", "skills/*"], cases, runner, tmp_path, trials=2)
    code, report, _ = route_json(args, cwd=tmp_path)
    assert code == 0 and report["runner"]["invocations"] == 20
    assert report["runner"]["ledger"]["costUsd"] == 10.0
    assert report["runner"]["ledger"]["inputTokens"] == 200
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(seen) == 20 and {(s["case"], s["trial"]) for s in seen} == {
        (c, t) for c in EXPECTS for t in (1, 2)
    }
    for entry in seen:
        assert entry["EVALGATE_SKILL_VARIANT"] == "with"
        assert entry["SKILL_EVALS_ARM"] == "routing"
        assert entry["EVALGATE_SKILL_DIR"] is None
        assert entry["SKILL_EVALS_SKILL_DIRS"] == "\n".join(str(d.resolve()) for d in dirs)
    # trial 2 loads nothing (the map has one trial per case)
    assert report["caseResults"][0]["loaded"] == [["alpha"], []]


def test_runner_failure_is_7_over_a_failed_gate(tmp_path: Path) -> None:
    dirs = make_catalog(tmp_path)
    cases = route_cases(tmp_path / "routing.jsonl", EXPECTS)
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps(LOADS))
    runner = router_command(mapping, "--fail-case", "c2")
    code, report, _ = route_json(
        [
            *[a for d in dirs for a in ("--skill", str(d))],
            "--cases",
            str(cases),
            "--runner",
            runner,
            "--trials",
            "1",
            "--jobs",
            "1",
            "--min-accuracy",
            "0.99",
        ]
    )
    assert code == 7 and report["status"] == "unavailable"
    assert report["runner"]["failures"][0]["caseId"] == "c2"
    assert "exited with code 3" in report["runner"]["failures"][0]["reason"]
    # fail-fast: with one job nothing after c2 started
    assert report["coverage"]["observed"] == 1


def test_record_then_resume(tmp_path: Path) -> None:
    dirs = make_catalog(tmp_path)
    skills = [a for d in dirs for a in ("--skill", str(d))]
    cases = route_cases(tmp_path / "routing.jsonl", EXPECTS)
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps(LOADS))
    record = tmp_path / "rec.jsonl"
    log = tmp_path / "env.jsonl"
    runner = router_command(mapping, "--env-log", str(log))
    base = _sandboxed_args(skills, cases, runner, tmp_path)  # it logs outside its workspace
    code, first, _ = route_json([*base, "--record", str(record), "--resume", str(record)])
    assert code == 0 and first["runner"]["invocations"] == 10
    lines = record.read_text().splitlines()
    assert len(lines) == 10 and all(json.loads(x)["variant"] == "with" for x in lines)
    # a record file refused without --resume (it already holds records)
    again = run_route([*base, "--record", str(record)])
    assert again.returncode == 5 and "add --resume" in again.stderr
    # drop c4's record: the resumed run runs only c4 and reports the same figures
    record.write_text("\n".join(x for x in lines if '"c4"' not in x) + "\n")
    code, second, _ = route_json([*base, "--record", str(record), "--resume", str(record)])
    assert code == 0 and second["runner"]["invocations"] == 1
    assert second["runner"]["ledger"]["resumed"] == 9
    for key in ("accuracy", "microF1", "macroF1", "perSkill", "confusion", "collisions"):
        assert second[key] == first[key]
    assert len(log.read_text().splitlines()) == 11
    # the recorded file is itself a valid --observations file
    code, third, _ = route_json(
        [*skills, "--cases", str(cases), "--observations", str(record), "--trials", "1"]
    )
    assert code == 0 and third["confusion"] == first["confusion"]


def test_catalog_edited_during_run_is_7(tmp_path: Path) -> None:
    dirs = make_catalog(tmp_path)
    cases = route_cases(tmp_path / "routing.jsonl", EXPECTS)
    touch = tmp_path / "touch.py"
    target = dirs[1] / "notes.md"
    touch.write_text(
        "import json, pathlib, sys\n"
        f"pathlib.Path({str(target)!r}).write_text('edited')\n"
        "sys.stdin.read()\n"
        "print(json.dumps({'variant': 'with', 'invokedSkills': [], 'output': '', 'exitCode': 0}))\n"
    )
    import sys

    skills = [a for d in dirs for a in ("--skill", str(d))]
    # the runner edits the catalog: only possible where writable
    code, report, _ = route_json(
        _sandboxed_args(skills, cases, f"{sys.executable} {touch}", tmp_path)
    )
    assert code == 7 and any(
        "beta" in m and "changed during the run" in m for m in report["messages"]
    )


def test_retryable_runner_errors_are_retried(tmp_path: Path) -> None:
    dirs = make_catalog(tmp_path)
    skills = [a for d in dirs for a in ("--skill", str(d))]
    cases = route_cases(tmp_path / "routing.jsonl", EXPECTS)
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps(LOADS))
    markers = tmp_path / "markers"
    markers.mkdir()
    runner = router_command(mapping, "--busy-once", "c3", str(markers))
    base = _sandboxed_args(skills, cases, runner, markers)  # markers outside the workspace
    code, report, _ = route_json([*base, "--retries", "1"])
    assert code == 0 and report["runner"]["ledger"]["retried"] == 1
    assert report["runner"]["invocations"] == 11 and report["settings"]["retries"] == 1
    assert report["caseResults"][2]["correct"] == [True]
    (markers / "c3-1").unlink()
    code, report, _ = route_json([*base, "--retries", "0"])
    assert code == 7 and report["runner"]["failures"][0]["reason"] == "runner: rate limited (429)"


def _catalogless_runner(tmp_path: Path) -> str:
    """A built-in agent runner that installs no catalog, else a runner reading its invocation
    the way such a built-in does (read_invocation without ``catalog``)."""
    from skill_evals.agents.registry import ENTRIES

    name = next((e.name for e in ENTRIES if not e.catalog), None)
    if name is not None:
        return f"skill-evals runner {name}"
    script = tmp_path / "catalogless.py"
    script.write_text(
        "import sys\nfrom skill_evals.agents.base import RunnerError, read_invocation\n"
        "try:\n    read_invocation()\nexcept RunnerError as exc:\n"
        "    sys.stdout.write(exc.to_line())\n",
        encoding="utf-8",
    )
    return f"{sys.executable} {script}"


def test_agent_runners_refuse_a_catalog_they_cannot_install(tmp_path: Path) -> None:
    dirs = make_catalog(tmp_path)
    cases = route_cases(tmp_path / "routing.jsonl", EXPECTS)
    code, report, _ = route_json(
        [
            *[a for d in dirs for a in ("--skill", str(d))],
            "--cases",
            str(cases),
            "--runner",
            _catalogless_runner(tmp_path),
            "--trials",
            "1",
            "--jobs",
            "1",
        ]
    )
    assert code == 7
    reason = report["runner"]["failures"][0]["reason"]
    assert reason.startswith("runner: this runner does not install a catalog")
