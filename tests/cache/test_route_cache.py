"""`skill-evals route --cache`: the whole catalog is the offered version, so an unchanged
catalog re-runs nothing and a change to any of its skills re-runs every case."""

from __future__ import annotations

import json
from pathlib import Path

from tests._route_helpers import make_catalog, route_cases, route_json

SIMULATED = "skill-evals runner simulated"


def test_route_reuses_the_cache_while_the_catalog_is_unchanged(tmp_path: Path) -> None:
    skills = make_catalog(tmp_path)
    cases = route_cases(tmp_path / "route.jsonl", {"a": ["alpha"], "b": ["beta"]})
    argv = ["--cases", str(cases), "--runner", SIMULATED, "--trials", "1",
            "--cache", str(tmp_path / "cache")]  # fmt: skip
    for skill in skills:
        argv += ["--skill", str(skill)]
    _, first, _ = route_json(argv)
    assert first["runner"]["invocations"] == 10
    assert [(m["reason"], m["count"]) for m in first["runner"]["cacheMisses"]] == [("new", 10)]
    _, second, _ = route_json(argv)
    assert second["runner"]["invocations"] == 0
    assert second["runner"]["cacheMisses"] == []
    assert "cache: 10 of 10 reused" in second["messages"]
    assert second["accuracy"] == first["accuracy"]
    assert any("reused from the cache" in m for m in second["messages"])
    assert list((tmp_path / "cache" / "%25routing").glob("*.jsonl"))
    (skills[2] / "SKILL.md").write_text(
        (skills[2] / "SKILL.md").read_text("utf-8") + "\nMore.\n", encoding="utf-8"
    )
    _, third, _ = route_json(argv)
    assert third["runner"]["invocations"] == 10  # another catalog: every case runs again
    assert [(m["reason"], m["count"]) for m in third["runner"]["cacheMisses"]] == [("skill", 10)]
    record = tmp_path / "record.jsonl"
    _, fourth, _ = route_json([*argv, "--record", str(record)])
    assert fourth["runner"]["invocations"] == 0
    lines = record.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 10 and all(json.loads(line)["cached"] for line in lines)
