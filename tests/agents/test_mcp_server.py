"""`skill-evals mcp-serve`: checked with the official MCP client library (stdio and streamable
HTTP, against the real `python -m skill_evals mcp-serve` process) and at the raw protocol level."""

from __future__ import annotations

import http.client
import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, ClientSession, StdioServerParameters  # test dependency (`[test]` extra)
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from skill_evals.agents.mcp_server import (
    LATEST_PROTOCOL_VERSION,
    MAX_MESSAGE_BYTES,
    SUPPORTED_PROTOCOL_VERSIONS,
    Session,
    SkillServer,
    make_http_server,
    serve_stdio,
)
from tests.conftest import write_skill

try:  # renamed in mcp 2.x; keep working with 1.x
    from mcp.client.streamable_http import streamable_http_client as http_client
except ImportError:  # pragma: no cover
    from mcp.client.streamable_http import streamablehttp_client as http_client

REFUND_BODY = "# Refund policy\n\nRefunds within 30 days with a receipt.\n"


@pytest.fixture
def skills(tmp_path: Path) -> list[Path]:
    return [
        write_skill(tmp_path, "refund-policy", body=REFUND_BODY),
        write_skill(tmp_path, "brand-deck", description="Build slide decks in the house style."),
    ]


def _md(skill: Path) -> str:
    return (skill / "SKILL.md").read_text(encoding="utf-8")


def _server_args(skills: list[Path]) -> list[str]:
    args = ["-m", "skill_evals", "mcp-serve"]
    for skill in skills:
        args += ["--skill", str(skill)]
    return args


# ------------------------------------------------------------------ official client: stdio


def _run(main: Callable[[], Awaitable[None]]) -> None:
    """Run one client scenario with a hard time limit (a hung server fails, never blocks)."""

    async def bounded() -> None:
        with anyio.fail_after(60):
            await main()

    anyio.run(bounded)


async def _exercise(session: ClientSession, skills: list[Path]) -> None:
    """The common client-side checks for one connected, initialized session."""
    tools = await session.list_tools()
    by_name = {t.name: t for t in tools.tools}
    assert set(by_name) == {"load_refund_policy_skill", "load_brand_deck_skill"}
    assert by_name["load_brand_deck_skill"].description == "Build slide decks in the house style."
    assert by_name["load_refund_policy_skill"].input_schema["type"] == "object"
    assert not by_name["load_refund_policy_skill"].input_schema.get("properties")

    result = await session.call_tool("load_refund_policy_skill", {})
    assert not result.is_error
    assert [c.type for c in result.content] == ["text"]
    assert result.content[0].text == _md(skills[0])  # type: ignore[union-attr]

    resources = await session.list_resources()
    listed = {str(r.uri): r for r in resources.resources}
    assert set(listed) == {"skill://refund-policy/SKILL.md", "skill://brand-deck/SKILL.md"}
    assert {r.mime_type for r in listed.values()} == {"text/markdown"}

    read = await session.read_resource("skill://brand-deck/SKILL.md")
    assert len(read.contents) == 1
    assert read.contents[0].text == _md(skills[1])  # type: ignore[union-attr]
    assert read.contents[0].mime_type == "text/markdown"

    templates = await session.list_resource_templates()
    assert templates.resource_templates == []

    with pytest.raises(MCPError) as unknown:
        await session.call_tool("load_nonexistent_skill", {})
    assert unknown.value.code == -32602
    assert "load_nonexistent_skill" in unknown.value.message

    with pytest.raises(MCPError) as missing:
        await session.read_resource("skill://nonexistent/SKILL.md")
    assert missing.value.code == -32002


def test_official_client_over_stdio(skills: list[Path]) -> None:
    params = StdioServerParameters(command=sys.executable, args=_server_args(skills))

    async def main() -> None:
        with open(os.devnull, "w") as errlog:  # the server's startup line is not ours to show
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                init = await session.initialize()
                assert init.protocol_version == LATEST_PROTOCOL_VERSION
                assert init.server_info.name == "skill-evals"
                assert init.capabilities.tools is not None
                assert init.capabilities.resources is not None
                await _exercise(session, skills)

    _run(main)


