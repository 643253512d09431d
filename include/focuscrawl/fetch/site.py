"""A project site's fetcher: the one place a ``[[sites]]`` entry becomes a :class:`~focuscrawl.fetch.Fetcher`.

Every process that crawls a site of a project calls :func:`fetcher_for_site` with the site of its
fetch spec (:class:`focuscrawl.stream.spec.FetchSpec`, ``--fetch-spec FILE``), so the site's User-Agent,
politeness delay, robots.txt switch, rate-limit headers and OAuth2 client credentials apply the same
way everywhere, on top of the SSRF guard of the settings. The site's politeness delay is applied here
and nowhere else: as the pause every instance owes the host (a shared ledger under ``<var>/politeness``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from focuscrawl.fetch.fetcher import Fetcher
from focuscrawl.fetch.guard import AddressGuard
from focuscrawl.fetch.oauth import ClientCredentialsAuth, RateLimitHeaders
from focuscrawl.fetch.politeness import HostPoliteness, SharedHostLedger

log = logging.getLogger(__name__)


def fetcher_for_site(site, cfg=None, pace: float = 0.0, **kwargs) -> Fetcher:
    """A fetcher for ``site`` (a :class:`focuscrawl.project.model.Site`) that waits at least ``pace`` seconds
    between two of its own requests to a host (a loop's fetch budget); ``kwargs`` go to :class:`Fetcher`."""
    from focuscrawl.config import settings

    cfg = cfg or settings()
    kwargs.setdefault("guard", AddressGuard(cfg.allow_private_hosts))
    # Every instance crawling the site owes its host the site's pause (a shared ledger); a process's
    # own pace (a loop's fetch budget) stays its own.
    politeness = kwargs.get("politeness") or HostPoliteness(min_delay=pace, max_in_flight=site.max_in_flight)
    kwargs["politeness"] = politeness.share(SharedHostLedger(Path(cfg.var_dir) / "politeness"),
                                            host_delay=site.politeness_delay)
    kwargs.setdefault("obey_robots", site.obey_robots)
    fetcher = Fetcher(user_agent=site.user_agent, **kwargs)
    on = []
    if site.rate_limit_headers:
        fetcher.rate_limit = RateLimitHeaders(fetcher.politeness).attach(fetcher)
        on.append("X-Ratelimit headers obeyed")
    if site.oauth is not None:
        fetcher.session.auth = ClientCredentialsAuth(
            site.oauth.token_url, site.oauth.client_id_env, site.oauth.client_secret_env,
            user_agent=site.user_agent, session=fetcher.session, scope=site.oauth.scope,
            timeout=fetcher.timeout)
        fetcher.session.auth._credentials()  # an unset variable fails now, by name; the token comes with the first request
        on.append(f"OAuth2 client credentials from ${site.oauth.client_id_env}/${site.oauth.client_secret_env} "
                  f"at {site.oauth.token_url}")
    log.info("site %s at %s: %s", site.name, site.url(cfg), ", ".join(on) or "no auth")
    return fetcher


__all__ = ["fetcher_for_site"]
