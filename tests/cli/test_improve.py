"""`skill-evals improve` through the real CLI, with a scripted runner whose loads follow the
description it is given and scripted proposers: one that generalises, one that memorises the
train cases, ones that break the contract. The split is recomputed here from the documented
rule (its own mulberry32), and the proposer's stdin is logged to show it never sees held-out."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from skill_evals.schemas import load_schema

SKILL = "invoice-audit"
ORIGINAL = "Audit invoice totals and tax lines."

RUNNER = r"""
import json, os, re, sys
prompt = sys.stdin.read()
skill_dir = os.environ["EVALGATE_SKILL_DIR"]
text = open(os.path.join(skill_dir, "SKILL.md"), encoding="utf-8").read()
description = re.search(r"^description: (.*)$", text, re.M).group(1).strip('"')
words = lambda s: {w for w in re.findall(r"[a-z0-9]+", s.lower()) if len(w) >= 4}
hit = bool(words(prompt) & words(description))
print(json.dumps({"variant": os.environ["EVALGATE_SKILL_VARIANT"],
                  "invokedSkills": ["invoice-audit"] if hit else [], "output": "ok",
                  "exitCode": 0, "meta": {"costUsd": 0.001}}))
"""

# Reads its request, logs it, answers per its mode.
PROPOSER = r"""
import json, os, re, sys
mode, log = sys.argv[1], sys.argv[2]
request = json.loads(sys.stdin.read())
with open(log, "a", encoding="utf-8") as f:
    f.write(json.dumps({"round": os.environ.get("SKILL_EVALS_ROUND"), "request": request}) + "\n")
base = request["skill"]["description"]
if mode == "generalise":
    print(json.dumps({"description": "Audit invoice, receipt and billing totals and tax lines.",
                      "rationale": "names the documents", "meta": {"costUsd": 0.01}}))
elif mode == "memorise":
    tokens = sorted({t for f in request["failures"] for t in re.findall(r"zz[a-z]+", f["prompt"])})
    print(json.dumps({"description": base + " " + " ".join(tokens)}))
elif mode == "two":  # round 1 a partial rewrite, round 2 the full one: two finalists
    if request["round"] == 1:
        print(json.dumps({"description": "Audit invoice and receipt totals and tax lines."}))
    else:
        print(json.dumps({"description": "Audit invoice, receipt and billing totals and tax."}))
elif mode == "angle":
    print(json.dumps({"description": "Audit <invoices>."}))
elif mode == "same":
    print(json.dumps({"description": base}))
elif mode == "error":
    print(json.dumps({"proposerError": "overloaded", "retryable": False}))
elif mode == "chatty":
    print("thinking...")
    print(json.dumps({"description": "x"}))
elif mode == "extra":
    print(json.dumps({"description": "Audit invoice receipts.", "confidence": 0.9}))
elif mode == "exit":
    sys.exit(3)
