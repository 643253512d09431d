"""``python -m focuscrawl.world serve --port P --eval-port Q --seed S --speedup X [--data DIR] [faults]``.

``focuscrawl world ...`` dispatches here (``main(argv)``). Defaults come from ``settings()``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path

from focuscrawl.core.commandline import parser, subcommand
from focuscrawl.config import settings
from focuscrawl.core.signals import set_on_signals
from focuscrawl.world.ratelimit import REDDIT_WINDOW


def _parser() -> argparse.ArgumentParser:
    cfg = settings()
    p = parser("focuscrawl world", "Serve the simulated world: Reddit-style listings, HTML pages, RSS, sitemaps and "
               "robots.txt on a simulated clock (crawl port), its ground truth and faults on an evaluation port.",
               "focuscrawl world serve --seed 1 --speedup 120", "focuscrawl services up --only world   # the same, supervised")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = subcommand(sub, "serve", "run the crawl server and the evaluation server until interrupted",
                   "focuscrawl world serve --port 8900 --eval-port 8901 --data none --error-rate 0.05",
                   "focuscrawl world serve --replay var/lake/page_snapshots   # a recorded crawl")
    s.add_argument("--host", default=cfg.bind_host)
    s.add_argument("--port", type=int, default=cfg.world_port, help="crawl surface (Reddit JSON, web, graph)")
    s.add_argument("--eval-port", type=int, default=cfg.world_eval_port, help="clock, ground truth, feedback, faults")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--speedup", type=float, default=60.0, help="simulated seconds per wall second")
    s.add_argument("--start-epoch", type=float, default=1_700_000_000.0)
    s.add_argument("--paused", action="store_true", help="start with the clock paused (advance it via POST /clock)")
    s.add_argument("--clock-file", type=Path, help="keep the simulated time here and resume from it on a restart "
                                                   "(`focuscrawl services up` uses $FOCUSCRAWL_VAR/world/clock.json; "
                                                   "delete it to start the clock over)")
    s.add_argument("--data", type=Path, default=cfg.data_dir,
                   help="real data folder (erisk2017/, wikispeedia/); 'none' for a fully generated world")
    s.add_argument("--users", type=int, default=100_000)
    s.add_argument("--base-rate", type=float, default=0.02)
    s.add_argument("--events-per-minute", type=float, default=60.0)
    s.add_argument("--rate-limit", type=int, default=6000,
                   help="requests per client per window (6000 in reddit's 600 s: 10 a second); 0 = off")
    s.add_argument("--rate-window", type=float, default=REDDIT_WINDOW,
                   help="rate-limit window, wall seconds (reddit's: 600, slices of the clock)")
    s.add_argument("--require-oauth", action="store_true",
                   help="serve reddit's OAuth: POST /api/v1/access_token (client credentials from the environment: "
                        "FOCUSCRAWL_WORLD_OAUTH_CLIENT_ID, FOCUSCRAWL_WORLD_OAUTH_CLIENT_SECRET), bearer token required")
    s.add_argument("--oauth-token-ttl", type=float, default=86400.0, help="wall seconds a token lives (reddit: 86400)")
    s.add_argument("--replay", type=Path, help="serve a recorded crawl (Delta table or JSON lines) instead")
    v = s.add_argument_group("validators (focuscrawl.world.validators; off by default)")
    v.add_argument("--validators", action="store_true",
                   help="web pages carry ETag/Last-Modified; a conditional GET of an unchanged page gets 304")
    v.add_argument("--ignore-validators", type=float, default=0.0, metavar="SHARE",
                   help="with --validators: this share of web hosts sends validators but always answers in full")
    v.add_argument("--validators-seed", type=int, default=0, help="draws which hosts ignore validators")
    f = s.add_argument_group("faults (also settable at run time: POST /faults on the evaluation port)")
    f.add_argument("--error-rate", type=float, default=0.0)
    f.add_argument("--slow-rate", type=float, default=0.0)
    f.add_argument("--slow-seconds", type=float, default=2.0)
    f.add_argument("--truncate-rate", type=float, default=0.0)
    f.add_argument("--malformed-rate", type=float, default=0.0)
    f.add_argument("--redirect-loop", action="append", default=[], metavar="PATH_PREFIX")
    f.add_argument("--robots-disallow", action="append", default=[], metavar="PATH")
    f.add_argument("--dead-host", action="append", default=[], metavar="HOST")
    f.add_argument("--missing-path", action="append", default=[], metavar="PATH",
                   help="a path answered 404, e.g. /search/clicks.json: a web without a click log")
    s.add_argument("--mess", default=None, metavar="JSON",
                   help="how messy the web is, a JSON object of focuscrawl.world.mess.Mess knobs "
                        "(e.g. '{\"variants\": 0.1, \"calendar\": true}'); off by default")
    return p


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.world import Faults, build_world
    from focuscrawl.world.mess import parse_mess
    from focuscrawl.world.server import WorldServer

    args = _parser().parse_args(argv)
    oauth = None
    if args.require_oauth:  # checked before the world is built: a missing credential fails at once
        from focuscrawl.world.oauth import CLIENT_ID_ENV, CLIENT_SECRET_ENV, OAuthEmulator

        try:
            oauth = OAuthEmulator(os.environ.get(CLIENT_ID_ENV, ""), os.environ.get(CLIENT_SECRET_ENV, ""),
                                  args.oauth_token_ttl)
        except ValueError as exc:
            print(f"focuscrawl world: {exc}", file=sys.stderr)
            return 2
    from pydantic import ValidationError

    from focuscrawl.project.world import ValidatorKnobs

    try:  # checked before the world is built, as the OAuth credentials are
        validators = ValidatorKnobs(enabled=args.validators, ignore_share=args.ignore_validators,
                                    seed=args.validators_seed)
    except ValidationError as exc:
        print(f"focuscrawl world: --ignore-validators {args.ignore_validators} is not a share of hosts "
              f"({exc.errors()[0]['msg']}); give one in [0, 1], e.g. 0.1", file=sys.stderr)
        return 2
    try:
        mess = parse_mess(args.mess)
    except ValueError as exc:  # bad JSON or a knob out of range (pydantic's errors are ValueErrors)
        print(f"focuscrawl world: --mess: {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    data = None if args.data is None or str(args.data) == "none" else args.data
    faults = Faults(error_rate=args.error_rate, slow_rate=args.slow_rate, slow_seconds=args.slow_seconds,
                    truncate_rate=args.truncate_rate, malformed_rate=args.malformed_rate,
                    redirect_loop=args.redirect_loop, robots_disallow=args.robots_disallow, dead_hosts=args.dead_host,
                    missing_paths=args.missing_path)
    world = build_world(args.seed, speedup=args.speedup, data_dir=data, cache_dir=settings().var_dir,
                        users=args.users, base_rate=args.base_rate, start_epoch=args.start_epoch,
                        paused=args.paused, rate_limit=args.rate_limit, rate_window=args.rate_window,
                        faults=faults, events_per_minute=args.events_per_minute, mess=mess)
    if args.replay:
        from focuscrawl.world.replay import Replay

        world.replay = Replay.load(args.replay)  # the recorded crawl answers instead of the generated site
    world.oauth = oauth
    world.validators = validators
    clock_file = None
    if args.clock_file:
        from focuscrawl.world.clock import ClockFile

        clock_file = ClockFile(args.clock_file, world.clock, args.seed)
        resumed = clock_file.resume()
        if resumed is not None:
            print(f"focuscrawl world: clock resumed at {resumed:.0f} from {args.clock_file}", file=sys.stderr, flush=True)
        clock_file.keep()
    stop = threading.Event()
    # From a helper thread (set_on_signals): stop.set() in the handler hung a world server for 300 s on a SIGTERM
    # in the CI of af99440, the main thread holding the event's lock inside stop.wait(). Set before the line that
    # says the world is up: a SIGTERM sent on reading it killed the process instead (-15, CI of 64e4d23).
    set_on_signals(stop)
    server = WorldServer(world, args.host, args.port, args.eval_port).start()
    print(json.dumps({"world": server.url, "eval": server.eval_url, "seed": args.seed,
                      "corpus": type(world.population.corpus).__name__,
                      "web": type(world.web).__name__ if world.web else None,
                      "oauth": world.oauth is not None}), flush=True)
    stop.wait()
    server.stop()
    if clock_file is not None:
        clock_file.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
