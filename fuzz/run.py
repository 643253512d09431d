"""Coverage-guided fuzzing (atheris, libFuzzer) of the parsers and the URL guard.

    python fuzz/run.py                      every target, 100,000 inputs each (``make fuzz``)
    python fuzz/run.py robots --runs 2000   one target, a short run
    python fuzz/run.py --seconds 5          every target for about 5 s each (what ``make test`` runs)

Each target runs in its own process (libFuzzer owns the process), seeded with the real files of
``../shared/data/crawler-commons`` where there are some. A crash (an exception escaping a target)
is written by libFuzzer under ``tests/fuzz/regressions/<target>/``, where the regression test
replays it. The summary (inputs, seconds, coverage, crashes per target) is printed and written to
``--summary`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REGRESSIONS = ROOT / "tests" / "fuzz" / "regressions"
sys.path.insert(0, str(ROOT))


def fuzz_one(target: str, argv: list[str]) -> None:
    """In this process: instrument focuscrawl, then hand over to libFuzzer (does not return)."""
    import atheris

    with atheris.instrument_imports(include=["focuscrawl"]):
        import focuscrawl.fetch.guard  # noqa: F401 - instrumented before the target imports it
        import focuscrawl.parse.feed  # noqa: F401
        import focuscrawl.parse.html  # noqa: F401
        import focuscrawl.parse.listing  # noqa: F401
        import focuscrawl.parse.robots  # noqa: F401
        import focuscrawl.parse.sitemap  # noqa: F401
    from fuzz.targets import TARGETS

    atheris.Setup([sys.argv[0], *argv], TARGETS[target])
    atheris.Fuzz()


def seed_corpus(target: str, work: Path) -> list[str]:
    from focuscrawl.config import settings
    from fuzz.targets import SEED_DIRS

    corpus = work / target
    corpus.mkdir(parents=True, exist_ok=True)
    data = settings().data_dir
    for rel in SEED_DIRS.get(target, []) if data else []:
        for f in sorted((Path(data) / rel).glob("*")):
            if f.is_file() and f.stat().st_size < 200_000:
                (corpus / f.name).write_bytes(f.read_bytes())
    saved = REGRESSIONS / target
    return [str(corpus)] + ([str(saved)] if saved.is_dir() and any(saved.iterdir()) else [])


def run_target(target: str, runs: int | None, seconds: float | None, work: Path) -> dict:
    crashes = REGRESSIONS / target
    crashes.mkdir(parents=True, exist_ok=True)
    before = set(crashes.iterdir())
    flags = [f"-artifact_prefix={crashes}/", "-max_len=8192", "-rss_limit_mb=2048", "-print_final_stats=1"]
    flags += [f"-runs={runs}"] if runs else []
    flags += [f"-max_total_time={max(1, int(seconds))}"] if seconds else []
    cmd = [sys.executable, __file__, "--child", target, *flags, *seed_corpus(target, work)]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    elapsed = time.monotonic() - started
    out = proc.stderr + proc.stdout
    done = re.findall(r"Done (\d+) runs in (\d+) second", out)
    execs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", out)
    cov = re.findall(r"cov: (\d+)", out)
    new = sorted(str(p.relative_to(ROOT)) for p in set(crashes.iterdir()) - before)
    return {"target": target, "inputs": int(execs[-1]) if execs else (int(done[-1][0]) if done else 0),
            "seconds": round(elapsed, 1), "coverage": int(cov[-1]) if cov else None,
            "exit": proc.returncode, "new_crashes": new, "tail": out.strip().splitlines()[-8:] if proc.returncode else []}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--child":
        fuzz_one(argv[1], argv[2:])
        return 0
    from fuzz.targets import TARGETS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", choices=[[], *TARGETS], help=f"default: all of {', '.join(TARGETS)}")
    ap.add_argument("--runs", type=int, help="inputs per target (default 100000 unless --seconds)")
    ap.add_argument("--seconds", type=float, help="time per target instead of a count")
    ap.add_argument("--summary", type=Path, help="write the summary as JSON here")
    from focuscrawl.experiments.run_record import add_draft_argument, git_commit, refuse_unpublishable

    add_draft_argument(ap)
    args = ap.parse_args(argv)
    code = git_commit(ROOT)
    if args.summary:  # under bench/results the summary is published: from a clean tree only
        refuse_unpublishable(args.summary.parent, code, args.draft, "--summary")
    runs = args.runs or (None if args.seconds else 100_000)
    started, load_before = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), [round(v, 2) for v in os.getloadavg()]
    results = []
    with tempfile.TemporaryDirectory(prefix="focuscrawl-fuzz-") as tmp:
        for target in args.targets or list(TARGETS):
            r = run_target(target, runs, args.seconds, Path(tmp))
            results.append(r)
            print(f"{target:10} {r['inputs']:>9,} inputs  {r['seconds']:>7.1f} s  cov {r['coverage']}  "
                  f"crashes {len(r['new_crashes'])}  exit {r['exit']}", flush=True)
            for line in r["tail"]:
                print("    " + line)
    if args.summary:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        machine = {"cpus": os.cpu_count(), "load_before": load_before,
                   "load_after": [round(v, 2) for v in os.getloadavg()]}
        args.summary.write_text(json.dumps({"runs_per_target": runs, "seconds_per_target": args.seconds,
                                            "started": started, "code": code, "draft": args.draft,
                                            "machine": machine, "results": results}, indent=2) + "\n")
    return 1 if any(r["new_crashes"] or r["exit"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
