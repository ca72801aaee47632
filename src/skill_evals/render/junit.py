"""JUnit XML via junitparser (SPEC §3 JUnit rules), for one or many skill reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def render_junit(suites: Sequence[tuple[str, dict[str, Any] | None, str | None]]) -> str:
    """``suites``: (skill name, §1.7 report or None, skip reason or None) per skill.

    <testsuites name="skill-evals"> → one <testsuite> per skill with properties (hashes, trials,
    seed, thresholds) → testcases ``trigger[<case id>]``, ``uplift``, ``loading[<case id>]`` on
    violation. Gate failures are <failure>, runner failures <error>, skipped skills <skipped>;
    ``time`` always present."""
    raise NotImplementedError
