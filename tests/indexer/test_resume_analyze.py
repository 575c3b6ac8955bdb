"""PostgreSQL: a run killed between its last commit and its ANALYZE leaves the planner without
statistics; the next run, which finds every file indexed, still runs ANALYZE."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import IndexCorpus
from sqlalchemy import event, text

from contam.app.store.db import make_engine


class KilledHere(Exception):
    """Where a kill -9 lands in this test."""


DOCS = [{"id": f"d{i}", "text": f"document {i} about rivers and tides and the moon " * 20} for i in range(50)]


def _analysed(url: str) -> bool:
    engine = make_engine(url)
    with engine.connect() as conn:
        last = conn.execute(text("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'ngram_block'")).scalar()
    engine.dispose()
    return last is not None


def test_a_resumed_run_analyses_what_a_killed_run_did_not(pg_url: str, index_corpus: IndexCorpus) -> None:
    killed = make_engine(pg_url)

    def die_before_analyze(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith("ANALYZE"):
            raise KilledHere  # the process ends here: its files are committed, not analysed

    event.listen(killed, "before_cursor_execute", die_before_analyze)
    with pytest.raises(KilledHere):
        index_corpus(killed, DOCS)
    killed.dispose()
    assert not _analysed(pg_url)
    summary = index_corpus(pg_url, DOCS)
    assert [f.status for f in summary.files] == ["unchanged"]
    assert _analysed(pg_url)
