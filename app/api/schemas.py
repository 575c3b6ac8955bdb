"""Request and response schemas (Pydantic only at the edge)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from contam.app.core.config import Thresholds
from contam.app.core.types import MAX_ALTERNATIVES, BenchmarkItem, answer_of, given_answer
from contam.app.errors import InputError


class ErrorRead(BaseModel):
    error: str = Field(description="what went wrong, naming the problem")
    detail: Any = Field(None, description="structured detail where there is some")


_TH = Thresholds()  # the defaults, defined once in core.config


class ThresholdsIn(BaseModel):
    """Decision thresholds; omitted ones take their defaults. Unknown names are refused."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    contaminated_coverage: float = Field(
        _TH.contaminated_coverage,
        ge=0,
        le=1,
        description="share of the item's own text (and of the whole item) "
        "one document must hold to call it contaminated (Llama 2's 'dirty' bound)",
    )
    suspicious_coverage: float = Field(
        _TH.suspicious_coverage,
        ge=0,
        le=1,
        description="share of the item's own text one document must hold to "
        "call it suspicious (calibrated on unrelated text: bench/calibrate.py)",
    )
    longest_match: int = Field(
        _TH.longest_match,
        ge=1,
        description="GPT-3: a run of this many own tokens in one document is suspicious, where it is also "
        "`longest_share` of the item's own text or twice this long",
    )
    max_df: int = Field(_TH.max_df, ge=1, description="GPT-3: n-grams in more documents are boilerplate")
    template_min_items: int = Field(
        _TH.template_min_items, ge=2, description="text in this many items of the benchmark is shared, not own"
    )
    passage_tokens: int = Field(
        _TH.passage_tokens, ge=1, description="a shared run this long, found alone, is a passage (suspicious)"
    )
    passage_max_items: int = Field(
        _TH.passage_max_items, ge=1, description="text in more items than this is a template, not a passage"
    )
    min_bits: float = Field(
        _TH.min_bits,
        ge=0,
        description="information (bits, under the benchmark's own language model) a match "
        "must carry to count as evidence",
    )
    opening_run: int = Field(
        _TH.opening_run,
        ge=1,
        description="own tokens from the item's first one on, in one run, that make a truncated copy (suspicious)",
    )
    longest_share: float = Field(
        _TH.longest_share,
        ge=0,
        le=1,
        description="share of the item's own text a run of `longest_match` tokens must be to make it suspicious "
        "(a run twice `longest_match` long always does)",
    )

    @model_validator(mode="before")
    @classmethod
    def _nulls_absent(cls, value: Any) -> Any:
        """`{"min_bits": null}` is the threshold not given (its default), as a null field of a check
        request is (a review: nested nulls were still a 422)."""
        return _without_nulls(value, cls.model_fields)

    @model_validator(mode="after")
    def _ordered(self) -> ThresholdsIn:
        if self.suspicious_coverage > self.contaminated_coverage:
            raise PydanticCustomError(  # not a ValueError: pydantic puts "Value error, " before its message
                "thresholds_order",
                f"suspicious_coverage ({self.suspicious_coverage}) is above contaminated_coverage "
                f"({self.contaminated_coverage}): an item would be contaminated before it could be suspicious",
            )
        return self

    def to_thresholds(self) -> Thresholds:
        return Thresholds(**self.model_dump())


def unknown_threshold(name: str) -> str:
    """An unknown threshold name, with the name it was likely meant to be (the API said only
    "Extra inputs are not permitted": a new user)."""
    close = difflib.get_close_matches(name, list(ThresholdsIn.model_fields), 1)
    hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(ThresholdsIn.model_fields)}"
    return f"unknown threshold {name!r} ({hint})"


def threshold_problems(exc: ValidationError) -> str:
    """Every problem of a thresholds object, one clause each: an unknown name as unknown_threshold
    says it, any other as where and what."""
    said = []
    for e in exc.errors():
        loc = [str(x) for x in e.get("loc", ())]
        if e.get("type") == "extra_forbidden" and loc:
            said.append(unknown_threshold(loc[-1]))
        else:
            said.append(": ".join(filter(None, (".".join(loc), str(e.get("msg", ""))))))
    return "; ".join(said)


MAX_PAGE = 1_000_000  # pages and offsets past these are refused (422), not sent to the database
MAX_PAGE_SIZE = 500  # items a page, the API's and the dashboard's
MAX_OFFSET = 1_000_000_000


def _without_nulls(value: Any, known: Mapping[str, Any]) -> Any:
    """A request object without its known keys whose value is null (JSON's way to say "none")."""
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if not (v is None and k in known)}
    return value


