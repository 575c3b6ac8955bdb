"""The FastAPI application, built by create_app(settings)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import (
    APIRouter,
    Depends,
    FastAPI,
    File,
    Form,
    HTTPException,
    Query,
    Request,
    Response,
    UploadFile,
)
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app import __version__
from app.api import errors
from app.api.schemas import (
    CheckRequest,
    CheckResponse,
    ErrorRead,
    ItemList,
    ItemResultRead,
    ReportCreated,
    ReportList,
    ReportRead,
    ThresholdsIn,
)
from app.core.scoring import Thresholds
from app.core.types import BenchmarkItem
from app.errors import InputError
from app.services.reports import ReportService
from app.services.scanning import Scanner
from app.settings import Settings
from app.store import repo
from app.store.db import make_engine, upgrade

ERRORS: dict[int | str, dict[str, Any]] = {c: {"model": ErrorRead} for c in (400, 401, 404, 409, 413, 422)}
_bearer = HTTPBearer(auto_error=False)


def get_service(request: Request) -> ReportService:
    return request.app.state.service  # type: ignore[no-any-return]


ServiceDep = Annotated[ReportService, Depends(get_service)]


def _offline_docs(app: FastAPI) -> None:
    """Swagger UI at /docs from the swagger-ui-bundle package: nothing is fetched from a CDN."""
    import swagger_ui_bundle
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    app.mount("/static/swagger", StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="swagger")

    @app.get("/docs", include_in_schema=False)
    def docs() -> Any:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="contam API",
            swagger_js_url="/static/swagger/swagger-ui-bundle.js",
            swagger_css_url="/static/swagger/swagger-ui.css",
            swagger_favicon_url="/static/swagger/favicon-32x32.png",
        )


def create_app(settings: Settings) -> FastAPI:
    engine = make_engine(settings.database_url)
    service = ReportService(engine, int(settings.max_upload_mb * 1e6))
    keys = settings.key_set()

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        upgrade(settings.database_url)
        service.resume_pending()
        yield
        service.shutdown()
        engine.dispose()

    app = FastAPI(
        title="contam",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        description="Benchmark contamination detector: which benchmark items are in the indexed "
        "training corpora, how much of each, and where.",
    )
    app.state.service = service
    app.state.engine = engine
    app.state.settings = settings
    errors.install(app)

    def auth(creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
        if keys and (creds is None or creds.credentials not in keys):
            raise HTTPException(
                401, "a valid API key is required (Authorization: Bearer <key>)", headers={"WWW-Authenticate": "Bearer"}
            )

    api = APIRouter(prefix="/api/v1", dependencies=[Depends(auth)], responses=ERRORS)

    @app.get("/health", tags=["meta"])
    def health() -> dict[str, Any]:
        """Liveness and database reachability."""
        with engine.connect() as conn:
            n = len(repo.list_corpora(conn))
        return {"status": "ok", "version": __version__, "corpora": n}

    @api.post("/benchmarks", status_code=202, response_model=ReportCreated, tags=["reports"])
    def upload_benchmark(
        svc: ServiceDep,
        file: Annotated[UploadFile, File(description="JSONL, JSON, CSV/TSV or Parquet; .gz/.zst allowed")],
        name: Annotated[str | None, Form(description="report name (default: the file name)")] = None,
        mapping: Annotated[str | None, Form(description='JSON {"question": field, "answer": field, ...}')] = None,
        corpora: Annotated[str | None, Form(description="comma-separated corpus names (default: all)")] = None,
        thresholds: Annotated[str | None, Form(description="JSON object of threshold overrides")] = None,
    ) -> ReportCreated:
        """Upload a benchmark; returns 202 and the report id while the check runs."""
        data = file.file.read(service.max_upload + 1)
        try:
            fields = json.loads(mapping) if mapping else None
            th = ThresholdsIn(**json.loads(thresholds)) if thresholds else ThresholdsIn()
        except (ValueError, TypeError) as exc:
            raise InputError(f"mapping and thresholds must be JSON objects ({exc})") from exc
        if fields is not None and not isinstance(fields, dict):
            raise InputError("mapping must be a JSON object of role -> field")
        names = [c.strip() for c in corpora.split(",") if c.strip()] if corpora else None
        rid = svc.submit(data, file.filename or "upload.jsonl", name, fields, names, Thresholds(**th.model_dump()))
        return ReportCreated(id=rid, status="queued", url=f"/api/v1/reports/{rid}")

    @api.post("/check", response_model=CheckResponse, tags=["check"])
    def check(body: CheckRequest) -> CheckResponse:
        """Check a few texts or items synchronously."""
        items = [BenchmarkItem(str(i), i, question=t) for i, t in enumerate(body.texts)]
        items += [
            BenchmarkItem(
                it.id or str(len(body.texts) + i),
                len(body.texts) + i,
                question=it.question,
                passage=it.passage,
                choices=tuple(it.choices),
                answer=it.answer,
            )
            for i, it in enumerate(body.items)
        ]
        if not items:
            raise InputError("give at least one text or item")
        if len(items) > 1000:
            raise InputError("at most 1000 items per check; upload a benchmark for more")
        scanner = Scanner(engine, body.corpora, Thresholds(**body.thresholds.model_dump()))
        results = scanner.scan(items)
        return CheckResponse(fingerprint=scanner.fingerprint, results=[ItemResultRead(**r.as_dict()) for r in results])

    @api.get("/reports", response_model=ReportList, tags=["reports"])
    def list_reports(svc: ServiceDep, limit: int = Query(100, ge=1, le=1000), offset: int = Query(0, ge=0)) -> Any:
        """All reports, newest first, with progress and counts."""
        total, rows = svc.list_reports(limit, offset)
        return {"total": total, "reports": rows}

    @api.get("/reports/{report_id}", response_model=ReportRead, tags=["reports"])
    def get_report(report_id: str, svc: ServiceDep) -> Any:
        """One report: status, progress, summary, settings fingerprint and thresholds."""
        return svc.get(report_id)

    @api.delete("/reports/{report_id}", status_code=204, tags=["reports"])
    def delete_report(report_id: str, svc: ServiceDep) -> Response:
        """Delete a report and its items."""
        svc.delete(report_id)
        return Response(status_code=204)

    @api.get("/reports/{report_id}/items", response_model=ItemList, tags=["reports"])
    def list_items(
        report_id: str,
        svc: ServiceDep,
        status: Annotated[list[str] | None, Query(description="repeatable: contaminated, suspicious, ...")] = None,
        min_score: Annotated[float | None, Query(ge=0, le=1)] = None,
        field: Annotated[str | None, Query(description="only items whose FIELD was found")] = None,
        corpus: Annotated[str | None, Query(description="only items with evidence in this corpus")] = None,
        q: Annotated[str | None, Query(description="text search in the item")] = None,
        sort: Annotated[str, Query(pattern="^(score|row|item_id|status)$")] = "score",
        order: Annotated[str, Query(pattern="^(asc|desc)$")] = "desc",
        page: Annotated[int, Query(ge=1)] = 1,
        page_size: Annotated[int, Query(ge=1, le=500)] = 50,
    ) -> Any:
        """Items of a report, filtered, sorted and paginated."""
        total, rows = svc.items(
            report_id,
            status=status,
            min_score=min_score,
            role=field,
            corpus=corpus,
            q=q,
            sort=sort,
            descending=order == "desc",
            limit=page_size,
            offset=(page - 1) * page_size,
        )
        return {"total": total, "page": page, "page_size": page_size, "items": rows}

    @api.get("/reports/{report_id}/items/{item_id:path}", response_model=ItemResultRead, tags=["reports"])
    def get_item(report_id: str, item_id: str, svc: ServiceDep) -> Any:
        """One item with its metrics and every evidence match."""
        return svc.item(report_id, item_id)

    @api.get(
        "/reports/{report_id}/export",
        tags=["reports"],
        responses={200: {"content": {"application/x-ndjson": {}, "text/csv": {}}}},
    )
    def export(report_id: str, svc: ServiceDep, format: str = Query("jsonl", pattern="^(jsonl|csv)$")) -> Response:
        """Every item's result as JSONL or CSV."""
        body, media = svc.export(report_id, format)
        return Response(
            body,
            media_type=media,
            headers={"Content-Disposition": f'attachment; filename="report-{report_id}.{format}"'},
        )

    @api.get(
        "/reports/{report_id}/clean", tags=["reports"], responses={200: {"content": {"application/octet-stream": {}}}}
    )
    def clean_subset(
        report_id: str, svc: ServiceDep, drop_suspicious: bool = Query(False, description="also drop suspicious items")
    ) -> Response:
        """The uploaded benchmark without its contaminated items, in its original format."""
        body, name = svc.clean_subset(report_id, drop_suspicious)
        return Response(
            body,
            media_type="application/octet-stream",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    @api.get("/corpora", tags=["corpora"])
    def corpora() -> list[dict[str, Any]]:
        """Indexed corpora with size and signature settings."""
        with engine.connect() as conn:
            return repo.list_corpora(conn)

    @api.get("/corpora/{name}", tags=["corpora"])
    def corpus_health(name: str) -> dict[str, Any]:
        """One corpus's health: documents, tokens, skipped records, failed files, duplicates, lengths."""
        from app.errors import NotFoundError

        with engine.connect() as conn:
            row = repo.get_corpus(conn, name)
            if row is None:
                raise NotFoundError(f"no corpus named {name!r}")
            return {
                "name": name,
                "fingerprint": row["fingerprint"],
                "config": json.loads(row["config"]),
                **repo.corpus_health(conn, row["id"]),
            }

    app.include_router(api)
    _offline_docs(app)
    from app.web.routes import mount

    mount(app, service, keys)

    @app.middleware("http")
    async def limit_upload(request: Request, call_next: Any) -> Any:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > service.max_upload + (1 << 20):
            from fastapi.responses import JSONResponse

            return JSONResponse(
                {"error": f"upload exceeds the limit of {service.max_upload / 1e6:.1f} MB", "detail": None},
                status_code=413,
            )
        return await call_next(request)

    return app
