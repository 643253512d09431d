"""Training benchmark (docs/benchmarks.md; seed 002 Section 7: its training took 1.5 hours on 16 cores).

    python bench/train_bench.py [--pages 384000] [--periods 10] [--compare-pages 100000]
                                [--embed-pages 384000] [--out $FOCUSCRAWL_VAR/bench/train.json]

Three parts, on synthetic pages (``focuscrawl.outlinks.synthetic``'s mechanism: topics, co-changing
related pages, content change that drives link change, drifting rates), all in one run:

1. **The training job** (``spark-submit spark_jobs/outlinks_train.py``, the command Airflow runs) on
   ``--pages`` x ``--periods`` weekly periods in a scratch lake (``knn_bench.scratch_settings``), with
   the models and the training knob of ``OutlinksParams`` (``--train-sample``, passed on as the job's
   flag): its wall time from submit to exit, the CPU seconds and peak RSS of spark-submit and its
   descendants, and the job's own record of each model's Spearman and P@k% area on the held-out last
   period.
2. **What the sample costs**, in process at ``--compare-pages``, where the full fit is feasible: each
   model fitted on every training row (``train_sample=0``) and on samples of the same rows, all scored
   on the same held-out period (``training.held_out_split``, the job's: train and test never share a
   period). The samples: ``same fraction``, the job's share of its training rows at ``--pages`` (a
   smaller sample than the job's, so likely a larger loss than the job's), and ``same rows``, the
   job's ``--train-sample`` itself when this scale has more training rows than that.
3. **The embedding step** (``spark-submit spark_jobs/outlinks_embed.py``, TF-IDF + LSA) on
   ``--embed-pages`` synthetic pages' latest snapshot (topic words and common words, as the generator's).

The feature table is written directly, not made by ``spark_jobs/outlinks_features.py`` from
snapshots: the synthetic snapshot generator is a Python loop over pages x periods (about 4*10^7 URL
strings at 384k x 10) and the features job's look-around joins 11.5M related-page rows with every
period. :func:`features` draws the generator's own weekly rates (``synthetic.link_rates``), the new
outlinks as Poisson counts of them, and builds the rows with the pipeline's functions where they
are vectorised (``features.page_look_back``, ``schema.AROUND_SPEC``): the related pages of a page are
30 pages of its topic (what its embedding finds) with a similarity drawn uniformly in [0.6, 0.95].

Threads are whatever the caller pinned (``python -m bench`` pins OPENBLAS/OMP/MKL, default 1) and are
recorded; the job's estimators fit one after the other on one core each (``OutlinkEstimator``'s
``n_jobs=1``), so of the 2 cores one does the training. Under load, compare CPU seconds
(``cpu_seconds``: this process's; ``job_cpu_seconds``: the job's processes').
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from knn_bench import ROOT, scratch_settings, timed  # noqa: E402  (one scratch lake pattern for every job bench)
from result_json import default_out, write_result  # noqa: E402

from focuscrawl.outlinks.evaluation import evaluate  # noqa: E402
from focuscrawl.outlinks.features import page_look_back  # noqa: E402
from focuscrawl.outlinks.models import model_specs, train  # noqa: E402
from focuscrawl.outlinks.params import DEFAULT as OUTLINKS  # noqa: E402
from focuscrawl.outlinks.schema import AROUND_SPEC, SCOPES, around_name, feature_groups  # noqa: E402
from focuscrawl.outlinks.synthetic import link_rates  # noqa: E402
from focuscrawl.outlinks.urls import url_depth  # noqa: E402
from focuscrawl.outlinks.training import held_out_split, sample_rows  # noqa: E402

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
N_TOPICS, N_SITES, WORDS = 40, 50, 80  # generate_snapshots' defaults


def _url(i: int, site: int) -> str:
    # generate_snapshots' URL shape: depth 1-3 by the page's index
    return f"http://site{site}.example/" + "/".join([f"s{d}" for d in range(i % 3)] + [f"page{i}"])


def features(n_pages: int, n_periods: int, history_size: int = OUTLINKS.history_size, k: int = OUTLINKS.k,
             seed: int = 0) -> pd.DataFrame:
    """The ``outlink_features`` rows of ``n_pages`` synthetic pages over ``n_periods`` snapshots (see the docstring)."""
    rng = np.random.default_rng(seed)
    rates = link_rates(rng, n_pages, n_periods, N_TOPICS, N_SITES)
    new_int = rng.poisson(rates.mu * (1 - rates.ext_share))
    new_ext = rng.poisson(rates.mu * rates.ext_share)
    urls = np.array([_url(i, s) for i, s in enumerate(rates.site)], dtype=object)
    # targets.py's rows: one per page and period after the first snapshot
    t = np.arange(1, n_periods)
    targets = pd.DataFrame({"url": np.tile(urls, len(t)), "period": np.repeat(t, n_pages).astype(np.int32),
                            "nnl_int": new_int[1:].ravel(), "nnl_ext": new_ext[1:].ravel(),
                            "nl_int": new_int[1:].ravel() > 0, "nl_ext": new_ext[1:].ravel() > 0,
                            "content_changed": rates.updated[1:].ravel()})
    back = page_look_back(targets, history_size)
    del targets
    index = pd.Series(np.arange(n_pages), index=urls)
    back["i"] = index[back["url"]].to_numpy()
    back = back.sort_values(["period", "i"], ignore_index=True)
    # Static page features of the previous snapshot: links pushed off as new ones come (generate_snapshots).
    links = {}
    for scope, new, floor in (("int", new_int, 8), ("ext", new_ext, 3)):
        length = np.empty_like(new)
        length[0] = floor
        for p in range(1, n_periods):
            length[p] = new[p] + np.minimum(length[p - 1], np.maximum(floor, length[p - 1] - new[p]))
        links[scope] = length
    period, i = back["period"].to_numpy(), back["i"].to_numpy()
    back["url_depth"] = np.array([url_depth(u) for u in urls])[i]
    back["n_words"] = WORDS
    back["n_links_int"] = links["int"][period - 1, i]
    back["n_links_ext"] = links["ext"][period - 1, i]
    # Related pages: k others of the page's topic (what the embedding finds), as outlinks_related's rows.
    by_topic = [np.flatnonzero(rates.topic == c) for c in range(N_TOPICS)]
    neighbour = np.empty((n_pages, k), dtype=np.int64)
    for members in by_topic:
        if len(members):
            neighbour[members] = members[rng.integers(0, len(members), (len(members), k))]
    similarity = rng.uniform(0.6, 0.95, (n_pages, k))
    sources = sorted({src for src, _ in AROUND_SPEC} - {"similarity"})
    for src, agg in AROUND_SPEC:
        back[around_name(src, agg)] = np.nan
    for p in np.unique(period):
        rows = np.flatnonzero(period == p)
        values = back.loc[rows, sources].to_numpy(float)  # rows are pages 0..n-1 in order: full histories
        for s in range(0, n_pages, 50_000):
            nb = values[neighbour[s:s + 50_000]]
            for src, agg in AROUND_SPEC:
                x = similarity[s:s + 50_000] if src == "similarity" else nb[:, :, sources.index(src)]
                back.loc[rows[s:s + 50_000], around_name(src, agg)] = x.mean(axis=1) if agg == "mean" else x.max(1)
    cols = [c for group in feature_groups(history_size).values() for c in group]
    back[cols] = back[cols].astype(float).fillna(0.0)
    targets_cols = [f"{t}_{s}" for t in ("nnl", "nl", "lcr") for s in SCOPES]
    return back[["url", "period", *cols, *targets_cols]].astype({"period": np.int32})


def write_table(cfg, spec, frame: pd.DataFrame) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    write_deltalake(spec.path(cfg), pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False),
                    partition_by=list(spec.partition_by) or None, mode="overwrite", description=spec.comment)


def submitted(cfg, job: str, *args: str) -> tuple[str, float, float]:
    """``(stdout, wall s, CPU s)`` of ``spark-submit spark_jobs/<job>``; the CPU is spark-submit's and its
    descendants' (the JVM, the Python driver and workers), from the children's rusage."""
    from focuscrawl.services.spark_cluster import spark_submit

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out, secs = timed(lambda: spark_submit(cfg, ROOT / "spark_jobs" / job, *args, timeout=3 * 3600),
                      f"spark-submit {job} {' '.join(args)}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    submitted.peak_rss_mb = after.ru_maxrss / 1024  # the largest child's so far (the driver, by far)
    return out, secs, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def train_job(pages: int, periods: int, models: tuple[str, ...], train_sample: int, master: str) -> dict:
    """The training job through spark-submit on a scratch lake holding ``pages`` x ``periods`` feature rows."""
    from focuscrawl.outlinks.tables import FEATURES

    cfg = scratch_settings("train-bench-", master)
    try:
        frame, gen_secs = timed(lambda: features(pages, periods), f"features {pages} x {periods}")
        gen_cpu = timed.cpu
        rows = len(frame)
        _, write_secs = timed(lambda: write_table(cfg, FEATURES, frame), f"outlink_features written ({rows} rows)")
        train_rows = len(held_out_split(frame)[0])
        del frame
        args = ["--models", ",".join(models), "--history-size", str(OUTLINKS.history_size),
                "--train-sample", str(train_sample)]
        out, secs, cpu = submitted(cfg, "outlinks_train.py", *args)
        metrics = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("outlinks_train: ")]
        return {"pages": pages, "periods": periods, "feature_rows": rows, "train_rows": train_rows,
                "train_sample": train_sample, "models": list(models), "arguments": args, "master": master,
                "seconds": secs, "job_cpu_seconds": cpu, "pages_per_s": pages / secs,
                "peak_child_rss_mb": submitted.peak_rss_mb, "features_seconds": gen_secs,
                "features_cpu_seconds": gen_cpu, "features_write_seconds": write_secs,
                "spark_driver_memory": cfg.spark_driver_memory, "models_trained": metrics,
                "model_store_mb": sum(f.stat().st_size for f in (cfg.var_dir / "models").rglob("*")
                                      if f.is_file()) / 1e6}
    finally:
        shutil.rmtree(cfg.var_dir, ignore_errors=True)


def compare(pages: int, periods: int, models: tuple[str, ...], job_train_rows: int, train_sample: int,
            seed: int = 0) -> dict:
    """Each model fitted on every training row and on the knob's sample, on the same rows, scored on
    the same held-out period: what the sample costs in Spearman and P@k% area."""
    frame = features(pages, periods, seed=seed)
    train_rows, test_rows, eval_period = held_out_split(frame)
    # The job's share of its training rows, and the job's absolute sample when this scale has more rows.
    share = min(1.0, train_sample / job_train_rows) if train_sample else 1.0
    samples = {"same fraction": round(len(train_rows) * share)}
    if train_sample and train_sample < len(train_rows) and train_sample != samples["same fraction"]:
        samples["same rows"] = train_sample
    specs = model_specs()
    out = {"pages": pages, "periods": periods, "train_rows": len(train_rows), "test_rows": len(test_rows),
           "eval_period": eval_period, "train_periods": sorted(map(int, train_rows["period"].unique())),
           "samples": samples, "fits": []}
    for name in models:
        spec = specs[name]
        for scope in SCOPES:
            truth = test_rows[spec.target_column(scope)].to_numpy()
            full = None
            for label, n in (("full", 0), *samples.items()):
                if label != "full" and (not n or n >= len(train_rows)):
                    continue
                fit = sample_rows(train_rows, n, seed)
                model, secs = timed(lambda: train(spec, fit, scope, OUTLINKS.history_size, seed),
                                    f"{name}/{scope} {label} on {len(fit)} rows")
                cpu = timed.cpu
                metrics = evaluate(truth, model.predict(test_rows[spec.columns(scope, OUTLINKS.history_size)]),
                                   seed=seed)
                row = {"model": f"{name}/{scope}", "fit": label, "rows": len(fit), "seconds": secs,
                       "cpu_seconds": cpu, **metrics}
                if full is None:
                    full = row
                else:
                    row["spearman_loss"] = full["spearman"] - row["spearman"]
                    row["pk_area_loss"] = full["pk_area"] - row["pk_area"]
                out["fits"].append(row)
                del model
    return out


def snapshot_texts(pages: int, seed: int = 0) -> pd.DataFrame:
    """``page_snapshots`` rows of ``pages`` pages' snapshot at period 0 (60% topic words, 40% common, as
    generate_snapshots'), and page 0's again at period 1, the period the embedding job holds out."""
    from focuscrawl.outlinks.synthetic import SNAPSHOT_COLUMNS
    from focuscrawl.outlinks.tables import SNAPSHOTS

    rng = np.random.default_rng(seed)
    topic = rng.integers(0, N_TOPICS, pages)
    site = rng.integers(0, N_SITES, pages)
    n_topic = int(WORDS * 0.6)
    topic_words = np.char.add(np.char.add("t", topic.astype(str))[:, None],
                              np.char.add("w", rng.integers(0, 40, (pages, n_topic)).astype(str)))
    common = np.char.add("c", rng.integers(0, 300, (pages, WORDS - n_topic)).astype(str))
    texts = [" ".join(words) for words in np.concatenate([topic_words, common], axis=1).tolist()]
    frame = pd.DataFrame({"url": [_url(i, s) for i, s in enumerate(site)], "period": np.int32(0),
                          "fetched_at": pd.Timestamp("2026-01-05", tz="UTC"), "status": np.int32(200),
                          "content_digest": None, "text": texts, "internal_outlinks": [[]] * pages,
                          "external_outlinks": [[]] * pages})[SNAPSHOT_COLUMNS]
    frame = frame.assign(**{name: None for name in SNAPSHOTS.column_names if name not in frame})
    # The job holds out the last period (docs/loops/outlinks.md: its texts never reach training) and embeds
    # each page's latest text before it: one page's next snapshot makes period 0, every page's, the one embedded.
    return pd.concat([frame, frame.iloc[:1].assign(period=np.int32(1))], ignore_index=True)


def embed_job(pages: int, master: str) -> dict:
    """The embedding job (TF-IDF + LSA) through spark-submit on ``pages`` pages' latest snapshot."""
    from focuscrawl.outlinks.tables import SNAPSHOTS

    cfg = scratch_settings("embed-bench-", master)
    try:
        frame, gen_secs = timed(lambda: snapshot_texts(pages), f"snapshots of {pages} pages")
        _, write_secs = timed(lambda: write_table(cfg, SNAPSHOTS, frame), "page_snapshots written")
        del frame
        args = ["--dimensions", str(OUTLINKS.dimensions), "--sample-size", str(OUTLINKS.sample_size)]
        out, secs, cpu = submitted(cfg, "outlinks_embed.py", *args)
        assert f"outlinks_embed: {pages} pages" in out, out
        return {"pages": pages, "arguments": args, "master": master, "seconds": secs, "job_cpu_seconds": cpu,
                "pages_per_s": pages / secs, "peak_child_rss_mb": submitted.peak_rss_mb, "words_per_page": WORDS,
                "snapshots_seconds": gen_secs,
                "snapshots_write_seconds": write_secs}
    finally:
        shutil.rmtree(cfg.var_dir, ignore_errors=True)