def test_official_high_level_client_falls_back_from_discover_over_stdio(
    skills: list[Path],
) -> None:
    # mode="auto" probes the 2026 `server/discover` first; the server offers 2026-07-28, so the
    # client speaks it (stateless requests; an older client falls back to initialize).
    params = StdioServerParameters(command=sys.executable, args=_server_args(skills[:1]))

    async def main() -> None:
        async with Client(params) as client:
            assert client.protocol_version in ("2026-07-28", *SUPPORTED_PROTOCOL_VERSIONS)
            result = await client.call_tool("load_refund_policy_skill", {})
            assert result.content[0].text == _md(skills[0])  # type: ignore[union-attr]

    _run(main)


# ------------------------------------------------------------------- official client: HTTP


@pytest.fixture
def http_url(skills: list[Path], tmp_path: Path) -> Iterator[str]:
    """`skill-evals mcp-serve --http 127.0.0.1:0` as a real process; the URL from its stderr
    (a file, not a pipe: the request log must never fill a pipe buffer and block the server)."""
    log_path = tmp_path / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, *_server_args(skills), "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + 30
        match = None
        while match is None and time.monotonic() < deadline and proc.poll() is None:
            match = re.search(r"http://127\.0\.0\.1:\d+/mcp", log_path.read_text())
            time.sleep(0.02)
        assert match, f"server did not start: {log_path.read_text()!r}"
        yield match.group(0)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait()


def test_official_client_over_streamable_http(skills: list[Path], http_url: str) -> None:
    async def main() -> None:
        async with http_client(http_url) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                assert init.protocol_version == LATEST_PROTOCOL_VERSION
                await _exercise(session, skills)

    _run(main)


def test_official_high_level_client_over_http(skills: list[Path], http_url: str) -> None:
    async def main() -> None:
        async with Client(http_url) as client:
            assert client.protocol_version in ("2026-07-28", *SUPPORTED_PROTOCOL_VERSIONS)
            tools = await client.list_tools()
            assert len(tools.tools) == 2
            read = await client.read_resource("skill://refund-policy/SKILL.md")
            assert read.contents[0].text == _md(skills[0])  # type: ignore[union-attr]

    _run(main)


# ------------------------------------------------------------------------ raw protocol core


def _init(server: SkillServer, session: Session, version: str = "2025-06-18") -> Any:
    return server.handle_message(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t"}},
        },
        session,
    )


@pytest.fixture
def server(skills: list[Path]) -> SkillServer:
    return SkillServer.from_dirs(skills)


@pytest.mark.parametrize("version", SUPPORTED_PROTOCOL_VERSIONS)
def test_initialize_echoes_a_supported_version(server: SkillServer, version: str) -> None:
    response = _init(server, Session(), version)
    assert response["result"]["protocolVersion"] == version
    capabilities = response["result"]["capabilities"]
    assert set(capabilities) == {"tools", "resources", "extensions"}
    assert capabilities["extensions"] == {"io.modelcontextprotocol/skills": {}}


def test_initialize_answers_latest_for_an_unknown_version(server: SkillServer) -> None:
    response = _init(server, Session(), "1999-01-01")
    assert response["result"]["protocolVersion"] == LATEST_PROTOCOL_VERSION


def test_initialize_without_version_is_invalid_params(server: SkillServer) -> None:
    response = server.handle_message(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}, Session()
    )
    assert response is not None
    assert response["error"]["code"] == -32602


def test_tool_fields_follow_the_negotiated_version(server: SkillServer) -> None:
    old, new = Session(), Session()
    _init(server, old, "2024-11-05")
    _init(server, new, "2025-11-25")
    request = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    old_tool = server.handle_message(request, old)["result"]["tools"][0]  # type: ignore[index]
    new_tool = server.handle_message(request, new)["result"]["tools"][0]  # type: ignore[index]
    assert "title" not in old_tool and "annotations" not in old_tool
    assert new_tool["title"] == "Load the refund-policy skill"
    assert new_tool["annotations"]["readOnlyHint"] is True
    assert new_tool["inputSchema"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_parse_error(server: SkillServer) -> None:
    response = server.handle_bytes(b'{"jsonrpc": "2.0", "id": 1, "method": ', Session())
    assert response == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": response["error"]["message"]},
    }
    assert server.handle_bytes(b"\xff\xfe", Session())["error"]["code"] == -32700
    assert server.handle_bytes(b'{"id": NaN}', Session())["error"]["code"] == -32700


