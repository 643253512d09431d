"""The fetch layer: SSRF guard, robots.txt, politeness and retries in front of ``requests``."""

from focuscrawl.fetch.errors import (
    BlockedAddressError,
    FetchConnectionError,
    FetchError,
    FetchTimeoutError,
    HTTPStatusError,
    RedirectLoopError,
    ResponseTooLargeError,
    RetriesExhaustedError,
    RobotsDisallowedError,
    TooManyRedirectsError,
    UnexpectedContentTypeError,
    UnsupportedURLError,
)
from focuscrawl.fetch.fetcher import Fetcher, FetchResult
from focuscrawl.fetch.guard import AddressGuard
from focuscrawl.fetch.observer import FetchObserver
from focuscrawl.fetch.politeness import HostPoliteness
from focuscrawl.fetch.retry import RetryPolicy
from focuscrawl.fetch.robots import RobotsCache

__all__ = [
    "AddressGuard", "BlockedAddressError", "FetchConnectionError", "FetchError", "FetchObserver", "FetchResult", "FetchTimeoutError",
    "Fetcher", "HTTPStatusError", "HostPoliteness", "RedirectLoopError", "ResponseTooLargeError",
    "RetriesExhaustedError", "RetryPolicy", "RobotsCache", "RobotsDisallowedError", "TooManyRedirectsError",
    "UnexpectedContentTypeError", "UnsupportedURLError",
]
