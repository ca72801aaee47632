"""The documentation's snippets stay true: every sample output is what its command prints, every
workflow checks out without persisted credentials, every runner list names every runner, and
the docs index links every page."""

from __future__ import annotations

import itertools
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from skill_evals.agents import registry

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.M | re.S)
ELISION = {"...", "…"}
RUNNERS = [*registry.names(), "simulated"]


def _command_samples() -> list[tuple[str, str, str]]:
    """(where, command, sample output): a shell block followed by a plain block, directly or
    after a sentence ending "prints:"."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        blocks = list(FENCE.finditer(text))
        for first, second in itertools.pairwise(blocks):
            between = text[first.end() : second.start()]
            if first.group(1) not in ("bash", "sh") or second.group(1) not in ("", "text"):
                continue
            # Directly followed by its output, or with a sentence between that ends "prints:".
            joined = between.strip()
            if (joined and not joined.endswith("prints:")) or not first.group(2).startswith(
                "skill-evals "
            ):
                continue
            line = text[: first.start()].count("\n") + 1
            where = f"{page.relative_to(REPO)}:{line}"
            found.append((where, first.group(2).replace("\\\n", " "), second.group(2)))
    return found


SAMPLES = _command_samples()


def test_the_docs_have_command_samples() -> None:
    # The README's, the routing page's and the first-suite walkthrough's at least.
    assert len(SAMPLES) >= 3, SAMPLES


def _matches(sample: list[str], printed: list[str]) -> bool:
    """Whether the sample's lines are the printed lines, an elision line standing for any run
    of lines: the first sample line is the first printed line, and the last the last one unless
    an elision ends the sample."""
    at = 0
    loose = False
    for wanted in sample:
        if wanted.strip() in ELISION:
            loose = True
            continue
        if loose:
            while at < len(printed) and printed[at] != wanted:
                at += 1
        if at >= len(printed) or printed[at] != wanted:
            return False
        at += 1
        loose = False
    return loose or at == len(printed)


@pytest.mark.parametrize(("where", "command", "sample"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_a_sample_output_is_what_its_command_prints(
    where: str, command: str, sample: str, tmp_path: Path
) -> None:
    argv = shlex.split(command)
    offline = argv[1] == "judge-check" and "examples/" in argv[argv.index("--judge") + 1]
    if argv[1:3] == ["cases", "draft"]:  # the offline drafter: no model, no runner
        offline = "examples/drafters/" in argv[argv.index("--drafter") + 1]
    assert "skill-evals runner simulated" in command or "--observations" in argv or offline, (
        f"{where}: a sample output must come from a command that runs offline"
    )
    # The commands name the bundled examples as `examples/...` (from the repository) or as
    # `skills/...` (the walkthrough's own repository, a copy of them).
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    shutil.copytree(REPO / "examples" / "skills", tmp_path / "skills")
    executable = Path(sys.executable).with_name("skill-evals")
    done = subprocess.run(
        [str(executable), *argv[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "PATH": f"{executable.parent}:/usr/bin:/bin",
            "TMPDIR": str(tmp_path),
            "LANG": "C.UTF-8",
        },
    )
    printed = done.stdout.splitlines()
    wanted = sample.splitlines()
    assert _matches(wanted, printed), (
        f"{where}: the sample differs from what the command prints:\n" + done.stdout
    )


def _yaml_blocks() -> list[tuple[str, object]]:
    blocks = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group(1) in ("yaml", "yml"):
                line = text[: match.start()].count("\n") + 1
                blocks.append((f"{page.relative_to(REPO)}:{line}", yaml.safe_load(match.group(2))))
    return blocks


def _steps(node: object) -> list[dict[str, object]]:
    """Every mapping with a `uses` key, anywhere in a parsed workflow snippet."""
    found: list[dict[str, object]] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "uses" in item:
                found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def test_every_checkout_in_the_docs_keeps_no_credentials() -> None:
    checkouts = [
        (where, step)
        for where, block in _yaml_blocks()
        for step in _steps(block)
        if str(step["uses"]).startswith("actions/checkout@")
    ]
    assert len(checkouts) >= 3
    for where, step in checkouts:
        options = step.get("with")
        assert isinstance(options, dict) and options.get("persist-credentials") is False, where


RUNNER_LIST = re.compile(r"runner ((?:[a-z-]+\|)+[a-z-]+)")


def test_every_runner_list_names_every_runner() -> None:
    files = [*PAGES, *sorted((REPO / "src").rglob("*.py"))]
    seen = 0
    for path in files:
        for line_no, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            line = text.replace("\\|", "|")  # a Markdown table escapes its pipes
            for match in RUNNER_LIST.finditer(line):
                seen += 1
                listed = match.group(1).split("|")
                # The MCP delivery exists for the agents with an MCP client: all but pi.
                if line[match.end() :].startswith(" --delivery mcp"):
                    expected = [name for name in registry.names() if name != "pi"]
                else:
                    expected = RUNNERS
                assert sorted(listed) == sorted(expected), f"{path}:{line_no}"
    assert seen >= 3
    help_text = subprocess.run(
        [str(Path(sys.executable).with_name("skill-evals")), "test", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    flat = " ".join(help_text.split()).replace("- ", "-")
    for name in RUNNERS:
        assert name in flat, name


def test_the_docs_index_links_every_page() -> None:
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    linked = {
        (REPO / "docs" / target.split("#")[0]).resolve()
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", index)
    }
    pages = {p.resolve() for p in (REPO / "docs").rglob("*.md")} - {
        (REPO / "docs" / "README.md").resolve()
    }
    assert sorted(str(p) for p in pages - linked) == []


def _paragraphs_counting_invocations() -> list[tuple[str, str]]:
    """(where, paragraph) of every paragraph that counts invocations as cases × trials × 2."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for paragraph in re.split(r"\n\s*\n", text):
            flat = " ".join(paragraph.split())
            if "× trials × 2" in flat and "invocations" in flat:
                line = text[: text.index(paragraph)].count("\n") + 1
                found.append((f"{page.relative_to(REPO)}:{line}", flat))
    return found


def test_every_invocation_count_says_what_arms_auto_saves() -> None:
    counts = _paragraphs_counting_invocations()
    assert counts  # the first-suite walkthrough's at least
    for where, paragraph in counts:
        assert "--arms auto" in paragraph, f"{where}: cases × trials × 2 without --arms auto"
