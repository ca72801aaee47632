"""``skill-evals mcp-serve``: skills offered over the Model Context Protocol (docs/agents/mcp.md).

Each skill becomes a tool ``load_<name>_skill`` (``-`` → ``_``; its description is the skill's
description, its result the ``SKILL.md`` text) and a resource ``skill://<name>/SKILL.md``. The
protocol is implemented with the standard library only:

- ``jsonrpc``: bounded, strict decoding of one message (size, nesting, UTF-8, strict JSON);
- ``skills``: the skill folders, each ``SKILL.md`` read once at start;
- ``protocol``: the MCP methods (``initialize`` … ``resources/read``), transport-free;
- ``modern``: the 2026-07-28 era (stateless ``_meta`` requests, ``server/discover``, results);
- ``catalog``, ``core_yaml``, ``skills_ext``: the Skills extension (served files, listing rules,
  ``Skill`` entries with YAML 1.2 core-schema frontmatter, ``skills/list``, ``skills/get``);
- ``http_modern``: the 2026-07-28 HTTP header rules and statuses;
- ``stdio``: one message per line on stdin/stdout;
- ``http_transport``, ``http_handler``, ``http_headers``, ``connections``: streamable HTTP at
  ``POST /mcp`` with bounded connections, deadlines and strict headers.
"""

from __future__ import annotations

from .connections import HttpLimits
from .http_transport import (
    SkillHTTPServer,
    make_http_server,
    parse_http_address,
    serve_http,
    serve_http_server,
)
from .jsonrpc import MAX_BATCH_MESSAGES, MAX_MESSAGE_BYTES, MAX_NESTING, encode_message
from .protocol import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, Session, SkillServer
from .skills import ServedSkill, tool_name_for, uri_for
from .stdio import serve_stdio

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "MAX_BATCH_MESSAGES",
    "MAX_MESSAGE_BYTES",
    "MAX_NESTING",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "HttpLimits",
    "ServedSkill",
    "Session",
    "SkillHTTPServer",
    "SkillServer",
    "encode_message",
    "make_http_server",
    "parse_http_address",
    "serve_http",
    "serve_http_server",
    "serve_stdio",
    "tool_name_for",
    "uri_for",
]
