"""Recorded observation files (docs/runner-contract.md): reading an --observations file
(exactly one observation per planned case, trial and arm) and resuming from a --record file
(written by record_writer.py). The runner-contract object each line holds is parsed in
observations.py.

Decisions (documented in docs/runner-contract.md):

- A later record of a key that is the earlier one with judge verdicts added replaces it (a
  pairwise ``with`` observation is written when it completes and again once its pair is judged).
- ``--resume`` keeps the first record of a key (later duplicates are ignored) and ignores records
  whose trial is outside 1..--trials (so lowering --trials keeps working).
- Only valid observations are recorded; a runner failure is never written to a --record file, so
  ``--resume`` runs it again instead of treating it as a success.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from ..errors import InvalidInput
from ..suite.cases import MAX_ID_CHARS, CaseSuite
from .gc_pause import gc_paused
from .observations import (
    ARMS,
    MAX_TRIALS,
    VARIANTS,
    Key,
    Observation,
    RunnerFailure,
    Variant,
    breach_failure,
)
from .record_lines import (
    checks_problem,
    line_key,
    record_key,
    record_observation,
    valid_observation,
)

_ARM_INDEX = {"with": 0, "without": 1, "baseline": 2}


def _show_id(case_id: str) -> str:
    """A case id for a message, cut to the longest valid id (an unknown one may be huge)."""
    if len(case_id) > MAX_ID_CHARS:
        return repr(case_id[:MAX_ID_CHARS]) + "…"
    return repr(case_id)


def _describe(key: tuple[str, int, str]) -> str:
    case_id, trial, variant = key
    return f"caseId {_show_id(case_id)} trial {trial} variant {variant!r}"


def load_observations(
    path: Path,
    suite: CaseSuite,
    trials: int,
    skill_name: str,
    planned: Sequence[Key] | None = None,
    baseline: bool = False,
) -> tuple[list[Observation], list[RunnerFailure]]:
    """Read an --observations file: exactly one per planned (case, trial, arm).

    ``planned``: the keys the run's arms need (default: every case × trial × with, without).
    A record of a known case, trial and arm the plan does not need (e.g. a ``without`` run of a
    case the isolation spot-check left out) is ignored; ``baseline`` records need
    ``baseline`` (a --baseline DIR). Duplicate/missing/extra/unknown caseId → InvalidInput
    (exit 5) naming the key (the whole file is checked first). A ``without`` observation listing
    ``skill_name`` is returned as a RunnerFailure "isolation breach" (the evaluation then exits
    7), not as an observation. Both lists come back in plan order (case-file order, trial, arm:
    with, without, baseline)."""
    from ..suite.jsonl import check_regular_file

    check_regular_file(path, "--observations")
    keys = plan_keys(suite, trials) if planned is None else planned
    with gc_paused():
        return _load_observations(path, suite, trials, skill_name, keys, baseline)


def _load_observations(
    path: Path,
    suite: CaseSuite,
    trials: int,
    skill_name: str,
    planned: Sequence[Key],
    baseline: bool,
) -> tuple[list[Observation], list[RunnerFailure]]:
    from ..suite.jsonl import read_jsonl_values

    slots, wanted = _empty_slots(suite, trials, planned)
    arms_allowed = 3 if baseline else 2
    bound = len(suite.cases) * trials * arms_allowed + _reruns(suite, trials)
    cases = suite.by_id()
    # The cases whose observations must carry `checks`; the others are checked only when
    # they carry some (one set lookup per line instead of a call).
    # Cases whose verdicts need what only the run saw: workspace checks, files shown a judge.
    workspace_cases = {
        c.id for c in suite.cases if c.task is not None and (c.task.workspace or c.task.judge_files)
    }
    filled = 0
    # The record just past the bound is still read: when it is reached, every key already has
    # its observation, so it is a duplicate, an extra trial or an unknown caseId, and that error
    # names the key. Reading stops there either way.
    for line, value in read_jsonl_values(path, max_records=bound + 1):
        # The fast path's Observation carries its key; a declined line is read the careful way.
        observation = valid_observation(value)
        if observation is not None:
            case_id, trial, arm = observation.case_id, observation.trial, observation.variant
        else:
            case_id, trial, arm = record_key(path, line, value)
        row = slots.get(case_id)
        if row is None or not 1 <= trial <= trials or (arm == "baseline" and not baseline):
            raise _key_error(f"{path}:{line}", suite, trials, (case_id, trial, arm))
        index = 3 * trial - 3 + _ARM_INDEX[arm]
        found, lines, needed = row
        if observation is None:
            observation = record_observation(path, line, value, (case_id, trial, arm))
        earlier = found[index]
        if earlier is not None:
            if completes(earlier, observation):
                found[index] = observation  # the same observation with its pairwise verdicts
                continue
            raise InvalidInput(
                f"{path}:{line}: duplicate observation {_describe((case_id, trial, arm))} "
                f"(first on line {lines[index]})"
            )
        if observation.checks is not None or case_id in workspace_cases:
            problem = checks_problem(observation, cases[case_id])
            if problem is not None:
                raise InvalidInput(f"{path}:{line}: {_describe((case_id, trial, arm))}: {problem}")
        found[index] = observation
        lines[index] = line
        if needed[index]:
            filled += 1
    if filled != len(planned):
        raise _missing_error(path, suite, trials, slots, wanted, planned)
    return _planned_outcomes(suite, slots, wanted, skill_name)


def _key_error(where: str, suite: CaseSuite, trials: int, key: Key) -> InvalidInput:
    """The error of a record whose key the run cannot take: an unknown caseId, a trial past
    --trials or a baseline arm without --baseline (in that order)."""
    case_id, trial, _ = key
    if case_id not in suite.by_id():
        return InvalidInput(f"{where}: unknown caseId {_show_id(case_id)} (not in {suite.path})")
    if not 1 <= trial <= trials:
        return InvalidInput(
            f"{where}: extra observation {_describe(key)}: trial must be 1..{trials} "
            f"(--trials {trials})"
        )
    return InvalidInput(
        f"{where}: {_describe(key)}: a baseline observation needs --baseline DIR (the skill "
        "version it was run with)"
    )


def _reruns(suite: CaseSuite, trials: int) -> int:
    """How many records may repeat a key: each pairwise case's with observation, per trial."""
    return trials * sum(1 for c in suite.cases if c.task is not None and c.task.pairwise)


