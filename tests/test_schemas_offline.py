"""The shipped JSON Schemas resolve offline: every reference to another schema is relative and
lands on a schema embedded in the same file, and check-jsonschema validates real reports with
the packaged files while the network is unreachable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest

from skill_evals.schemas import bundle

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SHIPPED = sorted(
    entry.name
    for entry in resources.files("skill_evals.schemas").iterdir()
    if entry.name.endswith(".schema.json")
)


def _packaged(name: str) -> Path:
    return Path(str(resources.files("skill_evals.schemas").joinpath(name)))


def test_the_bundle_is_current() -> None:
    assert _packaged(bundle.BUNDLED).read_text(encoding="utf-8") == bundle.bundled_text(), (
        "ci-report.schema.json is stale: run python -m skill_evals.schemas.bundle"
    )


def _refs(node: Any, base: str) -> Iterator[tuple[str, str]]:
    """(base URI in force, $ref) for every reference, walking with an explicit stack."""
    stack = [(node, base)]
    while stack:
        item, here = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("$id"), str):
                here = urljoin(here, item["$id"])
            if isinstance(item.get("$ref"), str):
                yield here, item["$ref"]
            stack.extend((value, here) for value in item.values())
        elif isinstance(item, list):
            stack.extend((value, here) for value in item)


def _embedded_ids(schema: dict[str, Any]) -> set[str]:
    return {
        str(value["$id"])
        for value in schema.get("$defs", {}).values()
        if isinstance(value, dict) and "$id" in value
    }


@pytest.mark.parametrize("name", SHIPPED)
def test_every_reference_resolves_inside_its_file(name: str) -> None:
    schema = json.loads(_packaged(name).read_text(encoding="utf-8"))
    own = str(schema["$id"])
    known = {own, *_embedded_ids(schema)}
    for base, ref in _refs(schema, own):
        if ref.startswith("#"):
            continue
        assert not urlsplit(ref).scheme, f"{name}: $ref {ref} is absolute"
        target = urljoin(base, ref).split("#")[0]
        assert target in known, f"{name}: $ref {ref} resolves to {target}, not embedded"
    if name == bundle.BUNDLED:
        assert len(known) == 3  # its own and the two report schemas


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real reports of the bundled example: a CI run, a test run and a routing run."""
    root = tmp_path_factory.mktemp("schemas")
    shutil.copytree(REPO / "examples", root / "examples")
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "TMPDIR": str(root), "LANG": "C.UTF-8"}
    tool = str(BIN / "skill-evals")
    runner = "skill-evals runner simulated"
    subprocess.run(
        [tool, "ci", "--config", "examples/.skill-evals.yml", "--all", "--out", "ci-out"],
        cwd=root,
        env=env,
        capture_output=True,
        timeout=300,
        check=True,
    )
    skill = "examples/skills/refund-policy"
    subprocess.run(
        [
            tool,
            "test",
            "--skill",
            skill,
            "--cases",
            f"{skill}/evals/cases.jsonl",
            "--runner",
            runner,
            "--trials",
            "1",
            "--report",
            "test.json",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        timeout=300,
        check=True,
    )
    subprocess.run(
        [tool, "route", "--catalog", "examples/skills/*", "--cases",
         "examples/evals/routing.jsonl", "--runner", runner, "--trials", "1",
         "--report", "route.json"],
        cwd=root, env=env, capture_output=True, timeout=300, check=True,
    )  # fmt: skip
    return {
        "ci-report.schema.json": root / "ci-out" / "report.json",
        "report.schema.json": root / "test.json",
        "route-report.schema.json": root / "route.json",
    }


def _offline(argv: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in a new network namespace (only a down loopback: nothing is reachable),
    with a private home so no schema cache from an earlier run can answer."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(home), "XDG_CACHE_HOME": str(home)}
    prefix = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    return subprocess.run([*prefix, *argv], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "schema", ["ci-report.schema.json", "report.schema.json", "route-report.schema.json"]
)
def test_check_jsonschema_validates_reports_offline(
    schema: str, reports: dict[str, Path], tmp_path: Path
) -> None:
    checker = str(BIN / "check-jsonschema")
    done = _offline(
        [checker, "--no-cache", "--schemafile", str(_packaged(schema)), str(reports[schema])],
        tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "validation done" in done.stdout


def test_a_remote_reference_fails_there(reports: dict[str, Path], tmp_path: Path) -> None:
    """The control: the same offline call cannot fetch a schema by its https $id, so the passes
    above come from the bundle, not from the network."""
    unbundled = json.loads(_packaged(bundle.BUNDLED).read_text(encoding="utf-8"))
    for key in bundle.EMBEDDED:
        del unbundled["$defs"][key]
    path = tmp_path / "unbundled.schema.json"
    path.write_text(json.dumps(unbundled), encoding="utf-8")
    checker = str(BIN / "check-jsonschema")
    done = _offline(
        [checker, "--no-cache", "--schemafile", str(path), str(reports[bundle.BUNDLED])],
        tmp_path,
    )
    assert done.returncode != 0
