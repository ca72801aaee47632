"""One entry point for every output format of a route report."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def render_route(report: Mapping[str, Any], fmt: str) -> str:
    """``report`` as ``text``, ``json``, ``markdown``, ``junit`` or ``html``."""
    if fmt == "json":
        from .json import render_json

        return render_json(dict(report))
    if fmt == "markdown":
        from .route_markdown import render_route_markdown

        return render_route_markdown(report)
    if fmt == "junit":
        from .route_junit import render_route_junit

        return render_route_junit(report)
    if fmt == "html":
        from .route_html import render_route_html

        return render_route_html(report)
    if fmt == "text":
        from .route_text import render_route_text

        return render_route_text(report)
    raise ValueError(f"unknown format {fmt!r}")
