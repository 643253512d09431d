"""`focuscrawl up projects/world.toml` on the real engines: all four loops close through Airflow (issue 16).

One platform (tests/platform/conftest.py ``live_platform``: world.toml with short schedules and
budgets) for every assertion, in this order:

1. every process the project declares is up under the supervisor;
2. fue_pseudo_training, outlinks_features, outlinks_train, source_schedule and graph_estimation each
   succeed at least once, started by their schedule or by an Asset event (the stream side's tables
   announced by ``streaming/asset_events.py``), never by a trigger: the run type says which; a
   run in which a task skipped did nothing and does not count (``focuscrawl.cli.demo.run_state``:
   ``outlinks_train`` skips before two labelled periods);
3. each loop's running process follows its push without a restart: the FUE chooser re-ranks by
   the pushed scores, the source crawler takes up the pushed recrawl intervals, the revisitor
   revisits the best-scored page next; the order in their status changed after the push, and the
   model registry (MLflow) records every family's models (outlinks, pages, FUE, sources), champion for champion,
   the FUE classifiers with a second version refitted by ``focuscrawl examples add`` and taken up live;
4. Delta holds rows of every loop, each post once;
5. on ``target = "sites"`` with the world's click log switched off, the sources loop's schedule is fitted
   from the fetched pages' relevance (the stated freshness half-life is every source's decay) and pushed,
   and no process of the platform made a request to the world's evaluation port; ``focuscrawl models promote``
   rolls the source estimates back to an older fit, and the next run's plan, made from it, is followed (that
   run alone is triggered, after the loops' test);
6. every service (Kafka, the world, the warm Spark, MLflow, each Airflow component) SIGKILLed at once comes
   back by itself (the platform's watch);
7. one process of each kind SIGKILLed comes back, its landing loses and doubles nothing, and each loop a
   process follows closes again after the kills;
8. after ``down``, every landed table holds every committed record of its topic, once, the records that
   went through the restarted Kafka too.

This file replaced the per-loop end-to-end tests (thin loop, FUE pseudo-training, sources, outlinks,
graph DAG run), which each started their own crawl and triggered their DAG by hand; the assertions
of theirs that still apply are here (marked "was: ...").
"""

from __future__ import annotations

import math
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from deltalake import DeltaTable

from focuscrawl.cli.demo import FOLLOWERS, dag_runs, succeeded_by_itself
from focuscrawl.platform.supervisor import read_state
from focuscrawl.services.process import wait_until
from focuscrawl.core.status_file import read_status
from closings import closed_after
from landing_checks import landed_exactly_once, landing_snapshot
from stream_positions import end_offsets

# In `make test` (issue 16: CI <= 35 minutes with it). 2026-12-01 alone at load 12-17: 7 passed in
# 1088 s, the loop DAGs' test 589 s of it, once outlinks_features ran its four Spark jobs in one driver
# (spark_jobs/chain.py; before: 873 s, and ~23 min inside a CI run). `make test-platform` runs this file alone.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

LOOP_DAGS = ("fue_pseudo_training", "source_schedule", "outlinks_features", "outlinks_train", "graph_estimation")
# From `up` until every loop DAG has succeeded once by itself: the revisits need ~2 minutes of
# history (7 periods of 15 s, tests/platform/conftest.py; focuscrawl.outlinks.training.periods_to_train) before seed 002's first model can train, then
# two DAGs of Spark jobs on two shared cores.
LOOPS_DEADLINE = 1500.0


def _status(cfg, prefix: str) -> dict:
    paths = sorted((Path(cfg.var_dir) / "status").glob(f"{prefix}*.json"))
    assert paths, f"no status file of a {prefix}* process"
    return read_status(paths[0])


def _process(live, prefix: str) -> dict:
    procs = [p for p in read_state(live.cfg.var_dir)["processes"] if p["name"].startswith(prefix)]
    assert procs, f"no {prefix}* process in the supervisor's state"
    return procs[0]


def _evidence(cfg, *names: str, lines: int = 12) -> str:
    """What the named processes said last (their status counts and log tail), for a failure message:
    the CI log is all that is left of a failed run."""
    said = []
    for name in names:
        status = Path(cfg.var_dir) / "status" / f"{name}.json"
        counts = {k: v for k, v in read_status(status).items() if isinstance(v, (int, float, str))} \
            if status.exists() else "no status file"
        log = Path(cfg.var_dir) / "logs" / "platform" / f"{name}.log"
        tail = log.read_text(errors="replace").splitlines()[-lines:] if log.exists() else ["no log"]
        said.append(f"--- {name}: {counts}\n" + "\n".join(tail))
    return "\n".join(said)


