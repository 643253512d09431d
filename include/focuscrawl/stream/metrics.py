"""The Prometheus metrics of a focuscrawl process (``prometheus_client``), named once for every process.

Each stream process holds one :class:`Metrics` on its own ``CollectorRegistry`` and serves it on
``127.0.0.1:<--metrics-port>/metrics`` (:mod:`focuscrawl.stream.process`); Prometheus scrapes it
(``docker-compose.yml``, and the supervisor's file_sd targets), and ``focuscrawl status`` reads the
same numbers, either from the endpoint (:func:`scrape`) or from the ``metrics`` snapshot the
process writes into its status file (:meth:`Metrics.snapshot`).

==========================================================  ===============================================
metric                                                      what
==========================================================  ===============================================
``focuscrawl_fetches_total{host,status}``                   HTTP responses by host and status code
``focuscrawl_fetch_failures_total{host,kind}``              requests without a response (timeout, connection)
``focuscrawl_fetch_seconds``                                request to response headers (histogram)
``focuscrawl_http_429_total{host}``                         "429 Too Many Requests" answers
``focuscrawl_retry_after_seconds_total{host}``              seconds waited because a Retry-After asked it
``focuscrawl_fetch_retries_total{host}``                    retries (429/503, timeouts, broken connections)
``focuscrawl_robots_denied_total{host}``                    URLs robots.txt disallowed (not fetched)
``focuscrawl_scope_refused_total{reason}``                  URLs the site's scope or trap rules refused (focuscrawl.fetch.scope)
``focuscrawl_records_consumed_total{topic}``                Kafka records read
``focuscrawl_records_produced_total{topic}``                Kafka records sent
``focuscrawl_record_errors_total{topic}``                   records whose handling failed (skipped)
``focuscrawl_consumer_lag{group,topic,partition}``          end offset minus the consumer's position
``focuscrawl_rows_written_total{table}``                    Delta rows appended by a sink
``focuscrawl_dead_letters_total{table}``                    records dead-lettered by a sink
``focuscrawl_duplicates_dropped_total{table}``              rows a unique-key sink already held
``focuscrawl_near_duplicates_skipped_total{loop}``          new pages skipped as near-duplicates (focuscrawl.core.dedup)
``focuscrawl_not_modified_total{loop}``                     conditional revisits answered 304 Not Modified
``focuscrawl_bytes_saved_total{loop}``                      body bytes a 304 saved (the last full body's size)
``focuscrawl_unchanged_bodies_total{loop}``                 full bodies identical to the last (validators ignored)
``focuscrawl_frontier_size``                                items waiting to be fetched (pages, sources)
``focuscrawl_candidates``                                   candidates known to a chooser / crawler
``focuscrawl_pushed_scores_applied_total{topic}``           scores from a compacted feedback topic applied
``focuscrawl_push_apply_lag_seconds{topic}``               a pushed record's Kafka timestamp to its application (histogram)
``focuscrawl_extracted_users_total{method}``                users judged after extraction (seed 000)
``focuscrawl_relevant_users_total{method}``                 of those, judged relevant
``focuscrawl_harvest_ratio{method}``                        relevant / extracted (seed 000, section V)
``focuscrawl_pages_scored_total{loop}``                     fetched pages scored by the page relevance model
``focuscrawl_relevant_pages_total{loop}``                   of those, at or above the focus's threshold (harvest)
``focuscrawl_process_info{process}``                        which process this is
==========================================================  ===============================================
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info

from focuscrawl.fetch.observer import FetchObserver

PREFIX = "focuscrawl_"


class Metrics:
    """The named metrics of one process, on a registry of its own (no global state shared by tests)."""

    def __init__(self, process: str) -> None:
        self.process = process
        r = self.registry = CollectorRegistry()
        Info("focuscrawl_process", "which focuscrawl process serves these metrics", registry=r).info(
            {"process": process})
        self.fetches = Counter("focuscrawl_fetches", "HTTP responses by host and status code",
                               ["host", "status"], registry=r)
        self.fetch_failures = Counter("focuscrawl_fetch_failures", "requests that got no response",
                                      ["host", "kind"], registry=r)
        self.fetch_seconds = Histogram("focuscrawl_fetch_seconds", "seconds from request to response headers",
                                       buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30), registry=r)
        self.http_429 = Counter("focuscrawl_http_429", "answers 429 Too Many Requests", ["host"], registry=r)
        self.retry_after = Counter("focuscrawl_retry_after_seconds", "seconds waited because a server's "
                                   "Retry-After asked for it", ["host"], registry=r)
        self.retries = Counter("focuscrawl_fetch_retries", "fetch retries (429/503, timeouts, broken connections)",
                               ["host"], registry=r)
        self.robots_denied = Counter("focuscrawl_robots_denied", "URLs robots.txt disallowed for our user agent",
                                     ["host"], registry=r)
        self.consumed = Counter("focuscrawl_records_consumed", "Kafka records read", ["topic"], registry=r)
        self.produced = Counter("focuscrawl_records_produced", "Kafka records sent", ["topic"], registry=r)
        self.record_errors = Counter("focuscrawl_record_errors", "records whose handling failed and were skipped",
                                     ["topic"], registry=r)
        self.consumer_lag = Gauge("focuscrawl_consumer_lag", "records behind the partition's end offset",
                                  ["group", "topic", "partition"], registry=r)
        self.rows_written = Counter("focuscrawl_rows_written", "rows appended to a Delta table", ["table"], registry=r)
        self.dead_letters = Counter("focuscrawl_dead_letters", "records dead-lettered instead of written",
                                    ["table"], registry=r)
        self.duplicates = Counter("focuscrawl_duplicates_dropped", "rows whose unique key the table already held",
                                  ["table"], registry=r)
        self.near_duplicates = Counter("focuscrawl_near_duplicates_skipped", "new pages fetched and skipped as a "
                                       "near-duplicate of a page fetched before (focuscrawl.core.dedup)", ["loop"], registry=r)
        self.not_modified = Counter("focuscrawl_not_modified", "conditional revisits answered 304 Not Modified",
                                    ["loop"], registry=r)
        self.bytes_saved = Counter("focuscrawl_bytes_saved", "body bytes 304 answers saved (the last full body's "
                                   "size)", ["loop"], registry=r)
        self.unchanged_bodies = Counter("focuscrawl_unchanged_bodies", "full bodies identical to the page's last "
                                        "(a server that ignored the validators)", ["loop"], registry=r)
        self.scope_refused = Counter("focuscrawl_scope_refused", "URLs refused before they joined a frontier, by the "
                                     "scope or trap rule that refused them (focuscrawl.fetch.scope)", ["reason"], registry=r)
        self.frontier = Gauge("focuscrawl_frontier_size", "items waiting to be fetched", registry=r)
        self.candidates = Gauge("focuscrawl_candidates", "candidates known to the process", registry=r)
        self.pushes = Counter("focuscrawl_pushed_scores_applied", "scores from a feedback topic applied",
                              ["topic"], registry=r)
        self.push_apply_lag = Histogram("focuscrawl_push_apply_lag_seconds", "seconds from a pushed record's Kafka "
                                        "timestamp to the process applying it", ["topic"], registry=r,
                                        buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600))
        self.extracted = Counter("focuscrawl_extracted_users", "users judged after extraction", ["method"], registry=r)
        self.relevant = Counter("focuscrawl_relevant_users", "extracted users judged relevant", ["method"], registry=r)
        self.harvest = Gauge("focuscrawl_harvest_ratio", "relevant / extracted users (seed 000, section V)",
                             ["method"], registry=r)
        self.pages_scored = Counter("focuscrawl_pages_scored", "fetched pages scored by the page relevance model",
                                    ["loop"], registry=r)
        self.relevant_pages = Counter("focuscrawl_relevant_pages", "scored pages at or above the page focus's "
                                      "threshold: the loop's harvest", ["loop"], registry=r)
        self._verdicts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.fetch_observer = FetchMetrics(self)

    def revisit_outcome(self, loop: str):
        """The ``on_outcome(outcome, bytes_saved)`` of a :class:`focuscrawl.fetch.conditional.Revalidator`
        counting into these metrics for ``loop``."""
        from focuscrawl.fetch.conditional import NOT_MODIFIED, SAME_BODY

        def count(outcome: str, saved: int) -> None:
            if outcome == NOT_MODIFIED:
                self.not_modified.labels(loop).inc()
                self.bytes_saved.labels(loop).inc(saved)
            elif outcome == SAME_BODY:
                self.unchanged_bodies.labels(loop).inc()

        return count

    def page_scored(self, loop: str):
        """The ``on_scored(relevant)`` of a loop's page scoring, counting its harvest into these metrics."""

        def count(relevant: bool) -> None:
            self.pages_scored.labels(loop).inc()
            if relevant:
                self.relevant_pages.labels(loop).inc()

        return count

    def verdict(self, method: str, relevant: bool) -> None:
        """One extracted user judged: counts and the harvest ratio of ``method`` (seed 000, section V)."""
        counts = self._verdicts[method]
        counts[0] += 1
        counts[1] += bool(relevant)
        self.extracted.labels(method).inc()
        if relevant:
            self.relevant.labels(method).inc()
        self.harvest.labels(method).set(counts[1] / counts[0])

    def snapshot(self) -> dict[str, float]:
        """Every sample summed over its labels, by sample name without the prefix (``fetches_total``: 12.0),
        plus the consumer lag per ``topic/partition``: the figures a status file carries. A counter or
        gauge not touched yet shows 0."""
        return _summary(self.registry.collect())


