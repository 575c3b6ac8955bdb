"""Dashboard pages. Thin: read the query, call a service, render a template."""

from __future__ import annotations

import math
from typing import Annotated, Any
from urllib.parse import quote, urlencode, urlsplit

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi import Path as FastAPIPath
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.datastructures import UploadFile as StarletteUpload

from contam.app.api.bodies import TooLarge
from contam.app.api.deps import (
    SIGN_IN_COOKIE,
    CorpusServiceDep,
    ReportServiceDep,
    SessionsDep,
    SettingsDep,
    has_sign_in,
)
from contam.app.api.schemas import MAX_PAGE, MAX_PAGE_SIZE
from contam.app.api.security import SESSION_SECONDS
from contam.app.core.items import FOUND_ROLES
from contam.app.core.scoring import shared_spans, split_marked
from contam.app.core.types import Status
from contam.app.core.units import as_mib
from contam.app.errors import ContamError, InputError, LimitError
from contam.app.limits import MAX_ITEM_POSITION
from contam.app.readers.benchmark import UPLOAD_SUFFIXES
from contam.app.services.corpora import CorpusService
from contam.app.services.reports import ReportService, SharedItemId, spooled
from contam.app.web.errors import LoginRequired, PageRoute, page_status
from contam.app.web.rendering import STATIC_URL, STATUSES, render, static_files

__all__ = ["STATIC_URL", "router", "static_files"]

COOKIE = SIGN_IN_COOKIE  # a token signed by the server (Sessions), never the key itself
FLAGGED = [s for s in Status if s.flagged]
REPORTS_PER_PAGE = 50
ITEMS_PER_PAGE = 25
SORTS = [  # (value, label) of the items page's sort choices
    ("status", "status, then score"),
    ("score", "score"),
    ("row", "row (input order)"),
    ("item_id", "item id"),
]


def require_login(request: Request, settings: SettingsDep) -> None:
    keys = settings.key_set()
    if keys and not has_sign_in(request, keys):
        raise LoginRequired()


public = APIRouter(route_class=PageRoute)
signed_in = APIRouter(route_class=PageRoute, dependencies=[Depends(require_login)])


@public.get("/login")
def login_form(request: Request, next: str = "/") -> HTMLResponse:
    return render(request, "login.html", next=next, failed=False)


@public.post("/login")
def login(
    request: Request,
    settings: SettingsDep,
    sessions: SessionsDep,
    key: Annotated[str, Form()],
    next: Annotated[str, Form()] = "/",
) -> Response:
    if not sessions.valid(sessions.token(key), settings.key_set()):
        return render(request, "login.html", 401, next=next, failed=True)
    target = next if next.startswith("/") and not next.startswith("//") else "/"
    resp = RedirectResponse(target, status_code=303)
    secure = request.url.scheme == "https"  # behind a TLS proxy: uvicorn's --proxy-headers sets it
    resp.set_cookie(COOKIE, sessions.token(key), max_age=SESSION_SECONDS, httponly=True, samesite="lax", secure=secure)
    return resp


@public.post("/logout")
def logout() -> Response:
    """Sign out: the sign-in cookie goes, and the sign-in page follows. A POST (the nav's button), so
    another site's link or image cannot sign a user out: a GET did (a new user's trial); cross-site
    POSTs are refused (security.SameOrigin)."""
    resp = RedirectResponse("/login", status_code=303)
    resp.delete_cookie(COOKIE)
    return resp


@public.get("/logout", response_model=None)
def logout_page(request: Request) -> HTMLResponse | RedirectResponse:
    """/logout typed or bookmarked: a button that signs out, not the sign-out itself; with no
    sign-in to end, the reports (a review: the button was shown to anyone)."""
    if not request.cookies.get(COOKIE):
        return RedirectResponse("/", status_code=303)
    return render(request, "logout.html")


@signed_in.get("/")
def reports_page(
    request: Request,
    svc: ReportServiceDep,
    page_no: Annotated[int, Query(alias="page", ge=1, le=MAX_PAGE)] = 1,
    deleted: bool = False,
) -> HTMLResponse:
    """deleted: a report was just deleted, said at the top (no name: a link could make the
    notice say anything, and sign-in now keeps a link's query)."""
    total, reports = svc.list_reports(REPORTS_PER_PAGE, (page_no - 1) * REPORTS_PER_PAGE)
    pages = max(1, math.ceil(total / REPORTS_PER_PAGE))
    return render(request, "reports.html", reports=reports, total=total, page=page_no, pages=pages, deleted=deleted)


