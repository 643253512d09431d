"""The focuscrawl view inside the Airflow UI: each loop as ``focuscrawl status`` sees it, as one page with plots.

Served by ``plugins/focuscrawl_view.py`` through Airflow's API server, behind its login (see
docs/running.md#the-focuscrawl-view-in-the-airflow-ui). The numbers are those of ``focuscrawl status``
(:func:`focuscrawl.platform.status.collect`: the supervisor's processes and their health, the services'
probes with their fixes, consumer lag, each loop's figures from the status files and the lake); the harvest
plot is ``focuscrawl report harvest``'s (:func:`focuscrawl.reports.harvest.plot_harvest`) of one loop. Per
loop the page shows its processes, its figures (frontier, candidates), the pushes it applied and the model
versions that chose its fetches (the ``chosen_by_*`` columns its table lands, :mod:`focuscrawl.lake.decision`),
its consumers' lag, its harvest over time and its processes' recent errors with what to do.
A part that is down is named on the page with its fix, never left out.

For a user the plugin's ``admin`` dependency lets through (the Airflow Admin role), each loop's section also
offers the steering commands of the command line (pause, resume, budget, seeds add) as forms; a form posts to
``control/<action>`` and goes through :func:`focuscrawl.platform.commands.steer`, the command line's own path,
recorded in ``control_audit`` under the Airflow user's name. Beside them, the state the control topic holds
(what the commands set) and the state the loop's running processes report applying.
"""

import html  # no `from __future__ import annotations`: FastAPI reads the routes' annotations (Request) at runtime
import io
import time
from pathlib import Path
from urllib.parse import quote

from focuscrawl.core.status_file import read_status
from focuscrawl.platform import status

LOOPS = ("fue", "sources", "revisits", "graph")
# The loop's figure that counts the pushes its running process applied (focuscrawl status's name for it).
PUSHES = {"fue": "pushes_applied", "sources": "schedules_applied", "revisits": "priorities_applied"}
# The table where each of the loop's fetches lands with the push that chose it.
CHOSEN_IN = {"fue": "fue_extractions", "sources": "source_recrawls", "revisits": "page_snapshots"}
NESTED = ("top", "latest", "over_time", "control")  # figures shown apart from the loop's table of figures


def chosen_by(cfg, loop: str) -> list[dict]:
    """The model versions whose pushes chose the loop's fetches, as its table landed them: per
    ``(chosen_by_model, chosen_by_model_version)``, the fetches it chose, newest version first (no push:
    model None). Empty when the loop lands no such table yet."""
    from focuscrawl.lake import open_table

    dt = open_table(cfg.table_path(CHOSEN_IN[loop])) if loop in CHOSEN_IN else None
    if dt is None:
        return []
    columns = ["chosen_by_model", "chosen_by_model_version"]
    if not set(columns) <= set(dt.to_pyarrow_dataset().schema.names):
        return []
    frame = dt.to_pyarrow_table(columns=columns).to_pandas()
    counts = frame.groupby(columns, dropna=False).size().reset_index(name="fetches")
    counts = counts.sort_values("chosen_by_model_version", ascending=False, na_position="last")
    return [{"model": None if m != m else m, "version": None if v != v else int(v), "fetches": int(n)}
            for m, v, n in counts.itertuples(index=False)]


def document(cfg, *, kafka: bool = True) -> dict:
    """Everything the view shows: ``focuscrawl status``'s document (without the DAG runs: Airflow's own pages
    show those), each loop's processes and consumer groups, and the model versions that chose its fetches."""
    doc = status.collect(cfg, kafka=kafka, airflow=False)
    specs = read_status(Path(cfg.var_dir) / "platform" / "specs.json").get("specs", [])
    groups: dict[str, list[str]] = {}
    for spec in specs:
        if (spec.get("meta") or {}).get("group"):
            groups.setdefault(spec.get("loop"), []).append(spec["meta"]["group"])
    shown = list(doc["loops"]) or list(LOOPS)
    doc["view"] = {loop: {"processes": [p for p in doc.get("processes", []) if p.get("loop") == loop],
                          "groups": sorted(groups.get(loop, [])),
                          "chosen_by": status.guarded(lambda loop=loop: chosen_by(cfg, loop))}
                   for loop in shown}
    doc["commanded"] = _commanded(cfg) if kafka else {"error": "not read"}
    return doc


