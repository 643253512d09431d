"""The ``focuscrawl`` command.

    focuscrawl services up [--only kafka,spark-connect,mlflow,airflow,world] [--spark-cluster]
    focuscrawl services down | status | serve mlflow
    focuscrawl models [promote NAME VERSION]   the model registry's versions; move a model's champion
    focuscrawl sql ["SELECT ..."]          one query, or an interactive prompt without one
    focuscrawl pyspark                     a pyspark shell with the Delta tables registered
    focuscrawl init [DIR] [--force]        write a commented focuscrawl.toml project file
    focuscrawl validate [FILE]             check a project file (summary, or the one error and exit 2)
    focuscrawl up [PROJECT] [--for 10m]    services + every process of the project, supervised
    focuscrawl down | status [--watch] [--json] | logs NAME [-n N] [-f] | train [PROJECT]
    focuscrawl pause LOOP | resume LOOP | budget LOOP KNOB VALUE | seeds add SITE URL...   steer a running crawl
    focuscrawl examples add users FILE [--label positive|negative]   more example users, classifiers refitted live
    focuscrawl world ... | demo ... | experiment NAME ... | report NAME ...
    focuscrawl report demo [--only fue] [--rebuild]   the demo's HTML report without the services

The last four hand their arguments to the area's own ``main(argv)``, imported only when called;
``experiment``/``report`` NAMEs are :func:`focuscrawl.core.commandline.catalogue`'s. Every command's
``--help`` has a description and an example.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import Callable, Iterable, Sequence

from focuscrawl.core.commandline import RAW, ArgumentParser, add_project_argument, catalogue, catalogue_text, examples, module_of, subcommand
from focuscrawl.config import settings


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="focuscrawl", description="Focused crawling on Kafka, Spark/Delta and Airflow: run a crawl project's "
        "four loops live, query what they wrote, and compare policies offline. `focuscrawl COMMAND --help` "
        "describes each command with an example.",
        epilog=examples("focuscrawl init myproject && focuscrawl validate myproject",
                        "focuscrawl up projects/world.toml --for 10m",
                        "focuscrawl status --watch",
                        "focuscrawl sql \"SELECT count(*) FROM focuscrawl.page_snapshots\"",
                        "focuscrawl experiment --help        # the offline experiments, one line each"),
        formatter_class=RAW)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    svc = subcommand(sub, "services", "start, stop or report the engines of the embedded default",
                     "focuscrawl services up --only kafka,airflow", "focuscrawl services status",
                     description="The engines alone, without a project: Kafka (KRaft, one node), the warm Spark "
                                 "(Spark Connect), MLflow (the model registry), Airflow (API server, scheduler, DAG "
                                 "processor, triggerer), the world, and optionally a "
                                 "Spark standalone cluster. `focuscrawl up` starts them itself.")
    act = svc.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = subcommand(act, "up", "start the engines (kafka, spark-connect, mlflow, airflow, world) and wait until ready",
                    "focuscrawl services up", "focuscrawl services up --only spark-connect,airflow --spark-cluster")
    up.add_argument("--only", help="comma-separated subset of kafka,spark-connect,mlflow,airflow,world,spark")
    up.add_argument("--spark-cluster", action="store_true",
                    help="also start a Spark standalone master + 2 workers; the warm Spark's executors run on it")
    up.add_argument("--airflow-dags", type=Path, help="DAG folder for Airflow (default: <repo>/dags)")
    subcommand(act, "down", "stop every engine of ours started out of $FOCUSCRAWL_VAR", "focuscrawl services down")
    subcommand(act, "status", "each engine up or down by its real health probe, with its URL and the fix",
               "focuscrawl services status")
    serve = subcommand(act, "serve", "run one engine in the foreground, as a container's command (docker-compose.yml)",
                       "focuscrawl services serve mlflow")
    serve.add_argument("name", choices=["mlflow"], help="the engine")

    models = subcommand(sub, "models", "the registered models' versions, metrics and lineage; promote or roll back",
                        "focuscrawl models", "focuscrawl models promote outlinks.NNL-ET_LBLA.int 3",
                        description="List every version in the model registry (MLflow, `focuscrawl services up "
                                    "--only mlflow`): its held-out metrics, the Delta table versions it trained on, "
                                    "its aliases. `promote NAME VERSION` moves the champion alias to VERSION "
                                    "whatever its metrics (a rollback); the model's store champion moves with it, "
                                    "which its loop follows (outlinks, pages, fue, sources), and holds until a "
                                    "newer version is promoted.")
    model_act = models.add_subparsers(dest="action", metavar="ACTION")
    promote = subcommand(model_act, "promote", "make VERSION of model NAME its champion",
                         "focuscrawl models promote outlinks.NNL-ET_LBLA.int 3")
    promote.add_argument("name", metavar="NAME", help="registered model name, as `focuscrawl models` lists it")
    promote.add_argument("version", metavar="VERSION", type=int, help="its registered version")

    sql = subcommand(sub, "sql", "Spark SQL over the Delta tables (interactive without a query)",
                     "focuscrawl sql \"SELECT url, fetched_at FROM focuscrawl.page_snapshots LIMIT 5\"",
                     "focuscrawl sql --limit 20        # a prompt; statements end with ; or a blank line",
                     description="Run Spark SQL over the lake: every Delta table is registered as focuscrawl.NAME "
                                 "(page_snapshots, near_duplicates, fue_posts, ...). With a query, print its rows "
                                 "and exit; without one, read statements until `exit` or EOF.")
    sql.add_argument("query", nargs="?", help="one statement; omit for a prompt")
    sql.add_argument("--limit", type=int, default=100, help="rows printed per result")

    subcommand(sub, "pyspark", "a pyspark shell with the focuscrawl session configuration", "focuscrawl pyspark",
               description="Start pyspark with the session configuration of every job (Delta, the lake's "
                           "storage options, the venv's Python) and the Delta tables registered as views.")

    init = subcommand(
        sub, "init", "write a commented focuscrawl.toml project file",
        "focuscrawl init myproject && $EDITOR myproject/focuscrawl.toml && focuscrawl validate myproject/focuscrawl.toml",
        description="Write a commented crawl project file (focuscrawl.toml) to DIR: the target users, the "
                    "sites and how to reach them, the four loops with their methods and budgets, DAG schedules.")
    init.add_argument("dir", nargs="?", type=Path, default=Path("."), help="folder to write it to (default: here)")
    init.add_argument("--force", action="store_true", help="replace an existing focuscrawl.toml")
    val = subcommand(
        sub, "validate", "check a project file; prints a summary, or the one error (exit 2)",
        "focuscrawl validate projects/reddit.toml",
        description="Check a crawl project file: keys and types, example files (exist, readable, parse), "
                    "URLs, registered method names, budgets, schedules, OAuth variables set. Prints a summary, "
                    "or one line naming the key and the fix and exits 2.")
    add_project_argument(val)

    from focuscrawl.platform.commands import add_commands

    add_commands(sub)  # up, down, status, logs, train

    # These hand their arguments to the area's own parser (`focuscrawl world --help` is the world's).
    for name, what, example in (("world", "the local world server (its own parser: focuscrawl world --help)",
                                 "focuscrawl world serve --seed 1 --speedup 120"),
                                ("demo", "the end-to-end demo: the live platform, then its HTML report",
                                 "focuscrawl demo --for 10m")):
        d = subcommand(sub, name, what, example, add_help=False)
        d.add_argument("args", nargs=argparse.REMAINDER)
    for name, package in PACKAGES.items():
        names = catalogue(f"focuscrawl.{package}")
        d = subcommand(sub, name, f"run one of the {package} by NAME (`focuscrawl {name} --help` lists them)",
                       *PACKAGE_EXAMPLES[name],
                       description=f"Run focuscrawl.{package}.NAME with the arguments that follow; "
                                   f"`focuscrawl {name} NAME --help` lists its own options.",
                       epilog_extra=catalogue_text(f"{package} (NAME)", names))
        d.add_argument("name", metavar="NAME", help=f"one of: {', '.join(names)}")
        d.add_argument("args", nargs=argparse.REMAINDER, help="the arguments of that NAME")
    return p


def dispatch(module: str, argv: list[str]) -> int:
    """Call ``module.main(argv)``; a missing module is a one-line error, not a traceback."""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and (module == e.name or module.startswith(e.name + ".")):
            print(f"focuscrawl: {module} is not installed in this checkout (no module {e.name!r})", file=sys.stderr)
            return 2
        raise
    return int(mod.main(argv) or 0)


def format_table(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Rows as an aligned plain-text table (NULL for None)."""
    cells = [[("NULL" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    fmt = lambda vals: "| " + " | ".join(v.ljust(w) for v, w in zip(vals, widths)) + " |"  # noqa: E731
    out = [line, fmt(list(columns)), line, *(fmt(r) for r in cells), line]
    return "\n".join(out)


def run_sql(spark, query: str, limit: int) -> str:
    df = spark.sql(query)
    rows = df.limit(limit + 1).collect()
    text = format_table(df.columns, [tuple(r) for r in rows[:limit]])
    more = f"\n(first {limit} rows shown)" if len(rows) > limit else f"\n({len(rows)} row{'s' * (len(rows) != 1)})"
    return text + more


def sql_prompt(execute: Callable[[str], str], read: Callable[[str], str] = input, write: Callable[[str], None] = print) -> int:
    """Read statements (ending with ``;`` or a blank line) until ``exit``/EOF; errors do not end it."""
    buffer: list[str] = []
    while True:
        try:
            line = read("focuscrawl> " if not buffer else "        ...> ")
        except EOFError:
            write("")
            return 0
        if not buffer and line.strip().lower().rstrip(";") in ("exit", "quit"):
            return 0
        if line.strip():
            buffer.append(line)
        statement = " ".join(buffer).strip()
        if statement and (statement.endswith(";") or not line.strip()):
            buffer.clear()
            try:
                write(execute(statement.rstrip(";")))
            except Exception as e:  # noqa: BLE001 - report and keep the prompt
                write(f"error: {str(e).splitlines()[0] if str(e) else type(e).__name__}")


def pyspark_command(cfg) -> tuple[list[str], dict[str, str]]:
    """``pyspark --conf k=v ...`` with the session conf, and a start-up file that names the tables."""
    from focuscrawl.core.interpreter import spark_home, venv_bin
    from focuscrawl.services.process import settings_env
    from focuscrawl.lake.spark import session_conf

    startup = Path(cfg.var_dir) / "run" / "pyspark_startup.py"
    startup.parent.mkdir(parents=True, exist_ok=True)
    # pyspark's shell.py runs OLD_PYTHONSTARTUP after it made `spark`.
    startup.write_text(
        "from focuscrawl.config import settings\n"
        "from focuscrawl.lake.spark import register_tables\n"
        "print('focuscrawl tables:', ', '.join(register_tables(spark, settings())) or '(none yet)')\n"
    )
    argv = [str(venv_bin() / "pyspark")]
    for key, value in session_conf(cfg).items():
        argv += ["--conf", f"{key}={value}"]
    env = {**os.environ, **settings_env(cfg), "SPARK_HOME": spark_home(), "PYTHONSTARTUP": str(startup),
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    return argv, env


def _services(args) -> int:
    from focuscrawl.services.manager import ServiceManager

    cfg = settings()
    if args.action == "up":
        try:
            names = ServiceManager.parse_only(args.only, args.spark_cluster)
        except ValueError as e:
            print(f"focuscrawl: {e}", file=sys.stderr)
            return 2
        ServiceManager(cfg, dags_folder=args.airflow_dags, spark_cluster="spark" in names).up(names)
        return _services(argparse.Namespace(action="status"))
    if args.action == "serve":
        from focuscrawl.services.mlflow import MlflowServer

        try:
            MlflowServer(cfg).serve()
        except (RuntimeError, ValueError) as e:  # a database it cannot reach or a URL it does not take
            print(f"focuscrawl: {e}", file=sys.stderr)
            return 2
    manager = ServiceManager(cfg)
    if args.action == "down":
        manager.down()
        return 0
    for s in manager.status():
        found = s.probe.detail if s.probe and s.probe.detail else ""
        print(f"{s.name:13} {'up' if s.up else 'down':5} {s.url}" + (f"  {found}" if found else "")
              + (f"  ({s.detail})" if s.detail else "") + (f"  fix: {s.fix}" if s.fix and s.name != "spark" else ""))
    return 0


def _models(args) -> int:
    from mlflow.exceptions import MlflowException

    from focuscrawl.services.model_registry import ModelRegistry, unavailable

    cfg = settings()
    why = unavailable(cfg)
    if why is not None:
        print(f"focuscrawl: {why}", file=sys.stderr)
        return 2
    registry = ModelRegistry.from_settings(cfg)
    if args.action == "promote":
        from focuscrawl.orchestration.model_families import owner, promote_registered

        try:
            found = owner(cfg, args.name)
            if found is not None:
                stored = promote_registered(found, registry, args.name, args.version)
                print(f"{args.name}: version {args.version} (store v{stored.version}) is the champion; {found.follows}")
            else:
                registry.set_champion(args.name, args.version)
                print(f"{args.name}: version {args.version} is the champion (no model store holds it)")
        except (LookupError, MlflowException) as e:
            print(f"focuscrawl: {str(e).splitlines()[0]}", file=sys.stderr)
            return 2
        return 0
    versions = registry.versions()
    if not versions:
        print(f"no model registered yet in {cfg.mlflow_url}")
        return 0
    print(format_table(("model", "version", "aliases", "held-out metrics", "trained on (Delta versions)"), [
        (v.name, v.version, ",".join(v.aliases), " ".join(f"{k}={m:.4f}" for k, m in sorted(v.metrics.items())),
         " ".join(f"{t}@{n}" for t, n in sorted(v.delta_versions.items()))) for v in versions]))
    return 0


def _project(args) -> int:
    from focuscrawl.project.loading import load_project
    from focuscrawl.project.template import summary, write_init
    from focuscrawl.project.values import ProjectError

    if args.command == "init":
        try:
            path = write_init(args.dir, force=args.force)
        except FileExistsError as e:
            print(f"focuscrawl: {e}", file=sys.stderr)
            return 2
        print(f"wrote {path}; edit it, then: focuscrawl validate {path}")
        return 0
    try:
        project = load_project(args.project)
    except ProjectError as e:
        print(f"focuscrawl: {e}", file=sys.stderr)
        return 2
    print(summary(project))
    print("valid")
    return 0


def _sql(args) -> int:
    from focuscrawl.lake.spark import get_session

    spark = get_session("focuscrawl-sql", catalog=True)
    try:
        if args.query:
            print(run_sql(spark, args.query, args.limit))
            return 0
        return sql_prompt(lambda q: run_sql(spark, q, args.limit))
    finally:
        spark.stop()


PASSTHROUGH = {"world": "focuscrawl.world.__main__", "demo": "focuscrawl.cli.demo"}
PACKAGES = {"experiment": "experiments", "report": "reports"}
PACKAGE_EXAMPLES = {
    "experiment": ("focuscrawl experiment fue --methods HCP,RND --duration 6h", "focuscrawl experiment outlinks --help"),
    "report": ("focuscrawl report outlinks --run $FOCUSCRAWL_VAR/experiments/outlinks", "focuscrawl report demo --rebuild"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)  # progress lines show up as they happen
    # Other areas parse their own arguments (``world --help`` is the world's help), so hand
    # them over before argparse sees them; the subparsers above only document them.
    if argv and argv[0] in PASSTHROUGH:
        return dispatch(PASSTHROUGH[argv[0]], argv[1:])
    if len(argv) > 1 and argv[0] in PACKAGES and not argv[1].startswith("-"):
        package = f"focuscrawl.{PACKAGES[argv[0]]}"
        name = argv[1].replace("_", "-")
        known = catalogue(package)
        if name not in known:
            print(f"focuscrawl: unknown {argv[0]} {argv[1]!r}; known: {', '.join(known)} "
                  f"(`focuscrawl {argv[0]} --help` says what each does)", file=sys.stderr)
            return 2
        return dispatch(module_of(package, name), argv[2:])
    args = build_parser().parse_args(argv)
    if args.command == "services":
        return _services(args)
    if args.command == "sql":
        return _sql(args)
    if args.command == "models":
        return _models(args)
    if args.command in ("init", "validate"):
        return _project(args)
    from focuscrawl.platform.commands import COMMANDS, run as run_platform

    if args.command in COMMANDS:
        return run_platform(args)
    command, env = pyspark_command(settings())
    os.execve(command[0], command, env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
