"""The crawl project file (``focuscrawl.toml``): the user's focus, sites, loops, budgets and schedules.

One TOML file declares everything a running platform needs:

- ``profile``: the target users, as positive and negative example users (eRisk XML, JSONL or
  CSV files) or a driving ``query``;
- ``[[sites]]``: each site and how to reach it: its base URL (or ``world = true`` for the
  embedded world at the settings' URL), a User-Agent that names a contact, the politeness
  delay, whether the site's ``X-Ratelimit-*`` headers are obeyed, and OAuth2 client
  credentials read from *named* environment variables (the secret is never in the file),
  ``strip_params``: the site's own tracking or session parameters, removed from its URLs' canonical
  keys besides the common ones (:data:`focuscrawl.parse.canon.TRACKING_PARAMS`), and
  ``[sites.scope]``: which URLs its crawlers may enqueue (:class:`focuscrawl.fetch.scope.ScopeRules`);
- ``[loops.fue|sources|revisits|graph]``: which of the four learning loops run, on which site,
  with which registered method (the same registries ``--methods HCP,RND`` reads) and budget;
- ``[schedules]``: per DAG id, a cron expression, an Airflow preset, a duration or ``assets``;
- ``[asset_events.min_interval]``: per DAG id started by a table the stream processes land, the
  least time between two runs those tables' Asset events start (``focuscrawl.orchestration.asset_events``);
- ``[warc]``: whether fetched pages are also written as WARC;
- ``[world.validators]``: whether the embedded world serves ``ETag``/``Last-Modified`` and 304s
  (:class:`focuscrawl.project.world.ValidatorKnobs`);
- ``[world.mess]``: how messy the embedded world's web is (:class:`focuscrawl.project.world.MessKnobs`).

``load_project(path)`` reads and validates the file with pydantic (every model is frozen and
forbids unknown keys); any fault is one :class:`ProjectError` whose one-line message names the
key path (``loops.fue.method``) and the fix. Example files are opened and parsed, registered
names are looked up in the real registries, and the OAuth variables must be set, so a project
that validates is one that can start.

URLs and paths may use ``${VAR}`` or ``${VAR:-default}``; besides the environment,
``FOCUSCRAWL_DATA``, ``FOCUSCRAWL_HOME`` and ``FOCUSCRAWL_WORLD_URL`` default to the settings'
values. Relative paths are relative to the project file's folder.
"""

from __future__ import annotations

import difflib
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    computed_field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from focuscrawl.ephemeral.params import DEFAULT as EPHEMERAL
from focuscrawl.fetch.scope import ScopeRules
from focuscrawl.fue.params import DEFAULT as FUE
from focuscrawl.graph.params import DEFAULT as GRAPH
from focuscrawl.outlinks.params import DEFAULT as OUTLINKS
from focuscrawl.outlinks.params import WEEK as OUTLINKS_WEEK
from focuscrawl.project.examples import (
    erisk_users,
    examples_path,
    infer_format,
    page_entries,
    read_examples,
)
from focuscrawl.project.values import (
    CONTACT,
    DAG_IDS,
    ENV_NAME,
    LOOPS,
    PARAM_PATTERN,
    STREAM_DAGS,
    StrictModel,
    check_name,
    check_positive_duration,
    check_registered,
    check_schedule,
    check_topic,
    check_url,
    interpolate,
    parse_duration,
    validation_context,
)
from focuscrawl.project.world import MessKnobs, ValidatorKnobs


