"""The SSRF guard against IANA's special-purpose address registries, block by block.

``tests/fetch/data/iana-ipv*-special-registry-1.csv`` are the registries in IANA's own CSV layout
(columns as IANA publishes them). Every block whose "Globally Reachable" is False, and every
deprecated block, must be refused at its first, middle and last address, unless a more specific
entry of the registry makes that address reachable; every reachable block's own addresses pass.
The guard decides from its own table, so this holds whatever ``ipaddress`` of this Python says.
"""

from __future__ import annotations

import csv
import ipaddress
import re
from pathlib import Path

import pytest

from focuscrawl.fetch import AddressGuard, BlockedAddressError
from focuscrawl.fetch.guard import address_category
from focuscrawl.fetch.special_addresses import IPV4_REGISTRY_DATE, IPV6_REGISTRY_DATE, IPV4_SPECIAL, IPV6_SPECIAL

DATA = Path(__file__).parent / "data"


def registry(version: int) -> list[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str, str]]:
    rows = []
    with open(DATA / f"iana-ipv{version}-special-registry-1.csv", newline="") as f:
        for row in csv.DictReader(f):
            reach = re.sub(r"\s*\[\d+\]", "", row["Globally Reachable"]).strip() or "deprecated"
            for block in row["Address Block"].split(","):
                rows.append((ipaddress.ip_network(re.sub(r"\s*\[\d+\]", "", block).strip()), row["Name"], reach))
    return rows


ROWS = [(n, name, reach) for v in (4, 6) for n, name, reach in registry(v)]
REACHABLE = [n for n, _, reach in ROWS if reach == "True"]


def probes(net) -> list:
    first, last = net[0], net[-1]
    return sorted({first, last, type(first)(int(first) + (int(last) - int(first)) // 2)})


def covered_by_reachable(ip, net) -> bool:
    return any(ip in r and r.prefixlen > net.prefixlen for r in REACHABLE)


@pytest.mark.parametrize("net,name,reach", [r for r in ROWS if r[2] in ("False", "deprecated")],
                         ids=lambda v: str(v) if not isinstance(v, str) else None)
def test_every_not_globally_reachable_block_is_refused(net, name, reach):
    for ip in probes(net):
        if covered_by_reachable(ip, net):
            continue
        assert address_category(ip) is not None, f"{ip} in {net} ({name}) is not globally reachable"


# NAT64 (64:ff9b::/96) carries an IPv4 address that is judged instead: see the public-address test.
@pytest.mark.parametrize("net", [n for n in REACHABLE if n != ipaddress.ip_network("64:ff9b::/96")], ids=str)
def test_reachable_registry_blocks_are_not_refused_for_themselves(net):
    for ip in probes(net):
        assert address_category(ip) is None, f"{ip} in {net} is globally reachable per IANA"


def test_our_table_holds_every_registry_row():
    ours = {(b.network, b.reachable) for b in (*IPV4_SPECIAL, *IPV6_SPECIAL)}
    as_bool = {"True": True, "False": False, "N/A": None, "deprecated": None}
    assert {(n, as_bool[reach]) for n, _, reach in ROWS} == ours
    assert IPV4_REGISTRY_DATE and IPV6_REGISTRY_DATE


@pytest.mark.parametrize("address", [
    "192.0.0.192",   # a cloud provider's metadata address: "global" to ipaddress on Python 3.11.7
    "192.0.0.100",   # IETF Protocol Assignments
    "3fff::1",       # documentation, registered 2024
    "5f00::1",       # SRv6 SIDs, registered 2024
    "100:0:0:1::1",  # dummy prefix, registered 2025
    "::ffff:192.0.0.192",
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "2002:c000:00c0::",  # 6to4 of 192.0.0.192
    "224.0.0.251", "ff05::2",  # multicast
    "4000::1",       # outside 2000::/3: reserved by IETF
])
def test_blocks_python_may_call_global_are_refused(address):
    assert address_category(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:4700::1111", "64:ff9b::5db8:d822", "192.0.0.9"])
def test_public_addresses_pass(address):
    assert address_category(ipaddress.ip_address(address)) is None


def test_guard_refuses_a_host_resolving_to_the_metadata_block():
    def resolver(host, port, type=None):
        return [(None, None, None, "", ("192.0.0.192", port))]

    with pytest.raises(BlockedAddressError) as err:
        AddressGuard(resolver=resolver).check_url("http://metadata.example/opc/v1/instance/")
    assert err.value.category == "cloud metadata"
    assert "192.0.0.192" in str(err.value)
