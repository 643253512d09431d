"""A project -> the processes its loops need, as :class:`~focuscrawl.platform.supervisor.ProcessSpec`.

Every enabled loop of the project file brings its stream processes (the
scripts under ``streaming/``: thin wiring, each reading its own arguments):

- ``fue`` (seed 000, section III): the Community Explorer (listings -> posts topic), the User
  Updater/Chooser of the loop's method, the User Extractor and the reference User Classifier;
- ``sources`` (seed 001): the source crawler;
- ``revisits`` (seed 002): the page revisitor (it writes ``page_snapshots`` itself);
- ``graph`` (seed 003): the graph sampler;
- and each loop's landings into Delta (:data:`LOOP_SINKS`, one ``streaming/consumer.py --sink``
  each: the FUE posts and verdicts, the source recrawls and clicks, the graph sample; the clicks from the
  project's ``[loops.sources] clicks_topic`` when it names one), and, when a
  crawling loop (:data:`CRAWLING_LOOPS`) runs, one landing of the dead-letter topic (parser
  rejections, scope and trap refusals) into the ``dead_letter`` table, and always one landing of the
  steering commands (``focuscrawl pause``, ``budget``, ``seeds add``: :mod:`focuscrawl.control`) into
  ``control_audit``;

plus, whenever Airflow runs, the asset-event process that tells Airflow a lake table changed (at
most as often as the project's ``[asset_events.min_interval]`` says per DAG).
With ``[warc] enabled`` (the default) every process that fetches archives its fetches as WARC under
``<lake>/warc`` (``--warc``, :mod:`focuscrawl.fetch.warc`), rotated as the project's ``[warc]`` says.

Tiers order start and stop: producers that fetch (tier 1) start first and stop first, the
stages (tier 2) next, the consumers into Delta (tier 3) last, so they land what is in flight.
Each process gets the next metrics port from ``FOCUSCRAWL_METRICS_PORT`` (18200 + offset) and
the status file ``$FOCUSCRAWL_VAR/status/<name>.json``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from focuscrawl.platform.supervisor import ProcessSpec, RestartPolicy

FETCHERS, STAGES, SINKS_TIER = 1, 2, 3
# A consumer into Delta stopped by ``down`` lands what its topic holds first (``StreamConsumer._drain``): a
# backlog of a few thousand records is a few Delta commits, slow on a busy machine, so it gets longer than
# the other processes' 20 s, and its grace leaves room for the last commit after the drain.
SINK_DRAIN_SECONDS = 45.0
SINK_STOP_GRACE = SINK_DRAIN_SECONDS + 15.0
# Loops whose crawlers send refusals (parser rejections, scope and trap refusals) to the dead-letter topic:
# with any of them on, one ``dead_letter`` consumer lands them in the ``dead_letter`` table.
CRAWLING_LOOPS = ("sources", "revisits")

# The landings (``focuscrawl.stream.sinks.SINKS``, run by ``streaming/consumer.py --sink NAME``) each loop needs.
LOOP_SINKS = {
    "fue": ("fue_posts", "fue_extractions"),
    "sources": ("source_recrawls", "page_clicks", "source_pages"),
    "revisits": (),           # the revisitor appends page_snapshots itself
    "graph": ("graph_sample",),
}


class PlanError(ValueError):
    """The project asks for something no process can do yet; the message names the key and the fix."""


@dataclass(frozen=True)
class Models:
    """Where the trained classifiers are (``focuscrawl.platform.train``)."""

    reference: Path
    candidate: Path


@dataclass
class _Draft:
    name: str
    kind: str
    loop: str | None
    tier: int
    script: str
    args: list[str]
    pace: float | None = None  # a fetching process's own pace (FetchSpec.pace); None: it fetches nothing
    restart: RestartPolicy = field(default_factory=RestartPolicy)
    meta: dict = field(default_factory=dict)
    stop_grace: float = ProcessSpec.stop_grace  # the supervisor's default, unless the process needs longer


def _fue(project, cfg, models: Models | None) -> list[_Draft]:
    loop, site = project.loops.fue, project.site(project.loops.fue.site)
    if models is None:
        raise PlanError("loops.fue: the classifiers are not trained; run `focuscrawl train` first")
    url, method = site.url(cfg), loop.method
    chooser_args = ["--method", method]
    kind = loop.ranking
    if kind.needs_classifier:  # `--model`: its store name, whose new champion the process follows live
        role = "reference" if kind.scorer == "reference" else "candidate"
        chooser_args += ["--classifier", str(getattr(models, role)), "--model", f"{project.name}/{role}"]
    slug = method.lower()
    return [
        _Draft("fue-explorer", "fue.explorer", "fue", FETCHERS, "streaming/fue/explorer.py",
               ["--base-url", url, "--listing-path", loop.listing_path, "--community-chooser", loop.community_chooser,
                "--interval", str(loop.visit_interval), "--front-page-interval", str(loop.front_page_interval)],
               pace=0.0),
        _Draft(f"fue-chooser-{slug}", "fue.chooser", "fue", STAGES, "streaming/fue/chooser.py", chooser_args),
        _Draft(f"fue-extractor-{slug}", "fue.extractor", "fue", FETCHERS, "streaming/fue/extractor.py",
               ["--method", method, "--base-url", url, "--users-per-hour", f"{loop.users_per_hour:g}"], pace=0.0),
        _Draft("fue-classifier", "fue.classifier", "fue", STAGES, "streaming/fue/classifier.py",
               ["--reference", str(models.reference), "--model", f"{project.name}/reference", "--run-id", project.name]),
    ]


def _pages(loop, site, cfg, seed_flag: str) -> list[str]:
    """What a crawling loop (sources, revisits) says of its pages, as its process's arguments: each seed
    after ``seed_flag`` (the site's root when it lists none), and whether near-duplicates are skipped."""
    seeds = list(loop.seeds) or [site.url(cfg) + "/"]
    return [arg for seed in seeds for arg in (seed_flag, seed)] + (
        ["--skip-near-duplicates"] if loop.skip_near_duplicates else [])


def _relevance(project, cfg) -> list[str]:
    """A fetching process's page relevance arguments: the project's page model store (every fetched page is
    scored by its champion), model, threshold and languages; none without ``[profile.pages]``."""
    focus = project.profile.pages
    if focus is None:
        return []
    from focuscrawl.relevance.train import store_for

    args = ["--relevance-store", str(store_for(project, cfg).root), "--relevance-model", focus.model,
            "--relevance-threshold", f"{focus.threshold:g}"]
    return args + (["--languages", ",".join(project.profile.languages)] if project.profile.languages else [])


def _sources(project, cfg, models=None) -> list[_Draft]:
    loop, site = project.loops.sources, project.site(project.loops.sources.site)
    # the budget paces the crawler's slots (fetches per second in all), not one host: no pace of its own
    args = ["crawl", "--budget", f"{loop.fetches_per_second:g}", *_pages(loop, site, cfg, "--site"),
            *_relevance(project, cfg), "--feedback", loop.feedback,
            *(["--clicks-url", loop.clicks_url] if loop.clicks_url else []),
            # the clicks land from the project's own topic (_landings), so the crawler reads no click log
            *(["--no-click-log"] if loop.clicks_topic else [])]
    return [_Draft("source-crawler", "sources.crawler", "sources", FETCHERS, "streaming/source_crawler.py", args,
                   pace=0.0)]


def _revisits(project, cfg, models=None) -> list[_Draft]:
    loop, site = project.loops.revisits, project.site(project.loops.revisits.site)
    if not loop.seeds and not site.world:
        raise PlanError(f"loops.revisits.seeds: empty; list pages of {site.name} to revisit, "
                        "e.g. seeds = [\"https://example.org/some/page\"]")
    # repr, not :g: six digits made world.toml's 30 minutes 1799.997 s, so the revisitor's periods drifted
    # off the project's (period 944446 began 0.6 of a period before the 944446th half hour)
    args = ["--interval-days", repr(loop.revisit_seconds / 86400), *_pages(loop, site, cfg, "--seed")]
    if loop.discover:
        args += ["--discover", loop.discover]
    if loop.max_pages:
        args += ["--max-pages", str(loop.max_pages)]
    args += _relevance(project, cfg)
    # fetches_per_second bounds the requests to each host (the revisitor's pace is per host).
    return [_Draft("revisitor", "revisits.revisitor", "revisits", FETCHERS, "streaming/revisitor.py", args,
                   pace=1.0 / loop.fetches_per_second)]


def _graph(project, cfg, models=None) -> list[_Draft]:
    loop, site = project.loops.graph, project.site(project.loops.graph.site)
    args = ["--base-url", site.url(cfg), "--sampler", loop.sampler, "--query-budget", str(loop.query_budget),
            *_relevance(project, cfg)]
    # The loop's budget is queries per second: the sampler's own pace.
    return [_Draft("graph-sampler", "graph.sampler", "graph", FETCHERS, "streaming/graph_sampler.py", args,
                   pace=1.0 / loop.fetches_per_second)]


def _landings(project, loop: str) -> dict[str, str | None]:
    """The landings ``loop`` needs in ``project``, each with the topic it reads when not its sink's own.
    ``page_clicks`` runs only where clicks reach it (``feedback = "clicks"``; with ``"relevance"`` nothing writes
    it, and its consumer would sit idle with an empty table), reading ``[loops.sources] clicks_topic`` when the
    project's own analytics writes the clicks there."""
    landings = dict.fromkeys(LOOP_SINKS[loop])
    sources = project.loops.sources
    if loop == "sources" and sources.feedback != "clicks":
        del landings["page_clicks"]
    elif loop == "sources" and sources.clicks_topic:
        landings["page_clicks"] = sources.clicks_topic
    return landings


def _sinks(loop: str | None, landings: dict[str, str | None]) -> list[_Draft]:
    """One consumer per landing (name: the topic it reads instead of its sink's, or None) that the sink registry
    holds (a table whose sink is not registered yet, such as ``graph_sample`` before the sampler lands, is left
    out)."""
    from focuscrawl.stream.sinks import SINKS, sink

    drafts = []
    for name, topic in landings.items():
        if name not in SINKS:
            continue
        spec, group = sink(name), f"{name}-to-delta"
        drafts.append(_Draft(f"consumer-{name}", "consumer", loop, SINKS_TIER, "streaming/consumer.py",
                             ["--sink", name, "--group", group, *(["--topic", topic] if topic else []),
                              "--drain-seconds", f"{SINK_DRAIN_SECONDS:g}"],
                             meta={"sink": name, "topic": topic or spec.topic, "group": group,
                                   "table": spec.table.name}, stop_grace=SINK_STOP_GRACE))
    return drafts


BUILDERS = {"fue": _fue, "sources": _sources, "revisits": _revisits, "graph": _graph}


def plan(project, cfg, *, models: Models | None = None, airflow: bool = True) -> list[ProcessSpec]:
    """The process specs of every enabled loop of ``project`` (see the module docstring). Each fetching
    process's site and pace are resolved here once, into ``<var>/plan/<name>.fetch.json``
    (:class:`~focuscrawl.stream.spec.FetchSpec`), its one ``--fetch-spec`` argument."""
    from focuscrawl.fetch.warc import warc_folder
    from focuscrawl.services.process import settings_env
    from focuscrawl.stream.spec import FetchSpec

    home = Path(cfg.home)
    drafts: list[_Draft] = []
    for loop, _settings, _site in project.enabled_loops():
        drafts += BUILDERS[loop](project, cfg, models)
        drafts += _sinks(loop, _landings(project, loop))
    if any(loop in CRAWLING_LOOPS for loop, _, _ in project.enabled_loops()):
        drafts += _sinks(None, {"dead_letter": None})
    drafts += _sinks(None, {"control_audit": None})  # the steering commands (focuscrawl.control), whatever runs
    if airflow:
        # each DAG the project paces ([asset_events.min_interval]); the others get the poster's default
        gaps = [a for dag_id, s in sorted(project.asset_events.seconds().items())
                for a in ("--dag-min-interval", f"{dag_id}={s:g}")]
        drafts.append(_Draft("asset-events", "airflow.asset_events", None, STAGES, "streaming/asset_events.py",
                             ["--interval", "5", *gaps]))
    env = {**settings_env(cfg), "PYTHONUNBUFFERED": "1"}
    specs, port = [], cfg.metrics_port
    for d in drafts:
        # every stream script is on the scaffold (focuscrawl.stream.process.add_common_args); the contract
        # test tests/platform/test_plan_contract.py parses each planned command with its script's own parser
        status_file = Path(cfg.var_dir) / "status" / f"{d.name}.json"
        args = [*d.args, "--status-file", str(status_file), "--metrics-port", str(port)]
        if d.pace is not None:
            site = project.site(getattr(project.loops, d.loop).site)
            spec = FetchSpec(site=site, pace=d.pace).write(Path(cfg.var_dir) / "plan" / f"{d.name}.fetch.json")
            args += ["--fetch-spec", str(spec)]
            if project.warc.enabled:
                args += ["--warc", str(warc_folder(cfg)), "--warc-max-mb", f"{project.warc.max_file_mb:g}",
                         "--warc-max-age", f"{project.warc.max_file_seconds:g}"]
        specs.append(ProcessSpec(
            name=d.name, kind=d.kind, command=(sys.executable, str(home / d.script), *args), env=env,
            cwd=str(home), restart=d.restart, tier=d.tier, loop=d.loop, metrics_port=port,
            status_file=str(status_file), stop_grace=d.stop_grace, meta=d.meta))
        port += 1
    return specs


__all__ = ["CRAWLING_LOOPS", "LOOP_SINKS", "Models", "PlanError", "plan"]