class PageFocus(StrictModel):
    """Example pages of the topic and of other topics: what the page relevance model learns from
    (``focuscrawl.relevance``). Entries of ``positives``/``negatives`` are http(s) URLs (fetched once by
    ``focuscrawl train``), HTML or text files, or folders of them; ``examples`` is a JSONL file of
    ``{"url", "text", "label"}`` lines; the profile's ``query`` counts as one positive page."""

    positives: tuple[str, ...] = Field((), description="URLs, .html/.txt files or folders of pages about the topic")
    negatives: tuple[str, ...] = Field((), description="URLs, .html/.txt files or folders of pages about other topics")
    examples: str | None = Field(None, description="JSONL file: {\"url\", \"text\", \"label\": 1 or 0} per line")
    model: str = Field("TFIDF-LR", description="registered page relevance model (focuscrawl.relevance.models)")
    threshold: float = Field(0.5, gt=0, lt=1, description="operating threshold: a page scoring at or above it is relevant")
    held_out: float = Field(0.3, gt=0, lt=1, description="share of each class's example pages held out to measure the model")

    _entries = field_validator("positives", "negatives", mode="before")(page_entries)

    @field_validator("examples", mode="before")
    @classmethod
    def _examples(cls, v: Any, info: ValidationInfo) -> Any:
        if not isinstance(v, str):
            return v
        path = Path(interpolate(v)).expanduser()
        return str(path if path.is_absolute() else Path(validation_context(info, "base_dir", Path.cwd())) / path)

    @field_validator("model")
    @classmethod
    def _model(cls, v: str) -> str:
        from focuscrawl.relevance.models import PAGE_MODELS

        return check_registered(PAGE_MODELS, v)

    def counts(self, query: str | None) -> dict[int, int]:
        """Example pages declared per class (1: the topic), counted without fetching."""
        from focuscrawl.relevance.examples import count_examples

        return count_examples(self.positives, self.negatives, self.examples, query)


class Profile(StrictModel):
    """The focus: example users of both classes, example pages (``[profile.pages]``), or a query that
    drives the crawl; ``languages`` keeps pages in those languages only (ISO 639-1 codes)."""

    positives: str | None = Field(None, description="file/folder of positive example users")
    negatives: str | None = Field(None, description="file/folder of negative example users")
    format: Literal["erisk", "jsonl", "csv"] | None = Field(None, description="inferred from the name if absent")
    query: str | None = Field(None, min_length=1, description="words the target users write about")
    pages: PageFocus | None = Field(None, description="example pages: what the page relevance model learns from")
    languages: tuple[str, ...] = Field((), description="ISO 639-1 codes of the languages a page may be in "
                                                       "(empty: any); others score 0 relevance")

    _paths = field_validator("positives", "negatives", mode="before")(examples_path)

    @field_validator("languages", mode="before")
    @classmethod
    def _languages(cls, v: Any) -> Any:
        if isinstance(v, str):
            raise ValueError(f"{v!r} is one string; write a list, e.g. languages = [\"{v}\"]")
        if not isinstance(v, (list, tuple)):
            return v
        from focuscrawl.parse.text import check_languages

        return check_languages(v)

    @model_validator(mode="after")
    def _page_classes(self, info: ValidationInfo) -> "Profile":
        if self.pages is None or not validation_context(info, "check_files", True):
            return self
        from focuscrawl.relevance.evaluation import MIN_PAGES_PER_CLASS
        from focuscrawl.relevance.examples import ExampleError

        try:
            counts = self.pages.counts(self.query)
        except ExampleError as exc:
            raise ValueError(f"{exc.key.removeprefix('profile.')}: {exc.problem}") from None
        for label, role in ((1, "positives"), (0, "negatives")):
            if counts[label] == 0:
                raise ValueError(f"pages.{role}: no {role[:-1]} example page; list pages about "
                                 f"{'the topic' if label else 'other topics'} (URLs, .html/.txt files or a folder), "
                                 f"or label JSONL lines {label} in examples")
            if counts[label] < MIN_PAGES_PER_CLASS:
                raise ValueError(f"pages.{role}: {counts[label]} {role[:-1]} example page(s); give at least "
                                 f"{MIN_PAGES_PER_CLASS} (2 to train on, 1 held out to measure the model)")
        return self

    @model_validator(mode="after")
    def _one_focus(self, info: ValidationInfo) -> "Profile":
        if self.query is None and self.positives is None and self.negatives is None and self.pages is None:
            raise ValueError("declares no focus; set positives and negatives (example users), [profile.pages] "
                             "(example pages) or query")
        if (self.positives is None) != (self.negatives is None):
            missing = "negatives" if self.negatives is None else "positives"
            raise ValueError(f"{missing}: missing; example users come in both classes: add {missing} = \"...\"")
        if self.positives is not None and validation_context(info, "check_files", True):
            for role in ("positives", "negatives"):
                path = Path(getattr(self, role))
                try:
                    read_examples(path, self.format or infer_format(path), role, limit=1)
                except (ValueError, OSError, UnicodeDecodeError) as exc:
                    raise ValueError(f"{role}: {exc}") from None
        return self

    def example_format(self, role: str) -> str:
        return self.format or infer_format(Path(getattr(self, role)))

    def example_users(self) -> dict[str, dict[str, list[str]]]:
        """The example users of each role (``positives``, ``negatives``) -> their writings, as the files hold them."""
        if self.positives is None:
            raise ValueError("profile has no example users (it is query-driven); nothing to train on")
        if self.positives == self.negatives and self.example_format("positives") == "erisk":
            return erisk_users(Path(self.positives), None)  # one pass over a collection holding both classes
        return {role: read_examples(getattr(self, role), self.example_format(role), role)
                for role in ("positives", "negatives")}

    def training_set(self, by_role: dict[str, dict[str, list[str]]] | None = None) -> tuple[list[list[str]], list[int]]:
        """Per-user writings and labels (1 = positive) of the example users: what the classifiers train on.
        ``by_role``: :meth:`example_users` as read before (``focuscrawl.fue.examples`` caches it)."""
        histories, labels = [], []
        by_role = self.example_users() if by_role is None else by_role
        for role, label in (("positives", 1), ("negatives", 0)):
            for writings in by_role[role].values():
                histories.append(writings)
                labels.append(label)
        return histories, labels


