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
from ..suite.cases import CaseSuite, load_cases
from .accept import jsonl


def write_suite(
    out: Path,
    before: bytes,
    cases: Sequence[Mapping[str, Any]],
    skill_name: str,
    min_units: int,
    *,
    replace: bool,
) -> CaseSuite:
    """Write ``before`` + ``cases`` to ``out`` (``replace``: the ``--append`` file read into
    ``before``) and return the suite read back. Exit 6 (nothing
    written) when no case was kept or the file would hold fewer than ``min_units`` units."""
    if not cases:
        raise InsufficientUnits(
            f"{out}: the drafter gave no usable case; nothing was written (see dropped)"
        )
    if before and not before.endswith(b"\n"):
        before += b"\n"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=".draft-", suffix=".jsonl", dir=out.parent)
    except OSError as exc:
        raise InvalidInput(f"--out {out}: cannot write there ({exc.strerror})") from None
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(before + jsonl(cases))
        units = load_cases(temporary, skill_name).unit_count
        if units < min_units:
            raise InsufficientUnits(
                f"{out}: only {units} independent case(s) were drafted, at least {min_units} "
                "are needed; nothing was written: raise --count, or draft again"
            )
        if replace:
            os.replace(temporary, out)  # --append: the file was read and is kept as it was
        else:
            try:
                os.link(temporary, out)  # fails when out appeared meanwhile: never overwritten
            except FileExistsError:
                raise InvalidInput(
                    f"--out {out}: the file exists and is never overwritten; pass --append"
                ) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
    return load_cases(out, skill_name)
