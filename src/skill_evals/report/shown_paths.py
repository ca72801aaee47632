"""How the outputs a reader sees (JUnit, HTML, Markdown, the PR comment) name a report's skill,
case file and baseline: from the repository's root in ``ci``, from the working directory in
``test`` — never the runner machine's folders. The JSON report keeps its fields as documented
(docs/report.md, "Paths in the outputs")."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .values import mapping

PATH_PROPERTIES = ("skill.path", "cases.path", "baseline.path")


def relative_to(path: object, root: str) -> str | None:
    """``path`` from ``root`` (``/`` separated; ``.`` for the root itself) when it lies inside
    it, literally or once both are resolved; None for any other path or value."""
    if not isinstance(path, str) or not path or not root:
        return None
    for top, where in ((root, path), (os.path.realpath(root), os.path.realpath(path))):
        top = top.rstrip("/") or "/"
        if where == top:
            return "."
        if where.startswith(top.rstrip("/") + "/"):
            return where[len(top.rstrip("/")) + 1 :]
    return None


def report_paths(report: Mapping[str, Any], root: str) -> dict[str, str]:
    """The path properties of ``report`` that lie inside ``root``, named from it."""
    found = {
        "skill.path": mapping(report.get("skill")).get("path"),
        "cases.path": mapping(report.get("cases")).get("path"),
        "baseline.path": mapping(report.get("baseline")).get("path"),
    }
    shown = {name: relative_to(path, root) for name, path in found.items()}
    return {name: path for name, path in shown.items() if path is not None}


def working_paths(report: Mapping[str, Any]) -> dict[str, str]:
    """``test``: the report's paths from the working directory (those inside it)."""
    return report_paths(report, os.getcwd())
