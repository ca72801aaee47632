"""Bundling: the CI report's schema carries the schemas it refers to.

``ci-report.schema.json`` refers to the test report's and the routing report's schemas by
relative ``$ref``s (``report.schema.json``, ``route-report.schema.json``), which resolve against
its ``$id`` to the ``$id``s of those schemas. Embedding both under its ``$defs`` makes every
reference resolvable from the one file, so an offline validator (``check-jsonschema
--schemafile``) needs no network. The standalone files stay the source; this module rewrites
the embedded copies from them.

    python -m skill_evals.schemas.bundle           # rewrite ci-report.schema.json
    python -m skill_evals.schemas.bundle --check   # exit 1 when the copies are stale
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BUNDLED = "ci-report.schema.json"
# The key under the bundle's $defs for each embedded schema file.
EMBEDDED = {"report": "report.schema.json", "routeReport": "route-report.schema.json"}


def _read(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((HERE / name).read_text(encoding="utf-8"))
    return value


def bundled_schema() -> dict[str, Any]:
    """ci-report.schema.json with fresh embedded copies of the schemas it refers to (what the
    engine validates with, so a stale copy in the file can never reject a valid report)."""
    schema = _read(BUNDLED)
    defs = schema.setdefault("$defs", {})
    for key, name in EMBEDDED.items():
        defs[key] = _read(name)
    return schema


def bundled_text() -> str:
    """The text ci-report.schema.json should have."""
    return json.dumps(bundled_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    """Rewrite the bundle, or with ``--check`` only say whether it is current."""
    path = HERE / BUNDLED
    wanted = bundled_text()
    if argv == ["--check"]:
        if path.read_text(encoding="utf-8") != wanted:
            print(f"{path}: stale; run python -m skill_evals.schemas.bundle", file=sys.stderr)
            return 1
        return 0
    if argv:
        print("usage: python -m skill_evals.schemas.bundle [--check]", file=sys.stderr)
        return 2
    path.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
