"""Corpus listings and health, assembled by CorpusService."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import IndexCorpus
from helpers import make_docs, write_jsonl
from sqlalchemy import Engine, event, func, select, text, update

from contam.app.core.config import SignatureConfig
from contam.app.core.types import BenchmarkItem
from contam.app.errors import FingerprintMismatch, InputError, NotFoundError, SettingsConflict, StateError
from contam.app.services.checking import CheckService
from contam.app.services.corpora import CorpusService, no_corpus, select_corpora
from contam.app.services.indexing import indexing_run, open_corpus
from contam.app.services.reports import ReportService
from contam.app.store import db, repo
from contam.app.store import reports as rrepo
from contam.app.store.schema import (
    band_block,
    corpus,
    corpus_file,
    document,
    index_run,
    ngram_block,
    segment,
)

TABLES = (corpus, corpus_file, document, segment)
POSTINGS = (ngram_block, band_block)


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


def test_a_misspelt_corpus_name_is_told_the_name_meant() -> None:
    """`--corpus shardl` listed the corpora there are but not which was meant, where a misspelt
    field or threshold says it (a new user's trial); a name like none says no guess."""
    said = str(no_corpus(["shardl"], ["shard1", "shard2", "web"]))
    assert said == "no corpus named 'shardl' (the corpora: shard1, shard2, web); did you mean 'shard1' or 'shard2'?"
    assert str(no_corpus(["wbe"], ["shard1", "web"])).endswith("did you mean 'web'?")
    assert str(no_corpus(["WEB"], ["shard1", "web"])).endswith("did you mean 'web'?")  # names are case-sensitive
    assert "did you mean" not in str(no_corpus(["zz"], ["shard1", "web"]))


def test_a_scan_of_an_empty_corpus_refuses(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A corpus whose files all failed once made every item "clean" and passed any gate."""
    index_corpus(engine, make_docs(2, 30, 1, "a"), "empty", text_field="body")
    items = [BenchmarkItem("q", 0, question="what is the capital of France and why is it Paris")]
    with pytest.raises(StateError, match="corpus 'empty' holds 0 documents"):
        CheckService(engine).items(items)
    with pytest.raises(StateError, match="corpus 'empty' holds 0 documents"):
        CheckService(engine).items(items, ["empty"])
    with pytest.raises(StateError, match=r"\(1 file failed\)\. .*shows why its files failed"):
        CheckService(engine).items(items, ["empty"])
    # a corpus none of whose files failed (a first run interrupted) is not told to look for why
    # its files failed (a new user's trial)
    open_corpus(engine, "begun", SignatureConfig(), True)
    with pytest.raises(
        StateError, match=r"'begun' holds 0 documents \(0 files failed\)\. Index documents into it first$"
    ):
        CheckService(engine).items(items, ["begun"])
    index_corpus(engine, make_docs(2, 30, 2, "b"), "full")
    assert select_corpora(engine) == ["full"]  # by default, the corpora holding documents
    assert CheckService(engine).items(items).summary["counts"]["clean"] == 1


def test_default_scan_uses_the_corpora_whose_settings_match(engine: Engine, index_corpus: IndexCorpus) -> None:
    index_corpus(engine, make_docs(2, 30, 1, "a"), "a")
    index_corpus(engine, make_docs(2, 30, 2, "b"), "wide", cfg=SignatureConfig(ngram_n=13))
    assert select_corpora(engine) == ["a"]  # the default settings win
    index_corpus(engine, make_docs(2, 30, 3, "c"), "wider", cfg=SignatureConfig(ngram_n=9))
    assert select_corpora(engine, ["wide"]) == ["wide"]
    with pytest.raises(SettingsConflict, match=r"wide \(ngram_n=13\); wider \(ngram_n=9\)"):
        select_corpora(engine, ["wide", "wider"])
    with pytest.raises(SettingsConflict, match=r"a \(the default settings\); wide \(ngram_n=13\)"):
        select_corpora(engine, ["a", "wide"])  # corpora named are never dropped silently


def _rows(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        tables = (*TABLES, *POSTINGS)
        return {t.name: conn.execute(select(func.count()).select_from(t)).scalar_one() for t in tables}


def test_delete_and_rename_a_corpus(engine: Engine, index_corpus: IndexCorpus) -> None:
    """Deleting removes the corpus's postings, documents, segments and files, and nothing of
    another corpus (SQLite and PostgreSQL); renaming keeps all of it under the new name."""
    index_corpus(engine, make_docs(3, 60, 1, "a"), "keep")
    alone = _rows(engine)
    index_corpus(engine, make_docs(4, 60, 2, "b"), "drop")
    grown = _rows(engine)
    assert all(grown[t] > alone[t] for t in alone)  # each table holds some of "drop"
    svc = CorpusService(engine)
    svc.delete("drop")
    assert _rows(engine) == alone and svc.names() == ["keep"]
    with pytest.raises(NotFoundError):
        svc.delete("drop")
    svc.rename("keep", "web")
    assert svc.names() == ["web"] and svc.health("web")["documents"] == 3
    index_corpus(engine, make_docs(1, 60, 3, "c"), "other")
    with pytest.raises(SettingsConflict, match="already a corpus named 'other'"):
        svc.rename("web", "other")


def test_a_renamed_corpus_is_called_by_its_new_name_in_its_reports(engine: Engine, index_corpus: IndexCorpus) -> None:
    """Reports kept a renamed corpus's old name: the item list's corpus filter found nothing under
    the new name, and the dashboard offered a corpus that no longer existed (a new user's trial).
    A report made with another corpus only is left as it is."""
    import json

    docs = make_docs(3, 60, 1, "a")
    index_corpus(engine, docs, "docs")
    index_corpus(engine, make_docs(2, 60, 2, "b"), "other")
    rows = [{"id": "c", "question": " ".join(docs[0]["text"].split()[5:35])}, {"id": "n", "question": "rivers"}]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    svc = ReportService(engine, 1 << 20)
    rid = svc.submit(data, "b.jsonl", corpora=["docs", "other"], background=False)
    apart = svc.submit(data, "b.jsonl", corpora=["other"], background=False)
    assert svc.items(rid, corpus="docs")[0] == 1
    CorpusService(engine).rename("docs", "usrdocs")
    made = svc.get(rid)
    assert made["corpora"] == ["usrdocs", "other"] and set(made["summary"]["per_corpus"]) == {"usrdocs", "other"}
    with pytest.raises(InputError, match="not checked against a corpus named 'docs' \\(its corpora: usrdocs, other\\)"):
        svc.items(rid, corpus="docs")  # the old name (it gave 0 items without a word: a trial)
    total, items = svc.items(rid, corpus="usrdocs")
    assert total == 1 and items[0]["item_id"] == "c"
    assert {e["corpus"] for e in svc.item(rid, "c")["evidence"]} == {"usrdocs"}
    assert svc.get(apart)["corpora"] == ["other"]
    svc.shutdown()


def test_a_rename_leaves_reports_of_other_corpora_of_those_names_alone(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """Reports name corpora (a review): a report made with a deleted corpus of the same old name,
    or one that names a deleted corpus of the new name, is left as it is (one corpus's counts
    merged into the other's); a name with a comma (refused now, kept where made before) is told
    from two names in the corpora found."""
    import json

    docs = make_docs(3, 60, 1, "a")
    rows = [{"id": "c", "question": " ".join(docs[0]["text"].split()[5:35])}, {"id": "n", "question": "rivers"}]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    svc, corpora = ReportService(engine, 1 << 20), CorpusService(engine)
    index_corpus(engine, docs, "web")
    before = svc.submit(data, "b.jsonl", corpora=["web"], background=False)  # made with a "web" deleted next
    corpora.delete("web")
    index_corpus(engine, docs, "web")
    with db.writing(engine) as conn:  # made before commas were refused
        repo.create_corpus(conn, "a,b", SignatureConfig(), True)
    index_corpus(engine, docs, "a,b")
    index_corpus(engine, docs, "gone")
    both = svc.submit(data, "b.jsonl", corpora=["web", "gone", "a,b"], background=False)
    corpora.delete("gone")
    corpora.rename("web", "gone")  # the report naming the deleted "gone" keeps "web"
    assert svc.get(before)["corpora"] == ["web"] and svc.get(both)["corpora"] == ["a,b", "gone", "web"]
    corpora.rename("a,b", "ab")
    made = svc.get(both)
    assert made["corpora"] == ["ab", "gone", "web"] and set(made["summary"]["per_corpus"]) == {"web", "gone", "ab"}
    assert svc.items(both, corpus="ab")[0] == 1 and svc.items(both, corpus="web")[0] == 1
    with pytest.raises(InputError, match=r"not checked against a corpus named 'a,b' \(its corpora: ab, gone, web\)"):
        svc.items(both, corpus="a,b")  # the old name: refused, naming the report's corpora (it gave 0 items)
    assert {e["corpus"] for e in svc.item(both, "c")["evidence"]} == {"web", "gone", "ab"}
    svc.shutdown()


def test_a_corpus_being_indexed_cannot_be_deleted_or_renamed(
    engine: Engine, index_corpus: IndexCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only report jobs were checked: a corpus could be deleted while `contam index` wrote into
    it. Now an indexing run holds its corpus under a lease while it runs."""
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    svc = CorpusService(engine)
    with engine.connect() as conn:
        cid = int(repo.get_corpus(conn, "web")["id"])
    with indexing_run(engine, cid):
        for act in (lambda: svc.delete("web"), lambda: svc.rename("web", "w2")):
            with pytest.raises(StateError, match=r"while it is being indexed \(.+:\d+\); try again when the run"):
                act()
    with indexing_run(engine, cid, lease=0.6):  # renewed every 0.1 s, so alive long after 0.6 s
        monkeypatch.setattr(db, "lease_grace", lambda conn: 0.0)  # SQLite's grace would hide a lapse
        time.sleep(1.5)
        with pytest.raises(StateError, match="being indexed"):
            svc.delete("web")
    with indexing_run(engine, cid, lease=60):  # a killed run: its lease lapses
        with engine.begin() as conn:
            conn.execute(update(index_run).values(lease_until=0.0))
        svc.rename("web", "w2")
    # the indexer holds it for the whole run: seen from another connection between two files
    seen: list[str] = []

    class Watch:
        def run_started(self, files: list[Path]) -> None: ...
        def file_started(self, path: str, size: int) -> None: ...
        def advanced(self, documents: int, nbytes: int) -> None: ...

        def file_finished(self, report: object) -> None:
            with engine.connect() as conn:  # a read: no write lock needed on SQLite
                try:
                    CorpusService._unused(conn, "w2", "delete")
                except StateError as exc:
                    seen.append(exc.message)

    (tmp_path / "more").mkdir()
    for i in range(2):
        write_jsonl(tmp_path / "more" / f"m{i}.jsonl", make_docs(2, 60, 10 + i, f"m{i}"))
    index_corpus(engine, [tmp_path / "more"], "w2", progress=Watch(), commit_bytes=0)
    assert len(seen) == 2 and all("being indexed" in m for m in seen)
    svc.delete("w2")  # and let go when it ends
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(index_run)).scalar_one() == 0


def test_a_delete_asked_while_a_run_commits_is_refused_not_queued(engine: Engine, index_corpus: IndexCorpus) -> None:
    """A trial: a delete asked mid-run, while the run's commit group held the database (SQLite's
    write lock; PostgreSQL's hold on the corpus row), waited for the commit, found the run ended,
    and deleted the corpus the run had just indexed, both saying they succeeded. It is refused at
    once, and the corpus stays."""
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    svc = CorpusService(engine)
    with engine.connect() as conn:
        cid = int(repo.get_corpus(conn, "web")["id"])
    outcome: list[str] = []

    def delete() -> None:
        try:
            svc.delete("web")
            outcome.append("deleted")
        except StateError as exc:
            outcome.append(exc.message)

    # a commit group open, as the run's writer holds it
    with indexing_run(engine, cid), db.writing(engine) as conn:
        repo.lock_corpus(conn, cid)
        asked = threading.Thread(target=delete)
        asked.start()
        asked.join(10)
        answered_at_once = not asked.is_alive()
    asked.join(60)
    assert answered_at_once and len(outcome) == 1 and "while it is being indexed" in outcome[0], outcome
    assert [c["name"] for c in svc.list_corpora()] == ["web"]


def _wait_for_a_blocked(engine: Engine, statement: str, thread: threading.Thread, seconds: float = 30.0) -> None:
    """Until PostgreSQL shows a session whose statement starts with `statement` waiting for a lock,
    or `thread`, which runs it, has ended (it was not made to wait)."""
    deadline = time.monotonic() + seconds
    query = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND query LIKE :statement"
    )
    while True:
        with engine.connect() as conn:
            if conn.execute(query, {"statement": statement + "%"}).scalar_one() or not thread.is_alive():
                return
        if time.monotonic() > deadline:
            pytest.fail(f"no session waited for a lock at {statement!r} within {seconds} s")
        time.sleep(0.02)


def test_a_run_starting_while_a_delete_holds_the_corpus_fails_cleanly(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The delete checks for runs and removes the corpus in one transaction that holds the corpus
    (PostgreSQL: its row FOR UPDATE; SQLite: the write lock), so a run starting in between waits,
    then fails in one line: it once slipped in, and the delete removed its hold and the corpus
    under it."""
    index_corpus(engine, make_docs(2, 60, 1, "a"), "web")
    outcome: list[str] = []
    runs: list[threading.Thread] = []
    real_delete = repo.delete_corpus

    def start_a_run(corpus_id: int) -> None:
        try:
            with indexing_run(engine, corpus_id):
                outcome.append("ran")
        except StateError as exc:
            outcome.append(exc.message)

    asking = threading.Event()  # the run has asked for the corpus (and waits for it)
    first = "SELECT corpus.name" if engine.dialect.name == "postgresql" else "BEGIN IMMEDIATE"  # repo.lock_corpus

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith(first) and runs and threading.current_thread() is runs[0]:
            asking.set()

    event.listen(engine, "before_cursor_execute", seen)

    def delete_with_a_run_starting(conn, corpus_id):  # type: ignore[no-untyped-def]
        runs.append(threading.Thread(target=start_a_run, args=(corpus_id,)))
        runs[0].start()
        assert asking.wait(30)  # the run is starting
        if engine.dialect.name == "postgresql":
            _wait_for_a_blocked(engine, "SELECT corpus.name", runs[0])  # and waits for the corpus
        else:  # SQLite's busy wait shows nowhere a test can see it without a hook in the run
            time.sleep(0.5)
        real_delete(conn, corpus_id)

    monkeypatch.setattr(repo, "delete_corpus", delete_with_a_run_starting)
    CorpusService(engine).delete("web")
    runs[0].join(60)
    assert outcome == ["the corpus was deleted as this indexing run started; run it again"], outcome
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(index_run)).scalar_one() == 0
    assert CorpusService(engine).names() == []


def test_a_corpus_a_job_uses_cannot_be_deleted(engine: Engine, index_corpus: IndexCorpus) -> None:
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    data = b'{"id": "q", "question": "what is the capital of France and why is it Paris"}\n'
    rid = ReportService(engine, 1 << 20).submit(data, "b.jsonl", background=False)
    with engine.begin() as conn:  # as while its job runs
        rrepo.set_status(conn, rid, "running")
    svc = CorpusService(engine)
    for act in (lambda: svc.delete("web"), lambda: svc.rename("web", "w2")):
        # the report named, and the way on (a probe killed the server: nothing said which report held it)
        with pytest.raises(StateError, match=rf"while a report job uses it \(report {rid}\).*delete the report"):
            act()
    with engine.begin() as conn:
        rrepo.set_status(conn, rid, "done")
    svc.delete("web")
    assert svc.names() == []


def test_no_indexing_into_a_corpus_a_job_reads_nor_a_job_on_one_being_indexed(
    engine: Engine, index_corpus: IndexCorpus
) -> None:
    """`contam index` committed files into a corpus while a report job scored against it: the
    report's first items were scored before them (`clean`), its last after (`contaminated`),
    under one fingerprint and with no word of it (a new user's trial). An indexing run refuses to
    start while a job (queued or running) reads the corpus, and a report is refused on a corpus
    an indexing run writes into."""
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    data = b'{"id": "q", "question": "what is the capital of France and why is it Paris"}\n'
    reports = ReportService(engine, 1 << 20)
    rid = reports.submit(data, "b.jsonl", background=False)
    with engine.connect() as conn:
        cid = int(repo.get_corpus(conn, "web")["id"])
    refused = rf"cannot index into corpus 'web' while a report job reads it \(report {rid}\)"
    for status in ("queued", "running"):
        with engine.begin() as conn:
            rrepo.set_status(conn, rid, status)
        with pytest.raises(StateError, match=refused), indexing_run(engine, cid):
            pass
    with engine.begin() as conn:
        rrepo.set_status(conn, rid, "done")
    busy = r"corpus 'web' is being indexed \(.+:\d+\): a report now would mix"
    with indexing_run(engine, cid), pytest.raises(StateError, match=busy):
        reports.submit(data, "b.jsonl", background=False)
    assert reports.submit(data, "b.jsonl", background=False)  # the run done
    reports.shutdown()


def test_a_run_starting_and_a_report_do_not_wait_for_an_indexers_open_commit_group(
    pg_url: str, index_corpus: IndexCorpus
) -> None:
    """An indexer's commit group (up to 256 MiB of text: minutes) holds PostgreSQL's key-share
    lock on its corpus's row (its files and documents reference it). The start checks held the
    row FOR UPDATE, which waits behind it: a second `contam index` into the corpus waited for the
    first's group to commit, and an upload on the corpus hung until then before its 409. Their
    lock still excludes each other's and a delete's, not an indexer's references. (SQLite: one
    writer at a time, as before.)"""
    engine = db.make_engine(pg_url)
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    with engine.connect() as conn:
        cid = int(repo.get_corpus(conn, "web")["id"])
    data = b'{"id": "q", "question": "what is the capital of France and why is it Paris"}\n'
    reports = ReportService(engine, 1 << 20)
    outcome: list[str] = []

    def second_run() -> None:
        with indexing_run(engine, cid):
            outcome.append("started")

    def upload() -> None:
        try:
            reports.submit(data, "b.jsonl", background=False)
        except StateError as exc:
            outcome.append(exc.message)

    with indexing_run(engine, cid), engine.connect() as group, group.begin():  # a run's open commit group
        values = {"corpus_id": cid, "path": "x", "size": 1, "content_hash": "h" * 32, "status": "done"}
        group.execute(corpus_file.insert().values(**values, indexed_at=repo.now()))
        for work in (second_run, upload):
            t = threading.Thread(target=work, daemon=True)
            t.start()
            t.join(10)
            assert not t.is_alive(), f"{work.__name__} waited for the open commit group"
        group.rollback()
    assert outcome[0] == "started" and "is being indexed" in outcome[1]
    reports.shutdown()
    engine.dispose()


def test_a_report_on_a_corpus_renamed_or_deleted_as_it_is_submitted_is_refused(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """submit chooses its corpora, compresses the upload, then holds the corpora while it checks
    for indexing runs and stores the report. A corpus renamed or deleted in between was stored
    under the name it no longer has (the rename had already renamed the reports made with it),
    and the job failed on it, or read another corpus given that name since: refused instead."""
    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    data = b'{"id": "q", "question": "what is the capital of France and why is it Paris"}\n'
    reports = ReportService(engine, 1 << 20)
    real, svc = rrepo.compressed, CorpusService(engine)
    for meanwhile in (lambda: svc.rename("web", "web2"), lambda: svc.delete("web2")):

        def compressed(data: Any, meanwhile: Any = meanwhile) -> bytes:
            meanwhile()
            return real(data)

        monkeypatch.setattr(rrepo, "compressed", compressed)
        with pytest.raises(StateError, match="as this report was submitted"):
            reports.submit(data, "b.jsonl", background=False)
    with engine.connect() as conn:
        assert rrepo.list_all(conn)[0] == 0
    reports.shutdown()


def test_a_corpus_name_the_api_cannot_address_is_refused(engine: Engine, index_corpus: IndexCorpus) -> None:
    """`x/y` was accepted by `contam index` and `corpora rename`, then the API (`/corpora/x%2Fy`)
    and the dashboard's delete link answered 404: a name with a slash, a control character,
    space at either end or over 200 characters is refused when a corpus is made or renamed,
    naming why; a name already in use keeps working."""
    from contam.app.services.indexing import open_corpus

    cfg = SignatureConfig()
    for name, why in (
        ("x/y", "a slash"),
        ("a,b", "a comma, which separates names in lists of corpora: a report upload's corpora and the item"),
        ("..", "dots alone"),
        (".", "dots alone"),
        ("a\tb", "does not print"),
        ("a\u2028b", "does not print"),
        ("a\x85b", "does not print"),
        (" web", "space"),
        ("w" * 201, "over 200"),
    ):
        with pytest.raises(InputError, match=why):
            open_corpus(engine, name, cfg, True)
    index_corpus(engine, make_docs(1, 60, 1, "a"), "web")
    svc = CorpusService(engine)
    with pytest.raises(InputError, match="a slash"):
        svc.rename("web", "web/2024")
    with pytest.raises(InputError, match="a comma"):
        svc.rename("web", "web,2024")
    svc.rename("web", "web:2024 (v2)")
    assert svc.names() == ["web:2024 (v2)"]
    with db.writing(engine) as conn:  # made before names were checked: still indexed into, renamed away
        old = repo.create_corpus(conn, "a/b", cfg, True)
    assert open_corpus(engine, "a/b", cfg, True) == old
    svc.rename("a/b", "a-b")
    assert svc.names() == ["a-b", "web:2024 (v2)"]


def test_a_check_read_while_a_run_writes_says_so(engine: Engine, index_corpus: IndexCorpus, tmp_path: Path) -> None:
    """A trial: `contam scan` mid-run read the files committed so far and passed a CI gate the
    finished index tripped, without a word, and `/check` the same (report jobs are refused
    then); `contam corpora NAME`, which the refusal names, said nothing of the run. Each check's
    notes say the corpus is being indexed, and the corpus's listing and health name the run."""
    from typer.testing import CliRunner

    from contam.indexer.cli import app as cli

    index_corpus(engine, make_docs(3, 60, 1, "a"), "web")
    svc, check = CorpusService(engine), CheckService(engine)
    with engine.connect() as conn:
        cid = int(repo.get_corpus(conn, "web")["id"])
    items = [BenchmarkItem("q", 0, question="Which river flows north through Egypt to the sea at Alexandria?")]
    bench = tmp_path / "b.jsonl"
    bench.write_text('{"id": "q", "question": "Which river flows north through Egypt to the sea?"}\n')
    said = "corpus 'web' is being indexed now ("
    assert not any(said in n for n in check.items(items).summary["notes"])
    with indexing_run(engine, cid):
        assert any(said in n for n in check.items(items).summary["notes"]), check.items(items).summary["notes"]
        assert any(said in n for n in check.path(bench).summary["notes"])
        assert svc.list_corpora()[0]["indexing"] and svc.health("web")["indexing"]
        url = engine.url.render_as_string(hide_password=False)
        health = CliRunner().invoke(cli, ["corpora", "web", "--db", url]).stdout
        assert "  indexing:   now, by " in health, health
        assert "BEING INDEXED now (" in CliRunner().invoke(cli, ["corpora", "--db", url]).stdout
    assert svc.health("web")["indexing"] == [] and not any(said in n for n in check.path(bench).summary["notes"])


def test_two_indexers_starting_on_a_new_corpus_create_it_once(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trial: two `contam index` runs started together on a new corpus, on PostgreSQL, both read
    "no such corpus", and the one whose insert lost failed with the database's UniqueViolation
    (exit 3). The loser takes the corpus the other made; other settings are still refused by name."""
    cfg = SignatureConfig()
    made = open_corpus(engine, "new", cfg, True)  # the other run's insert, committed first
    real = repo.get_corpus
    calls: list[str] = []

    def stale_first(conn: Any, name: str, lock: bool = False) -> Any:
        calls.append(name)
        return None if len(calls) == 1 else real(conn, name, lock)  # read before the other committed

    monkeypatch.setattr(repo, "get_corpus", stale_first)
    assert open_corpus(engine, "new", cfg, True) == made
    calls.clear()
    with pytest.raises(FingerprintMismatch, match="indexed with other signature settings"):
        open_corpus(engine, "new", SignatureConfig(ngram_n=7), True)
