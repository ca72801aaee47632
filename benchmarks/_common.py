"""Helpers shared by the benchmark scripts: timing, a verdict line, temporary fixtures."""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))


def median_seconds(func: Callable[[], object], repeat: int = 3) -> float:
    """Median wall time of ``repeat`` calls of ``func``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def verdict(name: str, measured: float, baseline: float, target: float, unit: str = "s") -> bool:
    """Print one line: the figure, its baseline, the ratio and whether it meets the target ratio.

    Returns True when measured / baseline <= target."""
    ratio = measured / baseline if baseline > 0 else float("inf")
    ok = ratio <= target
    print(
        f"{name}: {measured:.4f}{unit} vs baseline {baseline:.4f}{unit} → ratio {ratio:.2f} "
        f"(target ≤ {target:g}) {'PASS' if ok else 'FAIL'}"
    )
    print(
        "BENCH "
        + json.dumps(
            {
                "name": name,
                "measured": measured,
                "baseline": baseline,
                "ratio": ratio,
                "target": target,
                "pass": ok,
            }
        )
    )
    return ok


def write_skill(root: Path, name: str = "bench-skill") -> Path:
    """A minimal skill folder."""
    skill = root / name
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Benchmark skill about refunds and returns.\n---\n"
        "# Bench\n\nRefunds within 30 days.\n",
        encoding="utf-8",
    )
    return skill


def write_cases(path: Path, count: int, task: bool = True) -> Path:
    """``count`` distinct cases, every one with an exit_code task check unless ``task`` is off
    (trigger-only cases)."""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(count):
            case: dict[str, object] = {
                "id": f"case-{i}",
                "prompt": f"Can I return item {i} for a refund?",
                "expectTrigger": i % 2 == 0,
            }
            if task:
                case["task"] = {"check": "exit_code", "expected": 0}
            fh.write(json.dumps(case) + "\n")
    return path