"""

POSITIVE_WORDS = ["receipt", "billing"]
NEGATIVES = [
    "Write a haiku about rain", "What is the capital of Chile", "Explain photosynthesis simply",
    "Plan a weekend hike", "Translate hello into Greek", "Suggest a name for a cat",
    "How do magnets work", "Recommend a sci-fi novel",
]  # fmt: skip
NONCES = ["zzalpha", "zzbravo", "zzcharlie", "zzdelta", "zzecho", "zzfoxtrot", "zzgolf", "zzhotel"]


def _cases() -> list[dict[str, Any]]:
    cases = []
    for i in range(4):
        cases.append({"id": f"inv{i}", "prompt": f"Check invoice {i} for a wrong total",
                      "expectTrigger": True})  # fmt: skip
    for i, nonce in enumerate(NONCES):
        word = POSITIVE_WORDS[i % 2]
        cases.append({"id": f"doc{i}", "prompt": f"Look at the {word} {nonce} and verify it",
                      "expectTrigger": True})  # fmt: skip
    for i, prompt in enumerate(NEGATIVES):
        cases.append({"id": f"neg{i}", "prompt": prompt, "expectTrigger": False})
    return cases


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, Path]:
    skill = tmp_path / "skills" / SKILL
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {SKILL}\ndescription: {ORIGINAL}\nlicense: MIT\n---\n# Invoice audit\n\n"
        "Check each line.\n",
        encoding="utf-8",
    )
    (skill / "notes.txt").write_text("kept\n", encoding="utf-8")
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in _cases()), encoding="utf-8")
    (tmp_path / "runner.py").write_text(RUNNER, encoding="utf-8")
    (tmp_path / "proposer.py").write_text(PROPOSER, encoding="utf-8")
    return {"tmp": tmp_path, "skill": skill, "cases": cases}


def _improve(
    setup: dict[str, Path], mode: str, *extra: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    tmp = setup["tmp"]
    report_path = tmp / f"report-{mode}.json"
    args = [
        sys.executable,
        "-m",
        "skill_evals",
        "improve",
        "--skill",
        str(setup["skill"]),
        "--cases",
        str(setup["cases"]),
        "--runner",
        f"{sys.executable} {tmp / 'runner.py'}",
        "--proposer",
        f"{sys.executable} {tmp / 'proposer.py'} {mode} {tmp / f'log-{mode}.jsonl'}",
        "--trials",
        "1",
        "--report",
        str(report_path),
        "--sandbox-path",
        f"{tmp}:rw",
        *extra,
    ]  # fmt: skip  (the proposer is sandboxed: it logs into tmp)
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=tmp)
    report = json.loads(report_path.read_text())
    jsonschema.validate(report, load_schema("improve-report.schema.json"))
    return proc, report


def _mulberry32(seed: int):  # the documented generator, written out again here
    state = seed

    def draw() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        t = state
        t = ((t ^ (t >> 15)) * (t | 1)) & 0xFFFFFFFF
        t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & 0xFFFFFFFF)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 2**32

    return draw


def _expected_split(seed: int, holdout: str) -> tuple[list[str], list[str]]:
    cases = _cases()
    draw = _mulberry32(seed)
    held: set[str] = set()
    for label in (True, False):
        ids = [c["id"] for c in cases if c["expectTrigger"] is label]
        for i in range(len(ids) - 1, 0, -1):
            j = math.floor(draw() * (i + 1))
            ids[i], ids[j] = ids[j], ids[i]
        n = len(ids)
        h = min(n - 1, max(1, math.floor(Fraction(holdout) * n + Fraction(1, 2))))
        held.update(ids[:h])
    order = [c["id"] for c in cases]
    return [i for i in order if i not in held], [i for i in order if i in held]


def _expected_halves(train: list[str], seed: int) -> tuple[list[str], list[str]]:
    """Train cut in two as documented: per label a mulberry32 shuffle seeded seed + 1, the
    first ceil(m/2) ids to the first half."""
    cases = {c["id"]: c for c in _cases()}
    draw = _mulberry32(seed + 1)
    first: set[str] = set()
    for label in (True, False):
        ids = [i for i in train if cases[i]["expectTrigger"] is label]
        for i in range(len(ids) - 1, 0, -1):
            j = math.floor(draw() * (i + 1))
            ids[i], ids[j] = ids[j], ids[i]
        first.update(ids[: (len(ids) + 1) // 2])
    return [i for i in train if i in first], [i for i in train if i not in first]


def _mde(units: int, gate: float) -> float:
    """The least k/n whose binomial 2.5 % quantile reaches the gate, by brute force."""
    needed = math.ceil(Fraction(repr(gate)) * units)
    for k in range(units + 1):
        p = k / units
        below = sum(math.comb(units, i) * p**i * (1 - p) ** (units - i) for i in range(needed))
        if needed == 0 or below < 0.025:
            return k / units
    return 1.0


def _f1(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn)


def _counts(ids: list[str], description: str) -> tuple[int, int, int]:
    words = {
        w for w in description.lower().replace(",", " ").replace(".", " ").split() if len(w) >= 4
    }
    tp = fp = fn = 0
    for case in _cases():
        if case["id"] not in ids:
            continue
        prompt_words = {w for w in case["prompt"].lower().split() if len(w) >= 4}
        hit = bool(prompt_words & words)
        tp += hit and case["expectTrigger"]
        fp += hit and not case["expectTrigger"]
        fn += (not hit) and case["expectTrigger"]
    return tp, fp, fn


def test_a_generalising_candidate_is_accepted_on_held_out(setup: dict[str, Path]) -> None:
    before = (setup["skill"] / "SKILL.md").read_bytes()
    diff_file = setup["tmp"] / "out.diff"
    proc, report = _improve(setup, "generalise", "--diff", str(diff_file))
    assert proc.returncode == 0, proc.stderr
    train, held = _expected_split(42, "0.4")
    assert report["split"] == {"seed": 42, "holdout": 0.4, "train": train, "heldOut": held}
    new = "Audit invoice, receipt and billing totals and tax lines."
    assert report["status"] == "accepted" and report["decision"]["accepted"] is True
    assert report["candidate"]["description"] == new
    old_held, new_held = _f1(*_counts(held, ORIGINAL)), _f1(*_counts(held, new))
    assert report["original"]["heldOut"]["f1"] == pytest.approx(old_held)
    assert report["candidate"]["heldOut"]["f1"] == pytest.approx(new_held)
    assert report["heldOutComparison"]["f1Difference"] == pytest.approx(new_held - old_held)
    assert report["original"]["train"]["f1"] == pytest.approx(_f1(*_counts(train, ORIGINAL)))
    assert report["candidate"]["train"]["f1"] == 1.0
    # Round 1 reached train F1 1 on the half it is ranked on (the second; it runs only there):
    # no further round; the original on all of train, held-out exactly twice.
    assert [r["status"] for r in report["rounds"]] == ["evaluated"]
    assert report["proposer"]["calls"] == 1
    ranked = _expected_halves(train, 42)[1]
    assert report["rounds"][0]["train"]["f1"] == pytest.approx(_f1(*_counts(ranked, new)))
    # At 1 trial a case's two runs (one per description) could as well have been dealt the
    # other way round, so 8 held-out cases cannot prove the gain at the first look's share of
    # 5 %; this runner answers every trial alike, and at 5 trials they do. The accepted one and
    # the original then run the rest of the planned trials (9) to steady the reported figure.
    assert report["heldOut"]["trials"] == 9
    assert report["runner"]["invocations"] == len(train) + len(ranked) + 2 * 9 * len(held)
    assert (setup["skill"] / "SKILL.md").read_bytes() == before  # no --apply
    # Train, held-out and the pre-flight power are kept apart; the reported gain is held-out's.
    mde = _mde(len(held), 0.05)
    assert report["heldOut"]["mde"] == pytest.approx(mde) and report["heldOut"]["units"] == 8
    assert f"can prove an F1 gain of {mde:.2f} or more" in proc.stderr
    (finalist,) = report["heldOut"]["finalists"]
    # The 3 planned looks (trials 1, 5, 9) get 1/6, 2/6 and 3/6 of 5 %: it passed at the second.
    assert finalist["accepted"] is True and finalist["level"] == pytest.approx(1 - 0.05 * 2 / 6)
    assert finalist["trials"] == 9
    assert finalist["decidedAt"] == {
        "trials": 5, "f1Difference": pytest.approx(new_held - old_held),
        "pValue": pytest.approx(finalist["decidedAt"]["pValue"]),
    }  # fmt: skip
    assert finalist["decidedAt"]["pValue"] <= 0.05 * 2 / 6 and finalist["interval"]["lower"] > 0
    assert finalist["f1Difference"] == pytest.approx(new_held - old_held)
    assert report["heldOut"]["reportedGain"] == pytest.approx(new_held - old_held)
    assert report["trainF1"] == {"original": pytest.approx(_f1(*_counts(train, ORIGINAL))),
                                 "selected": 1.0}  # fmt: skip
    path = "skills/invoice-audit/SKILL.md"
    assert diff_file.read_text() == report["diff"]
    assert report["diff"] == (
        f"--- a/{path}\n+++ b/{path}\n@@ -1,6 +1,6 @@\n ---\n name: {SKILL}\n"
        f"-description: {ORIGINAL}\n+description: {new}\n license: MIT\n ---\n # Invoice audit\n"
    )
    first = proc.stdout.splitlines()[0]
    assert first.startswith(
        f"ACCEPTED {SKILL}: held-out F1 {old_held:.2f} → {new_held:.2f} "
        f"({new_held - old_held:+.2f} ["
    )
    assert first.endswith(f"on {len(held)} held-out cases; train "
                          f"{_f1(*_counts(train, ORIGINAL)):.2f} → 1.00")  # fmt: skip
    # The proposer saw train cases only.
    logged = (setup["tmp"] / "log-generalise.jsonl").read_text()
    cases = {c["id"]: c for c in _cases()}
    for case_id in held:
        assert f'"{case_id}"' not in logged and cases[case_id]["prompt"] not in logged
    entry = json.loads(logged.splitlines()[0])
    assert entry["round"] == "1"
    assert set(entry["request"]) == {
        "schemaVersion", "round", "rounds", "skill", "limits", "train", "failures", "history",
    }  # fmt: skip
    shown, _ = _expected_halves(train, 42)  # round 1 shows the first half's failures only
    assert {f["id"] for f in entry["request"]["failures"]} <= set(shown)
    # --apply rewrites only the description line.
    proc, report = _improve(setup, "generalise", "--apply")
    after = (setup["skill"] / "SKILL.md").read_text()
    assert after == before.decode().replace(f"description: {ORIGINAL}", f"description: {new}")
    assert (setup["skill"] / "notes.txt").read_text() == "kept\n"


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 4}


def test_a_memorising_candidate_is_ranked_on_the_other_half(setup: dict[str, Path]) -> None:
    before = (setup["skill"] / "SKILL.md").read_bytes()
    proc, report = _improve(setup, "memorise", "--apply", "--diff", str(setup["tmp"] / "d"))
    assert proc.returncode == 1, proc.stderr
    assert report["status"] == "unchanged" and report["decision"]["accepted"] is False
    train, held = _expected_split(42, "0.4")
    halves = _expected_halves(train, 42)
    cases = {c["id"]: c for c in _cases()}
    parent, best_gain, seen_descriptions = ORIGINAL, 0.0, {ORIGINAL}
    logged = (setup["tmp"] / "log-memorise.jsonl").read_text().splitlines()
    requests = [json.loads(x)["request"] for x in logged]
    for number, entry in enumerate(report["rounds"], start=1):
        shown, ranked = halves if number % 2 == 1 else halves[::-1]
        new = entry["description"]
        # Each round builds on the largest gain over the original so far, else the original.
        assert requests[number - 1]["skill"]["description"] == parent
        if entry["status"] == "duplicate":  # the same parent, the same half: the same paste
            assert new in seen_descriptions and entry["ranking"] is None
            continue
        seen_descriptions.add(new)
        # The documented rule, recomputed: F1 gain over the original on the half not shown,
        # minus 0.03 per word added that a shown prompt has and no ranked prompt has.
        seen = set().union(*(_words(cases[i]["prompt"]) for i in shown))
        other = set().union(*(_words(cases[i]["prompt"]) for i in ranked))
        copied = (_words(new) - _words(parent)) & seen - other
        gain = _f1(*_counts(ranked, new)) - _f1(*_counts(ranked, ORIGINAL))
        assert entry["ranking"]["copiedWords"] == len(copied) > 0
        assert entry["ranking"]["score"] == pytest.approx(gain - 0.03 * len(copied))
        if gain > best_gain:
            parent, best_gain = new, gain
    # Round 1 pasted the first half's nonces: no gain where it was ranked, and a penalty. The
    # finalists are the two best ranked whatever their score (a half of train ranks noisily;
    # held-out decides), and held-out, whose nonces no proposal saw, rejects every paste.
    assert report["rounds"][0]["ranking"]["score"] < 0
    ranked_rounds = sorted(
        (r for r in report["rounds"] if r["ranking"] is not None),
        key=lambda r: (-r["ranking"]["score"], r["round"]),
    )
    finalists = report["heldOut"]["finalists"]
    assert sorted(f["round"] for f in finalists) == sorted(r["round"] for r in ranked_rounds[:2])
    assert all(f["f1Difference"] == 0.0 and not f["accepted"] for f in finalists)
    assert report["diff"] is None and not (setup["tmp"] / "d").exists()
    assert (setup["skill"] / "SKILL.md").read_bytes() == before
    for line in (setup["tmp"] / "log-memorise.jsonl").read_text().splitlines():
        request = json.loads(line)["request"]
        shown = halves[0] if request["round"] % 2 == 1 else halves[1]
        assert {f["id"] for f in request["failures"]} <= set(shown)
        text = json.dumps(request)
        assert not any(f'"{i}"' in text or cases[i]["prompt"] in text for i in held)


def test_two_finalists_are_decided_with_holm(setup: dict[str, Path]) -> None:
    _, report = _improve(setup, "two", "--rounds", "2")
    train, held = _expected_split(42, "0.4")
    finalists = report["heldOut"]["finalists"]
    assert sorted(f["round"] for f in finalists) == [1, 2]  # best train ranking first:
    assert [f["trainScore"] for f in finalists] == sorted(
        (f["trainScore"] for f in finalists), reverse=True
    )
    # Holm at the last look's share of 5 %: the smaller one-sided p is tested at α/2, the other
    # at α. Looks are planned at 1, 5 and 9 trials, with 1/6, 2/6 and 3/6 of 5 %; it passes at
    # the second.
    alpha = 0.05 * 2 / 6
    first, second = sorted(finalists, key=lambda f: (f["pValue"], f["round"]))
    assert first["level"] == pytest.approx(1 - alpha / 2)
    assert second["level"] == pytest.approx(1 - alpha)
    for finalist in finalists:
        new = _f1(*_counts(held, finalist["description"]))
        assert finalist["f1Difference"] == pytest.approx(new - _f1(*_counts(held, ORIGINAL)))
    # Held-out trials grow (finalists and the original only) while nothing is accepted and an
    # interval still reaches from 0 to --min-gain: at 1 trial these 8 cases cannot tell the
    # gain from luck; this runner answers every trial alike, and the next look (5) decides.
    # The accepted one and the original then run on to the planned 9; the other finalist
    # keeps the trials it had.
    assert report["heldOut"]["trials"] == 9 and report["status"] == "accepted"
    (chosen,) = [f for f in finalists if f["accepted"]]
    (other,) = [f for f in finalists if not f["accepted"]]
    assert chosen["trials"] == 9 and chosen["decidedAt"]["trials"] == 5
    assert other["trials"] in (1, 5) and other["decidedAt"] is None
    # Train: the original on all of it, each candidate on the half it is ranked on.
    runs = len(held) * (9 + 9 + other["trials"])
    assert report["runner"]["invocations"] == 2 * len(train) + runs
    _, once = _improve(setup, "two", "--rounds", "2", "--max-heldout-trials", "1")
    assert once["heldOut"]["trials"] == 1 and once["status"] == "unchanged"
    assert once["runner"]["invocations"] == 2 * len(train) + 3 * len(held)
    accepted = [f for f in finalists if f["accepted"]]
    if report["status"] == "accepted":
        (chosen,) = accepted
        assert report["heldOut"]["reportedGain"] == chosen["f1Difference"]
        assert report["candidate"]["description"] == chosen["description"]
        assert chosen["interval"]["lower"] > 0
    else:
        assert accepted == [] and report["heldOut"]["reportedGain"] is None
        assert first["interval"]["lower"] <= 0 or first["f1Difference"] < 0.05


def test_invalid_and_duplicate_candidates_are_not_run(setup: dict[str, Path]) -> None:
    _, report = _improve(setup, "angle", "--rounds", "2")
    assert [r["status"] for r in report["rounds"]] == ["invalid", "invalid"]
    assert report["rounds"][0]["problems"] == ["the description holds '<' or '>'"]
    assert report["decision"]["reason"] == (
        "no candidate was ranked: every proposal was invalid or a duplicate"
    )
    train, _ = _expected_split(42, "0.4")
    assert report["runner"]["invocations"] == len(train)  # round 0 only
    assert report["exitCode"] == 1
    _, report = _improve(setup, "same")
    assert [r["status"] for r in report["rounds"]] == ["duplicate", "duplicate", "duplicate"]
    assert report["runner"]["invocations"] == len(train)


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("error", "proposer: overloaded"),
        ("chatty", "proposer: the reply is not exactly one line"),
        ("extra", "proposer: the reply has an unknown key 'confidence'"),
        ("exit", "proposer: exited with code 3"),
    ],
)
def test_a_failing_proposer_is_exit_7_and_changes_nothing(
    setup: dict[str, Path], mode: str, reason: str
) -> None:
    before = (setup["skill"] / "SKILL.md").read_bytes()
    proc, report = _improve(setup, mode, "--apply")
    assert proc.returncode == 7
    assert report["status"] == "unavailable" and report["decision"]["reason"] == reason
    assert f"skill-evals: error: {reason}" in proc.stderr
    assert (setup["skill"] / "SKILL.md").read_bytes() == before


def test_bad_inputs_exit_before_anything_runs(setup: dict[str, Path]) -> None:
    tmp = setup["tmp"]
    base = [sys.executable, "-m", "skill_evals", "improve", "--skill", str(setup["skill"]),
            "--cases", str(setup["cases"]), "--runner", f"{sys.executable} {tmp / 'runner.py'}",
            "--proposer", "true", "--trials", "1"]  # fmt: skip

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *extra], capture_output=True, text=True, timeout=120)

    assert run("--holdout", "0.95").returncode == 5
    assert run("--rounds", "0").returncode == 5
    for command, why in (("'unbalanced", "cannot split the command"), ("", "the command is empty")):
        refused = run("--proposer", command)  # named as the proposer's, never as --runner's
        assert refused.returncode == 5 and f"--proposer: {why}" in refused.stderr
    inside = run("--report", str(setup["skill"] / "r.json"))
    assert inside.returncode == 5 and "inside the skill directory" in inside.stderr
    train, held = _expected_split(42, "0.4")
    # The original on train, round 1's candidate on the half it is ranked on (the second),
    # both on held-out.
    minimum = len(train) + len(_expected_halves(train, 42)[1]) + 2 * len(held)
    small = run("--max-invocations", str(minimum - 1))
    assert small.returncode == 5 and f"at least {minimum}" in small.stderr
    few = tmp / "few.jsonl"
    few.write_text("".join(json.dumps(c) + "\n" for c in _cases()[:9]), encoding="utf-8")
    assert run("--cases", str(few)).returncode == 6
    one_negative = tmp / "one-negative.jsonl"
    one_negative.write_text("".join(json.dumps(c) + "\n" for c in _cases()[:13]), encoding="utf-8")
    result = run("--cases", str(one_negative))
    assert result.returncode == 6 and "expectTrigger false" in result.stderr


RETRYING = r"""
import json, os, sys
marker = sys.argv[1]
if not os.path.exists(marker):
    open(marker, "w").close()
    print(json.dumps({"proposerError": "overloaded (529)", "retryable": True}))
