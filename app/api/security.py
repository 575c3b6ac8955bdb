"""Browser-facing safety, for every response: security headers, no state-changing request from
another site, and sign-in cookies that are not the key."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import logging
import re
import secrets
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Nothing is loaded from elsewhere: scripts only from this server (Swagger UI's bundle and its
# start-up file; the dashboard has none), style attributes allowed (bar widths, Swagger UI).
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}
UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


class SecurityHeaders:
    """Adds HEADERS to every HTTP response (pages, API, static files, errors)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, with_headers)


class HeadAsGet:
    """HEAD answered as GET is, without the body (HTTP: a server that answers GET answers HEAD
    too); FastAPI's routes take GET alone, and `curl -I` or an uptime check got 405 everywhere,
    /health included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


# a query parameter whose name says it holds a secret: `key`, `api_key`, `access_token`, `password`
_SECRET_PARAM = re.compile(r"((?:^|[?&;])[\w.-]*(?:key|token|password|secret|auth)[\w.-]*=)[^&;#]*", re.IGNORECASE)


class RedactSecrets(logging.Filter):
    """The server's access-log lines with the values of query parameters that name a secret
    replaced by ***: a key sent in the address is refused (keys go in the Authorization header)
    but was written to the log in full."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):  # uvicorn's path and query
            record.args = (*args[:2], _SECRET_PARAM.sub(r"\1***", args[2]), *args[3:])
        return True


def server_log_config() -> dict[str, Any]:
    """uvicorn's logging settings, its access log passed through RedactSecrets."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_secrets"] = {"()": RedactSecrets}
    config["handlers"]["access"]["filters"] = ["redact_secrets"]
    # the server's own lines (a job taken up, a job failed, why a request was answered 5xx) beside
    # uvicorn's: with no handler, INFO was dropped and a warning came without its level
    config["loggers"]["contam"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config


def foreign_origin(headers: Headers) -> str | None:
    """The other site a browser says a request comes from (Origin, else Referer), or None when
    it names this server's Host or names nothing (a client that is not a browser)."""
    source = headers.get("origin") or headers.get("referer")
    if not source:
        return None
    host = headers.get("host", "")
    parts = urlsplit(source)
    if source == "null" or not parts.netloc or parts.netloc.lower() != host.lower():
        return source
    return None


class SameOrigin:
    """Refuses (403) a POST, PUT, PATCH or DELETE a browser sends from another site: without it
    any page the user visits could upload, check or delete through the user's browser."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in UNSAFE_METHODS:
            origin = foreign_origin(Headers(scope=scope))
            if origin is not None:
                await _refuse(send, f"cross-site request refused: {origin[:200]} is not this server")
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, message: str) -> None:
    body = json.dumps({"error": message, "detail": None}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 403, "headers": headers})
    await send({"type": "http.response.body", "body": body})


SESSION_SECONDS = 12 * 3600  # a dashboard sign-in lasts this long (the cookie's Max-Age, and the token's)


class Sessions:
    """Sign-in tokens for the dashboard's cookie: the time of signing in and an HMAC of it and the
    key under a server secret, so the cookie never holds the key itself (with no secret set, a
    random one per start) and lapses after SESSION_SECONDS (it was one token per key, valid until
    the key was removed)."""

    def __init__(self, secret: str = "") -> None:
        self._secret = secret.encode() if secret else secrets.token_bytes(32)

    def token(self, key: str, issued: int | None = None) -> str:
        issued = int(time.time()) if issued is None else issued
        return f"{issued}." + hmac.new(self._secret, f"{issued}.{key}".encode(), hashlib.sha256).hexdigest()

    def valid(self, token: str | None, keys: Iterable[str], now: float | None = None) -> bool:
        if not token:
            return False
        issued = token.partition(".")[0]
        if not issued.isdigit():
            return False
        age = (time.time() if now is None else now) - int(issued)
        if not -60 <= age < SESSION_SECONDS:  # a minute of clock skew between servers sharing the secret
            return False
        return any(hmac.compare_digest(token, self.token(k, int(issued))) for k in keys)
