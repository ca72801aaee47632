"""`--cache DIR` and `--cache-max-age AGE` (docs/cost.md): the click options shared by `test`
and `route`, and their translation into CacheSettings."""

from __future__ import annotations

from typing import Any

from .common import fail
from .options import compose, option

cache_options = compose(
    [
        option(
            "--cache",
            "cache_dir",
            help="Reuse valid observations stored in DIR by earlier runs of the same runner, "
            "skill version and case, and store new ones there (docs/cost.md). Default: no "
            "cache.",
        ),
        option(
            "--cache-max-age",
            default="7d",
            help="Do not reuse cache entries older than AGE: e.g. 30m, 12h, 7d; 0 = never "
            "reuse (new observations are still stored). Default: 7d.",
        ),
    ]
)
"""Add --cache and --cache-max-age to a click command (keyword arguments cache_dir and
cache_max_age)."""


def cache_settings(values: dict[str, Any]) -> Any:
    """Take the two options out of ``values`` and return CacheSettings, or None without
    --cache; a malformed --cache-max-age exits 5."""
    from ..cache.settings import CacheSettings, parse_max_age
    from ..errors import InvalidInput

    directory = values.pop("cache_dir", None)
    text = values.pop("cache_max_age", "7d")
    try:
        max_age = parse_max_age(text)
    except InvalidInput as exc:
        fail(str(exc))
    return None if directory is None else CacheSettings(directory, max_age)
