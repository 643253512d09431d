"""``focuscrawl report harvest [--out DIR] [--bin 10min]``: per loop, pages fetched, relevant pages fetched and the harvest ratio over time.

The series is :func:`focuscrawl.relevance.harvest.harvest_series` of what the live loops landed in Delta
(which table each loop's items come from, and when an item is relevant, is said there). Writes
``harvest.csv`` (the series) and ``harvest.png`` (harvest ratio per bin, and cumulative, per loop).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from focuscrawl.relevance.harvest import harvest_series, read_items


def plot_harvest(series: pd.DataFrame, path: Path) -> None:
    """Harvest ratio per bin (markers) and cumulative (line) of every loop, over wall time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for i, (loop, part) in enumerate(series.groupby("loop", sort=True)):
        colour = f"C{i}"
        ax.plot(part.bin_start, part.cumulative_harvest, "-", marker="s", markersize=2, color=colour,
                label=f"{loop}: {int(part.cumulative_relevant.iloc[-1])}/{int(part.cumulative_fetched.iloc[-1])}")
        ax.plot(part.bin_start, part.harvest, "o", color=colour, markersize=3, alpha=0.6)
    ax.set(xlabel="time (UTC)", ylabel="harvest ratio (relevant / fetched)", ylim=(0, 1.02),
           title="Harvest per loop: per time bin (dots) and cumulative (lines)")
    if len(series):
        ax.legend(fontsize=8, title="loop: relevant/fetched", title_fontsize=8)
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.config import settings
    from focuscrawl.core.commandline import parser

    ap = parser("focuscrawl report harvest", __doc__, "focuscrawl report harvest",
                "focuscrawl report harvest --bin 1h --threshold 0.6 --out /tmp/harvest")
    ap.add_argument("--out", type=Path, default=None, help="folder for harvest.csv and harvest.png "
                                                           "(default: $FOCUSCRAWL_VAR/reports/harvest)")
    ap.add_argument("--bin", default="10min", help="time bin of the series (a pandas frequency: 1min, 1h, 1D)")
    ap.add_argument("--threshold", type=float, default=0.5,
                    help="a page at or above this relevance is relevant (the project's [profile.pages] threshold)")
    args = ap.parse_args(argv)
    if not 0 < args.threshold < 1:
        ap.error(f"--threshold {args.threshold:g}: give the page focus's threshold, between 0 and 1 (e.g. 0.5)")
    try:
        pd.tseries.frequencies.to_offset(args.bin)
    except ValueError:
        ap.error(f"--bin {args.bin!r} is not a pandas frequency; e.g. 10min, 1h or 1D")
    cfg = settings()
    out = args.out or Path(cfg.var_dir) / "reports" / "harvest"
    out.mkdir(parents=True, exist_ok=True)
    series = harvest_series(read_items(cfg, args.threshold), args.bin)
    series.to_csv(out / "harvest.csv", index=False)
    plot_harvest(series, out / "harvest.png")
    totals = series.groupby("loop")[["fetched", "relevant"]].sum() if len(series) else None
    for loop, row in ([] if totals is None else totals.iterrows()):
        print(f"harvest {loop}: {row.relevant}/{row.fetched} = {row.relevant / row.fetched:.3f}")
    print(f"harvest: {out / 'harvest.csv'}, {out / 'harvest.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
