"""WARC archives of the fetch layer (issue 20, point 1) against a real local HTTP site: every response
archived (robots.txt, redirect hops, retried statuses), files valid for warcio's checker, the record at a
result's offset holding its body, rotation by size and by age, kill-safety, credentials redacted."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from focuscrawl.fetch.warc import WarcArchive, read_record, repair, warc_columns

ROOT = Path(__file__).resolve().parents[2]


def check(files) -> int:
    """warcio's own checker (``warcio check``), as a user runs it: exit status 0 when every digest holds."""
    done = subprocess.run([sys.executable, "-m", "warcio.cli", "check", "-v", *map(str, files)],
                          capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def records(path: Path) -> list:
    out = []
    with open(path, "rb") as f:
        it = ArchiveIterator(f)
        for r in it:
            body = r.content_stream().read()
            out.append((it.get_record_offset(), r.rec_type, r.rec_headers, r.http_headers, body))
    return out


def test_every_response_is_archived_with_its_request_and_the_files_validate(site, make_fetcher, tmp_path):
    site.routes["/a"] = (200, {"Content-Type": "application/json"}, b'{"x": 1}')
    site.routes["/old"] = (301, {"Location": "/a"}, b"moved")
    busy = iter([(503, {"Retry-After": "0"}, b"busy"), (200, {"Content-Type": "text/html"}, b"<p>ok</p>")])
    site.routes["/busy"] = lambda h: next(busy)
    archive = WarcArchive(tmp_path, prefix="t")
    fetcher = make_fetcher(archive=archive)
    moved = fetcher.fetch(site.url + "/old", accept=["application/json"])
    busy_result = fetcher.fetch(site.url + "/busy")
    archive.close()

    assert len(archive.files) == 1
    path = tmp_path / archive.files[0]
    code, out = check([path])
    assert code == 0 and "digest pass" in out, out
    got = records(path)
    kinds = [(r[1], r[2].get_header("WARC-Target-URI")) for r in got]
    assert kinds == [("warcinfo", None)] + [
        (kind, site.url + p) for p in ("/robots.txt", "/old", "/a", "/busy", "/busy") for kind in ("response", "request")]
    assert all(r[2].get_header("WARC-Concurrent-To") == got[i - 1][2].get_header("WARC-Record-ID")
               for i, r in enumerate(got) if r[1] == "request")
    assert got[1][4] == b"User-agent: *\nDisallow: /private/\n"  # robots.txt as fetched
    redirect = got[3]
    assert redirect[3].get_statuscode() == "301" and redirect[2].get_header("WARC-Truncated") == "unspecified"
    request = got[2 * 3 + 2]
    assert request[3].protocol.startswith("GET") and request[3].get_header("User-Agent") == "focuscrawl-test/1.0"
    assert [r[3].get_statuscode() for r in got if r[1] == "response"][-2:] == ["503", "200"]

    # The result names the record of the final response; at its offset lies exactly the body returned.
    assert moved.warc is not None and moved.warc.file == archive.files[0]
    headers, body = read_record(tmp_path, moved.warc)
    assert body == moved.body == b'{"x": 1}' and headers.get_statuscode() == "200"
    assert read_record(tmp_path, busy_result.warc)[1] == b"<p>ok</p>"
    assert warc_columns(busy_result.warc)["warc_offset"] == busy_result.warc.offset
    # offset and length cut out exactly the response record's gzip member (what a byte-range read gets)
    ref = moved.warc
    member = gzip.decompress(path.read_bytes()[ref.offset:ref.offset + ref.length])
    assert member.startswith(b"WARC/1.1\r\n") and b"WARC-Type: response" in member and ref.record_id.encode() in member
    assert member.endswith(b'{"x": 1}\r\n\r\n') and member.count(b"WARC/1.1\r\n") == 1


def test_a_decoded_body_keeps_the_encoding_header_renamed(site, make_fetcher, tmp_path):
    page = b"<html>" + b"hello " * 500 + b"</html>"
    site.routes["/z"] = (200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}, gzip.compress(page))
    archive = WarcArchive(tmp_path, prefix="t")
    result = make_fetcher(archive=archive, obey_robots=False).fetch(site.url + "/z")
    archive.close()
    headers, body = read_record(tmp_path, result.warc)
    assert body == result.body == page
    assert headers.get_header("Content-Encoding") is None and headers.get_header("X-Crawler-Content-Encoding") == "gzip"
    assert headers.get_header("Content-Length") == str(len(page))
    assert check([tmp_path / archive.files[0]])[0] == 0


