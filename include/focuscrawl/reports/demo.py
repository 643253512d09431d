"""``focuscrawl report demo``: the demo's one-page HTML report (issue 9, point 5).

    focuscrawl report demo [--out DIR] [--only fue,outlinks] [--rebuild]

One section per seed, each written by its own experiment with the demo's quick settings
(:data:`SECTIONS`), then one self-contained ``report.html`` (figures embedded as base64 PNG):

- harvest ratio per method over time, its ratio to RND and users per hour (seed 000, Figures
  2-4); the ratio is add-one smoothed (:func:`focuscrawl.fue.report.smoothed_ratio`), as in a
  short run RND often finds no relevant user yet;
- Precision@k% of the outlink models (seed 002, Section 7, Figure 15);
- dynamic quality Q_T(t) of the schedulers (seed 001, Section 2);
- NRMSE of the content estimators per sampler (seed 003, experiments);
- the thin loop's numbers when ``focuscrawl demo`` ran it (``loop.json``), and the commands that
  open the Airflow UI and query the Delta tables.

A missing figure or table is named in the page as missing, never left as an empty panel.
``--rebuild`` only rewrites the HTML from the folders already there.
"""

from __future__ import annotations

import argparse
import base64
import html
import importlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from focuscrawl.config import Settings, settings

@dataclass(frozen=True)
class Section:
    """One experiment of the report: how the demo runs it, and what of its output the page shows."""

    name: str                       # folder under the report's folder
    title: str
    seed: str                       # the seed file and section it reproduces
    module: str                     # its ``main(argv)`` writes the folder
    output_flag: str
    quick: tuple[str, ...]          # the demo's settings: minutes on 2 cores, every plot still meaningful
    figures: tuple[str, ...]        # PNG names or globs in the folder
    tables: tuple[str, ...]         # CSV names or globs in the folder
    caption: str

    def command(self, out: Path) -> list[str]:
        return [*self.quick, self.output_flag, str(out / self.name)]


SECTIONS = (
    Section("fue", "Focused user extraction: harvest ratio per method over time",
            "000_c12b299f5bad9cdf.txt, sections IV-V, Figures 2-4", "focuscrawl.experiments.fue", "--output",
            ("--methods", "RND,HCP,LCP,HAC,N06", "--duration", "4h", "--step", "10m"),
            ("harvest_ratio.png",), ("fue_table.csv",),
            "Every method extracts users in full from the same world with the same request budget; harvest "
            "ratio = relevant users / users extracted (reference classifier on the whole history)."),
    Section("outlinks", "Look back, look around: Precision@k% of the outlink models",
            "002_f70440d1db7174f2.txt, Section 7, Figures 14-15", "focuscrawl.reports.outlinks", "--out",
            ("--pages", "800", "--periods", "8", "--n-estimators", "40"),
            ("precision_at_k.png",), ("pk_area.csv",),
            "Pages ranked by predicted new outlinks (NNL) on the held-out period of synthetic weekly snapshots; "
            "area under the curve in brackets, random = 0.5."),
    Section("ephemeral", "Timely crawling of ephemeral content: dynamic quality of the schedulers",
            "001_c276720796c36144.txt, section 2 (Q_T(t)) and 3", "focuscrawl.experiments.ephemeral", "--output",
            ("--days", "2"), ("dynamic_quality.png",), ("overall_quality.csv",),
            "Profit (clicks) per second over a trailing window T of every scheduler with the same fetch budget; "
            "the table's overall quality leaves out the first (learning) day."),
    Section("graph-estimation", "Content over large graphs: estimator errors (NRMSE)",
            "003_3ce707ea6f24f484.txt, experiments (UNI, RW, MHRW, FS x NAIVE, MLE, SCE, WCE)",
            "focuscrawl.experiments.graph_estimation", "--output",
            ("--runs", "3", "--fractions", "0.02,0.05,0.1"), ("nrmse_*.png",), ("table_*.csv",),
            "NRMSE of the copy-count (omega) and label distributions estimated from a crawled fraction of the "
            "vertices, per sampler; the table is at 10% of the vertices."),
)
SECTION_NAMES = tuple(s.name for s in SECTIONS)


def parse_sections(spec: str) -> list[str]:
    """``"fue, outlinks"`` -> ``["fue", "outlinks"]``, failing on unknown names with the known ones."""
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = sorted(set(names) - set(SECTION_NAMES))
    if unknown:
        raise ValueError(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTION_NAMES)}")
    return names


def run_sections(out: Path, names: list[str], argv: dict[str, list[str]] | None = None, log=print) -> None:
    """Run each named section's experiment into ``out/<name>`` (``argv`` overrides its quick settings)."""
    for section in (s for s in SECTIONS if s.name in names):
        target = out / section.name
        target.mkdir(parents=True, exist_ok=True)
        args = [*argv[section.name], section.output_flag, str(target)] if argv and section.name in argv \
            else section.command(out)
        log(f"{section.name}: {section.module} {' '.join(args)}")
        started = time.monotonic()
        code = importlib.import_module(section.module).main(args)
        if code:
            raise RuntimeError(f"{section.name} exited {code}; its output so far is in {target}")
        log(f"{section.name}: done in {time.monotonic() - started:.0f}s")


# -- the page ------------------------------------------------------------------------------


