"""Unit tests of the look-back-look-around pieces (seed 002) on hand-made and synthetic data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from focuscrawl.outlinks.evaluation import curve_area, evaluate, precision_at_k_curve, spearman
from focuscrawl.outlinks.features import look_around, look_back
from focuscrawl.outlinks.schema import feature_columns, feature_groups
from focuscrawl.outlinks.models import ESTIMATORS, model_specs, train
from focuscrawl.outlinks.store import ModelStore, ModelVersion
from focuscrawl.outlinks.targets import targets
from focuscrawl.outlinks.training import promote_latest
from focuscrawl.outlinks.urls import registered_domain, split_outlinks, url_depth


def snap(url, period, internal, external=(), digest="d"):
    return {"url": url, "period": period, "content_digest": digest, "text": "a b c",
            "internal_outlinks": list(internal), "external_outlinks": list(external)}


def test_registered_domain_and_split():
    assert registered_domain("https://news.bbc.co.uk/x") == "bbc.co.uk"
    assert registered_domain("http://a.b.example.com:80/") == "example.com"
    assert registered_domain("http://127.0.0.1:18090/p") == "127.0.0.1:18090"
    internal, external = split_outlinks("http://www.site.org/a", ["http://blog.site.org/1", "http://other.org/2",
                                                                  "http://blog.site.org/1"])
    assert internal == ["http://blog.site.org/1"] and external == ["http://other.org/2"]
    assert url_depth("http://x.org/a/b/") == 2


def test_targets_count_links_never_seen_before():
    rows = [snap("u", 0, ["a", "b"], ["x"], "d0"), snap("u", 1, ["a", "c", "d"], ["x"], "d0"),
            snap("u", 2, ["b", "e"], [], "d1"), snap("u", 3, ["b"], ["y", "z"], "d1")]
    out = targets(pd.DataFrame(rows[::-1]))  # order does not matter
    assert out["period"].tolist() == [1, 2, 3]
    assert out["nnl_int"].tolist() == [2, 1, 0]  # "b" came back in period 2: not new
    assert out["nnl_ext"].tolist() == [0, 0, 2]
    assert out["nl_int"].tolist() == [True, True, False]
    assert out["content_changed"].tolist() == [False, True, False]


def test_look_back_history_and_lcr():
    t = pd.DataFrame({"url": "u", "period": [1, 2, 3, 4], "nnl_int": [0, 2, 1, 0], "nnl_ext": [1, 0, 0, 0],
                      "nl_int": [False, True, True, False], "nl_ext": [True, False, False, False],
                      "content_changed": [True, False, False, True]})
    out = look_back(t, history_size=2)
    assert out["period"].tolist() == [3, 4, 5]  # 5: the next period, features only
    assert np.isnan(out["nnl_int"].iloc[-1]) and out["nnl_int_lag1"].iloc[-1] == 0
    row = out.set_index("period").loc[4]
    assert (row["nnl_int_lag1"], row["nnl_int_lag2"], row["nnl_int_av"]) == (1, 2, 1.5)
    assert row["nl_int_rate"] == 1.0 and row["ccr"] == 0.0
    assert row["lcr_int"] == pytest.approx(2 / 3)  # two of the three intervals 2..4 had new links
    assert out.set_index("period").loc[3, "nnl_ext_av"] == 0.5


def test_look_back_drops_incomplete_history():
    t = pd.DataFrame({"url": "u", "period": [1, 2, 4, 5], "nnl_int": 1, "nnl_ext": 0, "nl_int": True,
                      "nl_ext": False, "content_changed": False})
    # period 3 missing: 4 and 5 lack a full 2-interval history; 3 has one but no observed target
    # (labelled() drops it from training); 6, the next period, has 4 and 5
    out = look_back(t, history_size=2)
    assert out["period"].tolist() == [3, 6]
    assert np.isnan(out["nnl_int"].iloc[0]) and out["nnl_int_av"].iloc[0] == 1.0


def test_look_around_mean_and_max():
    pages = pd.DataFrame({"url": ["a", "b", "c"], "period": 5, "nnl_int_av": [9.0, 1.0, 3.0]})
    for col in ["n_links_int", "n_links_ext", "nnl_ext_av", "nnl_int_lag1", "nnl_ext_lag1", "nl_int_rate",
                "nl_ext_rate", "ccr"]:
        pages[col] = 0.0
    related = pd.DataFrame({"url": ["a", "a"], "neighbour": ["b", "c"], "similarity": [0.9, 0.5]})
    out = look_around(pages, related).iloc[0]
    assert out["around_mean_nnl_int_av"] == 2.0 and out["around_max_nnl_int_av"] == 3.0
    assert out["around_mean_similarity"] == pytest.approx(0.7)


def test_feature_sets_follow_the_seed():
    groups = feature_groups(3)
    assert set(groups) == {"SP", "DP", "SN", "DN"}
    assert feature_columns("LCR", "ext", "lbla", 3) == ["around_mean_nl_ext_rate", "around_max_nl_ext_rate"]
    assert not set(feature_columns("LCR", "int", "all", 3)) & set(groups["DP"])  # DP defines LCR
    nnl = feature_columns("NNL", "int", "lbla", 3)
    assert "nnl_int_lag3" in nnl and "around_mean_nnl_int_av" in nnl and "ccr" not in nnl
    # The related pages' LCR, which Section 6 finds among the most informative features, is in every LBLA set.
    for target in ("NNL", "NL", "LCR"):
        assert {"around_mean_nl_int_rate", "around_max_nl_int_rate"} <= set(feature_columns(target, "int", "lbla", 3))
    assert not any(c.startswith("n_links") or c == "url_depth" for c in nnl)  # nothing but look back and look around


def _weekly_new_links(snapshots):
    t = targets(snapshots)
    return t.assign(nnl=t.nnl_int + t.nnl_ext)


def test_synthetic_pages_change_in_the_documented_ways():
    from focuscrawl.outlinks.synthetic import generate_snapshots

    kw = dict(n_pages=300, n_periods=8, n_topics=6, n_sites=5, words_per_page=30, seed=4)
    # Content change drives link change: weeks with a content update have more new links (coupling 1),
    # and do not when the coupling is 0. Claimed by the difference's 95% interval over weeks x pages.
    def update_effect(coupling):
        t = _weekly_new_links(generate_snapshots(content_link_coupling=coupling, **kw))
        a, b = t[t.content_changed].nnl, t[~t.content_changed].nnl
        d, se = a.mean() - b.mean(), np.hypot(a.std() / np.sqrt(len(a)), b.std() / np.sqrt(len(b)))
        return d / b.mean(), d - 2 * se, d + 2 * se

    ratio, low, _ = update_effect(1.0)
    assert low > 0 and ratio > 0.3
    _, low0, high0 = update_effect(0.0)
    assert low0 <= 0 <= high0  # no coupling: updates say nothing about links
    # Related pages change together: with co_change 1 a page's weekly counts follow its topic's more
    # closely than with co_change 0 (correlation of week-to-week changes within a topic).
    def within_topic_corr(c):
        snaps = generate_snapshots(co_change=c, content_link_coupling=0.0, rate_drift=0.0, **kw)
        t = _weekly_new_links(snaps)
        wide = t.pivot(index="url", columns="period", values="nnl")
        logs = np.log1p(wide.to_numpy(float))
        change = np.diff(logs, axis=1)
        topic = snaps.drop_duplicates("url").set_index("url").loc[wide.index, "text"].str.extract(r"t(\d+)w")[0].to_numpy()
        corr = []
        for k in np.unique(topic):
            x = change[topic == k]
            x = x[x.std(axis=1) > 0]
            if len(x) > 2:
                c_ = np.corrcoef(x)
                corr.append(c_[np.triu_indices(len(x), 1)].mean())
        return float(np.mean(corr))

    assert within_topic_corr(1.0) > within_topic_corr(0.0) + 0.1
    with pytest.raises(ValueError, match="co_change"):
        generate_snapshots(co_change=1.5, **kw)


def test_spearman_uses_average_ranks():
    truth = np.array([0, 0, 0, 1, 2])
    assert spearman(truth, truth) == pytest.approx(1.0)
    # average ranks [2,2,2,4,5] vs [1.5,1.5,3.5,3.5,5]: Pearson = 7 / sqrt(8 * 9)
    assert spearman(truth, np.array([0, 0, 1, 1, 2])) == pytest.approx(7 / np.sqrt(72))
    assert spearman(truth, np.zeros(5)) == 0.0


def test_precision_at_k_percent():
    truth = np.arange(100.0)
    same = precision_at_k_curve(truth, truth)
    assert np.all(same == 1.0) and curve_area(same) == pytest.approx(1.0)
    reverse = precision_at_k_curve(truth, -truth)
    assert reverse[49] == 0.0 and reverse[99] == 1.0  # top half vs bottom half; everything at 100%
    # for k > 50%: (2k - 1)/k, whose integral from 1/2 to 1 is 1 - ln 2
    assert curve_area(reverse) == pytest.approx(1 - np.log(2), abs=0.005)
    # All-tied predictions are a random ranking: the curve is k% on average.
    rnd = precision_at_k_curve(truth, np.zeros(100), draws=5)
    assert 0.3 < rnd[49] < 0.7
    assert evaluate(truth, truth)["pk_area"] == pytest.approx(1.0)


def test_models_registry_and_baselines(tmp_path):
    assert {"ET-REG", "ET-CLF", "ET-PROB", "NGB-POISSON", "NNL-AV", "NNL-PR", "CCR"} == set(ESTIMATORS.names())
    specs = model_specs()
    assert {"NNL-ET_LBLA", "LCR-ET", "PNL-ET", "NNL-NGB", "NNL-Av", "NNL-Pr", "CCR"} <= set(specs)
    rng = np.random.default_rng(0)
    h = 2
    cols = {c for cols in feature_groups(h).values() for c in cols}
    frame = pd.DataFrame({c: rng.random(300) for c in cols})
    frame["nnl_int"] = rng.poisson(3 * frame["nnl_int_av"])
    frame["nl_int"] = (frame["nnl_int"] > 0).astype(float)
    pr = train(specs["NNL-Pr"], frame, "int", h)
    assert np.array_equal(pr.predict(frame), frame["nnl_int_lag1"].to_numpy())
    ngb = train(specs["NNL-NGB_LBLA"], frame, "int", h, n_estimators=30)
    mu = ngb.predict(frame[specs["NNL-NGB_LBLA"].columns("int", h)])
    assert np.all(mu > 0) and spearman(frame["nnl_int"], mu) > 0.3
    pnl = train(specs["PNL-ET"], frame, "int", h, n_estimators=20)
    p = pnl.predict(frame[specs["PNL-ET"].columns("int", h)])
    assert p.min() >= 0 and p.max() <= 1 and len(np.unique(p)) > 2


def test_store_promotes_only_when_not_worse(tmp_path):
    store = ModelStore(tmp_path, metric="pk_area")

    def version(area):
        return ModelVersion(name="NNL-ET_LBLA/int", version=0, metrics={"pk_area": area}, data_version=3,
                            eval_period=9)

    v1 = store.register(version(0.60), {"m": 1})
    assert store.promote_if_not_worse(v1)[0] and store.champion("NNL-ET_LBLA/int").version == 1
    v2 = store.register(version(0.55), {"m": 2})
    ok, why = store.promote_if_not_worse(v2)
    assert not ok and "0.5500 < current v1" in why and store.champion("NNL-ET_LBLA/int").version == 1
    v3 = store.register(version(0.60), {"m": 3})
    assert store.promote_if_not_worse(v3)[0]
    meta, model = store.load("NNL-ET_LBLA/int")
    assert (meta.version, model, meta.data_version) == (3, {"m": 3}, 3)
    with pytest.raises(LookupError):
        store.load("nothing")


def test_promote_latest_says_what_it_did(tmp_path):
    store = ModelStore(tmp_path, metric="pk_area")
    for area in (0.60, 0.55):
        store.register(ModelVersion(name="NNL-ET_LBLA/int", version=0, metrics={"pk_area": area}, data_version=1,
                                    eval_period=9), {"m": area})
    store.promote_if_not_worse(store.versions("NNL-ET_LBLA/int")[0])
    store.register(ModelVersion(name="NNL-ET_LBLA/ext", version=0, metrics={"pk_area": 0.4}, data_version=1,
                                eval_period=9), {"m": 0})
    kept, first = promote_latest(store, ["NNL-ET_LBLA"])
    assert (kept.model, kept.version, kept.promoted) == ("NNL-ET_LBLA/int", 2, False)
    assert (first.model, first.version, first.promoted, first.reason) == ("NNL-ET_LBLA/ext", 1, True,
                                                                         "no current model")
    assert str(kept) == "NNL-ET_LBLA/int: v2 kept champion: pk_area 0.5500 < current v1 0.6000"
    assert str(first) == "NNL-ET_LBLA/ext: v1 promoted: no current model"
    with pytest.raises(LookupError):
        promote_latest(store, ["NNL-NGB"])


def test_a_refit_per_run_model_keeps_its_newest_versions_and_the_champion(tmp_path, monkeypatch):
    import focuscrawl.outlinks.store as store_module

    monkeypatch.setattr(store_module, "KEEP_REFITS", 3)
    store = ModelStore(tmp_path)

    def refit(n):
        meta = store.register(ModelVersion(name="estimates", version=0, metrics={}, data_version=0, eval_period=0),
                              {"fit": n})
        store.promote_newest(meta, store.champion("estimates"))
        return meta

    for n in range(1, 6):
        refit(n)
    assert [v.version for v in store.versions("estimates")] == [3, 4, 5]
    assert store.load("estimates")[1] == {"fit": 5}
    # A rolled-back champion older than the newest kept stays, whatever the count.
    store.make_champion(store.versions("estimates")[0])
    assert store.prune("estimates", 1) == [4]
    assert [v.version for v in store.versions("estimates")] == [3, 5]
    assert store.rolled_back("estimates").version == 3
    assert store.register(ModelVersion(name="estimates", version=0, metrics={}, data_version=0, eval_period=0),
                          {}).version == 6


def test_the_loop_and_the_registry_each_write_only_their_own_fields_of_a_version(tmp_path):
    # The registry's task reads a version while the loop has stored but not yet judged it, and records it
    # seconds later: its write must not undo the promotion, nor a later judgement undo its registry version.
    store = ModelStore(tmp_path)
    stored = store.register(ModelVersion(name="estimates", version=0, metrics={}, data_version=0, eval_period=0), {})
    seen_by_registry = store.versions("estimates")[0]
    store.promote_newest(stored, None)
    seen_by_registry.registry_version = 7
    store.save(seen_by_registry, ("registry_version",))
    (meta,) = store.versions("estimates")
    assert (meta.promoted, meta.considered, meta.registry_version) == (True, True, 7)
    stored.considered = True
    store.save(stored, ("considered",))  # the loop's stale object still says registry_version None
    assert store.versions("estimates")[0].registry_version == 7
    assert store.rolled_back("estimates") is None
    assert sorted(p.name for p in store.folder(meta).iterdir()) == ["meta.json", "model.joblib"]


def test_a_rollback_made_while_a_refit_ran_holds(tmp_path):
    store = ModelStore(tmp_path)

    def stored():
        return store.register(ModelVersion(name="estimates", version=0, metrics={}, data_version=0, eval_period=0), {})

    assert store.promote_newest(stored(), None)[0]
    assert store.promote_newest(stored(), store.champion("estimates"))[0]
    over, running = store.champion("estimates"), stored()  # v3 is fitted over v2 ...
    store.make_champion(store.versions("estimates")[0])  # ... while the operator rolls back to v1
    promoted, why = store.promote_newest(running, over)
    assert not promoted and why == "rolled back to v1 while it was fitted: the rollback holds"
    assert store.champion("estimates").version == 1 and store.rolled_back("estimates").version == 1
