"""A fetched page's main text (boilerplate removed) and its language.

Main text: trafilatura (Barbaresi, "Trafilatura: A Web Scraping Library and Command-Line Tool for
Text Discovery and Extraction", ACL-IJCNLP 2021 System Demonstrations, section 3: a cascade of
XPath heuristics on the document tree with jusText and readability as fallbacks). When it finds
no main content (a bare page, a listing) the page's visible text is the fallback, so a short page
still has words to judge.

Language: py3langid, the maintained fork of langid.py (Lui and Baldwin, "langid.py: An
Off-the-shelf Language Identification Tool", ACL 2012 System Demonstrations, section 2: a
multinomial naive Bayes over byte n-grams selected by LD feature selection), whose model ships
inside the package. The identifier is loaded once per process (about 1 s of CPU, ~75 MB resident), and only in a
process that identifies a page's language: one that only checks a project's language codes reads the model's
class list and keeps that alone.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from functools import lru_cache

log = logging.getLogger(__name__)

# Texts shorter than this carry too few n-grams for a language guess worth landing.
MIN_LANGUAGE_CHARS = 20


@dataclass(frozen=True)
class PageText:
    """What a page says: its main text, the ISO 639-1 code of its language (None when too short to
    tell) and the identifier's normalised probability of that language."""

    main_text: str
    language: str | None
    language_score: float | None


_lock = threading.Lock()


@lru_cache(maxsize=1)
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@lru_cache(maxsize=1)
def known_languages() -> tuple[str, ...]:
    """The ISO 639-1 codes the language identifier knows: its model's class list, read with py3langid's own loader
    (0.6 CPU-s) and kept alone. Every process that loads a project checks its codes (``focuscrawl.project``): with
    the whole identifier kept for that, each of the live platform's consumers and FUE processes held ~75 MB it
    never used."""
    if _identifier.cache_info().currsize:
        return tuple(sorted(set(_identifier().nb_classes)))
    from py3langid.langid import MODEL_DIR, MODEL_FILE
    from py3langid.modelio import load_model

    return tuple(sorted(set(load_model(MODEL_DIR / MODEL_FILE)[2])))


def check_languages(codes) -> tuple[str, ...]:
    """``codes`` lower-cased, each one the identifier knows; ValueError naming the first unknown one and the fix."""
    import difflib

    known = known_languages()
    out = []
    for code in codes:
        c = str(code).strip().lower()
        if c not in known:
            close = difflib.get_close_matches(c, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"{code!r} is not a language code the identifier knows{hint}; use ISO 639-1 codes "
                             f"such as \"en\", \"de\", \"fr\" (known: {', '.join(known)})")
        out.append(c)
    return tuple(dict.fromkeys(out))


def identify_language(text: str) -> tuple[str | None, float | None]:
    """``(ISO 639-1 code, probability)`` of ``text``; ``(None, None)`` for a text too short to tell."""
    sample = " ".join(text.split())[:5000]
    if len(sample) < MIN_LANGUAGE_CHARS:
        return None, None
    ident = _identifier()
    with _lock:  # the identifier keeps scratch arrays per call
        code, prob = ident.classify(sample)
    return str(code), float(prob)


def main_text(body: bytes | str, url: str | None = None, fallback: str = "") -> str:
    """The main text of an HTML page (trafilatura), or ``fallback`` when it finds none."""
    import trafilatura

    html = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    if not html.strip():
        return fallback
    try:
        text = trafilatura.extract(html, url=url, favor_recall=True, include_comments=False, include_tables=True,
                                   deduplicate=False, with_metadata=False)
    except Exception as exc:  # noqa: BLE001 - a page trafilatura cannot parse keeps its visible text
        log.debug("trafilatura failed on %s: %s", url, exc)
        text = None
    return " ".join(text.split()) if text else fallback


def page_text(body: bytes | str, url: str | None = None, visible_text: str = "") -> PageText:
    """Main text and language of a fetched HTML page; ``visible_text`` is the fallback main text."""
    text = main_text(body, url, fallback=visible_text)
    return PageText(text, *identify_language(text))


def plain_text(text: str) -> PageText:
    """A plain-text document (an example page saved as text) as :class:`PageText`."""
    text = " ".join(text.split())
    return PageText(text, *identify_language(text))


__all__ = ["MIN_LANGUAGE_CHARS", "PageText", "check_languages", "identify_language", "known_languages",
           "main_text", "page_text", "plain_text"]
