"""Parts of a report dict read the forgiving way, as every renderer reads them: a report read
back from a file may hold anything where an object or a list belongs, and a renderer shows what
it can rather than fail."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is an object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def mappings(value: Any) -> list[Mapping[str, Any]]:
    """The items of a report's list (null: none), each as :func:`mapping` reads it."""
    return [mapping(item) for item in value or []]


def confusion_matrix(report: Mapping[str, Any]) -> tuple[list[str], list[Any]]:
    """The report's confusion labels and rows of counts, both empty unless there are labels
    and one row per label."""
    confusion = mapping(report.get("confusion"))
    labels = [str(x) for x in confusion.get("labels") or []]
    counts = confusion.get("counts") or []
    if not labels or len(counts) != len(labels):
        return [], []
    return labels, counts