def _png(path: Path, caption: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return (f"<figure><img alt='{html.escape(path.name)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _table(frame: pd.DataFrame, caption: str) -> str:
    body = frame.to_html(index=False, border=0, float_format=lambda v: f"{v:.4g}", na_rep="")
    return f"<p class='cap'>{html.escape(caption)}</p>{body}"


def _missing(what: str, fix: str) -> str:
    return f"<p class='missing'>missing: {html.escape(what)} ({html.escape(fix)})</p>"


def _matches(folder: Path, patterns: tuple[str, ...]) -> list[tuple[str, list[Path]]]:
    return [(p, sorted(folder.glob(p))) for p in patterns]


def section_html(section: Section, folder: Path) -> str:
    rerun = f"focuscrawl report demo --only {section.name}"
    parts = [f"<h2 id='{section.name}'>{html.escape(section.title)}</h2>",
             f"<p class='seed'>Seed {html.escape(section.seed)}. {html.escape(section.caption)}</p>"]
    if not folder.is_dir():
        return "".join(parts) + _missing(f"{section.name} was not run", rerun)
    for pattern, paths in _matches(folder, section.figures):
        parts += [_png(p, f"{section.name}/{p.name}") for p in paths] or [_missing(f"figure {pattern}", rerun)]
    for pattern, paths in _matches(folder, section.tables):
        parts += [_table(pd.read_csv(p), f"{section.name}/{p.name}") for p in paths] or \
                 [_missing(f"table {pattern}", rerun)]
    return "".join(parts)


def loop_html(loop: dict | None) -> str:
    head = "<h2 id='loop'>The thin loop: crawler -> Kafka -> Delta -> Airflow/Spark -> priorities -> crawler</h2>"
    if not loop:
        return head + "<p>Not run here: <code>make demo</code> (<code>focuscrawl demo</code>) runs it against the services.</p>"
    if "failed" in loop:
        return head + f"<p class='missing'>failed: {html.escape(loop['failed'])}</p>"
    scalars = {k: v for k, v in loop.items() if not isinstance(v, list)}
    parts = [head, _table(pd.DataFrame({"what": list(scalars), "value": [str(v) for v in scalars.values()]}),
                          "one bounded crawl, one thin_loop DAG run, the running crawler's pick before and after the push")]
    parts += [_table(pd.DataFrame(v), k) for k, v in loop.items() if isinstance(v, list) and v]
    return "".join(parts)


def next_steps(cfg: Settings) -> str:
    """The commands that open the UI and query the tables (in the page and printed by the demo)."""
    db = cfg.catalog_db
    return f"""# the Airflow UI (DAGs, runs, task logs, data-quality results)
.venv/bin/focuscrawl services up
#   then open {cfg.airflow_url}  (user {cfg.airflow_user}; password in {cfg.var_dir}/airflow/passwords.json)

# Spark SQL over the Delta tables ({cfg.lake})
.venv/bin/focuscrawl sql "SHOW TABLES IN {db}"
.venv/bin/focuscrawl sql "SELECT author, priority FROM {db}.user_priorities ORDER BY priority DESC LIMIT 10"
.venv/bin/focuscrawl sql "SELECT method, CAST(floor(sim_time / 3600) AS INT) AS hour, count(*) AS extracted,
    round(avg(CAST(relevant AS INT)), 3) AS harvest_ratio FROM {db}.fue_extractions GROUP BY 1, 2 ORDER BY 1, 2"
.venv/bin/focuscrawl sql            # interactive prompt (more example queries in README.md)

# rebuild this page, or rerun one section with the demo's quick settings
.venv/bin/focuscrawl report demo --rebuild
.venv/bin/focuscrawl report demo --only fue

.venv/bin/focuscrawl services down  # stop everything"""


STYLE = ("body{font-family:sans-serif;max-width:1150px;margin:2em auto;color:#222}img{max-width:100%}"
         "figure{margin:1em 0}figcaption,.cap{color:#666;font-size:90%}.seed{color:#444}"
         "table{border-collapse:collapse;font-size:85%;margin-bottom:1em}td,th{padding:2px 8px;border-bottom:1px solid #ddd}"
         "pre{background:#f4f4f4;padding:1em;overflow:auto}.missing{color:#a00;font-weight:bold}")


def write_html(out: Path, cfg: Settings | None = None) -> Path:
    """``out/report.html`` from ``out/loop.json`` and the section folders under ``out``."""
    cfg = cfg or settings()
    loop_file = out / "loop.json"
    loop = json.loads(loop_file.read_text()) if loop_file.exists() else None
    links = " · ".join(f"<a href='#{s.name}'>{html.escape(s.name)}</a>" for s in SECTIONS)
    parts = ["<!doctype html><meta charset='utf-8'><title>focuscrawl demo report</title>",
             f"<style>{STYLE}</style><h1>focuscrawl demo report</h1>",
             f"<p>Written {time.strftime('%Y-%m-%d %H:%M:%S %Z')} from {html.escape(str(out))}. "
             f"<a href='#loop'>loop</a> · {links} · <a href='#where'>where to look next</a></p>",
             loop_html(loop), *(section_html(s, out / s.name) for s in SECTIONS),
             f"<h2 id='where'>Where to look next</h2><pre>{html.escape(next_steps(cfg))}</pre>"]
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.html"
    path.write_text("\n".join(parts))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="focuscrawl report demo", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="report folder (default: $FOCUSCRAWL_VAR/demo)")
    ap.add_argument("--only", default=",".join(SECTION_NAMES),
                    help=f"comma-separated sections to (re)run, of {','.join(SECTION_NAMES)}")
    ap.add_argument("--rebuild", action="store_true", help="run nothing, rewrite report.html from the folders")
    args = ap.parse_args(argv)
    cfg = settings()
    out = args.out or Path(cfg.var_dir) / "demo"
    try:
        names = parse_sections(args.only)
    except ValueError as e:
        ap.error(str(e))
    if not args.rebuild:
        run_sections(out, names)
    print(f"report: {write_html(out, cfg)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