def _summary(families) -> dict[str, float]:
    families = list(families)
    out = summarize(_samples(families))
    for family in families:
        short = family.name[len(PREFIX):]
        if not family.name.startswith(PREFIX):
            continue
        if family.type == "counter":
            out.setdefault(f"{short}_total", 0.0)
        elif family.type == "gauge" and short != "harvest_ratio":
            out.setdefault(short, 0.0)
    return out


def _samples(families) -> list[tuple[str, dict[str, str], float]]:
    out = []
    for family in families:
        for s in family.samples:
            if s.name.endswith("_created") or family.type == "info":
                continue
            out.append((s.name, dict(s.labels), float(s.value)))
    return out


def summarize(samples: list[tuple[str, dict[str, str], float]]) -> dict[str, float]:
    """Totals per sample name (prefix dropped; histogram buckets left out) and ``consumer_lag[topic/partition]``."""
    out: dict[str, float] = defaultdict(float)
    for name, labels, value in samples:
        if not name.startswith(PREFIX) or name.endswith("_bucket"):
            continue
        short = name[len(PREFIX):]
        if short == "consumer_lag":
            out[f"consumer_lag[{labels.get('topic')}/{labels.get('partition')}]"] = value
        if short == "harvest_ratio":
            out[f"harvest_ratio[{labels.get('method')}]"] = value
            continue
        out[short] += value
    return dict(out)