def _writers(live, table: str) -> list[str]:
    """The processes that write ``table``: its consumer and the loop's crawling processes."""
    specs = live.platform.specs
    sinks = [s for s in specs if s.kind == "consumer" and s.meta.get("sink") == table]
    return [s.name for s in sinks] + [s.name for s in specs if s.kind != "consumer" and sinks
                                      and s.loop == sinks[0].loop]


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_every_declared_process_is_up(live_platform):
    names = {spec.name for spec in live_platform.platform.specs}
    for prefix in ("fue-explorer", "fue-chooser-hcp-0.9-0.1", "fue-extractor-", "fue-classifier", "source-crawler",
                   "revisitor", "graph-sampler", "asset-events", "consumer-fue_posts", "consumer-fue_extractions",
                   "consumer-source_recrawls", "consumer-source_pages", "consumer-graph_sample"):
        assert any(n.startswith(prefix) for n in names), f"{prefix}* not declared: {sorted(names)}"

    def all_up():
        procs = {p["name"]: p for p in read_state(live_platform.cfg.var_dir).get("processes", [])}
        return set(procs) == names and all(p["state"] == "up" for p in procs.values()) and procs

    procs = wait_until(all_up, 240, "not every declared process came up", interval=2.0)
    assert all(p["pid"] for p in procs.values())


def test_every_loop_dag_succeeds_by_its_schedule_or_asset(live_platform):
    client, deadline = live_platform.airflow, live_platform.started_at + LOOPS_DEADLINE
    tallies: dict[str, dict[str, int]] = {}
    known: dict = {}  # run_state's answers: a run that skipped a task (outlinks_train before two labelled periods) did nothing

    while time.time() < deadline:
        try:
            tallies = dag_runs(client, LOOP_DAGS, known)
        except Exception:  # one slow API answer on a loaded machine
            time.sleep(10)
            continue
        if all(succeeded_by_itself(t) for t in tallies.values()):
            break
        time.sleep(15)
    for dag in LOOP_DAGS:
        tally = tallies.get(dag, {})
        assert succeeded_by_itself(tally), f"{dag} never succeeded by itself in {LOOPS_DEADLINE:.0f}s: {tallies}"
        assert not [k for k in tally if k.startswith("manual:")], f"{dag} was triggered by hand: {tallies}"
    # The data-aware DAGs ran on Asset events: the lake's (posted by asset-events) or outlinks_features'.
    for dag in ("source_schedule", "outlinks_features", "outlinks_train", "graph_estimation"):
        assert tallies[dag].get("asset_triggered:success"), tallies
    assert read_status(Path(live_platform.cfg.var_dir) / "status" / "asset-events.json")["events_posted"] > 0
    # was: FUE e2e: the scheduler plans the next run a period (the project's 2m) after the last one
    # at the earliest (later when a run outlasted its period: no catch-up)
    last = max((r for r in client.dag_runs("fue_pseudo_training") if r["run_type"] == "scheduled"),
               key=lambda r: r["run_after"])
    next_after = wait_until(lambda: client.dag("fue_pseudo_training")["next_dagrun_run_after"], 180, "no next FUE run planned")
    assert _when(next_after) - _when(last["run_after"]) >= timedelta(minutes=2)



def test_fue_chooser_follows_the_pushed_scores(live_platform):
    cfg = live_platform.cfg
    from focuscrawl.fue.batch import CANDIDATE_SCORES_TABLE

    def follows():
        status = _status(cfg, "fue-chooser-")
        if not status.get("scores_applied") or not status.get("top"):
            return None
        scores = DeltaTable(CANDIDATE_SCORES_TABLE.path(cfg)).to_pandas(filters=[("method", "=", "HCP-0.9-0.1")])
        pushed = scores.set_index("user")["score"]
        # the head of the chooser's order carries the scores the DAG pushed (new arrivals aside)
        matched = [(u, s) for u, s in status["top"] if u in pushed.index and math.isclose(s, pushed[u], rel_tol=1e-9)]
        return matched and status

    after = wait_until(follows, 300, f"the chooser's top never carried pushed scores: {_status(cfg, 'fue-chooser-')}",
                       interval=3.0)
    assert [s for _, s in after["top"]] == sorted((s for _, s in after["top"]), reverse=True)
    assert live_platform.watch.changed("fue"), live_platform.watch.seen["fue"]
    assert _process(live_platform, "fue-chooser-")["restarts"] == 0, "the chooser was restarted"


def _crawler_follows_the_plan(cfg):
    """``(crawler status, the planned rows it follows)`` when the source crawler applies ``source_schedule`` as
    it is now; None while it does not (yet). A plan covers the sources whose recrawls or clicks had landed when
    source_schedule ran; a source first recrawled later is in no plan until the next run, which the test
    project paces at 3 minutes. Waiting for a plan that names every source was a wait on that next run
    (issue 35: it failed CI when the run fell late)."""
    from focuscrawl.ephemeral.tables import SOURCE_SCHEDULE

    status = _status(cfg, "source-crawler")
    if not status.get("schedules_applied"):
        return None
    plan = DeltaTable(SOURCE_SCHEDULE.path(cfg)).to_pandas().set_index("source_url")
    planned = [url for url in status["intervals"] if url in plan.index]
    if not planned:
        return None
    for url in planned:
        interval, want = status["intervals"][url], plan.loc[url, "recrawl_interval_s"]
        if (interval is None) != math.isnan(want) or (interval is not None and abs(interval - want) > 1e-6 * want):
            return None  # a newer plan is written and on its way, or half applied: look again
    return status, plan.loc[planned]


