"""The variables no child of the engine ever gets, in every sandbox mode and with any runner:
the job's GitHub token and the files and endpoints through which a process could act on the
job's later steps (docs/sandbox.md). The engine itself keeps them (its own outputs, summary
and comment work as before).
"""

from __future__ import annotations

from collections.abc import Mapping

WITHHELD = frozenset(
    {
        "GITHUB_TOKEN", "GH_TOKEN", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT",
        "GITHUB_STEP_SUMMARY", "GITHUB_STATE", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_RUNTIME_URL",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_CACHE_URL",
        "ACTIONS_RESULTS_URL",
    }
)  # fmt: skip


def without_job_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the :data:`WITHHELD` variables."""
    return {name: value for name, value in env.items() if name not in WITHHELD}
