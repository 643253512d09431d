"""The FUE loop's knobs (seed 000), declared once: the ranking, the explorer and pseudo-training.

Seed 000 (*Real-time focused extraction of social media users*). ``[loops.fue]`` of the project file, the ``fue_pseudo_training``
DAG (its Params and its schedule's default), ``streaming/fue/explorer.py`` and ``focuscrawl
experiment fue`` take their defaults from :data:`DEFAULT` (``focuscrawl.core.params``).
"""

from __future__ import annotations

from dataclasses import dataclass

from focuscrawl.core.params import knob
from focuscrawl.parse.listing import FRONT_PAGE


@dataclass(frozen=True)
class FueParams:
    method: str = knob("HCP", "registered ranking method")
    community_chooser: str = knob("RANDOM", "registered community chooser of the explorer")
    # Where the explorer reads the front page (below): reddit's /all. A Reddit-format site may list every
    # community's new posts elsewhere; community visits stay /r/{sub}/new.json and /r/{sub}/comments.json.
    listing_path: str = knob(FRONT_PAGE, "path of the front page on the site (every community's new posts), "
                                         "read by the explorer")
    # The Community Explorer's pace: two periods of its own. The front page (/r/all/new, "a pseudo-community
    # that holds together the posts from all communities", section III; Algorithm 1 reads it first) lists
    # every new post, so a new post waits for the next front-page read: front_page_interval, start to start,
    # bounds the evidence latency from below (bench/latency_bench.py). A community visit reads one chosen
    # community's new posts and comments (section II-B), visit_interval after the previous one. Each read
    # sends only the posts the explorer has not sent (overlapping listings re-sent up to 300 posts a visit,
    # which is what made a short visit_interval slower). Defaults for reddit (politeness 1 s, about 100
    # requests a minute per OAuth client, projects/reddit.toml): a community visit every ~4 s and the front
    # page every 5 s take about 42 requests a minute, the rest left to the extractors sharing the host's
    # politeness ledger. A local world can go lower ([loops.fue]).
    visit_interval: float = knob(2.0, "seconds between two community visits of the explorer", minimum=0)
    front_page_interval: float = knob(5.0, "seconds between two reads of the front page (/r/all/new) by the "
                                           "explorer, start to start", minimum=0)
    # The User Extractor's budget: section IV-F's week extracted "higher than 110,000 (655 per hour)" users
    # per method; 600 is that pace, rounded down. projects/reddit.toml takes 120 within reddit's rate limit.
    users_per_hour: float = knob(600.0, "users an extractor extracts an hour at most", exclusiveMinimum=0)
    # Section V: the pseudo-trained HCP variants (threshold pairs, and positives only).
    pseudo_methods: tuple[str, ...] = knob(("HCP-0.9-0.1", "HCP-0.5-0.5", "HCP-POS"), "pseudo-trained HCP variants")
    # Section V: "Every five minutes, a new prediction classifier is built from the original training
    # set plus the new pseudo-examples available".
    pseudo_every: str = knob("5m", "pseudo-training period (a duration)")
    # Section V: the Batch Updater re-scored the 50,000 best waiting candidates.
    top_n: int = knob(50_000, "best candidates re-scored per variant", minimum=1)
    # The user classifier (section IV-F): "a threshold equal to 0.9" calls a user on-target; the
    # hyper-parameters are those of the paper's published trainer (blind-sniper/heuristics
    # model_trainer.py): words from 20 users up, liblinear L1 with C = 16, positives weighted w = 4.
    reference_threshold: float = knob(0.9, "reference classifier's probability for an on-target user",
                                      exclusiveMinimum=0, exclusiveMaximum=1)
    min_df: int = knob(20, "words kept from this many training users up", minimum=1)
    C: float = knob(16.0, "inverse L1 regularisation strength", exclusiveMinimum=0)
    positive_weight: float = knob(4.0, "w: positives weigh w/(1+w), negatives 1/(1+w)", exclusiveMinimum=0)


DEFAULT = FueParams()
PSEUDO_TRAINING_KNOBS = ("top_n",)  # the fue_pseudo_training DAG's Params besides its methods
EXTRACT_KNOBS = ("users_per_hour",)  # what streaming/fue/extractor.py takes