def test_source_crawler_follows_the_pushed_schedule(live_platform):
    cfg, project = live_platform.cfg, live_platform.project

    # The first push the crawler applies is what is asserted.
    status, plan = wait_until(lambda: _crawler_follows_the_plan(cfg), 300, f"the crawler did not take up the pushed "
                              f"schedule: {_status(cfg, 'source-crawler')}", interval=3.0)
    # was: sources e2e: the plan spends the project's budget, on the sources the crawler found; with the
    # DAG's default politeness (60 s between two fetches of a host) the few world hosts cap it below
    # (measured: 0.038 of 0.05), so the live check is "within the budget", not "all of it"
    spent = plan.recrawl_rate.sum() + plan.page_rate.sum()
    assert 0 < spent <= project.loops.sources.fetches_per_second * (1 + 1e-3), spent
    assert {"feed", "sitemap"} <= set(status["kinds"].values()), status["kinds"]
    assert status["errors"] == 0
    # was: sources e2e: the most valuable source is then recrawled on its new interval (plus a few queued
    # slots). The fastest is taken from what the crawler follows at each look, so a later push (the next
    # paced run) changes the source looked at, not the outcome.
    budget, pushed_at = project.loops.sources.fetches_per_second, status["recrawls"]

    def on_its_interval():
        s = _status(cfg, "source-crawler")
        planned = {url: i for url, i in s["intervals"].items() if url in plan.index and i is not None}
        if not planned:  # a later plan dropped them all: nothing to look at until one names a source
            return None
        fastest = min(planned, key=planned.get)
        return (s["recrawls"] > pushed_at + 20 and s["last_gaps"].get(fastest, math.inf) <= planned[fastest] + 3 / budget
                and (fastest, planned[fastest], s["last_gaps"][fastest]))

    wait_until(on_its_interval, 240, f"the fastest planned source not recrawled on its interval: "
                                     f"{_status(cfg, 'source-crawler')}", interval=3.0)
    assert live_platform.watch.changed("sources"), live_platform.watch.seen["sources"]
    assert _process(live_platform, "source-crawler")["restarts"] == 0, "the crawler was restarted"


def test_revisitor_follows_the_pushed_priorities(live_platform):
    cfg = live_platform.cfg
    from focuscrawl.outlinks.tables import MODELS, PAGE_PRIORITIES

    def follows():
        status = _status(cfg, "revisitor")
        if not status.get("priorities_applied") or not status.get("best_known"):
            return None
        prio = DeltaTable(PAGE_PRIORITIES.path(cfg)).to_pandas()
        latest = prio[prio.period == prio.period.max()]
        scores = dict(zip(latest.url, latest.score))
        # The next period's first pick is the best-scored page (within a period the best goes
        # first, so the queue's head is the best page only until then), and what is still due
        # this period is ordered by the pushed scores.
        if status["best_known"][1] != latest.score.max():
            return None
        if any(url in scores and score != scores[url] for url, score in status["order"]):
            return None
        return status, latest

    status, latest = wait_until(follows, 300, f"the revisitor did not follow the pushed priorities: "
                                              f"{_status(cfg, 'revisitor')}", interval=3.0)
    assert status["best_known"][0] in set(latest.loc[latest.score == latest.score.max(), "url"])
    assert [s for _, s in status["order"]] == sorted((s for _, s in status["order"]), reverse=True)
    # was: outlinks e2e: both models, for internal and external outlinks, registered with their data version
    models = DeltaTable(MODELS.path(cfg)).to_pandas()
    assert {"NNL-ET_LBLA/int", "NNL-ET_LBLA/ext", "NNL-NGB/int", "NNL-NGB/ext"} <= set(models["name"])
    assert live_platform.watch.changed("revisits"), live_platform.watch.seen["revisits"]
    assert _process(live_platform, "revisitor")["restarts"] == 0, "the revisitor was restarted"