def test_unknown_method(server: SkillServer) -> None:
    response = server.handle_message(
        {"jsonrpc": "2.0", "id": "a", "method": "prompts/list"}, Session()
    )
    assert response == {
        "jsonrpc": "2.0",
        "id": "a",
        "error": {"code": -32601, "message": "Method not found: prompts/list"},
    }


def test_discover_offers_the_modern_and_legacy_versions(server: SkillServer) -> None:
    response = server.handle_message(
        {"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}}, Session()
    )
    assert response is not None
    result = response["result"]
    assert result["supportedVersions"] == ["2026-07-28", *SUPPORTED_PROTOCOL_VERSIONS]
    assert result["resultType"] == "complete" and result["cacheScope"] == "private"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "skill-evals"


def test_notifications_get_no_response(server: SkillServer) -> None:
    session = Session()
    _init(server, session)
    assert not session.initialized
    assert (
        server.handle_message({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        is None
    )
    assert session.initialized
    # Even an unknown or malformed-params notification is never answered.
    assert server.handle_message({"jsonrpc": "2.0", "method": "no/such"}, session) is None
    assert (
        server.handle_message({"jsonrpc": "2.0", "method": "tools/call", "params": 3}, session)
        is None
    )
    # A response from the client (we never send requests) is not answered either.
    assert server.handle_message({"jsonrpc": "2.0", "id": 9, "result": {}}, session) is None


@pytest.mark.parametrize(
    ("message", "code", "reply_id"),
    [
        ([], -32600, None),
        (42, -32600, None),
        ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, -32600, 1),
        ({"jsonrpc": "2.0", "id": 1}, -32600, 1),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, -32600, 1),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, -32600, None),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, -32600, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, -32600, None),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}, -32602, 1),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}, -32602, 1),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "x", "arguments": []},
            },
            -32602,
            1,
        ),
        ({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {}}, -32602, 1),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": "x"}}, -32602, 1),
    ],
)
def test_invalid_messages(server: SkillServer, message: Any, code: int, reply_id: Any) -> None:
    response = server.handle_payload(message, Session())
    assert response["error"]["code"] == code
    assert response["id"] == reply_id


def test_ping_and_string_ids(server: SkillServer) -> None:
    response = server.handle_message({"jsonrpc": "2.0", "id": "p-1", "method": "ping"}, Session())
    assert response == {"jsonrpc": "2.0", "id": "p-1", "result": {}}


def test_tool_call_ignores_stray_arguments_and_returns_the_file(
    server: SkillServer, skills: list[Path]
) -> None:
    response = server.handle_message(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "load_brand_deck_skill", "arguments": {"why": "deck"}},
        },
        Session(),
    )
    assert response is not None
    assert response["result"] == {
        "content": [{"type": "text", "text": _md(skills[1])}],
        "isError": False,
    }


def test_skill_md_is_read_once_at_start(server: SkillServer, skills: list[Path]) -> None:
    original = _md(skills[0])
    (skills[0] / "SKILL.md").write_text("changed", encoding="utf-8")
    response = server.handle_message(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "resources/read",
            "params": {"uri": "skill://refund-policy/SKILL.md"},
        },
        Session(),
    )
    assert response is not None
    assert response["result"]["contents"][0]["text"] == original


