"""The platform's subcommands of ``focuscrawl``: up, down, status, logs, train, dedup, and the steering commands
pause, resume, budget, seeds, examples (parsers and dispatch).

Kept here so ``focuscrawl/cli.py`` only adds them (``add_commands``) and hands them over (``run``);
nothing heavier than argparse is imported until a command runs.
"""

from __future__ import annotations

from pathlib import Path

from focuscrawl.control import LOOPS
from focuscrawl.core.commandline import add_project_argument, subcommand

COMMANDS = ("up", "down", "status", "logs", "train", "dedup", "pause", "resume", "budget", "seeds", "examples")
STEERING = ("pause", "resume", "budget", "seeds")


def add_commands(sub) -> None:
    up = subcommand(
        sub, "up", "start the services and every process a project declares, supervised",
        "focuscrawl up projects/world.toml --for 10m", "focuscrawl up            # ./focuscrawl.toml, until Ctrl-C",
        description="Validate the project, train its classifiers, start Kafka, the warm Spark, MLflow and Airflow (and the world when a site "
                    "is the world), unpause the project's DAGs, then start and supervise every process its loops "
                    "need (restart with back-off, crash loops shown by `focuscrawl status`). Runs until Ctrl-C, "
                    "SIGTERM, `focuscrawl down` or the --for limit; then stops everything in order. A project that "
                    "does not validate prints its one error and starts nothing (exit 2).")
    add_project_argument(up)
    up.add_argument("--for", dest="duration", metavar="DURATION",
                    help="stop everything after this long (90s, 10m, 1h; a number is seconds)")
    up.add_argument("--services", help="comma-separated services to start (default: kafka,spark-connect,mlflow,airflow[,world])")
    up.add_argument("--airflow-dags", type=Path, help="DAG folder for Airflow (default: <repo>/dags)")
    up.add_argument("--progress-every", type=float, default=30.0, help="seconds between progress lines")

    down = subcommand(
        sub, "down", "stop the running platform: its processes in order, then the services",
        "focuscrawl down --keep-services",
        description="Stop what `focuscrawl up` started out of $FOCUSCRAWL_VAR: the supervisor (which stops its "
                    "processes crawlers first, consumers last), the processes a killed supervisor left, then "
                    "the services.")
    down.add_argument("--keep-services", action="store_true", help="leave Kafka, Airflow and the world running")

    st = subcommand(
        sub, "status", "processes, consumer lag, DAG runs and live figures per loop",
        "focuscrawl status --watch", "focuscrawl status --json | jq .loops",
        description="Each process (state, health, restarts, last error lines), consumer lag per group (Kafka "
                    "committed offsets and the Delta tables' own offsets), the last run of every DAG, and live "
                    "figures per loop. Parts that are down show as 'not running'.")
    st.add_argument("--watch", action="store_true", help="refresh every --interval seconds until Ctrl-C")
    st.add_argument("--interval", type=float, default=5.0, help="seconds between refreshes of --watch (default 5)")
    st.add_argument("--json", action="store_true", help="one JSON document (for scripts and tests)")
    st.add_argument("--no-kafka", action="store_true", help="skip consumer lag")
    st.add_argument("--no-airflow", action="store_true", help="skip DAG runs")

    logs = subcommand(
        sub, "logs", "the log of one process (or service)",
        "focuscrawl logs fue-chooser-hcp -n 50", "focuscrawl logs revisitor -f",
        description="Print the last lines of a supervised process's log ($FOCUSCRAWL_VAR/logs/platform/NAME.log), "
                    "or of a service (kafka, airflow-scheduler, world, ...).")
    logs.add_argument("name", help="process name as `focuscrawl status` lists it")
    logs.add_argument("-n", "--lines", type=int, default=40, help="how many last lines (default 40)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing what is appended")

    train = subcommand(
        sub, "train", "train the project's classifiers from its examples: the FUE loop's from its example users, "
        "the page relevance model from its example pages",
        "focuscrawl train projects/world.toml --force",
        description="Train the FUE loop's reference classifier (whole histories) and candidate classifier "
                    "(snippets) from the project's example users into $FOCUSCRAWL_VAR/models/<project>/; "
                    "`focuscrawl up` does this first and skips it when the examples did not change. With "
                    "[profile.pages], also fetch the example pages once (robots.txt obeyed), fit the page "
                    "relevance model, print its held-out AUC and precision with intervals, and register it "
                    "as a new version under $FOCUSCRAWL_VAR/models/<project>/pages/.")
    add_project_argument(train)
    train.add_argument("--force", action="store_true", help="train even when the examples did not change")

    dedup = subcommand(
        sub, "dedup", "keep one row per key of a Delta table: the repair a quality gate names for repeated keys",
        "focuscrawl dedup page_snapshots --key url,period --first-by fetched_at",
        description="Rewrite the lake's table NAME with one row per --key (the first by --first-by), in one "
                    "commit; a table whose keys are unique is left alone. A quality gate that finds a key "
                    "repeated prints this command. Refused while the platform is up (its writers would race the "
                    "rewrite): `focuscrawl down` first.")
    dedup.add_argument("table", help="table name, e.g. page_snapshots")
    dedup.add_argument("--key", required=True, help="comma-separated key columns, e.g. url,period")
    dedup.add_argument("--first-by", default="", help="comma-separated columns: of repeated rows, keep the first "
                                                      "by these (default: the first in file order)")

    # Steering the running crawl (focuscrawl.control): one record on the compacted control topic each.
    steer = ("A command goes to the control topic, which every process of the loop follows (within a second; a "
             "process started later applies it too), and to the control_audit table. `focuscrawl status` shows "
             "each loop's state.")
    for name, what, example in (("pause", "pause a loop's fetching: its crawlers stop asking the sites",
                                 "focuscrawl pause revisits"),
                                ("resume", "resume a paused loop", "focuscrawl resume revisits")):
        p = subcommand(sub, name, what, example, description=f"{what[0].upper()}{what[1:]}. {steer}")
        p.add_argument("loop", choices=LOOPS, help="the loop")
    budget = subcommand(
        sub, "budget", "change a running loop's budget (fetches per second, FUE users per hour)",
        "focuscrawl budget sources fetches_per_second 0.2", "focuscrawl budget fue users_per_hour 120",
        description="Set a running loop's budget, in force until the next command (the project file's value "
                    f"again at the next `focuscrawl up` only if you remove it). {steer}")
    budget.add_argument("loop", choices=LOOPS, help="the loop")
    budget.add_argument("knob", help="fetches_per_second (sources, revisits, graph) or users_per_hour (fue)")
    budget.add_argument("value", type=float, help="the new budget, > 0")
    seeds = subcommand(
        sub, "seeds", "add seed pages to a running crawl",
        "focuscrawl seeds add world http://127.0.0.1:18090/site/art.wiki.test/wiki/Baroque",
        description="Add seed pages of a site to the running loops that crawl it and take seeds while they run "
                    f"(the revisitor's known pages; a sources loop's sites are fixed when it starts). {steer}")
    seeds.add_argument("action", choices=("add",), help="add")
    seeds.add_argument("site", help="the project's [[sites]] name")
    seeds.add_argument("urls", nargs="+", metavar="URL", help="pages on that site")
    examples = subcommand(
        sub, "examples", "add example users to a running crawl: its FUE classifiers are refitted and followed live",
        "focuscrawl examples add users more-targets.jsonl",
        "focuscrawl examples add users others.csv --label negative",
        description="Add the users of FILE (eRisk XML, JSONL or CSV, as [profile] positives/negatives) to the running "
                    "project's example users, kept in the fue_example_users table (the project file is not "
                    "edited; later `up` and `train` runs use the changed set). The reference and candidate "
                    "classifiers are refitted as `focuscrawl train` fits them, stored as new versions (the model "
                    "registry records them), and the FUE classifier process and the choosers use them within "
                    "seconds, the choosers rescoring their candidates. The command lands in the control_audit table.")
    examples.add_argument("action", choices=("add",), help="add")
    examples.add_argument("kind", choices=("users",), help="example users of the FUE loop")
    examples.add_argument("file", type=Path, metavar="FILE", help="the users with their writings")
    examples.add_argument("--label", choices=("positive", "negative"), default="positive",
                          help="their class: positive (target users, the default) or negative")
    examples.add_argument("--format", help="FILE's format, erisk, jsonl or csv (default: from its name, as for "
                                           "[profile] positives)")