def test_the_registry_records_every_familys_models_with_their_lineage(live_platform, tmp_path):
    """Issue 34: the ``model_registry`` DAG, started by the loops' pushes, logged every stored version of every
    family in MLflow (the outlink models, the page relevance model, the FUE reference and candidate classifiers and
    the pseudo-trained refresh, the source estimates), with held-out metrics (the loop's, or the registry's for the
    refreshes and the source estimates) and the Delta versions they read, and each ``champion`` alias names its
    store's champion, the version the loop uses. Then every model has two versions or more: the FUE classifiers' second
    from ``focuscrawl examples add`` on the running platform (their training set changed; seed 000 fits them once per
    set), which the chooser and the classifier process take without a restart, the page relevance model's from its
    daily refit asked for now."""
    from focuscrawl.cli import main as cli
    from focuscrawl.orchestration.model_families import FAMILIES, HELD_OUT_TAG, family
    from focuscrawl.services.model_registry import CHAMPION, ModelRegistry
    from focuscrawl.testing import TARGET_WORDS
    from tests.fue_stream.test_examples_add import users_file

    cfg = live_platform.cfg
    registry = ModelRegistry.from_settings(cfg)
    project, method = live_platform.project.name, "HCP-0.9-0.1"

    missing = ["not asked yet"]

    def recorded():  # asked again until a model_registry run has caught up with every store (more runs keep coming)
        listed, missing[:] = {}, []
        for v in registry.versions():
            listed.setdefault(v.name, []).append(v)
        stores = {f.registered_name(k): (f, k) for f in (family(cfg, n) for n in FAMILIES) for k in f.models()}
        if {n.split(".")[0] for n in stores} != {"outlinks", "pages", "fue", "sources"}:
            missing.append(f"a family has no store: {sorted(stores)}")
        for name, (fam, key) in stores.items():
            champion, aliased = fam.store.champion(key), [v.version for v in listed.get(name, []) if CHAMPION in v.aliases]
            if champion is None or not aliased:
                missing.append(f"{name}: store champion {champion and champion.version}, registry alias {aliased}")
            elif key.startswith("pseudo/") or fam.name == "sources":
                # refitted every run (2 and 3 minutes): the alias may trail the newest by a registry run
                if len(listed[name]) < 2 or not any(v.registry_version == aliased[0] and v.promoted
                                                    for v in fam.store.versions(key)):
                    missing.append(f"{name}: {len(listed[name])} recorded, alias v{aliased[0]} names no promoted fit")
            elif aliased != [champion.registry_version]:
                missing.append(f"{name}: alias {aliased}, store champion v{champion.version} recorded as "
                               f"{champion.registry_version}")
        # a source fit made before a second recrawl landed has nothing to be judged on: the registry measures the
        # first one that has (in the CI of c7aa77f the champions were all recorded while only that first fit was)
        if not any({"lam_mae", "lam_skill"} <= set(v.metrics) for v in listed.get("sources.estimates", [])):
            missing.append("no source estimate measured on held-out recrawls")
        return None if missing else listed

    # 420 s passed on 2 cores until a machine about twice as slow (20M Python loop steps 3.6 s idle; 2026-12-06) timed
    # out; there the registry fell further behind the loops each run (measuring every fit it lacked), now it cannot.
    # In the CI of f9dea0c there a registry run took 15-20 min (its tasks at niceness 10 in a starved suite) and
    # every family would have been recorded about 1,080 s after this test began (its logs), had the alias followed
    # recorded champions
    try:
        listed = wait_until(recorded, 1500, "the registry's versions and champions are not the stores'", interval=10.0)
    except TimeoutError as exc:
        runs = dag_runs(live_platform.airflow, ("model_registry", "source_schedule", "fue_pseudo_training"))
        raise AssertionError(f"{exc}: {'; '.join(missing)}; DAG runs {runs}") from None
    outlinks = [v for name, vs in listed.items() if name.startswith("outlinks.") for v in vs]
    assert {v.name for v in outlinks} == {f"outlinks.{m}.{s}" for m in ("NNL-ET_LBLA", "NNL-NGB") for s in ("int", "ext")}
    assert all(set(v.metrics) == {"spearman", "pk_area"} and "outlink_features" in v.delta_versions for v in outlinks)
    pages = [v for name, vs in listed.items() if name.startswith(f"pages.{project}.") for v in vs]
    assert pages and all("auc" in v.metrics for v in pages)  # held out; example pages, no table
    assert {f"fue.{project}.reference", f"fue.{project}.candidate"} <= set(listed)
    assert all(set(v.delta_versions) == {"fue_extractions", "reddit_posts"} for v in listed[f"fue.pseudo.{method}"])
    assert all(set(v.delta_versions) == {"source_recrawls", "source_pages"} for v in listed["sources.estimates"])
    # the loops that refit every run measure nothing held out themselves: the registry measures each version it
    # records, but of several new ones only the newest and the champion (the others say so)
    refreshes = listed[f"fue.pseudo.{method}"]
    assert all({"cv_auc", "cv_auc_reference", "cv_auc_gain"} <= set(v.metrics) or HELD_OUT_TAG in v.tags
               for v in refreshes), refreshes
    assert {"cv_auc", "cv_auc_reference", "cv_auc_gain"} <= set(refreshes[-1].metrics), refreshes[-1]

    # A second version of the models a run this short fits once: the page relevance model's daily refit, asked for
    # now (as an operator would after new example pages), and the FUE classifiers, refitted by `focuscrawl examples
    # add` while the crawl runs, followed live.
    relevance_run = live_platform.airflow.trigger("page_relevance")
    fue = family(cfg, "fue")
    first = {role: fue.store.champion(f"{project}/{role}").version for role in ("reference", "candidate")}
    added = users_file(tmp_path / "added.jsonl", "e2e-added-", TARGET_WORDS, users=3, seed=7)
    assert cli.main(["examples", "add", "users", str(added), "--label", "positive"]) == 0
    second = {role: fue.store.champion(f"{project}/{role}").version for role in ("reference", "candidate")}
    assert all(second[r] > first[r] for r in first), (first, second)
    followers = {"fue-chooser-": "candidate", "fue-classifier": "reference"}
    wait_until(lambda: all(_status(cfg, p).get("classifier", {}).get("version") == second[r]
                           for p, r in followers.items()), 60,
               f"the FUE processes did not take the refitted classifiers {second}: "
               f"{ {p: _status(cfg, p).get('classifier') for p in followers} }", interval=2.0)
    assert all(_process(live_platform, p)["restarts"] == 0 for p in followers), "an FUE process was restarted"

    assert live_platform.airflow.wait("page_relevance", relevance_run, timeout=360, interval=5.0) == "success"

    ours = (f"pages.{project}.", f"fue.{project}.", f"fue.pseudo.{method}", "outlinks.", "sources.")

    def second_recorded():  # the next model_registry run (a loop's push or the page models start one) records both
        named = {name: [] for name in listed if name.startswith(ours)}  # (the session's engines hold other tests' too)
        for v in registry.versions():
            named.get(v.name, []).append(v)
        return all(len(vs) >= 2 for vs in named.values()) and named

    try:
        listed = wait_until(second_recorded, 300, "the registry did not record a second version of every model",
                            interval=10.0)
    except TimeoutError as exc:  # which model, and whether its loop stored a second version or the registry lagged
        registered = {}
        for v in registry.versions():
            registered[v.name] = registered.get(v.name, 0) + 1
        stores = {f.registered_name(k): len(f.store.versions(k)) for f in (family(cfg, n) for n in FAMILIES)
                  for k in f.models()}
        short = {n: {"registered": registered.get(n, 0), "stored": stores.get(n)} for n in listed
                 if n.startswith(ours) and registered.get(n, 0) < 2}
        runs = dag_runs(live_platform.airflow, ("model_registry", "outlinks_train", "source_schedule",
                                                "fue_pseudo_training", "page_relevance"))
        raise AssertionError(f"{exc}: short of two {short}; DAG runs {runs}") from exc
    for role in ("reference", "candidate"):  # the refit read the added users: its lineage names the table's version
        newest = max(listed[f"fue.{project}.{role}"], key=lambda v: v.version)
        assert "fue_example_users" in newest.delta_versions and "cv_auc" in newest.metrics, newest
    assert all("auc" in v.metrics for name, vs in listed.items() if name.startswith(f"pages.{project}.") for v in vs)
    print("\nplatform e2e: registered versions " + ", ".join(f"{n} {len(vs)}" for n, vs in sorted(listed.items())))


