"""The Skills extension's methods (``skills/list``, ``skills/get``) and ``resources/read`` of
every served file, in both eras.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from .jsonrpc import INVALID_PARAMS, RESOURCE_NOT_FOUND, RpcError, short
from .skills import ServedSkill


def list_skills(skills: Sequence[ServedSkill], params: Mapping[str, Any]) -> dict[str, Any]:
    """Every listed skill's entry, in ``--skill`` order, on one page."""
    if params.get("cursor") is not None:
        raise RpcError(INVALID_PARAMS, "Invalid params: unknown cursor (skills/list has one page)")
    return {"skills": [s.entry() for s in skills if s.unlisted is None]}


def get_skill(skills: Sequence[ServedSkill], params: Mapping[str, Any]) -> dict[str, Any]:
    """The entry of the listed skill whose ``SKILL.md`` URI is ``params.uri``."""
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise RpcError(INVALID_PARAMS, "Invalid params: skills/get needs a uri")
    for skill in skills:
        if skill.unlisted is None and skill.uri == uri:
            return {"skill": skill.entry()}
    raise RpcError(INVALID_PARAMS, f"No skill is served at {short(uri)}", {"uri": short(uri)})


def read_file(
    skills: Sequence[ServedSkill], params: Mapping[str, Any], modern: bool
) -> dict[str, Any]:
    """One served file: UTF-8 as ``text``, anything else as a base64 ``blob``. ``SKILL.md`` is
    its text as served (a leading BOM dropped). Not found is an error, never an empty result:
    ``-32602`` in the 2026-07-28 era, ``-32002`` in the legacy one."""
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise RpcError(INVALID_PARAMS, "Invalid params: resources/read needs a uri")
    for skill in skills:
        if uri == skill.uri:
            return {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": skill.text}]}
        served = skill.file_at(uri)
        if served is None:
            continue
        item: dict[str, Any] = {"uri": uri, "mimeType": served.mime_type}
        if served.is_text:
            item["text"] = served.data.decode("utf-8")
        else:
            item["blob"] = base64.b64encode(served.data).decode("ascii")
        return {"contents": [item]}
    # Evidence must never read a "not found" answer as a load.
    code = INVALID_PARAMS if modern else RESOURCE_NOT_FOUND
    raise RpcError(code, "Resource not found", {"uri": short(uri)})
