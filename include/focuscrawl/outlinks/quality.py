"""Data-quality gate before training (issue 5, point 3): Great Expectations suites on the snapshot
and feature tables, run on pandas frames. A failing suite raises :class:`DataQualityError` whose
message lists every failed expectation with a sample of the offending values, so the Airflow task
fails and says why.
"""

from __future__ import annotations

import os

import pandas as pd

from focuscrawl.outlinks.schema import SCOPES, feature_groups


class DataQualityError(ValueError):
    pass


def snapshot_expectations() -> list:
    import great_expectations as gx

    e = gx.expectations
    return [
        e.ExpectColumnValuesToNotBeNull(column="url"),
        e.ExpectColumnValuesToMatchRegex(column="url", regex=r"^https?://"),
        e.ExpectColumnValuesToNotBeNull(column="period"),
        e.ExpectColumnValuesToBeBetween(column="period", min_value=0),
        e.ExpectCompoundColumnsToBeUnique(column_list=["url", "period"]),
        e.ExpectColumnValuesToNotBeNull(column="content_digest"),
        e.ExpectColumnValuesToBeBetween(column="status", min_value=100, max_value=599),
        e.ExpectColumnValuesToNotBeNull(column="internal_outlinks"),
        e.ExpectColumnValuesToNotBeNull(column="external_outlinks"),
    ]


def feature_expectations(history_size: int) -> list:
    import great_expectations as gx

    e = gx.expectations
    checks = [e.ExpectCompoundColumnsToBeUnique(column_list=["url", "period"])]
    for col in [c for cols in feature_groups(history_size).values() for c in cols]:
        checks.append(e.ExpectColumnValuesToNotBeNull(column=col))
    for s in SCOPES:
        checks += [
            e.ExpectColumnValuesToBeBetween(column=f"nnl_{s}", min_value=0),
            e.ExpectColumnValuesToBeBetween(column=f"lcr_{s}", min_value=0, max_value=1),
            e.ExpectColumnValuesToBeBetween(column=f"nl_{s}_rate", min_value=0, max_value=1),
        ]
    checks.append(e.ExpectColumnValuesToBeBetween(column="ccr", min_value=0, max_value=1))
    return checks


def validate(frame: pd.DataFrame, expectations: list, name: str) -> None:
    """Run the suite on ``frame``; raise :class:`DataQualityError` listing the failures."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx

    if frame.empty:
        raise DataQualityError(f"{name}: the table is empty")
    context = gx.get_context(mode="ephemeral")
    batch = (context.data_sources.add_pandas(name).add_dataframe_asset(name)
             .add_batch_definition_whole_dataframe(name).get_batch(batch_parameters={"dataframe": frame}))
    suite = gx.ExpectationSuite(name=name)
    missing = []
    for expectation in expectations:
        columns = getattr(expectation, "column_list", None) or [getattr(expectation, "column", None)]
        if any(c not in frame.columns for c in columns if c):
            missing += [c for c in columns if c and c not in frame.columns]
        else:
            suite.add_expectation(expectation)
    result = batch.validate(suite, result_format="SUMMARY")
    failures = [f"missing columns: {sorted(set(missing))}"] if missing else []
    for r in result.results:
        if not r.success:
            cfg = r.expectation_config
            kwargs = {k: v for k, v in cfg.kwargs.items() if k != "batch_id"}
            failures.append(f"{cfg.type}{kwargs}: {r.result.get('unexpected_count')} rows, "
                            f"e.g. {r.result.get('partial_unexpected_list', [])[:3]}")
    if failures:
        raise DataQualityError(f"{name} failed {len(failures)} expectation(s): " + "; ".join(failures))


def check_snapshots(frame: pd.DataFrame) -> None:
    validate(frame, snapshot_expectations(), "page_snapshots")


def check_features(frame: pd.DataFrame, history_size: int) -> None:
    validate(frame, feature_expectations(history_size), "outlink_features")
