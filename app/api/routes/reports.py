"""Reports: upload a benchmark, read, filter and export its results, delete it."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, File, Form, Query, Response, UploadFile
from pydantic import ValidationError

from contam.app.api.bodies import JsonRoute
from contam.app.api.deps import LimitsDep, ReportServiceDep
from contam.app.api.schemas import (
    MAX_OFFSET,
    MAX_PAGE,
    MAX_PAGE_SIZE,
    ItemList,
    ItemResultRead,
    ReportCreated,
    ReportList,
    ReportRead,
    ThresholdsIn,
    threshold_problems,
)
from contam.app.core.items import FOUND_ROLES
from contam.app.core.types import Status
from contam.app.errors import InputError
from contam.app.limits import MAX_ITEM_POSITION, Limits, check_json_depth
from contam.app.readers.benchmark import BENCHMARK_TYPES
from contam.app.services.reports import spooled

router = APIRouter(tags=["reports"], route_class=JsonRoute)


def _form_json(
    mapping: str | None, thresholds: str | None, limits: Limits
) -> tuple[dict[str, Any] | None, ThresholdsIn]:
    """The upload form's JSON fields, parsed (their nesting checked first: parsers recurse)."""
    for what, raw in (("mapping", mapping), ("thresholds", thresholds)):
        check_json_depth(raw or "", limits.json_depth, what)
    try:
        fields = json.loads(mapping) if mapping else None
    except ValueError as exc:  # which of the two fields is wrong, said (a new user)
        raise InputError(f"mapping is not JSON ({exc}): give a JSON object of role -> field") from exc
    try:
        th = ThresholdsIn.model_validate_json(thresholds) if thresholds else ThresholdsIn()
    except ValidationError as exc:
        raise InputError(f"thresholds: {threshold_problems(exc) or exc}") from exc
    if fields is not None and not isinstance(fields, dict):
        raise InputError("mapping must be a JSON object of role -> field")
    return fields, th


@router.post("/benchmarks", status_code=202, response_model=ReportCreated)
def upload_benchmark(
    svc: ReportServiceDep,
    limits: LimitsDep,
    response: Response,
    file: Annotated[
        UploadFile,
        File(
            description=f"the benchmark: {BENCHMARK_TYPES} "
            "(MMLU's header-less CSV and lm-evaluation-harness --log_samples files too)"
        ),
    ],
    name: Annotated[str | None, Form(description="report name (default: the file name)")] = None,
    mapping: Annotated[str | None, Form(description='JSON {"question": field, "answer": field, ...}')] = None,
    corpora: Annotated[
        list[str] | None,
        Form(
            description="corpus names, comma-separated, or the field given once per name, as a form of "
            "checkboxes sends them (default: the corpora whose settings match)"
        ),
    ] = None,
    thresholds: Annotated[str | None, Form(description="JSON object of threshold overrides")] = None,
) -> ReportCreated:
    """Upload a benchmark; returns 202 and the report id while the check runs."""
    fields, th = _form_json(mapping, thresholds, limits)
    names = [c.strip() for field in corpora or () for c in field.split(",") if c.strip()] or None
    with spooled(file.file, svc.max_upload) as path:  # on disk, read as a stream
        rid = svc.submit(path, file.filename or "upload.jsonl", name, fields, names, th.to_thresholds())
    response.headers["Location"] = f"/api/v1/reports/{rid}"  # where the 202's job can be followed
    return ReportCreated(id=rid, status="queued", url=f"/api/v1/reports/{rid}")


@router.get("/reports", response_model=ReportList)
def list_reports(
    svc: ReportServiceDep, limit: int = Query(100, ge=1, le=1000), offset: int = Query(0, ge=0, le=MAX_OFFSET)
) -> dict[str, Any]:
    """All reports, newest first, with progress and counts."""
    total, rows = svc.list_reports(limit, offset)
    return {"total": total, "reports": rows}


@router.get("/reports/{report_id}", response_model=ReportRead)
def get_report(report_id: str, svc: ReportServiceDep) -> dict[str, Any]:
    """One report: status, progress, summary, settings fingerprint and thresholds."""
    return svc.get(report_id)


@router.delete("/reports/{report_id}", status_code=204)
def delete_report(report_id: str, svc: ReportServiceDep) -> Response:
    """Delete a report and its items."""
    svc.delete(report_id)
    return Response(status_code=204)


@router.get("/reports/{report_id}/items", response_model=ItemList)
def list_items(
    report_id: str,
    svc: ReportServiceDep,
    status: Annotated[list[Status] | None, Query(description="repeatable: contaminated, suspicious, clean ...")] = None,
    min_score: Annotated[float | None, Query(ge=0, le=1, allow_inf_nan=False)] = None,
    field: Annotated[
        str | None,
        Query(pattern=f"^({'|'.join(FOUND_ROLES)})$", description="only items whose FIELD was found"),
    ] = None,
    corpus: Annotated[
        str | None, Query(description="only items with evidence in this corpus, whatever their status")
    ] = None,
    q: Annotated[str | None, Query(description="text search in the item, or in its id")] = None,
    sort: Annotated[str, Query(pattern="^(score|row|item_id|status)$")] = "score",
    order: Annotated[str, Query(pattern="^(asc|desc)$")] = "desc",
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 50,
) -> dict[str, Any]:
    """Items of a report, filtered, sorted and paginated; `report_status` says whether that is all of them."""
    # read before the items: "done" is final, so it never describes a list that lacks items (a report
    # finishing in between is said to be running of a full list, the safe side)
    state = svc.get(report_id)["status"]
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
    return {"total": total, "page": page, "page_size": page_size, "items": rows, "report_status": state}


@router.get("/reports/{report_id}/items/{item_id:anypath}", response_model=ItemResultRead)
def get_item(
    report_id: str,
    item_id: str,
    svc: ReportServiceDep,
    idx: int | None = Query(
        None, ge=0, le=MAX_ITEM_POSITION, description="the item's position (its `idx`), for ids several items share"
    ),
) -> dict[str, Any]:
    """One item with its metrics and every evidence match (422 naming their idx when several
    items share the id and no idx is given)."""
    return svc.item(report_id, item_id, idx)


@router.get(
    "/reports/{report_id}/export",
    response_class=Response,
    responses={200: {"content": {"application/x-ndjson": {}, "text/csv": {}}}},
)
def export(report_id: str, svc: ReportServiceDep, format: str = Query("jsonl", pattern="^(jsonl|csv)$")) -> Response:
    """Every item's result as JSONL or CSV."""
    body, media, name = svc.export(report_id, format)
    return Response(body, media_type=media, headers={"Content-Disposition": attachment(name)})


@router.get(
    "/reports/{report_id}/clean",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {}}}},
)
def clean_subset(
    report_id: str,
    svc: ReportServiceDep,
    drop_suspicious: bool = Query(False, description="also drop suspicious items"),
) -> Response:
    """The uploaded benchmark without its contaminated items, in its original format."""
    body, name = svc.clean_subset(report_id, drop_suspicious)
    return Response(body, media_type="application/octet-stream", headers={"Content-Disposition": attachment(name)})


def attachment(filename: str) -> str:
    """A Content-Disposition for any file name: an ASCII stand-in in `filename` (quotes, controls
    and non-ASCII replaced) and the name itself, percent-encoded, in `filename*` (RFC 6266/5987)."""
    fallback = re.sub(r"[^A-Za-z0-9._ -]", "_", filename) or "download"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"