def test_delta_holds_rows_of_every_loop(live_platform):
    cfg, before = live_platform.cfg, live_platform.baseline
    now = live_platform.lake_rows()
    grew = {t: now[t] - before[t] for t in now}
    # fue_candidate_scores and source_schedule are replaced per run: rows present is what counts
    for table in ("fue_candidate_scores", "source_schedule", "page_priorities", "graph_estimates"):
        assert now[table] > 0, f"{table} holds no rows after the loops closed; rows now: {now}"
    for table in ("reddit_posts", "fue_extractions", "source_recrawls", "source_pages", "page_snapshots", "graph_sample"):
        assert grew[table] > 0, (f"{table} got no rows from the live run: {grew}\n"
                                 + _evidence(cfg, *_writers(live_platform, table)))
    # target = "sites" and the click log answers 404: no click is read, the sources loop learns from relevance
    assert grew["page_clicks"] == 0, grew
    # was: thin-loop e2e: every landed post exactly once (the sink's unique key)
    names = DeltaTable(cfg.table_path("reddit_posts")).to_pyarrow_table(columns=["name"]).column("name").to_pylist()
    assert len(names) == len(set(names))
    verdicts = DeltaTable(cfg.table_path("fue_extractions")).to_pandas(columns=["run_id", "method"])
    assert set(verdicts.loc[verdicts.run_id == live_platform.project.name, "method"]) == {"HCP-0.9-0.1"}
    print(f"\nplatform e2e: up in {live_platform.up_seconds:.0f}s, loops closed after "
          f"{time.time() - live_platform.started_at:.0f}s; rows landed: {grew}")


