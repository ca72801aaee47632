"""The scripts of bench_improve.py, offline: an agent whose chance to load the skill grows with
the overlap of the description's and the prompt's words, and a proposer mixing overfit and
general candidates.

``agent SEED``: a runner. Reads the prompt on stdin and the description from the skill's
SKILL.md; with k shared words (4 letters or more) it loads the skill with probability
min(0.95, 0.2 + 0.2·k), drawn from the SHA-256 of the seed, prompt, description and trial.

``proposer SEED``: answers each round. In odd rounds when SEED is odd (even rounds otherwise)
an *overfit* candidate: the current description plus every word of the missed prompts it was
shown ("Also for: …"). In the other rounds a *general* rewrite naming the task's document kinds,
from a fixed list, a different one each round.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys

GENERAL = [
    "Audit invoices, receipts and billing or card statements - check totals, tax lines, "
    "payments, refunds and duplicate charges.",
    "Audit and reconcile invoices, receipts, card and billing statements: wrong totals, tax "
    "lines, doubled amounts, missing refunds, payments.",
    "Audit supplier invoices, receipts and statements - totals, amounts charged twice, tax "
    "lines, refunds and payments.",
]


def words(text: str) -> set[str]:
    """Lower-case words of 4 letters or more."""
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4}


def chance(prompt: str, description: str) -> float:
    """The agent's chance to load the skill."""
    return min(0.95, 0.2 + 0.2 * len(words(prompt) & words(description)))


def draw(*parts: str) -> float:
    """A uniform draw in [0, 1) from the parts."""
    digest = hashlib.sha256("\x00".join(parts).encode()).hexdigest()
    return int(digest[:12], 16) / 16**12


def _agent(seed: str) -> dict[str, object]:
    prompt = sys.stdin.read()
    skill_dir = os.environ["EVALGATE_SKILL_DIR"]
    with open(os.path.join(skill_dir, "SKILL.md"), encoding="utf-8") as handle:
        text = handle.read()
    found = re.search(r"^description: (.*)$", text, re.M)
    description = found.group(1).strip('"') if found else ""
    trial = os.environ.get("EVALGATE_SKILL_TRIAL", "1")
    hit = draw(seed, prompt, description, trial) < chance(prompt, description)
    return {
        "variant": os.environ["EVALGATE_SKILL_VARIANT"],
        "invokedSkills": [os.path.basename(skill_dir)] if hit else [],
        "output": "ok",
        "exitCode": 0,
    }


def _proposer(seed: int) -> dict[str, object]:
    request = json.load(sys.stdin)
    number = int(request["round"])
    base = request["skill"]["description"]
    if number % 2 == seed % 2:
        missed = [f["prompt"] for f in request["failures"] if f["expectTrigger"]]
        pasted = sorted(set().union(*(words(p) for p in missed)) - words(base)) if missed else []
        text = f"{base.rstrip('.')}. Also for: {', '.join(pasted[:10]) or 'audits'}."
        return {"description": text[:1024], "rationale": "the missed prompts' words"}
    return {"description": GENERAL[(number // 2 + seed) % len(GENERAL)], "rationale": "general"}


if __name__ == "__main__":
    role, value = sys.argv[1], sys.argv[2]
    out = _agent(value) if role == "agent" else _proposer(int(value))
    print(json.dumps(out))