def completes(earlier: Observation, later: Observation) -> bool:
    """Whether ``later`` is ``earlier`` again with judge verdicts added: a pairwise ``with``
    observation is recorded when it completes, and once more when its pair is judged."""
    return bool(later.judged) and dataclasses.replace(later, judged=earlier.judged) == earlier


# Per case, slot 3 × (trial - 1) + (0 with, 1 without, 2 baseline) holds that observation and,
# in a parallel list, its line: plan order without building and hashing a key per line.
_Slots = dict[str, tuple[list[Observation | None], list[int], list[bool]]]


def _empty_slots(
    suite: CaseSuite, trials: int, planned: Sequence[Key]
) -> tuple[_Slots, dict[str, list[bool]]]:
    """Empty slots for every case, and per case which slots the plan wants."""
    width = 3 * trials
    wanted: dict[str, list[bool]] = {case.id: [False] * width for case in suite.cases}
    for case_id, trial, arm in planned:
        wanted[case_id][3 * trial - 3 + _ARM_INDEX[arm]] = True
    # The third list is the case's row of ``wanted`` (the same list), at hand in the hot loop.
    slots: _Slots = {c.id: ([None] * width, [0] * width, wanted[c.id]) for c in suite.cases}
    return slots, wanted


def _missing_error(
    path: Path,
    suite: CaseSuite,
    trials: int,
    slots: _Slots,
    wanted: dict[str, list[bool]],
    planned: Sequence[Key],
) -> InvalidInput:
    """The error naming the first planned key without an observation (and how many more)."""
    missing = [
        (case.id, index // 3 + 1, ARMS[index % 3])
        for case in suite.cases
        for index, observation in enumerate(slots[case.id][0])
        if observation is None and wanted[case.id][index]
    ]
    more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
    arms = sorted({arm for _, _, arm in planned}, key=_ARM_INDEX.__getitem__)
    return InvalidInput(
        f"{path}: missing observation {_describe(missing[0])}{more}; every case × trial "
        f"1..{trials} × variant ({', '.join(arms)}) needs exactly one"
    )


def _planned_outcomes(
    suite: CaseSuite, slots: _Slots, wanted: dict[str, list[bool]], skill_name: str
) -> tuple[list[Observation], list[RunnerFailure]]:
    """The planned observations in plan order, a ``without`` one listing the tested skill as
    its isolation-breach failure."""
    observations: list[Observation] = []
    failures: list[RunnerFailure] = []
    for case in suite.cases:
        needed = wanted[case.id]
        for index, observation in enumerate(slots[case.id][0]):
            if not needed[index]:
                continue  # not in the plan (or absent): not scored
            assert observation is not None  # every planned slot is filled (checked above)
            if observation.variant == "without" and skill_name in observation.invoked_skills:
                failures.append(breach_failure(observation, skill_name))
            else:
                observations.append(observation)
    return observations, failures


def load_recorded(
    path: Path, suite: CaseSuite, trials: int, planned: Sequence[Key] | None = None
) -> list[Observation]:
    """Read a --resume file: keep observations matching current cases, trials and the planned
    keys (default: every case × trial × with, without; missing ones are fine; later duplicates
    of a key are ignored; trials outside 1..``trials`` and keys outside the plan are ignored;
    a record whose ``checks`` do not fit its case's task is ignored, so it runs again).
    Unknown caseId → InvalidInput (exit 5). Returned in plan order."""
    from ..suite.jsonl import check_regular_file, read_jsonl_values

    check_regular_file(path, "--resume")
    case_ids = suite.by_id()
    found: dict[tuple[str, int, str], Observation] = {}
    # Bound by the largest --trials so that a file recorded with more trials still resumes.
    most = max(trials, MAX_TRIALS)
    bound = len(suite.cases) * most * len(ARMS) + _reruns(suite, most)
    for line, value in read_jsonl_values(path, max_records=bound):
        observation, key = line_key(path, line, value)
        if key[0] not in case_ids:
            raise InvalidInput(
                f"{path}:{line}: unknown caseId {_show_id(key[0])} (not in {suite.path}); "
                "resume only with the case file the observations were recorded for"
            )
        if observation is None:
            observation = record_observation(path, line, value, key)
        if not 1 <= key[1] <= trials:
            continue
        if key in found:
            if completes(found[key], observation):
                found[key] = observation  # the same observation with its pairwise verdicts
            continue
        if checks_problem(observation, case_ids[key[0]]) is not None:
            continue  # recorded for other checks (or before they were): run it again
        found[key] = observation
    keys = plan_keys(suite, trials) if planned is None else planned
    return [found[k] for k in keys if k in found]


def plan_keys(
    suite: CaseSuite, trials: int, variants: tuple[Variant, ...] = VARIANTS
) -> list[tuple[str, int, Variant]]:
    """Every (caseId, trial, variant) in plan order: case-file order, trial, with before without.

    ``variants``: the arms that run (routing runs only ``with``: the whole catalog installed)."""
    return [
        (case.id, trial, variant)
        for case in suite.cases
        for trial in range(1, trials + 1)
        for variant in variants
    ]
