"""The shared loading-evidence rules (docs/agents/): MCP tool names, resource URIs, custom patterns,
SKILL.md paths, transcript reading and the per-agent dispatch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents import claude_code, codex, pi
from skill_evals.agents.evidence import (
    EvidencePatterns,
    InvalidPattern,
    Load,
    loaded_names,
    read_events,
    skill_from_path,
    skill_from_tool,
    skill_from_uri,
    skills_from_command,
    split_mcp_tool_name,
)
from skill_evals.agents.mcp_server import tool_name_for, uri_for
from skill_evals.agents.proof import prove
from skill_evals.agents.registry import agent as load_agent
from skill_evals.agents.registry import names as agent_names
from skill_evals.errors import InvalidInput

# ------------------------------------------------------------------------------ MCP tools


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("mcp__skills__load_x_skill", ("skills", "load_x_skill")),
        ("mcp__my-server__tool__with__dunders", ("my-server", "tool__with__dunders")),
        ("load_x_skill", (None, "load_x_skill")),
        ("mcp__onlyserver", (None, "mcp__onlyserver")),
        ("mcp____tool", (None, "mcp____tool")),
        ("mcp__server__", (None, "mcp__server__")),
        ("Read", (None, "Read")),
    ],
)
def test_split_mcp_tool_name(name: str, expected: tuple[str | None, str]) -> None:
    assert split_mcp_tool_name(name) == expected


@pytest.mark.parametrize(
    ("name", "skill"),
    [
        ("load_refund_policy_skill", "refund-policy"),
        ("load_pdf_skill", "pdf"),
        ("load_a1-b2_skill", "a1-b2"),
        ("mcp__skills__load_refund_policy_skill", "refund-policy"),
        ("mcp__skill-evals__load_brand_deck_skill", "brand-deck"),
        # not loads: the whole (split) name must be load_<name>_skill, case-sensitive
        ("load__skill", None),
        ("load_x_skill_v2", None),
        ("preload_x_skill", None),
        ("Load_x_skill", None),
        ("load_x_skills", None),
        ("load_x y_skill", None),
        ("mcp__skills__list_skills", None),
        ("Skill", None),
        ("Read", None),
    ],
)
def test_skill_from_tool_default(name: str, skill: str | None) -> None:
    assert skill_from_tool(name) == skill


def test_tool_names_of_the_server_map_back() -> None:
    for name in ("refund-policy", "a", "x-y-z", "Upper-Case9"):
        assert skill_from_tool(tool_name_for(name)) == name
        assert skill_from_tool(f"mcp__skill-evals__{tool_name_for(name)}") == name
        assert skill_from_uri(uri_for(name)) == name


def test_custom_tool_patterns_come_after_the_default() -> None:
    patterns = EvidencePatterns(
        tool_patterns=(r"get_skill_(?P<name>[a-z_]+)", r"fetch-(?P<name>.+)")
    )
    assert skill_from_tool("get_skill_refund_policy", patterns) == "refund-policy"
    assert skill_from_tool("mcp__docs__fetch-brand-deck", patterns) == "brand-deck"
    assert skill_from_tool("load_pdf_skill", patterns) == "pdf"  # the default still applies
    assert skill_from_tool("get_skill_x_extra!", patterns) is None  # whole name must match
    assert skill_from_tool("get_skill_refund_policy") is None  # not without the pattern


def test_custom_tool_pattern_can_match_the_full_claude_name() -> None:
    patterns = EvidencePatterns(tool_patterns=(r"mcp__docs__open_(?P<name>\w+)",))
    assert skill_from_tool("mcp__docs__open_pdf", patterns) == "pdf"
    assert skill_from_tool("mcp__other__open_pdf", patterns) is None


def test_a_pattern_capturing_an_empty_name_is_no_load() -> None:
    patterns = EvidencePatterns(
        tool_patterns=(r"skill(?P<name>.*)",), uri_patterns=(r"u(?P<name>.*)",)
    )
    assert skill_from_tool("skill", patterns) is None
    assert skill_from_uri("u", patterns) is None


# ------------------------------------------------------------------------------ resources


@pytest.mark.parametrize(
    ("uri", "skill"),
    [
        ("skill://refund-policy/SKILL.md", "refund-policy"),
        ("skill://under_score/SKILL.md", "under_score"),  # URIs carry the name as is
        ("skill://x/skill.md", None),
        ("skill://x/README.md", None),
        ("skill://x/y/SKILL.md", "y"),  # a prefix: the segment before SKILL.md
        ("skill://x//SKILL.md", None),
        ("skill:///SKILL.md", None),
        ("skill://x/SKILL.md?raw", None),
        ("file:///repo/skills/x/SKILL.md", None),
        ("SKILL://x/SKILL.md", None),
    ],
)
def test_skill_from_uri_default(uri: str, skill: str | None) -> None:
    assert skill_from_uri(uri) == skill


def test_custom_uri_pattern() -> None:
    patterns = EvidencePatterns(uri_patterns=(r"docs://skills/(?P<name>[a-z0-9-]+)",))
    assert skill_from_uri("docs://skills/refund-policy", patterns) == "refund-policy"
    assert skill_from_uri("docs://skills/refund-policy/extra", patterns) is None
    assert skill_from_uri("skill://pdf/SKILL.md", patterns) == "pdf"


# ------------------------------------------------------------------------- invalid patterns


@pytest.mark.parametrize(
    ("kwargs", "where", "why"),
    [
        (
            {"tool_patterns": ("ok_(?P<name>.+)", "(unclosed")},
            "evidence.toolPatterns[1]",
            "not a regular",
        ),
        ({"uri_patterns": ("skill://(.+)",)}, "evidence.uriPatterns[0]", "named group"),
        ({"tool_patterns": (3,)}, "evidence.toolPatterns[0]", "must be a string"),
    ],
)
def test_invalid_patterns_are_refused_when_built(
    kwargs: dict[str, Any], where: str, why: str
) -> None:
    with pytest.raises(InvalidPattern) as err:
        EvidencePatterns(**kwargs)
    assert str(err.value).startswith(where)
    assert why in str(err.value)
    # exit 5 in the engine, and a ValueError for callers that catch that
    assert isinstance(err.value, InvalidInput) and err.value.exit_code == 5
    assert isinstance(err.value, ValueError)


def test_patterns_are_plain_comparable_values() -> None:
    a = EvidencePatterns(tool_patterns=("x_(?P<name>.+)",))
    assert a == EvidencePatterns(tool_patterns=("x_(?P<name>.+)",))
    assert hash(a) == hash(EvidencePatterns(tool_patterns=("x_(?P<name>.+)",)))
    assert [p.pattern for p in a.compiled_tools()][1:] == ["x_(?P<name>.+)"]
    assert len(a.compiled_uris()) == 1


# ----------------------------------------------------------------------------- SKILL.md paths


@pytest.mark.parametrize(
    ("path", "skill"),
    [
        ("/tmp/run/project/.claude/skills/refund-policy/SKILL.md", "refund-policy"),
        (".agents/skills/pdf/SKILL.md", "pdf"),
        ("skills/pdf/SKILL.md", "pdf"),
        ("./skills/pdf/SKILL.md", "pdf"),
        ("C:\\work\\.claude\\skills\\pdf\\SKILL.md", "pdf"),
        ("  skills/pdf/SKILL.md\n", "pdf"),
        ("skills/pdf/skill.md", None),
        ("skills/pdf/README.md", None),
        ("skills/pdf/docs/SKILL.md", None),
        ("pdf/SKILL.md", None),
        ("myskills/pdf/SKILL.md", None),
        ("skills/../SKILL.md", None),
        ("skills/./SKILL.md", None),
        ("skills/pdf/SKILL.md.bak", None),
    ],
)
def test_skill_from_path(path: str, skill: str | None) -> None:
    assert skill_from_path(path) == skill


def test_skill_from_path_restricted_to_known_skills() -> None:
    known = frozenset({"refund-policy"})
    assert skill_from_path(".claude/skills/refund-policy/SKILL.md", known) == "refund-policy"
    assert skill_from_path(".claude/skills/other/SKILL.md", known) is None
    assert skill_from_path(".claude/skills/Refund-Policy/SKILL.md", known) is None
    assert skill_from_path(".claude/skills/other/SKILL.md", frozenset()) is None


def test_skills_from_command() -> None:
    known = frozenset({"pdf", "brand-deck"})
    assert skills_from_command("cat .agents/skills/pdf/SKILL.md") == ["pdf"]
    assert skills_from_command(
        "bash -lc 'sed -n 1,200p .agents/skills/brand-deck/SKILL.md && cat skills/pdf/SKILL.md'"
    ) == ["brand-deck", "pdf"]
    assert skills_from_command('cat "/tmp/my dir/skills/pdf/SKILL.md"') == ["pdf"]
    assert skills_from_command("cat skills/pdf/SKILL.md; cat skills/pdf/SKILL.md") == ["pdf"]
    assert skills_from_command("cat skills/other/SKILL.md", known) == []
    assert skills_from_command("cat 'unbalanced skills/pdf/SKILL.md") == ["pdf"]
    assert skills_from_command("ls skills/pdf") == []


# -------------------------------------------------------------------------- transcripts


def test_read_events_keeps_line_indexes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\n\nnot json\n[1, 2]\n\xff\xfe\n{"b": 2}\r\n{"c": 3}')
    events = read_events(path)
    assert events == [{"a": 1}, {}, {}, {}, {}, {"b": 2}, {"c": 3}]


def test_read_events_unreadable(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        read_events(tmp_path / "missing.jsonl")
    with pytest.raises(OSError):
        read_events(tmp_path)


def test_loaded_names_distinct_in_first_load_order() -> None:
    loads = [
        Load("b", "native", "pi", "read", 3),
        Load("a", "mcp", "pi", "mcp tool load_a_skill", 4),
        Load("b", "native", "pi", "read", 9),
    ]
    assert loaded_names(loads) == ["b", "a"]
    assert loaded_names([]) == []


def test_load_json_shape() -> None:
    load = Load("pdf", "mcp", "codex", "mcp tool load_pdf_skill", 7)
    assert load.to_json() == {
        "skill": "pdf",
        "state": "loaded",
        "delivery": "mcp",
        "agent": "codex",
        "source": "mcp tool load_pdf_skill",
        "index": 7,
    }


@pytest.mark.parametrize(
    ("agent", "module"), [("claude-code", claude_code), ("codex", codex), ("pi", pi)]
)
def test_the_registry_dispatches_to_the_agent_module(agent: str, module: Any) -> None:
    assert load_agent(agent) is module.PLUGIN and module.PLUGIN.name == agent


def test_unknown_agent_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown agent 'nope'"):
        load_agent("nope")


def test_claude_mcp_load_end_to_end() -> None:
    # One real-shaped transcript through the Claude parser: the MCP tool name is split and
    # mapped by the shared rules; the failed call does not count.
    events: list[dict[str, Any]] = [
        {"type": "system", "subtype": "init", "tools": ["mcp__skills__load_pdf_skill"]},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "mcp__skills__load_pdf_skill",
                        "input": {},
                    },
                    {
                        "type": "tool_use",
                        "id": "t2",
                        "name": "mcp__skills__load_brand_deck_skill",
                        "input": {},
                    },
                ]
            },
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "---\nname: pdf\n"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "t2",
                        "content": "err",
                        "is_error": True,
                    },
                ]
            },
        },
    ]
    loads = prove(load_agent("claude-code"), events, [])
    assert [(x.skill, x.state, x.delivery, x.index) for x in loads] == [
        ("pdf", "loaded", "mcp", 2),
        ("brand-deck", "failed", "mcp", 2),
    ]


# ------------------------------------------------ one shape, one meaning across the three agents

# The same run in each agent's own event format: a built-in MCP load, a load through a tool only
# a custom pattern recognises, a failed load, and (where the agent has MCP resources) a resource
# read through a custom URI pattern. Each completion event sits on the line named in `done`.
CONFIG = (
    "evidence:\n"
    "  toolPatterns: ['fetch_skill_(?P<name>[a-z_]+)']\n"
    "  uriPatterns: ['docs://skills/(?P<name>[a-z-]+)']\n"
)


def _claude_transcript() -> list[dict[str, Any]]:
    def use(tid: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        return {"type": "tool_use", "id": tid, "name": name, "input": tool_input}

    def result(tid: str, **extra: Any) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": tid, "content": "x", **extra}

    def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
        return {"type": "assistant", "message": {"role": "assistant", "content": list(blocks)}}

    def user(*blocks: dict[str, Any]) -> dict[str, Any]:
        return {"type": "user", "message": {"role": "user", "content": list(blocks)}}

    return [
        {"type": "system", "subtype": "init", "skills": []},
        assistant(use("a", "mcp__skills__load_refund_policy_skill", {})),
        user(result("a")),  # line 2
        assistant(use("b", "mcp__docs__fetch_skill_shipping_times", {})),
        user(result("b")),  # line 4
        assistant(use("c", "mcp__skills__load_brand_deck_skill", {})),
        user(result("c", is_error=True)),
        assistant(use("d", "ReadMcpResourceTool", {"server": "docs", "uri": "docs://skills/pdf"})),
        user(result("d")),  # line 8
    ]


def _codex_transcript() -> list[dict[str, Any]]:
    def call(tool: str, status: str = "completed", **args: str) -> dict[str, Any]:
        item = {"type": "mcp_tool_call", "server": "s", "tool": tool, "arguments": args,
                "result": {"content": [{"type": "text", "text": "x"}]}}  # fmt: skip
        return {"type": "item.completed", "item": {**item, "status": status}}

    return [
        {"type": "thread.started"},
        {"type": "item.started", "item": {"type": "mcp_tool_call", "tool": "x"}},
        call("load_refund_policy_skill"),  # line 2
        {"type": "turn.started"},
        call("fetch_skill_shipping_times"),  # line 4
        call("load_brand_deck_skill", status="failed"),
        {"type": "turn.started"},
        {"type": "turn.started"},
        call("read_mcp_resource", server="docs", uri="docs://skills/pdf"),  # line 8
    ]


def _pi_transcript() -> list[dict[str, Any]]:
    def start(tid: str, name: str) -> dict[str, Any]:
        return {"type": "tool_execution_start", "toolCallId": tid, "toolName": name, "args": {}}

    def end(tid: str, name: str, error: bool = False) -> dict[str, Any]:
        shown = {"content": [{"type": "text", "text": "x"}]}
        return {"type": "tool_execution_end", "toolCallId": tid, "toolName": name,
                "isError": error, "result": shown}  # fmt: skip

    return [
        {"type": "agent_start"},
        start("a", "load_refund_policy_skill"),
        end("a", "load_refund_policy_skill"),  # line 2
        start("b", "fetch_skill_shipping_times"),
        end("b", "fetch_skill_shipping_times"),  # line 4
        start("c", "load_brand_deck_skill"),
        end("c", "load_brand_deck_skill", error=True),
        {"type": "turn_end"},  # pi has no MCP resources: no line 8
    ]


def _opencode_transcript() -> list[dict[str, Any]]:
    def use(n: int, tool: str, status: str = "completed", **args: str) -> dict[str, Any]:
        state = {
            "status": status,
            "input": args,
            **({"output": "x"} if status == "completed" else {"error": "failed"}),
        }
        part = {"type": "tool", "id": f"prt_{n:04d}", "tool": tool, "state": state}
        return {"type": "tool_use", "part": part}  # fmt: skip

    return [
        {"type": "step_start", "part": {"type": "step-start"}},
        {"type": "text", "part": {"type": "text", "text": "checking"}},
        use(1, "skills_load_refund_policy_skill"),  # line 2: the runner's server "skills"
        {"type": "step_finish", "part": {"reason": "tool-calls"}},
        use(2, "skills_fetch_skill_shipping_times"),  # line 4
        {"type": "step_start", "part": {"type": "step-start"}},
        use(3, "skills_load_brand_deck_skill", status="error"),
        {"type": "step_finish", "part": {"reason": "tool-calls"}},
        use(4, "read_mcp_resource", server="docs", uri="docs://skills/pdf"),  # line 8
    ]


def _gemini_transcript() -> list[dict[str, Any]]:
    def use(tid: str, name: str, **params: str) -> dict[str, Any]:
        return {"type": "tool_use", "tool_name": name, "tool_id": tid, "parameters": params}

    def result(tid: str, status: str = "success") -> dict[str, Any]:
        return {"type": "tool_result", "tool_id": tid, "status": status, "output": "x"}

    return [
        {"type": "init", "session_id": "s", "model": "m"},
        use("a", "mcp_skills_load_refund_policy_skill"),
        result("a"),  # line 2
        use("b", "mcp_docs_fetch_skill_shipping_times"),
        result("b"),  # line 4
        use("c", "mcp_skills_load_brand_deck_skill"),
        result("c", status="error"),
        use("d", "read_mcp_resource", serverName="docs", uri="docs://skills/pdf"),
        result("d"),  # line 8
    ]


def _copilot_transcript() -> list[dict[str, Any]]:
    def ask(tid: str, server: str, tool: str) -> dict[str, Any]:
        request = {"toolCallId": tid, "name": f"{server}-{tool}", "arguments": {},
                   "mcpServerName": server, "mcpToolName": tool}  # fmt: skip
        return {"type": "assistant.message", "data": {"content": "", "toolRequests": [request]}}

    def done(tid: str, ok: bool = True) -> dict[str, Any]:
        shown = {"result": {"content": "x"}} if ok else {"error": {"message": "failed"}}
        return {"type": "tool.execution_complete", "data": {"toolCallId": tid, "success": ok,
                                                            **shown}}  # fmt: skip

    return [
        ask("a", "skills", "load_refund_policy_skill"),
        {"type": "tool.execution_start", "data": {"toolCallId": "a", "toolName": "x"}},
        done("a"),  # line 2
        ask("b", "docs", "fetch_skill_shipping_times"),
        done("b"),  # line 4
        ask("c", "skills", "load_brand_deck_skill"),
        done("c", ok=False),
        {"type": "result", "exitCode": 0},  # Copilot reads no MCP resources: no line 8
    ]


def _qwen_transcript() -> list[dict[str, Any]]:
    def use(tid: str, name: str, **args: str) -> dict[str, Any]:
        block = {"type": "tool_use", "id": tid, "name": name, "input": args}
        return {"type": "assistant", "message": {"id": f"m{tid}", "content": [block]}}

    def result(tid: str, error: bool = False) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": tid, "is_error": error, "content": "x"}
        return {"type": "user", "message": {"role": "user", "content": [block]}}

    return [
        {"type": "system", "subtype": "init", "tools": []},
        use("a", "mcp__skills__load_refund_policy_skill"),
        result("a"),  # line 2
        use("b", "mcp__docs__fetch_skill_shipping_times"),
        result("b"),  # line 4
        use("c", "mcp__skills__load_brand_deck_skill"),
        result("c", error=True),
        use("d", "read_mcp_resource", server="docs", uri="docs://skills/pdf"),
        result("d"),  # line 8
    ]


TRANSCRIPTS = {
    "claude-code": (_claude_transcript, "mcp__skills__load_refund_policy_skill",
                    "mcp__docs__fetch_skill_shipping_times"),
    "codex": (_codex_transcript, "load_refund_policy_skill", "fetch_skill_shipping_times"),
    "pi": (_pi_transcript, "load_refund_policy_skill", "fetch_skill_shipping_times"),
    "opencode": (_opencode_transcript, "load_refund_policy_skill", "fetch_skill_shipping_times"),
    "gemini": (_gemini_transcript, "load_refund_policy_skill", "fetch_skill_shipping_times"),
    "copilot": (_copilot_transcript, "load_refund_policy_skill", "fetch_skill_shipping_times"),
    "qwen": (_qwen_transcript, "mcp__skills__load_refund_policy_skill",
             "mcp__docs__fetch_skill_shipping_times"),
}  # fmt: skip


@pytest.mark.parametrize("agent", agent_names())
def test_evidence_command_has_one_shape_for_every_agent(
    agent: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``skill-evals evidence``: the same keys for every agent; ``source`` = "mcp tool <the tool
    name as the agent recorded it>" / "mcp resource <uri>"; ``index`` = the 0-based line of the
    event that *completed* the load. Custom config patterns work for every agent; a failed call
    is never a load."""
    from skill_evals.cli.main import main

    make, builtin_tool, custom_tool = TRANSCRIPTS[agent]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(e) + "\n" for e in make()), encoding="utf-8")
    config = tmp_path / ".skill-evals.yml"
    config.write_text(CONFIG, encoding="utf-8")

    def evidence(*extra: str) -> list[dict[str, Any]]:
        with pytest.raises(SystemExit) as exit_info:
            main(["evidence", "--agent", agent, *extra, str(transcript)])
        out, _ = capsys.readouterr()
        assert exit_info.value.code == 0
        found: list[dict[str, Any]] = json.loads(out)
        return found

    refund = {"skill": "refund-policy", "state": "loaded", "delivery": "mcp", "agent": agent,
              "source": f"mcp tool {builtin_tool}", "index": 2}  # fmt: skip
    failed = {"skill": "brand-deck", "state": "failed", "delivery": "mcp", "agent": agent,
              "source": f"mcp tool {builtin_tool.replace('refund_policy', 'brand_deck')}",
              "index": 5 if agent == "codex" else 6}  # fmt: skip
    assert evidence() == [refund, failed]
    custom = evidence("--config", str(config))
    expected = [
        refund,
        {"skill": "shipping-times", "state": "loaded", "delivery": "mcp", "agent": agent,
         "source": f"mcp tool {custom_tool}", "index": 4},
        failed,
    ]  # fmt: skip
    if agent not in ("pi", "copilot"):  # no MCP resource reads in pi (no client) and Copilot
        expected.append(
            {"skill": "pdf", "state": "loaded", "delivery": "mcp", "agent": agent,
             "source": "mcp resource docs://skills/pdf", "index": 8}
        )  # fmt: skip
    assert custom == expected


