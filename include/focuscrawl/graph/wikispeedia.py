"""The Wikispeedia hyperlink graph as a content graph (real data, ``../shared/data/wikispeedia``).

Seed 003 (*Fast crawling methods of exploring content distributed over large graphs*) studies content replicated over vertices (a tweet and its retweets).
Mapping chosen here (documented because the data set has no notion of copies):

- vertex: an article; edges: its hyperlinks, made undirected (``links.tsv``); largest component kept;
- content: an article *as something linked to*; each hyperlink u -> t is a copy of content t held by
  u, so t's copy count is its in-degree (heavy-tailed, like retweet counts);
- label: the top-level topic of t (``subject.<Topic>`` of its alphabetically first category in
  ``categories.tsv``; ``none`` when it has none), i.e. "topics as content labels";
- special copy: the link from the alphabetically first article linking to t (a fixed rule that
  does not depend on degree, standing in for "the original post").

Taking an article's categories as its content copies instead gives only 129 contents, too few for
a per-content estimator at a 10% sample; the link view gives ~4,100 contents.

What follows for estimation (measured, README): contents have 29 copies on average, so a 10% walk
sees ~2/3 of them and the naive label share is only mildly biased (topics hardly depend on
in-degree, Countries aside), while SCE and WCE pay for unbiasedness with walk variance.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pandas as pd

from focuscrawl.graph.access import InMemoryGraph


def _tsv(path: Path, names: list[str]) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", comment="#", header=None, names=names, dtype=str, keep_default_na=False).dropna()


def load_wikispeedia(folder: str | Path) -> InMemoryGraph:
    folder = Path(folder)
    articles = sorted(_tsv(folder / "articles.tsv", ["article"])["article"].map(unquote))
    index = {a: i for i, a in enumerate(articles)}
    links = _tsv(folder / "links.tsv", ["source", "target"]).map(unquote)
    links = links[links.source.isin(index) & links.target.isin(index)]
    categories = _tsv(folder / "categories.tsv", ["article", "category"])
    categories["article"] = categories["article"].map(unquote)
    topic = categories.sort_values("category").groupby("article")["category"].first().str.split(".").str[1]
    labels = np.array([topic.get(a, "none") for a in articles], dtype=str)
    # Order copies by (content, holder name) so each content's special copy is its first linker.
    links = links.sort_values(["target", "source"])
    source = links.source.map(index).to_numpy()
    target = links.target.map(index).to_numpy()
    return InMemoryGraph.build(
        len(articles),
        np.stack([source, target], axis=1),
        copy_vertex=source,
        copy_content=target,
        content_label=labels,
        content_names=np.array(articles, dtype=str),
        vertex_names=np.array(articles, dtype=str),
    )