class CheckItemIn(BaseModel):
    """One item; a field not named here is refused (`Question` would have been dropped, and the
    item judged too short)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _nulls_absent(cls, value: Any) -> Any:
        """A field sent as null is a field not sent, as `id` was already: clients that write every
        optional field (`"passage": null`) got a 422 for an item without a passage (a new user's
        trial); an unknown key is still refused, null or not."""
        return _without_nulls(value, cls.model_fields)

    id: str | None = Field(None, description="the item's id: a text, or a whole number (read as its digits)")
    question: str = ""
    passage: str = ""
    choices: list[str] = Field(default_factory=list)

    @field_validator("id", mode="before")
    @classmethod
    def _whole_id(cls, value: Any) -> Any:
        """An integer id is its digits, as an uploaded file's `"id": 7` is read: a 422 for it
        ("Input should be a valid string") where the same item uploaded scored (a trial)."""
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    answer: str | int = Field("", description="the answer's text, or its index (from 0) into `choices`")
    solution: str = Field("", description="a worked solution or rationale beside the answer (scored with it)")
    alternatives: list[str] = Field(
        default_factory=list,
        max_length=MAX_ALTERNATIVES,
        description="other accepted answers (aliases, 'yes' for true): found after the question, the answer is found;"
        " never scored as the item's text",
    )


class CheckRequest(BaseModel):
    """Texts and items are scored together as one benchmark (texts first): text several of them
    share (a passage, a template) counts as shared, and decides nothing for any one of them.
    Unknown keys are refused (`corpus` for `corpora` checked every corpus)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _nulls_absent(cls, value: Any) -> Any:
        """`"texts": null` or `"thresholds": null` is the field not sent, as `"corpora": null` was."""
        return _without_nulls(value, cls.model_fields)

    texts: list[str] = Field(default_factory=list, description="plain texts, each checked as a question")
    items: list[CheckItemIn] = Field(default_factory=list, description="items with fields")
    corpora: list[str] | None = Field(
        None, description="corpus names, or one name (default: the corpora holding documents whose settings match)"
    )
    thresholds: ThresholdsIn = Field(default_factory=ThresholdsIn)

    @field_validator("corpora", mode="before")
    @classmethod
    def _one_name(cls, value: Any) -> Any:
        """One name given as a string is a list of one (it was a 422, "Input should be a valid list",
        where the Python API takes one name: a new user's trial)."""
        return [value] if isinstance(value, str) else value

    def benchmark_items(self) -> list[BenchmarkItem]:
        """The texts (each a question), then the items, numbered in that order."""
        items = [BenchmarkItem(str(i), i, question=t) for i, t in enumerate(self.texts)]
        for i, it in enumerate(self.items, len(self.texts)):
            choices = tuple(it.choices)
            try:
                answer = answer_of(it.answer, choices, strict=True)
            except InputError as exc:
                raise InputError(f"items[{i - len(self.texts)}]: {exc.message}") from None
            answer, solution, alternatives = given_answer(answer, it.solution, choices, it.alternatives)
            ident = it.id or str(i)
            items.append(
                BenchmarkItem(ident, i, it.question, it.passage, choices, answer, solution, alternatives=alternatives)
            )
        return items


class ItemResultRead(BaseModel):
    item_id: str
    row: int | None = None
    idx: int | None = None
    status: str = Field(description="clean | suspicious | contaminated | too_short")
    reason: str
    score: float
    metrics: dict[str, Any]
    question_found: bool = Field(
        description="the best document holds the question (its own text); false for an item judged clean or too_short"
    )
    answer_found: bool | None = Field(
        description="the answer follows the question there; null for an item with no answer; false when clean"
    )
    answer_with_question: bool = Field(description="both of the above")
    passage_found: bool = Field(description="a candidate document holds the shared passage, whatever the status")
    fields: dict[str, Any] = Field(description="per field: tokens, n-grams, coverage in the best document, found")
    evidence: list[dict[str, Any]]
    item: dict[str, Any] | None = None
    report_id: str | None = None
    report_name: str | None = None


class CheckResponse(BaseModel):
    fingerprint: str
    corpora: list[str] = Field(
        description="the corpora checked against (without `corpora`: those whose settings match)"
    )
    notes: list[str] = Field(
        default_factory=list,
        description="without `corpora`: the corpora left out and why (other settings, another release, no documents)",
    )
    results: list[ItemResultRead]


class ReportRead(BaseModel):
    id: str
    name: str
    filename: str
    file_hash: str
    status: str = Field(description="queued | running | done | failed")
    error: str | None
    phase: str = Field(description="queued | reading (the first pass reads every item) | scoring | done | failed")
    total_items: int
    read_items: int = Field(description="items the job's first pass has read (phase reading)")
    done_items: int = Field(description="items scored (phase scoring)")
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
    report_status: str = Field(
        description="the report's status: while queued or running, the items scored so far (the total grows and "
        "pages shift); failed: none (a failed report keeps no items); done: all of them"
    )
