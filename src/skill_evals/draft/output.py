"""Writing a drafted suite: the whole file checked by the case file's parser first (in a
temporary file beside it), never overwriting a file that exists unless it is ``--append``'s,
whose bytes are kept as they were."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InsufficientUnits, InvalidInput
from ..plan.lint import MIN_LABEL_UNITS
from ..suite.cases import CaseSuite, load_cases
from .accept import jsonl


def _require_units(shown: str, suite: CaseSuite, min_units: int) -> None:
    """Exit 6 unless the file holds ``min_units`` independent cases and lint's minimum of each
    label: a suite without should-not cases (or should-trigger ones) gates nothing."""
    if suite.unit_count < min_units:
        raise InsufficientUnits(
            f"{shown}: only {suite.unit_count} independent case(s) were drafted, at least "
            f"{min_units} are needed; nothing was written: raise --count, or draft again"
        )
    labels: dict[int, bool] = {}
    for case in suite.cases:
        labels.setdefault(case.unit, case.expect_trigger)
    for label, word in ((True, "true"), (False, "false")):
        count = sum(1 for value in labels.values() if value is label)
        if count < MIN_LABEL_UNITS:
            raise InsufficientUnits(
                f"{shown}: only {count} independent case(s) with expectTrigger {word} were "
                f"drafted, at least {MIN_LABEL_UNITS} are needed; nothing was written: draft "
                "again (see dropped), or with another drafter"
            )


def write_suite(
    out: Path,
    before: bytes,
    cases: Sequence[Mapping[str, Any]],
    skill_name: str,
    min_units: int,
    *,
    replace: bool,
    shown: str | None = None,
) -> CaseSuite:
    """Write ``before`` + ``cases`` to ``out`` (``replace``: the ``--append`` file read into
    ``before``) and return the suite read back. Exit 6 (nothing
    written) when no case was kept, the file would hold fewer than ``min_units`` units, or
    fewer than lint's minimum of either label. ``shown``: how messages name ``out`` (default:
    as given)."""
    shown = str(out) if shown is None else shown
    if not cases:
        raise InsufficientUnits(
            f"{shown}: the drafter gave no usable case; nothing was written (see dropped)"
        )
    if before and not before.endswith(b"\n"):
        before += b"\n"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=".draft-", suffix=".jsonl", dir=out.parent)
    except OSError as exc:
        raise InvalidInput(f"--out {shown}: cannot write there ({exc.strerror})") from None
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(before + jsonl(cases))
        _require_units(shown, load_cases(temporary, skill_name), min_units)
        if replace:
            os.replace(temporary, out)  # --append: the file was read and is kept as it was
        else:
            try:
                os.link(temporary, out)  # fails when out appeared meanwhile: never overwritten
            except FileExistsError:
                raise InvalidInput(
                    f"--out {shown}: the file exists and is never overwritten; pass --append"
                ) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
    return load_cases(out, skill_name)
