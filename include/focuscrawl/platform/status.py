"""``focuscrawl status [--watch] [--json]`` and ``focuscrawl logs NAME``: the running platform at a glance.

Gathers what every part exposes, each on its own, so a part that is down is shown as
"not running" instead of failing the whole view:

- the supervisor's ``state.json``: each process's state, restarts, health and last error lines;
- the services (Kafka, the warm Spark, Airflow and its components, the world): up or down by each one's real
  health probe (``focuscrawl.services.probe``), with the fix where one is down;
- consumer lag per group: Kafka's committed offsets against the end offsets (admin API) and, for
  the landings into Delta, the offsets the table's own commits hold (``focuscrawl.lake.delta_sink``:
  the truth a restarted consumer resumes from);
- the last run of every DAG (Airflow's REST API) and whether it is paused;
- live figures per loop, from the processes' status files (each carries its Prometheus figures,
  ``focuscrawl.stream.metrics``) and the lake: users extracted and harvest (seed 000); source recrawls
  and new pages (seed 001); revisits and new outlinks against predicted (seed 002); graph sample
  size and the latest estimate with its interval (seed 003); and for every loop the harvest: pages
  fetched, pages scored by the page focus, relevant ones, their ratio, and the ratio per recent time
  bin from the lake (``focuscrawl.relevance.harvest``).

Engines are imported inside the calls that need them.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from focuscrawl.platform.supervisor import read_state, supervisor_pid
from focuscrawl.core.status_file import read_status

NOT_RUNNING = "not running"


def guarded(what):
    """``what()``, or ``{"error": ...}`` naming what failed (one part down never hides the others)."""
    try:
        return what()
    except Exception as exc:  # noqa: BLE001 - a status view reports every failure instead of raising
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]}


def processes(cfg) -> dict:
    """The supervisor and its processes, as its last ``state.json`` says; stale when it is gone."""
    doc = read_state(cfg.var_dir)
    pid = supervisor_pid(cfg.var_dir)
    procs = doc.get("processes", [])
    if pid is None:
        for p in procs:
            if p.get("state") not in ("stopped", "exited", "crashloop"):
                p["state"] = f"{p.get('state')} (supervisor gone)" if p.get("state") else NOT_RUNNING
    return {"supervisor": {"running": pid is not None, "pid": pid, **{k: v for k, v in doc.get("supervisor", {}).items()
                                                                      if k not in ("pid", "running")}},
            "processes": procs, "updated_at": doc.get("updated_at")}


def services(cfg) -> dict:
    """Each service up or down by its real health probe (``focuscrawl.services.probe``: Kafka's metadata,
    Airflow's health endpoint with its components' heartbeats, a Spark Connect RPC, the world's HTTP), what
    it answered or why not, the fix where it is down, and what the running platform's watch did about it
    (restarts, the last failed restart's error) where one runs."""
    from focuscrawl.platform.service_watch import watched
    from focuscrawl.services.manager import ServiceManager

    watch = watched(cfg.var_dir)
    out = {}
    for s in ServiceManager(cfg).status():
        if s.name == "spark" and not s.up and not s.ours:
            continue  # the standalone cluster is optional (`services up --spark-cluster`)
        doc = {"up": s.up, "url": s.url, "ours": s.ours,
               **{k: v for k, v in (s.probe.to_dict() if s.probe else {}).items() if k != "up"}}
        if s.name in watch:
            doc["watch"] = watch[s.name]
            if not s.up:
                doc["fix"] = "none needed: the running platform's watch restarts it"
        elif s.fix:
            doc["fix"] = s.fix
        out[s.name] = doc
    return out


def _specs(cfg) -> list[dict]:
    return read_status(Path(cfg.var_dir) / "platform" / "specs.json").get("specs", [])


def status_documents(cfg) -> dict[Path, dict]:
    """Every process's status file (``<var>/status/*.json``) by path, read once per status call."""
    return {path: read_status(path) for path in sorted((Path(cfg.var_dir) / "status").glob("*.json"))}


def steering(cfg, specs: list[dict] | None = None, docs: dict[Path, dict] | None = None) -> dict[str, dict]:
    """Per loop, the control state its running processes report (:mod:`focuscrawl.control`): paused or not,
    the budgets in force (a command's or the project file's). ``specs`` and ``docs`` (:func:`status_documents`):
    what the caller already read, else read here."""
    specs = _specs(cfg) if specs is None else specs
    docs = status_documents(cfg) if docs is None else docs
    out: dict[str, dict] = {}
    for spec in specs:
        path = Path(spec["status_file"]) if spec.get("status_file") else None
        control = ((docs[path] if path in docs else read_status(path)) or {}).get("control") if path else None
        if not control:
            continue
        loop = out.setdefault(control["loop"], {"paused": False, "budgets": {}})
        loop["paused"] = loop["paused"] or bool(control.get("paused"))
        loop["budgets"].update({k: v for k, v in (control.get("budgets") or {}).items() if v is not None})
    return out


def delta_positions(cfg, sink_name: str, group: str, topic: str, partitions) -> dict[int, int | None]:
    """Next offset per partition as the table's own commits record them (``DeltaSink.positions``)."""
    from focuscrawl.lake.delta_sink import DEAD_LETTER_TABLE, DeltaSink
    from focuscrawl.lake import is_table
    from focuscrawl.stream.sinks import sink

    spec = sink(sink_name).table
    uri = spec.path(cfg)
    if not is_table(uri):  # not landed yet (status creates nothing)
        return {p: None for p in partitions}
    return DeltaSink(uri, spec, group, DEAD_LETTER_TABLE.path(cfg)).positions(topic, partitions)


def consumer_lag(cfg, timeout_ms: int = 5000, specs: list[dict] | None = None) -> dict:
    """Per consumer group: per topic, end offsets minus committed offsets (Kafka), and minus the Delta
    table's offsets for the landings the plan declared (``specs``, else read here)."""
    from focuscrawl.services.process import port_open

    host, _, port = cfg.kafka_bootstrap.split(",")[0].rpartition(":")
    if not port_open(host, int(port)):
        return {"error": NOT_RUNNING}
    from kafka import KafkaAdminClient, KafkaConsumer

    admin = KafkaAdminClient(bootstrap_servers=cfg.kafka_bootstrap, request_timeout_ms=timeout_ms,
                             client_id="focuscrawl-status")
    probe = KafkaConsumer(bootstrap_servers=cfg.kafka_bootstrap, request_timeout_ms=max(timeout_ms, 11000),
                          client_id="focuscrawl-status")
    try:
        groups = sorted(g["group_id"] for g in admin.list_groups())
        specs = _specs(cfg) if specs is None else specs
        sinks = {s["meta"]["group"]: s["meta"] for s in specs if s.get("meta", {}).get("group")}
        out = {}
        for group in sorted(set(groups) | set(sinks)):
            committed = admin.list_group_offsets(group).get(group, {}) if group in groups else {}
            topics = {tp.topic for tp in committed}
            if group in sinks:
                topics.add(sinks[group]["topic"])
            rows = {}
            for topic in sorted(topics):
                parts = probe.partitions_for_topic(topic) or set()
                from kafka import TopicPartition

                tps = [TopicPartition(topic, p) for p in sorted(parts)]
                ends = probe.end_offsets(tps) if tps else {}
                kafka_lag = sum(max(0, ends[tp] - (committed[tp].offset if tp in committed and committed[tp].offset >= 0
                                                   else 0)) for tp in tps)
                row = {"end": sum(ends.values()), "lag": kafka_lag}
                if group in sinks and topic == sinks[group]["topic"]:
                    pos = delta_positions(cfg, sinks[group]["sink"], group, topic, sorted(parts))
                    row["table"] = sinks[group]["table"]
                    row["delta_lag"] = sum(max(0, ends[tp] - (pos.get(tp.partition) or 0)) for tp in tps)
                rows[topic] = row
            out[group] = rows
        return out
    finally:
        probe.close()
        admin.close()


def dag_runs(cfg) -> dict:
    """Per focuscrawl DAG: paused or not, and its last run (state, type, when)."""
    from focuscrawl.services.airflow import AirflowService
    from focuscrawl.services.process import port_open

    if not port_open(cfg.bind_host, cfg.airflow_port):
        return {"error": NOT_RUNNING}
    client = AirflowService(cfg).client()
    client.timeout = 15.0
    out = {}
    for dag in sorted(client.dags(), key=lambda d: d["dag_id"]):
        runs = client.dag_runs(dag["dag_id"])
        last = max(runs, key=lambda r: r.get("run_after") or r.get("logical_date") or "", default=None)
        out[dag["dag_id"]] = {
            "paused": dag.get("is_paused"), "runs": len(runs),
            "succeeded": sum(r.get("state") == "success" for r in runs),
            "last": None if last is None else {k: last.get(k) for k in ("state", "run_type", "run_after", "end_date")},
        }
    return out


# -- live figures per loop --------------------------------------------------------------------


def _status_of(docs: dict[Path, dict], name_prefix: str) -> dict:
    """Status documents (:func:`status_documents`) of the processes whose name starts with ``name_prefix``
    (merged, numbers summed)."""
    merged: dict = {}
    for path, doc in sorted(docs.items()):
        if not path.name.startswith(name_prefix):
            continue
        for key, value in {**doc, **{f"m:{k}": v for k, v in (doc.get("metrics") or {}).items()}}.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key in merged:
                merged[key] = merged[key] + value
            else:
                merged.setdefault(key, value)
    return merged


def _first(doc: dict, *keys, default=None):
    for k in keys:
        if doc.get(k) is not None:
            return doc[k]
    return default


def _table(cfg, name: str):
    from focuscrawl.lake import open_table

    return open_table(cfg.table_path(name))


def fue_figures(cfg, project_name: str | None, docs: dict[Path, dict]) -> dict:
    chooser, verdicts = _status_of(docs, "fue-chooser"), _status_of(docs, "consumer-fue_extractions")
    out = {"candidates": _first(chooser, "candidates", "m:candidates"),
           "chosen": chooser.get("chosen"),
           "pushes_applied": _first(chooser, "scores_applied", "m:pushed_scores_applied_total"),
           "top": chooser.get("top")}
    dt = _table(cfg, "fue_extractions")
    if dt is not None:
        filters = [("run_id", "=", project_name)] if project_name else None
        rows = dt.to_pyarrow_table(columns=["relevant"], filters=filters).column("relevant").to_pylist()
        out["extracted"], out["relevant"] = len(rows), sum(bool(r) for r in rows)
    else:
        out["extracted"] = _first(verdicts, "m:extracted_users_total")
        out["relevant"] = _first(verdicts, "m:relevant_users_total")
    if out.get("extracted"):
        out["harvest"] = round(out["relevant"] / out["extracted"], 4)
    return out


HARVEST_BIN = "10min"  # the width of the time bins the harvest over time is shown in
HARVEST_BINS = 6       # the latest bins shown


def harvest_figures(s: dict, fetched) -> dict:
    """A loop's harvest from its processes' metrics (``focuscrawl.stream.metrics``: pages scored by the page
    focus and the relevant ones): fetched, relevant fetched and their ratio among the scored pages."""
    scored, relevant = s.get("m:pages_scored_total"), s.get("m:relevant_pages_total")
    return {"fetched": fetched, "scored": scored, "relevant_fetched": relevant,
            "harvest": round(relevant / scored, 4) if scored else None}


def harvest_over_time(cfg, threshold: float, bin: str = HARVEST_BIN, bins: int = HARVEST_BINS) -> dict[str, dict]:
    """Per loop, the harvest ratio of its latest ``bins`` time bins and since the start, from the lake."""
    from focuscrawl.relevance.harvest import harvest_series, read_items

    series = harvest_series(read_items(cfg, threshold), bin)
    out = {}
    for loop, part in series.groupby("loop"):
        tail = part.tail(bins)
        out[loop] = {"bin": bin, "bins": [[b.isoformat(timespec="minutes"), int(f), int(r)]
                                          for b, f, r in zip(tail.bin_start, tail.fetched, tail.relevant)],
                     "cumulative": float(part.cumulative_harvest.iloc[-1])}
    return out


def sources_figures(cfg, docs: dict[Path, dict]) -> dict:
    s = _status_of(docs, "source-crawler")
    return {"recrawls": s.get("recrawls"), "new_pages": s.get("pages"), "sources": s.get("sources"),
            "errors": s.get("errors"), "schedules_applied": s.get("schedules_applied"),
            **harvest_figures(s, s.get("pages"))}


def revisits_figures(cfg, docs: dict[Path, dict]) -> dict:
    s = _status_of(docs, "revisitor")
    return {"revisits": s.get("revisits"), "known_pages": s.get("known"),
            "new_outlinks": _first(s, "new_outlinks", "m:new_outlinks_total"),
            "predicted_outlinks": _first(s, "predicted_outlinks", "predicted_new_outlinks"),
            "priorities_applied": s.get("priorities_applied"), "next_pick": s.get("next_pick"),
            **harvest_figures(s, s.get("revisits"))}


def graph_figures(cfg, docs: dict[Path, dict]) -> dict:
    s = _status_of(docs, "graph-sampler")
    out = {"sample_size": _first(s, "sample_size", "sampled", "queries"),
           **harvest_figures(s, s.get("m:pages_scored_total"))}
    dt = _table(cfg, "graph_sample")
    if dt is not None:
        out["sample_rows"] = dt.to_pyarrow_dataset().count_rows()
    est = _table(cfg, "graph_estimates")
    if est is not None:
        out["latest"] = _latest_estimates(est)
    return out


def _latest_estimates(dt) -> list[dict]:
    """Rows of the newest file of ``graph_estimates``: per estimator, the value with the largest
    estimated share and its interval; for target ``relevant``, the share of relevant pages ("how much of
    this site is about my topic")."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    actions = pa.table(dt.get_add_actions(flatten=True)).to_pylist()  # deltalake hands an arro3 table
    if not actions:
        return []
    newest = max(actions, key=lambda a: a["modification_time"])
    files = [f for f in dt.file_uris() if f.endswith(newest["path"].split("/")[-1])]
    rows = ds.dataset(files, format="parquet").to_table().to_pylist() if files else []
    best: dict[str, dict] = {}
    for r in rows:
        if r.get("estimate") is None:
            continue
        key = f"{r['estimator']}/{r['target']}"
        if r["target"] == "relevant":
            if r["value"] == "relevant":
                best[key] = r
            continue
        if key not in best or r["estimate"] > best[key]["estimate"]:
            best[key] = r
    return [{k: r.get(k) for k in ("crawl_id", "estimator", "target", "value", "estimate", "ci_low", "ci_high", "level")}
            for _, r in sorted(best.items())]


def page_threshold(project: dict | None) -> float:
    """The relevance at or above which a page is relevant: the project's ``[profile.pages] threshold`` (0.5 without)."""
    focus = ((project or {}).get("profile") or {}).get("pages") or {}
    return float(focus.get("threshold", 0.5))


def loops(cfg, project: dict | None, specs: list[dict], docs: dict[Path, dict]) -> dict:
    """Live figures per enabled loop, from the status files (``docs``) and the lake."""
    enabled = None
    if project:
        enabled = [name for name, loop in (project.get("loops") or {}).items() if loop.get("enabled", True)]
    name = project.get("name") if project else None
    figures = {"fue": lambda: fue_figures(cfg, name, docs), "sources": lambda: sources_figures(cfg, docs),
               "revisits": lambda: revisits_figures(cfg, docs), "graph": lambda: graph_figures(cfg, docs)}
    out = {loop: guarded(f) for loop, f in figures.items() if enabled is None or loop in enabled}
    over_time = guarded(lambda: harvest_over_time(cfg, page_threshold(project)))
    steered = guarded(lambda: steering(cfg, specs, docs))
    for loop, figures_of_loop in out.items():
        if "error" not in figures_of_loop and loop in over_time:
            figures_of_loop["over_time"] = over_time[loop]
        if "error" not in figures_of_loop and loop in steered:
            figures_of_loop["control"] = steered[loop]
    return out


def collect(cfg, *, kafka: bool = True, airflow: bool = True) -> dict:
    """Everything ``focuscrawl status`` shows, as one JSON-ready document."""
    from focuscrawl.orchestration.schedules import active_project

    project = active_project(cfg) or None
    # The plan and every status file, read once for all the parts below.
    specs, docs = _specs(cfg), status_documents(cfg)
    return {
        "project": project.get("name") if project else None,
        "at": time.time(),
        **processes(cfg),
        "services": guarded(lambda: services(cfg)),
        "lag": guarded(lambda: consumer_lag(cfg, specs=specs)) if kafka else {"error": "not asked"},
        "dags": guarded(lambda: dag_runs(cfg)) if airflow else {"error": "not asked"},
        "loops": loops(cfg, project, specs, docs),
    }


# -- rendering --------------------------------------------------------------------------------


def shown(v) -> str:
    """A figure as ``status`` and the focuscrawl view print it: ``-`` for none, four significant digits."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _section(out: list[str], title: str, part: dict) -> dict:
    """Append ``title`` (with the error that kept its figures away, if any); its figures, none after an error."""
    out.append(title + (f": {part['error']}" if "error" in part else ""))
    return {} if "error" in part else part


def _watched(w: dict | None) -> str:
    """What the platform's watch did about a service, in brackets (nothing when it never had to act)."""
    if not w or not (w["restarts"] or w["state"] != "up"):
        return ""
    bits = [f"{w['restarts']} restart{'s' * (w['restarts'] != 1)}"] if w["restarts"] else []
    if w["state"] == "restarting":
        bits.append("restarting now")
    elif w["state"] == "down" and w.get("last_error"):
        bits.append(f"restart failed: {w['last_error']}; retried by the platform")
    return f" ({', '.join(bits)})" if bits else ""


def render(doc: dict, error_lines: int = 3) -> str:
    """The status document as text for a terminal."""
    out = []
    sup = doc.get("supervisor", {})
    head = f"project {doc.get('project') or '(none active)'}"
    if sup.get("running"):
        head += f"  supervisor pid {sup['pid']}"
    else:
        head += f"  supervisor {NOT_RUNNING}" + (f" (`focuscrawl up` with {doc['project']}'s project file starts it "
                                                  "again)" if doc.get("project") else "")
    out.append(head)
    svc = doc.get("services", {})
    if "error" in svc:
        out.append(f"services: {svc['error']}")
    else:
        down = [n for n, s in svc.items() if not s["up"] and "watch" not in s]
        out.append("services: " + ", ".join(f"{n} {'up' if s['up'] else 'down'}{_watched(s.get('watch'))}"
                                            for n, s in svc.items())
                   + (f" (start: `focuscrawl services up --only {','.join(down)}`)" if down else ""))
        for n, s in svc.items():  # what each probe found; the fix where the line above does not name it
            fix = s.get("fix") if s.get("fix") and ("watch" in s or s.get("ours")) else ""
            if s.get("detail") or fix:
                out.append(f"  {n:14} {s.get('detail', '')}" + (f"  fix: {fix}" if fix else ""))
    out.append("")
    procs = doc.get("processes", [])
    if not procs:
        out.append(f"processes: {NOT_RUNNING} (start them with `focuscrawl up`)")
    else:
        out.append(f"{'process':28} {'state':20} {'health':10} {'pid':>7} {'restarts':>8}  last exit")
        for p in procs:
            out.append(f"{p['name']:28} {p['state']:20} {p.get('health', '-'):10} {shown(p.get('pid')):>7} "
                       f"{p.get('restarts', 0):>8}  {shown(p.get('last_exit'))}")
            if p["state"] in ("crashloop", "backoff") and p.get("last_error"):
                for line in p["last_error"][-error_lines:]:
                    out.append(f"    | {line}")
    out.append("")
    for group, topics in _section(out, "consumer lag", doc.get("lag", {})).items():
        for topic, row in topics.items():
            delta = f", Delta {row['table']} behind {row['delta_lag']}" if "table" in row else ""
            out.append(f"  {group:34} {topic:34} lag {row['lag']}{delta}")
    out.append("")
    for dag_id, d in _section(out, "DAGs", doc.get("dags", {})).items():
        last = d.get("last") or {}
        when = last.get("run_after") or "-"
        out.append(f"  {dag_id:24} {'paused' if d.get('paused') else 'active':7} runs {d.get('runs', 0):>3} "
                   f"ok {d.get('succeeded', 0):>3}  last {last.get('state') or 'never'} "
                   f"({last.get('run_type') or '-'}, {when})")
    out.append("")
    for loop, f in doc.get("loops", {}).items():
        if "error" in f:
            out.append(f"loop {loop}: {f['error']}")
            continue
        figures = {k: v for k, v in f.items() if k not in ("top", "latest", "over_time", "control")}
        control = f.get("control") or {}
        out.append(f"loop {loop}: " + ("PAUSED (`focuscrawl resume " + loop + "`), " if control.get("paused") else "")
                   + ", ".join(f"{k.replace('_', ' ')} {shown(v)}" for k, v in {**figures, **control.get("budgets", {})}.items()))
        if f.get("top"):
            out.append("    top: " + ", ".join(str(t[0] if isinstance(t, (list, tuple)) else t) for t in f["top"][:5]))
        if f.get("over_time"):
            t = f["over_time"]
            out.append(f"    harvest per {t['bin']}: " + "  ".join(
                f"{b[0][11:16]} {b[2]}/{b[1]}" + (f"={b[2] / b[1]:.2f}" if b[1] else "") for b in t["bins"])
                + f"  (since the start {t['cumulative']:.3f})")
        for e in f.get("latest") or []:
            out.append(f"    {e['estimator']}/{e['target']} {e['value']}: {shown(e['estimate'])} "
                       f"[{shown(e['ci_low'])}, {shown(e['ci_high'])}] ({e['crawl_id']})")
    return "\n".join(out)


def tail(path: Path, n: int) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-n:] if n > 0 else []
    except OSError:
        return []


def log_file(cfg, name: str) -> Path:
    """The log of process ``name`` (a service's when no platform process has that name)."""
    platform_log = Path(cfg.var_dir) / "logs" / "platform" / f"{name}.log"
    if platform_log.exists():
        return platform_log
    service_log = Path(cfg.var_dir) / "logs" / f"{name}.log"
    return service_log if service_log.exists() else platform_log


def known_logs(cfg) -> list[str]:
    return sorted({p.stem for d in ("logs/platform", "logs") for p in (Path(cfg.var_dir) / d).glob("*.log")})


def follow(path: Path, n: int, write=print, stop=lambda: False, interval: float = 0.5) -> None:
    """``tail -f``: the last ``n`` lines, then what is appended (a log that is re-created is reopened)."""
    for line in tail(path, n):
        write(line)
    pos = path.stat().st_size if path.exists() else 0
    while not stop():
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        if size < pos:
            pos = 0
        if size > pos:
            with path.open("rb") as f:
                f.seek(pos)
                chunk = f.read(size - pos)
            pos = size
            for line in chunk.decode(errors="replace").splitlines():
                write(line)
        time.sleep(interval)


def main_status(args, cfg) -> int:
    while True:
        doc = collect(cfg, kafka=not args.no_kafka, airflow=not args.no_airflow)
        if args.json:
            print(json.dumps(doc, indent=1, default=str))
        else:
            if args.watch:
                sys.stdout.write("\x1b[2J\x1b[H")
            print(render(doc))
        if not args.watch:
            return 0
        time.sleep(args.interval)


def main_logs(args, cfg) -> int:
    path = log_file(cfg, args.name)
    if not path.exists():
        known = ", ".join(known_logs(cfg)) or "none yet"
        print(f"focuscrawl logs: no log for {args.name!r} in {cfg.var_dir}; known: {known}", file=sys.stderr)
        return 2
    if args.follow:
        try:
            follow(path, args.lines)
        except KeyboardInterrupt:
            pass
        return 0
    for line in tail(path, args.lines):
        print(line)
    return 0