# ------------------------------------------------------------------ helpers the runners share


def test_saved_transcripts_are_named_by_case_trial_and_variant(tmp_path: Path) -> None:
    from skill_evals.agents.base import AgentInvocation, RunnerSetupError
    from skill_evals.agents.scaffold import TRANSCRIPT_DIR_VAR, save_transcript

    invocation = AgentInvocation("without", tmp_path, "../a b/é", 3, "prompt")
    save_transcript(b"{}\n", invocation, {})  # not asked for: nothing happens
    target = tmp_path / "out" / "deeper"
    save_transcript(b"{}\n", invocation, {TRANSCRIPT_DIR_VAR: str(target)})
    assert [p.name for p in target.iterdir()] == ["___a_b_é.3.without.jsonl"]
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(RunnerSetupError, match=f"{TRANSCRIPT_DIR_VAR}=.*cannot write") as info:
        save_transcript(b"{}\n", invocation, {TRANSCRIPT_DIR_VAR: str(blocker / "sub")})
    assert "prompt" not in str(info.value)


def test_project_skills_are_found_in_the_native_folders_only(tmp_path: Path) -> None:
    from skill_evals.agents.scaffold import project_skills
    from tests.conftest import write_skill

    write_skill(tmp_path / ".pi" / "skills", "b-skill")
    write_skill(tmp_path / ".agents" / "skills", "a-skill")
    (tmp_path / ".agents" / "skills" / "no-skill-md").mkdir()
    (tmp_path / ".agents" / "skills" / "loose.md").write_text("x", encoding="utf-8")
    write_skill(tmp_path / "elsewhere" / "skills", "c-skill")
    found = project_skills(tmp_path, [".pi/skills", ".agents/skills", ".claude/skills"])
    assert [ref.name for ref in found] == ["b-skill", "a-skill"]
    assert found[1].path == (tmp_path / ".agents" / "skills" / "a-skill").resolve()


