"""`make demo`: the main job on the embedded default, end to end, then where to look.

1. Start the services (Kafka in KRaft mode, Airflow 3, the world).
2. Run the listing crawler against the world and the Kafka->Delta consumer for a bounded time.
3. Trigger the ``thin_loop`` DAG (Spark job over Delta -> priorities -> compacted topic) and wait.
4. Show the running crawler's next pick following the pushed priorities.
5. Run the experiments whose reports people compare (``--experiments``), and write an HTML report.

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

DEFAULT_EXPERIMENTS = ("graph-estimation", "ephemeral", "fue")


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


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


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
    from deltalake import DeltaTable
    from tqdm import tqdm

    from focuscrawl.crawl.listing_crawler import POSTS_TABLE
    from focuscrawl.services.airflow import AirflowService

    crawler, consumer, status_file = _stream_processes(cfg, pages)
    status_file.unlink(missing_ok=True)
    consumer.start()
    crawler.start()
    _say(f"crawler and consumer running (logs: {crawler.log_file}, {consumer.log_file})")

    with tqdm(total=pages, desc="listing pages crawled", unit="page") as bar:
        def crawled():
            s = _read(status_file)
            bar.n = min(s.get("pages", 0), pages)
            return s.get("pages") == pages and s

        status = _wait(crawled, 600, "the crawler did not finish its pages", bar)

    def landed() -> int:
        try:
            return DeltaTable(POSTS_TABLE.path(cfg)).to_pyarrow_dataset().count_rows()
        except Exception:  # noqa: BLE001 - table not created yet
            return 0

    rows = _wait(lambda: (n := landed()) >= status["posts"] and n, 300, "posts did not all land in Delta")
    _say(f"{status['posts']} posts produced to Kafka, {rows} rows in Delta ({POSTS_TABLE.path(cfg)})")
    before = _read(status_file)
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
    after = _wait(lambda: (s := _read(status_file)).get("priorities_applied", 0) > 0 and s, 120,
                  "the crawler did not receive the pushed priorities")
    _say(f"crawler's next pick after the push: {after.get('next_pick')} (score {after.get('next_pick_score')}), "
         f"without a restart")
    crawler.stop()
    consumer.stop()
    return {"posts": status["posts"], "rows": rows, "pick_before": before.get("next_pick"),
            "pick_after": after.get("next_pick"), "run_id": run_id}


def run_experiments(names: list[str], out: Path) -> dict[str, Path]:
    """Each experiment writes its PNGs and tables into ``out/<name>``; quick settings for the demo."""
    import importlib

    quick = {
        "graph-estimation": ["--runs", "3", "--fractions", "0.05,0.1"],
        "ephemeral": ["--days", "2"],
        "fue": ["--methods", "RND,HCP,LCP,HAC,N06", "--duration", "4h", "--step", "10m"],
    }
    done = {}
    for name in names:
        target = out / name
        target.mkdir(parents=True, exist_ok=True)
        module = importlib.import_module(f"focuscrawl.experiments.{name.replace('-', '_')}")
        _say(f"experiment {name} -> {target}")
        code = module.main([*quick.get(name, []), "--output", str(target)])
        if code:
            raise RuntimeError(f"experiment {name} exited {code}")
        done[name] = target
    return done


def html_report(out: Path, loop: dict, experiments: dict[str, Path]) -> Path:
    """One page: the loop's numbers, then every experiment's plots and tables."""
    import html

    parts = ["<!doctype html><meta charset='utf-8'><title>focuscrawl demo report</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}img{max-width:100%}"
             "pre{background:#f4f4f4;padding:1em;overflow:auto}</style>",
             "<h1>focuscrawl demo report</h1>", "<h2>Thin loop</h2><pre>",
             html.escape(json.dumps(loop, indent=2)), "</pre>"]
    for name, folder in experiments.items():
        parts.append(f"<h2>Experiment: {html.escape(name)}</h2>")
        for md in sorted(folder.glob("*.md")):
            parts.append(f"<pre>{html.escape(md.read_text())}</pre>")
        for png in sorted(folder.glob("*.png")):
            parts.append(f"<figure><img src='{png.relative_to(out)}'><figcaption>{html.escape(png.name)}</figcaption></figure>")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.html"
    path.write_text("\n".join(parts))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="focuscrawl demo", description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=5, help="listing pages the crawler fetches")
    ap.add_argument("--experiments", default=",".join(DEFAULT_EXPERIMENTS),
                    help="comma-separated experiments for the report ('' for none)")
    ap.add_argument("--keep-running", action="store_true", help="leave the services up at the end")
    args = ap.parse_args(argv)
    cfg = settings()

    from focuscrawl.services.manager import ServiceManager

    manager = ServiceManager(cfg)
    _say("starting services (Kafka, Airflow, world); the first start takes a minute or two")
    manager.up(manager.parse_only(None), log=_say)
    out = Path(cfg.var_dir) / "demo"
    try:
        loop = thin_loop(cfg, args.pages)
        names = [n.strip() for n in args.experiments.split(",") if n.strip()]
        report = html_report(out, loop, run_experiments(names, out))
    finally:
        if not args.keep_running:
            manager.down(log=_say)
    print(f"""
Results
  Delta tables:  {cfg.lake}
  Report:        {report}
  Query:         .venv/bin/focuscrawl sql "SELECT author, priority FROM {cfg.catalog_db}.user_priorities ORDER BY priority DESC LIMIT 10"
  Airflow UI:    .venv/bin/focuscrawl services up, then {cfg.airflow_url} (user {cfg.airflow_user}; `focuscrawl services status` shows the password file)
""")
    return 0


if __name__ == "__main__":
    sys.exit(main())
