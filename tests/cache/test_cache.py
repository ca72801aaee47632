"""The observation cache: the key changes with every input it names and with nothing else, the
max age, corrupt and foreign files, the append-only files, what a reused observation carries."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from skill_evals.cache.entry import FORMAT, canonical_line
from skill_evals.cache.key import Uncacheable, observation_key, runner_identity
from skill_evals.cache.settings import parse_max_age
from skill_evals.cache.store import ObservationCache
from skill_evals.errors import InvalidInput
from skill_evals.run.observations import Observation, Variant
from skill_evals.run.records import load_recorded
from skill_evals.suite.cases import Case, load_cases

SKILL = "refund-policy"
SHA_A = "a" * 64
SHA_B = "b" * 64


@dataclass(frozen=True)
class FakeArm:
    name: Variant
    echo: str
    directory_sha256: str | None
    skill_dir: Path = Path(".")


WITH = FakeArm("with", "with", SHA_A)
WITHOUT = FakeArm("without", "without", None)


def _case_file(tmp_path: Path, **overrides: Any) -> Path:
    """One case with a fixture, setup and a workspace task; ``overrides`` replace fields
    (a value None removes the field)."""
    fixture = tmp_path / "fixtures" / "project"
    fixture.mkdir(parents=True, exist_ok=True)
    if not (fixture / "CHANGELOG.md").exists():
        (fixture / "CHANGELOG.md").write_text("# Changelog\n", encoding="utf-8")
    case: dict[str, Any] = {
        "id": "c1",
        "prompt": "Add a changelog entry",
        "expectTrigger": True,
        "fixture": "fixtures/project",
        "setup": [["git", "init", "-q"]],
        "task": [{"check": "file_contains", "path": "CHANGELOG.md", "text": "## 1.2.0"}],
        "tags": ["a"],
    }
    for key, value in overrides.items():
        if value is None:
            case.pop(key, None)
        else:
            case[key] = value
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(case) + "\n", encoding="utf-8")
    return path


def _case(tmp_path: Path, **overrides: Any) -> Case:
    return load_cases(_case_file(tmp_path, **overrides), SKILL).cases[0]


def _key(tmp_path: Path, runner: list[Any] | None = None, **changes: Any) -> str:
    skill = changes.pop("skill", SHA_A)
    trial = changes.pop("trial", 1)
    cache = ObservationCache(tmp_path / "cache", SKILL, runner or ["python3", "run.py"], 86400)
    key = cache.key(_case(tmp_path, **changes), trial, FakeArm("with", "with", skill))
    assert key is not None
    return key


# ---------------------------------------------------------------------------------- the key


def _edit_fixture(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "fixtures" / "project" / "CHANGELOG.md").write_text("# Log\n", encoding="utf-8")
    return {}


CHANGES: dict[str, Callable[[Path], dict[str, Any]]] = {
    "skill version": lambda _: {"skill": SHA_B},
    "without arm": lambda _: {"skill": None},
    "prompt": lambda _: {"prompt": "Add a changelog entry!"},
    "prompt whitespace": lambda _: {"prompt": "Add a changelog entry "},
    "fixture content": _edit_fixture,
    "setup": lambda _: {"setup": [["git", "init"]]},
    "no setup": lambda _: {"setup": None},
    "workspace task": lambda _: {
        "task": [{"check": "file_contains", "path": "CHANGELOG.md", "text": "## 1.3.0"}]
    },
    "trial": lambda _: {"trial": 2},
}

UNCHANGED: dict[str, Callable[[Path], dict[str, Any]]] = {
    "case id": lambda _: {"id": "renamed"},
    "label": lambda _: {"expectTrigger": False},
    "tags": lambda _: {"tags": ["b"]},
    "loaded": lambda _: {"loaded": {"include": ["other"]}},
    "nothing": lambda _: {},
}


@pytest.mark.parametrize("what", sorted(CHANGES))
def test_the_key_changes_with_every_input(tmp_path: Path, what: str) -> None:
    before = _key(tmp_path)
    assert _key(tmp_path, **CHANGES[what](tmp_path)) != before


@pytest.mark.parametrize("what", sorted(UNCHANGED))
def test_the_key_ignores_what_does_not_change_the_run(tmp_path: Path, what: str) -> None:
    before = _key(tmp_path)
    assert _key(tmp_path, **UNCHANGED[what](tmp_path)) == before


def test_an_observation_only_task_is_judged_again_so_it_is_not_in_the_key(tmp_path: Path) -> None:
    first = {"task": {"check": "output_matches", "pattern": "refund"}}
    second = {"task": {"check": "output_matches", "pattern": "receipt"}}
    assert _key(tmp_path, **first) == _key(tmp_path, **second) == _key(tmp_path, task=None)


def test_runner_arguments_naming_files_enter_by_content(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text("print('v1')\n", encoding="utf-8")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "helper.sh").write_text("echo v1\n", encoding="utf-8")
    argv = ["python3", "run.py", "--tools", "tools", "--model", "m1"]
    first = runner_identity(argv, tmp_path)
    assert first[0] == "python3" and first[2] == "--tools" and first[4:] == ["--model", "m1"]
    assert set(first[1]) == {"file"} and set(first[3]) == {"directory"}
    same = runner_identity([argv[0], str(script), *argv[2:]], tmp_path)
    assert same[1] == first[1]  # the same content by another path: the same key
    script.write_text("print('v2')\n", encoding="utf-8")
    assert runner_identity(argv, tmp_path)[1] != first[1]
    (tools / "helper.sh").write_text("echo v2\n", encoding="utf-8")
    assert runner_identity(argv, tmp_path)[3] != first[3]
    assert runner_identity([*argv[:5], "m2"], tmp_path)[5] == "m2"


@pytest.mark.parametrize("runner_change", ["script content", "literal argument", "builtin"])
def test_every_runner_change_changes_every_key(tmp_path: Path, runner_change: str) -> None:
    (tmp_path / "run.py").write_text("v1\n", encoding="utf-8")
    before = _key(tmp_path, runner=runner_identity(["python3", "run.py"], tmp_path))
    if runner_change == "script content":
        (tmp_path / "run.py").write_text("v2\n", encoding="utf-8")
        runner = runner_identity(["python3", "run.py"], tmp_path)
    elif runner_change == "literal argument":
        runner = runner_identity(["python3", "run.py", "--fast"], tmp_path)
    else:
        runner = runner_identity(["python3", "run.py"], tmp_path, builtin=True)
    assert _key(tmp_path, runner=runner) != before


def test_a_directory_argument_that_cannot_be_hashed_turns_the_cache_off(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "link").symlink_to("/etc/hostname")
    with pytest.raises(Uncacheable, match="runner argument 1 names a directory"):
        runner_identity(["python3", "tools"], tmp_path)


def test_a_directory_argument_too_large_to_hash_turns_the_cache_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import skill_evals.cache.key as cache_key

    monkeypatch.setattr(cache_key, "MAX_ARG_DIR_FILES", 5)
    deep = tmp_path / "tools"
    for i in range(6):
        deep = deep / f"d{i}"  # only empty directories: they count too
    deep.mkdir(parents=True)
    with pytest.raises(Uncacheable, match="too large to hash"):
        runner_identity(["python3", "tools"], tmp_path)


def test_devices_are_kept_as_written(tmp_path: Path) -> None:
    assert runner_identity(["cat", "/dev/null"], tmp_path) == ["cat", "/dev/null"]


def test_the_with_and_baseline_arms_of_one_version_share_a_key(tmp_path: Path) -> None:
    case = _case(tmp_path)
    key = observation_key(["r"], SHA_A, case, None, 1)
    cache = ObservationCache(tmp_path / "cache", SKILL, ["r"], 86400)
    baseline = FakeArm("baseline", "with", SHA_A)
    assert cache.key(case, 1, baseline) == cache.key(case, 1, WITH) != key


# ------------------------------------------------------------------------------- max age


@pytest.mark.parametrize(
    ("text", "seconds"), [("0", 0), ("90s", 90), ("30m", 1800), ("12h", 43200), ("7d", 604800)]
)
def test_max_age_forms(text: str, seconds: int) -> None:
    assert parse_max_age(text) == seconds


@pytest.mark.parametrize("text", ["", "7", "1w", "-1d", "7 d x", "1.5h", "3651d"])
def test_bad_max_age_is_exit_5(text: str) -> None:
    with pytest.raises(InvalidInput, match="--cache-max-age"):
        parse_max_age(text)


# ------------------------------------------------------------------------ store and lookup


def _observation(case_id: str = "c1", variant: Variant = "with", **kw: Any) -> Observation:
    fields: dict[str, Any] = {
        "invoked_skills": (SKILL,) if variant != "without" else (),
        "output": "Bring your receipt — ünïcode",
        "exit_code": 0,
        "meta": {"costUsd": 0.25, "inputTokens": 100},
        "checks": (True,),
        "reasons": (None,),
    }
    fields.update(kw)
    return Observation(case_id=case_id, trial=1, variant=variant, **fields)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def _cache(tmp_path: Path, clock: Clock | None = None, max_age: float = 86400) -> ObservationCache:
    return ObservationCache(tmp_path / "cache", SKILL, ["r"], max_age, clock or Clock())


def test_a_stored_observation_comes_back_marked_cached(tmp_path: Path) -> None:
    case = _case(tmp_path, id="renamed")
    first = _cache(tmp_path)
    first.store(case, 1, WITH, _observation())
    first.close()
    hit = _cache(tmp_path).lookup(case, 1, WITH)
    assert hit is not None and hit.cached
    assert (hit.case_id, hit.trial, hit.variant) == ("renamed", 1, "with")
    assert hit.output == "Bring your receipt — ünïcode" and hit.meta["costUsd"] == 0.25
    assert hit.checks == (True,)
    assert hit.to_record()["cached"] is True
    assert _cache(tmp_path).lookup(case, 2, WITH) is None  # another trial
    assert _cache(tmp_path).lookup(case, 1, WITHOUT) is None  # another arm


def test_a_with_observation_serves_as_the_baseline_of_that_version(tmp_path: Path) -> None:
    case = _case(tmp_path)
    cache = _cache(tmp_path)
    cache.store(case, 1, WITH, _observation())
    cache.close()
    hit = _cache(tmp_path).lookup(case, 1, FakeArm("baseline", "with", SHA_A))
    assert hit is not None and hit.variant == "baseline" and hit.cached


def test_reused_observations_are_not_stored_again(tmp_path: Path) -> None:
    case = _case(tmp_path)
    cache = _cache(tmp_path)
    cache.store(case, 1, WITH, _observation(cached=True))
    assert cache.stored == 0 and not (tmp_path / "cache").exists()


def test_entries_older_than_the_max_age_are_ignored(tmp_path: Path) -> None:
    case = _case(tmp_path)
    clock = Clock()
    writer = _cache(tmp_path, clock)
    writer.store(case, 1, WITH, _observation())
    writer.close()
    clock.now += 3600
    assert _cache(tmp_path, clock, max_age=3601).lookup(case, 1, WITH) is not None
    assert _cache(tmp_path, clock, max_age=3599).lookup(case, 1, WITH) is None
    assert _cache(tmp_path, clock, max_age=0).lookup(case, 1, WITH) is None  # never reuse


def test_max_age_zero_still_stores(tmp_path: Path) -> None:
    case = _case(tmp_path)
    cache = _cache(tmp_path, max_age=0)
    cache.store(case, 1, WITH, _observation())
    cache.close()
    assert _cache(tmp_path).lookup(case, 1, WITH) is not None


def test_the_newest_entry_of_a_key_wins(tmp_path: Path) -> None:
    case = _case(tmp_path)
    clock = Clock()
    for output in ("old", "new"):
        cache = _cache(tmp_path, clock)
        cache.store(case, 1, WITH, _observation(output=output))
        cache.close()
        clock.now += 10
    hit = _cache(tmp_path, clock).lookup(case, 1, WITH)
    assert hit is not None and hit.output == "new"


def test_each_process_appends_to_its_own_file(tmp_path: Path) -> None:
    case = _case(tmp_path)
    caches = [_cache(tmp_path) for _ in range(3)]
    for trial, cache in enumerate(caches, start=1):
        cache.store(case, trial, WITH, _observation())
        cache.store(case, trial, WITHOUT, _observation(variant="without"))
    for cache in caches:
        cache.close()
    files = sorted((tmp_path / "cache" / SKILL).iterdir())
    assert len(files) == 3
    for path in files:
        lines = path.read_bytes().split(b"\n")
        assert lines[-1] == b"" and len(lines) == 3  # whole lines only
        assert oct(path.stat().st_mode & 0o777) == "0o600"
    reader = _cache(tmp_path)
    assert all(reader.lookup(case, trial, WITH) for trial in (1, 2, 3))


def test_workspace_verdicts_are_needed_for_a_workspace_task(tmp_path: Path) -> None:
    case = _case(tmp_path)
    cache = _cache(tmp_path)
    cache.store(case, 1, WITH, _observation(checks=None, reasons=None))
    cache.close()
    assert _cache(tmp_path).lookup(case, 1, WITH) is None


def test_failing_check_reasons_come_back(tmp_path: Path) -> None:
    case = _case(tmp_path)
    cache = _cache(tmp_path)
    reason = "file_contains CHANGELOG.md: '## 1.2.0' not found"
    cache.store(case, 1, WITH, _observation(checks=(False,), reasons=(reason,)))
    cache.close()
    hit = _cache(tmp_path).lookup(case, 1, WITH)
    assert hit is not None and hit.checks == (False,) and hit.reasons == (reason,)


def test_an_oversized_observation_is_not_stored(tmp_path: Path) -> None:
    case = _case(tmp_path)
    cache = _cache(tmp_path)
    cache.store(case, 1, WITH, _observation(output="x" * 4_200_000))
    assert cache.stored == 0


# ---------------------------------------------------------------- corrupt and foreign files


def _good_file(tmp_path: Path, case: Case, name: str = "20240101T000000Z-1-0000000a.jsonl") -> Path:
    line = canonical_line(
        _cache(tmp_path).key(case, 1, WITH) or "", int(Clock()() * 1000), _observation(), "with"
    )
    directory = tmp_path / "cache" / SKILL
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(line)
    return path


@pytest.mark.parametrize(
    "garbage",
    [
        b"not json\n",
        b'{"a": 1, "a": 2}\n',
        b'{"x": NaN}\n',
        b"\xff\xfe\n",
        b"[1, 2]\n",
        b'{"caseId": "c1", "trial": 1, "variant": "with"}\n',  # a record file, not ours
        json.dumps({"skillEvalsCache": 99, "key": "0" * 64, "storedAt": 1}).encode() + b"\n",
        json.dumps(
            {"skillEvalsCache": FORMAT, "key": "zz", "storedAt": 1, "observation": {}}
        ).encode()
        + b"\n",
        b'{"x": "' + b"y" * 4_200_000 + b'"}\n',
    ],
    ids=[
        "not-json",
        "duplicate-key",
        "nan",
        "utf8",
        "array",
        "record",
        "other-format",
        "bad-key",
        "long-line",
    ],
)
def test_a_corrupt_line_is_a_warning_and_earlier_entries_still_count(
    tmp_path: Path, garbage: bytes
) -> None:
    case = _case(tmp_path)
    path = _good_file(tmp_path, case)
    with path.open("ab") as handle:
        handle.write(garbage)
    cache = _cache(tmp_path)
    assert cache.lookup(case, 1, WITH) is not None
    assert len(cache.messages) == 1 and "the rest is skipped" in cache.messages[0]
    assert "receipt" not in cache.messages[0] and "yyyy" not in cache.messages[0]


def test_an_entry_whose_observation_is_invalid_is_a_miss(tmp_path: Path) -> None:
    case = _case(tmp_path)
    key = _cache(tmp_path).key(case, 1, WITH)
    entry = {
        "skillEvalsCache": FORMAT,
        "key": key,
        "storedAt": int(Clock()() * 1000),
        "observation": {"variant": "with", "invokedSkills": "x", "output": "", "exitCode": 0},
    }
    directory = tmp_path / "cache" / SKILL
    directory.mkdir(parents=True)
    (directory / "20240101T000000Z-1-0000000a.jsonl").write_text(json.dumps(entry) + "\n")
    cache = _cache(tmp_path)
    assert cache.lookup(case, 1, WITH) is None
    assert "not a valid observation" in cache.messages[0]


def test_foreign_files_and_a_torn_last_line(tmp_path: Path) -> None:
    case = _case(tmp_path)
    path = _good_file(tmp_path, case)
    with path.open("ab") as handle:
        handle.write(b'{"skillEvalsCache": 1, "key": "ab')  # a run killed mid-write
    directory = path.parent
    (directory / "README.txt").write_text("hello")
    (directory / "20240101T000000Z-2-0000000b.jsonl").symlink_to(path)
    os.mkfifo(directory / "20240101T000000Z-3-0000000c.jsonl")
    cache = _cache(tmp_path)
    assert cache.lookup(case, 1, WITH) is not None  # the torn line is silently not an entry
    assert len(cache.messages) == 1
    assert (
        "'20240101T000000Z-2-0000000b.jsonl' and 2 more is not a cache file" in (cache.messages[0])
    )


def test_a_cache_that_is_not_a_directory_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / SKILL).write_text("x")
    case = _case(tmp_path)
    cache = _cache(tmp_path)
    assert cache.lookup(case, 1, WITH) is None
    assert "not a directory" in cache.messages[0]
    cache.store(case, 1, WITH, _observation())  # cannot write there either: one warning more
    assert cache.stored == 0 and "cannot write" in cache.messages[-1]


def test_newest_files_are_read_first_within_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import skill_evals.cache.files as cache_files

    case = _case(tmp_path)
    old = _good_file(tmp_path, case, "20240101T000000Z-1-0000000a.jsonl")
    new = _good_file(tmp_path, case, "20250101T000000Z-1-0000000a.jsonl")
    old.write_bytes(old.read_bytes().replace(b"receipt", b"RECEIPT"))
    monkeypatch.setattr(cache_files, "MAX_FILES", 1)
    cache = _cache(tmp_path)
    hit = cache.lookup(case, 1, WITH)
    assert hit is not None and "receipt" in hit.output
    assert "1 older file(s) past the reading bound" in cache.messages[0]
    assert new.exists()


def test_a_cached_mark_in_a_record_is_read_back(tmp_path: Path) -> None:
    cases = _case_file(tmp_path, task=None, fixture=None, setup=None)
    suite = load_cases(cases, SKILL)
    record = tmp_path / "record.jsonl"
    obs = _observation(checks=None, reasons=None, cached=True)
    record.write_text(json.dumps(obs.to_record()) + "\n", encoding="utf-8")
    (loaded,) = load_recorded(record, suite, 1)
    assert loaded.cached
    record.write_text(json.dumps({**obs.to_record(), "cached": 1}) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="cached"):
        load_recorded(record, suite, 1)


def test_files_past_the_prune_age_are_removed_when_a_run_stores(tmp_path: Path) -> None:
    case = _case(tmp_path)
    old = _good_file(tmp_path, case, "20200101T000000Z-1-0000000a.jsonl")
    recent = _good_file(tmp_path, case, "20240101T000000Z-1-0000000b.jsonl")
    foreign = old.parent / "20200101T000000Z-1-0000000c.txt"
    foreign.write_text("not ours")
    clock = Clock()
    for path, days in ((old, 31), (recent, 29), (foreign, 400)):
        stamp = clock.now - days * 86400
        os.utime(path, (stamp, stamp))
    cache = _cache(tmp_path, clock)
    assert cache.lookup(case, 1, WITH) is not None  # reading never removes anything
    assert old.exists()
    cache.store(case, 2, WITH, _observation())
    cache.close()
    assert not old.exists() and recent.exists() and foreign.exists()
