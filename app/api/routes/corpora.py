"""Indexed corpora: list them, one corpus's health, delete one."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from contam.app.api.bodies import JsonRoute
from contam.app.api.deps import CorpusServiceDep

router = APIRouter(tags=["corpora"], route_class=JsonRoute)


@router.get("/corpora")
def corpora(svc: CorpusServiceDep) -> list[dict[str, Any]]:
    """Indexed corpora with size and signature settings."""
    return svc.list_corpora()


@router.get("/corpora/{name}")
def corpus_health(name: str, svc: CorpusServiceDep) -> dict[str, Any]:
    """One corpus's health: documents, tokens, skipped records, failed files, duplicates, lengths."""
    return svc.health(name)


@router.delete("/corpora/{name}", status_code=204)
def delete_corpus(name: str, svc: CorpusServiceDep) -> Response:
    """Delete a corpus and everything indexed into it; 409 while a report job uses it."""
    svc.delete(name)
    return Response(status_code=204)