else:
    print(json.dumps({"description": "Audit invoice, receipt and billing totals and tax lines."}))
"""


def test_a_retryable_proposer_error_is_retried_then_exit_7(setup: dict[str, Path]) -> None:
    tmp = setup["tmp"]
    (tmp / "retrying.py").write_text(RETRYING, encoding="utf-8")
    base = [
        sys.executable,
        "-m",
        "skill_evals",
        "improve",
        "--skill",
        str(setup["skill"]),
        "--cases",
        str(setup["cases"]),
        "--runner",
        f"{sys.executable} {tmp / 'runner.py'}",
        "--trials",
        "1",
        "--format",
        "json",
        "--rounds",
        "1",
        "--sandbox-path",
        f"{tmp}:rw",
    ]  # fmt: skip  (the sandboxed proposer's marker)
    proposer = f"{sys.executable} {tmp / 'retrying.py'} {tmp / 'marker'}"
    done = subprocess.run([*base, "--proposer", proposer, "--retries", "1"], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["status"] == "accepted"  # the retry answered
    (tmp / "marker").unlink()
    done = subprocess.run([*base, "--proposer", proposer, "--retries", "0"], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 7
    assert json.loads(done.stdout)["decision"]["reason"] == "proposer: overloaded (529)"


# After trial 5 the candidate loads nothing and the original loads the skill for every
# positive: what passed at the second look must pass again over all the trials.
FADING_RUNNER = RUNNER.replace(
    "hit = bool(words(prompt) & words(description))",
    "late = int(os.environ['EVALGATE_SKILL_TRIAL']) > 5\n"
    "positive = bool(words(prompt) & {'invoice', 'receipt', 'billing'})\n"
    "hit = (positive if 'receipt' not in description else False) if late else "
    "bool(words(prompt) & words(description))",
)


def test_an_accepted_finalist_must_pass_again_over_all_its_trials(
    setup: dict[str, Path],
) -> None:
    (setup["tmp"] / "runner.py").write_text(FADING_RUNNER, encoding="utf-8")
    proc, report = _improve(setup, "generalise")
    _, held = _expected_split(42, "0.4")
    cases = {c["id"]: c for c in _cases()}
    new = "Audit invoice, receipt and billing totals and tax lines."
    # Looks planned at 1, 5 and 9 trials: it passes at 5, then both run trials 6 to 9.
    (finalist,) = report["heldOut"]["finalists"]
    assert finalist["decidedAt"]["trials"] == 5 and finalist["trials"] == 9
    early = _f1(*_counts(held, new)) - _f1(*_counts(held, ORIGINAL))
    assert finalist["decidedAt"]["f1Difference"] == pytest.approx(early)
    assert finalist["decidedAt"]["pValue"] <= 0.05 * 2 / 6
    # Over all 9: the candidate hit its positives 5 times, the original every positive
    # holding invoice 9 times and the others 4 times; no negative ever loaded it.
    positives = [cases[i] for i in held if cases[i]["expectTrigger"]]
    invoice = sum(1 for c in positives if "invoice" in c["prompt"])
    tp_new, fn_new = 5 * len(positives), 4 * len(positives)
    tp_old = 9 * invoice + 4 * (len(positives) - invoice)
    fn_old = 9 * len(positives) - tp_old
    pooled = _f1(tp_new, 0, fn_new) - _f1(tp_old, 0, fn_old)
    assert pooled < 0 and finalist["f1Difference"] == pytest.approx(pooled)
    assert report["heldOut"]["reportedGain"] is None and finalist["accepted"] is False
    assert report["status"] == "unchanged" and proc.returncode == 1
    assert report["decision"]["reason"].startswith("passed at 5 held-out trials, but over all 9")
