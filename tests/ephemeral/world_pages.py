"""The world's pages fetched in-process (no HTTP server): the fetch callable the source code takes."""

from __future__ import annotations

from focuscrawl.fetch.fetcher import media_type

BASE = "http://127.0.0.1:9"  # never connected to: URLs are mapped straight onto the world's paths


def world_fetch(world):
    def get(url: str):
        status, ctype, body = world.crawl(url[len(BASE):], {})
        if status != 200:
            raise RuntimeError(f"HTTP {status} for {url}")
        return body, media_type(ctype), url

    return get