def test_files_rotate_by_size(site, make_fetcher, tmp_path):
    page = os.urandom(3000).hex().encode()  # 6 kB of hex: ~3.4 kB gzipped, above max_bytes
    site.routes["/p"] = (200, {"Content-Type": "text/html"}, page)
    archive = WarcArchive(tmp_path, prefix="size", max_bytes=2000)
    fetcher = make_fetcher(archive=archive, obey_robots=False)
    refs = [fetcher.fetch(site.url + "/p").warc for _ in range(3)]
    archive.close()
    assert len(archive.files) == 3 and [r.file for r in refs] == archive.files  # each file took one pair, then was full
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(archive.files)
    assert all(f"-{os.getpid()}-" in name for name in archive.files)  # the pid is in the name: no two processes share one
    assert check([tmp_path / f for f in archive.files])[0] == 0
    assert [read_record(tmp_path, r)[1] for r in refs] == [page] * 3


def test_files_rotate_by_age(site, make_fetcher, tmp_path):
    site.routes["/p"] = (200, {"Content-Type": "text/html"}, b"<p>x</p>")
    now = [1_800_000_000.0]
    archive = WarcArchive(tmp_path, prefix="age", max_seconds=60, clock=lambda: now[0])
    fetcher = make_fetcher(archive=archive, obey_robots=False)
    first = [fetcher.fetch(site.url + "/p").warc for _ in range(2)]
    now[0] += 61
    later = fetcher.fetch(site.url + "/p").warc
    archive.close()
    assert first[0].file == first[1].file != later.file and archive.files == [first[0].file, later.file]
    assert first[0].file.startswith("age-20270115080000-00000-")  # the UTC time the file was opened
    assert check([tmp_path / f for f in archive.files])[0] == 0


def test_without_an_archive_nothing_is_written_and_results_name_no_record(site, make_fetcher, tmp_path):
    site.routes["/a"] = (200, {"Content-Type": "text/html"}, b"<p>a</p>")
    result = make_fetcher().fetch(site.url + "/a")
    assert result.warc is None and set(warc_columns(result.warc).values()) == {None}
    assert list(tmp_path.iterdir()) == []


def test_a_file_cut_mid_record_keeps_every_whole_record_and_repair_drops_the_partial_one(site, make_fetcher, tmp_path):
    site.routes["/p"] = (200, {"Content-Type": "text/html"}, b"<p>" + b"word " * 2000 + b"</p>")
    archive = WarcArchive(tmp_path, prefix="cut")
    fetcher = make_fetcher(archive=archive, obey_robots=False)
    refs = [fetcher.fetch(site.url + "/p").warc for _ in range(3)]
    archive.close()
    path = tmp_path / archive.files[0]
    whole = path.stat().st_size
    cut = refs[2].offset + 200  # inside the third response's gzip member: what a power loss could leave
    with open(path, "r+b") as f:
        f.truncate(cut)
    # warcio's checker passes over a cut last member without a word (it checks the digests of what it
    # can read), so the cut is found by decompressing member by member: repair's job.
    assert read_record(tmp_path, refs[1])[1].startswith(b"<p>word")  # the records before the cut read as ever
    assert repair(path) == cut - refs[2].offset and path.stat().st_size == refs[2].offset < whole
    assert check([path])[0] == 0
    assert [r[1] for r in records(path)] == ["warcinfo"] + ["response", "request"] * 2
    assert repair(path) == 0  # a whole file is left as it is


KILLED = """
import sys, time
from focuscrawl.fetch import AddressGuard, Fetcher
from focuscrawl.fetch.warc import WarcArchive
archive = WarcArchive(sys.argv[2], prefix="killed")
fetcher = Fetcher("focuscrawl-test/1.0", guard=AddressGuard(["127.0.0.1"]), obey_robots=False, archive=archive)
while True:
    fetcher.fetch(sys.argv[1] + "/big")
    print(archive.records, flush=True)
"""


