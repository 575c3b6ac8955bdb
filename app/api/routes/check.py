"""Checking a few texts or items synchronously."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.bodies import JsonRoute
from app.api.deps import CheckServiceDep
from app.api.schemas import CheckRequest, CheckResponse, ItemResultRead

router = APIRouter(tags=["check"], route_class=JsonRoute)


@router.post("/check", response_model=CheckResponse)
def check(body: CheckRequest, svc: CheckServiceDep) -> CheckResponse:
    """Check a few texts or items synchronously."""
    checked = svc.items(body.benchmark_items(), body.corpora, body.thresholds.to_thresholds())
    results = [ItemResultRead(**r.as_dict()) for r in checked.results]
    return CheckResponse(fingerprint=checked.fingerprint, results=results)
