"""`skill-evals improve` on a narrowed skill: does it find the real gain, and is its figure honest?

The project's own example skill (examples/improve/invoice-audit, its description narrowed to
invoices), 24 labelled queries (12 that should load it, 12 that should not) and a fresh set of
24 that `improve` never sees, all written below. The agent and the proposer are the offline
scripts of benchmarks/_improve_scripts.py: the agent loads the skill with a chance that grows
with the words the prompt shares with the description (seeded noise); the proposer alternates
overfit candidates (the missed prompts' words pasted in) with general rewrites. Per seed
(1–5) one `improve --trials 3 --rounds 3 --max-invocations 360` run through the CLI; the fresh
F1 of a description is its expected F1 on the fresh set under the agent's own chances (no
noise). Printed: mean fresh F1 of the original and of the accepted descriptions (the original
when nothing was accepted), runs accepted, runs that accepted a worse one, mean |reported −
fresh| gain (the reported gain is the held-out one, 0 when nothing was accepted) and
invocations. Goals: mean fresh F1 ≥ 0.57, accepted-worse 0 of 5, mean |reported − fresh| ≤
0.10, invocations ≤ 360 per run.

The 24 positives ask in six ways about four kinds of document. By default each seed deals them
at random (random.Random(K + seed), K = ``--drawn K``, 0 by default) into the labelled 12 and
the fresh 12, so the fresh set is drawn like the labelled one: what a held-out figure can
honestly stand for. With ``--shifted`` the labelled positives use three of the asks and the
fresh ones the other three: the fresh prompts ask in other words, so words pasted from the
labelled asks lift held-out but not fresh — a shift no figure measured on the labelled cases
can see (the printed error is then the shift's, not the estimate's).

Usage: python benchmarks/bench_improve.py [--seeds N] [--drawn K | --shifted]
"""

from __future__ import annotations

import json
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import REPO
from _improve_scripts import chance

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "_improve_scripts.py"
NARROW = "Audit supplier invoices - check totals and tax lines."
DOCS = ["invoice", "receipt", "billing statement", "card statement"]
# The labelled and the fresh positives ask in different words about the same documents: words
# pasted from the labelled prompts' asks do not carry over, the document kinds do.
ASKS = [
    "Check the {d} for a wrong total", "Are there duplicate charges on this {d}",
    "Find the missing refund on my {d}",
]  # fmt: skip
FRESH_ASKS = [
    "Verify the tax lines of the {d} from Acme", "Reconcile the {d} against the payment",
    "Which amounts on the {d} look doubled",
]  # fmt: skip
OTHER = [
    "Write a haiku about autumn rain", "What is the capital of Chile", "Plan a weekend hike",
    "Explain photosynthesis in simple words", "Translate good morning into Greek",
    "Suggest a name for a grey cat", "How do fridge magnets work", "Recommend a novel",
    "Summarise the plot of Hamlet", "Give me a pasta recipe", "What causes the tides",
    "Draft a birthday message for my aunt", "List three stretches for the back",
    "How far is the moon", "Tips to sleep better", "Teach me a chess opening",
    "Explain the rules of cricket", "What is a black hole", "Name the planets in order",
    "Write a limerick about a frog", "How do vaccines work", "Plan a picnic menu",
    "Describe a rainbow to a child", "What is the tallest mountain",
]  # fmt: skip
GOALS = {"fresh": 0.57, "worse": 0, "error": 0.10, "invocations": 360}


def queries(drawn: int | None = None) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """(the 24 labelled cases, the 24 fresh ones): 12 positives and 12 negatives each. With
    ``drawn``, the 24 positives of both sets are shuffled by random.Random(drawn) and dealt
    12 and 12, so the fresh set is drawn like the labelled one instead of asking otherwise."""
    labelled = [{"prompt": a.format(d=d), "expectTrigger": True} for a in ASKS for d in DOCS]
    fresh = [{"prompt": a.format(d=d), "expectTrigger": True} for a in FRESH_ASKS for d in DOCS]
    if drawn is not None:
        pool = labelled + fresh
        random.Random(drawn).shuffle(pool)
        labelled, fresh = pool[:12], pool[12:]
    for i, prompt in enumerate(OTHER):
        (labelled if i % 2 == 0 else fresh).append({"prompt": prompt, "expectTrigger": False})
    for n, case in enumerate(labelled):
        case["id"] = f"q{n}"
    return labelled, fresh