@signed_in.get("/reports/{report_id}")
def report_page(request: Request, report_id: str, svc: ReportServiceDep, corpora: CorpusServiceDep) -> HTMLResponse:
    rep = svc.get(report_id)
    return render(request, "report.html", r=rep, labels=_chart_labels(rep), gone=_gone(rep, corpora))


@signed_in.get("/reports/{report_id}/delete")
def report_delete_form(request: Request, report_id: str, svc: ReportServiceDep) -> HTMLResponse:
    """The confirmation: what deleting the report removes (and, for one under way, stops)."""
    return render(request, "report_delete.html", r=svc.get(report_id))


@signed_in.post("/reports/{report_id}/delete")
def report_delete(report_id: str, svc: ReportServiceDep) -> Response:
    """Delete the report, as DELETE /api/v1/reports/{id} does: a job under way stops at its next
    step (the way to free a corpus a job reads, which the corpus's own delete refuses)."""
    svc.delete(report_id)
    return RedirectResponse("/?deleted=1", status_code=303)


def _chart_labels(rep: dict[str, Any]) -> dict[str, list[Any]]:
    """Axis labels for the report charts (the counts come from the stored summary)."""
    s = rep.get("summary") or {}
    hist = s.get("histograms") or {}
    cov = hist.get("own_coverage", {}).get("edges", [])
    longest = hist.get("longest_match", {}).get("edges", [])
    return {
        "statuses": [st.replace("_", " ") for st in STATUSES],
        "status_counts": [s.get("counts", {}).get(st, 0) for st in STATUSES],
        "coverage": [f"{a:.0%}–{b:.0%}" for a, b in zip(cov, cov[1:], strict=False)],
        "longest": [f"{a}–{b - 1}" for a, b in zip(longest, longest[1:], strict=False)] + [f"{longest[-1]}+"]
        if longest
        else [],
    }


def _min_score(value: str | None) -> float | None:
    """The filter form sends an empty string for no minimum."""
    if value in (None, ""):
        return None
    try:
        score = float(value)
    except ValueError:
        score = math.nan
    if not 0 <= score <= 1:  # also NaN
        raise InputError(f"minimum score must be a number between 0 and 1, not {value!r}")
    return score


@signed_in.get("/items")
def items_page(
    request: Request,
    svc: ReportServiceDep,
    report: str | None = None,
    status: Annotated[list[Status] | None, Query()] = None,
    corpus: str | None = None,
    field: Annotated[str | None, Query(pattern=f"^({'|'.join(FOUND_ROLES)})?$")] = None,
    q: str | None = None,
    min_score: str | None = None,
    sort: Annotated[str, Query(pattern="^(score|row|item_id|status)$")] = "status",
    order: Annotated[str, Query(pattern="^(asc|desc)$")] = "desc",
    page_no: Annotated[int, Query(alias="page", ge=1, le=MAX_PAGE)] = 1,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = ITEMS_PER_PAGE,
) -> HTMLResponse:
    """The items of one report or all, filtered; by default contaminated first, then suspicious,
    each by score, as `contam scan` lists them; `page_size` items a page (the API's bound: a
    trial's page_size=100 was ignored without a word)."""
    # an unknown status is a 422 page, not every item; a passage found never changes a status, so
    # its items are listed whatever theirs (most are clean: the filter showed none of them)
    statuses = list(status or (Status if field == "passage" else FLAGGED))
    params: dict[str, Any] = {"report": report or "", "status": statuses, "corpus": corpus or "", "field": field or ""}
    params |= {"q": q or "", "min_score": min_score or "", "sort": sort, "order": order}
    params |= {"page_size": page_size if page_size != ITEMS_PER_PAGE else ""}
    elsewhere = _checked_elsewhere(svc, report, corpus)
    state = svc.get(report) if report else None  # before the items: "done" then means all of them are there
    total, items = (0, []) if elsewhere else _page_of_items(svc, params, (page_no - 1) * page_size, page_size)
    _, reports = svc.list_reports(1000, 0)
    other_statuses = 0 if total or elsewhere else _in_other_statuses(svc, params)

    def link(**over: Any) -> str:
        merged = {**params, **over}
        return "/items?" + urlencode({k: v for k, v in merged.items() if v not in ("", None, [])}, doseq=True)

    pages = max(1, math.ceil(total / page_size))
    return render(
        request,
        "items.html",
        page_size=page_size,
        page_sizes=sorted({ITEMS_PER_PAGE, 50, 100, 250, MAX_PAGE_SIZE, page_size}),
        items=items,
        total=total,
        page=page_no,
        pages=pages,
        f=params,
        reports=reports,
        roles=FOUND_ROLES,
        corpora=_report_corpora(svc, report or None, reports),
        sorts=SORTS,
        link=link,
        none_flagged=not total
        and set(statuses) == set(FLAGGED)
        and not (field or q or corpus or min_score)
        and (state is None or state["status"] == "done"),  # a failed or running report: not "none flagged"
        state=state,
        every_status=[str(st) for st in Status],
        elsewhere=elsewhere,
        other_statuses=other_statuses,
    )


