"""A built-in drafter (``skill-evals draft anthropic|openai``) whose key variable is unset in the
caller's environment is refused before anything starts, naming the variable."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from ..agents.model_judges import PROVIDERS


def _builtin_args(argv: Sequence[str]) -> Sequence[str] | None:
    """The arguments after ``skill-evals`` (or ``python -m skill_evals``), else None."""
    if not argv:
        return None
    program = os.path.basename(argv[0])
    if program == "skill-evals":
        return argv[1:]
    if program.startswith("python") and list(argv[1:3]) == ["-m", "skill_evals"]:
        return argv[3:]
    return None


def missing_key(argv: Sequence[str], env: Mapping[str, str]) -> tuple[str, str] | None:
    """(provider, key variable) of a built-in drafter ``argv`` whose key ``env`` lacks, else
    None."""
    args = _builtin_args(argv)
    if args is None or len(args) < 2 or args[0] != "draft" or args[1] not in PROVIDERS:
        return None
    variable = PROVIDERS[args[1]].key_var
    return None if env.get(variable) else (args[1], variable)
