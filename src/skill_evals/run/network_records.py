"""The ``network`` and ``networkDropped`` keys of a recorded observation (the engine writes
them from its egress proxy; a runner never does): read back from records, resumed runs and the
cache, strictly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from .observations import ContractError, Observation

MAX_NETWORK_ITEMS = 100
_KINDS = ("connect", "http", "model")
_BY = ("runner", "setup", "command")
_KEYS = {"host", "port", "kind", "by", "allowed", "bytesUp", "bytesDown"}
_MAX_HOST = 255
_MAX_COUNT = 2**53 - 1


def _valid(item: object) -> bool:
    if not isinstance(item, dict) or set(item) != _KEYS:
        return False
    counts = (item["port"], item["bytesUp"], item["bytesDown"])
    return (
        isinstance(item["host"], str)
        and len(item["host"]) <= _MAX_HOST
        and item["kind"] in _KINDS
        and item["by"] in _BY
        and type(item["allowed"]) is bool
        and all(type(n) is int and 0 <= n <= _MAX_COUNT for n in counts)
        and item["port"] <= 65535
    )


class Network(NamedTuple):
    """The engine's network keys of one recorded observation."""

    attempts: tuple[dict[str, Any], ...]
    dropped: int
    wire: tuple[int, int] | None


def _wire(meta: object) -> tuple[int, int] | None:
    raw = meta.get("wireTokens") if isinstance(meta, dict) else None
    if raw is None:
        return None
    ok = isinstance(raw, dict) and set(raw) == {"input", "output"}
    if not ok or not all(type(raw[k]) is int and 0 <= raw[k] <= _MAX_COUNT for k in raw):
        raise ContractError("wrong-typed key 'meta.wireTokens': must be {input, output}")
    return raw["input"], raw["output"]


def split_network(value: Mapping[str, Any]) -> tuple[dict[str, Any], Network]:
    """A line's object without its network keys (``network``, ``networkDropped``,
    ``meta.wireTokens``), and those keys parsed (ContractError naming a malformed one)."""
    body = {k: v for k, v in value.items() if k not in ("network", "networkDropped")}
    wire = _wire(body.get("meta"))
    if wire is not None:
        body["meta"] = {k: v for k, v in body["meta"].items() if k != "wireTokens"}
    raw = value.get("network", [])
    if not isinstance(raw, list) or len(raw) > MAX_NETWORK_ITEMS:
        raise ContractError(
            f"wrong-typed key 'network': must be an array of at most {MAX_NETWORK_ITEMS}"
        )
    for index, item in enumerate(raw):
        if not _valid(item):
            raise ContractError(
                f"wrong-typed key 'network[{index}]': must be "
                "{host, port, kind, by, allowed, bytesUp, bytesDown}"
            )
    dropped = value.get("networkDropped", 0)
    if type(dropped) is not int or not 0 <= dropped <= _MAX_COUNT:
        raise ContractError("wrong-typed key 'networkDropped': must be an integer >= 0")
    return body, Network(tuple(dict(item) for item in raw), dropped, wire)


def with_network(observation: Observation, network: Network) -> Observation:
    """``observation`` carrying its recorded network attempts and wire tokens."""
    observation.network, observation.network_dropped = network.attempts, network.dropped
    observation.wire_tokens = network.wire
    return observation
