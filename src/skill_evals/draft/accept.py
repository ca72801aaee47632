"""Every drafted case checked before anything is written: its shape and bucket, its prompt
(not empty, not over-long, not naming the skill, not a duplicate of another after NFKC, case,
punctuation and spacing), its checks through the case file's own parser. What fails is dropped
and counted by reason — never quoted."""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..plan.lint import loose_form, names_skill
from ..suite.cases import load_cases, normalize_prompt
from .buckets import BUCKETS, SHOULD_TRIGGER

MAX_PROMPT_CHARS = 4000
SOURCE = "drafted"
_ITEM_KEYS = {"bucket", "prompt", "expectTrigger", "task", "neighbour"}
_ID = re.compile(r"^(explicit|implicit|contextual|near-miss|unrelated)-([0-9]{1,9})$")


@dataclass
class Accepted:
    """The cases kept so far (each the object written, one JSONL line) and the reasons of
    those dropped, with what is already in the file (``--append``)."""

    skill_name: str
    seen: set[str] = field(default_factory=set)  # loose forms of every prompt kept or present
    taken_ids: set[str] = field(default_factory=set)
    next_number: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 1))
    cases: list[dict[str, Any]] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)

    def existing(self, ids: Iterable[str], prompts: Iterable[str]) -> None:
        """Take note of the ids and prompts already in the file: new ids go after them."""
        for case_id in ids:
            self.taken_ids.add(case_id)
            match = _ID.match(case_id)
            if match:
                bucket, number = match.group(1), int(match.group(2))
                self.next_number[bucket] = max(self.next_number[bucket], number + 1)
        self.seen.update(loose_form(p) for p in prompts)

    def counts(self) -> dict[str, int]:
        """Cases kept per bucket."""
        kept = Counter(str(c["id"]).rsplit("-", 1)[0] for c in self.cases)
        return {b: kept[b] for b in BUCKETS}

    def _new_id(self, bucket: str) -> str:
        while True:
            case_id = f"{bucket}-{self.next_number[bucket]}"
            self.next_number[bucket] += 1
            if case_id not in self.taken_ids:
                self.taken_ids.add(case_id)
                return case_id

    def offer(
        self,
        items: Sequence[Any],
        wanted: Mapping[str, int],
        with_tasks: bool,
        neighbours: Sequence[str],
    ) -> None:
        """Keep each valid item of a reply while its bucket still wants cases."""
        still = dict(wanted)
        for item in items:
            reason = self._reason(item, with_tasks)
            if reason is None and still.get(item["bucket"], 0) <= 0:
                reason = "more than the bucket asked for"
            if reason is not None:
                self.dropped[reason] += 1
                continue
            fields = self._fields(item, with_tasks, neighbours)
            problem = check_case({"id": "drafted", **fields}, self.skill_name)
            if problem is not None:
                self.dropped[problem] += 1
                continue
            case = {"id": self._new_id(item["bucket"]), **fields}  # numbered once kept
            self.seen.add(loose_form(case["prompt"]))
            self.cases.append(case)
            still[item["bucket"]] -= 1

    def _reason(self, item: Any, with_tasks: bool) -> str | None:
        """Why ``item`` is dropped before its checks are parsed, or None."""
        if not isinstance(item, dict) or set(item) - _ITEM_KEYS:
            return "not a case object of the documented keys"
        bucket, prompt, label = item.get("bucket"), item.get("prompt"), item.get("expectTrigger")
        if bucket not in BUCKETS or not isinstance(prompt, str) or not isinstance(label, bool):
            return "no known bucket, string prompt and boolean expectTrigger"
        if label is not (bucket in SHOULD_TRIGGER):
            return "expectTrigger disagrees with its bucket"
        if not normalize_prompt(prompt):
            return "empty prompt"
        if len(prompt) > MAX_PROMPT_CHARS:
            return f"prompt over {MAX_PROMPT_CHARS} characters"
        if names_skill(prompt, self.skill_name):
            return "prompt-names-skill"
        if loose_form(prompt) in self.seen:
            return "duplicate prompt"
        if item.get("task") is not None and not with_tasks:
            return "a task without --with-tasks"
        return None

    def _fields(
        self, item: Mapping[str, Any], with_tasks: bool, neighbours: Sequence[str]
    ) -> dict[str, Any]:
        """The case written for ``item``, but its id."""
        bucket = str(item["bucket"])
        case: dict[str, Any] = {"prompt": item["prompt"], "expectTrigger": item["expectTrigger"]}
        if with_tasks and item.get("task") is not None:
            case["task"] = item["task"]
        tags = [bucket]
        neighbour = item.get("neighbour")
        if bucket == "near-miss" and isinstance(neighbour, str) and neighbour in neighbours:
            tags.append(f"neighbour:{neighbour}")
        case["tags"] = tags
        case["source"] = SOURCE
        return case


def check_case(case: Mapping[str, Any], skill_name: str) -> str | None:
    """None when the case file's parser accepts ``case`` as the only line of a file, else the
    field it refused (``invalid task``)."""
    with tempfile.TemporaryDirectory(prefix="skill-evals-draft-") as where:
        path = Path(where) / "case.jsonl"
        path.write_text(json.dumps(case, ensure_ascii=False) + "\n", encoding="utf-8")
        try:
            load_cases(path, skill_name)
        except InvalidInput as exc:
            field_name = re.search(r": field ([A-Za-z]+)", str(exc))
            return f"invalid {field_name.group(1) if field_name else 'case'}"
    return None


def jsonl(cases: Sequence[Mapping[str, Any]]) -> bytes:
    """The cases as JSONL lines."""
    return "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases).encode("utf-8")
