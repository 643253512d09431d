"""Shared input handling of the XML parsers: size-bounded gunzip, BOMs, and a safe lxml parser."""

from __future__ import annotations

import codecs
import zlib

from lxml import etree

# sitemaps.org: a sitemap may be 50 MB uncompressed; more from a gzip is a decompression bomb.
MAX_UNCOMPRESSED = 50 * 1024 * 1024


class InputError(ValueError):
    """The body cannot be read at all (corrupt or oversized gzip)."""


def gunzip_if_needed(body: bytes, limit: int = MAX_UNCOMPRESSED) -> bytes:
    if not body.startswith(b"\x1f\x8b"):
        return body
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise InputError(f"corrupt gzip: {exc}") from None
    if len(data) > limit:
        raise InputError(f"gzip expands beyond {limit} bytes (the sitemaps.org limit); refusing a decompression bomb")
    if not inflater.eof:
        raise InputError("truncated gzip: the stream ends before its end marker")
    return data


def strip_bom(data: bytes) -> bytes:
    return data[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8) else data


def safe_parser() -> etree.XMLParser:
    """No DTD loading, no entity expansion, no network, no huge trees; recover from broken markup."""
    return etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
        huge_tree=False, recover=True, remove_comments=True, remove_pis=True,
    )


def local(tag: object) -> str:
    """Tag name without namespace (comments and PIs have non-string tags). The recovering parser can
    hand back names QName refuses (``sihttp:``, found by fuzzing): the text after the last ``}`` or ``:``."""
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1]
