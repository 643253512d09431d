"""The example pages of a page focus: what ``[profile.pages]`` declares, read into labelled texts.

Each entry of ``positives`` / ``negatives`` is an http(s) URL (fetched once, by ``focuscrawl train``,
through the site's fetch layer: its User-Agent, politeness and robots.txt), a local HTML or text file,
or a folder of them (``*.html``, ``*.htm``, ``*.txt``, recursively); ``examples`` is a JSONL file of
``{"url", "text", "label"}`` lines (a line without ``text`` has its ``url`` fetched); a profile's
``query`` counts as one positive page. Every page becomes its main text (trafilatura) and language
(py3langid), :mod:`focuscrawl.parse.text`.

Two checks run without the network (``focuscrawl validate`` runs them): every file exists and every
class has enough pages (:func:`count_examples`); the fetches run at training and a URL robots.txt
forbids is refused by name (:func:`read_example_pages`). Each fault is a :class:`ExampleError` whose
``key`` is the entry's key path (``profile.pages.positives[2]``).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Iterator, Sequence

from focuscrawl.core.corpora import jsonl_objects

log = logging.getLogger(__name__)

PAGE_SUFFIXES = (".html", ".htm", ".txt")
ACCEPT = ["text/html", "application/xhtml+xml", "text/plain"]
KEY = "profile.pages"


class ExampleError(ValueError):
    """A page focus that cannot be trained: ``key`` is the key path, the message says the fix."""

    def __init__(self, key: str, problem: str) -> None:
        self.key = key
        self.problem = problem
        super().__init__(f"{key}: {problem}")


@dataclass(frozen=True)
class ExamplePage:
    """One labelled example page. ``key`` identifies the page (its canonical URL, else a digest of its
    text) so that a page listed twice is one page; ``origin`` is the key path that declared it."""

    key: str
    label: int
    text: str
    language: str | None
    origin: str


def is_url(entry: str) -> bool:
    return entry.lower().startswith(("http://", "https://"))


def page_key(url: str | None, text: str) -> str:
    """A page's identity: its canonical URL, else ``sha1:`` of its whitespace-normalised text."""
    if url:
        from focuscrawl.parse.canon import canonical_url

        return canonical_url(url)
    return "sha1:" + hashlib.sha1(" ".join(text.split()).encode("utf-8")).hexdigest()


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in PAGE_SUFFIXES)
    return [path]


def parse_label(value, where: str) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip().lower() in ("1", "0", "positive", "negative", "pos", "neg", "true", "false"):
        return int(value.strip().lower() in ("1", "positive", "pos", "true"))
    raise ExampleError(where, f"label {value!r} is not a class; write \"label\": 1 (about the topic) or 0 (not)")


def jsonl_rows(path: Path, key: str) -> Iterator[tuple[int, dict]]:
    """``(line number, row)`` of each example line; ExampleError names the line and the fix."""
    for n, row in jsonl_objects(path, '{"url", "text", "label"}', partial(ExampleError, key)):
        if not (row.get("text") or row.get("url")):
            raise ExampleError(key, f"line {n} of {path.name} has neither \"text\" nor \"url\"; "
                                    "give the page's text, or its URL to fetch")
        if "label" not in row:
            raise ExampleError(key, f"line {n} of {path.name} has no \"label\"; add \"label\": 1 or 0")
        row["label"] = parse_label(row["label"], f"{key} (line {n} of {path.name})")
        yield n, row


def count_examples(positives: Sequence[str], negatives: Sequence[str], examples: str | None,
                   query: str | None) -> dict[int, int]:
    """Example pages declared per class (a folder counts its page files), without fetching anything.
    Paths are absolute (the project resolved them); a missing one is an ExampleError naming its key."""
    counts = {0: 0, 1: 0}
    for role, label, entries in (("positives", 1, positives), ("negatives", 0, negatives)):
        for i, entry in enumerate(entries):
            if is_url(entry):
                counts[label] += 1
                continue
            path = Path(entry)
            where = f"{KEY}.{role}[{i}]"
            if not path.exists():
                raise ExampleError(where, f"{path} does not exist; point at an example page (.html, .htm or .txt), "
                                          "a folder of them, or its http(s) URL")
            found = _files(path)
            if not found:
                raise ExampleError(where, f"folder {path} holds no .html, .htm or .txt file; put the example pages "
                                          "there or point at another folder")
            counts[label] += len(found)
    if examples is not None:
        path = Path(examples)
        if not path.exists():
            raise ExampleError(f"{KEY}.examples", f"{path} does not exist; point at a JSONL file of "
                                                  "{\"url\", \"text\", \"label\"} lines")
        for _, row in jsonl_rows(path, f"{KEY}.examples"):
            counts[row["label"]] += 1
    if query:
        counts[1] += 1
    return counts


