"""Runner objects, --observations files, --resume files and the record writer."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from skill_evals.errors import InvalidInput
from skill_evals.run.observations import (
    ContractError,
    Observation,
    RunnerFailure,
    parse_runner_object,
)
from skill_evals.run.record_writer import RecordWriter
from skill_evals.run.records import load_observations, load_recorded, plan_keys
from skill_evals.suite.cases import Case, CaseSuite
from tests.conftest import write_jsonl

SKILL = "refund-policy"


def make_suite(tmp_path: Path, n: int = 3) -> CaseSuite:
    cases = tuple(
        Case(id=f"c{i}", prompt=f"prompt {i}", expect_trigger=i % 2 == 0, line=i + 1, unit=i)
        for i in range(n)
    )
    return CaseSuite(path=tmp_path / "cases.jsonl", sha256="0" * 64, cases=cases, unit_count=n)


def rec(case_id: str, trial: int, variant: str, **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "caseId": case_id,
        "trial": trial,
        "variant": variant,
        "invokedSkills": [SKILL] if variant == "with" else [],
        "output": "SECRET-OUTPUT",
        "exitCode": 0,
    }
    record.update(extra)
    return record


def full(suite: CaseSuite, trials: int) -> list[dict[str, Any]]:
    return [rec(c, t, v) for c, t, v in plan_keys(suite, trials)]


# ---------------------------------------------------------------------------- runner object


def test_to_record_round_trip() -> None:
    obs = Observation("c1", 2, "with", ("a", "b"), "out", 3, {"costUsd": 0.5})
    assert obs.to_record() == {
        "caseId": "c1",
        "trial": 2,
        "variant": "with",
        "invokedSkills": ["a", "b"],
        "output": "out",
        "exitCode": 3,
        "meta": {"costUsd": 0.5},
    }
    assert "meta" not in Observation("c1", 1, "without", (), "", 0).to_record()


def test_parse_runner_object_valid() -> None:
    fields = parse_runner_object(
        {
            "variant": "without",
            "invokedSkills": ["x"],
            "output": "o",
            "exitCode": -2,
            "meta": {"inputTokens": 10, "outputTokens": None, "model": "ignored"},
        },
        "without",
    )
    assert fields == {
        "variant": "without",
        "invoked_skills": ("x",),
        "output": "o",
        "exit_code": -2,
        "meta": {"inputTokens": 10},
        "tool_calls": (),
    }


BASE = {"variant": "with", "invokedSkills": [], "output": "SECRET-OUTPUT", "exitCode": 0}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"extra": "SECRET-OUTPUT"}, "an extra key; the only keys allowed are"),
        ({"exitCode": None}, "wrong-typed key 'exitCode'"),
        ({"exitCode": True}, "wrong-typed key 'exitCode'"),
        ({"exitCode": 0.0}, "wrong-typed key 'exitCode'"),
        ({"exitCode": 2**53}, "safe integer"),
        ({"output": 5}, "wrong-typed key 'output'"),
        ({"invokedSkills": "refund-policy"}, "wrong-typed key 'invokedSkills'"),
        ({"invokedSkills": [1]}, "wrong-typed key 'invokedSkills'"),
        ({"variant": "SECRET-OUTPUT"}, "wrong-typed key 'variant'"),
        ({"variant": "without"}, "variant mismatch"),
        ({"meta": []}, "wrong-typed key 'meta'"),
        ({"meta": {"durationMs": -1}}, "meta.durationMs"),
        ({"meta": {"costUsd": True}}, "meta.costUsd"),
    ],
)
def test_parse_runner_object_rejects(change: dict[str, Any], message: str) -> None:
    value = {**BASE, **change}
    with pytest.raises(ContractError, match=message) as info:
        parse_runner_object(value, "with")
    assert "SECRET-OUTPUT" not in str(info.value)


def test_parse_runner_object_missing_and_long_key() -> None:
    for key in ("variant", "invokedSkills", "output", "exitCode"):
        value = {k: v for k, v in BASE.items() if k != key}
        with pytest.raises(ContractError, match=f"missing key '{key}'"):
            parse_runner_object(value, "with")
    with pytest.raises(ContractError) as info:
        parse_runner_object({**BASE, "k" * 10_000: 1}, "with")
    assert len(str(info.value)) < 200


# --------------------------------------------------------------------------- --observations


def test_load_observations_valid_in_plan_order(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    records = full(suite, 2)
    records.reverse()
    path = write_jsonl(tmp_path / "obs.jsonl", records)
    observations, failures = load_observations(path, suite, 2, SKILL)
    assert failures == []
    assert [o.key for o in observations] == plan_keys(suite, 2)
    assert observations[0].invoked_skills == (SKILL,)


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (
            lambda r: r.__setitem__(5, rec("c1", 1, "with")),
            r"obs\.jsonl:6: duplicate observation "
            r"caseId 'c1' trial 1 variant 'with' \(first on line 3\)",
        ),
        (lambda r: r.pop(3), r"missing observation caseId 'c1' trial 1 variant 'without'"),
        (
            lambda r: r.__setitem__(5, rec("c0", 2, "with")),
            r"obs\.jsonl:6: extra observation "
            r"caseId 'c0' trial 2 variant 'with': trial must be 1\.\.1",
        ),
        (lambda r: r.__setitem__(5, rec("c0", 0, "with")), r"obs\.jsonl:6: extra observation"),
        (lambda r: r.insert(0, rec("nope", 1, "with")), r"obs\.jsonl:1: unknown caseId 'nope'"),
        (
            lambda r: r.__setitem__(2, rec("c1", 1, "with", exitCode="0")),
            r"obs\.jsonl:3: wrong-typed key 'exitCode'",
        ),
        (
            lambda r: r.__setitem__(2, rec("c1", 1, "with", extra=1)),
            r"obs\.jsonl:3: an extra key; .* \(\"extra\"\)",
        ),
        (
            lambda r: r.__setitem__(
                2, {k: v for k, v in rec("c1", 1, "with").items() if k != "caseId"}
            ),
            r"obs\.jsonl:3: key 'caseId' missing",
        ),
        (
            lambda r: r.__setitem__(2, rec("c1", "1", "with")),
            r"obs\.jsonl:3: key 'trial' must be an integer",
        ),
        (lambda r: r.__setitem__(2, rec("c1", 1, "both")), r"obs\.jsonl:3: key 'variant' must be"),
    ],
)
def test_load_observations_invalid(tmp_path: Path, mutate: Any, pattern: str) -> None:
    suite = make_suite(tmp_path)
    records = full(suite, 1)
    mutate(records)
    path = write_jsonl(tmp_path / "obs.jsonl", records)
    with pytest.raises(InvalidInput, match=pattern) as info:
        load_observations(path, suite, 1, SKILL)
    assert "SECRET-OUTPUT" not in str(info.value)


def test_missing_message_counts_the_rest(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    path = write_jsonl(tmp_path / "obs.jsonl", full(suite, 1)[:2])
    with pytest.raises(InvalidInput, match="and 3 more"):
        load_observations(path, suite, 1, SKILL)


def test_isolation_breach_is_a_failure_not_an_observation(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    records = full(suite, 1)
    records[1]["invokedSkills"] = ["other", SKILL]  # c0 without
    path = write_jsonl(tmp_path / "obs.jsonl", records)
    observations, failures = load_observations(path, suite, 1, SKILL)
    assert len(observations) == 5
    assert ("c0", 1, "without") not in [o.key for o in observations]
    assert len(failures) == 1
    assert failures[0].key == ("c0", 1, "without")
    assert failures[0].reason.startswith("isolation breach")


def test_exit5_problem_after_a_breach_still_wins(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    records = full(suite, 1)
    records[1]["invokedSkills"] = [SKILL]
    records[5] = rec("c2", 1, "with")  # duplicate on the last line
    path = write_jsonl(tmp_path / "obs.jsonl", records)
    with pytest.raises(InvalidInput, match="duplicate"):
        load_observations(path, suite, 1, SKILL)


def test_population_bound(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, n=1)
    records = full(suite, 1) + [rec("c0", 1, "with")] * 3
    path = write_jsonl(tmp_path / "obs.jsonl", records)
    with pytest.raises(InvalidInput, match=r"obs\.jsonl:3"):
        load_observations(path, suite, 1, SKILL)


def test_observations_must_be_regular_file(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    with pytest.raises(InvalidInput):
        load_observations(tmp_path, suite, 1, SKILL)
    with pytest.raises(InvalidInput):
        load_observations(tmp_path / "absent.jsonl", suite, 1, SKILL)


# ---------------------------------------------------------------------------------- --resume


def test_load_recorded_keeps_first_ignores_out_of_range(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    records = [
        rec("c2", 1, "without", output="first"),
        rec("c0", 1, "with"),
        rec("c2", 1, "without", output="second"),
        rec("c1", 5, "with"),  # recorded with more trials: ignored
    ]
    path = write_jsonl(tmp_path / "rec.jsonl", records)
    kept = load_recorded(path, suite, 2)
    assert [o.key for o in kept] == [("c0", 1, "with"), ("c2", 1, "without")]
    assert kept[1].output == "first"


def test_load_recorded_unknown_case(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    path = write_jsonl(tmp_path / "rec.jsonl", [rec("c0", 1, "with"), rec("gone", 1, "with")])
    with pytest.raises(InvalidInput, match=r"rec\.jsonl:2: unknown caseId 'gone'"):
        load_recorded(path, suite, 1)


def test_load_recorded_rejects_bad_record(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    path = tmp_path / "rec.jsonl"
    path.write_text(json.dumps(rec("c0", 1, "with")) + "\n" + '{"caseId": "c0", "tr\n')
    with pytest.raises(InvalidInput, match=r"rec\.jsonl:2"):
        load_recorded(path, suite, 1)


def test_load_recorded_keeps_breaches_out_of_nothing(tmp_path: Path) -> None:
    # A recorded `without` observation is kept as-is; the scheduler never records breaches,
    # and the evaluation of resumed observations is the scheduler's (it does not re-run them).
    suite = make_suite(tmp_path)
    path = write_jsonl(tmp_path / "rec.jsonl", [rec("c0", 1, "without")])
    assert [o.key for o in load_recorded(path, suite, 1)] == [("c0", 1, "without")]


# ------------------------------------------------------------------------------ RecordWriter


def test_record_writer_appends_and_reads_back(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, n=2)
    path = tmp_path / "sub" / "rec.jsonl"
    observations = [
        Observation(c, t, v, (SKILL,) if v == "with" else (), "ünïcode \u2028 out", 0, {})
        for c, t, v in plan_keys(suite, 1)
    ]
    writer = RecordWriter(path)
    for obs in observations[:2]:
        writer.write(obs)
    writer.close()
    writer.close()  # idempotent
    writer = RecordWriter(path)  # append, not truncate
    for obs in observations[2:]:
        writer.write(obs)
    writer.close()
    lines = path.read_bytes().split(b"\n")
    assert len(lines) == 5 and lines[-1] == b""
    assert "\u2028".encode() in lines[0]  # raw UTF-8, one record per line
    loaded, failures = load_observations(path, suite, 1, SKILL)
    assert loaded == observations and failures == []


def test_record_writer_thread_safe(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    writer = RecordWriter(path)
    big = "x" * 100_000

    def work(i: int) -> None:
        for t in range(1, 6):
            writer.write(Observation(f"c{i}", t, "with", (), big, 0))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 40
    assert all(json.loads(line)["output"] == big for line in lines)


def test_record_writer_repairs_missing_final_newline(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_text('{"caseId": "c0", "tri')  # killed mid-line
    writer = RecordWriter(path)
    writer.write(Observation("c1", 1, "with", (), "o", 0))
    writer.close()
    lines = path.read_text().split("\n")
    assert lines[0] == '{"caseId": "c0", "tri'
    assert json.loads(lines[1])["caseId"] == "c1"


def test_record_writer_unwritable(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="--record"):
        RecordWriter(tmp_path)  # a directory
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInput, match="must be a regular file"):
        RecordWriter(fifo)  # must not block waiting for a reader


def test_runner_failure_key() -> None:
    assert RunnerFailure("c", 1, "with", "r").key == ("c", 1, "with")


@pytest.mark.parametrize(
    "meta",
    [None, {"durationMs": 12.5, "costUsd": 0.01, "inputTokens": 100, "outputTokens": 7}],
)
def test_fast_path_builds_the_same_observations_as_the_constructor(
    tmp_path: Path, meta: dict[str, float] | None
) -> None:
    """The one-pass loader must give exactly what Observation(...) built field by field gives,
    with and without meta (the fast path bypasses parse_runner_object)."""
    suite = make_suite(tmp_path, 2)
    records = []
    for case_id, trial, variant in plan_keys(suite, 2):
        extra: dict[str, Any] = {"exitCode": trial - 1, "output": f"out {case_id} {trial}"}
        if meta is not None:
            extra["meta"] = meta
        records.append(rec(case_id, trial, variant, **extra))
    path = write_jsonl(tmp_path / "obs.jsonl", records)
    observations, failures = load_observations(path, suite, 2, SKILL)
    assert failures == []
    expected = [
        Observation(
            case_id=r["caseId"],
            trial=r["trial"],
            variant=r["variant"],
            invoked_skills=tuple(r["invokedSkills"]),
            output=r["output"],
            exit_code=r["exitCode"],
            meta=dict(meta or {}),
        )
        for r in records
    ]
    assert observations == expected
    assert [type(o.invoked_skills) for o in observations] == [tuple] * len(records)
    assert load_recorded(path, suite, 2) == expected
