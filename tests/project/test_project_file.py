"""The crawl project file: malformed files give one clear error naming key and fix; shipped files validate."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from focuscrawl.project.model import WorldKnobs
from focuscrawl.project.template import summary
from focuscrawl.project.values import airflow_schedule, check_schedule, interpolate
from focuscrawl.cli.main import main as cli_main
from focuscrawl.project.examples import read_examples
from focuscrawl.project.loading import load_project
from focuscrawl.project.template import INIT_TEMPLATE
from focuscrawl.project.values import DAG_IDS, ProjectError, parse_duration
from focuscrawl.stream.spec import FetchSpec
from helpers import CHILD_TIMEOUT

ROOT = Path(__file__).resolve().parents[2]

VALID = """\
name = "t"
target = "sites"

[profile]
positives = "pos.jsonl"
negatives = "neg.csv"

[[sites]]
name = "shop"
base_url = "https://shop.example.org"
user_agent = "focuscrawl-test/1 (+mailto:ops@example.org)"
politeness_delay = 0.5

[loops.fue]
method = "HCP"
users_per_hour = 60

[loops.graph]
sampler = "RW"
estimators = ["MLE"]
query_budget = 100

[schedules]
source_schedule = "@hourly"
"""


@pytest.fixture
def folder(tmp_path, monkeypatch):
    (tmp_path / "pos.jsonl").write_text('{"user": "a", "text": "so tired"}\n{"author": "b", "title": "sad", "selftext": "x"}\n')
    (tmp_path / "neg.csv").write_text("author,title,selftext\nc,game night,fun\nd,new car,\n")
    monkeypatch.delenv("FC_TEST_ID", raising=False)
    monkeypatch.delenv("FC_TEST_SECRET", raising=False)
    return tmp_path


def write(folder: Path, text: str) -> Path:
    path = folder / "focuscrawl.toml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_the_valid_base_loads(folder):
    p = load_project(write(folder, VALID))
    assert p.loops.fue.method == "HCP" and p.site().url() == "https://shop.example.org"
    assert [name for name, _, _ in p.enabled_loops()] == ["fue", "sources", "revisits", "graph"]
    assert p.profile.training_set() == ([["so tired"], ["sad\nx"], ["game night\nfun"], ["new car"]], [1, 1, 0, 0])


OAUTH = '\n[sites.oauth]\ntoken_url = "https://shop.example.org/token"\nclient_id_env = "FC_TEST_ID"\nclient_secret_env = "FC_TEST_SECRET"\n'

# (case, edit of VALID, expected key path, a fragment of the fix)
MALFORMED = [
    ("unknown method", ('method = "HCP"', 'method = "HPC"'), "loops.fue.method", "registered: "),
    ("missing examples file", ('"pos.jsonl"', '"gone.jsonl"'), "profile.positives", "does not exist"),
    ("bad URL", ('"https://shop.example.org"', '"shop.example.org"'), "sites[0].base_url", "absolute http(s) URL"),
    ("negative budget", ("users_per_hour = 60", "users_per_hour = -60"), "loops.fue.users_per_hour", "must be > 0"),
    ("unknown key", ("users_per_hour = 60", "user_per_hour = 60"), "loops.fue.user_per_hour", "did you mean 'users_per_hour'"),
    ("front page not a path", ("users_per_hour = 60", 'users_per_hour = 60\nlisting_path = "r/all/new.json"'),
     "loops.fue.listing_path", "start it with '/'"),
    ("wrong type", ("query_budget = 100", 'query_budget = "lots"'), "loops.graph.query_budget", "whole number"),
    ("unreadable file", None, "(file)", "not UTF-8"),
    ("OAuth variable unset", ("politeness_delay = 0.5\n", "politeness_delay = 0.5\n" + OAUTH), "sites[0].oauth.client_id_env",
     "export FC_TEST_ID"),
    ("secret in the file", ("politeness_delay = 0.5\n", "politeness_delay = 0.5\n" + OAUTH + 'client_secret = "hunter22"\n'),
     "sites[0].oauth.client_secret", "remove"),
    ("unknown estimator", ('estimators = ["MLE"]', 'estimators = ["MLE", "MLEE"]'), "loops.graph.estimators", "MLE, NAIVE"),
    ("unknown DAG id", ('source_schedule = "@hourly"', 'source_schedul = "@hourly"'), "schedules.source_schedul",
     "did you mean source_schedule"),
    ("bad schedule", ('source_schedule = "@hourly"', 'source_schedule = "every hour"'), "schedules.source_schedule",
     "cron expression"),
    ("bad cron", ('source_schedule = "@hourly"', 'source_schedule = "61 * * * *"'), "schedules.source_schedule",
     "not a valid cron"),
    ("User-Agent without contact", ('"focuscrawl-test/1 (+mailto:ops@example.org)"', '"mybot/1"'), "sites[0].user_agent",
     "names no contact"),
    ("one class of examples", ('negatives = "neg.csv"\n', ""), "profile.negatives", "add negatives"),
    ("loop on an unknown site", ("[loops.graph]\n", '[loops.graph]\nsite = "shopp"\n'), "loops.graph.site", "declared: shop"),
    ("examples that do not parse", None, "profile.positives", "line 2 of pos.jsonl is not JSON"),
    ("TOML syntax", ("[loops.graph]", "[loops.graph"), "(file)", "not valid TOML"),
    ("unset URL variable", ('"https://shop.example.org"', '"${FC_TEST_URL}"'), "sites[0].base_url", "export FC_TEST_URL"),
    ("zero revisit period", ("[schedules]", '[loops.revisits]\nrevisit_period = "0s"\n[schedules]'),
     "loops.revisits.revisit_period", "not positive"),
    ("zero known pages", ("[schedules]", '[loops.revisits]\nmax_pages = 0\n[schedules]'),
     "loops.revisits.max_pages", "must be > 0"),
    ("world target without the world", ('target = "sites"', 'target = "world"'), "target", "world = true"),
    ("asset events for a DAG no table starts", ("[schedules]", '[asset_events.min_interval]\noutlinks_train = "10m"\n[schedules]'),
     "asset_events.min_interval.outlinks_train", "name one of graph_estimation, outlinks_features, source_schedule"),
    ("asset-event interval not a duration", ("[schedules]", '[asset_events.min_interval]\ngraph_estimation = "10 min"\n[schedules]'),
     "asset_events.min_interval.graph_estimation", 'e.g. "10m"'),
    ("no sites", None, "sites", "required"),
    ("strip param not a name", ("politeness_delay = 0.5\n", 'politeness_delay = 0.5\nstrip_params = ["ref src"]\n'),
     "sites[0].strip_params", "not a query parameter name"),
    ("strip param a bare wildcard", ("politeness_delay = 0.5\n", 'politeness_delay = 0.5\nstrip_params = ["*"]\n'),
     "sites[0].strip_params", "not alone"),
    ("ignore share above one", ("[schedules]", "[world.validators]\nenabled = true\nignore_share = 2\n[schedules]"),
     "world.validators.ignore_share", "1"),
    ("unknown feedback name", ("[schedules]", '[loops.sources]\nfeedback = "clickz"\n[schedules]'),
     "loops.sources.feedback", "did you mean CLICKS"),
    ("clicks feedback without a click log", ("[schedules]", '[loops.sources]\nfeedback = "clicks"\n[schedules]'),
     "loops.sources.clicks_url", "set clicks_url"),
    ("click log with relevance feedback", ("[schedules]", '[loops.sources]\nclicks_url = "https://shop.example.org/c"\n'
                                          "[schedules]"), "loops.sources.clicks_url", "remove clicks_url"),
    ("zero freshness half-life", ("[schedules]", '[loops.sources]\nfreshness_half_life = "0s"\n[schedules]'),
     "loops.sources.freshness_half_life", "not positive"),
    ("click log not a URL", ("[schedules]", '[loops.sources]\nfeedback = "clicks"\nclicks_url = "clicks.json"\n[schedules]'),
     "loops.sources.clicks_url", "absolute http(s) URL"),
    ("clicks feedback without a click log names the topic too", ("[schedules]", '[loops.sources]\nfeedback = "clicks"\n'
                                                                 "[schedules]"), "loops.sources.clicks_url", "or clicks_topic"),
    ("click topic and click log both", ("[schedules]", '[loops.sources]\nfeedback = "clicks"\nclicks_topic = "shop.clicks"\n'
                                        'clicks_url = "https://shop.example.org/c"\n[schedules]'),
     "loops.sources.clicks_topic", "clicks_url is set too"),
    ("click topic with relevance feedback", ("[schedules]", '[loops.sources]\nclicks_topic = "shop.clicks"\n[schedules]'),
     "loops.sources.clicks_topic", "remove clicks_topic or set feedback = \"clicks\""),
    ("click topic with a space", ("[schedules]", '[loops.sources]\nfeedback = "clicks"\nclicks_topic = "shop clicks"\n'
                                  "[schedules]"), "loops.sources.clicks_topic", "not a Kafka topic name"),
    ("click topic empty", ("[schedules]", '[loops.sources]\nfeedback = "clicks"\nclicks_topic = ""\n[schedules]'),
     "loops.sources.clicks_topic", "e.g. \"shop.clicks\""),
    ("click topic of 250 characters", ("[schedules]", f'[loops.sources]\nfeedback = "clicks"\nclicks_topic = "{"c" * 250}"\n'
                                       "[schedules]"), "loops.sources.clicks_topic", "1 to 249"),
    ("click topic a dot", ("[schedules]", '[loops.sources]\nfeedback = "clicks"\nclicks_topic = ".."\n[schedules]'),
     "loops.sources.clicks_topic", "not a Kafka topic name"),
    ("click topic ending in a newline", ("[schedules]", '[loops.sources]\nfeedback = "clicks"\nclicks_topic = "shop\\n"\n'
                                         "[schedules]"), "loops.sources.clicks_topic", "not a Kafka topic name"),
    ("click topic from an unset variable", ("[schedules]", '[loops.sources]\nfeedback = "clicks"\n'
                                            'clicks_topic = "${FC_TEST_TOPIC}"\n[schedules]'),
     "loops.sources.clicks_topic", "export FC_TEST_TOPIC"),
]


@pytest.mark.parametrize("case,edit,key,fix", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_file_gives_one_error_naming_key_and_fix(folder, monkeypatch, case, edit, key, fix):
    monkeypatch.delenv("FC_TEST_URL", raising=False)
    monkeypatch.delenv("FC_TEST_TOPIC", raising=False)
    text: str | bytes = VALID
    if edit is not None:
        assert edit[0] in VALID, case
        text = VALID.replace(edit[0], edit[1], 1)
    elif case == "unreadable file":
        text = b"\xff\xfe\x00name = 1"
    elif case == "examples that do not parse":
        (folder / "pos.jsonl").write_text('{"user": "a", "text": "x"}\n{"user": "b", "text": \n')
    elif case == "no sites":
        text = VALID.split("[[sites]]")[0]
    path = write(folder, text)
    with pytest.raises(ProjectError) as err:
        load_project(path)
    message = str(err.value)
    assert err.value.key == key, message
    assert fix in message, message
    assert "\n" not in message and message.startswith(f"{path}: {key}: ")


def test_the_table_covers_at_least_ten_distinct_faults():
    assert len({m[0] for m in MALFORMED}) >= 10


def test_validate_cli_prints_the_one_error_and_exits_2(folder, capsys):
    path = write(folder, VALID.replace('method = "HCP"', 'method = "HPC"'))
    assert cli_main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "loops.fue.method" in err[0] and "HPC" in err[0]


def test_a_process_given_a_bad_fetch_spec_starts_nothing(folder):
    """The crawler exits 2 with the one-line error naming the field before it dials Kafka (no broker runs on
    this port): the project is validated where it is loaded, its resolved site where a process reads it."""
    spec = json.loads(FetchSpec(site=load_project(write(folder, VALID)).site()).model_dump_json())
    spec["site"]["politeness_delay"] = -1
    (folder / "bad.json").write_text(json.dumps(spec))
    out = subprocess.run([sys.executable, "streaming/crawler.py", "--fetch-spec", str(folder / "bad.json"),
                          "--bootstrap", "127.0.0.1:9", "--status-file", str(folder / "status.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    assert out.returncode == 2, out.stderr
    assert "site.politeness_delay" in out.stderr and "Kafka" not in out.stderr
    assert not (folder / "status.json").exists()


def test_init_then_validate_round_trip(tmp_path, shared_data, capsys):
    assert cli_main(["init", str(tmp_path)]) == 0
    assert (tmp_path / "focuscrawl.toml").read_text() == INIT_TEMPLATE
    assert cli_main(["init", str(tmp_path)]) == 2  # refuses to overwrite
    assert "--force" in capsys.readouterr().err
    assert cli_main(["init", str(tmp_path), "--force"]) == 0
    assert cli_main(["validate", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip().endswith("valid")


def test_help_texts_carry_an_example(capsys):
    for command in ("init", "validate"):
        with pytest.raises(SystemExit):
            cli_main([command, "--help"])
        assert "example: focuscrawl " in capsys.readouterr().out


def test_world_project_validates_with_every_loop_on(shared_data):
    p = load_project(ROOT / "projects" / "world.toml")
    assert p.target == "world" and p.site().world
    assert [name for name, _, _ in p.enabled_loops()] == ["fue", "sources", "revisits", "graph"]
    histories, labels = p.profile.training_set()
    assert (labels.count(1), labels.count(0)) == (83, 403)  # the eRisk 2017 training users


def test_the_active_project_is_read_as_up_resolved_it_not_as_its_file_reads_now(shared_data, tmp_path):
    """``load_active`` rebuilds the running project from run/project.json (computed fields and ``up``'s own entries
    dropped): the same project, and one derived in memory (the live platform test's) stays derived."""
    from focuscrawl.project.loading import load_active

    world = ROOT / "projects" / "world.toml"
    p = load_project(world, check_env=False)
    assert load_active({**p.to_json(), "project_file": str(world), "pseudo_methods": [], "models": None}) == p
    derived = p.model_copy(update={"name": "derived"})
    assert load_active({**derived.to_json(), "project_file": str(world)}).name == "derived"


def test_the_page_relevance_refit_and_the_page_focus_flags_are_the_running_projects(shared_data, tmp_path,
                                                                                   monkeypatch):
    """The ``page_relevance`` task and the DAG tasks that judge pages by the page focus read the project ``up`` runs
    (``running_project``): on a project derived in memory (the live platform test's, another name) they refit and read
    its page model store, not the one of the file's name. Before, both re-read the file: the live test's page relevance
    refit went to project ``world``'s store, so its own model never got a second version."""
    from types import SimpleNamespace

    from focuscrawl.config import settings
    from focuscrawl.core.status_file import write_status
    from focuscrawl.orchestration.schedules import ACTIVE_PROJECT, running_project
    from focuscrawl.platform import train
    from focuscrawl.relevance import train as relevance

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    cfg = settings()
    assert running_project(cfg) is None and train.active_relevance_args(cfg) == []
    world = ROOT / "projects" / "world.toml"
    derived = load_project(world, check_env=False).model_copy(update={"name": "derived"})
    write_status(tmp_path / ACTIVE_PROJECT, {**derived.to_json(), "project_file": str(world)})
    assert running_project(cfg).name == "derived"
    flags = train.active_relevance_args(cfg)
    assert flags[flags.index("--relevance-store") + 1] == str(relevance.page_store(cfg, "derived").root)
    monkeypatch.setattr(relevance, "train_page_model",
                        lambda project, cfg, log=print: SimpleNamespace(to_json=lambda: {"project": project.name}))
    assert train.train_active_project(cfg) == {"project": "derived"}


def test_a_site_strips_its_own_tracking_parameters_from_its_canonical_keys(folder):
    p = load_project(write(folder, VALID.replace("politeness_delay = 0.5\n",
                                                 'politeness_delay = 0.5\nstrip_params = ["ref_src", "sid_*"]\n')))
    site = p.site()
    assert site.canonical("https://Shop.example.org:443/a?b=1&ref_src=tw&sid_x=9&utm_source=m#top") == \
        "https://shop.example.org/a?b=1"
    assert load_project(write(folder, VALID)).site().canonical("https://shop.example.org/a?ref_src=tw") == \
        "https://shop.example.org/a?ref_src=tw"


def test_the_world_knobs_reach_the_world_server_command(shared_data):
    from focuscrawl.config import settings
    from focuscrawl.services.manager import WorldService

    p = load_project(ROOT / "projects" / "world.toml")
    assert p.world.validators.enabled and 0 < p.world.validators.ignore_share < 1
    args = p.world.serve_args()
    command = WorldService(settings(), args).process.command
    assert command[-len(args):] == args and "--validators" in command
    assert WorldKnobs().serve_args() == []  # the neutral default adds nothing


def test_reddit_template_validates_and_interpolates(shared_data, monkeypatch):
    monkeypatch.setenv("REDDIT_CLIENT_ID", "id-from-env")
    monkeypatch.setenv("REDDIT_CLIENT_SECRET", "secret-from-env")
    monkeypatch.delenv("REDDIT_API_URL", raising=False)
    monkeypatch.delenv("REDDIT_TOKEN_URL", raising=False)
    p = load_project(ROOT / "projects" / "reddit.toml")
    site = p.site("reddit")
    assert site.url() == "https://oauth.reddit.com"
    assert site.oauth.token_url == "https://www.reddit.com/api/v1/access_token"
    assert site.rate_limit_headers and "/u/" in site.user_agent
    assert "secret-from-env" not in str(p.to_json()) and "id-from-env" not in str(p.to_json())
    monkeypatch.setenv("REDDIT_API_URL", "http://127.0.0.1:18090")
    assert load_project(ROOT / "projects" / "reddit.toml").site("reddit").url() == "http://127.0.0.1:18090"
    monkeypatch.delenv("REDDIT_CLIENT_SECRET")
    with pytest.raises(ProjectError, match=r"sites\[0\]\.oauth\.client_secret_env: environment variable REDDIT_CLIENT_SECRET"):
        load_project(ROOT / "projects" / "reddit.toml")


def test_interpolation():
    env = {"A": "http://h:1", "EMPTY": ""}
    assert interpolate("${A}/x", env) == "http://h:1/x"
    assert interpolate("${B:-https://d.example}/y", env) == "https://d.example/y"
    assert interpolate("${EMPTY:-z}", env) == "z"
    assert interpolate("no vars", env) == "no vars"
    with pytest.raises(ValueError, match=r"export B="):
        interpolate("${B}", env)


def test_schedules_and_durations():
    assert parse_duration("1h30m").total_seconds() == 5400
    assert airflow_schedule("5m").total_seconds() == 300
    assert airflow_schedule("*/5 * * * *") == "*/5 * * * *"
    assert airflow_schedule("none") is None
    for bad in ("5 minutes", "@hurly", "99 * * * *"):
        with pytest.raises(ValueError):
            check_schedule(bad)


def test_asset_event_intervals_per_dag(folder):
    text = VALID.replace("[schedules]", '[asset_events.min_interval]\ngraph_estimation = "10m"\n'
                                        'source_schedule = "1h30m"\n[schedules]')
    p = load_project(write(folder, text))
    assert p.asset_events.seconds() == {"graph_estimation": 600.0, "source_schedule": 5400.0}
    assert "asset events for graph_estimation: at most every 10m" in summary(p)
    assert load_project(write(folder, VALID)).asset_events.seconds() == {}  # none named: the poster's 1 minute
    faults = [('graph_estimaton = "10m"', "did you mean graph_estimation?"),
              ('fue_pseudo_training = "10m"', "not started by a stream-landed table"),
              ('graph_estimation = "0s"', "not a positive duration"),
              ("graph_estimation = 600", 'write one in quotes, e.g. "10m"')]
    for line, fix in faults:
        with pytest.raises(ProjectError, match=re.escape(fix)):
            load_project(write(folder, VALID.replace("[schedules]", f"[asset_events.min_interval]\n{line}\n[schedules]")))
    with pytest.raises(ProjectError, match=r"asset_events.min_interval: '5m' names no DAG; .*graph_estimation = \"5m\""):
        load_project(write(folder, VALID.replace("[schedules]", '[asset_events]\nmin_interval = "5m"\n[schedules]')))
    # a DAG that runs only when triggered gets no Asset event to pace
    with pytest.raises(ProjectError) as err:
        load_project(write(folder, text.replace('source_schedule = "@hourly"', 'source_schedule = "none"')))
    assert err.value.key == "asset_events.min_interval.source_schedule" and 'schedule it on "assets"' in str(err.value)


def test_dag_ids_match_the_dag_files():
    found = set()
    for path in (ROOT / "dags").glob("*.py"):
        found |= set(re.findall(r'dag_id="([a-z_]+)"', path.read_text()))
    assert set(DAG_IDS) == found


def test_example_formats(tmp_path):
    xml = tmp_path / "subject1.xml"
    xml.write_text("<INDIVIDUAL><ID>s1</ID><WRITING><TITLE> hi </TITLE><DATE>2015-01-01 10:00:00</DATE>"
                   "<INFO>reddit post</INFO><TEXT> so tired </TEXT></WRITING></INDIVIDUAL>")
    assert read_examples(xml, "erisk") == {"s1": ["hi\nso tired"]}
    bad = tmp_path / "x.csv"
    bad.write_text("name,body\nq,w\n")
    with pytest.raises(ValueError, match="needs a user"):
        read_examples(bad, "csv")


def test_the_sources_feedback_defaults_by_target(folder):
    """Real sites have no click log: their sources loop learns from relevance; the world's from its clicks."""
    sites = load_project(write(folder, VALID))
    assert sites.loops.sources.feedback == "relevance" and sites.loops.sources.freshness_half_life_s == 86400.0
    # what source_schedule's DAG reads from run/project.json: the resolved signal and the half-life in seconds
    assert {k: sites.to_json()["loops"]["sources"][k] for k in ("feedback", "freshness_half_life_s")} == \
        {"feedback": "relevance", "freshness_half_life_s": 86400.0}
    world = load_project(write(folder, VALID.replace('target = "sites"', 'target = "world"').replace(
        'base_url = "https://shop.example.org"', "world = true")))
    assert world.loops.sources.feedback == "clicks" and world.loops.sources.clicks_url is None
    clicks = load_project(write(folder, VALID.replace("[schedules]", '[loops.sources]\nfeedback = "Clicks"\n'
                                                      'clicks_url = "https://shop.example.org/c.json"\n[schedules]')))
    assert clicks.loops.sources.feedback == "clicks"


def test_a_click_topic_stands_for_the_click_log(folder, monkeypatch):
    """With clicks_topic a site with no known click log needs no clicks_url; the name may come from a variable."""
    monkeypatch.setenv("FC_TEST_TOPIC", "analytics.page-clicks_v2")
    topic = load_project(write(folder, VALID.replace("[schedules]", '[loops.sources]\nfeedback = "clicks"\n'
                                                     'clicks_topic = "${FC_TEST_TOPIC}"\n[schedules]')))
    sources = topic.loops.sources
    assert (sources.feedback, sources.clicks_topic, sources.clicks_url) == ("clicks", "analytics.page-clicks_v2", None)
    assert topic.to_json()["loops"]["sources"]["clicks_topic"] == "analytics.page-clicks_v2"
    longest = load_project(write(folder, VALID.replace("[schedules]", '[loops.sources]\nfeedback = "clicks"\n'
                                                       f'clicks_topic = "{"c" * 249}"\n[schedules]')))
    assert len(longest.loops.sources.clicks_topic) == 249