def _commanded(cfg) -> dict:
    """The control topic's state per loop (:func:`focuscrawl.control.commanded`), or ``{"error": ...}``."""
    from focuscrawl.control import commanded
    from focuscrawl.services.process import port_open

    host, _, port = cfg.kafka_bootstrap.split(",")[0].rpartition(":")
    if not port_open(host, int(port)):
        return {"error": f"Kafka not running at {cfg.kafka_bootstrap}"}
    try:
        return commanded(cfg.kafka_bootstrap, timeout_s=10)
    except Exception as e:  # noqa: BLE001 - the page shows what failed instead of failing
        return {"error": f"{type(e).__name__}: {e}"}


def harvest_png(cfg, loop: str) -> bytes | None:
    """The loop's harvest over time as ``focuscrawl report harvest`` draws it (PNG), None when it landed no
    scored item yet."""
    from focuscrawl.orchestration.schedules import active_project
    from focuscrawl.relevance.harvest import harvest_series, read_items
    from focuscrawl.reports.harvest import plot_harvest

    series = harvest_series(read_items(cfg, status.page_threshold(active_project(cfg))), status.HARVEST_BIN)
    series = series[series.loop == loop]
    if series.empty:
        return None
    out = io.BytesIO()
    plot_harvest(series, out)
    return out.getvalue()


# -- the page ---------------------------------------------------------------------------------

STYLE = """body{font-family:system-ui,sans-serif;margin:1rem 1.5rem;color:#1a202c}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin:0 0 .5rem}h3{font-size:.95rem;margin:.8rem 0 .3rem}
table{border-collapse:collapse;font-size:.85rem}td,th{border:1px solid #cbd5e0;padding:.2rem .5rem;text-align:left}
th{background:#edf2f7}.loop{border:1px solid #a0aec0;border-radius:6px;padding:.8rem 1rem;margin:1rem 0}
.missing{color:#9b2c2c}.up{color:#276749}.down{color:#9b2c2c;font-weight:600}code{background:#edf2f7;padding:0 .2rem}
img{max-width:100%;border:1px solid #e2e8f0}.steer form{display:inline-block;margin:0 1rem .4rem 0}
.sent{color:#276749}.cols{display:flex;gap:2rem;flex-wrap:wrap}"""


def _e(value) -> str:
    return html.escape(status.shown(value))


