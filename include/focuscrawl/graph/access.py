"""How a sampler sees a site: one vertex query returns the vertex's neighbours and its content copies.

Seed 003, *Fast crawling methods of exploring content distributed over large graphs* (abstract): crawling is limited by the query rate the service
allows, so every vertex fetched is charged to a budget; the samplers stop when it is spent.
Each content copy carries its meta-information (content id, label, the content's total number of
copies, whether it is the special copy), which is what the SCE and WCE estimators use.

HTTP contract of :class:`HttpGraphAccess` (the world server implements it)::

    GET {base}/graph/vertex/{id}.json -> {"id": "...", "neighbors": ["...", ...],
                                          "content": [{"content_id": "...", "label": "...",
                                                       "copies": 3, "special": false}, ...],
                                          "page": "/path/of/the/vertex/page"}   (optional)
    GET {base}/graph/random.json      -> the same document for a vertex drawn uniformly at random
                                         (404 when the site offers no uniform sampling)

Vertex ids are strings on the wire (URL-quoted in the path); the graph is treated as undirected,
so ``neighbors`` must list every vertex linked to or from ``id``. ``page``, when the site gives it, is
the vertex's own page (absolute, or a path on the site): the live sampler fetches it to score its
relevance to the project's page focus (:mod:`focuscrawl.graph.live`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterator, NamedTuple, Protocol
from urllib.parse import quote, urljoin

import numpy as np

from focuscrawl.graph.distribution import Distribution


class BudgetExhausted(RuntimeError):
    """Raised by an access when its vertex-query budget is spent; samplers stop on it."""


class ContentCopy(NamedTuple):
    content_id: Any
    label: Any
    copies: int
    special: bool


@dataclass(frozen=True)
class ContentCopies:
    """The content copies held by one vertex (or a whole sample), as aligned arrays (vectorised estimators)."""

    content_id: np.ndarray
    label: np.ndarray
    copies: np.ndarray
    special: np.ndarray

    def __len__(self) -> int:
        return len(self.content_id)

    def __iter__(self) -> Iterator[ContentCopy]:
        for c, l, n, s in zip(self.content_id, self.label, self.copies, self.special):
            yield ContentCopy(c, l, int(n), bool(s))

    def take(self, index: np.ndarray | slice) -> "ContentCopies":
        return ContentCopies(self.content_id[index], self.label[index], self.copies[index], self.special[index])

    @classmethod
    def from_rows(cls, rows: list[dict]) -> "ContentCopies":
        # Ids and labels as plain str arrays: numpy sorts them far faster than object arrays.
        return cls(
            np.array([str(r["content_id"]) for r in rows], dtype=str),
            np.array([str(r["label"]) for r in rows], dtype=str),
            np.array([int(r["copies"]) for r in rows], dtype=np.int64),
            np.array([bool(r["special"]) for r in rows], dtype=bool),
        )

    @classmethod
    def concat(cls, parts: list["ContentCopies"]) -> "ContentCopies":
        if not parts:
            return cls.from_rows([])
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("content_id", "label", "copies", "special")))


@dataclass(frozen=True)
class VertexRecord:
    """What one vertex query returns."""

    id: Any
    neighbors: np.ndarray
    content: ContentCopies

    @property
    def degree(self) -> int:
        return len(self.neighbors)


class GraphAccess(Protocol):
    """A crawlable graph behind a vertex-query budget (``budget=None``: unlimited)."""

    supports_uniform: bool
    budget: int | None
    queries: int

    def vertex(self, v: Any) -> VertexRecord: ...

    def random_vertex(self) -> VertexRecord: ...

    def num_vertices(self) -> int | None: ...


class BudgetedAccess:
    """Query accounting shared by the accesses: one charge per vertex fetched."""

    supports_uniform = True

    def __init__(self, budget: int | None = None) -> None:
        self.budget = budget
        self.queries = 0

    def _charge(self) -> None:
        if self.budget is not None and self.queries >= self.budget:
            raise BudgetExhausted(f"vertex-query budget of {self.budget} spent")
        self.queries += 1

    def neighbors(self, v: Any) -> np.ndarray:
        """Neighbours of ``v`` (one query; use :meth:`vertex` to get content in the same query)."""
        return self.vertex(v).neighbors

    def content(self, v: Any) -> ContentCopies:
        """Content copies held by ``v`` (one query)."""
        return self.vertex(v).content

    def vertex(self, v: Any) -> VertexRecord:
        self._charge()
        return self._fetch(v)

    def random_vertex(self) -> VertexRecord:
        if not self.supports_uniform:
            raise NotImplementedError("this site offers no uniform vertex sampling; use RW, MHRW or FS with a start vertex")
        self._charge()
        return self._fetch_random()

    def _fetch(self, v: Any) -> VertexRecord:
        raise NotImplementedError

    def _fetch_random(self) -> VertexRecord:
        raise NotImplementedError

    def num_vertices(self) -> int | None:
        return None


@dataclass(frozen=True, eq=False)
class InMemoryGraph:
    """An undirected graph with content copies on its vertices, plus the ground truth (for simulations).

    Vertices are ``0..n-1``; ``indptr/indices`` is the neighbour CSR, ``copy_ptr`` indexes the
    per-copy arrays by holding vertex. Build it with :meth:`build`.
    """

    indptr: np.ndarray
    indices: np.ndarray
    copy_ptr: np.ndarray
    copy_content: np.ndarray
    copy_special: np.ndarray
    content_label: np.ndarray
    content_copies: np.ndarray
    content_names: np.ndarray
    vertex_names: np.ndarray

    @classmethod
    def build(
        cls,
        num_vertices: int,
        edges: np.ndarray,
        copy_vertex: np.ndarray,
        copy_content: np.ndarray,
        content_label: np.ndarray,
        content_names: np.ndarray | None = None,
        vertex_names: np.ndarray | None = None,
    ) -> "InMemoryGraph":
        """Symmetrise ``edges``, keep the largest connected component (walks must be able to reach
        every vertex) and the copies held there. Each content's *special* copy is its first listed
        copy that survives, so callers choose the special copy by the order of ``copy_*``.
        """
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        edges = edges[edges[:, 0] != edges[:, 1]]
        adj = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(num_vertices, num_vertices)).tocsr()
        adj = ((adj + adj.T) > 0).astype(np.int8).tocsr()
        _, comp = connected_components(adj, directed=False)
        keep = comp == np.bincount(comp).argmax()
        new_id = np.full(num_vertices, -1, dtype=np.int64)
        new_id[keep] = np.arange(keep.sum())
        adj = adj[keep][:, keep].tocsr()
        adj.sort_indices()

        copy_vertex = np.asarray(copy_vertex, dtype=np.int64)
        copy_content = np.asarray(copy_content, dtype=np.int64)
        # One copy per (vertex, content): the estimators count copies on distinct vertices.
        _, first = np.unique(np.stack([copy_content, copy_vertex]), axis=1, return_index=True)
        first.sort()
        held = first[keep[copy_vertex[first]]]
        cv, cc = new_id[copy_vertex[held]], copy_content[held]
        _, first_of_content = np.unique(cc, return_index=True)
        special = np.zeros(len(cc), dtype=bool)
        special[first_of_content] = True
        order = np.argsort(cv, kind="stable")
        cv, cc, special = cv[order], cc[order], special[order]
        copies = np.bincount(cc, minlength=len(content_label))
        names = np.arange(len(content_label)) if content_names is None else np.asarray(content_names)
        vnames = np.arange(num_vertices) if vertex_names is None else np.asarray(vertex_names)
        return cls(
            indptr=adj.indptr.astype(np.int64),
            indices=adj.indices.astype(np.int64),
            copy_ptr=np.concatenate([[0], np.cumsum(np.bincount(cv, minlength=int(keep.sum())))]),
            copy_content=cc,
            copy_special=special,
            content_label=np.asarray(content_label),
            content_copies=copies,
            content_names=names,
            vertex_names=vnames[keep],
        )

    @property
    def num_vertices(self) -> int:
        return len(self.indptr) - 1

    @property
    def degrees(self) -> np.ndarray:
        return np.diff(self.indptr)

    def truth(self, target: str) -> Distribution:
        """Ground-truth distribution over the contents present: ``target`` is ``copies`` (omega) or ``label``."""
        present = self.content_copies > 0
        values = self.content_copies[present] if target == "copies" else self.content_label[present]
        keys, counts = np.unique(values, return_counts=True)
        return Distribution(target, dict(zip(keys.tolist(), (counts / counts.sum()).tolist())))

    def record(self, v: int) -> VertexRecord:
        s, e = self.copy_ptr[v], self.copy_ptr[v + 1]
        return VertexRecord(int(v), self.indices[self.indptr[v] : self.indptr[v + 1]], self._copies_by_vertex.take(slice(s, e)))

    @cached_property
    def _copies_by_vertex(self) -> ContentCopies:
        # Per-copy meta laid out once, so a query slices views instead of gathering.
        cc = self.copy_content
        return ContentCopies(cc, self.content_label[cc], self.content_copies[cc], self.copy_special)

    def access(self, budget: int | None = None, rng: np.random.Generator | None = None, uniform: bool = True) -> "InMemoryAccess":
        return InMemoryAccess(self, budget, rng or np.random.default_rng(), uniform)


class InMemoryAccess(BudgetedAccess):
    """Budgeted access to an :class:`InMemoryGraph` (simulations, tests, experiments)."""

    def __init__(self, graph: InMemoryGraph, budget: int | None, rng: np.random.Generator, uniform: bool = True) -> None:
        super().__init__(budget)
        self.graph = graph
        self.rng = rng
        self.supports_uniform = uniform

    def _fetch(self, v: Any) -> VertexRecord:
        return self.graph.record(int(v))

    def _fetch_random(self) -> VertexRecord:
        return self.graph.record(int(self.rng.integers(self.graph.num_vertices)))

    def num_vertices(self) -> int:
        return self.graph.num_vertices


class HttpGraphAccess(BudgetedAccess):
    """A site's graph over HTTP (the contract is in this module's docstring).

    With ``fetcher`` (a :class:`~focuscrawl.fetch.Fetcher`) every vertex query goes through the
    fetch layer: robots.txt, per-host politeness, retries on 429/503 with ``Retry-After``, the SSRF
    guard. That is how the live graph sampler reaches a site; a bare ``session`` is for experiments
    on the world.
    """

    def __init__(
        self,
        base_url: str,
        budget: int | None = None,
        timeout: float = 10.0,
        uniform: bool = True,
        num_vertices: int | None = None,
        session: Any = None,
        user_agent: str | None = None,
        fetcher: Any = None,
    ) -> None:
        super().__init__(budget)
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.supports_uniform = uniform
        self._num_vertices = num_vertices
        self.fetcher = fetcher
        self.warc: dict[str, Any] = {}  # vertex id -> WARC record of its last query, when the fetcher archives
        self.pages: dict[str, str] = {}  # vertex id -> absolute URL of its page, when the document names one
        if fetcher is None:
            import requests

            self.session = session or requests.Session()
            if user_agent:
                self.session.headers["User-Agent"] = user_agent

    def _document(self, url: str, path: str) -> tuple[dict, Any]:
        """The vertex document at ``url`` and its WARC record (None unless the fetcher archives)."""
        no_uniform = f"{url} answered 404: the site offers no uniform sampling; use RW, MHRW or FS with a start vertex"
        if self.fetcher is not None:
            from focuscrawl.fetch import HTTPStatusError

            try:
                result = self.fetcher.fetch(url, accept=["application/json"])
            except HTTPStatusError as exc:
                if exc.status == 404 and path == "/graph/random.json":
                    raise NotImplementedError(no_uniform) from None
                raise
            import json

            return json.loads(result.body), result.warc
        resp = self.session.get(url, timeout=self.timeout)
        if resp.status_code == 404 and path == "/graph/random.json":
            raise NotImplementedError(no_uniform)
        resp.raise_for_status()
        return resp.json(), None

    def _get(self, path: str) -> VertexRecord:
        url = f"{self.base_url}{path}"
        try:
            doc, warc = self._document(url, path)
        except ValueError as exc:  # a body that is not JSON
            raise ValueError(f"{url} is not a graph vertex document (not JSON): {exc}") from exc
        try:
            record = VertexRecord(
                id=str(doc["id"]),
                neighbors=np.array([str(n) for n in doc["neighbors"]], dtype=str),
                content=ContentCopies.from_rows(doc.get("content", [])),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{url} is not a graph vertex document (needs id, neighbors, content): {exc}") from exc
        if warc is not None:
            self.warc[record.id] = warc
        if isinstance(doc.get("page"), str) and doc["page"]:
            self.pages[record.id] = urljoin(self.base_url + "/", doc["page"])
        return record

    def _fetch(self, v: Any) -> VertexRecord:
        return self._get(f"/graph/vertex/{quote(str(v), safe='')}.json")

    def _fetch_random(self) -> VertexRecord:
        return self._get("/graph/random.json")

    def num_vertices(self) -> int | None:
        return self._num_vertices