def test_the_sources_schedule_is_fitted_from_relevance_without_a_click_log(live_platform):
    """Acceptance of the sources loop on real sites: the estimates behind the pushed schedule come from the
    relevance of the pages the crawler fetched, their decay is the stated freshness half-life (1 day)."""
    import numpy as np

    from tests.platform.conftest import EVALUATION_AGENT, evaluation

    cfg = live_platform.cfg
    spec = next(s for s in live_platform.platform.specs if s.name == "source-crawler")
    assert spec.command[spec.command.index("--feedback") + 1] == "relevance"
    crawler = _status(cfg, "source-crawler")
    assert crawler["schedules_applied"] >= 1, crawler
    pages = DeltaTable(cfg.table_path("source_pages")).to_pandas(columns=["source_url", "relevance"])
    scored = pages[pages.relevance.notna()]
    assert len(scored), "no fetched new page was scored for relevance"
    # A run that came before the first scored page landed fitted every source from the prior alone (n_pages 0);
    # the next one (paced at 3 minutes) fits from the pages (a run of the file, 2026-12-05, asked too soon).
    def fitted_from_pages():
        found = DeltaTable(cfg.table_path("source_estimates")).to_pandas()
        return (found,) if (found.n_pages > 0).any() else None

    (estimates,) = wait_until(fitted_from_pages, 300, "no source estimate was fitted from a fetched page", interval=5.0)
    assert np.allclose(estimates["mu"], np.log(2) / 86400.0), estimates[["source_url", "mu"]]
    fitted = estimates[estimates.n_pages > 0]
    scored = DeltaTable(cfg.table_path("source_pages")).to_pandas(columns=["source_url", "relevance"]).dropna()
    assert set(fitted.source_url) <= set(scored.source_url), fitted
    assert ((fitted.P >= 0) & (fitted.P <= 1)).all(), fitted[["source_url", "P"]]  # relevance, not clicks
    # No process of the platform asked the evaluation port anything; the fixture's own requests are marked.
    entries = evaluation(cfg, "GET", "/eval_access_log")["entries"]
    strangers = [e for e in entries if not e["client"].endswith("|" + EVALUATION_AGENT)]
    assert not strangers, f"requests to the evaluation port from the live path: {strangers[:5]}"


def test_a_rollback_of_the_source_estimates_is_planned_with_and_followed(live_platform):
    """Issue 34: ``focuscrawl models promote sources.estimates V`` rolls the sources loop back to an older fit; the
    next source_schedule run plans with that fit's estimates and fits none, and the crawler follows the schedule
    pushed from them. The test asks for that run at once (Airflow's trigger, as an operator would after a
    rollback) rather than wait up to the project's 3 minutes, and so for a second fit when only one is recorded;
    promoting the newest fit again ends the rollback."""
    import numpy as np

    from focuscrawl.cli import main as cli
    from focuscrawl.ephemeral.fitted import KEY
    from focuscrawl.ephemeral.tables import SOURCE_ESTIMATES
    from focuscrawl.orchestration.model_families import family

    cfg = live_platform.cfg
    store = family(cfg, "sources").store

    def table():
        return DeltaTable(SOURCE_ESTIMATES.path(cfg)).to_pandas().set_index("source_url").sort_index()

    def same(a, b) -> bool:
        return list(a.index) == list(b.index) and np.allclose(a["lam"], b["lam"])

    def an_older_fit():  # a recorded fit whose estimates are not those planned with now
        now = table()
        for v in store.versions(KEY)[:-1]:
            fit = store.load(KEY, v.version)[1].set_index("source_url").sort_index()
            if v.registry_version is not None and not same(fit, now):
                return v, fit
        return None

    if an_older_fit() is None:  # one fit so far: ask for the next one rather than wait for the project's pacing
        assert live_platform.airflow.wait("source_schedule", live_platform.airflow.trigger("source_schedule"),
                                          timeout=360, interval=5.0) == "success"
    older, wanted = wait_until(an_older_fit, 300, f"no recorded fit other than the planned one: {store.versions(KEY)}",
                               interval=5.0)
    assert cli.main(["models", "promote", "sources.estimates", str(older.registry_version)]) == 0
    newest_before = store.versions(KEY)[-1].version
    assert live_platform.airflow.wait("source_schedule", live_platform.airflow.trigger("source_schedule"),
                                      timeout=360, interval=5.0) == "success"
    wait_until(lambda: same(table(), wanted) and _crawler_follows_the_plan(cfg), 120,
               f"no plan from the rolled-back v{older.version} followed: {_status(cfg, 'source-crawler')}", interval=3.0)
    assert store.champion(KEY).version == older.version
    # a run that was fitting when the rollback came stores its fit, judged and not promoted
    assert not [v.version for v in store.versions(KEY) if v.version > newest_before and v.promoted]
    # the model_registry run under way, then the next (its record of the fue family measures a FUE refresh first:
    # 5 min on a starved CI)
    try:
        newest = wait_until(lambda: (v := store.versions(KEY)[-1]).registry_version and v, 900,
                            "the newest fit is not recorded", interval=5.0)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}: the newest fits {store.versions(KEY)[-3:]}") from None
    assert cli.main(["models", "promote", "sources.estimates", str(newest.registry_version)]) == 0
    assert store.rolled_back(KEY) is None


