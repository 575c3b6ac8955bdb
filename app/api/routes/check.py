"""Checking a few texts or items synchronously."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Body, Response

from contam.app.api.bodies import JsonRoute
from contam.app.api.deps import CheckServiceDep
from contam.app.api.schemas import CheckRequest, CheckResponse

router = APIRouter(tags=["check"], route_class=JsonRoute)


# Swagger UI's "Try it out" body: without it, the generated one names a corpus "string" (a 404)
EXAMPLES: dict[str, Any] = {
    "texts": {
        "summary": "texts, against the corpora whose settings match",
        "value": {"texts": ["Which river flows through the ancient city of Baghdad and joins the Euphrates?"]},
    },
    "items": {
        "summary": "items with fields and a threshold",
        "value": {
            "items": [{"id": "q1", "question": "Which river flows through Baghdad?", "choices": ["Nile", "Tigris"]}],
            "thresholds": {"longest_match": 13},
        },
    },
}


@router.post("/check", response_model=CheckResponse)
async def check(body: Annotated[CheckRequest, Body(openapi_examples=EXAMPLES)], svc: CheckServiceDep) -> Response:
    """Check a few texts or items synchronously."""
    answer = await svc.answer(body.benchmark_items(), body.corpora, body.thresholds.to_thresholds())
    # CheckResponse's fields, built by the scorer (checking.check_answer; a test holds it to the
    # model): validating them again here cost the server's one interpreter a millisecond a request
    return Response(orjson.dumps(answer), media_type="application/json")