def test_a_sigkilled_process_leaves_valid_files(site, tmp_path):
    site.routes["/big"] = (200, {"Content-Type": "text/html"}, os.urandom(200_000).hex().encode())  # 400 kB a record
    proc = subprocess.Popen([sys.executable, "-c", KILLED, site.url, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for _ in range(5):  # five records written, the sixth on its way
            assert proc.stdout.readline(), proc.stderr.read()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    files = list(tmp_path.glob("killed-*.warc.gz"))
    assert len(files) == 1
    code, out = check(files)
    assert code == 0, out
    # One write per record pair: the kill lands between two records, unless it hits that write itself
    # (Linux may end a file write short on a fatal signal); then repair cuts the partial pair, no more.
    repair(files[0])
    assert check(files)[0] == 0 and sum(1 for r in records(files[0]) if r[1] == "response") >= 5


def test_credential_headers_are_redacted_in_the_request_record(site, make_fetcher, tmp_path):
    seen = []
    site.routes["/api"] = lambda h: (seen.append(h.headers["Authorization"]) or (200, {"Content-Type": "text/plain"}, b"ok"))
    archive = WarcArchive(tmp_path, prefix="auth")
    fetcher = make_fetcher(archive=archive, obey_robots=False)
    fetcher.session.headers.update({"Authorization": "bearer tok-SECRET-123", "Cookie": "sid=abc123456"})
    fetcher.fetch(site.url + "/api")
    archive.close()
    assert seen == ["bearer tok-SECRET-123"]  # sent as is
    raw = gzip.decompress((tmp_path / archive.files[0]).read_bytes())
    assert b"tok-SECRET-123" not in raw and b"abc123456" not in raw
    request = [r for r in records(tmp_path / archive.files[0]) if r[1] == "request"][0][3]
    assert request.get_header("Authorization") == "bearer ***" and request.get_header("Cookie") == "***"


def test_the_oauth_bearer_token_is_redacted_in_the_request_records(tmp_path, monkeypatch):
    """A project site with OAuth2 client credentials against the world's reddit OAuth emulator: the token
    goes out on every request and never into the archive."""
    from focuscrawl.fetch import AddressGuard
    from focuscrawl.fetch.site import fetcher_for_site
    from focuscrawl.project.model import OAuth, Site
    from focuscrawl.world import build_world
    from focuscrawl.world.oauth import TOKEN_PATH, OAuthEmulator
    from focuscrawl.world.server import WorldServer

    client_id, secret = "fc-warc-client", "fc-warc-secret-0123456789"
    monkeypatch.setenv("FC_WARC_ID", client_id)
    monkeypatch.setenv("FC_WARC_SECRET", secret)
    world = build_world(7, users=2000, base_rate=0.05, paused=True, rate_limit=0, events_per_minute=20.0,
                        warmup_seconds=1800.0, data_dir=None, web=False)
    world.oauth = OAuthEmulator(client_id, secret, token_ttl=3600)
    archive = WarcArchive(tmp_path, prefix="oauth")
    with WorldServer(world) as server:
        site = Site(name="w", base_url=server.url, user_agent="fc-test/1 (+mailto:ops@example.org)",
                    politeness_delay=0.0, oauth=OAuth(token_url=server.url + TOKEN_PATH, client_id_env="FC_WARC_ID",
                                                      client_secret_env="FC_WARC_SECRET"))
        with fetcher_for_site(site, guard=AddressGuard(["127.0.0.1"]), archive=archive) as fetcher:
            result = fetcher.fetch(server.url + "/r/all/new.json?limit=5", accept=["application/json"])
            token = fetcher.session.auth.token()
    archive.close()
    assert result.status == 200 and len(token) >= 6 and world.oauth.state()["issued"] == 1
    path = tmp_path / archive.files[0]
    assert check([path])[0] == 0
    raw = gzip.decompress(path.read_bytes())  # every member, every header
    assert token.encode() not in raw and secret.encode() not in raw
    requests_ = {r[2].get_header("WARC-Target-URI"): r[3] for r in records(path) if r[1] == "request"}
    assert requests_[server.url + "/r/all/new.json?limit=5"].get_header("Authorization") == "bearer ***"
    assert requests_[server.url + "/robots.txt"].get_header("Authorization") is None  # robots.txt goes without
    assert read_record(tmp_path, result.warc)[1] == result.body