def test_batches_only_in_2025_03_26(server: SkillServer) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "nope"},
        {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": "x"}},
    ]
    old = Session()
    _init(server, old, "2025-03-26")
    responses = server.handle_payload(batch, old)
    assert [r["id"] for r in responses] == [1, 2, 3]
    assert responses[0]["result"] == {}
    assert responses[1]["error"]["code"] == -32601
    assert responses[2]["error"]["code"] == -32600  # initialize must not be batched
    assert old.initialized
    assert server.handle_payload(batch[1:2], old) is None  # notifications only: nothing sent

    new = Session()
    _init(server, new, "2025-06-18")
    response = server.handle_payload(batch, new)
    assert response["id"] is None and response["error"]["code"] == -32600


# -------------------------------------------------------------------------- from_dirs errors


def test_from_dirs_missing_skill_md(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=re.escape(str(tmp_path / "empty")) + ".*SKILL.md"):
        SkillServer.from_dirs([tmp_path / "empty"])


def test_from_dirs_duplicate_names(tmp_path: Path) -> None:
    first = write_skill(tmp_path / "a", "same")
    second = write_skill(tmp_path / "b", "same")
    with pytest.raises(ValueError, match="'same' is already served from") as err:
        SkillServer.from_dirs([first, second])
    assert str(second) in str(err.value) and str(first) in str(err.value)


def test_from_dirs_name_that_cannot_be_a_tool(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "under_score")
    with pytest.raises(ValueError, match="under_score"):
        SkillServer.from_dirs([skill])


def test_from_dirs_uses_folder_name_without_frontmatter(tmp_path: Path) -> None:
    skill = tmp_path / "plain-skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("# Just text\n", encoding="utf-8")
    server = SkillServer.from_dirs([skill])
    assert [s.tool_name for s in server.skills] == ["load_plain_skill_skill"]


def test_cli_reports_bad_skill_dir_with_exit_5(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "mcp-serve", "--skill", str(tmp_path / "empty")],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 5
    assert str(tmp_path / "empty") in proc.stderr
    assert proc.stdout == ""


# --------------------------------------------------------------------------------- stdio loop


def test_stdio_loop_lines_blank_lines_and_oversized(server: SkillServer) -> None:
    lines = [
        b"\n",
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        b"x" * (MAX_MESSAGE_BYTES + 10) + b"\n",
        b'{"jsonrpc":"2.0","id":2,"method":"ping"}',  # last line without newline
    ]
    out, err = io.BytesIO(), io.StringIO()
    serve_stdio(server, io.BytesIO(b"".join(lines)), out, err)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r.get("id") for r in replies] == [1, None, 2]
    assert replies[1]["error"]["code"] == -32700
    assert out.getvalue().endswith(b"\n")
    assert "refund-policy" in err.getvalue()  # the startup log goes to stderr, not stdout