class OAuth(StrictModel):
    """OAuth2 client credentials (RFC 6749 4.4): id and secret come from the named environment variables."""

    token_url: str
    client_id_env: str
    client_secret_env: str
    grant: Literal["client_credentials"] = "client_credentials"
    scope: str | None = None

    @field_validator("token_url", mode="before")
    @classmethod
    def _url(cls, v: Any) -> Any:
        return check_url(interpolate(v)) if isinstance(v, str) else v

    @field_validator("client_id_env", "client_secret_env")
    @classmethod
    def _env(cls, v: str, info: ValidationInfo) -> str:
        if not ENV_NAME.match(v):
            raise ValueError(f"{v!r} is not an environment variable name; name the variable (e.g. REDDIT_CLIENT_ID), "
                             "never write the credential itself here")
        if validation_context(info, "check_env", True) and not os.environ.get(v):
            raise ValueError(f"environment variable {v} is not set; export {v}=... before starting "
                             "(the credential is read from it, never from this file)")
        return v


class Site(StrictModel):
    """One site and how to reach it politely."""

    name: str
    base_url: str | None = None
    world: bool = False
    user_agent: str
    politeness_delay: float = Field(1.0, ge=0, description="seconds between two requests to the host")
    max_in_flight: int = Field(1, ge=1)
    obey_robots: bool = True
    rate_limit_headers: bool = Field(False, description="obey X-Ratelimit-Used/Remaining/Reset (reddit)")
    oauth: OAuth | None = None
    strip_params: tuple[str, ...] = Field((), description="the site's own tracking/session parameters (shell "
                                          "patterns, e.g. \"ref_src\", \"sid_*\"), dropped from its canonical URLs")
    conditional_fetches: bool = Field(True, description="revisits and recrawls send the page's last ETag/"
                                      "Last-Modified (If-None-Match/If-Modified-Since) and take a 304 as unchanged; "
                                      "false for a server whose 304s cannot be trusted (Heritrix's FetchHTTP "
                                      "send-if-modified-since/send-if-none-match, wget --no-if-modified-since)")
    scope: ScopeRules = Field(ScopeRules(), description="which URLs the crawlers may enqueue: allow/deny patterns, "
                              "depth, per-host budget, URL limits and trap rules (focuscrawl.fetch.scope)")

    _name = field_validator("name")(check_name("site", "reddit"))

    @field_validator("strip_params")
    @classmethod
    def _params(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            if not PARAM_PATTERN.match(name) or name.strip("*?") == "":
                raise ValueError(f"{name!r} is not a query parameter name; write the name as it appears before "
                                 "'=' in the site's URLs, e.g. \"ref_src\" or \"sid_*\" (wildcards * and ? allowed, "
                                 "not alone)")
        return v

    def canonical(self, url: str) -> str:
        """``url``'s canonical key on this site: :func:`focuscrawl.parse.canon.canonical_url` with the
        site's ``strip_params`` removed too."""
        from focuscrawl.parse.canon import canonical_url

        return canonical_url(url, extra_strip=self.strip_params)

    @field_validator("base_url", mode="before")
    @classmethod
    def _url(cls, v: Any) -> Any:
        return check_url(interpolate(v)).rstrip("/") if isinstance(v, str) else v

    @field_validator("user_agent")
    @classmethod
    def _agent(cls, v: str) -> str:
        if not CONTACT.search(v):
            raise ValueError(f"User-Agent {v!r} names no contact; add a URL, an e-mail address or a reddit '/u/name', "
                             "e.g. \"focuscrawl/0.1 (+mailto:you@example.org)\"")
        return v

    @model_validator(mode="after")
    def _where(self) -> "Site":
        if self.world and self.base_url:
            raise ValueError("sets both world = true and base_url; keep one (world = true uses the settings' world URL)")
        if not self.world and not self.base_url:
            raise ValueError("has no base_url; add base_url = \"https://...\" or world = true for the embedded world")
        return self

    def url(self, cfg=None) -> str:
        """The base URL to crawl: ``base_url``, or the world's URL from the settings."""
        if self.base_url:
            return self.base_url
        from focuscrawl.config import settings

        return (cfg or settings()).world_url


def _registry(path: str, attr: str):
    import importlib

    return getattr(importlib.import_module(path), attr)


def _name_in(path: str, attr: str):
    def check(cls, v: Any) -> Any:
        return check_registered(_registry(path, attr), v) if isinstance(v, str) else v

    return classmethod(check)


Positive = Annotated[float, Field(gt=0)]


def _seed_urls(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(check_url(interpolate(u)) if isinstance(u, str) else u for u in v)
    return v


# Off by default: a skip is a judgement on content (a page sharing 82% of its text with another is
# dropped, though it may be the one a user wanted), and it changes what the loops learn from (fewer
# snapshots, fewer clicked pages) against the seeds' own setting, which crawls every page. The
# near_duplicates table is built either way, so a user sees what the switch would skip before turning it on.
NEAR_DUPLICATES_SWITCH = ("skip a new page whose text near-duplicates a page fetched before (shingle Jaccard "
                          ">= 0.7, focuscrawl.core.dedup), counted in focuscrawl_near_duplicates_skipped_total")


class Loop(StrictModel):
    enabled: bool = True
    site: str | None = Field(None, description="name of the [[sites]] entry (default: the first)")


class FueLoop(Loop):
    """Focused user extraction (seed 000): which candidate user to extract next
    (defaults: :class:`focuscrawl.fue.params.FueParams`)."""

    method: str = FUE.method
    community_chooser: str = FUE.community_chooser
    visit_interval: float = Field(FUE.visit_interval, ge=0,
                                  description="seconds between two community visits of the explorer")
    front_page_interval: float = Field(FUE.front_page_interval, ge=0,
                                       description="seconds between two reads of the front page (/r/all/new) by "
                                                   "the explorer, start to start")
    users_per_hour: float = Field(FUE.users_per_hour, gt=0, description="users an extractor extracts an hour at most")
    listing_path: str = Field(FUE.listing_path, description="path of the front page on the site (every community's "
                                                            "new posts), read by the explorer")

    _method = field_validator("method")(_name_in("focuscrawl.fue.methods", "RANKING_METHODS"))

    @field_validator("listing_path")
    @classmethod
    def _path(cls, v: str) -> str:
        if not v.startswith("/"):
            raise ValueError(f"{v!r} is not a path on the site; start it with '/', e.g. \"/r/all/new.json\"")
        return v
    _chooser = field_validator("community_chooser")(_name_in("focuscrawl.fue.pipeline", "COMMUNITY_CHOOSERS"))

    _ranking: Any = PrivateAttr(None)

    @model_validator(mode="after")
    def _resolve_ranking(self) -> "FueLoop":
        self._ranking = _registry("focuscrawl.fue.methods", "RANKING_METHODS").get(self.method)
        return self

    @property
    def ranking(self):
        """``method``'s registered ranking method class, resolved once with the loop: what the plan and the
        batch side ask of it (``needs_classifier``, ``scorer``, ``pseudo_labelling``)."""
        return self._ranking

    @property
    def pseudo_methods(self) -> tuple[str, ...]:
        """The methods of this loop that ``fue_pseudo_training`` retrains: ``method`` when the loop runs and
        the method learns from pseudo-labels (seed 000, section V), else none."""
        return (self.method,) if self.enabled and getattr(self.ranking, "pseudo_labelling", None) else ()


class SourcesLoop(Loop):
    """Timely crawling of ephemeral content (seed 001): recrawl schedule of content sources
    (defaults: :class:`focuscrawl.ephemeral.params.EphemeralParams`; ``fetches_per_second`` is its budget)."""

    scheduler: str = EPHEMERAL.scheduler
    fetches_per_second: Positive = EPHEMERAL.budget
    seeds: tuple[str, ...] = Field((), description="site roots whose feeds, sitemaps and pages are sources")
    skip_near_duplicates: bool = Field(False, description=NEAR_DUPLICATES_SWITCH)
    feedback: str | None = Field(None, description="what a new page earns its source (focuscrawl.ephemeral.feedback): "
                                 "\"clicks\" (clicks_url's click log or clicks_topic's records) or \"relevance\" "
                                 "(its relevance, discounted by its fetch delay); default: clicks for target = "
                                 "\"world\", relevance for \"sites\"")
    clicks_url: str | None = Field(None, description="with clicks: the click log's URL, answering GET ?since=T in "
                                   "the documented JSON (docs/loops/ephemeral.md); on a world site its /search/clicks.json")
    clicks_topic: str | None = Field(None, description="with clicks, instead of clicks_url: the Kafka topic the "
                                     "project's own analytics writes the clicks to, one page_clicks record each "
                                     "(docs/loops/ephemeral.md); the page_clicks sink reads it")
    freshness_half_life: str = Field(f"{EPHEMERAL.freshness_half_life_s / 86400:g}d", description="with relevance: the fetch delay after publication at which "
                                     "a page's relevance counts half")

    _seeds = field_validator("seeds", mode="before")(_seed_urls)
    _scheduler = field_validator("scheduler")(_name_in("focuscrawl.ephemeral.schedulers", "SCHEDULERS"))
    _half_life = field_validator("freshness_half_life")(check_positive_duration("1d"))

    @field_validator("feedback")
    @classmethod
    def _feedback(cls, v: str | None) -> str | None:
        return None if v is None else check_registered(_registry("focuscrawl.ephemeral.feedback", "PROFIT_SIGNALS"), v).lower()

    @field_validator("clicks_url", mode="before")
    @classmethod
    def _clicks_url(cls, v: Any) -> Any:
        return check_url(interpolate(v)) if isinstance(v, str) else v

    @field_validator("clicks_topic", mode="before")
    @classmethod
    def _clicks_topic(cls, v: Any) -> Any:
        return check_topic(interpolate(v)) if isinstance(v, str) else v

    @model_validator(mode="after")
    def _clicks_source(self) -> "SourcesLoop":
        if self.clicks_url is not None and self.clicks_topic is not None:
            raise ValueError("clicks_topic: clicks_url is set too, and clicks come from one place; keep clicks_topic "
                             "(the Kafka topic your analytics writes) or clicks_url (a click log read over HTTP), "
                             "remove the other")
        for key in ("clicks_url", "clicks_topic"):
            if self.feedback == "relevance" and getattr(self, key) is not None:
                raise ValueError(f"{key}: feedback is \"relevance\", so no clicks are read; remove {key} "
                                 "or set feedback = \"clicks\"")
        return self

    @computed_field  # in the dump ``up`` writes, so source_schedule's DAG takes the parsed seconds
    @property
    def freshness_half_life_s(self) -> float:
        return parse_duration(self.freshness_half_life).total_seconds()


class RevisitsLoop(Loop):
    """Look back, look around (seed 002): which known page to revisit for new outlinks (``related``: the
    ``outlinks_features`` DAG's related-pages search, :class:`focuscrawl.outlinks.params.OutlinksParams`)."""

    model: str = "ET-REG"
    target: Literal["new_outlinks", "new_relevant_outlinks"] = Field(
        OUTLINKS.target, description="what the models predict per page: its new outlinks, or only those about the "
                                     "focus (the linked page, once fetched, or else its URL, scores at or above "
                                     "[profile.pages] threshold)")
    related: str = OUTLINKS.method
    revisit_period: str = f"{OUTLINKS_WEEK / 86400:g}d"
    fetches_per_second: Positive = 1.0
    seeds: tuple[str, ...] = Field((), description="pages known at the start")
    discover: str | None = Field(None, description="regex: outlinks matching it become known pages")
    max_pages: int | None = Field(None, gt=0, description="known pages at most (the revisitor's default when unset)")
    skip_near_duplicates: bool = Field(False, description=NEAR_DUPLICATES_SWITCH)

    _seeds = field_validator("seeds", mode="before")(_seed_urls)
    _model = field_validator("model")(_name_in("focuscrawl.outlinks.models", "ESTIMATORS"))
    _related = field_validator("related")(_name_in("focuscrawl.outlinks.related", "RELATED"))

    _period = field_validator("revisit_period")(check_positive_duration("7d"))

    @field_validator("discover")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"{v!r} is not a regular expression ({exc}); e.g. \"/site/[^/]+/wiki/\"") from None
        return v

    @property
    def revisit_seconds(self) -> float:
        return parse_duration(self.revisit_period).total_seconds()


class GraphLoop(Loop):
    """Content over large graphs (seed 003): sampling design and unbiased estimators
    (defaults: :class:`focuscrawl.graph.params.GraphEstimationParams`)."""

    sampler: str = GRAPH.sampler
    estimators: tuple[str, ...] = GRAPH.estimators
    query_budget: Annotated[int, Field(gt=0)] = GRAPH.query_budget
    fetches_per_second: Positive = 1.0

    _sampler = field_validator("sampler")(_name_in("focuscrawl.graph.samplers", "SAMPLERS"))

    @field_validator("estimators")
    @classmethod
    def _estimators(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v:
            raise ValueError("is empty; list at least one estimator, e.g. [\"MLE\"]")
        registry = _registry("focuscrawl.graph.estimators", "ESTIMATORS")
        return tuple(check_registered(registry, name) for name in v)


class Loops(StrictModel):
    fue: FueLoop = FueLoop()
    sources: SourcesLoop = SourcesLoop()
    revisits: RevisitsLoop = RevisitsLoop()
    graph: GraphLoop = GraphLoop()


class AssetEvents(StrictModel):
    """The Asset events ``streaming/asset_events.py`` posts for the stream-landed tables.

    ``min_interval``: per DAG id of :data:`STREAM_DAGS`, the least time between two events that
    start it, so between two of its runs on new rows (a time schedule in ``[schedules]`` runs it
    besides). A DAG not named here gets :data:`focuscrawl.orchestration.asset_events.MIN_INTERVAL` (1 minute).
    The first event posts at once, so every DAG runs early; a longer interval leaves the one Spark
    slot to the other DAGs (graph_estimation re-estimating every minute on a few new samples
    holds it a minute each time).
    """

    min_interval: dict[str, str] = Field(default_factory=dict)

    @field_validator("min_interval", mode="before")
    @classmethod
    def _min_interval(cls, v: Any) -> Any:
        if isinstance(v, str):
            raise ValueError(f"{v!r} names no DAG; give each DAG its own line under [asset_events.min_interval], "
                             f"e.g. graph_estimation = \"{v}\"")
        if not isinstance(v, dict):
            return v  # pydantic says "must be a table"
        for dag_id, gap in v.items():
            if dag_id not in STREAM_DAGS:
                if dag_id in DAG_IDS:
                    problem = (f"{dag_id} is not started by a stream-landed table (a schedule or a task's Asset "
                               f"starts it; set when it runs in [schedules])")
                else:
                    close = difflib.get_close_matches(dag_id, STREAM_DAGS, n=1)
                    problem = f"unknown DAG id{f' (did you mean {close[0]}?)' if close else ''}"
                raise ValueError(f"[{dag_id}] {problem}; name one of {', '.join(STREAM_DAGS)}")
            try:
                if not isinstance(gap, str) or parse_duration(gap) <= timedelta(0):
                    raise ValueError
            except ValueError:
                raise ValueError(f"[{dag_id}] {gap!r} is not a positive duration; write one in quotes, "
                                 "e.g. \"10m\" (or \"90s\", \"1h\")") from None
        return v

    def seconds(self) -> dict[str, float]:
        """``{DAG id: least seconds between two events that start it}`` of the DAGs named."""
        return {dag_id: parse_duration(gap).total_seconds() for dag_id, gap in self.min_interval.items()}


class Warc(StrictModel):
    """WARC archives of every fetch (``focuscrawl.fetch.warc``, docs/running.md): files under ``<lake>/warc``."""

    enabled: bool = True
    max_file_mb: float = Field(1000.0, gt=0)  # a new file at this size (IIPC: ~1 GB)
    max_file_age: str = "1h"                  # and after this long

    _age = field_validator("max_file_age")(check_positive_duration("1h"))

    @property
    def max_file_seconds(self) -> float:
        return parse_duration(self.max_file_age).total_seconds()


class WorldKnobs(StrictModel):
    """How the embedded world behaves (``[world]``), for a project with a ``world = true`` site: the knobs
    ``focuscrawl world serve`` takes. ``[world.validators]``: ``ETag``/``Last-Modified`` and 304s
    (:class:`focuscrawl.project.world.ValidatorKnobs`); ``[world.mess]``: the messy web's behaviours
    (:class:`focuscrawl.project.world.MessKnobs`). All off by default."""

    validators: ValidatorKnobs = ValidatorKnobs()
    mess: MessKnobs = MessKnobs()

    def serve_args(self) -> list[str]:
        """The ``focuscrawl world serve`` arguments that set these knobs (none at their defaults)."""
        args = ["--mess", self.mess.model_dump_json()] if self.mess.on else []
        v = self.validators
        if v.enabled:
            args += ["--validators", "--ignore-validators", str(v.ignore_share), "--validators-seed", str(v.seed)]
        return args


class Project(StrictModel):
    name: str
    target: Literal["world", "sites"] = "world"
    profile: Profile
    sites: tuple[Site, ...] = Field(min_length=1)
    loops: Loops = Loops()
    schedules: dict[str, str] = Field(default_factory=dict)
    asset_events: AssetEvents = AssetEvents()
    warc: Warc = Warc()
    world: WorldKnobs = WorldKnobs()

    _name = field_validator("name")(check_name("project", "my-project"))

    @model_validator(mode="before")
    @classmethod
    def _default_feedback(cls, data: Any) -> Any:
        """``[loops.sources] feedback`` defaults by target: the world's click log, or on real sites (no click
        log) the pages' relevance; filled in here, so the dumped project (run/project.json) names it."""
        if not isinstance(data, dict):
            return data
        loops = data.get("loops")
        if loops is not None and not isinstance(loops, dict):
            return data  # pydantic says what is wrong with it
        sources = (loops or {}).get("sources")
        if sources is not None and not isinstance(sources, dict) or (sources or {}).get("feedback") is not None:
            return data
        feedback = "relevance" if data.get("target") == "sites" else "clicks"
        return {**data, "loops": {**(loops or {}), "sources": {**(sources or {}), "feedback": feedback}}}

    @field_validator("schedules")
    @classmethod
    def _schedules(cls, v: dict[str, str]) -> dict[str, str]:
        for dag_id, when in v.items():
            if dag_id not in DAG_IDS:
                close = difflib.get_close_matches(dag_id, DAG_IDS, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise ValueError(f"[{dag_id}] unknown DAG id{hint}; known: {', '.join(DAG_IDS)}")
            try:
                check_schedule(when)
            except ValueError as exc:
                raise ValueError(f"[{dag_id}] {exc}") from None
        return v

    @model_validator(mode="after")
    def _refs(self) -> "Project":
        names = [s.name for s in self.sites]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"sites: site name {dupes[0]!r} is used twice; give each [[sites]] its own name")
        for loop in LOOPS:
            site = getattr(self.loops, loop).site
            if site is not None and site not in names:
                raise ValueError(f"loops.{loop}.site: no site named {site!r}; declared: {', '.join(names)} - pick one")
        if self.target == "world" and not any(s.world for s in self.sites):
            raise ValueError("target: 'world' needs a site with world = true; add one or set target = \"sites\"")
        if self.loops.revisits.target == "new_relevant_outlinks" and self.profile.pages is None:
            raise ValueError("loops.revisits.target: \"new_relevant_outlinks\" needs a page focus to judge links by; "
                             "declare [profile.pages] or set target = \"new_outlinks\"")
        sources = self.loops.sources
        if sources.enabled and sources.feedback == "clicks" and sources.clicks_url is None \
                and sources.clicks_topic is None and not self.site(sources.site).world:
            raise ValueError(f"loops.sources.clicks_url: feedback is \"clicks\" but {self.site(sources.site).name} has "
                             "no click log we know; set clicks_url = \"https://...\" (answering the documented JSON) "
                             "or clicks_topic = \"...\" (the Kafka topic your analytics writes the documented records "
                             "to; docs/loops/ephemeral.md), or feedback = \"relevance\"")
        for dag_id in self.asset_events.min_interval:
            if self.schedules.get(dag_id) == "none":
                raise ValueError(f"asset_events.min_interval.{dag_id}: [schedules] {dag_id} is \"none\", so no Asset "
                                 "event starts it; remove this line or schedule it on \"assets\"")
        return self

    # -- what the platform reads --------------------------------------------------------------

    def site(self, name: str | None = None) -> Site:
        """The site called ``name`` (the first one when None)."""
        if name is None:
            return self.sites[0]
        for s in self.sites:
            if s.name == name:
                return s
        raise KeyError(f"no site named {name!r}; declared: {', '.join(s.name for s in self.sites)}")

    def enabled_loops(self) -> list[tuple[str, Loop, Site]]:
        """``(loop name, its settings, its site)`` of every loop that runs, in LOOPS order."""
        out = []
        for name in LOOPS:
            loop = getattr(self.loops, name)
            if loop.enabled:
                out.append((name, loop, self.site(loop.site)))
        return out

    def schedule(self, dag_id: str, default: str | None = None) -> str | None:
        """The project's schedule string for ``dag_id`` (see :func:`airflow_schedule`), else ``default``."""
        if dag_id not in DAG_IDS:
            raise KeyError(f"unknown DAG id {dag_id!r}; known: {', '.join(DAG_IDS)}")
        return self.schedules.get(dag_id, default)

    def to_json(self) -> dict:
        """JSON-ready dump (what ``focuscrawl up`` writes to run/project.json): names of environment
        variables only, never a credential."""
        return self.model_dump(mode="json")
