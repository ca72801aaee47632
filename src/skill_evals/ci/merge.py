"""`skill-evals ci merge`: one report, summary, JUnit file, comment and exit code from the
output directories of several shards (`ci --only NAME` jobs of a matrix).

A shard's directory arrives as an artifact written in a job where an agent ran the pull
request's skill: everything in it is untrusted. Its report.json is read bounded and strictly
and validated against the schema (exit 5 naming the shard otherwise); only regular files of a
bounded size are copied from its observations/.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..codes import combine
from ..suite.jsonl import MAX_FILE_BYTES
from .comment_names import repository_skill_names
from .console import Console, annotate
from .outputs import build_report, prepare_out, write_outputs
from .schema import load_ci_report


def merge(
    dirs: Sequence[Path], out: Path, env: dict[str, str], comment: bool, console: Console
) -> int:
    """Combine shards' outputs into one report/summary/JUnit/comment and exit code."""
    prepare_out(out)
    skills: dict[str, dict[str, Any]] = {}
    messages: list[str] = []
    shard_codes: list[int] = []
    shards = [load_ci_report(directory / "report.json") for directory in dirs]
    routing: dict[str, Any] | None = None  # the shard that ran routing wins over the others
    for directory, shard in zip(dirs, shards, strict=True):
        shard_codes.append(int(shard["exitCode"]))
        entry = shard.get("routing")
        if isinstance(entry, dict) and (routing is None or routing["status"] == "unchanged"):
            routing = entry
        messages.extend(str(m) for m in shard.get("messages") or [])
        for skill in shard["skills"]:
            previous = skills.get(skill["path"])
            if previous is None or previous["status"] == "unchanged":
                skills[skill["path"]] = skill
        _copy_observations(directory / "observations", out / "observations", console)
    ordered = sorted(skills.values(), key=lambda s: str(s["path"]))
    routed = [int(routing.get("exitCode", 0))] if routing is not None else []
    exit_code = combine([*shard_codes, *(int(s.get("exitCode", 0)) for s in ordered), *routed])
    info = {"mode": "merged", "shards": len(dirs)}
    ci_report = build_report(
        exit_code, ordered, info, list(dict.fromkeys(messages)), routing=routing
    )
    # The least trusted source any shard ran with is the merged run's.
    sources = {s.get("policyFrom") for s in shards}
    for source in ("head-trusted", "checkout", "base"):
        if source in sources:
            ci_report["policyFrom"] = source
            break
    trends = _merged_trends(shards)
    if trends is not None:
        ci_report["trends"] = trends
    # Every shard checked the same catalog's listing: the first one that has it stands.
    listed = [s["listing"] for s in shards if isinstance(s.get("listing"), dict)]
    if listed:
        ci_report["listing"] = listed[0]
    names = repository_skill_names(Path.cwd())
    write_outputs(ci_report, out, env, console, comment=comment, names=names)
    annotate(ci_report, console)
    console.info(f"merged {len(dirs)} shard(s): {ci_report['status']} (exit {exit_code})")
    return exit_code


def _merged_trends(shards: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """Each skill's trend from the shards that kept a history (the first shard naming a skill
    wins), by skill name; None when no shard kept one."""
    kept = [s["trends"] for s in shards if isinstance(s.get("trends"), list)]
    if not kept:
        return None
    by_skill: dict[str, dict[str, Any]] = {}
    for trends in kept:
        for item in trends:
            if isinstance(item, dict) and isinstance(item.get("skill"), str):
                by_skill.setdefault(item["skill"], item)
    return [by_skill[name] for name in sorted(by_skill)]


def _copy_observations(source: Path, target: Path, console: Console) -> None:
    """Copy the shard's observations/*.jsonl: regular files (no symlinks, FIFOs, devices) of
    at most the observations file limit; anything else is left out with a warning."""
    try:
        entries = sorted(os.scandir(source), key=lambda e: e.name)
    except OSError:
        return  # no observations in this shard
    for entry in entries:
        if not entry.name.endswith(".jsonl"):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            console.warning(
                f"{source / entry.name}: not copied (not a regular file, or larger than "
                f"{MAX_FILE_BYTES} bytes)"
            )
            continue
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / entry.name, target / entry.name, follow_symlinks=False)