def _in_other_statuses(svc: ReportServiceDep, f: dict[str, Any]) -> int:
    """How many items the page's other filters `f` select among the statuses not ticked, where
    those ticked hold none ("no items" for an id searched while the default shows flagged items
    only read as "no such id": a trial)."""
    if set(f["status"]) == set(Status):
        return 0
    return _page_of_items(svc, {**f, "status": [str(st) for st in Status]}, 0, 1)[0]


def _page_of_items(
    svc: ReportServiceDep, f: dict[str, Any], offset: int, limit: int
) -> tuple[int, list[dict[str, Any]]]:
    """The items the page's filters `f` (as its links carry them) select, `limit` from `offset`."""
    return svc.items(
        f["report"] or None,
        status=f["status"],
        min_score=_min_score(f["min_score"]),
        role=f["field"] or None,
        corpus=f["corpus"] or None,
        q=f["q"] or None,
        sort=f["sort"],
        descending=f["order"] == "desc",
        limit=limit,
        offset=offset,
    )


def _checked_elsewhere(svc: ReportServiceDep, report: str | None, corpus: str | None) -> str | None:
    """What the items page says, with no items, when the corpus filter names a corpus the chosen
    report was not checked against (the API refuses it; the form keeps the corpus when another
    report is chosen, and the page was a dead end: a review); None otherwise."""
    if not (report and corpus):
        return None
    theirs = svc.get(report).get("corpora") or []
    if corpus in theirs:
        return None
    return f"This report was not checked against corpus {corpus!r} (its corpora: {', '.join(theirs) or 'none'})."


def _report_corpora(svc: ReportServiceDep, report: str | None, reports: list[dict[str, Any]]) -> list[str]:
    """The corpora the filter offers: those the chosen report (else any report listed) was
    checked against, a corpus deleted or renamed since included: its evidence keeps the name it had.
    The chosen report is read again only if the listing (its newest 1,000) left it out."""
    chosen = [r for r in reports if r["id"] == report] or ([svc.get(report)] if report else reports)
    return sorted({c for r in chosen for c in r.get("corpora") or []})


@signed_in.get("/reports/{report_id}/items")
def report_items_page(report_id: str, svc: ReportServiceDep) -> RedirectResponse:
    """A report's items, as an item's link trimmed to its folder names them: it went to
    `/items/`, "no item ''" (a trial); the list of the report's items is at /items."""
    svc.get(report_id)  # an unknown report is a 404, as its page's
    return RedirectResponse(f"/items?report={quote(report_id, safe='')}", status_code=303)


@signed_in.get("/reports/{report_id}/items/{item_id:anypath}")
def item_page(
    request: Request,
    report_id: str,
    item_id: str,
    svc: ReportServiceDep,
    corpora: CorpusServiceDep,
    idx: int | None = Query(None, ge=0, le=MAX_ITEM_POSITION),
) -> Response:
    if not item_id and idx is None:  # `/reports/R/items/`: the list, as without the slash (a trial)
        return report_items_page(report_id, svc)
    rep = svc.get(report_id)
    try:
        it = svc.item(report_id, item_id, idx)
    except SharedItemId as exc:  # each of them linked: the idx named were text alone, a dead end (a trial)
        at = f"/reports/{quote(report_id, safe='')}/at/"
        links = [(f"{at}{k}", f"idx {k}") for k in exc.positions]
        return render(request, "error.html", 422, title="Several items", message=exc.message, links=links)
    return _item_view(request, rep, it, corpora)


