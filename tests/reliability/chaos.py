"""`make chaos`: an operator's worst afternoon as a repeatable campaign (issue 33, point 6). Not in `make test`.

``focuscrawl up projects/world.toml`` runs as an operator starts it (its own var folder, the supervisor in a
process of its own). Once every process is up, every ``--every`` seconds (30-40 by default) for
``--minutes`` (30) one process or service is SIGKILLed, as the kernel's OOM killer would: every
supervised process of the plan, Kafka, the warm Spark, MLflow, each Airflow component and the world. The victims
are dealt from a shuffled deck of every kind, so each kind is killed before any is killed twice. Then the campaign
settles and checks, from the outside:

- every victim came back by itself (a new pid, up), and how long it took;
- every loop closed again after the last kill (tests/closings.py): a run of its pushing DAG that started after
  the kill succeeded, and its following process applied a push sent after that run started (the graph loop,
  which none follows, closed when the run ended);
- after ``focuscrawl down``: every landed table holds every committed record of its topic once, by Kafka
  offsets (tests/landing_checks.py); no user was extracted twice; ``page_snapshots`` holds each
  ``(url, period)`` once; and no process runs out of the campaign's var folder.

The report (``chaos.json``, ``chaos.md`` and a timeline plot ``chaos.png``) goes to ``--out``
(``bench/results/chaos`` by default: refused from a tree with uncommitted changes unless ``--draft``) with
the commit, cores and load. ``--minutes 5`` is a short campaign for a try; the exit code is 1 when any
check failed.

    make chaos                                    # 30 minutes, then the settle and checks
    python tests/reliability/chaos.py --minutes 5 --out /tmp/chaos --draft
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "include"), str(ROOT), str(ROOT / "tests")]

FOCUSCRAWL = str(Path(sys.executable).with_name("focuscrawl"))  # the venv's command, as an operator runs it
# each service process (its pid file in $FOCUSCRAWL_VAR/run) -> the service the platform's watch restarts
SERVICES = {"kafka": "kafka", "airflow-scheduler": "airflow", "airflow-dag-processor": "airflow",
            "airflow-api-server": "airflow", "airflow-triggerer": "airflow", "world": "world",
            "spark-connect": "spark-connect", "mlflow": "mlflow"}


def say(msg: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Campaign:
    def __init__(self, cfg, project: Path, seed: int) -> None:
        self.cfg, self.project, self.rng = cfg, project, random.Random(seed)
        self.var = Path(cfg.var_dir)
        self.up_proc: subprocess.Popen | None = None
        self.kills: list[dict] = []

    # -- the platform as an operator runs it ---------------------------------------------------

    def focuscrawl(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([FOCUSCRAWL, *args], cwd=ROOT, env=os.environ.copy(),
                              capture_output=True, text=True, **kw)

    def up(self) -> None:
        log = open(self.var / "chaos-up.log", "ab")
        self.up_proc = subprocess.Popen([FOCUSCRAWL, "up", str(self.project)], cwd=ROOT,
                                        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def processes(self) -> dict[str, dict]:
        from focuscrawl.platform.supervisor import read_state

        return {p["name"]: p for p in read_state(self.var).get("processes", [])}

    def service_pid(self, name: str) -> int | None:
        from focuscrawl.services.process import pid_alive, recorded_pid

        pid = recorded_pid(self.var / "run" / f"{name}.pid")
        return pid if pid is not None and pid_alive(pid) else None

    def services_up(self) -> dict[str, bool]:
        from focuscrawl.platform.service_watch import watched

        states = watched(self.var)
        return {name: states.get(service, {}).get("state") == "up" and self.service_pid(name) is not None
                for name, service in SERVICES.items()}

    def all_up(self) -> bool:
        procs = self.processes()
        return bool(procs) and all(p["state"] == "up" and p.get("pid") for p in procs.values()) \
            and all(self.services_up().values())

    def pid_of(self, kind: str) -> int | None:
        return self.service_pid(kind) if kind in SERVICES else self.processes().get(kind, {}).get("pid")

    def back(self, kind: str, old: int) -> bool:
        pid = self.pid_of(kind)
        if pid is None or pid == old:
            return False
        if kind in SERVICES:
            return self.services_up()[kind]
        return self.processes()[kind]["state"] == "up"

    # -- the campaign -----------------------------------------------------------------------------

    def kill(self, kind: str) -> dict:
        pid = self.pid_of(kind)
        at = time.time()
        entry = {"kind": kind, "service": kind in SERVICES, "pid": pid, "at": at, "back_s": None}
        if pid is None:
            entry["skipped"] = "not running at its turn"
            return entry
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            entry["skipped"] = "gone before the kill"
            return entry
        say(f"SIGKILL {kind} (pid {pid})")
        return entry

    def run(self, minutes: float, every: tuple[float, float]) -> float:
        deck: list[str] = []
        pending: list[dict] = []
        end = time.time() + minutes * 60
        last_kill = time.time()
        while time.time() < end:
            if not deck:
                deck = sorted(self.processes()) + list(SERVICES)
                self.rng.shuffle(deck)
            entry = self.kill(deck.pop())
            self.kills.append(entry)
            if "skipped" not in entry:
                pending.append(entry)
                last_kill = entry["at"]
            wait_until = time.time() + self.rng.uniform(*every)
            while time.time() < wait_until:
                for e in list(pending):
                    if self.back(e["kind"], e["pid"]):
                        e["back_s"] = round(time.time() - e["at"], 1)
                        pending.remove(e)
                time.sleep(1.0)
        deadline = time.time() + 600
        while pending and time.time() < deadline:
            for e in list(pending):
                if self.back(e["kind"], e["pid"]):
                    e["back_s"] = round(time.time() - e["at"], 1)
                    pending.remove(e)
            time.sleep(1.0)
        return last_kill

    # -- after down -------------------------------------------------------------------------------

    def landings(self) -> dict[str, dict]:
        from focuscrawl.platform.supervisor import ProcessSpec
        from focuscrawl.core.status_file import read_status
        from landing_checks import landed_exactly_once
        from stream_positions import end_offsets

        specs = [ProcessSpec.from_json(d) for d in read_status(self.var / "platform" / "specs.json").get("specs", [])]
        out = {}
        for s in (s for s in specs if s.kind == "consumer"):
            topic = s.meta["topic"]
            try:
                checked = landed_exactly_once(self.cfg, s.meta, None, below=end_offsets(self.cfg.kafka_bootstrap, topic))
                out[s.meta["sink"]] = {"records_checked": checked, "lost": 0, "doubled": 0, "ok": True}
            except AssertionError as exc:
                out[s.meta["sink"]] = {"ok": False, "error": str(exc)[:300]}
        return out

    def keys_once(self) -> dict[str, dict]:
        from deltalake import DeltaTable

        out = {}
        for table, key in (("fue_extractions", ("method", "user")), ("page_snapshots", ("url", "period"))):
            uri = self.cfg.table_path(table)
            if not DeltaTable.is_deltatable(str(uri)):
                out[table] = {"ok": False, "error": "no table"}
                continue
            rows = DeltaTable(str(uri)).to_pyarrow_table(columns=list(key)).to_pylist()
            keys = [tuple(r[k] for k in key) for r in rows]
            twice = len(keys) - len(set(keys))
            out[table] = {"key": list(key), "rows": len(keys), "twice": twice, "ok": twice == 0 and len(keys) > 0}
        return out


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = report["chaos_started_at"]
    kinds = sorted({k["kind"] for k in report["kills"]})
    fig, ax = plt.subplots(figsize=(11, 0.35 * len(kinds) + 2))
    for k in report["kills"]:
        y = kinds.index(k["kind"])
        x = (k["at"] - t0) / 60
        width = (k["back_s"] or 0) / 60
        ax.barh(y, max(width, 0.05), left=x, color="tab:red" if k["back_s"] is None else "tab:orange", height=0.6)
    for loop, t in report["loops_closed_at"].items():
        if t is not None:
            ax.axvline((t - t0) / 60, ls=":", color="tab:green")
            ax.text((t - t0) / 60, len(kinds) - 0.5, f"{loop} closed", rotation=90, va="top", fontsize=7)
    ax.axvline((report["last_kill_at"] - t0) / 60, color="black", lw=1)
    ax.set_yticks(range(len(kinds)), kinds, fontsize=7)
    ax.set_xlabel("minutes since the first kill (bar: SIGKILL until back up; black: last kill; green: a loop closed)")
    ax.set_title(f"make chaos at {report['commit'][:7]}: {len(report['kills'])} kills, "
                 f"{report['cpus']} cores, load {report['load_before'][0]} at start")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def markdown(r: dict) -> str:
    lines = [f"# make chaos at {r['commit'][:7]}", "",
             f"{r['minutes']} minutes of kills every {r['every'][0]:g}-{r['every'][1]:g} s on {r['cpus']} cores "
             f"(load {r['load_before']} before, {r['load_after']} after); verdict: **{'PASS' if r['ok'] else 'FAIL'}**.", "",
             "| kind | kills | back by itself | time to healthy p50 (s) | max (s) |", "| --- | --- | --- | --- | --- |"]
    for kind, k in sorted(r["by_kind"].items()):
        lines.append(f"| {kind} | {k['kills']} | {k['back']} | {k['p50_s']} | {k['max_s']} |")
    lines += ["", "| loop | closed again after the last kill (s) |", "| --- | --- |"]
    lines += [f"| {loop} | {s if s is not None else 'not within the settle'} |" for loop, s in r["loops_closed_s"].items()]
    lines += ["", "| table | records or rows checked | result |", "| --- | --- | --- |"]
    for table, v in r["landings"].items():
        lines.append(f"| {table} (by offsets) | {v.get('records_checked', '')} | {'0 lost, 0 doubled' if v['ok'] else v['error']} |")
    for table, v in r["keys_once"].items():
        result = "each key once" if v["ok"] else v.get("error") or f"{v['twice']} keys twice"
        lines.append(f"| {table} (by {', '.join(v.get('key', []))}) | {v.get('rows', '')} | {result} |")
    lines += ["", f"Orphan processes after `focuscrawl down`: {len(r['orphans'])}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="how long kills go on")
    ap.add_argument("--every", type=float, nargs=2, default=(30.0, 40.0), metavar=("MIN", "MAX"),
                    help="seconds between two kills, drawn uniformly")
    ap.add_argument("--settle-minutes", type=float, default=25.0,
                    help="how long every loop may take to close again after the last kill")
    ap.add_argument("--project", type=Path, default=ROOT / "projects" / "world.toml")
    ap.add_argument("--seed", type=int, default=0, help="the order of the victims")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "chaos")
    ap.add_argument("--draft", action="store_true", help="allow a tree with uncommitted changes (recorded)")
    args = ap.parse_args(argv)

    from focuscrawl.experiments.run_record import start_run

    code = start_run(args.out, args.draft, out_flag="--out")
    os.environ.setdefault("FOCUSCRAWL_VAR", str(ROOT / "var" / "chaos"))
    var = Path(os.environ["FOCUSCRAWL_VAR"])
    if var.exists():
        subprocess.run([FOCUSCRAWL, "down"], cwd=ROOT, capture_output=True)
        keep = var / "jars"
        for child in var.iterdir():
            if child != keep:
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()
    var.mkdir(parents=True, exist_ok=True)
    from focuscrawl.config import settings
    from focuscrawl.services.airflow import AirflowService
    from focuscrawl.services.manager import our_processes
    from focuscrawl.services.process import wait_until
    from closings import closed_after

    cfg = settings()
    campaign = Campaign(cfg, args.project, args.seed)
    load_before = load()
    say(f"focuscrawl up {args.project.name} out of {var} (load {load_before})")
    campaign.up()
    started = time.time()
    wait_until(campaign.all_up, 1800, "every process and service up after `focuscrawl up`", interval=5.0)
    say(f"everything up in {time.time() - started:.0f} s; kills begin")
    chaos_started = time.time()
    last_kill = campaign.run(args.minutes, tuple(args.every))
    say(f"last kill at +{(last_kill - chaos_started) / 60:.1f} min; settling")
    settled = wait_until(campaign.all_up, 600, "everything up after the last kill", interval=5.0) and time.time()
    client = AirflowService(cfg).client()
    closed: dict[str, float | None] = {loop: None for loop in ("fue", "sources", "revisits", "graph")}
    deadline = last_kill + args.settle_minutes * 60
    while time.time() < deadline and any(v is None for v in closed.values()):
        for loop in (l for l, v in closed.items() if v is None):
            try:
                found = closed_after(cfg, client, loop, last_kill)
                closed[loop] = found and found[0]
            except Exception as exc:  # noqa: BLE001 - a slow API answer under load: asked again
                say(f"{loop}: {exc}")
        time.sleep(15)
    say(f"loops closed after the last kill: { {l: None if t is None else round(t - last_kill) for l, t in closed.items()} }")
    down = campaign.focuscrawl("down", timeout=600)
    if campaign.up_proc is not None:
        try:
            campaign.up_proc.wait(120)
        except subprocess.TimeoutExpired:
            campaign.up_proc.kill()
    orphans = sorted(our_processes(cfg))
    # the landings and keys are read after down: every consumer drained its topic to the end
    from focuscrawl.services.manager import ServiceManager

    broker = ServiceManager(cfg)  # `down` stopped the broker: up again, alone, to read the topics
    broker.up(["kafka"], log=say)
    try:
        landings = campaign.landings()
    finally:
        broker.down(log=say)
    keys_once = campaign.keys_once()
    by_kind = {}
    for k in campaign.kills:
        if "skipped" in k:
            continue
        b = by_kind.setdefault(k["kind"], {"kills": 0, "back": 0, "times": []})
        b["kills"] += 1
        if k["back_s"] is not None:
            b["back"] += 1
            b["times"].append(k["back_s"])
    for b in by_kind.values():
        times = b.pop("times")
        b["p50_s"] = round(statistics.median(times), 1) if times else None
        b["max_s"] = max(times) if times else None
    report = {
        "what": "make chaos: the live platform (focuscrawl up projects/world.toml) under SIGKILLs of every process "
                "and service, then settled and checked (tests/reliability/chaos.py)",
        **code, "draft": args.draft, "cpus": os.cpu_count(), "load_before": load_before, "load_after": load(),
        "minutes": args.minutes, "every": list(args.every), "seed": args.seed,
        "chaos_started_at": chaos_started, "last_kill_at": last_kill, "settled_s": round(settled - last_kill, 1),
        "kills": campaign.kills, "by_kind": by_kind,
        "loops_closed_at": closed,
        "loops_closed_s": {l: None if t is None else round(t - last_kill, 1) for l, t in closed.items()},
        "landings": landings, "keys_once": keys_once, "orphans": orphans, "down_exit": down.returncode,
    }
    report["ok"] = (all(b["back"] == b["kills"] for b in by_kind.values()) and all(v is not None for v in closed.values())
                    and all(v["ok"] for v in {**landings, **keys_once}.values()) and not orphans)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "chaos.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    (args.out / "chaos.md").write_text(markdown(report))
    plot(report, args.out / "chaos.png")
    say(f"{'PASS' if report['ok'] else 'FAIL'}: report in {args.out}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
