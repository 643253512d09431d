"""Typed fetch errors: each says what happened and what to do about it (the requests way)."""

from __future__ import annotations


class FetchError(Exception):
    """Base of every error the fetch layer raises; ``url`` is the URL that failed."""

    retryable = False

    def __init__(self, url: str, message: str) -> None:
        super().__init__(message)
        self.url = url


class BlockedAddressError(FetchError):
    """The SSRF guard refused a host: it resolves to an internal address that is not allow-listed."""

    def __init__(self, url: str, host: str, port: int, address: str, category: str) -> None:
        super().__init__(
            url,
            f"refused {url}: {host} resolves to {address}, a {category} address, and the SSRF guard blocks those. "
            f"If this host is yours and meant to be crawled, add '{host}:{port}' (or a CIDR such as "
            f"'{address}/32') to FOCUSCRAWL_ALLOW_PRIVATE_HOSTS.",
        )
        self.host, self.port, self.address, self.category = host, port, address, category


class UnsupportedURLError(FetchError):
    """Not an http(s) URL with a host."""


class RobotsDisallowedError(FetchError):
    """robots.txt forbids this URL to our user agent; drop it from the frontier, do not retry."""


class RedirectLoopError(FetchError):
    """A redirect led back to a URL already visited in the same chain."""


class TooManyRedirectsError(FetchError):
    """The redirect chain was longer than the limit."""


class ResponseTooLargeError(FetchError):
    """The body exceeded ``max_bytes``."""


class UnexpectedContentTypeError(FetchError):
    """The response's media type is not one the caller accepts."""


class HTTPStatusError(FetchError):
    """The final response was not 2xx (and not retried, or no longer)."""

    def __init__(self, url: str, status: int, message: str) -> None:
        super().__init__(url, message)
        self.status = status


class RetriesExhaustedError(HTTPStatusError):
    """429/503 (or a transient network error) persisted through every retry."""


class FetchTimeoutError(FetchError):
    """Connect, read or total timeout."""

    retryable = True


class FetchConnectionError(FetchError):
    """The host could not be reached (refused, reset, DNS failure)."""

    retryable = True


def refusal_of(url: str, exc: BaseException):
    """The dead-letter rejection of a fetch that failed for good (a redirect loop, robots.txt, a body too
    large, an unexpected type, a 4xx status), or None when retrying later may help (a timeout, a
    refused connection, 429/503 that outlasted the retries) or ``exc`` is not the fetch layer's."""
    from focuscrawl.parse.rejection import Rejection

    if not isinstance(exc, FetchError) or exc.retryable or isinstance(exc, RetriesExhaustedError):
        return None
    if isinstance(exc, HTTPStatusError) and exc.status >= 500:  # the server's trouble, maybe not for long
        return None
    return Rejection(str(exc), url, url, "fetch")
