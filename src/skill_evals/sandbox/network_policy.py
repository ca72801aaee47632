"""What a contained sandbox may reach besides the model: the ``network`` mode, its allow list,
and which addresses a name may be connected to (docs/sandbox.md, "The network")."""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse
from dataclasses import dataclass

MODES = ("model", "allow", "host")


class NetworkError(ValueError):
    """A ``--network-allow`` entry (or ``network-allow:`` item) that cannot be used."""


def parse_allow(text: str, source: str) -> tuple[str, int | None]:
    """``HOST[:PORT]`` (an IPv6 literal in brackets) → (lower-case host, port or None)."""
    raw = text.strip()
    parts = urllib.parse.urlsplit("//" + raw)
    try:
        port = parts.port
    except ValueError:
        raise NetworkError(f"{source}: the port must be a number from 1 to 65535") from None
    host = (parts.hostname or "").lower()
    if not host or parts.path or parts.query or parts.username or any(c in raw for c in " /@"):
        raise NetworkError(f"{source}: expected HOST or HOST:PORT, e.g. registry.npmjs.org:443")
    if port == 0:
        raise NetworkError(f"{source}: the port must be a number from 1 to 65535")
    return host, port


@dataclass(frozen=True)
class NetworkPolicy:
    """Where a contained sandbox may connect besides the model: the mode and its allow list."""

    mode: str = "model"
    allow: tuple[tuple[str, int | None], ...] = ()

    def lists(self, host: str, port: int) -> bool:
        """Whether ``host:port`` is on the allow list (``allow`` mode only)."""
        if self.mode != "allow":
            return False
        host = host.lower().strip("[]")
        for name, listed in self.allow:
            if name == host and (port == listed or (listed is None and port in (80, 443))):
                return True
        return False


def _forbidden(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return bool(
        address.is_loopback
        or address.is_link_local
        or address.is_private
        or address.is_multicast
        or address.is_unspecified
        or address.is_reserved
    )


def permitted_addresses(policy: NetworkPolicy, host: str, port: int) -> list[str]:
    """The addresses of an allowed ``host`` the proxy may connect to: all it resolves to, less
    the loopback, link-local, private, multicast and reserved ones — unless that literal
    address (with the port) is itself listed."""
    host = host.strip("[]")
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return []
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    kept = []
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        if not _forbidden(address) or policy.lists(str(address), port):
            kept.append(text)
    return kept
