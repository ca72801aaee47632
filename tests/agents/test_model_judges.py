"""The built-in judges against loopback fakes of the Anthropic Messages and OpenAI Chat
Completions APIs: `skill-evals judge …` as a subprocess pointed at them with dummy keys. They
send the documented request, keep the key in its header only, and turn every HTTP failure into
a clear runnerError; through `test --judge` their verdicts gate like any other."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._judge_helpers import cli_args, make_suite, report_of, run_cli
from tests.agents.fake_judge_api import (
    FakeJudgeApi,
    Reply,
    anthropic_text,
    openai_text,
    run_model_command,
)
from tests.conftest import assert_valid_report

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-dummy-0123456789-SECRETKEY"
REQUEST = {
    "kind": "absolute",
    "prompt": "Write the notes for 2.1",
    "rubric": "Has a heading.",
    "scale": [1, 5],
    "threshold": 4,
    "answer": {
        "output": "## 2.1\n- faster",
        "files": [{"path": "NOTES.md", "text": "notes file", "truncated": True}],
    },
}
PAIR = {
    "kind": "pairwise",
    "prompt": "Write the notes",
    "rubric": "Clear.",
    "a": {"output": "first answer", "files": []},
    "b": {"output": "second answer", "files": []},
}
VERDICT = '{"score": 4.5, "pass": true, "reason": "has a heading"}'


@pytest.fixture
def fake() -> Iterator[FakeJudgeApi]:
    server = FakeJudgeApi([anthropic_text(f"```json\n{VERDICT}\n```")])
    yield server
    server.stop()


def _judge(provider: str, url: str, request: dict[str, Any], *more: str, key: bool = True) -> Any:
    return run_model_command("judge", provider, url, KEY if key else None, request, *more)


def _line(done: Any) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    assert KEY not in done.stdout and KEY not in done.stderr
    return json.loads(lines[0])


def test_anthropic_sends_the_documented_request(fake: FakeJudgeApi) -> None:
    answer = _line(_judge("anthropic", fake.url, REQUEST, "--model", "claude-x"))
    assert answer["score"] == 4.5 and answer["pass"] is True
    assert answer["meta"]["inputTokens"] == 120 and answer["meta"]["outputTokens"] == 30
    (seen,) = fake.log
    assert seen["path"] == "/v1/messages"
    assert seen["headers"]["x-api-key"] == KEY
    assert seen["headers"]["anthropic-version"] == "2023-06-01"
    body = seen["body"]
    assert set(body) == {"model", "max_tokens", "temperature", "system", "messages"}
    assert body["model"] == "claude-x" and body["max_tokens"] == 1024 and body["temperature"] == 0
    assert KEY not in json.dumps(body) and KEY not in seen["path"]
    docs = (REPO / "docs" / "judging.md").read_text("utf-8")
    assert body["system"] in docs  # printed verbatim
    (message,) = body["messages"]
    text = message["content"]
    assert message["role"] == "user"
    assert json.loads(text) == REQUEST  # the request itself, one JSON document
    order = [text.index(f'"{x}"') for x in ("prompt", "rubric", "scale", "threshold", "answer")]
    assert order == sorted(order) and text.index('"output"') < text.index('"files"')


def test_openai_sends_the_documented_request() -> None:
    server = FakeJudgeApi([openai_text(VERDICT)])
    try:
        answer = _line(
            _judge("openai", server.url, PAIR | {}, "--model", "gpt-x", "--max-tokens", "7")
        )
    finally:
        server.stop()
    assert answer == {"runnerError": "the judge model's reply is not a verdict", "retryable": False}
    (seen,) = server.log
    assert seen["path"] == "/chat/completions"
    assert seen["headers"]["authorization"] == f"Bearer {KEY}"
    body = seen["body"]
    assert set(body) == {"model", "max_tokens", "temperature", "messages"}
    assert body["max_tokens"] == 7 and body["temperature"] == 0
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    docs = (REPO / "docs" / "judging.md").read_text("utf-8")
    assert system["content"] in docs
    assert user["content"].index("first answer") < user["content"].index("second answer")
    assert json.loads(user["content"]) == PAIR


def test_openai_verdicts_carry_usage() -> None:
    server = FakeJudgeApi([openai_text('{"winner": "b", "reason": "clearer"}')])
    try:
        answer = _line(_judge("openai", server.url, PAIR, "--model", "gpt-x"))
    finally:
        server.stop()
    assert answer["winner"] == "b" and answer["meta"]["inputTokens"] == 90
    assert answer["meta"]["outputTokens"] == 20


@pytest.mark.parametrize(
    ("reply", "reason", "retryable"),
    [
        (Reply(429, b"{}"), "anthropic API answered HTTP 429", True),
        (Reply(529, b"{}"), "anthropic API answered HTTP 529", True),
        (Reply(500, b'{"error": "sk-dummy leaked"}'), "anthropic API answered HTTP 500", True),
        (Reply(401, b"{}"), "anthropic API answered HTTP 401", False),
        (Reply(drop=True), "anthropic API connection failed", True),
        (anthropic_text("I think it is fine, SECRET-TEXT."), "the judge model's reply is not a",
         False),
        (Reply(200, b'{"choices": []}'),
         "anthropic API reply is not an Anthropic Messages response", False),
        (Reply(200, b'{"content": [{"type": "text", "text": "' + b"x" * 1_100_000 + b'"}]}'),
         "anthropic API reply is over 1048576 bytes", False),
    ],
)  # fmt: skip
def test_http_failures_become_clear_reasons(reply: Reply, reason: str, retryable: bool) -> None:
    server = FakeJudgeApi([reply])
    try:
        answer = _line(_judge("anthropic", server.url, REQUEST, "--model", "m"))
    finally:
        server.stop()
    assert answer["runnerError"].startswith(reason) and answer["retryable"] is retryable
    assert "SECRET-TEXT" not in answer["runnerError"] and "leaked" not in answer["runnerError"]


def test_a_reply_of_another_shape_is_named_in_prose() -> None:
    server = FakeJudgeApi([Reply(200, b'{"content": []}')])
    try:
        answer = _line(_judge("openai", server.url, PAIR, "--model", "gpt-x"))
    finally:
        server.stop()
    assert answer == {
        "runnerError": "openai API reply is not an OpenAI Chat Completions response",
        "retryable": False,
    }


def test_a_missing_key_or_model_is_named(fake: FakeJudgeApi) -> None:
    answer = _line(_judge("anthropic", fake.url, REQUEST, "--model", "m", key=False))
    assert answer == {
        "runnerError": "ANTHROPIC_API_KEY is not set; export it to use this judge",
        "retryable": False,
    }
    done = _judge("anthropic", fake.url, REQUEST)
    assert done.returncode == 5 and "--model is required" in done.stderr
    assert not fake.log


def test_a_suite_judged_by_the_builtin_judge_gates(tmp_path: Path) -> None:
    good, bad = (
        '{"score": 1, "pass": true, "reason": "ok"}',
        '{"score": 0, "pass": false, "reason": "no"}',
    )
    rows = {f"c{i}": {"with": {"output": "A"}, "without": {"output": "B"}} for i in range(10)}
    make_suite(tmp_path, rows, [{"check": "judge", "rubric": "Good notes."}])
    server = FakeJudgeApi([anthropic_text(good)])
    try:
        # The fake answers by the answer it is shown: A is good, B is not.
        server.script = [anthropic_text(good)]
        original = server.server.RequestHandlerClass.do_POST

        def scripted(handler: Any) -> None:
            shown = json.loads(_peek(handler))["answer"]["output"]
            server.script = [anthropic_text(good if shown == "A" else bad)]
            original(handler)

        server.server.RequestHandlerClass.do_POST = scripted  # type: ignore[method-assign]
        env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": KEY, "NO_PROXY": "127.0.0.1"}
        judge = "skill-evals judge anthropic --model m"
        args = cli_args(tmp_path, "--judge", judge, "--min-uplift", "0.5", "--report", "r.json")
        done = run_cli(tmp_path, *args, env=env)
    finally:
        server.stop()
    report = report_of(tmp_path / "r.json")
    assert_valid_report(report)
    assert done.returncode == 0, done.stdout + done.stderr
    assert report["task"]["difference"] == 1.0 and len(server.log) == 20
    assert report["runner"]["ledger"]["judge"]["inputTokens"] == 20 * 120
    assert KEY not in json.dumps(report) and KEY not in (tmp_path / "r.json").read_text()


def _peek(handler: Any) -> str:
    """The request body, read once and put back for the fake's own handler."""
    import io

    length = int(handler.headers.get("content-length") or 0)
    body = handler.rfile.read(length)
    handler.rfile = io.BytesIO(body)
    return str(json.loads(body)["messages"][0]["content"])


def test_the_docs_print_both_system_prompts() -> None:
    from skill_evals.agents.model_judges import ABSOLUTE_SYSTEM, PAIRWISE_SYSTEM

    docs = (REPO / "docs" / "judging.md").read_text("utf-8")
    for prompt in (ABSOLUTE_SYSTEM, PAIRWISE_SYSTEM):
        assert f"```text\n{prompt}\n```" in docs
