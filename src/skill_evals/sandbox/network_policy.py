"""What a contained sandbox may reach besides the model: the ``network`` mode, its allow list,
and which addresses a name may be connected to (docs/sandbox.md, "The network").

One set of rules serves the allow list, the egress proxy and the tests: :func:`host_key` is
the one spelling of a host both sides are compared in, :func:`refused_address` the one rule
for addresses the proxy never connects to unless listed literally.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import urllib.parse
from dataclasses import dataclass

MODES = ("model", "allow", "host")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# A DNS name as the proxy accepts it: letters, digits, '-', '_' and dots, ≤ 253 characters,
# labels of ≤ 63. Anything else (spaces, '%', '@', control characters …) is no host at all.
_NAME = re.compile(r"(?=.{1,253}\Z)(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)*"
                   r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\Z")  # fmt: skip
# Ranges outside every "not global" list of the standard library that still never leave the
# machine's own network: the deprecated IPv6 site-local block.
_ALSO_LOCAL = (ipaddress.ip_network("fec0::/10"),)
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


class NetworkError(ValueError):
    """A ``--network-allow`` entry (or ``network-allow:`` item) that cannot be used."""


def host_key(text: str) -> str | None:
    """The one spelling of a host that allow-list entries and requests are compared in: lower
    case, brackets and one trailing dot removed, an IP literal in its standard form (``[0:0::1]``
    is ``::1``). Only strict literals are addresses: ``127.1``, ``2130706433``, ``0x7f.1`` or
    ``0177.0.0.1`` stay names, so they match only an entry spelled the same and are then
    resolved and checked like any name. None for no valid host (a zone id, ``@``, spaces, …)."""
    host = text.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.endswith(".") and not host.endswith(".."):
        host = host[:-1]
    if "%" in host:  # an IPv6 zone id: an interface of this machine, never a destination
        return None
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    return host if _NAME.match(host) else None


def _embedded(address: Address) -> list[Address]:
    """The IPv4 addresses an IPv6 address stands for (mapped, compatible, 6to4, Teredo, NAT64)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    found: list[Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    packed = address.packed
    if packed[:12] == bytes(12):  # IPv4-compatible ::a.b.c.d
        found.append(ipaddress.IPv4Address(packed[12:]))
    if any(address in net for net in _NAT64):
        found.append(ipaddress.IPv4Address(packed[12:]))
    return found


def refused_address(address: Address) -> bool:
    """Whether the proxy refuses to connect to ``address`` (unless it is listed literally):
    anything not globally routable — loopback, link-local, private, shared (100.64.0.0/10),
    unspecified, reserved, documentation, benchmarking, broadcast — and multicast, also when
    an IPv6 address only wraps such an IPv4 address."""
    for one in (address, *_embedded(address)):
        if not one.is_global or one.is_multicast or any(one in net for net in _ALSO_LOCAL):
            return True
    return False


def parse_allow(text: str, source: str) -> tuple[str, int | None]:
    """``HOST[:PORT]`` (an IPv6 literal in brackets) → (the host's :func:`host_key`, port or
    None)."""
    raw = text.strip()
    parts = urllib.parse.urlsplit("//" + raw)
    try:
        port = parts.port
    except ValueError:
        raise NetworkError(f"{source}: the port must be a number from 1 to 65535") from None
    host = host_key(parts.hostname or "") if parts.hostname else None
    if not host or parts.path or parts.query or parts.username or any(c in raw for c in " /@%"):
        raise NetworkError(f"{source}: expected HOST or HOST:PORT, e.g. registry.npmjs.org:443")
    if port == 0:
        raise NetworkError(f"{source}: the port must be a number from 1 to 65535")
    if host in ("0.0.0.0", "::"):  # "any address": no destination
        raise NetworkError(
            f"{source}: {host} is no destination (it means this machine): list the address "
            "to reach, e.g. 127.0.0.1:PORT"
        )
    return host, port


@dataclass(frozen=True)
class NetworkPolicy:
    """Where a contained sandbox may connect besides the model: the mode and its allow list."""

    mode: str = "model"
    allow: tuple[tuple[str, int | None], ...] = ()

    def lists(self, host: str, port: int) -> bool:
        """Whether ``host:port`` is on the allow list (``allow`` mode only), both sides
        compared in their :func:`host_key` spelling."""
        if self.mode != "allow":
            return False
        key = host_key(host)
        if key is None:
            return False
        for name, listed in self.allow:
            if host_key(name) == key and (port == listed or (listed is None and port in (80, 443))):
                return True
        return False


def permitted_addresses(policy: NetworkPolicy, host: str, port: int) -> list[str]:
    """The addresses the proxy may connect to for ``host:port``: none unless the host is
    listed; then every address it resolves to (the proxy connects to these literal addresses,
    never to the name again) less the :func:`refused_address` ones — unless that literal
    address (with the port) is itself listed. A listed name that resolves to loopback is
    refused."""
    key = host_key(host)
    if key is None or not policy.lists(key, port):
        return []
    try:
        addresses = [str(ipaddress.ip_address(key))]
    except ValueError:
        try:
            infos = socket.getaddrinfo(key, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return []
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    kept = []
    for text in addresses:
        if "%" in text:  # a scoped (link-local) address: never reachable by name
            continue
        address = ipaddress.ip_address(text)
        if not refused_address(address) or policy.lists(str(address), port):
            kept.append(text)
    return kept
