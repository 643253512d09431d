"""Names of the seed-002 features and targets (the taxonomy of features.py), in plain Python so that
table declarations and DAG files can use them without importing pandas."""

from __future__ import annotations

SCOPES = ("int", "ext")
# Which new outlinks a target counts: all of them, or those about the page focus (focuscrawl.outlinks.targets).
REVISIT_TARGETS = ("new_outlinks", "new_relevant_outlinks")
TARGETS = ("NNL", "NL", "LCR")
STATIC_PAGE = ["url_depth", "n_words", "n_links_int", "n_links_ext"]
# (source column of a related page, aggregate) -> feature around_<agg>_<source>
AROUND_SPEC: tuple[tuple[str, str], ...] = (
    ("similarity", "mean"),
    ("n_links_int", "mean"),
    ("n_links_ext", "mean"),
    *((f"nnl_{s}_av", agg) for s in SCOPES for agg in ("mean", "max")),
    *((f"nnl_{s}_lag1", "mean") for s in SCOPES),
    *((f"nl_{s}_rate", agg) for s in SCOPES for agg in ("mean", "max")),
    ("ccr", "mean"),
)
STATIC_NETWORK_SOURCES = ("similarity", "n_links_int", "n_links_ext")


def around_name(source: str, agg: str) -> str:
    return f"around_{agg}_{source}"


def look_back_columns(history_size: int) -> list[str]:
    cols = []
    for s in SCOPES:
        cols += [f"nnl_{s}_lag{i}" for i in range(1, history_size + 1)]
        cols += [f"nnl_{s}_av", f"nl_{s}_rate", f"nl_{s}_lag1"]
    return cols + ["ccr"]


def target_column(target: str, scope: str) -> str:
    """Column holding the true value of ``target`` (NNL, NL, LCR) for ``scope`` (int, ext)."""
    if target.upper() not in TARGETS or scope not in SCOPES:
        raise ValueError(f"unknown target {target!r}/{scope!r}; targets: {TARGETS}, scopes: {SCOPES}")
    return f"{target.lower()}_{scope}"


def feature_groups(history_size: int) -> dict[str, list[str]]:
    """Every feature column by taxonomy group: SP, DP, SN, DN."""
    around = [around_name(src, agg) for src, agg in AROUND_SPEC]
    return {
        "SP": list(STATIC_PAGE),
        "DP": look_back_columns(history_size),
        "SN": [c for c in around if c.split("_", 2)[2] in STATIC_NETWORK_SOURCES],
        "DN": [c for c in around if c.split("_", 2)[2] not in STATIC_NETWORK_SOURCES],
    }


def feature_columns(target: str, scope: str, feature_set: str, history_size: int) -> list[str]:
    """Columns a model for ``target``/``scope`` trains on: ``feature_set`` is ``all`` or ``lbla``."""
    target = target.upper()
    target_column(target, scope)
    groups = feature_groups(history_size)
    if feature_set == "all":
        drop_dp = target == "LCR"
        return [c for g, cols in groups.items() if not (drop_dp and g == "DP") for c in cols]
    if feature_set != "lbla":
        raise ValueError(f"unknown feature set {feature_set!r}; use 'all' or 'lbla'")
    around = [around_name(f"nl_{scope}_rate", "mean"), around_name(f"nl_{scope}_rate", "max")]
    if target == "LCR":
        return around
    back = [f"nnl_{scope}_lag{i}" for i in range(1, history_size + 1)] + [f"nnl_{scope}_av"]
    around_nnl = [around_name(f"nnl_{scope}_av", "mean"), around_name(f"nnl_{scope}_av", "max"),
                  around_name(f"nnl_{scope}_lag1", "mean")]
    if target == "NL":
        return [f"nl_{scope}_rate", f"nl_{scope}_lag1"] + back + around
    # NNL: its own history, the related pages' NNL history and their LCR (Section 6 names the related
    # pages' LCR among the most informative features; Section 7's LBLA keeps them).
    return back + around_nnl + around
