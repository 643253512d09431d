"""The world's OAuth2 token endpoint and bearer check, as reddit's application-only OAuth does it.

It makes the reddit project template testable for real. reddit's API
(https://github.com/reddit-archive/reddit/wiki/OAuth2) hands an application a token by the client
credentials grant (RFC 6749 4.4): ``POST /api/v1/access_token`` with HTTP Basic auth
``client_id:client_secret`` and the form body ``grant_type=client_credentials``, answering
``{"access_token", "token_type": "bearer", "expires_in", "scope"}``. Every API request then carries
``Authorization: bearer TOKEN``; a missing, unknown, expired or revoked token gets 401 with
``WWW-Authenticate: Bearer ... error="invalid_token"`` (RFC 6750 3.1), and the client fetches a new
one. Rate limits then count per OAuth client, as reddit's do.

The credentials come from the environment of the world (``--require-oauth``): never from an
argument, which ``ps`` would show. Tokens are random and kept in memory only; :meth:`state`
reports counts, never a token.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import secrets
import threading
import time
from typing import Callable
from urllib.parse import parse_qs

TOKEN_PATH = "/api/v1/access_token"
CLIENT_ID_ENV = "FOCUSCRAWL_WORLD_OAUTH_CLIENT_ID"
CLIENT_SECRET_ENV = "FOCUSCRAWL_WORLD_OAUTH_CLIENT_SECRET"
PUBLIC_PATHS = frozenset({"/robots.txt"})  # what a crawler may read before it has a token
JSON = "application/json; charset=UTF-8"


def _json(obj) -> bytes:
    return json.dumps(obj, sort_keys=True).encode()


class OAuthEmulator:
    """One registered application (``client_id``/``client_secret``) and the bearer tokens issued to it."""

    def __init__(self, client_id: str, client_secret: str, token_ttl: float = 86400.0,
                 wall: Callable[[], float] = time.monotonic) -> None:
        if not client_id or not client_secret:
            raise ValueError(f"the world's OAuth needs a client id and secret: set {CLIENT_ID_ENV} and {CLIENT_SECRET_ENV}")
        if token_ttl <= 0:
            raise ValueError(f"token_ttl must be positive, got {token_ttl}")
        self.client_id = client_id
        self._secret = client_secret
        self.token_ttl = token_ttl
        self._wall = wall
        self._lock = threading.Lock()
        self._tokens: dict[str, float] = {}  # token -> wall expiry
        self.issued = 0
        self.refused = 0  # token requests with bad credentials
        self.unauthorized = 0  # API requests answered 401

    def token(self, authorization: str | None, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """Answer ``POST /api/v1/access_token``: status, headers, JSON body."""
        if not self._basic_ok(authorization):
            with self._lock:
                self.refused += 1
            return 401, {"WWW-Authenticate": 'Basic realm="reddit"'}, _json({"message": "Unauthorized", "error": 401})
        form = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", errors="replace")).items()}
        if form.get("grant_type") != "client_credentials":
            # reddit answers 200 with the error in the body (r2/controllers/oauth2.py, POST_access_token:
            # ``self.api_wrapper({"error": "unsupported_grant_type"})``), not RFC 6749 5.2's 400
            return 200, {}, _json({"error": "unsupported_grant_type"})
        token = secrets.token_urlsafe(24)
        with self._lock:
            now = self._wall()
            self._tokens = {t: e for t, e in self._tokens.items() if e > now}
            self._tokens[token] = now + self.token_ttl
            self.issued += 1
        return 200, {"Cache-Control": "no-store"}, _json(
            {"access_token": token, "token_type": "bearer", "expires_in": int(self.token_ttl), "scope": "*"})

    def _basic_ok(self, authorization: str | None) -> bool:
        scheme, _, value = (authorization or "").partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, _, password = base64.b64decode(value.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return hmac.compare_digest(user, self.client_id) and hmac.compare_digest(password, self._secret)

    def check(self, authorization: str | None) -> str | None:
        """The client id a valid ``Authorization: bearer TOKEN`` belongs to, else None (counted)."""
        scheme, _, token = (authorization or "").partition(" ")
        with self._lock:
            expiry = self._tokens.get(token.strip()) if scheme.lower() == "bearer" else None
            if expiry is not None and expiry > self._wall():
                return self.client_id
            self.unauthorized += 1
        return None

    @staticmethod
    def unauthorized_response() -> tuple[int, dict[str, str], bytes]:
        return 401, {"WWW-Authenticate": 'Bearer realm="reddit", error="invalid_token"'}, _json(
            {"message": "Unauthorized", "error": 401})

    def revoke_all(self) -> int:
        """Invalidate every token issued (the next API request of each client gets 401)."""
        with self._lock:
            n = len(self._tokens)
            self._tokens.clear()
        return n

    def state(self) -> dict:
        """Counts for the evaluation port; no token and no credential."""
        with self._lock:
            now = self._wall()
            return {"issued": self.issued, "refused": self.refused, "unauthorized": self.unauthorized,
                    "active": sum(e > now for e in self._tokens.values()), "token_ttl": self.token_ttl}