def _rows(header: list[str], rows: list[list], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table class='{cls}'><tr>{head}</tr>{body}</table>"


def _missing(what: str, fix: str) -> str:
    return f"<p class='missing'>{html.escape(what)}: {fix}</p>"


def _services(doc: dict) -> str:
    svc = doc.get("services") or {}
    if "error" in svc:
        return _missing("services not probed", html.escape(svc["error"]))
    return _rows(["service", "state", "what its probe found", "fix"], [
        [html.escape(name), "<span class='up'>up</span>" if s.get("up") else "<span class='down'>down</span>",
         _e(s.get("detail")), html.escape(s.get("fix") or "") if not s.get("up") else ""]
        for name, s in svc.items()], "services")


def _control(doc: dict, loop: str, steer: bool) -> str:
    """The loop's control state (as the control topic holds it, and as its processes report applying it) and,
    when ``steer``, the forms that send the command line's steering commands."""
    from focuscrawl.control import BUDGETS, SEEDED

    out = ["<h3>Control</h3>"]
    commanded = doc.get("commanded") or {}
    if "error" in commanded:
        out.append(_missing("control topic not read", f"{html.escape(commanded['error'])}: "
                            "<code>focuscrawl services up --only kafka</code>"))
    else:
        state = commanded.get(loop) or {}
        budgets = ", ".join(f"{html.escape(k)} {_e(v)}" for k, v in (state.get("budgets") or {}).items())
        out.append(f"<p class='control-state'>commanded: <b>{'paused' if state.get('paused') else 'running'}</b>"
                   f"{'; budgets ' + budgets if budgets else ''}; seeds added: {_e(state.get('seeds_added', 0))}</p>")
    applied = (doc["loops"].get(loop) or {}).get("control")
    out.append(f"<p>applied by the running processes: {'paused' if applied.get('paused') else 'running'}</p>"
               if applied else "<p>applied by the running processes: none reports a control state</p>")
    if not steer:
        return "".join(out)
    hidden = f"<input type='hidden' name='loop' value='{html.escape(loop)}'>"
    out.append("<div class='steer'>")
    for action in ("pause", "resume"):
        out.append(f"<form method='post' action='control/{action}' class='{action}'>{hidden}"
                   f"<button type='submit'>{action} {html.escape(loop)}</button></form>")
    knobs = "".join(f"<option>{html.escape(k)}</option>" for k in BUDGETS[loop])
    out.append(f"<form method='post' action='control/budget' class='budget'>{hidden}<select name='knob'>{knobs}"
               "</select> <input name='value' type='number' step='any' min='0' required placeholder='new budget'> "
               "<button type='submit'>set budget</button></form>")
    if loop in SEEDED:
        out.append(f"<form method='post' action='control/seeds' class='seeds'>{hidden}"
                   "<input name='site' required placeholder='site'> <textarea name='urls' rows='1' cols='50' required "
                   "placeholder='seed URLs, one a line'></textarea> <button type='submit'>add seeds</button></form>")
    out.append("</div>")
    return "".join(out)


def _loop(doc: dict, loop: str, steer: bool = False) -> str:
    figures, part = doc["loops"].get(loop, {}), doc["view"][loop]
    out = [f"<section class='loop' id='loop-{loop}'><h2>{html.escape(loop)}</h2>"]
    control = figures.get("control") or {}
    if control.get("paused"):
        out.append(f"<p class='missing'>paused: <code>focuscrawl resume {html.escape(loop)}</code> resumes it</p>")
    out.append(_control(doc, loop, steer))
    # processes and health
    out.append("<h3>Processes</h3>")
    if part["processes"]:
        out.append(_rows(["process", "state", "health", "pid", "restarts", "last exit"], [
            [html.escape(p["name"]), _e(p.get("state")), _e(p.get("health")), _e(p.get("pid")),
             _e(p.get("restarts", 0)), _e(p.get("last_exit"))] for p in part["processes"]], "processes"))
    else:
        out.append(_missing("no process of this loop is running", "<code>focuscrawl up PROJECT.toml</code> starts them"))
    # harvest over time, figures, pushes
    out.append("<div class='cols'><div><h3>Harvest over time</h3>")
    if "over_time" in figures:
        t = figures["over_time"]
        out.append(f"<img class='harvest' src='harvest/{loop}.png' alt='harvest of {loop} over time' width='720'>"
                   f"<p>since the start: {t['cumulative']:.3f}</p>")
    else:
        out.append(_missing("no scored page landed yet", "a project with <code>[profile.pages]</code>, trained by "
                            "<code>focuscrawl train</code>, scores them"))
    out.append("</div><div><h3>Figures</h3>")
    if "error" in figures:
        out.append(_missing("figures not readable", html.escape(figures["error"])))
    else:
        flat = {k: v for k, v in figures.items() if k not in NESTED}
        out.append(_rows(["figure", "value"], [[html.escape(k.replace("_", " ")), _e(v)] for k, v in
                                               {**flat, **control.get("budgets", {})}.items()], "figures"))
        if figures.get("top"):
            out.append("<p>head of the order: " + ", ".join(
                html.escape(str(t[0] if isinstance(t, (list, tuple)) else t)) for t in figures["top"][:5]) + "</p>")
        for e in figures.get("latest") or []:
            out.append(f"<p>{_e(e['estimator'])}/{_e(e['target'])} {_e(e['value'])}: {_e(e['estimate'])} "
                       f"[{_e(e['ci_low'])}, {_e(e['ci_high'])}] ({_e(e['crawl_id'])})</p>")
    out.append("<h3>Pushes</h3>")
    if loop in PUSHES:
        applied = figures.get(PUSHES[loop])
        out.append(f"<p class='pushes'>pushes applied by the running process: <b>{_e(applied)}</b></p>")
        if isinstance(part["chosen_by"], dict):  # status.guarded's error
            out.append(_missing(f"what chose its fetches not readable from {CHOSEN_IN[loop]}",
                                html.escape(part["chosen_by"]["error"])))
        elif part["chosen_by"]:
            out.append(_rows(["model whose push chose", "version", "fetches chosen"], [
                [_e(c["model"] or "(no push: the method's own order)"), _e(c["version"]), _e(c["fetches"])]
                for c in part["chosen_by"]], "chosen-by"))
        else:
            out.append(_missing(f"no fetch landed in {CHOSEN_IN[loop]} yet", "the loop's consumer lands them"))
    else:
        out.append("<p>this loop follows no push: its DAG writes estimates</p>")
    out.append("</div></div>")
    # consumer lag
    lag = doc.get("lag") or {}
    out.append("<h3>Consumer lag</h3>")
    if "error" in lag:
        out.append(_missing("consumer lag not read", f"Kafka {html.escape(lag['error'])}: "
                            "<code>focuscrawl services up --only kafka</code>"))
    else:
        rows = [[html.escape(g), html.escape(topic), _e(r["lag"]),
                 (f"{_e(r['delta_lag'])} ({html.escape(r['table'])})" if "table" in r else "-")]
                for g in part["groups"] for topic, r in (lag.get(g) or {}).items()]
        out.append(_rows(["group", "topic", "Kafka lag", "Delta lag"], rows, "lag") if rows
                   else "<p>no consumer group of this loop yet</p>")
    # recent errors with their fix
    errors = [p for p in part["processes"] if p.get("last_error")]
    out.append("<h3>Recent errors</h3>")
    if errors:
        for p in errors:
            lines = "\n".join(p["last_error"][-3:])
            out.append(f"<p><b>{html.escape(p['name'])}</b> ({_e(p.get('state'))}, exit {_e(p.get('last_exit'))}):</p>"
                       f"<pre>{html.escape(lines)}</pre><p>fix: its whole log is <code>focuscrawl logs "
                       f"{html.escape(p['name'])}</code>; the supervisor restarts it with back-off, and after a crash "
                       "loop <code>focuscrawl up</code> starts it again once the cause is fixed</p>")
    else:
        out.append("<p>none</p>")
    out.append("</section>")
    return "".join(out)


def page(doc: dict, steer: bool = False, sent: str | None = None) -> str:
    """The view as one HTML page (no script; plots as images beside it: ``harvest/<loop>.png``); ``steer``: with
    the steering forms, ``sent``: the command just sent, said at the top."""
    sup = doc.get("supervisor") or {}
    head = (f"supervisor pid {sup['pid']}" if sup.get("running") else
            "supervisor not running: <code>focuscrawl up PROJECT.toml</code> starts the platform")
    at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(doc.get("at") or time.time()))
    return ("<!doctype html><html><head><meta charset='utf-8'><title>focuscrawl</title>"
            f"<style>{STYLE}</style></head><body>"
            f"<h1>focuscrawl: project {_e(doc.get('project') or '(none active)')}</h1>"
            f"<p>{head}. As <code>focuscrawl status</code> saw it at {at}; reload for now.</p>"
            + (f"<p class='sent'>sent: {html.escape(sent)}</p>" if sent else "")
            + f"<h3>Services</h3>{_services(doc)}"
            + "".join(_loop(doc, loop, steer) for loop in doc["view"]) + "</body></html>")