# -- supervisor: one process of each kind SIGKILLed (sup) ---------------------------------------


def _service_pids(var: Path, watched: list[str]) -> dict[str, int]:
    """The live pid of each process of the services the platform watches (its pid file in ``var/run``)."""
    from focuscrawl.services.process import pid_alive, recorded_pid

    pids = {}
    for path in (var / "run").glob("*.pid"):
        service = "airflow" if path.stem.startswith("airflow-") else path.stem
        pid = recorded_pid(path)
        if service in watched and pid is not None and pid_alive(pid):
            pids[path.stem] = pid
    return pids


def test_every_service_comes_back_by_itself_after_sigkill(live_platform):
    """Issue 33: one kill of each service, all at once, as an OOM killer could; the platform's watch
    (focuscrawl.platform.service_watch) starts each again, the world resuming its clock. What runs on them is
    checked by the tests after this one: the landings' exactly-once checks of the process round and ``down``'s,
    over the records of the restarted Kafka. (Before the rollback test, it made that test's run on the cold,
    restarted Airflow and warm Spark take 235 s in CI, and the suite over its 35 minutes.)"""
    import os
    import signal

    from focuscrawl.platform.service_watch import watched

    var, watch = Path(live_platform.cfg.var_dir), live_platform.platform.watch
    services = sorted(watch.services)
    assert {"kafka", "world", "spark-connect", "mlflow", "airflow"} <= set(services), services
    before = _service_pids(var, services)
    assert {"kafka", "world", "spark-connect", "mlflow", "airflow-scheduler", "airflow-dag-processor",
            "airflow-api-server", "airflow-triggerer"} <= set(before), before
    restarts = {name: watched(var).get(name, {}).get("restarts", 0) for name in services}
    killed_at = time.monotonic()
    for pid in before.values():
        os.kill(pid, signal.SIGKILL)

    def back():
        now, seen = _service_pids(var, services), watched(var)
        return (all(now.get(name) not in (None, before[name]) for name in before)
                and all(seen.get(name, {}).get("state") == "up" and seen[name].get("restarts", 0) > restarts[name]
                        for name in services) and now)

    try:
        now = wait_until(back, 300, "a killed service did not come back by itself", interval=2.0)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}: watch {watched(var)}, pids {_service_pids(var, services)} (killed {before})")
    def api_answers():
        import requests

        try:
            return live_platform.airflow.dags()
        except requests.RequestException:  # the API server restarted but still warming: one read timed out (CI, 12-06)
            return None

    wait_until(api_answers, 240, "Airflow's API did not answer again", interval=2.0)
    # the processes rode out Kafka's absence or were restarted by the supervisor: every one is up again
    names = {spec.name for spec in live_platform.platform.specs}
    wait_until(lambda: all(p["state"] == "up" for p in read_state(var).get("processes", []) if p["name"] in names),
               240, "not every process is up again after the services came back", interval=2.0)
    print(f"\nservices: {len(before)} processes of {len(services)} services SIGKILLed, all back by themselves in "
          f"{time.monotonic() - killed_at:.0f}s (new pids {now})")


