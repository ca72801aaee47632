"""What the sandbox adds per invocation: goal ≤ 30 ms.

40 invocations (20 cases × with/without, one at a time) of `skill-evals runner simulated`
through the engine, once sandboxed in bubblewrap with the credential proxy on and once with
`--sandbox off`; after a warm-up of each. Prints the added milliseconds per invocation and the
ratio of the two runs (the verdict line compares the added milliseconds with the 30 ms goal).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import verdict

from skill_evals.run.execute import ExecutionPlan, execute
from skill_evals.sandbox.credential_proxy import Credential
from skill_evals.sandbox.probe import SandboxChoice
from skill_evals.suite.cases import Case, CaseSuite

CASES = 20
GOAL_MS = 30.0


def _plan(root: Path, mode: str) -> ExecutionPlan:
    skill = root / "refund-policy"
    skill.mkdir(exist_ok=True)
    (skill / "SKILL.md").write_text(
        "---\nname: refund-policy\ndescription: Refunds and returns with a receipt.\n---\n"
        "# Refunds\n\nWithin 30 days with a receipt.\n"
    )
    cases = tuple(
        Case(id=f"c{i}", prompt=f"Can I get a refund {i}?", expect_trigger=True, line=i + 1,
             unit=i)
        for i in range(CASES)
    )  # fmt: skip
    suite = CaseSuite(path=root / "cases.jsonl", sha256="0" * 64, cases=cases, unit_count=CASES)
    # A proxied key (never used by the simulation): the proxy's start and stop are counted.
    key = Credential("BENCH_API_KEY", "x-api-key", "http://127.0.0.1:9", None, "not-a-key")
    return ExecutionPlan(
        command=[sys.executable, "-m", "skill_evals", "runner", "simulated"],
        suite=suite,
        skill_name="refund-policy",
        skill_dir=skill,
        trials=1,
        jobs=1,
        timeout_ms=30_000,
        max_bytes=1_000_000,
        sandbox=SandboxChoice(mode),
        credentials=(key,) if mode != "off" else (),
    )


def _seconds(root: Path, mode: str) -> float:
    start = time.perf_counter()
    result = execute(_plan(root, mode))
    elapsed = time.perf_counter() - start
    assert not result.failures, result.failures[:1]
    if mode != "off":
        assert result.sandbox is not None and result.sandbox["mode"] == "bwrap", result.sandbox
    return elapsed


def main() -> int:
    if shutil.which("bwrap") is None or not sys.platform.startswith("linux"):
        print("bwrap not found: install bubblewrap (apt-get install -y bubblewrap)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _seconds(root, "off")  # warm-up: page cache, interpreter
        _seconds(root, "required")
        off = _seconds(root, "off")
        sandboxed = _seconds(root, "required")
    invocations = CASES * 2
    added_ms = max(0.0, (sandboxed - off) * 1000 / invocations)
    print(
        f"off: {off * 1000 / invocations:.1f} ms/invocation; sandboxed with the proxy: "
        f"{sandboxed * 1000 / invocations:.1f} ms/invocation; added {added_ms:.1f} ms "
        f"(ratio {sandboxed / off:.2f})"
    )
    return 0 if verdict("sandbox cost per invocation", added_ms, GOAL_MS, 1.0, unit="ms") else 1


if __name__ == "__main__":
    sys.exit(main())
