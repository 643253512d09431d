"""WARC 1.1 archives of every fetch: request and response records, gzip per record, rotated by size and age.

The archival format ACHE, StormCrawler, Nutch and Heritrix write and pywb, warcio
and the Common Crawl tools read (ISO 28500:2017, WARC 1.1). The :class:`~focuscrawl.fetch.Fetcher`
hands every response it receives (a page, a listing, robots.txt, a redirect hop, a 429 before its
retry) to its :class:`WarcArchive`, which writes a ``response`` record and the ``request`` record that
produced it (``WARC-Concurrent-To``) with ``warcio``, and returns the :class:`WarcRef` of the response
record: the file, the byte offset of its gzip member and its ``WARC-Record-ID``. The rows a crawler
lands carry that ref (:data:`WARC_COLUMNS`), so a row in Spark SQL leads to the exact bytes fetched
(:func:`read_record`).

- **Files**: ``<prefix>-<UTC timestamp>-<serial>-<pid>-<host>.warc.gz`` (the IIPC naming convention,
  prefix-timestamp-serial-crawlhost), one warcinfo record first. The prefix is the process's name and
  the pid is in the name, so concurrent processes never write one file. A file is closed and the next
  one opened once it holds ``max_bytes`` or is ``max_seconds`` old.
- **Kill-safe**: each record pair is compressed in memory as its own gzip members and written with one
  ``write`` and a flush, so a SIGKILLed process leaves whole records (the OS has every byte written)
  unless the signal hits that very write (Linux may end a file write short on a fatal signal); a file
  cut short (that, a power loss, a full disk) keeps every member before the cut readable, and
  :func:`repair` truncates it to its last whole record. warcio's checker passes over a cut last member
  silently; :func:`repair` is what finds it.
- **Bodies as the crawler read them**: ``requests`` undoes ``Content-Encoding`` and chunking, so, as
  StormCrawler's WARC module does, those headers are kept renamed ``X-Crawler-Content-Encoding`` /
  ``X-Crawler-Transfer-Encoding`` and ``Content-Length`` is the stored body's. A response whose body was
  not read (a redirect, an error status) or was cut at a size limit has ``WARC-Truncated``.
- **Not modified**: a ``304`` to a conditional request is a ``revisit`` record (WARC 1.1, section 6.7.2)
  with the profile ``http://netpreserve.org/warc/1.1/revisit/server-not-modified``, the 304's headers and
  no payload, ``WARC-Refers-To`` the record of the full fetch it confirms when known.
- **Secrets**: credential headers of the request (``Authorization``, ``Cookie``, ...) keep their scheme
  only (:func:`focuscrawl.core.redact.redact_header`); the OAuth token request itself is not archived.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import zlib
from io import BytesIO
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

import pyarrow as pa

from focuscrawl.lake.tables import Column

log = logging.getLogger(__name__)

WARC_FOLDER = "warc"  # beside the Delta tables: <lake>/warc
DEFAULT_MAX_BYTES = 1_000_000_000  # ~1 GB per file, the IIPC recommendation
DEFAULT_MAX_SECONDS = 3600.0
_DECODED = ("content-encoding", "transfer-encoding")  # requests undid these: the stored body is decoded
NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"

WARC_COLUMNS = (
    Column("warc_file", pa.string(), "WARC file holding the response this row was read from (path under the lake's warc/ folder); null when not archived"),
    Column("warc_offset", pa.int64(), "byte offset of the response record's gzip member in warc_file"),
    Column("warc_length", pa.int64(), "bytes of that gzip member: substring(content, warc_offset + 1, warc_length) of the file"),
    Column("warc_record_id", pa.string(), "WARC-Record-ID of the response record"),
)


class WarcRef(NamedTuple):
    """Where a response record is: ``file`` (relative to the archive folder), ``offset`` and ``length`` of
    its gzip member (Common Crawl's index names them the same way), ``record_id``."""

    file: str
    offset: int
    record_id: str
    length: int | None = None


def warc_columns(ref: WarcRef | tuple | None) -> dict:
    """The :data:`WARC_COLUMNS` values of a row read from the response ``ref`` (nulls when not archived)."""
    if ref is None:
        return {"warc_file": None, "warc_offset": None, "warc_length": None, "warc_record_id": None}
    ref = WarcRef(*ref)
    return {"warc_file": ref.file, "warc_offset": int(ref.offset), "warc_length": ref.length,
            "warc_record_id": ref.record_id}


def warc_folder(cfg) -> Path:
    """Where the platform's WARC files go: ``<lake>/warc``, beside the Delta tables. An object-store lake
    (``s3://``) is not written to by this module yet: its archive stays in ``$FOCUSCRAWL_VAR/warc``."""
    from focuscrawl.lake.storage import is_object_store

    if is_object_store(cfg.lake):
        log.warning("the lake %s is on object storage; WARC files are written to %s/%s (not uploaded)",
                    cfg.lake, cfg.var_dir, WARC_FOLDER)
        return Path(cfg.var_dir) / WARC_FOLDER
    return Path(cfg.table_path(WARC_FOLDER))


def add_warc_arguments(parser):
    """``--warc DIR``, ``--warc-max-mb``, ``--warc-max-age`` on a process's argument parser (or group); the
    plan (``focuscrawl.platform.plan``) passes them to every fetching process of a project."""
    parser.add_argument("--warc", type=Path, metavar="DIR",
                        help="archive every fetch as WARC 1.1 files in DIR (focuscrawl up: <lake>/warc; default: off)")
    parser.add_argument("--warc-max-mb", type=float, default=DEFAULT_MAX_BYTES / 1e6,
                        help="with --warc: start a new file at this size")
    parser.add_argument("--warc-max-age", type=float, default=DEFAULT_MAX_SECONDS,
                        help="with --warc: start a new file after this many seconds")
    return parser


def archive_from_args(args, prefix: str, software: str = "focuscrawl") -> "WarcArchive | None":
    """The archive ``--warc`` asks for (:func:`add_warc_arguments`), or None without it."""
    if getattr(args, "warc", None) is None:
        return None
    return WarcArchive(args.warc, prefix=prefix, max_bytes=int(args.warc_max_mb * 1e6),
                       max_seconds=args.warc_max_age, software=software)


def fetch_archived(source, url: str) -> tuple[bytes, WarcRef | None]:
    """The body of ``source.get(url)`` and its WARC record: a :class:`~focuscrawl.fetch.Fetcher` tells it
    through ``fetch``; a source with only ``get`` (a replay, a test double) has none."""
    fetch = getattr(source, "fetch", None)
    if fetch is None:
        return source.get(url), None
    result = fetch(url)
    return result.body, result.warc


class WarcArchive:
    """Writes request/response record pairs into rotating ``.warc.gz`` files under ``folder``.

    ``WarcArchive(folder, prefix="revisitor")``; :meth:`record` is called by the fetcher, from any thread.
    """

    def __init__(self, folder: str | Path, prefix: str = "focuscrawl", max_bytes: int = DEFAULT_MAX_BYTES,
                 max_seconds: float = DEFAULT_MAX_SECONDS, clock=time.time, software: str = "focuscrawl") -> None:
        from warcio.warcwriter import WARCWriter

        if max_bytes <= 0 or max_seconds <= 0:
            raise ValueError(f"WARC rotation needs max_bytes > 0 and max_seconds > 0 (got {max_bytes}, {max_seconds})")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.prefix, self.max_bytes, self.max_seconds = prefix, int(max_bytes), float(max_seconds)
        self.clock, self.software = clock, software
        self.host = socket.gethostname().split(".")[0] or "localhost"
        self._builder = WARCWriter(None, gzip=True, warc_version="1.1")
        self._lock = threading.Lock()
        self._file = None
        self._name = ""
        self._opened = 0.0
        self._serial = 0
        self.records = 0  # response and revisit records written
        self.files: list[str] = []  # every file this archive opened, in order
        log.info("WARC archive on: %s/%s-*.warc.gz, rotated at %d bytes or %.0f s", self.folder, prefix,
                 self.max_bytes, self.max_seconds)

    # -- files ------------------------------------------------------------------------------

    def _open(self) -> None:
        now = self.clock()
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(now))
        self._name = f"{self.prefix}-{stamp}-{self._serial:05d}-{os.getpid()}-{self.host}.warc.gz"
        self._serial += 1
        self._file = open(self.folder / self._name, "xb")  # never another process's or an earlier file
        self._opened = now
        self.files.append(self._name)
        info = self._builder.create_warcinfo_record(self._name, {
            "software": self.software, "format": "WARC File Format 1.1",
            "conformsTo": "https://iso.org/standard/68004.html", "hostname": self.host, "pid": os.getpid()})
        self._write([info])

    def _rotate_if_due(self) -> None:
        if self._file is not None and (self._file.tell() >= self.max_bytes
                                       or self.clock() - self._opened >= self.max_seconds):
            self._close_file()
        if self._file is None:
            self._open()

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None

    def close(self) -> None:
        with self._lock:
            self._close_file()

    def _write(self, records) -> tuple[int, int]:
        """The records as gzip members, in one write (under the lock); the offset and length of the first."""
        buffer = BytesIO()
        self._builder.out = buffer
        ends = []
        for record in records:
            self._builder.write_record(record)
            ends.append(buffer.tell())
        offset = self._file.tell()
        self._file.write(buffer.getvalue())
        self._file.flush()
        return offset, ends[0]

    # -- records ----------------------------------------------------------------------------

    def record(self, response, body: bytes, truncated: str | None = None) -> WarcRef:
        """Archive ``response`` (a ``requests.Response``; ``body`` as read, ``truncated`` a WARC-Truncated
        reason when it is not the whole body) and its request; the ref of the response record."""
        from warcio.statusandheaders import StatusAndHeaders

        version = self._version(response)
        headers = []
        for name, value in response.headers.items():
            if name.lower() in _DECODED:
                headers.append((f"X-Crawler-{name}", value))
            elif name.lower() != "content-length":
                headers.append((name, value))
        headers.append(("Content-Length", str(len(body))))
        http = StatusAndHeaders(f"{response.status_code} {response.reason or ''}".strip(), headers, protocol=version)
        warc_headers = {"WARC-Truncated": truncated} if truncated else {}
        resp = self._builder.create_warc_record(response.url, "response", payload=BytesIO(body), length=len(body),
                                                http_headers=http, warc_headers_dict=warc_headers)
        return self._write_pair(resp, response, version)

    def revisit(self, response, refers_to: str | None = None) -> WarcRef:
        """Archive a ``304 Not Modified`` as a server-not-modified ``revisit`` record (headers only) and its
        request; ``refers_to``: the WARC-Record-ID of the full response it confirms, when known."""
        from warcio.statusandheaders import StatusAndHeaders

        version = self._version(response)
        http = StatusAndHeaders(f"{response.status_code} {response.reason or ''}".strip(),
                                list(response.headers.items()), protocol=version)
        warc_headers = {"WARC-Profile": NOT_MODIFIED_PROFILE, "WARC-Refers-To-Target-URI": response.url}
        if refers_to:
            warc_headers["WARC-Refers-To"] = refers_to
        rec = self._builder.create_warc_record(response.url, "revisit", payload=BytesIO(b""), length=0,
                                               http_headers=http, warc_headers_dict=warc_headers)
        return self._write_pair(rec, response, version)

    @staticmethod
    def _version(response) -> str:
        return {10: "HTTP/1.0", 11: "HTTP/1.1"}.get(getattr(response.raw, "version", 11), "HTTP/1.1")

    def _write_pair(self, resp, response, version: str) -> WarcRef:
        """Write ``resp`` and the request record of ``response`` (``WARC-Concurrent-To`` it); ``resp``'s ref."""
        from warcio.statusandheaders import StatusAndHeaders

        from focuscrawl.core.redact import redact_header

        sent = response.request
        parts = urlsplit(sent.url)
        request_headers = [("Host", parts.netloc)] + [(k, redact_header(k, v)) for k, v in sent.headers.items()]
        req = self._builder.create_warc_record(
            response.url, "request", payload=BytesIO(b""), length=0,
            http_headers=StatusAndHeaders(f"{sent.method} {sent.path_url} {version}", request_headers,
                                          is_http_request=True))
        record_id = resp.rec_headers.get_header("WARC-Record-ID")
        req.rec_headers.replace_header("WARC-Date", resp.rec_headers.get_header("WARC-Date"))
        req.rec_headers.add_header("WARC-Concurrent-To", record_id)
        with self._lock:
            self._rotate_if_due()
            offset, length = self._write([resp, req])
            self.records += 1
            return WarcRef(self._name, offset, record_id, length)


