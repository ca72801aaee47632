#!/usr/bin/env python3
"""An offline drafter for `skill-evals cases draft` (docs/drafting.md).

It reads the request on stdin and answers with one JSON object of cases. No model is called:
the prompts are filled-in templates built from the skill's own words (its description, the
headings and sentences of its body) and from the neighbours' descriptions. They are a starting
point to edit, not a finished suite; real drafters ask a model
(`skill-evals draft anthropic|openai --model M`). Standard library only, so it runs anywhere.
"""

import json
import os
import random
import re
import sys

STOP = {
    "about",
    "after",
    "their",
    "there",
    "these",
    "those",
    "which",
    "where",
    "while",
    "would",
    "should",
    "could",
    "under",
    "with",
    "within",
    "without",
    "from",
    "into",
    "this",
    "that",
    "other",
    "every",
    "instead",
    "before",
    "including",
}

EXPLICIT = [
    "Please {job}.",
    "Can you {job}?",
    "I need you to {job}.",
    "Help me {job}.",
    "Your task: {job}.",
    "Could you {job} for me?",
    "I'd like you to {job}.",
    "Go ahead and {job}.",
]
IMPLICIT = [
    "What should I know about {topic}?",
    "Someone asked me about {topic}. What is the answer?",
    "Quick question on {topic}: {sentence}",
    "I'm unsure about {topic}; what applies here?",
    "Explain how {topic} works in practice.",
]
CONTEXTUAL = [
    "I'm catching up on my inbox this morning. One message is about {topic}: {sentence} "
    "Work out what applies, then draft a two-line reply I can send.",
    "We are preparing next week's team meeting and the notes mention {topic}. Before I "
    "share them, check this point: {sentence} Then list the open questions.",
]
NEAR_MISS = ["Please {job}.", "Can you {job}?", "I need help: {job}."]
OFF_TASK = [
    "Write a short poem that mentions {word}.",
    "Translate the word '{word}' into French.",
    "Give me three synonyms for {word}.",
    "Tell me the history of the word {word}.",
]
UNRELATED = [
    "What is the capital of Australia?",
    "Write a haiku about autumn rain.",
    "Convert 72 degrees Fahrenheit to Celsius.",
    "Suggest a name for a pet goldfish.",
    "How do I center a div in CSS?",
    "Summarise the plot of Hamlet in two sentences.",
    "Plan a three-day trip to Lisbon.",
    "What is a good stretch for a stiff neck?",
    "Explain what a prime number is to a child.",
    "Recommend a board game for four players.",
    "How long should I boil an egg for a soft yolk?",
    "List five facts about octopuses.",
]


def without_name(text, name):
    """The text with the skill's name (and it with spaces) replaced: a drafted prompt must
    never name the skill."""
    for form in {name, name.replace("-", " ")}:
        text = re.sub(
            r"(?<![A-Za-z0-9])" + re.escape(form) + r"(?![A-Za-z0-9])",
            "guidelines",
            text,
            flags=re.IGNORECASE,
        )
    return text


def job_of(description, name):
    """The first sentence of a description as an instruction: 'answer customer questions …'."""
    first = re.split(r"(?<=[.!?])\s", description.strip())[0].rstrip(".!? ")
    first = without_name(first, name)
    return (first[:1].lower() + first[1:]) if first else "help with this"


def sections(body, name):
    """(topic, first sentence, text) of each headed section of the body."""
    found, heading, lines = [], None, []

    def close():
        text = " ".join(lines)
        if heading and text:
            sentence = re.split(r"(?<=[.!?])\s", text)[0]
            found.append((without_name(heading, name).lower(), without_name(sentence, name), text))

    for line in body.splitlines():
        if line.startswith("#"):
            close()
            heading, lines = line.lstrip("#").strip(), []
        elif line.strip() and not line.startswith(("```", "|", "-", "*")):
            lines.append(line.strip())
    close()
    return found


def words(text):
    return [w for w in re.findall(r"[a-z]{5,}", text.lower()) if w not in STOP]


def fill(templates, count, make, start=0):
    """``count`` distinct prompts: each template (from ``start``) with each value in turn,
    then numbered."""
    out, seen, i = [], set(), 0
    while len(out) < count and i < count * 20:
        prompt = make(templates[(start + i) % len(templates)], i)
        if i >= len(templates) * 4:
            prompt += f" (variant {i + 1})"
        if prompt.lower() not in seen:
            seen.add(prompt.lower())
            out.append(prompt)
        i += 1
    return out


def task_for(prompt, section_text):
    """An output check on a word of the skill's own text that the prompt does not hold."""
    for word in words(section_text):
        if word not in prompt.lower():
            return {"check": "output_matches", "pattern": word, "flags": "i"}
    return None


def main():
    request = json.load(sys.stdin)
    skill, want = request["skill"], request["buckets"]
    name = skill["name"]
    rng = random.Random(int(os.environ.get("SKILL_EVALS_SEED", "42")))
    job = job_of(skill["description"], name)
    description = without_name(skill["description"], name)
    parts = sections(skill.get("body", ""), name) or [(job, description, skill["description"])]
    rng.shuffle(parts)
    neighbours = request.get("neighbours") or []
    own = sorted(set(words(without_name(skill["description"], name))))
    cases = []

    def add(bucket, prompts, label, extra=None):
        for i, prompt in enumerate(prompts):
            case = {"bucket": bucket, "prompt": prompt, "expectTrigger": label}
            case.update(extra(i, prompt) if extra else {})
            cases.append(case)

    def section(i):
        return parts[i % len(parts)]

    tasks = request.get("withTasks")

    def task(i, prompt):
        found = task_for(prompt, section(i)[2] + " " + skill["description"]) if tasks else None
        return {"task": found} if found else {}

    add(
        "explicit",
        fill(EXPLICIT, want.get("explicit", 0), lambda t, i: t.format(job=job)),
        True,
        lambda i, p: task(i, p),
    )
    add(
        "implicit",
        fill(
            IMPLICIT,
            want.get("implicit", 0),
            lambda t, i: t.format(topic=section(i)[0], sentence=section(i)[1]),
        ),
        True,
        task,
    )
    add(
        "contextual",
        fill(
            CONTEXTUAL,
            want.get("contextual", 0),
            lambda t, i: t.format(topic=section(i)[0], sentence=section(i)[1]),
        ),
        True,
        task,
    )
    count = want.get("near-miss", 0)
    if neighbours:

        def near(t, i):
            other = neighbours[i % len(neighbours)]
            t = NEAR_MISS[(i // len(neighbours)) % len(NEAR_MISS)]
            return t.format(job=job_of(other["description"], name))

        add(
            "near-miss",
            fill(NEAR_MISS, count, near),
            False,
            lambda i, p: {"neighbour": neighbours[i % len(neighbours)]["name"]},
        )
    else:
        picked = own or ["policy"]
        add(
            "near-miss",
            fill(OFF_TASK, count, lambda t, i: t.format(word=picked[i % len(picked)])),
            False,
        )
    unrelated = UNRELATED[:]
    rng.shuffle(unrelated)
    add("unrelated", fill(unrelated, want.get("unrelated", 0), lambda t, i: t), False)
    print(json.dumps({"cases": cases}))


if __name__ == "__main__":
    main()
