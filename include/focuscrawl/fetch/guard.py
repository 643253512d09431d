"""SSRF guard: never fetch an address IANA marks not globally reachable (loopback, private, link-local,
metadata, documentation, ...), from our own copy of the registries (:mod:`focuscrawl.fetch.special_addresses`).

The host is resolved with ``getaddrinfo`` and every address it resolves to is
checked; the connection is then opened to the very address that was checked (see
:class:`GuardedAdapter`), so a DNS answer that changes between check and connect (DNS
rebinding) cannot slip through. Hosts or networks the operator trusts are allow-listed as
``host:port``, ``ip:port``, ``[v6]:port``, a bare host or IP, or a CIDR
(``settings().allow_private_hosts``; by default only the world's own loopback ports).
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse
from dataclasses import dataclass
from typing import Callable, Iterable

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from focuscrawl.fetch.errors import BlockedAddressError, FetchConnectionError, UnsupportedURLError
from focuscrawl.fetch.special_addresses import IPAddress, not_reachable_reason

# Cloud instance metadata services (AWS/GCP/Azure IPv4, AWS IPv6, AWS ECS, Alibaba, Oracle's legacy one):
# named as such in errors, though the registry table refuses their blocks anyway.
METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200", "192.0.0.192")
)

Resolver = Callable[..., list]


def address_category(ip: IPAddress) -> str | None:
    """Why ``ip`` must not be fetched (the IANA registry's name of its block), or None if it is
    globally reachable. Decided by :mod:`focuscrawl.fetch.special_addresses`, not by the
    interpreter's ``ipaddress`` flags, which lag the registries on older Pythons."""
    if ip in METADATA:
        return "cloud metadata"
    return not_reachable_reason(ip)


@dataclass(frozen=True)
class _Allowed:
    host: str | None = None  # lower-case name or IP text
    port: int | None = None  # None: any port
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None


def _parse_allow(entry: str) -> _Allowed:
    entry = entry.strip()
    try:
        return _Allowed(network=ipaddress.ip_network(entry, strict=False))
    except ValueError:
        pass
    split = urllib.parse.urlsplit("//" + entry)
    try:
        port = split.port
    except ValueError as exc:
        raise ValueError(f"allow-list entry {entry!r}: bad port ({exc}); write host:port, ip, or a CIDR") from None
    host = (split.hostname or "").lower()
    if not host:
        raise ValueError(f"allow-list entry {entry!r} names no host; write host:port, ip, or a CIDR")
    return _Allowed(host=host, port=port)


class AddressGuard:
    """Resolves a host and refuses it when any of its addresses is internal and not allow-listed."""

    def __init__(self, allow: Iterable[str] = (), resolver: Resolver = socket.getaddrinfo) -> None:
        self.allow = tuple(allow)
        self.resolver = resolver
        self._allowed = [_parse_allow(a) for a in self.allow]

    def _is_allowed(self, host: str, ip: IPAddress, port: int) -> bool:
        for a in self._allowed:
            if a.network is not None and ip.version == a.network.version and ip in a.network:
                return True
            if a.host in (host, str(ip)) and a.port in (None, port):
                return True
        return False

    def resolve(self, host: str, port: int, url: str = "") -> str:
        """The address to connect to for ``host:port``, after every resolved address passed the check."""
        host = host.strip("[]").lower()
        try:
            infos = self.resolver(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise FetchConnectionError(url or host, f"cannot resolve {host!r}: {exc}; check the URL's host name") from None
        addresses = [info[4][0] for info in infos]
        for text in addresses:
            ip = ipaddress.ip_address(text.split("%", 1)[0])
            category = address_category(ip)
            if category is not None and not self._is_allowed(host, ip, port):
                raise BlockedAddressError(url or f"{host}:{port}", host, port, str(ip), category)
        return addresses[0]

    def check_url(self, url: str) -> str:
        """Check ``url`` before anything is sent to it; returns the address it resolved to."""
        try:
            parts = urllib.parse.urlsplit(url)
            host = parts.hostname
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise UnsupportedURLError(url, f"cannot fetch {url!r}: {exc}; fix the URL") from None
        if parts.scheme not in ("http", "https") or not host:
            raise UnsupportedURLError(url, f"cannot fetch {url!r}: only absolute http:// and https:// URLs are fetched")
        return self.resolve(host, port, url)


def _guarded_pool(pool_cls: type[HTTPConnectionPool], conn_cls: type[HTTPConnection], guard: AddressGuard):
    class GuardedConnection(conn_cls):  # type: ignore[misc, valid-type]
        def _new_conn(self):
            # Connect to the address the guard checked, not to a second DNS answer. urllib3's
            # ``host`` reads ``_dns_host``, so it is restored at once: TLS SNI and certificate
            # checks, which run after this, still see the host name.
            name = self._dns_host
            self._dns_host = guard.resolve(name, self.port)
            try:
                return super()._new_conn()
            finally:
                self._dns_host = name

    return type(f"Guarded{pool_cls.__name__}", (pool_cls,), {"ConnectionCls": GuardedConnection})


class GuardedAdapter(HTTPAdapter):
    """A requests adapter whose every new connection goes through :class:`AddressGuard`."""

    def __init__(self, guard: AddressGuard, **kwargs) -> None:
        self.guard = guard
        super().__init__(**kwargs)

    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _guarded_pool(HTTPConnectionPool, HTTPConnection, self.guard),
            "https": _guarded_pool(HTTPSConnectionPool, HTTPSConnection, self.guard),
        }