def run(args) -> int:
    from focuscrawl.config import settings

    cfg = settings()
    if args.command == "up":
        from focuscrawl.platform.up import main_up

        return main_up(args, cfg)
    if args.command == "down":
        from focuscrawl.platform.up import main_down

        return main_down(args, cfg)
    if args.command == "status":
        from focuscrawl.platform.status import main_status

        try:
            return main_status(args, cfg)
        except KeyboardInterrupt:
            return 0
    if args.command == "logs":
        from focuscrawl.platform.status import main_logs

        return main_logs(args, cfg)
    if args.command == "dedup":
        return _dedup(args, cfg)
    if args.command in STEERING:
        return _steer(args, cfg)
    if args.command == "examples":
        return _examples(args, cfg)
    from focuscrawl.platform.train import main_train

    return main_train(args, cfg)


def _dedup(args, cfg) -> int:
    import sys

    from focuscrawl.lake.maintenance import dedupe_table, lake_table_locations
    from focuscrawl.lake.storage import storage_options
    from focuscrawl.platform.supervisor import supervisor_pid

    pid = supervisor_pid(cfg.var_dir)
    if pid is not None:
        print(f"focuscrawl: the platform is up (supervisor pid {pid}) and its writers would race the rewrite; "
              f"run `focuscrawl down` first", file=sys.stderr)
        return 2
    tables = lake_table_locations(cfg)
    if args.table not in tables:
        print(f"focuscrawl: no table {args.table!r} in the lake; tables: {', '.join(sorted(tables)) or '(none)'}",
              file=sys.stderr)
        return 2
    split = lambda text: [c.strip() for c in text.split(",") if c.strip()]  # noqa: E731
    try:
        before, removed = dedupe_table(tables[args.table], split(args.key), split(args.first_by),
                                       storage_options(cfg) or None)
    except ValueError as e:
        print(f"focuscrawl: {e}", file=sys.stderr)
        return 2
    print(f"{args.table}: {removed} of {before} rows removed, one row per ({', '.join(split(args.key))}) left")
    return 0


