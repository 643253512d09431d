"""Every benchmark runs at toy sizes through the one benchmark command (``python -m bench --smoke``), so none
of them can rot (issue 18, deliverable 5). Nothing here asserts a timing: only that each benchmark
runs, writes its JSON and table with the machine's record, and that the answers it compares agree
(exact methods give recall 1 against FAISS flat, the hand-written search included).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


# `make test` runs the unit tests' smokes at nice 19 beside the integration tests, so they get the CPU those leave:
# in the CI trial of bbb3c51 (a slower 2-core machine) the train smoke, 33 s alone, had not finished after 600 s.
# Their timeouts bound a starved run, not a smoke's speed (bench/ measures that).
STARVED = 1800


def smoke(out: Path, only: str, timeout: float = STARVED) -> dict:
    done = subprocess.run([sys.executable, "-m", "bench", "--smoke", "--only", only, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((out / "bench-smoke.json").read_text())
    table = (out / "bench-smoke.md").read_text()
    assert report["threads"] == {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    assert len(report["commit"]["commit"]) == 40
    assert len(report["machine"]["load_start"]) == 3 and len(report["machine"]["load_end"]) == 3
    for name in only.split(","):
        bench = report["benchmarks"][name]
        assert bench["returncode"] == 0 and bench["rows"], name
        assert len(bench["load_before"]) == 3
        for row in bench["rows"]:
            assert row["rate"] > 0 and math.isfinite(row["rate"]), row
            assert f"| {name} | {row['what']} |" in table
    return report


def rows(report: dict, name: str) -> dict[str, dict]:
    return {r["what"]: r for r in report["benchmarks"][name]["rows"]}


def test_the_benchmark_table_lists_every_benchmark_with_all_three_sizes():
    sys.path.insert(0, str(ROOT))
    from bench.__main__ import BENCHES

    assert set(BENCHES) == {p.name.removesuffix("_bench.py") for p in (ROOT / "bench").glob("*_bench.py")}
    for script, _, modes in BENCHES.values():
        assert set(modes) == {"smoke", "quick", "full"} and (ROOT / "bench" / script).exists()


def test_in_process_benchmarks_smoke(tmp_path):
    report = smoke(tmp_path, "knn,knn_exact,fits,ranking,world,in_process")
    knn = rows(report, "knn")
    # Exact answers agree: ours, the tiles it replaced, sklearn, and FAISS flat as installed (its own
    # process) against FAISS flat on the pinned kernels.
    for what in ("related pages EXACT", "related pages tiled exact (previous EXACT)", "related pages sklearn brute",
                 "related pages faiss_flat (as installed)"):
        assert knn[what]["recall"] > 0.999, what
    assert {w for w in knn if "HNSW" in w} and {w for w in knn if "IVF" in w}
    res = json.loads((tmp_path / "smoke" / "knn.json").read_text())
    if res["openblas_coretype"]:  # a CPU the pin knows: FAISS's own OpenBLAS runs those kernels
        assert any(k.startswith("faiss_cpu.libs/") and v.endswith(res["openblas_coretype"])
                   for k, v in res["in_process"]["blas_kernels"].items()), res["in_process"]["blas_kernels"]
    exact = json.loads((tmp_path / "smoke" / "knn_exact.json").read_text())
    assert [s["n"] for s in exact["sizes"]] == [500, 1500] and len(exact["commit"]["commit"]) == 40
    for size in exact["sizes"]:
        assert size["EXACT"]["recall"] > 0.999 and size["tiled_exact"]["recall"] > 0.999
        assert size["product_over_fastest"] > 0
    fits = json.loads((tmp_path / "smoke" / "fits.json").read_text())
    assert fits["same_metrics"] and len(fits["metrics"]) == 4 and fits["speedup"] > 0
    ranking = rows(report, "ranking")
    assert set(ranking) == {"ranking updates, BlockFrontier", "ranking updates, PriorityFrontier (previous)",
                            "ranking updates, heapq + dict (baseline)"}
    assert all("peak RSS" in r["note"] for r in ranking.values())
    assert "world static baseline" in rows(report, "world")


def test_hygiene_benchmark_smoke(tmp_path):
    """Both runs spend the same budget on the same messy world with validators; every request is classified
    once; the world's mess shows up in the waste counts; the hygiene turns revisits of unchanged pages into
    304s (before: full bodies whose validators went unused), and the scope's refusals are named."""
    from focuscrawl.fetch.scope import REASONS

    report = smoke(tmp_path, "hygiene")
    res = json.loads((tmp_path / "smoke" / "hygiene.json").read_text())
    assert len(res["commit"]) == 40 and len(res["load_before"]) == 3 and set(res["threads"]) >= {"OMP_NUM_THREADS"}
    assert res["world"]["validators"]["enabled"] and (tmp_path / "smoke" / "hygiene.png").stat().st_size > 0
    before, after = res["runs"]["before"], res["runs"]["after"]
    for run in (before, after):
        # the budget; the revisit that crosses it is the last (with its redirect hops and a soft-404 probe)
        assert 200 <= run["requests"] <= 200 + 6
        c = run["counts"]
        classified = sum(v for k, v in c.items() if k not in ("requests", "http_304"))
        assert classified == run["requests"]
        assert run["wasted"] == sum(run["waste"].values()) and run["useful_pages"] == c["useful"]
    assert all(before["waste"][k] > 0 for k in ("same_page_other_url", "trap_page", "unchanged_body_with_validator"))
    assert before["http_304"] == 0 and before["revisit_bytes_saved_share"] == 0
    assert after["http_304"] > 0 and after["waste"]["unchanged_body_with_validator"] == 0
    assert after["revisit_bytes_saved_share"] > 0.5 and after["wasted_share"] < before["wasted_share"]
    assert before["scope_refused"] == {} and set(after["scope_refused"]) <= set(REASONS)
    assert len(rows(report, "hygiene")) == 2


