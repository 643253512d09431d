"""One JSONL reader for example files (``focuscrawl.core.corpora.jsonl_objects``): the example users of a
profile (``focuscrawl.project.examples``) and the example pages of a page focus
(``focuscrawl.relevance.examples``) read their lines, and name a bad one, the same way."""

from __future__ import annotations

import re

import pytest

from focuscrawl.core.corpora import jsonl_objects
from focuscrawl.project.examples import read_examples
from focuscrawl.relevance.examples import ExampleError, count_examples


def test_blank_lines_are_skipped_and_each_object_keeps_its_line_number(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"user": "a", "text": "hi"}\n\n  \n{"user": "b", "text": "yo"}\n')
    assert list(jsonl_objects(path, '{"user", "text"}')) == [(1, {"user": "a", "text": "hi"}),
                                                            (4, {"user": "b", "text": "yo"})]


@pytest.mark.parametrize(("line", "says"), [
    ("{not json", "line 2 of bad.jsonl is not JSON ("),
    ('["a list"]', "line 2 of bad.jsonl is not a JSON object"),
])
def test_both_example_readers_name_the_bad_line_and_the_shape_of_a_good_one(tmp_path, line, says):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"user": "a", "url": "http://a.test/", "text": "hi", "label": 1}\n' + line + "\n")
    with pytest.raises(ValueError, match="^" + re.escape(says)) as users:
        read_examples(path, "jsonl")
    assert 'write one {"user", "text"} object per line' in str(users.value)
    with pytest.raises(ExampleError) as pages:
        count_examples([], [], str(path), None)
    assert pages.value.key == "profile.pages.examples"
    assert pages.value.problem.startswith(says)
    assert 'write one {"url", "text", "label"} object per line' in pages.value.problem