def steering_commands(args, project) -> list:
    """The :class:`~focuscrawl.control.Command` list ``args`` asks for, checked against the active ``project``
    (a loaded :class:`~focuscrawl.project.model.Project`): the loop is on, a seed is on the site its loop crawls."""
    from focuscrawl.config import settings
    from focuscrawl.control import SEEDED, Command, ControlError

    if args.command == "seeds":
        site = next((s for s in project.sites if s.name == args.site), None)
        if site is None:
            raise ControlError(f"project {project.name} has no site {args.site!r}; its sites: "
                               f"{', '.join(s.name for s in project.sites)}")
        loops = [loop for loop in SEEDED
                 if getattr(project.loops, loop).enabled and getattr(project.loops, loop).site == site.name]
        if not loops:
            raise ControlError(f"no running loop of project {project.name} takes seeds of site {site.name} (loops "
                               f"that do: {', '.join(SEEDED)})")
        commands = [Command("seed", loop, value=url) for loop in loops for url in args.urls]  # each an http(s) URL
        root = site.url(settings()).rstrip("/") + "/"
        off = [u for u in args.urls if not (u.rstrip("/") + "/").startswith(root)]
        if off:
            raise ControlError(f"not on site {site.name} ({root}): {', '.join(off)}")
        return commands
    if not getattr(project.loops, args.loop).enabled:
        raise ControlError(f"loop {args.loop} is not enabled in project {project.name}; enable [loops.{args.loop}] "
                           "and run `focuscrawl up` again")
    if args.command == "budget":
        return [Command("budget", args.loop, args.knob, args.value)]
    return [Command(args.command, args.loop)]


class SteerUnavailable(RuntimeError):
    """The control topic is out of reach (Kafka down); the message names the fix."""


def steer(cfg, args, by: str | None = None) -> list:
    """Send the steering commands ``args`` asks for (:func:`steering_commands` against the active project) with
    :func:`focuscrawl.control.send`, recorded as given ``by`` (None: the operating-system user). The one way a
    command reaches the running crawl: the command line and the focuscrawl view in the Airflow UI both call it.
    Raises ``ControlError``/``ProjectError`` for a command the project cannot take, :class:`SteerUnavailable`
    when Kafka cannot be reached."""
    from focuscrawl import control
    from focuscrawl.control import ControlError
    from focuscrawl.orchestration.schedules import running_project

    project = running_project(cfg)
    if project is None:
        raise ControlError("no project is active here; `focuscrawl up PROJECT` first")
    commands = steering_commands(args, project)
    try:
        control.send(cfg.kafka_bootstrap, commands, by=by)
    except Exception as e:  # noqa: BLE001 - the broker is down or unreachable: say how to bring it up
        raise SteerUnavailable(f"cannot reach Kafka at {cfg.kafka_bootstrap} ({type(e).__name__}: {e}); "
                               "`focuscrawl services up --only kafka` starts it") from e
    return commands


def _steer(args, cfg) -> int:
    import sys

    from focuscrawl.control import ControlError
    from focuscrawl.project.values import ProjectError

    try:
        commands = steer(cfg, args)
    except (ControlError, ProjectError, SteerUnavailable) as e:
        print(f"focuscrawl: {e}", file=sys.stderr)
        return 2
    for c in commands:
        print(f"{c.action} {c.loop}" + (f" {c.knob}" if c.knob else "") + (f" {c.value}" if c.value is not None else ""))
    return 0


def _examples(args, cfg) -> int:
    import sys

    from focuscrawl.platform.examples import ExamplesError, examples_command
    from focuscrawl.project.values import ProjectError

    try:
        done = examples_command(cfg, args.file, args.label, args.format)
    except (ExamplesError, ProjectError) as e:
        print(f"focuscrawl: {e}", file=sys.stderr)
        return 2
    print(f"{len(done['added'])} {args.label} example users added to project {done['project']} "
          f"(fue_example_users v{done['fue_example_users']}); "
          + ", ".join(f"{role} classifier v{v}" for role, v in done["versions"].items())
          + " in use by the running FUE processes within seconds")
    return 0
