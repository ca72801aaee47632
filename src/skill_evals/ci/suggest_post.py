"""Posting the accepted suggestions of a `ci` run as review comments (``--comment``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .console import Console
from .github_review import post_review
from .skill_runs import safe_file_name
from .suggest import SUGGESTIONS


def post_suggestions(
    ci_report: Mapping[str, Any], out: Path, env: Mapping[str, str], console: Console
) -> None:
    """With ``--comment``: each accepted suggestion as a review comment (when the PR's diff
    touches the description); what happened is said on stderr."""
    for skill in ci_report.get("skills") or []:
        found = skill.get("suggestion")
        if not isinstance(found, Mapping) or not found.get("accepted"):
            continue
        path = out / SUGGESTIONS / f"{safe_file_name(str(skill['name']))}.review.json"
        try:
            review = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        result = post_review(review, env)
        say = console.warning if result.action == "failed" else console.info
        say(f"{skill['name']}: {result.message}")