def same_origin(request) -> bool:
    """Whether a browser's POST comes from the page it was served (its ``Origin``, else its ``Referer``, names the
    host it was sent to), the check against a cross-site form: a request naming neither is not a browser's form
    (a bearer token's client, which no other site can make a browser send)."""
    from urllib.parse import urlsplit

    origin = request.headers.get("origin") or request.headers.get("referer")
    if origin is None:
        return True
    return urlsplit(origin).netloc.lower() == (request.headers.get("host") or "").lower()


def app(auth, admin):
    """The view as a FastAPI app. ``auth`` is a FastAPI dependency every route runs first (the plugin passes
    Airflow's: an unauthenticated request is refused before any figure is read). ``admin`` is a dependency that
    gives the name of a user allowed to steer the crawl, or None: the steering forms are shown to such a user
    only, and each ``control/<action>`` POST of anyone else is refused (403) before anything is sent."""
    from argparse import Namespace

    from fastapi import Depends, FastAPI, HTTPException, Request
    from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

    from focuscrawl.config import settings
    from focuscrawl.control import ControlError
    from focuscrawl.platform.commands import SteerUnavailable, steer
    from focuscrawl.project.values import ProjectError

    api = FastAPI(title="focuscrawl", dependencies=[Depends(auth)], docs_url=None, redoc_url=None, openapi_url=None)

    @api.get("/", response_class=HTMLResponse)
    def view(sent: str | None = None, user: str | None = Depends(admin)) -> str:
        return page(document(settings()), steer=user is not None, sent=sent)

    @api.get("/status.json")
    def as_json() -> JSONResponse:
        import json

        return JSONResponse(json.loads(json.dumps(document(settings()), default=str)))

    @api.get("/harvest/{loop}.png")
    def harvest(loop: str) -> Response:
        if loop not in LOOPS:
            raise HTTPException(404, f"no loop {loop!r}; loops: {', '.join(LOOPS)}")
        png = harvest_png(settings(), loop)
        if png is None:
            raise HTTPException(404, f"{loop} landed no scored item yet")
        return Response(png, media_type="image/png", headers={"Cache-Control": "no-store"})

    def refused(status_code: int, message: str) -> HTMLResponse:
        return HTMLResponse(f"<!doctype html><html><head><meta charset='utf-8'><title>focuscrawl</title></head><body>"
                            f"<p class='refused'>refused: {html.escape(message)}</p><p><a href='../'>back to the view"
                            "</a></p></body></html>", status_code=status_code)

    @api.post("/control/{action}", response_class=HTMLResponse)
    async def control(action: str, request: Request, user: str | None = Depends(admin)) -> Response:
        if user is None:
            raise HTTPException(403, "steering the crawl needs the Airflow Admin role")
        if not same_origin(request):
            raise HTTPException(403, "a form of another site: post from the focuscrawl view")
        if action not in ("pause", "resume", "budget", "seeds"):
            return refused(404, f"no action {action!r}; actions: pause, resume, budget, seeds")
        form = await request.form()
        loop = str(form.get("loop") or "")
        try:
            if action == "seeds":
                urls = str(form.get("urls") or "").split()
                if not urls:
                    raise ControlError("no seed URL given")
                args = Namespace(command="seeds", site=str(form.get("site") or "").strip(), urls=urls)
            else:
                if loop not in LOOPS:
                    raise ControlError(f"unknown loop {loop!r}; one of {', '.join(LOOPS)}")
                args = Namespace(command=action, loop=loop)
                if action == "budget":
                    try:
                        value = float(str(form.get("value") or ""))
                    except ValueError:
                        raise ControlError(f"{loop} budget must be a number > 0, got {form.get('value')!r}") from None
                    args.knob, args.value = str(form.get("knob") or ""), value
            commands = steer(settings(), args, by=user)
        except (ControlError, ProjectError) as e:
            return refused(400, str(e))
        except SteerUnavailable as e:
            return refused(503, str(e))
        sent = "; ".join(" ".join([c.action, c.loop, *([c.knob] if c.knob else []),
                                   *([str(c.value)] if c.value is not None else [])]) for c in commands)
        return RedirectResponse(f"../?sent={quote(sent)}", status_code=303)

    return api
