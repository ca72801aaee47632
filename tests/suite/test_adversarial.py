"""Every parser and normaliser is linear: each gets ~4 MiB of adversarial input and must finish
in seconds (a super-linear one takes hours on these), without crashing and without quoting the
input in its error.

Each case runs in a forked child: a quadratic regular expression or sort holds the GIL inside
one C call, so only a separate process can be timed out.
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from skill_evals.agents.simulated import answer_from_body
from skill_evals.ci.config import parse_config
from skill_evals.errors import InvalidInput
from skill_evals.escaping.terminal import terminal_safe
from skill_evals.run.records import load_observations, load_recorded
from skill_evals.run.runner_output import parse_runner_error, parse_stdout
from skill_evals.suite import jsonl
from skill_evals.suite.cases import load_cases, normalize_prompt
from skill_evals.suite.nfkc import nfkc
from skill_evals.suite.skill import parse_frontmatter

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="forks a child per case")

MIB4 = 4 * 1024 * 1024 - 256  # just under the 4 MiB record limit
# Generous for 2 loaded cores; every case takes about a second. The quadratic versions of
# these took from minutes (300,000 spaces) to hours (4 MiB of alternating combining marks).
BOUND_SECONDS = 90


def run_bounded(work: Callable[[], object]) -> str:
    """Run ``work`` in a forked child: "ok", or "error: <message>" for an input error."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)

    def child() -> None:
        try:
            work()
            sender.send("ok")
        except (InvalidInput, ValueError) as exc:
            sender.send(f"error: {exc}")
        except BaseException as exc:  # reported, so the test names the crash
            sender.send(f"crash: {type(exc).__name__}: {str(exc)[:200]}")

    process = context.Process(target=child, daemon=True)
    process.start()
    try:
        if not receiver.poll(BOUND_SECONDS):
            pytest.fail(f"did not finish within {BOUND_SECONDS} s: not linear")
        result: str = receiver.recv()
    finally:
        process.kill()
        process.join()
    assert not result.startswith("crash"), result
    if result.startswith("error"):
        # Paths are the user's (a long TMPDIR makes them long): only the rest is bounded.
        said = result.replace(tempfile.gettempdir(), "TMP")
        assert len(said) < 600, "an error message must not quote the input"
    return result


# ------------------------------------------------------------------------ normalisation

