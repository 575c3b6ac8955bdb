"""The FastAPI application, built by create_app(settings): services, routers, middleware and
error handlers wired together; the routes themselves live in app/api/routes and app/web."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from contam.app import __version__
from contam.app.api import errors
from contam.app.api.bodies import BodyLimit
from contam.app.api.deps import AuthDep
from contam.app.api.routes import check, corpora, docs, health, reports
from contam.app.api.security import HeadAsGet, SameOrigin, SecurityHeaders, Sessions
from contam.app.errors import NotFoundError
from contam.app.processes import sweep_temp
from contam.app.services.checking import CheckService
from contam.app.services.corpora import CorpusService
from contam.app.services.database import connect, migrate
from contam.app.services.reports import ReportService
from contam.app.settings import Settings
from contam.app.web import pages
from contam.app.web.errors import error_page

DESCRIPTION = (
    "Benchmark contamination detector: which benchmark items are in the indexed training corpora, "
    "how much of each, and where."
)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Migrate the database; hold this server's report jobs and take up those a stopped server
    left (from a second on: see ReportService.start); remove the temporary files killed ones
    left, meanwhile (sweep_temp); stop the jobs at the end."""
    migrate(app.state.settings.database_url)
    threading.Thread(target=sweep_temp, name="contam-sweep", daemon=True).start()
    app.state.reports.start()
    yield
    app.state.reports.shutdown()
    app.state.checks.close()
    app.state.engine.dispose()


def api_router() -> APIRouter:
    """Every /api/v1 route, behind the API key when keys are set."""
    api = APIRouter(prefix="/api/v1", dependencies=[AuthDep], responses=errors.RESPONSES)
    for module in (reports, check, corpora):
        api.include_router(module.router)
    return api


async def _page_or_json(request: Request, exc: Exception) -> Response:
    """An address nothing answers: the dashboard's "Not found" page for a browser (one asking
    for HTML, outside /api/ and /docs), the API's JSON error otherwise (it was JSON for every
    address: a mistyped dashboard link showed `{"error":"Not Found"}`)."""
    assert isinstance(exc, StarletteHTTPException)
    path = request.url.path
    wants_page = "text/html" in request.headers.get("accept", "") and not path.startswith(("/api/", "/docs"))
    if exc.status_code == 404 and wants_page:
        return error_page(request, NotFoundError(f"nothing here: {path} (the dashboard starts at /)"))
    return await errors.http_error(request, exc)


def create_app(settings: Settings) -> FastAPI:
    engine = connect(settings.database_url)
    app = FastAPI(
        title="contam", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None, description=DESCRIPTION
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.limits = limits = settings.limits()
    app.state.reports = ReportService(
        engine,
        settings.max_upload_bytes,
        limits,
        settings.job_retry_seconds,
        settings.job_workers,
        settings.scan_workers,
        settings.job_lease_seconds,
    )
    app.state.corpora = CorpusService(engine)
    app.state.checks = CheckService(engine, limits, check_workers=settings.check_workers)
    errors.install(app)
    app.add_exception_handler(StarletteHTTPException, _page_or_json)
    app.state.sessions = Sessions(settings.session_secret)
    app.add_middleware(BodyLimit, upload_bytes=settings.max_upload_bytes, limits=limits)
    app.add_middleware(SameOrigin)  # before the body is read: a cross-site write is refused unread
    app.add_middleware(SecurityHeaders)  # every response, refusals included
    app.add_middleware(HeadAsGet)  # outermost: HEAD is GET with the body left out
    app.include_router(health.router)
    app.include_router(api_router())
    app.mount(docs.ASSETS, docs.assets(), name="swagger")  # before /static, which would shadow it
    app.include_router(docs.router)
    app.mount(pages.STATIC_URL, pages.static_files(), name="static")
    app.include_router(pages.router)
    return app