def test_available_skills_go_to_stderr_once_each(capsys: pytest.CaptureFixture[str]) -> None:
    from skill_evals.agents.scaffold import print_available

    print_available("pi", ["a", "b", "a"])
    print_available("pi", [])
    out, err = capsys.readouterr()
    assert out == "" and err == "skill-evals runner pi: available skills: a, b\n"


def test_folder_aliases_rename_path_evidence_to_skill_names(tmp_path: Path) -> None:
    from skill_evals.agents.base import skill_ref
    from skill_evals.agents.evidence import rename_loads
    from skill_evals.agents.scaffold import folder_aliases
    from tests.conftest import write_skill

    odd = write_skill(tmp_path, "shipping-times")
    renamed = odd.rename(tmp_path / "ship")
    refs = [skill_ref(renamed), skill_ref(write_skill(tmp_path, "refund-policy"))]
    aliases = folder_aliases(refs)
    assert aliases == {"ship": "shipping-times"}
    loads = [Load("ship", "native", "pi", "read SKILL.md", 3), Load("x", "mcp", "pi", "t", 4)]
    assert [(ld.skill, ld.index) for ld in rename_loads(loads, aliases)] == [
        ("shipping-times", 3),
        ("x", 4),
    ]


def test_a_custom_pattern_is_time_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A backtracking custom pattern on an agent's tool name cannot hang the run: past its
    time bound it is an error naming the pattern (the evidence is undecidable, not absent)."""
    from skill_evals.agents import evidence

    monkeypatch.setattr(evidence, "PATTERN_SECONDS", 0.5)
    patterns = EvidencePatterns(tool_patterns=(r"ok_(?P<name>[a-z]+)", r"(a+)+(?P<name>b)"))
    assert skill_from_tool("ok_pdf", patterns) == "pdf"  # matched in the helper, reused
    assert skill_from_tool("aab", patterns) == "b"
    with pytest.raises(evidence.InvalidPattern, match=r"toolPatterns\[1\]: took longer"):
        skill_from_tool("a" * 40 + "c", patterns)
    assert skill_from_tool("ok_docs", patterns) == "docs"  # a fresh helper after the kill