def test_stdio_process_writes_only_protocol_to_stdout(skills: list[Path]) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "load_refund_policy_skill"},
        },
    ]
    proc = subprocess.run(
        [sys.executable, *_server_args(skills)],
        input="".join(json.dumps(m) + "\n" for m in messages) + "not json\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2, None]
    assert replies[1]["result"]["content"][0]["text"] == _md(skills[0])
    assert replies[2]["error"]["code"] == -32700


# --------------------------------------------------------------------------- raw HTTP checks


@pytest.fixture
def http_server(server: SkillServer) -> Iterator[tuple[str, int]]:
    import threading

    httpd = make_http_server(server, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield "127.0.0.1", httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def _request(
    address: tuple[str, int],
    method: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    path: str = "/mcp",
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(*address, timeout=10)
    try:
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        conn.request(method, path, body=data, headers={**base, **(headers or {})})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18"},
}


def _session(address: tuple[str, int]) -> str:
    status, headers, _ = _request(address, "POST", INIT)
    assert status == 200
    return headers["mcp-session-id"]


def test_http_session_lifecycle(http_server: tuple[str, int]) -> None:
    status, headers, body = _request(http_server, "POST", INIT)
    assert status == 200
    assert headers["content-type"] == "application/json"
    session_id = headers["mcp-session-id"]
    assert re.fullmatch(r"[\x21-\x7e]+", session_id)
    assert json.loads(body)["result"]["protocolVersion"] == "2025-06-18"

    sid = {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-06-18"}
    status, _, body = _request(
        http_server, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid
    )
    assert (status, body) == (202, b"")

    status, _, body = _request(
        http_server, "POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid
    )
    assert status == 200
    assert len(json.loads(body)["result"]["tools"]) == 2

    status, _, _ = _request(http_server, "DELETE", headers=sid)
    assert status == 204
    status, _, _ = _request(http_server, "POST", {"jsonrpc": "2.0", "id": 3, "method": "ping"}, sid)
    assert status == 404  # the session is gone
    status, _, _ = _request(http_server, "DELETE", headers=sid)
    assert status == 404


def test_http_requires_a_session_after_initialize(http_server: tuple[str, int]) -> None:
    status, _, body = _request(http_server, "POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert status == 400
    assert "Mcp-Session-Id" in json.loads(body)["error"]["message"]
    status, _, _ = _request(
        http_server,
        "POST",
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"Mcp-Session-Id": "not-a-session"},
    )
    assert status == 404


def test_http_sse_response_when_only_sse_is_accepted(http_server: tuple[str, int]) -> None:
    sid = _session(http_server)
    status, headers, body = _request(
        http_server,
        "POST",
        {"jsonrpc": "2.0", "id": 5, "method": "ping"},
        {"Mcp-Session-Id": sid, "Accept": "text/event-stream"},
    )
    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    assert body.startswith(b"event: message\ndata: ")
    data = body.decode().split("data: ", 1)[1].strip()
    assert json.loads(data) == {"jsonrpc": "2.0", "id": 5, "result": {}}


def test_http_get_is_405_and_other_paths_404(http_server: tuple[str, int]) -> None:
    status, headers, _ = _request(http_server, "GET", headers={"Accept": "text/event-stream"})
    assert status == 405
    assert "POST" in headers["allow"]
    assert _request(http_server, "POST", INIT, path="/other")[0] == 404


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "null"}, 403),
        ({"Host": "evil.example:80"}, 403),
        ({"Origin": "http://localhost:3000"}, 200),
        ({"Origin": "http://127.0.0.1"}, 200),
        ({"MCP-Protocol-Version": "1900-01-01"}, 400),
        ({"Content-Type": "text/plain"}, 415),
        ({"Accept": "image/png"}, 406),
    ],
)
def test_http_header_checks(
    http_server: tuple[str, int], headers: dict[str, str], status: int
) -> None:
    assert _request(http_server, "POST", INIT, headers)[0] == status


def test_http_parse_error_is_400_with_jsonrpc_body(http_server: tuple[str, int]) -> None:
    status, _, body = _request(http_server, "POST", b"{not json")
    assert status == 400
    assert json.loads(body)["error"]["code"] == -32700


def test_http_binds_only_the_given_host(server: SkillServer) -> None:
    httpd = make_http_server(server, "127.0.0.1", 0)
    try:
        assert httpd.server_address[0] == "127.0.0.1"
        assert httpd.url.startswith("http://127.0.0.1:")
    finally:
        httpd.server_close()
    with pytest.raises(ValueError, match="cannot listen"):
        make_http_server(server, "203.0.113.7", 0)  # TEST-NET address, never ours


def test_http_keep_alive_survives_a_refused_request(http_server: tuple[str, int]) -> None:
    # A refusal before the body is read must not leave the body on the connection, where it
    # would be parsed as the next request (the official client reuses connections).
    conn = http.client.HTTPConnection(*http_server, timeout=10)
    try:
        base = {"Content-Type": "application/json", "Accept": "application/json"}
        conn.request(
            "POST", "/mcp", json.dumps(INIT), {**base, "MCP-Protocol-Version": "2026-07-28"}
        )
        first = conn.getresponse()
        first.read()
        assert first.status == 400
        conn.request("POST", "/mcp", json.dumps(INIT), base)
        second = conn.getresponse()
        assert second.status == 200
        assert json.loads(second.read())["id"] == 1
    finally:
        conn.close()


def test_cli_port_in_use_exits_5(skills: list[Path]) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, *_server_args(skills), "--http", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    assert proc.returncode == 5
    assert f"127.0.0.1:{port}" in proc.stderr and "internal error" not in proc.stderr