def test_every_kind_of_process_comes_back_after_sigkill_and_the_lake_loses_nothing(live_platform):
    platform, cfg = live_platform.platform, live_platform.cfg
    sup = platform.supervisor
    victims: dict[str, str] = {}
    for spec in platform.specs:  # one process of each kind; every landing (a consumer each)
        victims.setdefault(spec.meta.get("sink") or spec.kind, spec.name)
    consumers = [s for s in platform.specs if s.kind == "consumer"]

    def started(spec) -> bool:
        from focuscrawl.platform.status import delta_positions

        return any(delta_positions(cfg, spec.meta["sink"], spec.meta["group"], spec.meta["topic"], range(8)).values())

    # The stream loops' landings have rows at once after the loops' tests (the graph sample, one round
    # every few minutes, may not: it is checked when it has landed).
    stream_landings = [s for s in consumers if s.loop in ("fue", "sources")]
    try:
        wait_until(lambda: all(started(s) for s in stream_landings), 300,
                   "a landing of the FUE or sources loop wrote nothing", interval=10.0)
    except TimeoutError as exc:
        idle = [s.name for s in stream_landings if not started(s)]
        raise AssertionError(f"{exc}: {idle}\n" + _evidence(cfg, *idle, *{p for s in stream_landings if s.name in idle
                                                                          for p in _writers(live_platform, s.meta["sink"])}))
    landed_before = {s.meta["sink"] for s in consumers if started(s)}
    old = {name: sup.wait_up(name, 240) for name in victims.values()}
    before = {s.meta["sink"]: landing_snapshot(cfg, s.meta) for s in consumers}
    restarts = {name: sup.state_of(name).restarts for name in victims.values()}
    killed_at = time.time()
    for name in victims.values():
        platform.kill(name)
    back = {name: sup.wait_up(name, 240, after_pid=old[name]) for name in victims.values()}
    for name in victims.values():
        s = sup.state_of(name)
        # (>=: a process the service round before this one had knocked over may have restarted once more meanwhile)
        assert back[name] != old[name] and s.restarts >= restarts[name] + 1 and s.last_exit == -9, (name, s)
    # Health is what the process exposes: each is serving metrics or writing its status again.
    for name in victims.values():
        if sup.procs[name].spec.metrics_port or sup.procs[name].spec.status_file:
            sup.wait_up(name, 240, healthy=True)
    # The landings resume from their tables' offsets: nothing lost, nothing twice. Checked once every
    # landing has landed past its position before the kill wherever its topic holds a record beyond it
    # (more than the one commit marker a transactional producer writes after its last landed record).
    ends = {s.meta["sink"]: end_offsets(cfg.kafka_bootstrap, s.meta["topic"])
            for s in consumers}

    behind: dict[str, list[int]] = {}

    def resumed():
        behind.clear()
        for s in consumers:
            sink, (old_positions, _) = s.meta["sink"], before[s.meta["sink"]]
            now = landing_snapshot(cfg, s.meta)[0]
            waiting = [p for p, end in ends[sink].items() if end > old_positions[p] + 1 and now[p] <= old_positions[p]]
            if waiting:
                behind[sink] = waiting
        return not behind or None

    try:
        wait_until(resumed, 240, "every landing resumed after its SIGKILL", interval=3.0)
    except TimeoutError as exc:
        lagging = [s.name for s in consumers if s.meta["sink"] in behind]
        raise AssertionError(f"{exc}; partitions not landed past their position before the kill: {behind}; "
                             f"positions then: { {k: before[k][0] for k in behind} }, ends then: "
                             f"{ {k: ends[k] for k in behind} }\n" + _evidence(cfg, *lagging, lines=60)) from None
    checked = {s.meta["sink"]: landed_exactly_once(cfg, s.meta, before[s.meta["sink"]]) for s in consumers}
    assert all(name in checked for name in landed_before) and sum(checked.values()) > 0, checked

    # Every loop a process follows closes again after the kills (make chaos's settle checks the graph loop too:
    # its sampler's rounds land every few minutes, longer than this round may take).
    closed: dict[str, str] = {}

    def every_loop_closed():
        for loop in FOLLOWERS:
            found = None if loop in closed else closed_after(live_platform.cfg, live_platform.airflow, loop, killed_at)
            if found:
                closed[loop] = f"{found[0] - killed_at:.0f}s after the kills, {found[1]}"
        return len(closed) == len(FOLLOWERS)

    # (900 s: in the CI trial of bbb3c51, on a slower 2-core machine with the unit tests beside, the FUE loop closed
    # again 178 s after the kills and the sources loop 251 s, and the revisits loop, which waits for new labelled
    # periods, not within 420 s; in the CIs before, all three within 190 s. In the CI of 93376ed this round took
    # 560 s: the outlinks_features run the service round's Airflow kill had cut short ran again on the restarted
    # warm Spark, whose own warm-up took 197 s beside it, for 7 minutes (its embedding step 241 s, 22 s before))
    try:
        wait_until(every_loop_closed, 900, "a loop did not close again after the kills", interval=5.0)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}; closed: {closed}") from None
    print(f"\nsupervisor: {len(victims)} kinds SIGKILLed and back; records checked per landing: {checked}; "
          f"loops closed again: {closed}")


def test_down_lands_every_record_that_reached_kafka(live_platform):
    """Last, as it stops the platform: ``down`` stops the fetchers first and the consumers last, which
    drain their topics to the end, so every landed table then holds every committed record of its topic,
    once (issue 33: after a clean ``down``, 904 posts, 1,707 clicks and 97 recrawls were in Kafka only).
    Every landing carries the lineage columns, so this is checked by offsets."""
    from focuscrawl.lake.delta_sink import LINEAGE_COLUMNS
    from focuscrawl.stream.sinks import sink

    platform, cfg = live_platform.platform, live_platform.cfg
    consumers = [s for s in platform.specs if s.kind == "consumer"]
    assert all({c.name for c in LINEAGE_COLUMNS} <= set(sink(s.meta["sink"]).table.column_names) for s in consumers)
    platform.stop()
    checked = {}
    for s in consumers:
        topic = s.meta["topic"]
        ends = end_offsets(cfg.kafka_bootstrap, topic)
        checked[s.meta["sink"]] = landed_exactly_once(cfg, s.meta, None, below=ends)
    assert sum(checked.values()) > 0, checked
    print(f"\ndown: every committed record landed once; records checked per landing: {checked}")
