"""Request dependencies as `Annotated` aliases. create_app builds the settings and services once
and keeps them on the application; these hand them to the routes. They are `async def`: none of
them waits on anything, and FastAPI runs a plain `def` dependency in its thread pool, a thread
hand-off per dependency per request (a third of the server process's own CPU on /api/v1/check)."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.convertors import Convertor, register_url_convertor

from contam.app.api.security import Sessions
from contam.app.limits import Limits
from contam.app.services.checking import CheckService
from contam.app.services.corpora import CorpusService
from contam.app.services.reports import ReportService
from contam.app.settings import Settings


class AnyPath(Convertor[str]):
    """`{name:anypath}`: the rest of the path, line breaks included. Starlette's `path` stops at
    one, and an item whose id held "\\r\\n" could not be opened, its dashboard link dead."""

    regex = "(?s:.*)"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("anypath", AnyPath())


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_report_service(request: Request) -> ReportService:
    service: ReportService = request.app.state.reports
    return service


async def get_corpus_service(request: Request) -> CorpusService:
    service: CorpusService = request.app.state.corpora
    return service


async def get_check_service(request: Request) -> CheckService:
    service: CheckService = request.app.state.checks
    return service


async def get_sessions(request: Request) -> Sessions:
    sessions: Sessions = request.app.state.sessions
    return sessions


async def get_limits(request: Request) -> Limits:
    limits: Limits = request.app.state.limits
    return limits


LimitsDep = Annotated[Limits, Depends(get_limits)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionsDep = Annotated[Sessions, Depends(get_sessions)]
ReportServiceDep = Annotated[ReportService, Depends(get_report_service)]
CorpusServiceDep = Annotated[CorpusService, Depends(get_corpus_service)]
CheckServiceDep = Annotated[CheckService, Depends(get_check_service)]

_bearer = HTTPBearer(auto_error=False)
SIGN_IN_COOKIE = "contam_session"  # the dashboard's sign-in: a token signed by the server (Sessions), never the key
SAFE_METHODS = ("GET", "HEAD")


def has_sign_in(request: Request, keys: set[str]) -> bool:
    """Whether the request carries the dashboard's sign-in: the one check the pages and the
    API's reads (the dashboard's downloads) share."""
    sessions: Sessions = request.app.state.sessions
    return sessions.valid(request.cookies.get(SIGN_IN_COOKIE), keys)


async def require_api_key(
    request: Request, settings: SettingsDep, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    """With CONTAM_API_KEYS set, a request needs `Authorization: Bearer <one of them>`; a read
    (GET) from a user signed in to the dashboard, such as its downloads, may carry the sign-in
    cookie instead. Writes always need the header, so no other site can make a browser write."""
    keys = settings.key_set()
    if not keys or (creds is not None and any(hmac.compare_digest(creds.credentials, k) for k in keys)):
        return
    if creds is None and request.method in SAFE_METHODS and has_sign_in(request, keys):
        return
    raise HTTPException(
        401, "a valid API key is required (Authorization: Bearer <key>)", headers={"WWW-Authenticate": "Bearer"}
    )


AuthDep = Depends(require_api_key)  # a router's dependency: every route under it needs a key
