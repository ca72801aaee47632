"""What the sandbox costs per invocation, and whether that cost stays flat through a long run.

1. Flat cost: 2,000 invocations (1,000 cases × with/without) of a tiny shell runner at
   ``--jobs 8``, sandboxed with the contained network and the credential proxy on; prints the
   mean interval between consecutive invocation completions over the last 200 divided by the
   same over the first 200 (goal ≤ 1.2: nothing piles up, no zombie, no leaked channel).
2. Added CPU: 200 invocations one at a time, sandboxed and with ``--sandbox off``; prints the
   CPU (engine and children, user + system) added per invocation (goal ≤ 15 ms).

The runner is ``/bin/sh`` printing its answer, so the figures are the engine's and the
sandbox's own, not an agent's. Usage: ``python benchmarks/bench_sandbox.py [INVOCATIONS]``.
"""

from __future__ import annotations

import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import verdict

from skill_evals.run.execute import ExecutionPlan, execute
from skill_evals.run.progress_types import Progress
from skill_evals.sandbox.credential_proxy import Credential
from skill_evals.sandbox.probe import SandboxChoice
from skill_evals.suite.cases import Case, CaseSuite

RUNNER = (
    'cat >/dev/null; printf \'{"variant": "%s", "invokedSkills": [], "output": "ok", '
    '"exitCode": 0}\\n\' "$EVALGATE_SKILL_VARIANT"'
)
FLAT_GOAL = 1.2
CPU_GOAL_MS = 15.0
WINDOW = 200


def _plan(root: Path, mode: str, cases: int, jobs: int) -> ExecutionPlan:
    skill = root / "refund-policy"
    skill.mkdir(exist_ok=True)
    (skill / "SKILL.md").write_text(
        "---\nname: refund-policy\ndescription: Refunds and returns with a receipt.\n---\n"
        "# Refunds\n\nWithin 30 days with a receipt.\n"
    )
    made = tuple(
        Case(id=f"c{i}", prompt=f"Can I get a refund {i}?", expect_trigger=True, line=i + 1,
             unit=i)
        for i in range(cases)
    )  # fmt: skip
    suite = CaseSuite(path=root / "cases.jsonl", sha256="0" * 64, cases=made, unit_count=cases)
    # A proxied key (never used by the runner): the proxy's start and stop are counted.
    key = Credential("BENCH_API_KEY", "x-api-key", "http://127.0.0.1:9", None, "not-a-key")
    return ExecutionPlan(
        command=["/bin/sh", "-c", RUNNER],
        suite=suite,
        skill_name="refund-policy",
        skill_dir=skill,
        trials=1,
        jobs=jobs,
        timeout_ms=60_000,
        max_bytes=1_000_000,
        keep_going=True,
        sandbox=SandboxChoice(mode),
        credentials=(key,) if mode != "off" else (),
    )


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _run(root: Path, mode: str, cases: int, jobs: int) -> tuple[list[float], float]:
    """(completion times, CPU seconds) of one run."""
    done: list[float] = []

    def progress(event: Progress) -> None:
        done.append(time.perf_counter())

    before = _cpu()
    result = execute(_plan(root, mode, cases, jobs), progress)
    spent = _cpu() - before
    assert not result.failures, result.failures[:1]
    if mode != "off":
        assert result.sandbox is not None and result.sandbox["mode"] == "bwrap", result.sandbox
    return done, spent


def _mean_interval(times: list[float]) -> float:
    return (times[-1] - times[0]) / (len(times) - 1)


def main() -> int:
    if shutil.which("bwrap") is None or not sys.platform.startswith("linux"):
        print("bwrap not found: install bubblewrap (apt-get install -y bubblewrap)")
        return 1
    invocations = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _run(root, "required", 10, 2)  # warm-up: page cache, interpreter
        times, _ = _run(root, "required", invocations // 2, 8)
        first, last = _mean_interval(times[:WINDOW]), _mean_interval(times[-WINDOW:])
        print(
            f"{len(times)} sandboxed invocations at --jobs 8: {first * 1000:.1f} ms between "
            f"completions over the first {WINDOW}, {last * 1000:.1f} ms over the last {WINDOW}"
        )
        flat = verdict("last/first completion interval", last, first, FLAT_GOAL, unit="s")
        _, off = _run(root, "off", WINDOW // 2, 1)
        _, sandboxed = _run(root, "required", WINDOW // 2, 1)
    added_ms = max(0.0, (sandboxed - off) * 1000 / WINDOW)
    print(
        f"CPU per invocation: {off * 1000 / WINDOW:.1f} ms off, {sandboxed * 1000 / WINDOW:.1f} "
        f"ms sandboxed (contained network, relay, proxy): added {added_ms:.1f} ms"
    )
    cheap = verdict("sandbox CPU per invocation", added_ms, CPU_GOAL_MS, 1.0, unit="ms")
    return 0 if flat and cheap else 1


if __name__ == "__main__":
    sys.exit(main())
