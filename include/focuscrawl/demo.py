"""`make demo`: the main job on the embedded default, end to end, then where to look.

1. Start the services (Kafka in KRaft mode, Airflow 3, the world).
2. Run the listing crawler against the world and the Kafka->Delta consumer for a bounded time.
3. Trigger the ``thin_loop`` DAG (Spark job over Delta -> priorities -> compacted topic) and wait.
4. Show the running crawler's next pick following the pushed priorities.
5. Run the experiments of the four seeds with quick settings (``--experiments``) and write the HTML
   report ``$FOCUSCRAWL_VAR/demo/report.html`` (:mod:`focuscrawl.reports.demo`).

Everything it starts is stopped by ``focuscrawl services down`` (crawler and consumer included);
``--keep-running`` leaves the services up so the Airflow UI and Spark SQL can be explored.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from focuscrawl.config import Settings, settings
from focuscrawl.reports.demo import SECTION_NAMES, next_steps, parse_sections, run_sections, write_html
from focuscrawl.status import read_status



def _say(msg: str) -> None:
    print(f"[demo {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _stream_processes(cfg: Settings, pages: int):
    from focuscrawl.crawl.listing_crawler import POSTS_TOPIC
    from focuscrawl.services.process import ManagedProcess, settings_env

    run, logs = Path(cfg.var_dir) / "run", Path(cfg.var_dir) / "logs"
    status = Path(cfg.var_dir) / "crawler" / "listing.json"
    common = dict(run_dir=run, log_dir=logs, env=settings_env(cfg), cwd=Path(cfg.home))
    consumer = ManagedProcess("consumer-posts", command=[
        sys.executable, "streaming/consumer.py", "--topic", POSTS_TOPIC, "--table", "reddit_posts",
        "--group", "focuscrawl-posts", "--batch-seconds", "1"], **common)
    crawler = ManagedProcess("crawler-listing", command=[
        sys.executable, "streaming/crawler.py", "--base-url", cfg.world_url, "--max-pages", str(pages),
        "--interval", "1", "--status-file", str(status)], **common)
    return crawler, consumer, status


def _wait(check, timeout: float, what: str, bar=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if bar is not None:
            bar.refresh()
        time.sleep(1)
    raise TimeoutError(f"{what} (waited {timeout:.0f}s; see the logs under var/logs)")


def thin_loop(cfg: Settings, pages: int) -> dict:
    from tqdm import tqdm

    from focuscrawl.crawl.listing_crawler import POSTS_TABLE
    from focuscrawl.delta_sink import table_rows
    from focuscrawl.services.airflow import AirflowService

    crawler, consumer, status_file = _stream_processes(cfg, pages)
    status_file.unlink(missing_ok=True)
    try:
        consumer.start()
        crawler.start()
        _say(f"crawler and consumer running (logs: {crawler.log_file}, {consumer.log_file})")

        with tqdm(total=pages, desc="listing pages crawled", unit="page") as bar:
            def crawled():
                s = read_status(status_file)
                bar.n = min(s.get("pages", 0), pages)
                return s.get("pages") == pages and s

            status = _wait(crawled, 600, "the crawler did not finish its pages", bar)

        rows = _wait(lambda: (n := table_rows(POSTS_TABLE.path(cfg))) >= status["posts"] and n, 300, "posts did not all land in Delta")
        _say(f"{status['posts']} posts produced to Kafka, {rows} rows in Delta ({POSTS_TABLE.path(cfg)})")
        before = read_status(status_file)
        _say(f"crawler's next pick before learning: {before.get('next_pick')} (score {before.get('next_pick_score')})")

        client = AirflowService(cfg).client()
        client.wait_for_dag("thin_loop")
        client.unpause("thin_loop")
        run_id = client.trigger("thin_loop", {"min_posts": 1})
        _say(f"triggered thin_loop run {run_id}; watch it at {cfg.airflow_url}/dags/thin_loop")
        with tqdm(desc="thin_loop DAG", bar_format="{desc}: {postfix} [{elapsed}]") as bar:
            def progress(state, tasks):
                bar.set_postfix_str(f"{state}; " + ", ".join(f"{k}={v}" for k, v in tasks.items()))

            state = client.wait("thin_loop", run_id, timeout=1200, progress=progress)
        if state != "success":
            raise RuntimeError(f"thin_loop run {run_id} ended {state}; open {cfg.airflow_url}/dags/thin_loop to read its logs")
        after = _wait(lambda: (s := read_status(status_file)).get("priorities_applied", 0) > 0 and s, 120,
                      "the crawler did not receive the pushed priorities")
        _say(f"crawler's next pick after the push: {after.get('next_pick')} (score {after.get('next_pick_score')}), "
             f"without a restart")
    finally:
        # A failed step must not leave them running: `services down` only knows the services.
        crawler.stop()
        consumer.stop()
    return {"posts": status["posts"], "rows": rows, "pick_before": before.get("next_pick"),
            "pick_after": after.get("next_pick"), "run_id": run_id,
            "top user priorities pushed (user_priorities table)": top_priorities(cfg)}


def top_priorities(cfg: Settings, n: int = 10) -> list[dict]:
    from deltalake import DeltaTable

    from focuscrawl.user_priority import USER_PRIORITIES_TABLE

    frame = DeltaTable(USER_PRIORITIES_TABLE.path(cfg)).to_pandas(columns=["author", "posts", "avg_score", "priority"])
    return frame.nlargest(n, "priority").round(3).to_dict("records")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="focuscrawl demo", description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=5, help="listing pages the crawler fetches")
    ap.add_argument("--experiments", default=",".join(SECTION_NAMES),
                    help="comma-separated report sections to run ('' for none)")
    ap.add_argument("--keep-running", action="store_true", help="leave the services up at the end")
    args = ap.parse_args(argv)
    cfg = settings()

    from focuscrawl.services.manager import ServiceManager

    try:
        names = parse_sections(args.experiments)
    except ValueError as e:
        ap.error(str(e))
    manager = ServiceManager(cfg)
    _say("starting services (Kafka, Airflow, world); the first start takes a minute or two")
    manager.up(manager.parse_only(None), log=_say)
    out = Path(cfg.var_dir) / "demo"
    out.mkdir(parents=True, exist_ok=True)
    try:
        loop = thin_loop(cfg, args.pages)
    except (RuntimeError, TimeoutError) as e:
        # The report still gets written, with the failure at its top and the experiments below.
        _say(f"thin loop failed: {e}")
        loop = {"failed": str(e)}
    finally:
        if not args.keep_running:
            # The experiments need no service: stopping them first leaves both cores to the experiments.
            manager.down(log=_say)
    (out / "loop.json").write_text(json.dumps(loop, indent=1, default=str))
    run_sections(out, names, log=_say)
    report = write_html(out, cfg)
    print(f"\nReport: {report}\n\n{next_steps(cfg)}", flush=True)
    return 1 if "failed" in loop else 0


if __name__ == "__main__":
    sys.exit(main())