def read_record(folder: str | Path, ref: WarcRef | tuple):
    """``(http_headers, body)`` of the response record at ``ref`` (``body`` as the crawler read it).

    From a row: ``read_record(lake + "/warc", (row.warc_file, row.warc_offset, row.warc_record_id))``.
    Reads only that record: seeks to the offset, decompresses its gzip member."""
    from warcio.archiveiterator import ArchiveIterator

    ref = WarcRef(*ref)
    with open(Path(folder) / ref.file, "rb") as f:
        f.seek(ref.offset)
        for record in ArchiveIterator(f):
            found = record.rec_headers.get_header("WARC-Record-ID")
            if found != ref.record_id:
                raise LookupError(f"{ref.file} at offset {ref.offset} holds record {found}, not {ref.record_id}; "
                                  "the row and the file disagree: was the file rewritten?")
            return record.http_headers, record.content_stream().read()
    raise LookupError(f"{ref.file} has no record at offset {ref.offset}; the offset is past its end")


def repair(path: str | Path, chunk: int = 1 << 20) -> int:
    """Truncate a WARC file cut short mid-record to its last whole record; returns the bytes dropped.

    Every record is its own gzip member, so the file is whole up to the end of its last complete
    member; only the partial one after it goes."""
    path = Path(path)
    size = good = pos = 0
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        member = zlib.decompressobj(zlib.MAX_WBITS | 16)
        data = f.read(chunk)
        while data:
            try:
                member.decompress(data)
            except zlib.error:
                break
            if member.eof:  # a whole member ends inside ``data``: the next starts right after it
                pos += len(data) - len(member.unused_data)
                good, data = pos, member.unused_data or f.read(chunk)
                member = zlib.decompressobj(zlib.MAX_WBITS | 16)
            else:
                pos += len(data)
                data = f.read(chunk)
    if good < size:
        with open(path, "r+b") as f:
            f.truncate(good)
        log.warning("WARC %s was cut short: %d bytes of a partial record dropped", path, size - good)
    return size - good


__all__ = ["NOT_MODIFIED_PROFILE", "WARC_COLUMNS", "WARC_FOLDER", "WarcArchive", "WarcRef", "add_warc_arguments", "archive_from_args",
           "fetch_archived", "read_record", "repair",
           "warc_columns", "warc_folder"]
