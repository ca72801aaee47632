"""`skill-evals mcp-serve` against hostile input that is not HTTP: JSON-RPC bytes of any shape
(stdio and the shared decoder), skill folders that are not plain files, and `--http` values."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skill_evals.suite.jsonl
from skill_evals.agents.mcp_server import (
    MAX_BATCH_MESSAGES,
    MAX_MESSAGE_BYTES,
    MAX_NESTING,
    Session,
    SkillServer,
    parse_http_address,
    serve_stdio,
)
from skill_evals.agents.mcp_server.jsonrpc import MessageError, decode_message, nesting_depth
from tests.conftest import write_skill

PING = b'{"jsonrpc":"2.0","id":"after","method":"ping"}'


@pytest.fixture
def server(tmp_path: Path) -> SkillServer:
    return SkillServer.from_dirs([write_skill(tmp_path, "refund-policy")])


def _stdio(server: SkillServer, data: bytes, **kwargs: Any) -> list[dict[str, Any]]:
    out, err = io.BytesIO(), io.StringIO()
    serve_stdio(server, io.BytesIO(data), out, err, **kwargs)
    return [json.loads(line) for line in out.getvalue().splitlines()]


# ------------------------------------------------------------------------ hostile messages

HOSTILE_LINES = [
    (b"[" * 200_000, -32700),  # the reported crash: deep nesting
    (b"{" * 200_000, -32700),
    (b'{"a":' * (MAX_NESTING + 1) + b"1" + b"}" * (MAX_NESTING + 1), -32700),
    (b"[" * MAX_NESTING + b"]" * MAX_NESTING, -32600),  # deep enough but legal: a batch
    (b"\xff\xfe", -32700),
    (b"\xc0\xaf", -32700),  # overlong UTF-8
    (b"\xed\xa0\x80", -32700),  # a surrogate encoded in UTF-8
    (b'{"id": "\\ud800", "jsonrpc": "2.0", "method": "ping"}', -32700),  # lone surrogate
    (b'{"id": NaN}', -32700),
    (b'{"id": Infinity}', -32700),
    (b'{"id": -Infinity}', -32700),
    (b'{"jsonrpc":"2.0","id":1e999,"method":"ping"}', -32700),
    (b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}', -32700),
    (b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', -32700),  # duplicate key
    (b"\x00", -32700),
    (b'["' + b'\\"' * 10_000, -32700),  # unterminated string full of escapes
    (b"null", -32600),
    (b"42", -32600),
    (b'"text"', -32600),
    (b"true", -32600),
    (b"[]", -32600),
    (b"[" + b",".join([PING] * (MAX_BATCH_MESSAGES + 1)) + b"]", -32600),
    (b'{"jsonrpc":"2.0","id":1,"method":"' + b"m" * 100_000 + b'"}', -32601),
]


@pytest.mark.parametrize(("line", "code"), HOSTILE_LINES, ids=range(len(HOSTILE_LINES)))
def test_stdio_answers_any_line_with_an_error_and_goes_on(
    server: SkillServer, line: bytes, code: int
) -> None:
    replies = _stdio(server, line + b"\n" + PING + b"\n")
    assert len(replies) == 2
    assert replies[0]["error"]["code"] == code
    assert "result" not in replies[0]
    assert len(replies[0]["error"]["message"]) < 400  # never the input echoed back in full
    assert replies[1] == {"jsonrpc": "2.0", "id": "after", "result": {}}


def test_stdio_process_survives_deep_nesting(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "refund-policy")
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "mcp-serve", "--skill", str(skill)],
        input=b"[" * 200_000 + b"\n" + PING + b"\n",
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == [None, "after"]
    assert replies[0]["error"]["code"] == -32700
    assert b"internal error" not in proc.stderr


def test_stdio_line_limit_is_enforced_in_bounded_chunks(server: SkillServer) -> None:
    replies = _stdio(
        server,
        b"[" * 5000 + b"\n" + b"x" * 999 + b"\n" + PING + b"\n",
        max_message_bytes=1000,
    )
    assert [r["error"]["code"] for r in replies[:2]] == [-32700, -32700]
    assert "longer than 1000 bytes" in replies[0]["error"]["message"]
    assert replies[2]["result"] == {}


def test_stdio_batch_of_notifications_in_2025_03_26_sends_nothing(server: SkillServer) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize"}
    init["params"] = {"protocolVersion": "2025-03-26"}  # type: ignore[assignment]
    batch = [{"jsonrpc": "2.0", "method": "notifications/initialized"}] * 3
    lines = json.dumps(init).encode() + b"\n" + json.dumps(batch).encode() + b"\n" + PING
    assert [r["id"] for r in _stdio(server, lines)] == [1, "after"]


def test_unknown_resource_is_a_jsonrpc_error_not_a_result(server: SkillServer) -> None:
    for uri in ("skill://nonexistent/SKILL.md", "skill://refund-policy/other.md", "x" * 10_000):
        response = server.handle_message(
            {"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": uri}},
            Session(),
        )
        assert response is not None and "result" not in response
        assert response["error"]["code"] == -32002
        assert len(response["error"]["data"]["uri"]) <= 201


# ------------------------------------------------------------------------ linear decoding


ADVERSARIAL = {
    "open brackets": b"[" * MAX_MESSAGE_BYTES,
    "bracket pairs": b"[]" * (MAX_MESSAGE_BYTES // 2),
    "quotes": b'"' * MAX_MESSAGE_BYTES,
    "escaped quotes": b'"' + b'\\"' * (MAX_MESSAGE_BYTES // 2 - 1),
    "backslashes": b"\\" * MAX_MESSAGE_BYTES,
    "brackets in strings": b"[" + b'"[{",' * (MAX_MESSAGE_BYTES // 5 - 1) + b"1]",
    "spaces": b"{" + b" " * (MAX_MESSAGE_BYTES - 2) + b"}",
}


@pytest.mark.parametrize("name", ADVERSARIAL)
def test_decoding_a_4_mib_adversarial_message_is_fast(name: str) -> None:
    data = ADVERSARIAL[name]
    assert len(data) <= MAX_MESSAGE_BYTES
    start = time.perf_counter()
    with contextlib.suppress(MessageError):
        decode_message(data)
    assert time.perf_counter() - start < 5  # linear: well under a second on a quiet machine


def test_message_over_the_byte_limit_is_refused_before_parsing() -> None:
    with pytest.raises(MessageError, match="longer than"):
        decode_message(b" " * (MAX_MESSAGE_BYTES + 1))


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(_JSON)
def test_nesting_depth_is_exact_for_valid_json(value: Any) -> None:
    data = json.dumps(value, ensure_ascii=False).encode("utf-8")
    expected = _depth(value)
    measured = nesting_depth(data)
    # Below the cheap bracket-count bound the function only promises "not deeper than it".
    assert measured == expected or (measured == MAX_NESTING and expected <= MAX_NESTING)
    wrapped = b"[" * MAX_NESTING + data + b"]" * MAX_NESTING
    assert nesting_depth(wrapped) == expected + MAX_NESTING


# ---------------------------------------------------------------------- skill folders


def test_fifo_skill_md_is_refused_without_blocking(tmp_path: Path) -> None:
    skill = tmp_path / "fifo-skill"
    skill.mkdir()
    os.mkfifo(skill / "SKILL.md")
    with pytest.raises(ValueError, match=r"SKILL\.md must be a regular file"):
        SkillServer.from_dirs([skill])


def test_symlinked_skill_md_is_refused(tmp_path: Path) -> None:
    real = write_skill(tmp_path / "real", "linked")
    skill = tmp_path / "linked"
    skill.mkdir()
    (skill / "SKILL.md").symlink_to(real / "SKILL.md")
    with pytest.raises(ValueError, match="symlink"):
        SkillServer.from_dirs([skill])


def test_oversized_skill_md_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skill = write_skill(tmp_path, "big", body="x" * 500)
    monkeypatch.setattr(skill_evals.suite.jsonl, "MAX_FILE_BYTES", 100)
    with pytest.raises(ValueError, match=r"SKILL\.md.*limit is 100 bytes"):
        SkillServer.from_dirs([skill])


# ---------------------------------------------------------------------------- --http


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("127.0.0.1:8765", ("127.0.0.1", 8765)),
        ("localhost:0", ("localhost", 0)),
        ("[::1]:65535", ("::1", 65535)),
        ("0.0.0.0:080", ("0.0.0.0", 80)),
    ],
)
def test_http_address_parses(value: str, expected: tuple[str, int]) -> None:
    assert parse_http_address(value) == expected


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("127.0.0.1:99999", "from 0 to 65535"),
        ("127.0.0.1:65536", "from 0 to 65535"),
        ("127.0.0.1:²", "from 0 to 65535"),
        ("127.0.0.1:٣٣", "from 0 to 65535"),
        ("127.0.0.1:-1", "from 0 to 65535"),
        ("127.0.0.1:+80", "from 0 to 65535"),
        ("127.0.0.1: 80", "from 0 to 65535"),
        ("127.0.0.1:" + "0" * 50, "from 0 to 65535"),
        ("127.0.0.1", "expected HOST:PORT"),
        (":8765", "expected HOST:PORT"),
        ("[]:8765", "expected HOST:PORT"),
        ("::1:8765", "in brackets"),
        ("[::1:8765", "in brackets"),
        ("local host:8765", "spaces or control"),
        ("local\x1bhost:8765", "spaces or control"),
    ],
)
def test_bad_http_address_names_the_option(value: str, problem: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_http_address(value)
    message = str(err.value)
    assert message.startswith("--http ") and problem in message
    assert "\n" not in message


@pytest.mark.parametrize("value", ["127.0.0.1:99999", "127.0.0.1:²", "no-such-host.invalid:80"])
def test_cli_bad_http_address_exits_5(tmp_path: Path, value: str) -> None:
    skill = write_skill(tmp_path, "refund-policy")
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "mcp-serve", "--skill", str(skill), "--http", value],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 5, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("skill-evals: error: --http ")
    assert "internal error" not in proc.stderr
