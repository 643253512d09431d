"""Job: outlink_features -> model store + outlink_models (train, evaluate on the held-out period, register,
promote when not worse), seed 002 Section 7.

    python spark_jobs/outlinks_train.py [--models NNL-ET_LBLA,NNL-NGB] [--history-size 4] [--train-sample 200000]
                                        [--cores N]

Training runs on the driver (scikit-learn, NGBoost) from the feature table read with delta-rs, the
(model, scope) fits side by side on ``--cores`` cores (``training.fit_models``); the models table is
appended with delta-rs (``focuscrawl.lake.append_frame``): the job needs no Spark session. While the table holds fewer than two labelled periods
(a live platform's first minutes) nothing is trained and the job exits with ``NOTHING_TO_DO`` (99), which
skips the DAG's task instead of failing it (``focuscrawl.lake.spark``).
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.outlinks.params import DEFAULT, TRAIN_KNOBS
from focuscrawl.outlinks.leakage import check_vectors_before
from focuscrawl.outlinks.tables import EMBEDDINGS, FEATURES, MODELS
from focuscrawl.outlinks.training import NotEnoughHistory, held_out_split, model_store, train_and_register
from focuscrawl.core.params import add_arguments


def run(cfg: Settings, models=DEFAULT.models, history_size: int = DEFAULT.history_size, promote: bool = True,
        train_sample: int = DEFAULT.train_sample, cores: int = 0, **options) -> list[dict]:
    features = lake.to_pandas(FEATURES, cfg)
    # The vectors behind every row's look-around features predate the held-out period, or nothing trains
    # (features built with no page_embeddings table at all have no vectors to leak).
    if lake.exists(EMBEDDINGS, cfg):
        check_vectors_before(lake.to_pandas(EMBEDDINGS, cfg, columns=["as_of_period"])["as_of_period"],
                             held_out_split(features)[2])
    rows = train_and_register(features, lake.version(FEATURES, cfg), model_store(cfg),
                              history_size, models, promote=promote, train_sample=train_sample, cores=cores,
                              **options)
    lake.append_frame(pd.DataFrame(rows), MODELS, cfg)
    return rows


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.lake.spark import NOTHING_TO_DO

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, DEFAULT, TRAIN_KNOBS)
    ap.add_argument("--no-promote", action="store_true", help="register only; the DAG's promote step decides")
    ap.add_argument("--cores", type=int, default=0,
                    help="models fitted at once, one core each (0: every core this process may use, or one "
                         "after another below training.SIDE_BY_SIDE_ROWS training rows)")
    args = ap.parse_args(argv)
    cfg = settings()
    try:
        rows = run(cfg, args.models.split(","), args.history_size,
                   promote=not args.no_promote, train_sample=args.train_sample, cores=args.cores)
    except NotEnoughHistory as exc:
        print(f"outlinks_train: nothing trained: {exc}", flush=True)
        return NOTHING_TO_DO
    for row in rows:
        print(f"outlinks_train: {row['name']} v{row['version']} pk_area={row['pk_area']:.3f} "
              f"spearman={row['spearman']:.3f} promoted={row['promoted']} ({row['reason']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
