"""The ``[world]`` table of a project file: the knobs ``focuscrawl world serve`` takes.

Plain schemas without the world's machinery, so a process that loads a project never loads the
world package (the live path reads no ground truth). The world builds its behaviour on them
(:mod:`focuscrawl.world.validators`, :mod:`focuscrawl.world.mess`).
"""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field


class ValidatorKnobs(BaseModel):
    """Whether the world's web pages carry validators, and which share of hosts ignores them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(False, description="send ETag/Last-Modified with web pages and answer 304 when unchanged")
    ignore_share: float = Field(0.0, ge=0, le=1, description="share of web hosts that send validators but always "
                                                            "answer in full (drawn with seed)")
    seed: int = Field(0, description="draws which hosts ignore validators")

    def ignoring(self, hosts: list[str]) -> frozenset[str]:
        """The hosts (of ``hosts``) that ignore conditional requests: a seeded sample of ``ignore_share``."""
        if not self.enabled or self.ignore_share <= 0 or not hosts:
            return frozenset()
        n = max(1, round(self.ignore_share * len(hosts)))
        return frozenset(random.Random(self.seed * 1_000_003 + 41).sample(sorted(hosts), min(n, len(hosts))))


class MessKnobs(BaseModel):
    """How messy the world's web is: one knob per behaviour, all off by default
    (:mod:`focuscrawl.world.mess` says what each does)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = Field(0, description="draws of which link is messed up, with the world's seed")
    variants: float = Field(0.0, ge=0, le=1, description="share of links written as a URL variant of their page")
    duplicates: float = Field(0.0, ge=0, le=1, description="share of links to the page's rel=canonical copy")
    redirects: float = Field(0.0, ge=0, le=1, description="share of links reaching their page by a redirect chain")
    redirect_loops: float = Field(0.0, ge=0, description="extra links per page into a redirect loop")
    soft404: float = Field(0.0, ge=0, description="extra links per page to missing pages answered 200 (soft-404)")
    calendar: bool = Field(False, description="every page links to an endless calendar")
    gzip: bool = Field(False, description="gzip HTML for clients that accept it")
    wrong_charset: float = Field(0.0, ge=0, le=1, description="share of pages declared ISO-8859-1, sent as UTF-8")

    @property
    def on(self) -> bool:
        return self != type(self)(seed=self.seed)
