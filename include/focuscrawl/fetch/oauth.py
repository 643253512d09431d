"""OAuth2 client credentials for the fetch layer, and a site's rate-limit headers obeyed.

:class:`ClientCredentialsAuth` is a ``requests`` auth (the ``AuthBase`` protocol
``HTTPDigestAuth`` follows): it fetches a bearer token from the site's token endpoint by the
client credentials grant (RFC 6749 4.4; reddit's application-only OAuth: HTTP Basic auth with
the client id and secret, ``grant_type=client_credentials``), caches it until shortly before
``expires_in``, puts ``Authorization: bearer TOKEN`` on every request and, when the site
answers 401 anyway (a token revoked or expired early), fetches a new token and sends the
request once more. The id and secret are read from the *named* environment variables when a
token is needed, never stored in a file; the secret and every token are registered with
:mod:`focuscrawl.core.redact` so no log line carries them.

:class:`RateLimitHeaders` reads reddit's ``X-Ratelimit-Used/Remaining/Reset`` (remaining
requests in the window, seconds until it resets) from every response and paces the host
through the fetcher's :class:`~focuscrawl.fetch.politeness.HostPoliteness`: the remaining
requests are spread over the time left, and none is sent once the window is spent.

Both attach to a :class:`~focuscrawl.fetch.Fetcher`'s ``requests`` session, so every request
(robots.txt, retries, redirect hops) is covered without a line in the fetch path;
:func:`focuscrawl.fetch.site.fetcher_for_site` wires them from a project's site.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Callable
from urllib.parse import urlsplit

import requests
from requests.auth import AuthBase, HTTPBasicAuth

from focuscrawl.fetch.errors import FetchError
from focuscrawl.fetch.robots import host_key
from focuscrawl.core.redact import register_secret

log = logging.getLogger(__name__)


class OAuthError(FetchError):
    """No token could be had: the variables are unset, the endpoint refused the credentials or failed."""


class ClientCredentialsAuth(AuthBase):
    """Bearer tokens by the client credentials grant, cached until expiry, refreshed once on 401."""

    def __init__(self, token_url: str, client_id_env: str, client_secret_env: str, *, user_agent: str,
                 session: requests.Session | None = None, scope: str | None = None, margin: float = 60.0,
                 timeout: tuple[float, float] = (5.0, 30.0), environ: Mapping[str, str] | None = None,
                 wall: Callable[[], float] = time.monotonic) -> None:
        self.token_url = token_url
        self.client_id_env, self.client_secret_env = client_id_env, client_secret_env
        self.user_agent = user_agent
        self.session = session or requests.Session()
        self.scope = scope
        self.margin = margin
        self.timeout = timeout
        self._environ = os.environ if environ is None else environ
        self._wall = wall
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires = 0.0
        self.tokens_fetched = 0
        self.refreshed_on_401 = 0

    def __repr__(self) -> str:  # never the token or the secret
        return f"ClientCredentialsAuth({self.token_url!r}, ${self.client_id_env}, ${self.client_secret_env})"

    def _credentials(self) -> tuple[str, str]:
        values = []
        for name in (self.client_id_env, self.client_secret_env):
            value = self._environ.get(name)
            if not value:
                raise OAuthError(self.token_url, f"environment variable {name} is not set; export it (the OAuth "
                                                 f"client credentials for {self.token_url} are read from it)")
            values.append(value)
        register_secret(values[1])
        return values[0], values[1]

    def token(self) -> str:
        """The cached token, or a new one when it is within ``margin`` of its expiry."""
        with self._lock:
            if self._token is None or self._wall() >= self._expires:
                self._token, lifetime = self._fetch_token()
                # A short-lived token is refreshed at 90 % of its life, a long one ``margin`` s early.
                self._expires = self._wall() + max(lifetime - self.margin, lifetime * 0.9)
            return self._token

    def invalidate(self, token: str) -> None:
        """Forget ``token`` if it is still the cached one (another thread may have refreshed it already)."""
        with self._lock:
            if self._token == token:
                self._token = None

    def _fetch_token(self) -> tuple[str, float]:
        client_id, secret = self._credentials()
        data = {"grant_type": "client_credentials", **({"scope": self.scope} if self.scope else {})}
        try:
            r = self.session.post(self.token_url, data=data, auth=HTTPBasicAuth(client_id, secret),
                                  headers={"User-Agent": self.user_agent}, timeout=self.timeout, allow_redirects=False)
        except requests.RequestException as exc:
            raise OAuthError(self.token_url, f"cannot reach the token endpoint {self.token_url} ({type(exc).__name__}); "
                                             "check token_url and that the site is up") from None
        with r:
            if r.status_code in (401, 403):
                raise OAuthError(self.token_url, f"the token endpoint {self.token_url} refused the client credentials "
                                                 f"(HTTP {r.status_code}); check {self.client_id_env} and "
                                                 f"{self.client_secret_env}")
            try:
                answer = r.json()
                token, lifetime = str(answer["access_token"]), float(answer.get("expires_in", 3600))
            except (ValueError, KeyError, TypeError):
                error = answer.get("error") if isinstance(locals().get("answer"), dict) else None
                raise OAuthError(self.token_url, f"the token endpoint {self.token_url} answered HTTP {r.status_code} "
                                                 f"without an access_token{f' (error {error!r})' if error else ''}; "
                                                 "check token_url and the grant") from None
        register_secret(token)
        self.tokens_fetched += 1
        log.info("OAuth token %d fetched from %s (expires in %.0f s)", self.tokens_fetched, self.token_url, lifetime)
        return token, lifetime

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        if urlsplit(r.url).path == "/robots.txt":
            return r  # public on every site; a token failure must surface as itself, not as "robots unreachable"
        token = self.token()
        r.headers["Authorization"] = f"bearer {token}"
        r.register_hook("response", self._on_401)
        return r

    def _on_401(self, response: requests.Response, **kwargs) -> requests.Response:
        """On 401, one new token and one more try of the same request (``HTTPDigestAuth``'s pattern)."""
        if response.status_code != 401 or getattr(response.request, "_focuscrawl_refreshed", False):
            return response
        sent = response.request.headers.get("Authorization", "").partition(" ")[2]
        self.invalidate(sent)
        response.content  # noqa: B018 - drain so the connection can be reused
        response.close()
        retry = response.request.copy()
        retry.headers["Authorization"] = f"bearer {self.token()}"
        retry._focuscrawl_refreshed = True
        self.refreshed_on_401 += 1
        log.info("HTTP 401 from %s: token refreshed, request sent again", host_key(response.url))
        again = response.connection.send(retry, **kwargs)
        again.history.append(response)
        again.request = retry
        return again


class RateLimitHeaders:
    """Pace a host by its ``X-Ratelimit-Remaining`` and ``X-Ratelimit-Reset`` (reddit's API rules)."""

    def __init__(self, politeness) -> None:
        self.politeness = politeness
        self.deferred = 0

    def attach(self, fetcher) -> "RateLimitHeaders":
        fetcher.session.hooks.setdefault("response", []).append(self.observe)
        return self

    def observe(self, response: requests.Response, *args, **kwargs) -> requests.Response:
        try:
            remaining = float(response.headers["X-Ratelimit-Remaining"])
            reset = float(response.headers["X-Ratelimit-Reset"])
        except (KeyError, ValueError):
            return response
        wait = reset if remaining < 1 else reset / remaining
        if wait > self.politeness.min_delay:
            self.politeness.defer(host_key(response.url), wait)
            self.deferred += 1
            if remaining < 1:
                log.info("rate-limit window of %s spent: next request in %.0f s", host_key(response.url), reset)
        return response


__all__ = ["ClientCredentialsAuth", "OAuthError", "RateLimitHeaders"]