def fresh_f1(description: str, fresh: list[dict[str, object]]) -> float:
    """The expected F1 on the fresh set under the agent's chances."""
    tp = sum(chance(str(c["prompt"]), description) for c in fresh if c["expectTrigger"])
    fn = sum(1 - chance(str(c["prompt"]), description) for c in fresh if c["expectTrigger"])
    fp = sum(chance(str(c["prompt"]), description) for c in fresh if not c["expectTrigger"])
    return 2 * tp / (2 * tp + fp + fn)


def run_once(root: Path, seed: int, labelled: list[dict[str, object]]) -> dict[str, object]:
    """One improve run on the ``labelled`` cases: its JSON report."""
    skill = root / "invoice-audit"
    shutil.copytree(REPO / "examples" / "improve" / "invoice-audit", skill)
    text = (skill / "SKILL.md").read_text(encoding="utf-8")
    lines = [f"description: {NARROW}" if x.startswith("description:") else x
             for x in text.splitlines()]  # fmt: skip
    (skill / "SKILL.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in labelled))
    agent = shlex.join([sys.executable, str(SCRIPTS), "agent", str(seed)])
    proposer = shlex.join([sys.executable, str(SCRIPTS), "proposer", str(seed)])
    args = ["improve", "--skill", str(skill), "--cases", str(root / "cases.jsonl"),
            "--runner", agent, "--proposer", proposer, "--trials", "3", "--rounds", "3",
            "--max-invocations", "360", "--seed", str(seed), "--format", "json",
            "--jobs", "2"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", *args], cwd=root, capture_output=True, text=True,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}, check=False,
    )  # fmt: skip
    return dict(json.loads(done.stdout))


def main(argv: list[str]) -> int:
    seeds = int(argv[argv.index("--seeds") + 1]) if "--seeds" in argv else 5
    drawn = int(argv[argv.index("--drawn") + 1]) if "--drawn" in argv else 0
    shifted = "--shifted" in argv
    starts, finals, errors, worse, invocations, accepted_runs = [], [], [], 0, [], 0
    for seed in range(1, seeds + 1):
        labelled, fresh = queries(None if shifted else drawn + seed)
        start = fresh_f1(NARROW, fresh)
        starts.append(start)
        with tempfile.TemporaryDirectory() as tmp:
            report = run_once(Path(tmp), seed, labelled)
        accepted = report["status"] == "accepted"
        accepted_runs += accepted
        description = report["candidate"]["description"] if accepted else NARROW  # type: ignore[index]
        final = fresh_f1(description, fresh)
        reported = report["heldOut"]["reportedGain"] if accepted else 0.0  # type: ignore[index]
        finals.append(final)
        errors.append(abs(float(reported) - (final - start)))
        worse += final < start
        invocations.append(int(report["runner"]["invocations"]))  # type: ignore[index]
        print(f"seed {seed}: {report['status']}, fresh F1 {start:.3f} → {final:.3f}, reported "
              f"gain {float(reported):+.3f}, {invocations[-1]} invocations")  # fmt: skip
    mean = sum(finals) / seeds
    error = sum(errors) / seeds
    start = sum(starts) / seeds
    ok = (mean >= GOALS["fresh"] and worse == GOALS["worse"] and error <= GOALS["error"]
          and max(invocations) <= GOALS["invocations"])  # fmt: skip
    print(f"mean fresh F1: original {start:.3f}, accepted {mean:.3f} (goal ≥ 0.57); "
          f"{accepted_runs} of {seeds} runs accepted; accepted "
          f"worse {worse} of {seeds} (goal 0); mean |reported − fresh| {error:.3f} (goal ≤ 0.10); "
          f"invocations mean {sum(invocations) / seeds:.0f}, max {max(invocations)} (goal ≤ 360)"
          f" — {'PASS' if ok else 'FAIL'}")  # fmt: skip
    print("BENCH " + json.dumps({"name": "improve", "freshF1": mean, "start": start,
                                 "accepted": accepted_runs, "worse": worse, "error": error,
                                 "shifted": shifted, "pass": ok}))  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
