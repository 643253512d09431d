"""Model fits side by side: ``outlinks_train``'s fitting loop on one core against ``--cores``, in one run.

    python bench/fits_bench.py [--pages 100000] [--periods 10] [--cores 2] [--repeats 1]
                               [--out $FOCUSCRAWL_VAR/bench/fits.json]

On the training benchmark's synthetic feature rows (``train_bench.features``, ``--pages`` x ``--periods``),
the held-out split and ``train_sample`` of the job (``training.held_out_split``, ``sample_rows``), the
default models (``OutlinksParams.models``) in both scopes are fitted and evaluated by
``training.fit_models``: once with ``cores=1`` (one after another, in process: the loop as it was) and
once with ``--cores`` (loky workers, one BLAS thread each), interleaved ``--repeats`` times, fastest of
each kept. Recorded: both wall times, the speed-up (sequential over side by side), whether every model's
metrics are the same in both, the threads, the load before and after, the usable cores and the commit.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from knn_bench import timed  # noqa: E402
from knn_exact_bench import ROOT, THREAD_VARS  # noqa: E402
from result_json import default_out, write_result  # noqa: E402
from train_bench import features  # noqa: E402

from focuscrawl.experiments.run_record import git_commit  # noqa: E402
from focuscrawl.outlinks.models import model_specs  # noqa: E402
from focuscrawl.outlinks.params import DEFAULT as OUTLINKS  # noqa: E402
from focuscrawl.outlinks.schema import SCOPES  # noqa: E402
from focuscrawl.outlinks.training import fit_models, held_out_split, sample_rows, usable_cores  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=100_000)
    ap.add_argument("--periods", type=int, default=10)
    ap.add_argument("--cores", type=int, default=0, help="fits at once (0: every usable core)")
    ap.add_argument("--train-sample", type=int, default=OUTLINKS.train_sample)
    ap.add_argument("--n-estimators", type=int, default=None, help="trees per model (default: each model's own)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", type=Path, default=default_out("fits"))
    args = ap.parse_args(argv)
    cores = args.cores or usable_cores()
    res: dict = {"pages": args.pages, "periods": args.periods, "models": list(OUTLINKS.models),
                 "scopes": list(SCOPES), "train_sample": args.train_sample, "cores": cores,
                 "usable_cores": usable_cores(), "repeats": args.repeats,
                 "threads": {v: os.environ.get(v, "unset") for v in THREAD_VARS},
                 "load_before": [round(v, 2) for v in os.getloadavg()], "commit": git_commit(ROOT)}
    frame, res["features_seconds"] = timed(lambda: features(args.pages, args.periods), "feature rows")
    train_rows, test_rows, _ = held_out_split(frame)
    train_rows = sample_rows(train_rows, args.train_sample)
    del frame
    res["train_rows"], res["test_rows"] = len(train_rows), len(test_rows)
    specs = model_specs()
    pairs = [(specs[m], s) for m in OUTLINKS.models for s in SCOPES]
    options = {"n_estimators": args.n_estimators} if args.n_estimators else {}
    runs: dict[int, list[float]] = {1: [], cores: []}
    metrics = {}
    for r in range(args.repeats):
        for c in (1, cores):
            out, secs = timed(lambda: fit_models(pairs, train_rows, test_rows, OUTLINKS.history_size, 0, c, **options),
                              f"{len(pairs)} fits on {c} core(s), run {r + 1}")
            runs[c].append(secs)
            metrics[c] = [m for _, m in out]
    res["sequential_seconds"], res["side_by_side_seconds"] = min(runs[1]), min(runs[cores])
    res["all_seconds"] = {"sequential": runs[1], "side_by_side": runs[cores]}
    res["speedup"] = res["sequential_seconds"] / res["side_by_side_seconds"]
    res["same_metrics"] = metrics[1] == metrics[cores]
    res["metrics"] = [{"model": f"{spec.name}/{scope}", **m} for (spec, scope), m in zip(pairs, metrics[cores])]
    res["load_after"] = [round(v, 2) for v in os.getloadavg()]
    for r in summary(res):
        print(f"  {r['what']:<44} {r['seconds']:9.2f} s  {r['note']}")
    write_result(args.out, res)
    return 0 if res["same_metrics"] else 1


def summary(res: dict) -> list[dict]:
    """Rows of the benchmark table (``python -m bench``): both loops, rate in fits per second."""
    fits = len(res["models"]) * len(res["scopes"])
    note = (f"{res['train_rows']:,} training rows of {res['pages']:,} pages x {res['periods']}, "
            f"same metrics: {res['same_metrics']}")
    return [{"what": "outlinks_train fits one after another", "n": fits, "seconds": res["sequential_seconds"],
             "rate": fits / res["sequential_seconds"], "unit": "fits/s", "recall": None, "note": note},
            {"what": f"outlinks_train fits side by side, {res['cores']} cores", "n": fits,
             "seconds": res["side_by_side_seconds"], "rate": fits / res["side_by_side_seconds"], "unit": "fits/s",
             "recall": None, "note": f"{res['speedup']:.2f}x the sequential loop in the same run; {note}"}]


if __name__ == "__main__":
    sys.exit(main())
