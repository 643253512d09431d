"""Secrets never reach a log: the one redaction filter every process installs.

OAuth client secrets and the bearer tokens issued for them are registered here the
moment they are read or received (:func:`register_secret`); :class:`RedactingFilter` replaces
them, and anything shaped like a credential (``Authorization: bearer ...``/``basic ...``,
``"access_token": ...``, ``client_secret=...``), by ``***`` in the message, its arguments, the
traceback and the stack text of every record. :func:`install` puts the filter on every handler
of the root logger (call it once logging is configured; the stream scaffold does).
"""

from __future__ import annotations

import logging
import re
import threading

MASK = "***"
_lock = threading.Lock()
_secrets: set[str] = set()
_PATTERNS = (
    re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(r"(?i)(\"?\b(?:access_token|refresh_token|client_secret|password)\b\"?\s*[:=]\s*\"?)[^\"&\s,}']+"),
)


def register_secret(value: str | None) -> None:
    """From now on ``value`` is masked wherever it appears in a log record (values under 6 chars are not,
    they would mask ordinary words)."""
    if value and len(value) >= 6:
        with _lock:
            _secrets.add(value)


def register_url_secret(url: str | None) -> None:
    """The password a URL carries (``scheme://user:PASSWORD@host/...``, e.g. a database's), as written and
    unquoted (as a driver may echo it), masked from now on."""
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url).password if url else None
    except ValueError:  # not a URL: nothing in it is known to be a password
        return
    register_secret(password)
    register_secret(unquote(password) if password else None)


def redact(text: str) -> str:
    """``text`` with every registered secret and credential-shaped value replaced by ``***``."""
    with _lock:
        known = sorted(_secrets, key=len, reverse=True)
    for value in known:
        if value in text:
            text = text.replace(value, MASK)
    text = _PATTERNS[0].sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    return _PATTERNS[1].sub(lambda m: f"{m.group(1)}{MASK}", text)


CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"})


def redact_header(name: str, value: str) -> str:
    """A header value fit to store (a WARC request record): a credential header keeps only its
    scheme (``Authorization: bearer ***``), any other value goes through :func:`redact`."""
    if name.lower() in CREDENTIAL_HEADERS:
        scheme, sep, _ = value.partition(" ")
        return f"{scheme} {MASK}" if sep and name.lower().endswith("authorization") else MASK
    return redact(value)


class RedactingFilter(logging.Filter):
    """A handler filter: formats the record's message once, redacted, and its traceback text likewise."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: let the handler report it as usual
            return True
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def install(logger: logging.Logger | None = None) -> int:
    """Add the filter to every handler of ``logger`` (the root logger by default); returns how many got it."""
    target = logger or logging.getLogger()
    added = 0
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
            added += 1
    return added


__all__ = ["CREDENTIAL_HEADERS", "MASK", "RedactingFilter", "install", "redact", "redact_header", "register_secret",
           "register_url_secret"]