@signed_in.get("/reports/{report_id}/at/{idx}")
def item_at_page(
    request: Request,
    report_id: str,
    idx: Annotated[int, FastAPIPath(ge=0, le=MAX_ITEM_POSITION)],
    svc: ReportServiceDep,
    corpora: CorpusServiceDep,
) -> HTMLResponse:
    """An item by its position alone: the link of an item whose id is `.` or `..`, path steps a
    browser resolves away however they are encoded, so /items/.. opened the report (a new user's trial)."""
    rep = svc.get(report_id)
    it = svc.item_at(report_id, idx)
    return _item_view(request, rep, it, corpora)


def _item_view(request: Request, rep: dict[str, Any], it: dict[str, Any], corpora: CorpusService) -> HTMLResponse:
    """An item's page: the item beside its evidence, the report's corpora gone since marked."""
    back = _items_list(request) or f"/items?report={quote(str(rep['id']), safe='')}"
    return render(request, "item.html", r=rep, it=it, gone=_gone(rep, corpora), back=back, **_highlighted(it))


def _items_list(request: Request) -> str | None:
    """The items list the item was opened from, filters and page kept (its path and query), where
    the browser says it came from one of this site's: the breadcrumb back to the list dropped them
    (a new user's trial)."""
    came = urlsplit(request.headers.get("referer", ""))
    if came.path != "/items" or came.netloc != request.url.netloc:
        return None
    return f"/items?{came.query}" if came.query else "/items"


def _gone(rep: dict[str, Any], corpora: CorpusService) -> set[str]:
    """The report's corpora indexed under that name no more (deleted, or renamed since): marked
    where the report names them, so no one looks for them on the corpora page (a new user's trial)."""
    return set(rep["corpora"]) - set(corpora.names())


def _marked(text: str, spans: Any) -> list[tuple[str, bool]]:
    """split_marked, with a highlight kept whole across the underscores that join a name
    (`has_close_elements` is one highlight, not three with bare underscores between)."""
    merged: list[tuple[str, bool]] = []
    for piece, hit in split_marked(text, spans):
        if merged and merged[-1][1] and (hit or not piece.strip("_")):
            merged[-1] = (merged[-1][0] + piece, True)
        else:
            merged.append((piece, hit))
    out: list[tuple[str, bool]] = []
    for piece, hit in merged:  # underscores a highlight took in at its end are plain text again
        core = piece.rstrip("_") if hit else piece
        if hit and core and core != piece:
            out += [(core, True), (piece[len(core) :], False)]
        elif out and not hit and not out[-1][1]:
            out[-1] = (out[-1][0] + piece, False)
        else:
            out.append((piece, hit))
    return out


def _highlighted(it: dict[str, Any]) -> dict[str, Any]:
    """The item's fields and its evidence cut into (text, highlighted) pieces: on the training
    text the matched spans, on the item what it shares with them. The item is aligned with the
    matched spans only: aligned with the whole excerpts, a two-word answer's words were taken
    from elsewhere in the text, one by one, and the answer found there was not marked (a probe).
    An answer not found is not marked: one of the choices, it was marked where the page lists the
    choices, beside "Answer found: no" (a trial); nor is a worked solution the coverage does not count."""
    fields = it.get("item") or {}
    evidence = [{**ev, "pieces": _marked(ev["excerpt"], ev["highlights"])} for ev in it["evidence"]]
    joined = [e["excerpt"][a:b] for e in it["evidence"] for a, b in e["highlights"]]
    # a worked solution the page does not give, which the coverage does not count, is not marked
    # either: its words that the question has too were marked where the page holds the question
    # (a trial); what is marked and what is counted are decided alike (a review)
    metrics = it.get("metrics") or {}
    uncounted = metrics.get("counted_tokens", metrics.get("tokens", 0)) < metrics.get("tokens", 0)
    unmarked = {"answer": not it.get("answer_found"), "solution": uncounted}
    item_fields = [
        (role, _marked(text, [] if unmarked.get(role) else shared_spans(text, joined)))
        for role in ("passage", "question", "solution", "answer")
        if (text := fields.get(role) or "")
    ]
    choices = [_marked(c, shared_spans(c, joined)) for c in fields.get("choices") or []]
    return {"item_fields": item_fields, "choices": choices, "evidence": evidence}


@signed_in.get("/corpora")
def corpora_page(request: Request, corpora: CorpusServiceDep, deleted: bool = False) -> HTMLResponse:
    """deleted: a corpus was just deleted, said at the top (reports_page says why without its name)."""
    return render(request, "corpora.html", corpora=corpora.overview(), deleted=deleted)


