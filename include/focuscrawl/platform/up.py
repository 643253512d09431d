"""``focuscrawl up [PROJECT]`` / ``focuscrawl down``: one project file -> the whole platform, supervised.

docs/running.md and docs/architecture.md ("One running platform"). ``up``, in this order, so a project that
fails its validation or its plan starts nothing:

1. validates the project (``focuscrawl.project.loading.load_project``: one error naming key and fix);
2. plans its processes (``focuscrawl.platform.plan``);
3. writes the active project to ``$FOCUSCRAWL_VAR/run/project.json`` (the DAG files read their
   schedules from it) and starts the services side by side (Kafka, the warm Spark, MLflow, Airflow, and the
   world when a site is the world); meanwhile it trains what the FUE loop needs (``focuscrawl.platform.train``:
   reference and candidate classifiers from the project's example users; reused when the examples did not
   change). Once Kafka and the world answer, what the processes use, it fits the page focus
   (``focuscrawl.relevance.train``: its example URLs may be on the world) and starts and supervises every
   process (``focuscrawl.platform.supervisor``), while the DAGs' services still start; the FUE loop's
   processes wait (``waiting``) until its classifiers are trained. A training that fails stops what started
   beside it (:meth:`Platform.run`);
4. once every service is up, supervises them (``focuscrawl.platform.service_watch``: a killed Kafka, Airflow
   component, warm Spark, MLflow or world is started again) and unpauses the project's DAGs so model refresh
   runs on its schedule (each once Airflow shows it parsed with that schedule: an Airflow already up still
   holds the last parse; the tables landed meanwhile are announced once it does,
   ``focuscrawl.orchestration.asset_events``); then runs until Ctrl-C/SIGTERM, ``focuscrawl down`` from
   another terminal, or the ``--for`` limit, and stops the processes in order and the services after them.

:class:`Platform` is the same as a Python API (the platform end-to-end test and the demo use it).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from focuscrawl.platform.plan import Models, plan
from focuscrawl.core.signals import set_on_signals
from focuscrawl.platform.supervisor import Supervisor, read_state, stop_orphans, supervisor_pid
from focuscrawl.core.status_file import write_status

# The services the stream processes use; the others (Airflow, the warm Spark, MLflow) serve the DAGs.
PROCESS_SERVICES = ("kafka", "world")
# The DAGs each loop closes through (Airflow DAG ids); delta_maintenance keeps every table healthy.
LOOP_DAGS = {
    "fue": ("fue_pseudo_training",),
    "sources": ("source_schedule",),
    "revisits": ("outlinks_features", "outlinks_train"),
    "graph": ("graph_estimation",),
}
ALWAYS_DAGS = ("delta_maintenance", "model_registry")


def parse_for(text: str | None) -> float | None:
    """``--for 10m`` -> seconds (a plain number is seconds); None runs without a limit."""
    if text is None:
        return None
    from focuscrawl.project.values import parse_duration

    try:
        seconds = float(text)
    except ValueError:
        seconds = parse_duration(text).total_seconds()
    if seconds <= 0:
        raise ValueError(f"--for {text}: give a positive duration, e.g. 10m or 90s")
    return seconds


class Platform:
    """The running platform of one project (see the module docstring).

    ``project``: a :class:`focuscrawl.project.model.Project` or the path of its file (then validated
    here: :class:`focuscrawl.project.values.ProjectError` on a bad one, before anything starts).
    ``services``: which to start (default: kafka, airflow, and world when a site is the world);
    ``keep_services``: :meth:`stop` leaves them running (tests that share the engines).
    """

    def __init__(self, project, cfg=None, *, project_file: str | Path | None = None,
                 services: list[str] | None = None, keep_services: bool = False, dags_folder: Path | None = None,
                 log=print, tick: float = 0.5) -> None:
        from focuscrawl.config import settings
        from focuscrawl.project.loading import load_project

        self.cfg = cfg or settings()
        if isinstance(project, (str, Path)):
            project_file = Path(project)
            project = load_project(project_file)
        self.project = project
        self.project_file = Path(project_file).resolve() if project_file else None
        self.services = services if services is not None else self.default_services(project)
        self.keep_services, self.dags_folder, self.log, self.tick = keep_services, dags_folder, log, tick
        self.supervisor: Supervisor | None = None
        self.models: Models | None = None
        self.specs: list | None = None
        self._thread: threading.Thread | None = None
        self.watch = None  # the services' supervision (focuscrawl.platform.service_watch), once they are up

    @staticmethod
    def default_services(project) -> list[str]:
        # The warm Spark runs the DAGs' Spark tasks; MLflow registers the models they train.
        names = ["kafka", "spark-connect", "mlflow", "airflow"]
        if project.target == "world" or any(s.world for s in project.sites):
            names.append("world")
        return names

    def dag_ids(self) -> list[str]:
        ids = [d for loop, _, _ in self.project.enabled_loops() for d in LOOP_DAGS[loop]]
        focus = ("page_relevance",) if self.project.profile.pages is not None else ()
        return [*ids, *focus, *ALWAYS_DAGS]

    # -- up -----------------------------------------------------------------------------------

    def prepare(self) -> list:
        """Steps that start nothing: check that no platform is up here and plan the processes (errors stop ``up``
        here). The FUE classifiers are trained in :meth:`start`, at the paths planned here."""
        from focuscrawl.platform.train import model_paths

        other = supervisor_pid(self.cfg.var_dir)
        if other is not None and other != os.getpid():
            raise RuntimeError(f"a platform is already up out of {self.cfg.var_dir} (supervisor pid {other}); "
                               "`focuscrawl status` shows it, `focuscrawl down` stops it")
        self.models = model_paths(self.project, self.cfg) if self.project.loops.fue.enabled else None
        self.specs = plan(self.project, self.cfg, models=self.models, airflow="airflow" in self.services)
        return self.specs

    def train_classifiers(self) -> None:
        """The FUE loop's reference and candidate classifiers at the planned paths (``focuscrawl.platform.train``;
        reused when the examples did not change)."""
        if self.models is not None:
            from focuscrawl.platform.train import train_models

            train_models(self.project, self.cfg, log=self.log)

    def write_active_project(self) -> Path:
        from focuscrawl.orchestration.schedules import ACTIVE_PROJECT

        path = Path(self.cfg.var_dir) / ACTIVE_PROJECT
        # the batch side reads what the project resolved (pseudo_methods), never the registries again
        doc = {**self.project.to_json(), "pseudo_methods": list(self.project.loops.fue.pseudo_methods),
               "project_file": str(self.project_file) if self.project_file else None,
               "models": None if self.models is None else {"reference": str(self.models.reference),
                                                           "candidate": str(self.models.candidate)}}
        write_status(path, doc)
        return path

    def start(self) -> None:
        """Everything up, the supervisor running in a background thread; returns once every process and service
        started and the DAGs are unpaused."""
        specs = self.specs if self.specs is not None else self.prepare()
        self.log(f"up: project {self.project.name}: {len(specs)} processes, services {', '.join(self.services)}")
        self.write_active_project()
        from focuscrawl.services.manager import ServiceManager

        manager = ServiceManager(self.cfg, dags_folder=self.dags_folder, world_args=self.project.world.serve_args())
        # The processes need Kafka and the world only; the DAGs' services start beside them, so the loops' data
        # does not wait for Airflow, the warm Spark, MLflow and the DAG processor's parse (at a680215 the
        # processes started 54.5-73.1 s after `up`; the revisits loop, which needs six periods of snapshots
        # before its first model, closed last).
        first = [name for name in self.services if name in PROCESS_SERVICES]
        # The classifiers are trained while the services start (on the idle world the training took 32 s of `up`
        # before any service started). Only the FUE loop's processes wait for them: the others start once Kafka and
        # the world answer (in the loaded freshness run at 2e7fd60 the training took 98.0 s beside the services,
        # and the revisits loop, which waited for it though it needs six periods of snapshots, closed last).
        held = frozenset({"fue"}) if self.models is not None else frozenset()
        with ThreadPoolExecutor(3) as pool:  # a failure below raises once these have started too (`stop` stops them)
            rest = pool.submit(manager.up, [name for name in self.services if name not in first], log=self.log)
            processes_use = pool.submit(manager.up, first, log=self.log)
            training = pool.submit(self.train_classifiers)
            started = processes_use.result()
            self.train_page_focus()
            self.supervise(specs, held)
            training.result()
            for loop in held:
                self.supervisor.release(loop)
        started.update(rest.result())
        from focuscrawl.platform.service_watch import ServiceWatch

        self.watch = ServiceWatch({name: manager.services[name] for name in started}, self.cfg.var_dir)
        self.watch.start()
        if "airflow" in self.services:
            self.unpause_dags()

    def supervise(self, specs: list, held: frozenset[str] = frozenset()) -> None:
        """Start every process of ``specs`` under the supervisor, which runs in a background thread; those of the
        loops in ``held`` wait until ``self.supervisor.release(loop)``."""
        self.supervisor = Supervisor(specs, self.cfg.var_dir, tick=self.tick, info={
            "project": self.project.name, "project_file": str(self.project_file) if self.project_file else None})
        self.supervisor.start(held)
        self._thread = threading.Thread(target=self.supervisor.run, name="focuscrawl-supervisor", daemon=True)
        self._thread.start()
        self.log(f"up: {len(specs)} processes supervised; `focuscrawl status` shows them")

    def train_page_focus(self):
        """Fit the page relevance model from the project's example pages (``focuscrawl.relevance.train``),
        once the services are up: example URLs may be on the world. A focus that cannot be trained (a URL
        robots.txt forbids, one that does not answer) raises here, before any process starts."""
        if self.project.profile.pages is None:
            return None
        from focuscrawl.relevance.train import train_page_model

        return train_page_model(self.project, self.cfg, log=self.log)

    def unpause_dags(self, timeout: float = 180.0, client=None) -> list[str]:
        """Unpause the project's DAGs once Airflow holds them with the project's schedules; the ids unpaused.

        An Airflow that was already up still runs the DAGs as last parsed (the default schedules, or
        another project's) until its DAG processor re-parses the files, 21-23 s after ``up`` in CI:
        unpaused at once, ``source_schedule`` ran on ``@hourly`` and ``delta_maintenance`` ran though
        the project said ``"none"``. So each DAG waits until its REST ``timetable_summary`` matches
        (:func:`focuscrawl.orchestration.schedules.timetable_matches`; one ``GET /api/v2/dags`` a poll). The file
        of each DAG found on another schedule, or last parsed before the active project was written (a DAG file
        reads the project: its Params, the page focus), is asked to be re-parsed first (``PUT
        /api/v2/parseDagFile``, once a file), so the DAG processor takes it up on its next loop instead of at its
        next turn (``AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL``, :class:`focuscrawl.services.airflow.
        AirflowService`). A DAG never listed is left alone; one listed with another schedule after ``timeout`` is
        an error.
        """
        import requests

        from focuscrawl.orchestration.schedules import dag_schedules, timetable_matches
        from focuscrawl.services.airflow import AirflowError
        from focuscrawl.services.process import wait_until

        if client is None:
            from focuscrawl.services.airflow import AirflowService

            client = AirflowService(self.cfg, dags_folder=self.dags_folder).client()
        from focuscrawl.orchestration.schedules import ACTIVE_PROJECT

        wanted = self.dag_ids()
        listed: dict[str, dict] = {}
        asked: set[str] = set()
        project = Path(self.cfg.var_dir) / ACTIVE_PROJECT
        written = project.stat().st_mtime if project.exists() else None

        def before_project(dag: dict) -> bool:
            parsed_at = dag.get("last_parsed_time")
            return bool(written and parsed_at) and datetime.fromisoformat(parsed_at).timestamp() < written

        def parsed() -> bool:
            try:
                listed.update({d["dag_id"]: d for d in client.dags() if d["dag_id"] in wanted})
                stale = [d for i, d in listed.items()
                         if not timetable_matches(self.cfg, i, d.get("timetable_summary")) or before_project(d)]
                for token in sorted({d.get("file_token") for d in stale} - asked - {None}):
                    asked.add(token)  # asked once: a failed request leaves the file to the processor's own turn
                    try:
                        client.reparse(token)
                    except AirflowError as exc:
                        self.log(f"up: asking Airflow to re-parse a DAG file failed ({exc}); waiting for its DAG "
                                 "processor's own turn")
            except requests.RequestException:
                return False  # one slow poll of a busy SQLite API server is not an answer
            return all(i in listed and timetable_matches(self.cfg, i, listed[i].get("timetable_summary"))
                       for i in wanted)

        started = time.monotonic()
        try:
            wait_until(parsed, timeout, "Airflow's DAGs with the project's schedules", interval=2.0)
        except TimeoutError:
            stale = {i: listed[i].get("timetable_summary") for i in wanted
                     if i in listed and not timetable_matches(self.cfg, i, listed[i].get("timetable_summary"))}
            if stale:
                held = ", ".join(f"{i} on {s!r} (the project: {dag_schedules(self.cfg)[i]!r})" for i, s in stale.items())
                log = Path(self.cfg.var_dir) / "logs" / "airflow-dag-processor.log"
                raise RuntimeError(
                    f"Airflow still holds {held} after {timeout:.0f}s: its DAG processor has not re-parsed the DAG "
                    f"files; see {log} and `airflow dags list-import-errors`, or `focuscrawl services down` so `up` "
                    "starts Airflow afresh (its start reserializes every DAG)") from None
        waited = time.monotonic() - started
        done = []
        for dag_id in wanted:
            if dag_id not in listed:
                self.log(f"up: DAG {dag_id} is not listed by Airflow; left alone")
                continue
            client.unpause(dag_id)
            done.append(dag_id)
        self.log(f"up: DAGs unpaused after {waited:.0f}s (their schedules parsed): {', '.join(done) or 'none'}")
        return done

    # -- while up -----------------------------------------------------------------------------

    def status(self, **kwargs) -> dict:
        from focuscrawl.platform.status import collect

        return collect(self.cfg, **kwargs)

    def kill(self, name: str) -> int:
        """SIGKILL one process's group (fault tests); the supervisor restarts it. Its old pid."""
        return self._sup().kill(name)

    def _sup(self) -> Supervisor:
        if self.supervisor is None:
            raise RuntimeError("the platform is not up; call start() first")
        return self.supervisor

    def run(self, duration: float | None = None, progress_every: float = 30.0) -> int:
        """``start``, then supervise until ``duration`` seconds passed, SIGTERM/SIGINT or
        ``focuscrawl down``; then ``stop``. Progress every ``progress_every`` seconds."""
        stop = threading.Event()
        if threading.current_thread() is threading.main_thread():
            set_on_signals(stop)
        started = time.monotonic()
        try:
            self.start()
            self.log("up: running " + (f"for {duration:.0f}s" if duration else "until Ctrl-C or `focuscrawl down`"))
            next_report = time.monotonic() + progress_every
            while not stop.is_set():
                left = None if duration is None else duration - (time.monotonic() - started)
                if left is not None and left <= 0:
                    break
                if time.monotonic() >= next_report:
                    next_report = time.monotonic() + progress_every
                    self.log(self.progress_line(time.monotonic() - started, left))
                stop.wait(min(1.0, left) if left is not None else 1.0)
        finally:
            self.stop()
        return 0

    def progress_line(self, elapsed: float, left: float | None) -> str:
        from focuscrawl.platform.status import loops, status_documents

        procs = read_state(self.cfg.var_dir).get("processes", [])
        up = sum(p["state"] == "up" for p in procs)
        restarts = sum(p.get("restarts", 0) for p in procs)
        bad = [p["name"] for p in procs if p["state"] in ("crashloop", "backoff")]
        # the line shows no steering, so no plan specs; the status files are read once for all the loops
        figures = loops(self.cfg, self.project.to_json(), [], status_documents(self.cfg))
        bits = []
        fue, src, rev, graph = (figures.get(k, {}) for k in ("fue", "sources", "revisits", "graph"))
        if fue.get("extracted") is not None:
            bits.append(f"fue {fue['extracted']} users, harvest {fue.get('harvest', 0):.2f}")
        if src.get("recrawls") is not None:
            bits.append(f"sources {src['recrawls']} recrawls/{src.get('new_pages')} new")
        if rev.get("revisits") is not None:
            bits.append(f"revisits {rev['revisits']}")
        if graph.get("sample_rows") is not None:
            bits.append(f"graph sample {graph['sample_rows']}")
        remaining = f", {left:.0f}s left" if left is not None else ""
        trouble = f"; trouble: {', '.join(bad)}" if bad else ""
        return (f"[{elapsed:.0f}s{remaining}] {up}/{len(procs)} up, {restarts} restarts"
                f"{'; ' + '; '.join(bits) if bits else ''}{trouble}")

    # -- down ---------------------------------------------------------------------------------

    def stop(self) -> None:
        """Ordered stop of the processes, then the services (unless ``keep_services``)."""
        if self.watch is not None:  # first: a service stopped below is not to be restarted
            self.watch.stop()
        if self.supervisor is not None:
            self.supervisor.request_stop()
            if self._thread is not None:
                self._thread.join(timeout=30)
            self.supervisor.stop()
            self.log("down: processes stopped")
        if not self.keep_services:
            from focuscrawl.services.manager import ServiceManager

            ServiceManager(self.cfg).down(log=self.log)


def down(cfg, *, services: bool = True, timeout: float = 120.0, log=print) -> int:
    """Stop the platform running out of ``cfg.var_dir``: its supervisor (which stops its processes in
    order), or, when the supervisor was killed, the processes it left; then the services."""
    pid = supervisor_pid(cfg.var_dir)
    if pid is not None:
        log(f"down: stopping the supervisor (pid {pid}) and its processes")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        from focuscrawl.services.process import pid_alive

        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if pid_alive(pid):
            log(f"down: the supervisor did not stop in {timeout:.0f}s; stopping its processes directly")
    stop_orphans(cfg.var_dir, log_line=log)
    from focuscrawl.platform.service_watch import status_path

    status_path(cfg.var_dir).unlink(missing_ok=True)  # what the watch of a killed `up` left
    if services:
        from focuscrawl.services.manager import ServiceManager

        ServiceManager(cfg).down(log=log)
    return 0


def main_up(args, cfg) -> int:
    import logging

    from focuscrawl.platform.plan import PlanError
    from focuscrawl.project.values import ProjectError

    # The supervisor's restarts and crash loops (warnings) go to the terminal beside the progress lines.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")

    try:
        duration = parse_for(args.duration)
        platform = Platform(args.project, cfg, services=args.services.split(",") if args.services else None,
                            dags_folder=args.airflow_dags)
        platform.prepare()  # validate, plan: a project that fails them starts nothing
    except (ProjectError, PlanError, ValueError) as exc:
        print(f"focuscrawl up: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"focuscrawl up: {exc}", file=sys.stderr)
        return 1
    try:
        return platform.run(duration, progress_every=args.progress_every)
    except ValueError as exc:  # the training or the page focus failed once the services started; run() stopped them
        print(f"focuscrawl up: {exc}", file=sys.stderr)
        return 2


def main_down(args, cfg) -> int:
    return down(cfg, services=not args.keep_services)
