"""A config error names the file, the line and the key, says what to write instead and never
repeats the value (a key pasted where a variable name belongs stayed in the job's log before);
YAML 1.1 words are text everywhere, and `cache-max-age: 0` works unquoted as documented. The
real CLI (`ci plan` reads the whole config and starts nothing)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .conftest import run_cli

SECRET = "sk-ant-api03-Zq8vJ2mW7xRkT4nB9cLpY6dHs3GfUe1A"


def _plan(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".skill-evals.yml").write_text(text, encoding="utf-8")
    return run_cli(["ci", "plan"], tmp_path)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("trials: 2\nsandboxx: off\n",
         ".skill-evals.yml:2: $: unknown key 'sandboxx'; did you mean 'sandbox'?"),
        ("trials: 2\noverrides:\n  a:\n    keep-going: yes\n",
         ".skill-evals.yml:4: $.overrides.a['keep-going']: must be true or false, not text "
         "(write true or false: yes, no, on and off are read as text)"),
        ("sandbox: Off\n", ".skill-evals.yml:1: $.sandbox: must be one of auto, required, off "
         "(in lower case)"),
        ("improve: no\n", ".skill-evals.yml:1: $.improve: must be one of off, suggest, false "
         "(yes, no, on and off are read as text, not true or false)"),
        ("jobs: 1\ntrials: '3'\n", ".skill-evals.yml:2: $.trials: must be a whole number, not "
         "text (write it without quotes)"),
        ("history: 2024\n", ".skill-evals.yml:1: $.history: must be text or false, not a whole "
         "number"),
        ("network-allow: on\n", ".skill-evals.yml:1: $['network-allow']: must be a list, not "
         "text"),
        ("routing:\n  cases: r.jsonl\n  gates:\n    min-accuracy: high\n",
         ".skill-evals.yml:4: $.routing.gates['min-accuracy']: must be null or a number from 0 "
         "to 1, not text"),
        ("judges:\n  default: x\n", ".skill-evals.yml:2: $.judges: the name default is "
         "reserved here"),
        ("routing: {}\n", ".skill-evals.yml:1: $.routing: needs the key 'cases'"),
        ("evidence:\n  toolPatterns:\n    - (?P<name>x)\n    - '('\n",
         ".skill-evals.yml:4: $.evidence.toolPatterns[1]: not a regular expression"),
        ("trials: 1\nhistory: ../h.jsonl\n", ".skill-evals.yml:2: $.history: give the history "
         "file relative to the repository root"),
    ],
)  # fmt: skip
def test_a_config_error_names_the_line_the_key_and_the_fix(
    tmp_path: Path, text: str, said: str
) -> None:
    done = _plan(tmp_path, text)
    assert done.returncode == 5, done.stderr
    assert said in done.stderr


@pytest.mark.parametrize(
    "text",
    [
        f"require-env: [{SECRET}]\n",  # the value pasted instead of the variable's name
        f"runner: x\ntrials: {SECRET}\n",
        f"sandbox: {SECRET}\n",
        f"credentials:\n  - env: {SECRET}\n    header: bearer\n    upstream: http://x\n",
    ],
)
def test_a_config_error_never_repeats_the_value(tmp_path: Path, text: str) -> None:
    done = _plan(tmp_path, text)
    assert done.returncode == 5, done.stderr
    assert ".skill-evals.yml:" in done.stderr
    assert SECRET not in done.stderr + done.stdout
    assert SECRET[:12] not in done.stderr + done.stdout


@pytest.mark.parametrize("word", ["on", "off", "yes", "no", "y", "n"])
def test_yaml_1_1_words_are_text_in_every_string_key(tmp_path: Path, word: str) -> None:
    """Names, globs, commands, hosts: the word itself, never a boolean."""
    text = (
        f"skills: ['{word}']\nrunner: {word}\njudges: {{{word}: {word}}}\n"
        f"require-env: [{word}]\nnetwork-allow: [{word}]\noverrides:\n  {word}:\n"
        f"    runner: {word}\n"
    )
    done = _plan(tmp_path, text)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"include": []}


def test_cache_max_age_zero_works_unquoted(tmp_path: Path) -> None:
    done = _plan(tmp_path, "cache-max-age: 0\n")
    assert done.returncode == 0, done.stderr
    done = _plan(tmp_path, "cache-max-age: 7\n")
    assert done.returncode == 5
    assert "$['cache-max-age']: must be text matching" in done.stderr
