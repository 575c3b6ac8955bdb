"""Request and response schemas (Pydantic only at the edge)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.core.scoring import Thresholds
from app.core.types import BenchmarkItem


class ErrorRead(BaseModel):
    error: str = Field(description="what went wrong, naming the problem")
    detail: Any = Field(None, description="structured detail where there is some")


_TH = Thresholds()  # the defaults, defined once in core.scoring


class ThresholdsIn(BaseModel):
    contaminated_coverage: float = Field(
        _TH.contaminated_coverage, ge=0, le=1, description="Llama 2 'dirty' bound on token coverage"
    )
    suspicious_coverage: float = Field(
        _TH.suspicious_coverage, ge=0, le=1, description="Llama 2 'clean' bound on token coverage"
    )
    longest_match: int = Field(
        _TH.longest_match, ge=1, description="GPT-3: a shared run of this many tokens is suspicious"
    )
    near_similarity: float = Field(_TH.near_similarity, ge=0, le=1, description="verified near-duplicate similarity")
    max_df: int = Field(_TH.max_df, ge=1, description="GPT-3: n-grams in more documents are boilerplate")
    template_min_items: int = Field(
        _TH.template_min_items, ge=1, description="n-grams in this many items are shared text"
    )

    def to_thresholds(self) -> Thresholds:
        return Thresholds(**self.model_dump())


class CheckItemIn(BaseModel):
    id: str | None = None
    question: str = ""
    passage: str = ""
    choices: list[str] = Field(default_factory=list)
    answer: str = ""


class CheckRequest(BaseModel):
    texts: list[str] = Field(default_factory=list, description="plain texts, each checked as a question")
    items: list[CheckItemIn] = Field(default_factory=list, description="items with fields")
    corpora: list[str] | None = Field(None, description="corpus names (default: all)")
    thresholds: ThresholdsIn = Field(default_factory=ThresholdsIn)

    def benchmark_items(self) -> list[BenchmarkItem]:
        """The texts (each a question), then the items, numbered in that order."""
        items = [BenchmarkItem(str(i), i, question=t) for i, t in enumerate(self.texts)]
        for i, it in enumerate(self.items, len(self.texts)):
            choices = tuple(it.choices)
            items.append(BenchmarkItem(it.id or str(i), i, it.question, it.passage, choices, it.answer))
        return items


class ItemResultRead(BaseModel):
    item_id: str
    row: int | None = None
    idx: int | None = None
    status: str = Field(description="clean | suspicious | contaminated | too_short")
    reason: str
    score: float
    metrics: dict[str, Any]
    question_found: bool
    answer_found: bool | None
    answer_with_question: bool
    passage_found: bool
    fields: dict[str, Any]
    evidence: list[dict[str, Any]]
    item: dict[str, Any] | None = None
    report_id: str | None = None
    report_name: str | None = None


class CheckResponse(BaseModel):
    fingerprint: str
    results: list[ItemResultRead]


class ReportRead(BaseModel):
    id: str
    name: str
    filename: str
    file_hash: str
    status: str = Field(description="queued | running | done | failed")
    error: str | None
    total_items: int
    done_items: int
    corpora: list[str]
    mapping: dict[str, Any]
    thresholds: dict[str, Any]
    fingerprint: str
    config: dict[str, Any]
    software_version: str
    summary: dict[str, Any] | None
    created_at: Any
    finished_at: Any


class ReportCreated(BaseModel):
    id: str
    status: str
    url: str


class ReportList(BaseModel):
    total: int
    reports: list[ReportRead]


class ItemList(BaseModel):
    total: int
    page: int
    page_size: int
    items: list[ItemResultRead]
