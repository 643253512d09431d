"""``focuscrawl init``'s project file template, and the one-screen summary ``focuscrawl up`` prints.
"""

from __future__ import annotations

from pathlib import Path

from focuscrawl.fetch.scope import ScopeRules
from focuscrawl.project.model import Project
from focuscrawl.project.values import LOOPS

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
target = "new_outlinks"     # or "new_relevant_outlinks": only new links about [profile.pages] count
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