Fetch = Callable[[str], tuple[bytes, str]]  # url -> (body, final URL); raises focuscrawl.fetch.errors.FetchError


def _from_html(body: bytes | str, url: str | None, label: int, origin: str) -> ExamplePage:
    from focuscrawl.outlinks.revisit import page_content
    from focuscrawl.parse.text import page_text

    raw = body if isinstance(body, bytes) else body.encode("utf-8")
    text = page_text(raw, url, visible_text=page_content(raw, url or "http://example.invalid/")[0])
    return ExamplePage(page_key(url, text.main_text), label, text.main_text, text.language, origin)


def _from_text(text: str, url: str | None, label: int, origin: str) -> ExamplePage:
    from focuscrawl.parse.text import plain_text

    page = plain_text(text)
    return ExamplePage(page_key(url, page.main_text), label, page.main_text, page.language, origin)


def _fetched(fetch: Fetch, url: str, label: int, where: str) -> ExamplePage:
    from focuscrawl.fetch.errors import FetchError, RobotsDisallowedError

    try:
        body, final = fetch(url)
    except RobotsDisallowedError:
        raise ExampleError(where, f"robots.txt of {url.split('/')[2]} forbids {url} to this project's User-Agent; "
                                  "remove it, or save the page (with its owner's leave) and list the file") from None
    except FetchError as exc:
        raise ExampleError(where, f"{url} could not be fetched ({exc}); fix the URL, start the site, "
                                  "or save the page and list the file") from None
    page = _from_html(body, final, label, where)
    # The page is known by the URL the user gave, so a URL listed twice (or in the JSONL) is one page.
    return ExamplePage(page_key(url, page.text), page.label, page.text, page.language, page.origin)


def _file_page(path: Path, label: int, where: str) -> ExamplePage:
    data = path.read_bytes()
    if path.suffix.lower() == ".txt":
        return _from_text(data.decode("utf-8", errors="replace"), None, label, where)
    return _from_html(data, None, label, where)


def read_example_pages(positives: Sequence[str], negatives: Sequence[str], examples: str | None, query: str | None,
                       fetch: Fetch | None) -> list[ExamplePage]:
    """Every declared example page, read (URLs fetched once each by ``fetch``), in declaration order."""
    pages: list[ExamplePage] = []

    def need_fetch(where: str) -> Fetch:
        if fetch is None:
            raise ExampleError(where, "is a URL, and no fetcher was given; run `focuscrawl train` (it fetches "
                                      "example URLs through the site's fetch layer)")
        return fetch

    for role, label, entries in (("positives", 1, positives), ("negatives", 0, negatives)):
        for i, entry in enumerate(entries):
            where = f"{KEY}.{role}[{i}]"
            if is_url(entry):
                pages.append(_fetched(need_fetch(where), entry, label, where))
            else:
                pages.extend(_file_page(p, label, where) for p in _files(Path(entry)))
    if examples is not None:
        path = Path(examples)
        for n, row in jsonl_rows(path, f"{KEY}.examples"):
            where = f"{KEY}.examples (line {n} of {path.name})"
            if row.get("text"):
                pages.append(_from_text(str(row["text"]), row.get("url"), row["label"], where))
            else:
                pages.append(_fetched(need_fetch(where), str(row["url"]), row["label"], where))
    if query:
        pages.append(_from_text(query, None, 1, "profile.query"))
    return pages


def distinct(pages: Sequence[ExamplePage]) -> list[ExamplePage]:
    """One page per key (the first declaration); a page declared in both classes is an ExampleError."""
    seen: dict[str, ExamplePage] = {}
    for page in pages:
        first = seen.get(page.key)
        if first is None:
            seen[page.key] = page
        elif first.label != page.label:
            raise ExampleError(page.origin, f"the page {page.key} is also a {'positive' if first.label else 'negative'} "
                                            f"example ({first.origin}); keep it in one class")
    return list(seen.values())


__all__ = ["ExampleError", "ExamplePage", "count_examples", "distinct", "is_url", "page_key", "parse_label",
           "read_example_pages"]