def scrape(url: str, timeout: float = 5.0) -> dict[str, float]:
    """Read a process's ``/metrics`` (Prometheus text) and :func:`summarize` it; what ``focuscrawl status`` shows."""
    import requests
    from prometheus_client.parser import text_string_to_metric_families

    response = requests.get(url, timeout=timeout)
    response.raise_for_status()
    return _summary(text_string_to_metric_families(response.text))


class FetchMetrics(FetchObserver):
    """The fetch layer's observer (:mod:`focuscrawl.fetch.observer`) counting into :class:`Metrics`."""

    def __init__(self, metrics: Metrics) -> None:
        self.m = metrics

    def response(self, host: str, status: int, seconds: float) -> None:
        self.m.fetches.labels(host, str(status)).inc()
        self.m.fetch_seconds.observe(seconds)
        if status == 429:
            self.m.http_429.labels(host).inc()

    def failure(self, host: str, kind: str) -> None:
        self.m.fetch_failures.labels(host, kind).inc()

    def retry(self, host: str, wait: float, retry_after: float | None) -> None:
        self.m.retries.labels(host).inc()
        if retry_after is not None:
            self.m.retry_after.labels(host).inc(wait)

    def robots_denied(self, host: str) -> None:
        self.m.robots_denied.labels(host).inc()


def file_sd_targets(processes: Iterable[tuple[str, str]]) -> list[dict]:
    """Prometheus ``file_sd`` groups for ``(process name, "host:port")`` pairs, labelled ``process``."""
    return [{"targets": [address], "labels": {"process": name}} for name, address in processes]


def write_targets(path: Path, processes: Iterable[tuple[str, str]]) -> None:
    """Replace the file_sd targets file atomically (Prometheus re-reads it; never half a document).
    The supervisor writes ``$FOCUSCRAWL_VAR/platform/prometheus-targets.json`` this way."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(file_sd_targets(processes), indent=1))
    os.replace(tmp, path)


def prometheus_config(targets_file: Path, scrape_interval: str = "5s") -> str:
    """A Prometheus configuration scraping every process listed in ``targets_file`` (JSON is YAML)."""
    return json.dumps({
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
        "scrape_configs": [{
            "job_name": "focuscrawl",
            "file_sd_configs": [{"files": [str(targets_file)], "refresh_interval": scrape_interval}],
        }],
    }, indent=1)
