"""Corpus listings and health, assembled by CorpusService."""

from __future__ import annotations

import pytest
from conftest import IndexCorpus
from helpers import make_docs
from sqlalchemy import Engine

from app.errors import NotFoundError
from app.services.corpora import CorpusService


def test_health_reports_duplicates_and_lengths(engine: Engine, index_corpus: IndexCorpus) -> None:
    docs = make_docs(4, 30, 1, "a") + [{"id": "dup", "text": make_docs(1, 30, 1, "a")[0]["text"]}]
    index_corpus(engine, docs, "c")
    h = CorpusService(engine).health("c")
    assert h["duplicate_documents"] == 1
    assert h["tokens_per_document"]["p50"] == 30 and h["documents"] == 5 and h["segments"] == 1


def test_one_health_view_for_one_corpus_and_for_all(engine: Engine, index_corpus: IndexCorpus) -> None:
    """The dashboard's overview and `contam corpora NAME` / the API show the same view."""
    index_corpus(engine, make_docs(3, 30, 1, "a"), "a")
    index_corpus(engine, make_docs(2, 30, 2, "b"), "b")
    svc = CorpusService(engine)
    overview = svc.overview()
    assert [row["name"] for row, _ in overview] == ["a", "b"] == svc.names()
    assert [view for _, view in overview] == [svc.health("a"), svc.health("b")]
    assert svc.health("a")["config"]["ngram_n"] == 5  # settings decoded by the store
    with pytest.raises(NotFoundError, match="no corpus named 'zz'"):
        svc.health("zz")
