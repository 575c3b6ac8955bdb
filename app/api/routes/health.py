"""Liveness."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from contam.app import __version__
from contam.app.api.deps import CorpusServiceDep

router = APIRouter(tags=["meta"])


@router.get("/health")
def health(svc: CorpusServiceDep) -> dict[str, Any]:
    """Liveness and database reachability."""
    return {"status": "ok", "version": __version__, "corpora": len(svc.list_corpora())}
