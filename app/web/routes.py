"""Dashboard pages. Thin: read the query, call a service, render a template."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, FastAPI, File, Form, Query, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from app.core.scoring import Thresholds, shared_spans, split_marked
from app.core.types import Status
from app.errors import ContamError, NotFoundError
from app.services.reports import ReportService
from app.store import repo

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=str(HERE / "templates"))
COOKIE = "contam_key"
STATUSES = tuple(Status)
FLAGGED = [s for s in Status if s.flagged]


class LoginRequired(Exception):
    pass


def _chart_labels(rep: dict[str, Any]) -> dict[str, list[Any]]:
    """Axis labels for the report charts (the counts come from the stored summary)."""
    s = rep.get("summary") or {}
    hist = s.get("histograms") or {}
    cov = hist.get("best_doc_coverage", {}).get("edges", [])
    longest = hist.get("longest_match", {}).get("edges", [])
    return {
        "statuses": [st.replace("_", " ") for st in STATUSES],
        "status_counts": [s.get("counts", {}).get(st, 0) for st in STATUSES],
        "coverage": [f"{a:.0%}–{b:.0%}" for a, b in zip(cov, cov[1:], strict=False)],
        "longest": [f"{a}–{b - 1}" for a, b in zip(longest, longest[1:], strict=False)] + [f"{longest[-1]}+"]
        if longest
        else [],
    }


def mount(app: FastAPI, service: ReportService, keys: set[str]) -> None:
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    engine = service.engine

    def auth(request: Request) -> None:
        if keys and request.cookies.get(COOKIE) not in keys:
            raise LoginRequired()

    @app.exception_handler(LoginRequired)
    async def _login(request: Request, _exc: LoginRequired) -> Response:
        return RedirectResponse(f"/login?{urlencode({'next': request.url.path})}", status_code=303)

    web = APIRouter(dependencies=[Depends(auth)], include_in_schema=False)
    open_routes = APIRouter(include_in_schema=False)

    def page(request: Request, name: str, **ctx: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, {"statuses": STATUSES, "auth": bool(keys), **ctx})

    def error_page(request: Request, exc: ContamError, code: int) -> HTMLResponse:
        resp = page(request, "error.html", message=exc.message)
        resp.status_code = code
        return resp

    @open_routes.get("/login")
    def login_form(request: Request, next: str = "/") -> HTMLResponse:
        return page(request, "login.html", next=next, failed=False)

    @open_routes.post("/login")
    def login(request: Request, key: Annotated[str, Form()], next: Annotated[str, Form()] = "/") -> Response:
        if key not in keys:
            denied = page(request, "login.html", next=next, failed=True)
            denied.status_code = 401
            return denied
        target = next if next.startswith("/") and not next.startswith("//") else "/"
        resp = RedirectResponse(target, status_code=303)
        resp.set_cookie(COOKIE, key, httponly=True, samesite="strict")
        return resp

    @web.get("/")
    def reports_page(request: Request, page_no: Annotated[int, Query(alias="page", ge=1)] = 1) -> HTMLResponse:
        total, reports = service.list_reports(50, (page_no - 1) * 50)
        return page(
            request, "reports.html", reports=reports, total=total, page=page_no, pages=max(1, math.ceil(total / 50))
        )

    @web.get("/reports/{report_id}")
    def report_page(request: Request, report_id: str) -> HTMLResponse:
        try:
            rep = service.get(report_id)
        except NotFoundError as exc:
            return error_page(request, exc, 404)
        return page(request, "report.html", r=rep, labels=_chart_labels(rep))

    @web.get("/items")
    def items_page(
        request: Request,
        report: str | None = None,
        status: Annotated[list[str] | None, Query()] = None,
        corpus: str | None = None,
        field: str | None = None,
        q: str | None = None,
        min_score: str | None = None,
        sort: Annotated[str, Query(pattern="^(score|row|item_id|status)$")] = "score",
        order: Annotated[str, Query(pattern="^(asc|desc)$")] = "desc",
        page_no: Annotated[int, Query(alias="page", ge=1)] = 1,
    ) -> HTMLResponse:
        statuses = [s for s in (status or FLAGGED) if s in STATUSES]
        score = float(min_score) if min_score not in (None, "") else None
        size = 25
        try:
            total, items = service.items(
                report or None,
                status=statuses,
                min_score=score,
                role=field or None,
                corpus=corpus or None,
                q=q or None,
                sort=sort,
                descending=order == "desc",
                limit=size,
                offset=(page_no - 1) * size,
            )
        except NotFoundError as exc:
            return error_page(request, exc, 404)
        _, reports = service.list_reports(1000, 0)
        with engine.connect() as conn:
            corpora = [c["name"] for c in repo.list_corpora(conn)]
        params = {
            "report": report or "",
            "status": statuses,
            "corpus": corpus or "",
            "field": field or "",
            "q": q or "",
            "min_score": min_score or "",
            "sort": sort,
            "order": order,
        }

        def link(**over: Any) -> str:
            merged = {**params, **over}
            return "/items?" + urlencode({k: v for k, v in merged.items() if v not in ("", None, [])}, doseq=True)

        return page(
            request,
            "items.html",
            items=items,
            total=total,
            page=page_no,
            pages=max(1, math.ceil(total / size)),
            f=params,
            reports=reports,
            corpora=corpora,
            link=link,
        )

    @web.get("/reports/{report_id}/items/{item_id:path}")
    def item_page(request: Request, report_id: str, item_id: str) -> HTMLResponse:
        try:
            rep = service.get(report_id)
            it = service.item(report_id, item_id)
        except NotFoundError as exc:
            return error_page(request, exc, 404)
        n = int(rep["config"]["ngram_n"])
        fields = it.get("item") or {}
        evidence = []
        for ev in it["evidence"]:
            evidence.append({**ev, "pieces": split_marked(ev["excerpt"], ev["highlights"])})
        joined = " ".join(e["excerpt"] for e in it["evidence"])
        item_fields = []
        for role in ("passage", "question", "answer"):
            text = fields.get(role) or ""
            if text:
                item_fields.append((role, split_marked(text, shared_spans(text, joined, n))))
        choices = [split_marked(c, shared_spans(c, joined, n)) for c in fields.get("choices") or []]
        return page(request, "item.html", r=rep, it=it, item_fields=item_fields, choices=choices, evidence=evidence)

    @web.get("/corpora")
    def corpora_page(request: Request) -> HTMLResponse:
        with engine.connect() as conn:
            rows = repo.list_corpora(conn)
            health = {c["name"]: repo.corpus_health(conn, c["id"]) for c in rows}
        return page(request, "corpora.html", corpora=rows, health=health)

    @web.get("/upload")
    def upload_form(request: Request) -> HTMLResponse:
        with engine.connect() as conn:
            corpora = [c["name"] for c in repo.list_corpora(conn)]
        return page(request, "upload.html", corpora=corpora, error=None, th=Thresholds())

    @web.post("/upload")
    def upload(
        request: Request,
        file: Annotated[UploadFile, File()],
        name: Annotated[str, Form()] = "",
        corpora: Annotated[list[str] | None, Form()] = None,
        question: Annotated[str, Form()] = "",
        passage: Annotated[str, Form()] = "",
        choices: Annotated[str, Form()] = "",
        answer: Annotated[str, Form()] = "",
        id_field: Annotated[str, Form(alias="id")] = "",
    ) -> Response:
        mapping = {
            k: v.strip()
            for k, v in (
                ("question", question),
                ("passage", passage),
                ("choices", choices),
                ("answer", answer),
                ("id", id_field),
            )
            if v.strip()
        }
        data = file.file.read(service.max_upload + 1)
        try:
            rid = service.submit(data, file.filename or "upload.jsonl", name or None, mapping or None, corpora or None)
        except ContamError as exc:
            with engine.connect() as conn:
                names = [c["name"] for c in repo.list_corpora(conn)]
            resp = page(request, "upload.html", corpora=names, error=exc.message, th=Thresholds())
            resp.status_code = 422
            return resp
        return RedirectResponse(f"/reports/{rid}", status_code=303)

    templates.env.filters["pct"] = lambda v: f"{100 * float(v or 0):.1f}%"
    templates.env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=1, default=str)
    app.include_router(open_routes)
    app.include_router(web)
