"""Recorded routing observations (``route --observations FILE``, docs/routing.md).

One line per (caseId, trial) with the runner fields plus ``caseId`` and one-based ``trial``;
``variant`` is ``"with"`` (every routing invocation has the catalog installed). Exactly one per
case × trial 1..--trials: a duplicate, a missing one, an extra trial or an unknown caseId →
exit 5 naming the key and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..suite.cases import CaseSuite
from ..suite.jsonl import check_regular_file, describe_key, read_jsonl_values
from .network_records import split_network, with_network
from .observations import ContractError, Observation, parse_runner_object
from .record_lines import record_case_trial

_RECORD_KEYS = ("caseId", "trial")


def _show(case_id: str) -> str:
    return repr(case_id if len(case_id) <= 200 else case_id[:200] + "…")


def load_route_observations(path: Path, suite: CaseSuite, trials: int) -> list[Observation]:
    """Read the file; return the observations in plan order (case-file order, then trial)."""
    check_regular_file(path, "--observations")
    known = {case.id for case in suite.cases}
    found: dict[tuple[str, int], Observation] = {}
    lines: dict[tuple[str, int], int] = {}
    bound = len(suite.cases) * trials
    # One record past the bound is still read: it is then a duplicate, an extra trial or an
    # unknown case, and the error names it.
    for line, value in read_jsonl_values(path, max_records=bound + 1):
        case_id, trial = record_case_trial(path, line, value)
        if case_id not in known:
            raise InvalidInput(
                f"{path}:{line}: unknown caseId {_show(case_id)} (not in {suite.path})"
            )
        if not 1 <= trial <= trials:
            raise InvalidInput(
                f"{path}:{line}: extra observation caseId {_show(case_id)} trial {trial}: "
                f"trial must be 1..{trials} (--trials {trials})"
            )
        key = (case_id, trial)
        if key in found:
            raise InvalidInput(
                f"{path}:{line}: duplicate observation caseId {_show(case_id)} trial {trial} "
                f"(first on line {lines[key]})"
            )
        found[key] = _observation(path, line, value, case_id, trial)
        lines[key] = line
    _check_complete(path, suite, trials, found)
    return [found[(case.id, t)] for case in suite.cases for t in range(1, trials + 1)]


def _observation(
    path: Path, line: int, value: dict[str, Any], case_id: str, trial: int
) -> Observation:
    """The routing observation of one record (exit 5 for another variant or a runner field
    that breaks the contract)."""
    if value.get("variant") != "with":
        raise InvalidInput(
            f"{path}:{line}: key 'variant' must be \"with\" (a routing run has the whole "
            "catalog installed; there is no without variant)"
        )
    try:
        stripped, network = split_network(value)
        body = {k: v for k, v in stripped.items() if k not in _RECORD_KEYS}
        fields = parse_runner_object(body, "with")
    except ContractError as exc:
        named = describe_key(exc.key) if exc.key is not None else None
        where = f" ({named})" if named else ""
        raise InvalidInput(f"{path}:{line}: {exc}{where}") from None
    observation = Observation(
        case_id=case_id,
        trial=trial,
        variant="with",
        invoked_skills=fields["invoked_skills"],
        output=fields["output"],
        exit_code=fields["exit_code"],
        meta=fields["meta"],
        warnings=fields.get("warnings", ()),
    )
    return with_network(observation, network)


def _check_complete(
    path: Path, suite: CaseSuite, trials: int, found: dict[tuple[str, int], Observation]
) -> None:
    """Exit 5 naming the first case × trial without an observation."""
    missing = [
        (case.id, t)
        for case in suite.cases
        for t in range(1, trials + 1)
        if (case.id, t) not in found
    ]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        first_id, first_trial = missing[0]
        raise InvalidInput(
            f"{path}: missing observation caseId {_show(first_id)} trial {first_trial}{more}; "
            f"every case × trial 1..{trials} needs exactly one"
        )
