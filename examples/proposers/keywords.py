#!/usr/bin/env python3
"""A small offline proposer for `skill-evals improve` (docs/improve.md).

It reads the request on stdin and answers with one JSON line. The heuristic is simple on
purpose: words that appear in at least two of the train prompts the skill missed are added to
the description as "Also for: …", and words of prompts that triggered wrongly are never added.
Real proposers ask a model (`skill-evals propose anthropic|openai --model M`); this one shows
the contract and runs without a key.
"""

import json
import re
import sys
from collections import Counter

STOP = {"with", "what", "when", "that", "this", "have", "from", "your", "about", "there", "would"}


def words(text):
    return [w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4 and w not in STOP]


def why_nothing(missed, wrong):
    """Why there is no proposal, in words that say what to try instead."""
    why = "the missed prompts share no word" if missed else "no prompt was missed"
    why += ": the keyword proposer only widens a description"
    if wrong:
        why += "; train errors here are false triggers"
    return why + " (a model proposer can also narrow one: skill-evals propose anthropic|openai)"


def main():
    request = json.load(sys.stdin)
    description = request["skill"]["description"]
    limit = request["limits"]["descriptionMaxChars"]
    missed, wrong = Counter(), set()
    for failure in request["failures"]:
        if failure["expectTrigger"]:
            missed.update(set(words(failure["prompt"])))
        else:
            wrong.update(words(failure["prompt"]))
    present = set(words(description))
    extra = [w for w, n in missed.most_common() if n >= 2 and w not in present and w not in wrong]
    if not extra:
        print(json.dumps({"proposerError": why_nothing(missed, wrong), "retryable": False}))
        return
    proposal = f"{description.rstrip('.')}. Also for: {', '.join(sorted(extra[:8]))}."
    print(
        json.dumps(
            {
                "description": proposal[:limit],
                "rationale": "adds words shared by the missed prompts",
            }
        )
    )


if __name__ == "__main__":
    main()
