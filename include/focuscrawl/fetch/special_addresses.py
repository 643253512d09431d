"""IANA's special-purpose address registries as a table of our own, for the SSRF guard.

Python's ``ipaddress`` flags (``is_private``, ``is_global``) follow these registries with a lag
that depends on the interpreter: 3.11.7, pinned here, calls ``192.0.0.0/24`` global although
IANA marks it not globally reachable (it holds ``192.0.0.192``, a cloud provider's instance
metadata address), and knows nothing of ``3fff::/20`` or ``5f00::/16``. The guard therefore
decides from this table alone, whatever the Python version.

Transcribed from IANA's "IPv4 Special-Purpose Address Registry" (``iana-ipv4-special-registry``,
version of 2020-09-04) and "IPv6 Special-Purpose Address Registry" (``iana-ipv6-special-registry``,
version of 2025-10-09), column "Globally Reachable". The most specific entry holding an address
decides (``192.0.0.9/32`` is reachable inside the unreachable ``192.0.0.0/24``). Entries whose
reachability is "N/A" are the tunnelling prefixes (Teredo, 6to4) and deprecated blocks: the
guard judges the IPv4 address they embed, or refuses them.

Beyond the special-purpose registries, two address-space facts are applied:
* IPv4 ``224.0.0.0/4`` is multicast (IANA's multicast registry) and never a fetch target.
* In IPv6 only ``2000::/3`` is global unicast (IANA's IPv6 Address Space registry); every address
  outside it is reserved, unique-local, link-local or multicast, except ``64:ff9b::/96``,
  which embeds an IPv4 address and is judged by it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import lru_cache

IPV4_REGISTRY_DATE = "2020-09-04"
IPV6_REGISTRY_DATE = "2025-10-09"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class SpecialBlock:
    network: Network
    name: str  # the registry's Name column
    reachable: bool | None  # the registry's "Globally Reachable"; None for N/A

    @property
    def version(self) -> int:
        return self.network.version


def _blocks(rows: tuple[tuple[str, str, bool | None], ...]) -> tuple[SpecialBlock, ...]:
    return tuple(SpecialBlock(ipaddress.ip_network(net), name, reach) for net, name, reach in rows)


IPV4_SPECIAL = _blocks((
    ("0.0.0.0/8", '"This network"', False),
    ("0.0.0.0/32", '"This host on this network"', False),
    ("10.0.0.0/8", "Private-Use", False),
    ("100.64.0.0/10", "Shared Address Space", False),
    ("127.0.0.0/8", "Loopback", False),
    ("169.254.0.0/16", "Link Local", False),
    ("172.16.0.0/12", "Private-Use", False),
    ("192.0.0.0/24", "IETF Protocol Assignments", False),
    ("192.0.0.0/29", "IPv4 Service Continuity Prefix", False),
    ("192.0.0.8/32", "IPv4 dummy address", False),
    ("192.0.0.9/32", "Port Control Protocol Anycast", True),
    ("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", True),
    ("192.0.0.170/32", "NAT64/DNS64 Discovery", False),
    ("192.0.0.171/32", "NAT64/DNS64 Discovery", False),
    ("192.0.2.0/24", "Documentation (TEST-NET-1)", False),
    ("192.31.196.0/24", "AS112-v4", True),
    ("192.52.193.0/24", "AMT", True),
    ("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", None),
    ("192.168.0.0/16", "Private-Use", False),
    ("192.175.48.0/24", "Direct Delegation AS112 Service", True),
    ("198.18.0.0/15", "Benchmarking", False),
    ("198.51.100.0/24", "Documentation (TEST-NET-2)", False),
    ("203.0.113.0/24", "Documentation (TEST-NET-3)", False),
    ("240.0.0.0/4", "Reserved", False),
    ("255.255.255.255/32", "Limited Broadcast", False),
))

IPV6_SPECIAL = _blocks((
    ("::1/128", "Loopback Address", False),
    ("::/128", "Unspecified Address", False),
    ("::ffff:0:0/96", "IPv4-mapped Address", False),
    ("64:ff9b::/96", "IPv4-IPv6 Translat.", True),
    ("64:ff9b:1::/48", "IPv4-IPv6 Translat.", False),
    ("100::/64", "Discard-Only Address Block", False),
    ("100:0:0:1::/64", "Dummy IPv6 Prefix", False),
    ("2001::/23", "IETF Protocol Assignments", False),
    ("2001::/32", "TEREDO", None),
    ("2001:1::1/128", "Port Control Protocol Anycast", True),
    ("2001:1::2/128", "Traversal Using Relays around NAT Anycast", True),
    ("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", True),
    ("2001:2::/48", "Benchmarking", False),
    ("2001:3::/32", "AMT", True),
    ("2001:4:112::/48", "AS112-v6", True),
    ("2001:10::/28", "Deprecated (previously ORCHID)", None),
    ("2001:20::/28", "ORCHIDv2", True),
    ("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", True),
    ("2001:db8::/32", "Documentation", False),
    ("2002::/16", "6to4", None),
    ("2620:4f:8000::/48", "Direct Delegation AS112 Service", True),
    ("3fff::/20", "Documentation", False),
    ("5f00::/16", "Segment Routing (SRv6) SIDs", False),
    ("fc00::/7", "Unique-Local", False),
    ("fe80::/10", "Link-Local Unicast", False),
))

IPV4_MULTICAST = ipaddress.ip_network("224.0.0.0/4")
IPV6_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
NAT64 = ipaddress.ip_network("64:ff9b::/96")


@lru_cache(maxsize=4096)
def special_block(ip: IPAddress) -> SpecialBlock | None:
    """The most specific registry entry holding ``ip``, or None."""
    table = IPV4_SPECIAL if ip.version == 4 else IPV6_SPECIAL
    hits = [b for b in table if ip in b.network]
    return max(hits, key=lambda b: b.network.prefixlen) if hits else None


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a mapped, NAT64, 6to4 or Teredo address carries."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


def not_reachable_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` is not globally reachable (the registry's name for its block), or None."""
    if ip.version == 6:
        inner = embedded_ipv4(ip)
        if inner is not None:
            reason = not_reachable_reason(inner)
            return f"{reason} (inside {ip})" if reason else None
        if ip.is_multicast:
            return "Multicast"
        if ip not in IPV6_GLOBAL_UNICAST:
            block = special_block(ip)
            return block.name if block is not None else "outside global unicast 2000::/3"
    elif ip in IPV4_MULTICAST:
        return "Multicast"
    block = special_block(ip)
    if block is None or block.reachable is True:
        return None
    return block.name if block.reachable is False else f"{block.name} (deprecated or not applicable)"
