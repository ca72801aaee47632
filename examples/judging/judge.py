"""An offline stand-in judge for the walkthrough in docs/judging.md (standard library only).

It follows the judge contract — one request object on stdin, one verdict line on stdout — but
grades without a model: the rubric's "quoted" phrases are what a good answer must contain, and
the score is the share of them found in the answer (its output and files), mapped onto the
request's scale. Swap it for `skill-evals judge anthropic --model M` (or openai) to grade with
a model; calibrate either with `skill-evals judge-check` first.
"""

import json
import re
import sys


def share(rubric, answer):
    """The share of the rubric's quoted phrases found in the answer (1.0 without any)."""
    phrases = re.findall(r'"([^"]+)"', rubric)
    text = "\n".join([answer.get("output") or ""] + [f["text"] for f in answer.get("files", [])])
    if not phrases:
        return 1.0
    return sum(phrase in text for phrase in phrases) / len(phrases)


def main():
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    if request["kind"] == "pairwise":
        a, b = share(request["rubric"], request["a"]), share(request["rubric"], request["b"])
        winner = "a" if a > b else "b" if b > a else "tie"
        verdict = {"winner": winner, "reason": f"a has {a:.0%} of the phrases, b {b:.0%}"}
    else:
        low, high = request["scale"]
        found = share(request["rubric"], request["answer"])
        score = low + found * (high - low)
        threshold = request["threshold"]
        verdict = {
            "score": score,
            "pass": score >= threshold if threshold is not None else found == 1.0,
            "reason": f"{found:.0%} of the rubric's phrases found",
        }
    print(json.dumps(verdict))


if __name__ == "__main__":
    main()