PROMPTS: dict[str, Callable[[], str]] = {
    "spaces then x": lambda: " " * MIB4 + "x",
    "tabs then x": lambda: "\t" * MIB4 + "x",
    "space-newline pairs": lambda: " \n" * (MIB4 // 2),
    "carriage returns": lambda: "\r" * MIB4,
    "blank CRLF lines": lambda: " \t\r\n" * (MIB4 // 4),
    "alternating combining classes": lambda: "a" + "\u0301\u0316" * (MIB4 // 4),
    "marks hidden in starters": lambda: "\u0f73" * (MIB4 // 3),
    "short runs of marks": lambda: ("\u0316\u0301" * 16 + "a") * (MIB4 // 65),
    "huge expansion": lambda: "\ufdfa" * (MIB4 // 3),
    "CJK": lambda: "技能" * (MIB4 // 6),
}


@pytest.mark.parametrize("name", PROMPTS)
def test_normalize_prompt_is_linear(name: str) -> None:
    assert run_bounded(lambda: normalize_prompt(PROMPTS[name]())) == "ok"


def test_nfkc_equals_unicodedata_on_the_tricky_shapes() -> None:
    import unicodedata

    for text in [
        "a" + "\u0301\u0316" * 300,
        "\u0f73" * 300 + "\u0f71",
        "e\u0301\u0327 \u1e09\u0316" * 50,
        "\uff76\uff9e" * 100,
        "\u1100\u1161\u11a8" * 40,
        "\u212b\u0323" * 50,
        "\x01" * 50 + "\u0301" * 40,
    ]:
        assert nfkc(text) == unicodedata.normalize("NFKC", text)


# -------------------------------------------------------------------------------- JSON

RECORDS: dict[str, Callable[[], bytes]] = {
    "deep arrays": lambda: b"[" * MIB4,
    "deep objects": lambda: b'{"a":' * (MIB4 // 5),
    "many backslashes": lambda: b'{"a":"' + b"\\\\" * (MIB4 // 2 - 8) + b'"}',
    "escaped quotes": lambda: b'{"a":"' + b'\\"' * (MIB4 // 2 - 8) + b'"}',
    "lone surrogate escapes": lambda: b'{"a":"' + b"\\ud800" * (MIB4 // 6 - 2) + b'"}',
    "long integer": lambda: b'{"a":' + b"1" * (MIB4 - 8) + b"}",
    "long fraction": lambda: b'{"a":1.' + b"1" * (MIB4 - 9) + b"}",
    "long exponent": lambda: b'{"a":1e' + b"1" * (MIB4 - 9) + b"}",
    "spaces then garbage": lambda: b" " * MIB4 + b"x",
    "unterminated string": lambda: b'{"' + b"a" * MIB4,
    "duplicate keys": lambda: b"{" + b'"a":1,' * (MIB4 // 6 - 1) + b'"a":1}',
    "many keys": lambda: b"{" + b",".join(b'"k%d":1' % i for i in range(MIB4 // 12)) + b"}",
    "invalid UTF-8 at the end": lambda: b'{"a":"' + b"x" * (MIB4 - 9) + b'\xff"}',
}


@pytest.mark.parametrize("name", RECORDS)
def test_jsonl_record_is_linear(name: str) -> None:
    run_bounded(lambda: list(jsonl.iter_jsonl([RECORDS[name]()], Path("f.jsonl"))))


@pytest.mark.parametrize("name", RECORDS)
def test_runner_stdout_is_linear(name: str) -> None:
    run_bounded(lambda: parse_stdout(RECORDS[name](), "with"))
    run_bounded(lambda: parse_runner_error(b'{"runnerError": ' + RECORDS[name]()[6:]))


@pytest.mark.parametrize(
    "data",
    [b"\n" * MIB4, b" \n" * (MIB4 // 2), b"\r\n" * (MIB4 // 2), b"\t" * MIB4 * 3 + b"\n{}"],
    ids=["newlines", "blank lines", "CRLF lines", "long blank line"],
)
def test_jsonl_line_structure_is_linear(data: bytes) -> None:
    assert run_bounded(lambda: list(jsonl.iter_jsonl([data], Path("f.jsonl")))) == "ok"


def test_runner_stdout_shapes_are_linear() -> None:
    shapes = [
        b"\n" * MIB4,
        b"x\n" * (MIB4 // 2),
        b'{"' + b"k" * MIB4 + b'":1}',
        json.dumps({"variant": "with", "invokedSkills": ["s"] * (MIB4 // 8), "output": "o"})
        .replace("}", ', "exitCode": 0}')
        .encode(),
    ]
    for data in shapes:
        run_bounded(lambda data=data: parse_stdout(data, "with"))


# ---------------------------------------------------------------------------- case files


def _case(**fields: object) -> dict[str, object]:
    return {"id": "c1", "prompt": "p", "expectTrigger": True, **fields}


CASE_LINES: dict[str, Callable[[], dict[str, object]]] = {
    "prompt of spaces then x": lambda: _case(prompt=" " * MIB4 + "x"),
    "prompt of marks": lambda: _case(prompt="a" + "\u0301\u0316" * (MIB4 // 8)),
    "deep json_equals": lambda: _case(task={"check": "json_equals", "expected": "DEEP"}),
    "many includes_all strings": lambda: _case(
        task={"check": "includes_all", "expected": ["ab"] * (MIB4 // 6)}
    ),
    "many tags": lambda: _case(tags=["t"] * (MIB4 // 5)),
    "many loaded names": lambda: _case(loaded={"include": [f"n{i}" for i in range(MIB4 // 9)]}),
    "huge id": lambda: _case(id="i" * MIB4),
    "huge unknown field": lambda: _case(**{"k" * MIB4: 1}),
}


@pytest.mark.parametrize("name", CASE_LINES)
def test_jsonl_case_file_is_linear(name: str, tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    line = json.dumps(CASE_LINES[name]()).replace('"DEEP"', "[" * 5000 + "]" * 5000)
    path.write_text(line + "\n", encoding="utf-8")
    run_bounded(lambda: load_cases(path, "skill"))


YAML_CASES: dict[str, Callable[[], str]] = {
    "quoted prompt of spaces": lambda: (
        "cases:\n - id: a\n   prompt: '" + " " * MIB4 + "x'\n   expectTrigger: true\n"
    ),
    "plain prompt like a float": lambda: (
        "cases:\n - id: a\n   prompt: " + "1" * MIB4 + "x\n   expectTrigger: true\n"
    ),
    "long integer": lambda: (
        "cases:\n - {id: a, prompt: x, expectTrigger: true, "
        "task: {check: exit_code, expected: " + "1" * MIB4 + "}}\n"
    ),
    "escapes in double quotes": lambda: (
        'cases:\n - id: a\n   prompt: "' + "\\u0301\\u0316" * (MIB4 // 12) + '"\n'
        "   expectTrigger: true\n"
    ),
    "flow nesting": lambda: "cases: " + "[" * MIB4,
    "block nesting": lambda: "cases:\n" + "- " * (MIB4 // 2) + "x\n",
    "deep indentation": lambda: "cases:\n" + " " * MIB4 + "- x\n",
    "long comment": lambda: "#" * MIB4 + "\ncases: []\n",
    "many small aliases": lambda: (
        "cases:\n - id: a\n   prompt: x\n   expectTrigger: true\n   tags: &t [a, b, c, d]\n"
        + "".join(
            f" - {{id: c{i}, prompt: p{i}, expectTrigger: true, tags: *t}}\n" for i in range(9000)
        )
    ),
    "one large anchor aliased": lambda: (
        "cases:\n - id: a\n   prompt: &p "
        + "x" * MIB4
        + "\n   expectTrigger: true\n"
        + "".join(f" - {{id: c{i}, prompt: *p, expectTrigger: true}}\n" for i in range(100))
    ),
}


@pytest.mark.parametrize("name", YAML_CASES)
def test_yaml_case_file_is_linear(name: str, tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(YAML_CASES[name](), encoding="utf-8")
    run_bounded(lambda: load_cases(path, "skill"))


# ---------------------------------------------------------------------- SKILL.md, config

FRONTMATTER: dict[str, Callable[[], str]] = {
    "never closed": lambda: "---\n" + "a\n" * (MIB4 // 2),
    "near-delimiter lines": lambda: "---\n" + "----\n-- \n--- x\n" * (MIB4 // 16),
    "a line of spaces": lambda: "---\n" + " " * MIB4 + "\n---\n",
    "long value": lambda: "---\na: " + "b" * MIB4 + "\n---\n",
    "flow nesting": lambda: "---\na: " + "[" * MIB4 + "\n---\n",
    "block nesting": lambda: "---\n" + "- " * (MIB4 // 2) + "x\n---\n",
    "backslashes in double quotes": lambda: '---\na: "' + "\\\\" * (MIB4 // 2) + '"\n---\n',
    "many keys": lambda: "---\n" + "".join(f"k{i}: v\n" for i in range(MIB4 // 40)) + "---\n",
    "line separators": lambda: "---\n" + "a: b\u2028c\n" * 10 + "x: " + "\u2028" * MIB4 + "\n---\n",
    "many aliases": lambda: (
        "---\nbase: &a "
        + "x" * 1000
        + "\n"
        + "".join(f"k{i}: *a\n" for i in range(MIB4 // 12))
        + "---\n"
    ),
}


@pytest.mark.parametrize("name", FRONTMATTER)
def test_frontmatter_is_linear(name: str) -> None:
    run_bounded(lambda: parse_frontmatter(FRONTMATTER[name]()))


CONFIGS: dict[str, Callable[[], str]] = {
    "flow nesting": lambda: "skills: " + "[" * MIB4,
    "long scalar": lambda: "runner: " + "x" * MIB4,
    "alias bomb": lambda: (
        "a: &a ["
        + ",".join(["x"] * 10)
        + "]\n"
        + "".join(
            f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]\n"
            for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
        )
        + "skills: ["
        + ",".join(["*i"] * 10)
        + "]\n"
    ),
    "recursive alias": lambda: "overrides: &a {x: *a}\n",
    # Schema validation costs ~10 µs a node, so 4 MiB of overrides would take a minute.
    "many keys": lambda: "overrides:\n" + "".join(f"  s{i}: {{trials: 2}}\n" for i in range(4000)),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_config_is_linear(name: str) -> None:
    run_bounded(lambda: parse_config(CONFIGS[name]().encode(), "cfg"))


def test_config_alias_bomb_and_deep_nesting_are_input_errors() -> None:
    for name in ("alias bomb", "flow nesting", "recursive alias"):
        assert run_bounded(
            lambda name=name: parse_config(CONFIGS[name]().encode(), "cfg")
        ).startswith("error: cfg")


# ------------------------------------------------------------------------ observations


def test_observation_files_are_linear(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "prompt": f"p{i}", "expectTrigger": True}) + "\n"
            for i in range(10)
        ),
        encoding="utf-8",
    )
    suite = load_cases(cases, "skill")
    record = {"caseId": "c0", "trial": 1, "variant": "with", "exitCode": 0}
    shapes = [
        {**record, "invokedSkills": ["s"] * (MIB4 // 6), "output": ""},
        {**record, "invokedSkills": [], "output": "\\" * (MIB4 // 2 - 100)},
        {
            **record,
            "invokedSkills": [],
            "output": "",
            "meta": {f"k{i}": i for i in range(MIB4 // 16)},
        },
    ]
    for shape in shapes:
        path = tmp_path / "obs.jsonl"
        path.write_text(json.dumps(shape) + "\n", encoding="utf-8")
        run_bounded(lambda path=path: load_observations(path, suite, 1, "skill"))
        run_bounded(lambda path=path: load_recorded(path, suite, 1))


# -------------------------------------------------------------------- printing, runners


def test_terminal_escaping_is_linear() -> None:
    assert run_bounded(lambda: terminal_safe("\x1b" * MIB4)) == "ok"
    assert run_bounded(lambda: terminal_safe("a\u202e" * (MIB4 // 4))) == "ok"


def test_simulated_runner_answer_is_linear() -> None:
    bodies = [
        "# JSON\n" + "```json\n" * (MIB4 // 8),
        "# JSON\n```json" + "\n" * MIB4 + "x",
        "# JSON\n```json\n" + "{}\n" * (MIB4 // 3),
    ]
    for body in bodies:
        assert run_bounded(lambda body=body: answer_from_body("json please", body)) == "ok"


def test_skill_globs_are_linear() -> None:
    from skill_evals.suite.skill_dirs import Glob

    stars = Glob("*a" * 12 + "b")  # a regular expression retried every split: hours
    deep = Glob("/".join(["**/a*"] * 12) + "/x")
    assert run_bounded(lambda: stars.match("a" * 4000)) == "ok"
    assert run_bounded(lambda: deep.match("/".join(["a"] * 2000) + "/y")) == "ok"
    assert not stars.match("a" * 300) and stars.match("a" * 30 + "b")
    assert not Glob("a[!b]c").match("a/c")  # a class never spans segments