@signed_in.get("/corpora/{name}/delete")
def corpus_delete_form(request: Request, name: str, corpora: CorpusServiceDep) -> HTMLResponse:
    """The confirmation: what deleting the corpus removes."""
    return render(request, "corpus_delete.html", health=corpora.health(name), error=None)


@signed_in.post("/corpora/{name}/delete")
def corpus_delete(request: Request, name: str, corpora: CorpusServiceDep) -> Response:
    try:
        corpora.delete(name)
    except ContamError as exc:  # the confirmation again, with the reason (a job uses the corpus)
        code, _title = page_status(exc)
        return render(request, "corpus_delete.html", code, health=corpora.health(name), error=exc.message)
    return RedirectResponse("/corpora?deleted=1", status_code=303)


@signed_in.get("/upload")
def upload_form(request: Request, corpora: CorpusServiceDep, svc: ReportServiceDep) -> HTMLResponse:
    return _upload_page(request, corpora, svc, 200, None, {})


def _upload_page(
    request: Request,
    corpora: CorpusService,
    svc: ReportService,
    code: int,
    error: str | None,
    values: dict[str, Any],
) -> HTMLResponse:
    """The upload form; with `error`, the reason the last one was not accepted, and `values`,
    what was filled in (none, when the body was refused unread: over the size limit)."""
    return render(
        request,
        "upload.html",
        code,
        corpora=corpora.names(with_documents=True),
        error=error,
        accept=UPLOAD_SUFFIXES,
        max_upload=as_mib(svc.max_upload),
        values=values,
    )


MAPPED_ROLES = ("question", "passage", "choices", "answer", "solution", "id")  # the form's mapping fields
UPLOAD_FIELDS = ("file", "name", "corpora", *MAPPED_ROLES)


def _upload_fields(form: FormData) -> None:
    """The upload form's own fields, each once (corpora aside: one per ticked box), as the API
    asks of its uploads: a second file, or a field the form does not have (`mapping` and
    `thresholds` are the API's), were dropped unseen."""
    unknown = sorted({k for k in form if k not in UPLOAD_FIELDS})
    repeated = sorted({k for k in form if k != "corpora" and len(form.getlist(k)) > 1})
    if unknown:
        raise InputError(f"the upload form has no field {', '.join(unknown)} (the API's /api/v1/benchmarks takes them)")
    if repeated:
        raise InputError(f"form field {', '.join(repeated)} given more than once: one file an upload")


@signed_in.post("/upload")
async def upload(request: Request, svc: ReportServiceDep, corpora_svc: CorpusServiceDep) -> Response:
    """The form's file checked as a report, or the form again with the reason it was not and what
    was filled in. The form is read here: a body over the size limit (BodyLimit refuses it as it
    is read) was answered with the API's JSON, the form and its reason lost (a trial)."""
    values: dict[str, Any] = {}
    try:
        try:
            form = await request.form()
        except TooLarge as exc:
            raise LimitError(str(exc.detail), exc.limit_detail) from None
        given = {role: _text(form.get(role)) for role in MAPPED_ROLES}
        name, corpora = _text(form.get("name")), [_text(c) for c in form.getlist("corpora")]
        values = {"name": name, "corpora": corpora, **given}  # read: kept on the form, whatever is refused
        _upload_fields(form)
        mapping = {k: v.strip() for k, v in given.items() if v.strip()}
        file = form.get("file")
        if not isinstance(file, StarletteUpload) or not file.filename:
            raise InputError("choose a benchmark file to check")
        rid = await run_in_threadpool(_submit, svc, file, name, mapping, corpora)
    except ContamError as exc:  # the form again, with the reason and what was filled in (but the file)
        return _upload_page(request, corpora_svc, svc, page_status(exc)[0], exc.message, values)
    return RedirectResponse(f"/reports/{rid}", status_code=303)


def _text(value: Any) -> str:
    """A form field's text (a file given where text belongs is none)."""
    return value if isinstance(value, str) else ""


def _submit(svc: ReportService, file: StarletteUpload, name: str, mapping: dict[str, str], corpora: list[str]) -> str:
    with spooled(file.file, svc.max_upload) as path:  # on disk, read as a stream
        return svc.submit(path, file.filename or "upload.jsonl", name or None, mapping or None, corpora or None)


router = APIRouter(include_in_schema=False)
router.include_router(public)
router.include_router(signed_in)
