"""The documentation site builds strictly, and every figure it quotes is what the committed result files say.

``mkdocs build --strict`` (mkdocs.yml: ``validation`` makes a broken link, a missing anchor and a page
outside ``nav`` warnings, strict makes them errors) and the claims check (``bench.claims``, docs page
"Checking the quoted numbers"), each with a copy of the docs broken on purpose to show it can fail.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench import claims
from helpers import CHILD_TIMEOUT

ROOT = Path(__file__).resolve().parent.parent
MKDOCS = [sys.executable, "-m", "mkdocs", "build", "--strict"]


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([*MKDOCS, "-f", str(config), "-d", str(site)], capture_output=True, text=True,
                          env=env, timeout=CHILD_TIMEOUT, cwd=ROOT)


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of docs/ and mkdocs.yml under ``tmp_path`` that still includes the repository's result files."""
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config["docs_dir"] = str(docs)
    for ext in config["markdown_extensions"]:
        if isinstance(ext, dict) and "pymdownx.snippets" in ext:
            ext["pymdownx.snippets"]["base_path"] = [str(ROOT)]
    path = tmp_path / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config))
    return docs, path


def test_docs_build_strict(tmp_path):
    result = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr
    index = (tmp_path / "site" / "index.html").read_text()
    assert "md-header" in index  # the material theme rendered it
    # an included result table is in the page, not a copy in the docs
    graph = (tmp_path / "site" / "loops" / "graph" / "index.html").read_text()
    sweep = (ROOT / "bench/results/003-graph-estimation/sweep.md").read_text()
    assert "+0.026 [+0.009, +0.044]" in sweep and "+0.026 [+0.009, +0.044]" in graph
    for page in (tmp_path / "site" / "loops").glob("[!c]*/index.html"):  # markers stay invisible comments
        html = page.read_text()
        assert "--8&lt;--" not in html and "&lt;!--claim" not in html, page


@pytest.mark.parametrize("breakage, message", [
    (lambda docs: (docs / "world.md").open("a").write("\n[gone](no-such-page.md)\n"), "no-such-page.md"),
    (lambda docs: (docs / "querying.md").open("a").write("\n[gone](world.md#no-such-anchor)\n"), "no-such-anchor"),
    (lambda docs: (docs / "orphan.md").write_text("# Not in nav\n"), "orphan.md"),
    (lambda docs: (docs / "benchmarks.md").open("a").write('\n--8<-- "bench/results/no-such-table.md"\n'),
     "no-such-table.md"),
])
def test_docs_build_fails_on_broken_link_orphan_or_missing_table(tmp_path, breakage, message):
    docs, config = _copy(tmp_path)
    breakage(docs)
    result = _build(config, tmp_path / "site")
    assert result.returncode != 0
    assert message in result.stdout + result.stderr


def test_docs_copy_builds(tmp_path):
    """The copy the negative checks break builds as it is: each failure below is its breakage's."""
    _, config = _copy(tmp_path)
    result = _build(config, tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr


def test_readme_is_short_and_links_into_the_docs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 10_000
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / target).is_file(), target


def test_every_quoted_figure_is_what_the_result_files_say():
    problems = claims.check()
    assert not problems, "\n".join(map(str, problems))
    quoted = sum(len(claims.CLAIM.findall(p.read_text())) for p in (ROOT / "docs").rglob("*.md"))
    assert quoted >= 50


def test_claims_check_fails_on_a_wrong_unmarked_or_stale_figure(tmp_path):
    docs, _ = _copy(tmp_path)
    graph = docs / "loops" / "graph.md"
    text = graph.read_text()
    right = "-->+0.026 [+0.009, +0.044]<!--/claim-->"
    assert right in text
    graph.write_text(text.replace(right, "-->+0.016 [+0.009, +0.044]<!--/claim-->", 1))
    problems = [str(p) for p in claims.check(docs)]
    assert len(problems) == 1 and "graph.md" in problems[0] and "+0.016" in problems[0]

    graph.write_text(text + "\nSCE and WCE stay within 0.03 [0.01, 0.05] of the truth, and MLE is 1.4x better.\n")
    problems = [str(p) for p in claims.check(docs)]
    assert len(problems) == 2 and all("unmarked result figure" in p for p in problems)

    graph.write_text(text + "\n<!--pending bench/results/003-graph-estimation/sweep.md-->\n")
    problems = [str(p) for p in claims.check(docs)]
    assert len(problems) == 1 and "committed now" in problems[0]

    graph.write_text(text.replace(" <!--claim", "\n<!--claim", 1))  # a marker moved to the start of a line
    problems = [str(p) for p in claims.check(docs)]
    assert len(problems) == 1 and "starts the line" in problems[0]


def test_claims_check_fails_on_an_ambiguous_row_or_a_wrong_json_value():
    sweep = "bench/results/003-graph-estimation/sweep.md"
    assert claims.resolve(sweep, "RW ; SCE", "+0.026 [+0.009, +0.044]").startswith("2 rows")  # two tables
    assert claims.resolve(f"{sweep}@rho=0.5 (Spearman 0.51)", "RW ; SCE", "+0.026 [+0.009, +0.044]") is None
    assert "604800" in claims.resolve("bench/results/fue-folds/run-fold0.json#duration", None, "259200")
    assert claims.resolve("bench/results/fue-folds/run-fold0.json#duration", None, "604800") is None


def test_code_cites_the_docs_or_the_paper_never_an_issue_or_a_seed_hash():
    pattern = r"issue [0-9]+|DESIGN\.md|_[0-9a-f]{16}\.txt"
    hits = "".join(subprocess.run(["grep", "-rniE", *only, pattern, *where], capture_output=True, text=True,
                                  cwd=ROOT).stdout
                   for only, where in [((), ("include", "streaming", "spark_jobs", "dags")),
                                       (("--include=*.py",), ("bench",))])  # not bench/results: run records
    hits = "\n".join(line for line in hits.splitlines() if "/__pycache__/" not in line and ".egg-info" not in line)
    assert not hits, hits
