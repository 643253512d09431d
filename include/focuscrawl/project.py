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
  (:class:`focuscrawl.world.validators.ValidatorKnobs`);
- ``[world.mess]``: how messy the embedded world's web is (:class:`focuscrawl.world.mess.Mess`).

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

import csv
import difflib
import json
import os
import re
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from focuscrawl.core.corpora import erisk_subjects, writing_body
from focuscrawl.ephemeral.params import DEFAULT as EPHEMERAL
from focuscrawl.fetch.scope import ScopeRules
from focuscrawl.fue.params import DEFAULT as FUE
from focuscrawl.graph.params import DEFAULT as GRAPH
from focuscrawl.outlinks.params import DEFAULT as OUTLINKS
from focuscrawl.world.mess import Mess
from focuscrawl.world.validators import ValidatorKnobs

# DAG ids a project may schedule (tests/project checks this against dags/).
DAG_IDS = ("delta_maintenance", "fue_pseudo_training", "graph_estimation", "outlinks_features",
           "outlinks_train", "page_relevance", "source_schedule")
# The DAGs that tables the stream processes land start (through streaming/asset_events.py, not a
# task's outlet; tests/platform/test_dag_schedules.py checks this against the DAG files).
STREAM_DAGS = ("graph_estimation", "outlinks_features", "source_schedule")
LOOPS = ("fue", "sources", "revisits", "graph")
PRESETS = ("@once", "@continuous", "@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@quarterly")
EXAMPLE_FORMATS = ("erisk", "jsonl", "csv")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)d)?(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?$")
_CONTACT = re.compile(r"(https?://\S+|[\w.+-]+@[\w-]+\.[\w.-]+|/?u/[A-Za-z0-9_-]+)")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_PARAM_PATTERN = re.compile(r"^[A-Za-z0-9_.\-\[\]*?]+$")  # a parameter name, shell wildcards allowed


class ProjectError(ValueError):
    """A project file that cannot run: ``key`` is the dotted key path, the message says the fix."""

    def __init__(self, path: str | Path | None, key: str, problem: str) -> None:
        self.path = None if path is None else str(path)
        self.key = key
        self.problem = problem
        where = f"{self.path}: " if self.path else ""
        super().__init__(f"{where}{key}: {problem}")


# -- helpers the validators share ---------------------------------------------------------------


def _builtin_vars() -> dict[str, str]:
    from focuscrawl.config import settings

    cfg = settings()
    return {"FOCUSCRAWL_DATA": str(cfg.data_dir or cfg.home.parent / "shared" / "data"),
            "FOCUSCRAWL_HOME": str(cfg.home), "FOCUSCRAWL_WORLD_URL": cfg.world_url}


def interpolate(text: str, env: dict[str, str] | None = None) -> str:
    """``${VAR}`` and ``${VAR:-default}`` replaced from ``env`` (the environment by default)."""
    env = dict(os.environ) if env is None else env
    builtins: dict[str, str] | None = None

    def one(m: re.Match) -> str:
        nonlocal builtins
        name, default = m.group(1), m.group(2)
        value = env.get(name)
        if value:
            return value
        if default is not None:
            return default
        if builtins is None:
            builtins = _builtin_vars()
        if name in builtins:
            return builtins[name]
        raise ValueError(f"${{{name}}} is not set; export {name}=... or write ${{{name}:-default}}")

    return _VAR.sub(one, text)


def _ctx(info: ValidationInfo, key: str, default: Any) -> Any:
    return (info.context or {}).get(key, default)


def _check_url(value: str) -> str:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a URL ({exc}); write e.g. https://example.org") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an absolute http(s) URL; write e.g. https://example.org")
    return value


def _registered(registry, name: str) -> str:
    try:
        registry.get(name)
    except KeyError:
        close = difflib.get_close_matches(name.upper(), registry.names(), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ValueError(f"unknown {registry.kind} {name!r}{hint}; registered: {', '.join(registry.names())} "
                         "- pick one") from None
    return name.upper()


def parse_duration(text: str) -> timedelta:
    """``"90s"``, ``"5m"``, ``"1h30m"``, ``"7d"`` -> timedelta (ValueError naming the form)."""
    m = _DURATION.match(text.strip().lower()) if isinstance(text, str) else None
    if not m or not any(m.groups()):
        raise ValueError(f"{text!r} is not a duration; write e.g. '90s', '5m', '1h30m' or '7d'")
    d, h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    return timedelta(days=d, hours=h, minutes=mi, seconds=s)


def _positive_duration(example: str):
    def check(cls, v: str) -> str:
        if parse_duration(v) <= timedelta(0):
            raise ValueError(f"{v!r} is not positive; write e.g. '{example}'")
        return v

    return classmethod(check)


def _named(kind: str, example: str):
    def check(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(f"{v!r} is not a {kind} name; use lower-case letters, digits, '-' or '_' (e.g. \"{example}\")")
        return v

    return classmethod(check)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# -- profile ----------------------------------------------------------------------------------


def _infer_format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".jsonl") or name.endswith(".ndjson"):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    if path.is_dir() or name.endswith((".xml", ".tar.xz", ".tar.gz", ".tgz", ".tar")):
        return "erisk"
    raise ValueError(f"cannot tell the format of {path.name!r}; add format = \"erisk\", \"jsonl\" or \"csv\"")


def _user_of(row: dict) -> str | None:
    for key in ("user", "author", "id", "username"):
        if row.get(key) not in (None, ""):
            return str(row[key])
    return None


def _text_of(row: dict) -> str:
    if row.get("text"):
        return str(row["text"])
    return "\n".join(str(row[k]) for k in ("title", "selftext", "body") if row.get(k)).strip()


def _erisk_users(path: Path, label: bool | None, limit: int | None = None) -> dict[str, dict[str, list[str]]]:
    """Each role's users -> writings of an eRisk collection (``focuscrawl.core.corpora.erisk_subjects``), in one
    pass: a subject labelled by its folder belongs to its role, an unlabelled one to both."""
    users: dict[str, dict[str, list[str]]] = {"positives": {}, "negatives": {}}
    for subject in erisk_subjects(path, label):
        bodies = [writing_body(title, text) for title, text, _ in subject.writings]
        for role in ("positives", "negatives"):
            if subject.label is None or subject.label == (role == "positives"):
                users[role][subject.id] = bodies
        if limit and max(map(len, users.values())) >= limit:
            break
    return users


def read_examples(path: str | Path, fmt: str, role: str = "positives", limit: int | None = None) -> dict[str, list[str]]:
    """Example users -> their writings, from eRisk XML, JSONL (``{"user", "text"}`` per line; ``author``,
    ``title``/``selftext`` also read) or CSV (a header with ``user``/``author`` and ``text`` or
    ``title``/``selftext``). ValueError names the line and the fix. ``limit`` stops after that many users."""
    path = Path(path)
    users: dict[str, list[str]] = {}
    if fmt == "erisk":
        users = _erisk_users(path, role == "positives", limit)[role]
    elif fmt == "jsonl":
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise ValueError(f"line {n} of {path.name} is not JSON ({exc.args[0]}); one object per line") from None
                user = _user_of(row) if isinstance(row, dict) else None
                if user is None:
                    raise ValueError(f"line {n} of {path.name} has no \"user\" (or \"author\"); "
                                     "write {\"user\": ..., \"text\": ...} per line")
                users.setdefault(user, []).append(_text_of(row))
                if limit and len(users) > limit:
                    users.pop(user)
                    break
    elif fmt == "csv":
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            header = set(reader.fieldnames or ())
            if not header & {"user", "author", "id", "username"} or not header & {"text", "title", "selftext", "body"}:
                raise ValueError(f"{path.name}'s header {sorted(header)} needs a user (or author) column and a "
                                 "text (or title/selftext) column")
            for row in reader:
                user = _user_of(row)
                if user is not None:
                    users.setdefault(user, []).append(_text_of(row))
                    if limit and len(users) >= limit:
                        break
    else:
        raise ValueError(f"unknown example format {fmt!r}; use one of {', '.join(EXAMPLE_FORMATS)}")
    if not users:
        raise ValueError(f"{path} holds no example users")
    return users


def _examples_path(value: Any, info: ValidationInfo) -> Any:
    if value is None:
        return None
    if not isinstance(value, str):
        return value
    path = Path(interpolate(value)).expanduser()
    if not path.is_absolute():
        path = Path(_ctx(info, "base_dir", Path.cwd())) / path
    if not path.exists():
        raise ValueError(f"{path} does not exist; point at your example users' file or folder")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{path} is not readable by this user; fix its permissions (chmod +r)")
    return str(path)


def _page_entries(value: Any, info: ValidationInfo) -> Any:
    """Example page entries: URLs kept (``${VAR}`` replaced), paths made absolute from the project's folder."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        return value
    out = []
    for entry in value:
        if not isinstance(entry, str):
            out.append(entry)
            continue
        entry = interpolate(entry)
        if entry.lower().startswith(("http://", "https://")):
            out.append(_check_url(entry))
            continue
        path = Path(entry).expanduser()
        out.append(str(path if path.is_absolute() else Path(_ctx(info, "base_dir", Path.cwd())) / path))
    return tuple(out)


class PageFocus(_Model):
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

    _entries = field_validator("positives", "negatives", mode="before")(_page_entries)

    @field_validator("examples", mode="before")
    @classmethod
    def _examples(cls, v: Any, info: ValidationInfo) -> Any:
        if not isinstance(v, str):
            return v
        path = Path(interpolate(v)).expanduser()
        return str(path if path.is_absolute() else Path(_ctx(info, "base_dir", Path.cwd())) / path)

    @field_validator("model")
    @classmethod
    def _model(cls, v: str) -> str:
        from focuscrawl.relevance.models import PAGE_MODELS

        return _registered(PAGE_MODELS, v)

    def counts(self, query: str | None) -> dict[int, int]:
        """Example pages declared per class (1: the topic), counted without fetching."""
        from focuscrawl.relevance.examples import count_examples

        return count_examples(self.positives, self.negatives, self.examples, query)


class Profile(_Model):
    """The focus: example users of both classes, example pages (``[profile.pages]``), or a query that
    drives the crawl; ``languages`` keeps pages in those languages only (ISO 639-1 codes)."""

    positives: str | None = Field(None, description="file/folder of positive example users")
    negatives: str | None = Field(None, description="file/folder of negative example users")
    format: Literal["erisk", "jsonl", "csv"] | None = Field(None, description="inferred from the name if absent")
    query: str | None = Field(None, min_length=1, description="words the target users write about")
    pages: PageFocus | None = Field(None, description="example pages: what the page relevance model learns from")
    languages: tuple[str, ...] = Field((), description="ISO 639-1 codes of the languages a page may be in "
                                                       "(empty: any); others score 0 relevance")

    _paths = field_validator("positives", "negatives", mode="before")(_examples_path)

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
        if self.pages is None or not _ctx(info, "check_files", True):
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
        if self.positives is not None and _ctx(info, "check_files", True):
            for role in ("positives", "negatives"):
                path = Path(getattr(self, role))
                try:
                    read_examples(path, self.format or _infer_format(path), role, limit=1)
                except (ValueError, OSError, UnicodeDecodeError) as exc:
                    raise ValueError(f"{role}: {exc}") from None
        return self

    def example_format(self, role: str) -> str:
        return self.format or _infer_format(Path(getattr(self, role)))

    def training_set(self) -> tuple[list[list[str]], list[int]]:
        """Per-user writings and labels (1 = positive) of the example users: what the classifiers train on."""
        if self.positives is None:
            raise ValueError("profile has no example users (it is query-driven); nothing to train on")
        histories, labels = [], []
        if self.positives == self.negatives and self.example_format("positives") == "erisk":
            by_role = _erisk_users(Path(self.positives), None)  # one pass over a collection holding both classes
        else:
            by_role = {role: read_examples(getattr(self, role), self.example_format(role), role)
                       for role in ("positives", "negatives")}
        for role, label in (("positives", 1), ("negatives", 0)):
            for writings in by_role[role].values():
                histories.append(writings)
                labels.append(label)
        return histories, labels


# -- sites ------------------------------------------------------------------------------------


class OAuth(_Model):
    """OAuth2 client credentials (RFC 6749 4.4): id and secret come from the named environment variables."""

    token_url: str
    client_id_env: str
    client_secret_env: str
    grant: Literal["client_credentials"] = "client_credentials"
    scope: str | None = None

    @field_validator("token_url", mode="before")
    @classmethod
    def _url(cls, v: Any) -> Any:
        return _check_url(interpolate(v)) if isinstance(v, str) else v

    @field_validator("client_id_env", "client_secret_env")
    @classmethod
    def _env(cls, v: str, info: ValidationInfo) -> str:
        if not _ENV_NAME.match(v):
            raise ValueError(f"{v!r} is not an environment variable name; name the variable (e.g. REDDIT_CLIENT_ID), "
                             "never write the credential itself here")
        if _ctx(info, "check_env", True) and not os.environ.get(v):
            raise ValueError(f"environment variable {v} is not set; export {v}=... before starting "
                             "(the credential is read from it, never from this file)")
        return v


class Site(_Model):
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
    scope: ScopeRules = Field(ScopeRules(), description="which URLs the crawlers may enqueue: allow/deny patterns, "
                              "depth, per-host budget, URL limits and trap rules (focuscrawl.fetch.scope)")

    _name = field_validator("name")(_named("site", "reddit"))

    @field_validator("strip_params")
    @classmethod
    def _params(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            if not _PARAM_PATTERN.match(name) or name.strip("*?") == "":
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
        return _check_url(interpolate(v)).rstrip("/") if isinstance(v, str) else v

    @field_validator("user_agent")
    @classmethod
    def _agent(cls, v: str) -> str:
        if not _CONTACT.search(v):
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


# -- loops ------------------------------------------------------------------------------------


def _registry(path: str, attr: str):
    import importlib

    return getattr(importlib.import_module(path), attr)


def _name_in(path: str, attr: str):
    def check(cls, v: Any) -> Any:
        return _registered(_registry(path, attr), v) if isinstance(v, str) else v

    return classmethod(check)


Positive = Annotated[float, Field(gt=0)]


def _seed_urls(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_check_url(interpolate(u)) if isinstance(u, str) else u for u in v)
    return v


# Off by default: a skip is a judgement on content (a page sharing 82% of its text with another is
# dropped, though it may be the one a user wanted), and it changes what the loops learn from (fewer
# snapshots, fewer clicked pages) against the seeds' own setting, which crawls every page. The
# near_duplicates table is built either way, so a user sees what the switch would skip before turning it on.
NEAR_DUPLICATES_SWITCH = ("skip a new page whose text near-duplicates a page fetched before (shingle Jaccard "
                          ">= 0.7, focuscrawl.core.dedup), counted in focuscrawl_near_duplicates_skipped_total")


class Loop(_Model):
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
    users_per_hour: Positive = 600.0
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


class SourcesLoop(Loop):
    """Timely crawling of ephemeral content (seed 001): recrawl schedule of content sources
    (defaults: :class:`focuscrawl.ephemeral.params.EphemeralParams`; ``fetches_per_second`` is its budget)."""

    scheduler: str = EPHEMERAL.scheduler
    fetches_per_second: Positive = EPHEMERAL.budget
    seeds: tuple[str, ...] = Field((), description="site roots whose feeds, sitemaps and pages are sources")
    skip_near_duplicates: bool = Field(False, description=NEAR_DUPLICATES_SWITCH)

    _seeds = field_validator("seeds", mode="before")(_seed_urls)
    _scheduler = field_validator("scheduler")(_name_in("focuscrawl.ephemeral.schedulers", "SCHEDULERS"))


class RevisitsLoop(Loop):
    """Look back, look around (seed 002): which known page to revisit for new outlinks (``related``: the
    ``outlinks_features`` DAG's related-pages search, :class:`focuscrawl.outlinks.params.OutlinksParams`)."""

    model: str = "ET-REG"
    related: str = OUTLINKS.method
    revisit_period: str = "7d"
    fetches_per_second: Positive = 1.0
    seeds: tuple[str, ...] = Field((), description="pages known at the start")
    discover: str | None = Field(None, description="regex: outlinks matching it become known pages")
    max_pages: int | None = Field(None, gt=0, description="known pages at most (the revisitor's default when unset)")
    skip_near_duplicates: bool = Field(False, description=NEAR_DUPLICATES_SWITCH)

    _seeds = field_validator("seeds", mode="before")(_seed_urls)
    _model = field_validator("model")(_name_in("focuscrawl.outlinks.models", "ESTIMATORS"))
    _related = field_validator("related")(_name_in("focuscrawl.outlinks.related", "RELATED"))

    _period = field_validator("revisit_period")(_positive_duration("7d"))

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
        return tuple(_registered(registry, name) for name in v)


class Loops(_Model):
    fue: FueLoop = FueLoop()
    sources: SourcesLoop = SourcesLoop()
    revisits: RevisitsLoop = RevisitsLoop()
    graph: GraphLoop = GraphLoop()


# -- schedules and the project ----------------------------------------------------------------


def check_schedule(value: str) -> str:
    """A cron expression, an Airflow preset, a duration (``5m``), ``assets`` or ``none``."""
    v = value.strip()
    if v in ("assets", "none") or v in PRESETS:
        return v
    if v.startswith("@"):
        raise ValueError(f"unknown preset {v!r}; use one of {', '.join(PRESETS)}, a cron expression or a duration")
    if len(v.split()) == 5:
        from croniter import croniter

        if not croniter.is_valid(v):
            raise ValueError(f"{v!r} is not a valid cron expression; e.g. '*/5 * * * *'")
        return v
    try:
        parse_duration(v)
    except ValueError:
        raise ValueError(f"{v!r} is neither a cron expression ('*/5 * * * *'), a preset ('@hourly'), a duration "
                         "('5m') nor 'assets'/'none'; write one of those") from None
    return v


def airflow_schedule(value: str):
    """What a DAG's ``schedule=`` takes for a validated schedule string (``"assets"`` is returned as is:
    the DAG keeps its asset trigger)."""
    if value == "none":
        return None
    if value == "assets" or value.startswith("@") or len(value.split()) == 5:
        return value
    return parse_duration(value)


class AssetEvents(_Model):
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


class Warc(_Model):
    """WARC archives of every fetch (``focuscrawl.fetch.warc``, docs/running.md): files under ``<lake>/warc``."""

    enabled: bool = True
    max_file_mb: float = Field(1000.0, gt=0)  # a new file at this size (IIPC: ~1 GB)
    max_file_age: str = "1h"                  # and after this long

    _age = field_validator("max_file_age")(_positive_duration("1h"))

    @property
    def max_file_seconds(self) -> float:
        return parse_duration(self.max_file_age).total_seconds()


class WorldKnobs(_Model):
    """How the embedded world behaves (``[world]``), for a project with a ``world = true`` site: the knobs
    ``focuscrawl world serve`` takes. ``[world.validators]``: ``ETag``/``Last-Modified`` and 304s
    (:class:`focuscrawl.world.validators.ValidatorKnobs`); ``[world.mess]``: the messy web's behaviours
    (:class:`focuscrawl.world.mess.Mess`). All off by default."""

    validators: ValidatorKnobs = ValidatorKnobs()
    mess: Mess = Mess()

    def serve_args(self) -> list[str]:
        """The ``focuscrawl world serve`` arguments that set these knobs (none at their defaults)."""
        args = ["--mess", self.mess.model_dump_json()] if self.mess.on else []
        v = self.validators
        if v.enabled:
            args += ["--validators", "--ignore-validators", str(v.ignore_share), "--validators-seed", str(v.seed)]
        return args


class Project(_Model):
    name: str
    target: Literal["world", "sites"] = "world"
    profile: Profile
    sites: tuple[Site, ...] = Field(min_length=1)
    loops: Loops = Loops()
    schedules: dict[str, str] = Field(default_factory=dict)
    asset_events: AssetEvents = AssetEvents()
    warc: Warc = Warc()
    world: WorldKnobs = WorldKnobs()

    _name = field_validator("name")(_named("project", "my-project"))

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


# -- loading ----------------------------------------------------------------------------------


def _loc(loc: tuple, raw: dict) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after", "function-before") or str(part).startswith(("function-", "tagged-union")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _model_at(loc: tuple) -> type[BaseModel] | None:
    model: Any = Project
    for part in loc:
        if isinstance(part, int):
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return None
        ann = field.annotation
        for candidate in (ann, *getattr(ann, "__args__", ())):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                model = candidate
                break
            for inner in getattr(candidate, "__args__", ()):
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    model = inner
                    break
        else:
            return None
    return model


_TYPES = {"float_type": "a number", "float_parsing": "a number", "int_type": "a whole number", "int_parsing": "a whole number",
          "int_from_float": "a whole number", "bool_type": "true or false", "bool_parsing": "true or false",
          "string_type": "a string in quotes", "dict_type": "a table", "model_type": "a table", "tuple_type": "a list",
          "list_type": "a list", "model_attributes_type": "a table"}


def _message(err: dict) -> tuple[str, str]:
    """``(key path, problem and fix)`` for one pydantic error."""
    loc = tuple(err["loc"])
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden":
        key = str(loc[-1])
        model = _model_at(loc[:-1])
        known = sorted(model.model_fields) if model else []
        close = difflib.get_close_matches(key, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return _loc(loc, {}), f"unknown key{hint}; keys allowed here: {', '.join(known)} - remove or rename it"
    if kind == "missing":
        return _loc(loc, {}), f"is required; add {loc[-1]} = ..."
    if kind in _TYPES:
        return _loc(loc, {}), f"must be {_TYPES[kind]}, got {err.get('input')!r}; write {_TYPES[kind]} here"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = {"greater_than": "> {gt:g}", "greater_than_equal": ">= {ge:g}", "less_than": "< {lt:g}",
                 "less_than_equal": "<= {le:g}"}[kind].format(**ctx)
        return _loc(loc, {}), f"must be {bound}, got {err.get('input')!r}; use a value {bound}"
    if kind == "literal_error":
        return _loc(loc, {}), f"got {err.get('input')!r}; use one of {ctx.get('expected')}"
    if kind == "too_short":
        return _loc(loc, {}), "is empty; declare at least one entry"
    if kind == "value_error":
        text = str(ctx.get("error", err["msg"]))
        # Validators of a whole model may name a sub-key first ("sites: ...", "positives: ...").
        m = re.match(r"^([a-z_]+(?:\.[a-z_]+)*(?:\[[^\]]+\])?): (.*)$", text, re.S)
        if m and not m.group(1).startswith("["):
            sub, text = m.groups()
            if loc and sub not in ("loops", "sites", "target"):
                return _loc((*loc, sub), {}), text
            return sub, text
        m = re.match(r"^\[([a-z_]+)\] (.*)$", text, re.S)
        if m:
            return _loc((*loc, m.group(1)), {}), m.group(2)
        return _loc(loc, {}), text
    return _loc(loc, {}), f"{err['msg']}; fix this value"


def parse_project(raw: dict, path: str | Path | None = None, *, base_dir: Path | None = None,
                  check_files: bool = True, check_env: bool = True) -> Project:
    """Validate an already-parsed TOML document (see :func:`load_project`)."""
    context = {"base_dir": base_dir or (Path(path).resolve().parent if path else Path.cwd()),
               "check_files": check_files, "check_env": check_env}
    try:
        return Project.model_validate(raw, context=context)
    except ValidationError as exc:
        # An unknown key first (a misspelt key makes its intended value look missing; a credential
        # written in the file must be named as such), then the first fault in file order.
        errors = exc.errors()
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        key, problem = _message(first)
        raise ProjectError(path, key, problem.replace("\n", " ")) from None


def load_project(path: str | Path, *, check_files: bool = True, check_env: bool = True) -> Project:
    """Read and validate ``path``; the first fault is one :class:`ProjectError` naming key and fix."""
    path = Path(path)
    if path.is_dir():
        path = path / "focuscrawl.toml"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ProjectError(path, "(file)", "does not exist; create one with `focuscrawl init` or name the file") from None
    except PermissionError:
        raise ProjectError(path, "(file)", "is not readable by this user; fix its permissions (chmod +r)") from None
    except OSError as exc:
        raise ProjectError(path, "(file)", f"cannot be read ({exc.strerror}); name a readable TOML file") from None
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ProjectError(path, "(file)", "is not UTF-8 text; save it as UTF-8 TOML") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProjectError(path, "(file)", f"is not valid TOML ({exc}); fix the syntax there") from None
    return parse_project(raw, path, check_files=check_files, check_env=check_env)


def load_site(path: str | Path, name: str | None = None) -> Site:
    """The site ``name`` (the first when None) of the project at ``path``: what ``--project FILE --site NAME``
    of a process reads. ProjectError names the key and the fix."""
    project = load_project(path)
    try:
        return project.site(name)
    except KeyError as exc:
        raise ProjectError(path, "--site", f"{exc.args[0]} - pass one of them") from None


INIT_TEMPLATE = """\
# focuscrawl project file: what to crawl for, where, and how hard.
#   edit it, then:   focuscrawl validate focuscrawl.toml   and   focuscrawl up focuscrawl.toml
# URLs and paths may use ${VAR} or ${VAR:-default}; relative paths are relative to this file.
name = "my-project"
target = "world"            # "world": the embedded world; "sites": real sites only

[profile]
# The users you look for, by example: positive and negative example users in eRisk XML
# (a .tar.xz, a folder of subject files or one file), JSONL ({"user": ..., "text": ...} per
# line) or CSV (a user/author column and a text or title/selftext column).
positives = "${FOCUSCRAWL_DATA}/erisk2017/erisk2017-train.tar.xz"
negatives = "${FOCUSCRAWL_DATA}/erisk2017/erisk2017-train.tar.xz"
format = "erisk"            # erisk | jsonl | csv (inferred from the file name when absent)
# query = "words your target users write about"    # or drive the crawl by a query instead
# languages = ["en"]        # keep pages in these languages (ISO 639-1); others score 0 relevance

# The pages you look for, by example (`focuscrawl train` fits the page relevance model): http(s) URLs
# (fetched once, robots.txt obeyed), .html/.txt files or folders of them, and/or a JSONL file of
# {"url": ..., "text": ..., "label": 1 or 0} lines; at least 3 pages of each class.
# [profile.pages]
# positives = ["https://example.org/about-my-topic", "examples/positive/"]
# negatives = ["https://example.org/something-else", "examples/negative/"]
# examples = "examples/pages.jsonl"
# model = "TFIDF-LR"        # or LSA-LR
# threshold = 0.5           # a page scoring at or above it counts as relevant

[[sites]]
name = "world"
world = true                # the world at the settings' URL; a real site sets base_url instead
user_agent = "focuscrawl/0.1 (+mailto:you@example.org)"   # must name a contact (URL, e-mail or /u/name)
politeness_delay = 1.0      # seconds between two requests to the host
rate_limit_headers = true   # obey X-Ratelimit-Used/Remaining/Reset (reddit sends them)
# strip_params = ["ref_src"]  # the site's own tracking/session parameters, dropped from its URLs' keys

# A real site with OAuth2 client credentials (see projects/reddit.toml). The credentials are read
# from the NAMED environment variables; never write them in this file.
# [[sites]]
# name = "reddit"
# base_url = "https://oauth.reddit.com"
# user_agent = "linux:focuscrawl:0.1 (by /u/your_name)"
# politeness_delay = 1.0
# rate_limit_headers = true
# [sites.oauth]
# token_url = "https://www.reddit.com/api/v1/access_token"
# client_id_env = "REDDIT_CLIENT_ID"
# client_secret_env = "REDDIT_CLIENT_SECRET"

# The four learning loops; set enabled = false to leave one out, site = "..." to pick a site.
[loops.fue]                 # seed 000: which candidate user to extract next
method = "HCP"              # a registered ranking method (HCP, HAS, RND, N06, ...)
users_per_hour = 600

[loops.sources]             # seed 001: when to recrawl each content source
scheduler = "LAMBDA"        # BFS, FIXED_QUOTA, LAGRANGE, LAMBDA
fetches_per_second = 0.5
skip_near_duplicates = false  # true: skip a new page that near-duplicates one crawled before (table near_duplicates)

[loops.revisits]            # seed 002: which known page to revisit for new outlinks
model = "ET-REG"            # a registered outlink estimator
related = "EXACT"           # related pages: EXACT, HNSW or IVF (FAISS)
revisit_period = "7d"
skip_near_duplicates = false  # true: skip a newly found page that near-duplicates one fetched before

[loops.graph]               # seed 003: sample the graph, estimate content statistics
sampler = "RW"              # UNI, RW, MHRW, FS
estimators = ["MLE", "SCE", "WCE"]
query_budget = 1000

[schedules]                 # per DAG id: cron ("*/5 * * * *"), a preset ("@hourly"), a duration ("5m") or "assets"
fue_pseudo_training = "5m"
source_schedule = "@hourly"

[asset_events.min_interval] # per DAG on a stream-landed table: least time between two runs new rows start ("1m")
# graph_estimation = "10m"  # outlinks_features, source_schedule and graph_estimation; the first runs at once

[warc]
enabled = true              # also keep fetched pages as WARC files
"""


def write_init(folder: str | Path, force: bool = False) -> Path:
    """Write the commented template to ``folder/focuscrawl.toml``; FileExistsError unless ``force``."""
    target = Path(folder) / "focuscrawl.toml"
    if target.exists() and not force:
        raise FileExistsError(f"{target} exists; edit it, or pass --force to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(INIT_TEMPLATE, encoding="utf-8")
    return target


def summary(project: Project, cfg=None) -> str:
    """What ``focuscrawl validate`` prints: the project in a few lines, credentials by variable name only."""
    lines = [f"project {project.name!r} (target: {project.target})"]
    p = project.profile
    if p.positives:
        lines.append(f"  profile: positives {p.positives} / negatives {p.negatives} ({p.example_format('positives')})")
    if p.query:
        lines.append(f"  profile: query {p.query!r}")
    if p.pages:
        counts = p.pages.counts(p.query)
        lines.append(f"  profile: example pages {counts[1]} about the topic / {counts[0]} not, model {p.pages.model}, "
                     f"threshold {p.pages.threshold:g}")
    if p.languages:
        lines.append(f"  profile: languages {', '.join(p.languages)}")
    for s in project.sites:
        auth = (f", OAuth via ${s.oauth.client_id_env}/${s.oauth.client_secret_env} at {s.oauth.token_url}"
                if s.oauth else "")
        lines.append(f"  site {s.name}: {s.url(cfg)}{' (the world)' if s.world else ''}, UA {s.user_agent!r}, "
                     f"delay {s.politeness_delay:g} s{', rate-limit headers obeyed' if s.rate_limit_headers else ''}{auth}")
    for name in LOOPS:
        loop = getattr(project.loops, name)
        if not loop.enabled:
            lines.append(f"  loop {name}: off")
            continue
        fields = {k: v for k, v in loop.model_dump().items() if k not in ("enabled", "site") and v not in ((), None)}
        detail = ", ".join(f"{k}={','.join(v) if isinstance(v, (list, tuple)) else v}" for k, v in fields.items())
        lines.append(f"  loop {name} on {project.site(loop.site).name}: {detail}")
    for dag_id, when in sorted(project.schedules.items()):
        lines.append(f"  schedule {dag_id}: {when}")
    for dag_id, gap in sorted(project.asset_events.min_interval.items()):
        lines.append(f"  asset events for {dag_id}: at most every {gap}")
    lines.append(f"  warc: {'on' if project.warc.enabled else 'off'}")
    if project.world.mess.on:
        lines.append(f"  world mess: {project.world.mess.model_dump(exclude_defaults=True)}")
    for s in project.sites:
        if s.scope != ScopeRules():
            lines.append(f"  scope of {s.name}: {s.scope.model_dump(exclude_defaults=True)}")
    return "\n".join(lines)


__all__ = ["DAG_IDS", "LOOPS", "STREAM_DAGS", "AssetEvents", "FueLoop", "GraphLoop", "Loop", "Loops", "OAuth", "PageFocus", "Profile",
           "Project", "ProjectError", "RevisitsLoop", "Site", "SourcesLoop", "Warc", "WorldKnobs", "airflow_schedule", "check_schedule", "interpolate",
           "INIT_TEMPLATE", "load_project", "load_site", "parse_duration", "parse_project", "read_examples", "summary", "write_init"]