def test_chooser_benchmark_smoke(tmp_path, shared_data, monkeypatch):
    """Real posts (SDCNL): the incremental HCP scores are the re-vectorising baseline's, in the same run."""
    monkeypatch.setenv("FOCUSCRAWL_DATA", str(shared_data))
    report = smoke(tmp_path, "chooser")
    chooser = json.loads((tmp_path / "smoke" / "chooser.json").read_text())
    assert chooser["max_score_difference"] < 1e-9 and chooser["revectorised"] == 0
    assert {r["scorer"] for r in chooser["rows"]} == {"incremental", "re-vectorising (baseline)"}
    assert len(rows(report, "chooser")) == 3


@pytest.mark.standalone
@pytest.mark.timeout(2700)
def test_related_pages_through_spark_submit_and_spark_lsh_smoke(tmp_path):
    """The knn benchmark's Spark parts: the job via spark-submit (HNSW; EXACT through the job is
    tests/outlinks/test_spark_jobs.py's) and Spark ML's LSH: two Spark sessions, minutes under load."""
    out = tmp_path / "knn.json"
    done = subprocess.run([sys.executable, "bench/knn_bench.py", "--n", "300", "--data", "synthetic",
                           "--spark-n", "100", "--ef-search", "32", "--probes", "8", "--job", "HNSW:300",
                           "--job-threads", "1", "--recall-sample", "50", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=2400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    res = json.loads(out.read_text())
    (job,) = res["spark_jobs"]
    assert job["method"] == "HNSW" and job["recall_sample"] == 50
    assert job["recall"] > 0.9  # 300 easy clustered vectors: HNSW finds nearly all 30 neighbours
    assert 0 <= res["in_process"]["spark_brp_lsh"]["recall"] <= 1.0


@pytest.mark.integration
@pytest.mark.timeout(1200)
def test_ingest_benchmark_smoke(tmp_path, kafka_broker):
    report = smoke(tmp_path, "ingest", timeout=900)
    ingest = rows(report, "ingest")
    assert {"raw Kafka produce (baseline)", "raw Kafka consume (baseline)", "ingest crawler -> Kafka -> Delta",
            "ingest paced 1,000 records/s -> Kafka -> Delta"} <= set(ingest)
    paced = json.loads((tmp_path / "smoke" / "ingest.json").read_text())["paced"]
    assert paced["rows"] == paced["records"]  # every paced record landed, once


@pytest.mark.integration
@pytest.mark.timeout(1200)
def test_latency_benchmark_smoke(tmp_path, kafka_broker):
    """World, explorer, broker and chooser for a few seconds: posts the world listed reach the chooser's
    changelog, and each latency is its listing-to-fetch plus its fetch-to-rank part."""
    report = smoke(tmp_path, "latency", timeout=900)
    assert "evidence latency, posts listed -> author re-ranked (HAS)" in rows(report, "latency")
    posts = json.loads((tmp_path / "smoke" / "latency.json").read_text())["posts"]
    assert 0 < posts["ranked"] <= posts["fetched"] <= posts["listed"]
    split = posts["listing_to_fetch_s"]["mean"] + posts["fetch_to_rank_s"]["mean"]
    assert abs(posts["latency_s"]["mean"] - split) < 0.01


def test_training_benchmark_smoke(tmp_path):
    """The train benchmark's comparison: each model on every training row and on the knob's sample,
    held out on a period neither trained on."""
    report = smoke(tmp_path, "train")
    res = json.loads((tmp_path / "smoke" / "train.json").read_text())
    compare = res["compare"]
    assert compare["eval_period"] not in compare["train_periods"]
    fits = {(f["model"], f["fit"]) for f in compare["fits"]}
    assert fits == {(f"{m}/{s}", fit) for m in ("NNL-ET_LBLA", "NNL-NGB") for s in ("int", "ext")
                    for fit in ("full", "same fraction")}
    assert all("spearman_loss" in f for f in compare["fits"] if f["fit"] != "full")
    assert len(rows(report, "train")) == 8


@pytest.mark.standalone
@pytest.mark.timeout(2700)
def test_training_and_embedding_jobs_through_spark_submit_smoke(tmp_path):
    """The train benchmark's two jobs via spark-submit on a scratch lake: two Spark sessions, minutes under load."""
    out = tmp_path / "train.json"
    done = subprocess.run([sys.executable, "bench/train_bench.py", "--pages", "300", "--periods", "8",
                           "--train-sample", "400", "--compare-pages", "0", "--embed-pages", "200", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=2400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    res = json.loads(out.read_text())
    job = res["train_job"]
    assert job["train_rows"] == 300 * 2 and job["train_sample"] == 400
    assert len(job["models_trained"]) == 4 and job["job_cpu_seconds"] > 0
    assert res["embed_job"]["pages"] == 200
