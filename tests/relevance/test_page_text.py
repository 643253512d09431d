"""A fetched page's main text and language: what lands beside the raw page in ``page_snapshots``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from focuscrawl.outlinks.revisit import SnapshotWriter, snapshot
from focuscrawl.parse.text import check_languages, identify_language, page_text
from helpers import CHILD_TIMEOUT

ARTICLE = ("The Weimar Republic was the German state from 1918 to 1933. It was a semi-presidential republic whose "
           "constitution was drafted in the city of Weimar; it ended when the National Socialists seized power.")
GERMAN = ("Die Weimarer Republik war die Zeit des Deutschen Reiches von 1918 bis 1933. Sie war die erste "
          "parlamentarische Demokratie in Deutschland und endete mit der Machtübernahme der Nationalsozialisten.")


def page(paragraph: str) -> bytes:
    menu = "".join(f'<li><span>Menu entry {i}</span></li>' for i in range(30))
    return (f"<html><head><title>T</title></head><body><nav><ul>{menu}</ul></nav><article><h1>Weimar</h1>"
            f"<p>{paragraph}</p><p>{paragraph}</p></article><footer>Copyright 2026 Example Corp. All rights reserved. "
            "Privacy policy. Cookie settings.</footer></body></html>").encode()


def test_main_text_drops_the_boilerplate_that_the_visible_text_keeps():
    row = snapshot("https://example.org/wiki/Weimar", page(ARTICLE), 0, 1_700_000_000.0)
    assert "Menu entry 7" in row["text"] and "Cookie settings" in row["text"]
    assert "Menu entry" not in row["main_text"] and "Cookie settings" not in row["main_text"]
    assert "semi-presidential republic" in row["main_text"]
    assert row["language"] == "en" and row["language_score"] > 0.9


def test_language_of_each_page_and_of_a_text_too_short_to_tell():
    assert page_text(page(GERMAN), "https://example.de/").language == "de"
    assert identify_language("ok") == (None, None)
    blank = page_text(b"<html><body></body></html>", "https://example.org/", visible_text="")
    assert blank.main_text == "" and blank.language is None


def test_a_page_with_no_main_content_keeps_its_visible_text():
    listing = b"<html><body><ul><li><a href='/a'>First</a></li><li><a href='/b'>Second</a></li></ul></body></html>"
    assert page_text(listing, "https://example.org/", visible_text="First Second").main_text == "First Second"


def test_language_codes_are_checked_against_the_identifiers_model():
    assert check_languages(["EN", "de", "en"]) == ("en", "de")
    with pytest.raises(ValueError, match=r"'english' is not a language code .* use ISO 639-1 codes such as \"en\""):
        check_languages(["english"])


def test_checking_codes_keeps_the_models_class_list_alone_and_it_is_the_identifiers():
    """A process that only loads a project (a consumer, the FUE chooser) must not hold the identifier (~75 MB)."""
    code = ("from focuscrawl.parse import text; text.check_languages(['en']); "
            "held = text._identifier.cache_info().currsize; codes = text.known_languages(); "
            "print(held, codes == tuple(sorted(set(text._identifier().nb_classes))), len(codes))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    assert done.stdout.split() == ["0", "True", "140"], done.stderr[-2000:]


def test_main_text_and_language_land_in_delta_next_to_the_raw_page(tmp_path):
    from deltalake import DeltaTable

    writer = SnapshotWriter(str(tmp_path / "page_snapshots"))
    writer(snapshot("https://example.org/en", page(ARTICLE), 0, 1_700_000_000.0))
    writer(snapshot("https://example.de/de", page(GERMAN), 0, 1_700_000_001.0))
    assert writer.flush() == 2
    rows = sorted(DeltaTable(str(tmp_path / "page_snapshots")).to_pyarrow_table(
        columns=["url", "text", "main_text", "language", "language_score"]).to_pylist(), key=lambda r: r["url"])
    assert [r["language"] for r in rows] == ["de", "en"]
    assert all(r["main_text"] and len(r["main_text"]) < len(r["text"]) for r in rows)
    assert all(0.5 < r["language_score"] <= 1.0 for r in rows)