def summary(res: dict) -> list[dict]:
    """Rows of the benchmark table (``python -m bench``): what, n, seconds, CPU s, rate, unit, note."""
    rows = []
    job = res.get("train_job")
    if job:
        note = "; ".join(job["models_trained"]) + f"; peak RSS {job['peak_child_rss_mb']:,.0f} MB"
        what = f"outlinks_train via spark-submit ({job['pages']:,} pages x {job['periods']} periods)"
        rows.append({"what": what,
                     "n": job["pages"], "seconds": job["seconds"], "cpu_seconds": job["job_cpu_seconds"],
                     "rate": job["pages_per_s"], "unit": "pages/s", "recall": None,
                     "note": f"{job['master']}, train_sample {job['train_sample']:,} of {job['train_rows']:,} "
                             f"training rows; {note}"})
    comp = res.get("compare")
    if comp:
        for r in comp["fits"]:
            cost = (f", costs Spearman {r['spearman_loss']:+.3f}, P@k% area {r['pk_area_loss']:+.3f} vs full"
                    if "spearman_loss" in r else "")
            what = f"fit {r['model']} on {r['fit']} rows ({comp['pages']:,} pages, in process)"
            rows.append({"what": what,
                         "n": r["rows"], "seconds": r["seconds"], "cpu_seconds": r["cpu_seconds"],
                         "rate": r["rows"] / r["seconds"], "unit": "rows/s", "recall": None,
                         "note": f"held-out period {comp['eval_period']}: Spearman {r['spearman']:.3f}, "
                                 f"P@k% area {r['pk_area']:.3f}{cost}"})
    emb = res.get("embed_job")
    if emb:
        rows.append({"what": "outlinks_embed (TF-IDF + LSA) via spark-submit", "n": emb["pages"],
                     "seconds": emb["seconds"], "cpu_seconds": emb["job_cpu_seconds"], "rate": emb["pages_per_s"],
                     "unit": "pages/s", "recall": None,
                     "note": f"{emb['master']}, d={OUTLINKS.dimensions}, fitted on {OUTLINKS.sample_size:,} pages, "
                             f"{emb['words_per_page']} words a page"})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=20_000, help="pages of the training job run")
    ap.add_argument("--no-job", action="store_true",
                    help="skip the training job (the comparison's sample still keeps the share of --pages' rows)")
    ap.add_argument("--periods", type=int, default=10, help="weekly snapshots (seed 002: 10)")
    ap.add_argument("--models", default=",".join(OUTLINKS.models))
    ap.add_argument("--train-sample", type=int, default=OUTLINKS.train_sample,
                    help="the job's --train-sample (OutlinksParams.train_sample)")
    ap.add_argument("--compare-pages", type=int, default=5000,
                    help="pages of the full-fit vs sample comparison (0: skip it)")
    ap.add_argument("--embed-pages", type=int, default=20_000, help="pages of the embedding job run (0: skip it)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--out", type=Path, default=default_out("train"))
    args = ap.parse_args(argv)
    models = tuple(m.strip() for m in args.models.split(",") if m.strip())
    res: dict = {"threads": {v: os.environ.get(v, "unset") for v in THREAD_VARS}, "load_start": os.getloadavg()}
    # The job's training rows at --pages, whose share of them the comparison's sample keeps.
    job_train_rows = args.pages * (args.periods - OUTLINKS.history_size - 2)
    if not args.no_job:
        res["train_job"] = train_job(args.pages, args.periods, models, args.train_sample, args.master)
        job_train_rows = res["train_job"]["train_rows"]
    if args.compare_pages:
        res["compare"] = compare(args.compare_pages, args.periods, models, job_train_rows, args.train_sample)
    if args.embed_pages:
        res["embed_job"] = embed_job(args.embed_pages, args.master)
    res["load_end"] = os.getloadavg()
    for r in summary(res):
        print(f"  {r['what']:<64} n={r['n']:<8} {r['seconds']:9.2f} s  CPU {r['cpu_seconds'] or 0:8.1f} s  {r['note']}")
    write_result(args.out, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
