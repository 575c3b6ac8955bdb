"""The dashboard: server-rendered pages (both databases) and a real browser (headless Chromium)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from conftest import IndexCorpus
from fastapi.testclient import TestClient
from helpers import wait_for_report
from playwright.sync_api import Browser, sync_playwright
from sqlalchemy import update

from contam.app.api.main import create_app
from contam.app.core.config import SignatureConfig
from contam.app.services.indexing import indexing_run
from contam.app.settings import Settings
from contam.app.store import repo
from contam.app.store import reports as rrepo
from contam.app.store.db import make_engine, upgrade
from contam.app.store.schema import report_item
from contam.app.web.pages import _highlighted, _marked

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"  # tests/artifacts
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
Q1 = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
EVIL = 'What does <script>alert("xss")</script> print when <img src=x onerror=alert(1)> loads in the old browser?'
Q3 = "Tides on the open ocean are driven mostly by the gravity of the moon and the sun together"
BENCH = [
    {"id": "river", "question": Q1, "choices": ["Nile", "Tigris"], "answer": 1},  # in the corpus -> contaminated
    {"id": "evil", "question": EVIL, "choices": ["nothing", "an alert"], "answer": 0},  # in the corpus, hostile text
    {"id": "tides", "question": Q3, "choices": ["yes", "no"], "answer": 0},  # absent -> clean
]


CORPUS = [
    {"id": "quiz-page", "text": f"Quiz night!\n{Q1}\nA. Nile\nB. Tigris\nAnswer: Tigris"},
    {"id": "forum<b>", "text": f"Someone asked: {EVIL} The answer: nothing. Nobody believed it."},  # hostile id too
]


def _bench_file(tmp: Path) -> Path:
    p = tmp / "quiz.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in BENCH))
    return p


def test_a_failed_file_is_named_once_and_counts_are_grouped(
    migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """The corpora page showed "PATH: PATH: reason" (the reason names its file); `contam corpora`
    grouped documents' digits but not tokens' ("2,101 documents, 430505 tokens"): a new user's trial."""
    from typer.testing import CliRunner

    from contam.indexer.cli import app as cli

    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "empty.jsonl").write_bytes(b"")
    (tmp_path / "c" / "good.jsonl").write_text(json.dumps({"id": "g", "text": "word " * 1500}) + "\n")
    index_corpus(migrated_url, [tmp_path / "c"], "web")
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        page = c.get("/corpora").text
    path = str(tmp_path / "c" / "empty.jsonl")
    assert page.count(path) == 1 and f"<code>{path}</code>: no documents" in page
    listed = CliRunner().invoke(cli, ["corpora", "--db", migrated_url]).output
    assert "1,500 tokens" in listed, listed


def test_pages_render_and_escape(migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus) -> None:
    index_corpus(migrated_url, CORPUS)
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        r = c.post(
            "/upload",
            files={"file": ("quiz.jsonl", _bench_file(tmp_path).read_bytes())},
            data={"name": "quiz <i>bench</i>"},
            follow_redirects=False,
        )
        assert r.status_code == 303
        rid = r.headers["location"].rsplit("/", 1)[1]
        assert wait_for_report(c, rid)["status"] == "done"
        report = c.get(f"/reports/{rid}").text
        assert "quiz &lt;i&gt;bench&lt;/i&gt;" in report and "<i>bench</i>" not in report
        assert "Contaminated" in report or "contaminated" in report
        items = c.get("/items", params={"report": rid, "status": ["contaminated"]}).text
        assert "/items/river" in items and "/items/tides" not in items
        # past the last page: it said "page 999 of 1" above an empty table
        past = c.get("/items", params={"report": rid, "status": ["contaminated"], "page": 999}).text
        assert "page 999 of" not in past and "No items on page 999: these filters give 1 page" in past
        past = c.get("/", params={"page": 50}).text
        assert "No reports on page 50: there is 1 page" in past and "No reports yet" not in past
        # the benchmark filter tells reports of one name apart by when they were made
        made = c.get(f"/api/v1/reports/{rid}").json()["created_at"][:16].replace("T", " ")
        assert f"quiz &lt;i&gt;bench&lt;/i&gt; · {made} UTC</option>" in items
        page = c.get(f"/reports/{rid}/items/evil").text
        assert "<script>alert" not in page and "onerror=alert(1)>" not in page
        assert "&lt;script&gt;alert(&#34;xss&#34;)&lt;/script&gt;" in page and "forum&lt;b&gt;" in page
        assert "<mark>" in page
        assert c.get("/corpora").status_code == 200 and "quiz-page" not in c.get("/corpora").text
        assert c.get("/reports/nope").status_code == 404
        bad = c.post("/upload", files={"file": ("b.jsonl", b"{broken")})
        assert bad.status_code == 422 and "line 1 is not valid JSON" in bad.text
        # the form offers every type the reader takes (it left out .arrow, .ndjson, .bz2 and .xz)
        accept = re.search(r'name="file" required accept="([^"]+)"', c.get("/upload").text)
        assert accept is not None and {".arrow", ".ndjson", ".bz2", ".xz", ".zstd"} <= set(accept.group(1).split(","))
        odd = c.post("/upload", files={"file": ("b.xlsx", b"whatever")})
        assert odd.status_code == 422 and ".xz; or .arrow" in odd.text and "save_to_disk folder" in odd.text
        assert 'accept=".jsonl' in odd.text  # the form shown again keeps them


def test_head_empty_list_and_where_an_excerpt_ends(
    migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """A new user's trial: HEAD was 405 everywhere (curl -I, uptime checks); the empty report list
    drew a table of headers under "No reports yet"; an excerpt ended with "…" even when it held
    the document to its end."""
    long_doc = {"id": "long", "text": "word " * 400 + Q1 + " Answer: Tigris. " + "more " * 400}
    index_corpus(migrated_url, [CORPUS[0], long_doc])
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        for path in ("/health", "/", "/items", "/api/v1/corpora"):
            got, head = c.get(path), c.head(path)
            assert head.status_code == got.status_code == 200 and head.content == b"", path
            assert head.headers["content-type"] == got.headers["content-type"], path
        assert c.head("/reports/nope").status_code == 404
        empty = c.get("/").text
        assert "No reports yet" in empty and "<table" not in empty
        upload = {"file": ("quiz.jsonl", _bench_file(tmp_path).read_bytes())}
        rid = c.post("/api/v1/benchmarks", files=upload).json()["id"]
        assert wait_for_report(c, rid)["status"] == "done"
        evidence = c.get(f"/api/v1/reports/{rid}/items/river").json()["evidence"]
        by_doc = {e["document_id"]: e for e in evidence}
        assert by_doc["quiz-page"]["document_chars"] == len(CORPUS[0]["text"])
        assert by_doc["long"]["document_chars"] == len(long_doc["text"])
        page = c.get(f"/reports/{rid}/items/river").text
        texts = re.findall(r'<div class="text" dir="auto">(.*?)</div>', page, re.S)[-2:]  # the evidence, best first
        whole = next(t for t in texts if t.startswith("Quiz night!"))
        cut = next(t for t in texts if not t.startswith("Quiz night!"))
        assert not whole.endswith("…") and cut.startswith("…") and cut.endswith("…")
        assert "<table" in c.get("/").text


def test_the_item_page_says_whether_the_passage_was_found(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """The API said `passage_found`, the item page nothing (a new user's trial, a SQuAD-shaped
    benchmark): now a line of its own, for items with a passage."""
    passage = (
        "The Zambezi river rises in a black marshy bog in the north west of Zambia and flows east "
        "across six countries before it empties through a wide delta into the Indian Ocean"
    )
    index_corpus(migrated_url, [{"id": "page", "text": "Reading practice. " + passage + " End of the excerpt."}])
    rows = [
        {"id": "zq1", "context": passage, "question": "Where does the Zambezi river rise and how far does it flow?"},
        {"id": "zq2", "context": passage, "question": "Into which ocean does the Zambezi empty its water?"},
        {"id": "plain", "question": "Which metal melts at the lowest temperature of all the common metals?"},
    ]
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, rows, "squad")
        assert c.get(f"/api/v1/reports/{rid}/items/zq1").json()["passage_found"] is True
        page = c.get(f"/reports/{rid}/items/zq1").text
        assert "<dt>Passage found</dt><dd>yes (alone: the item's own text is not)</dd>" in page
        assert "Passage found" not in c.get(f"/reports/{rid}/items/plain").text  # no passage, no line


def test_the_item_page_says_how_many_other_items_hold_the_shared_text(
    migrated_url: str, index_corpus: IndexCorpus
) -> None:
    """ "Shared text found: 8 tokens, in 1 items" named the item itself among the holders, and no
    other (a new user's trial): the line counts the other items, as the reasons do."""
    passage = (
        "The expedition left the coastal village at dawn with eleven mules, four guides and enough salted "
        "fish for a month, and after crossing the salt flats it reached the ruined monastery on the ninth day"
    )
    q1, q2 = "How many mules did the expedition take with it?", "On which day did the party reach the monastery?"
    index_corpus(migrated_url, [{"id": "page", "text": f"Notes. {passage} Question: {q1} Answer: eleven. End."}])
    rows = [
        {"id": "m1", "question": f"{passage} Question: {q1}", "answer": "eleven"},
        {"id": "m2", "question": f"{passage} Question: {q2}", "answer": "the ninth"},
    ]
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, rows, "expedition")
        shared = c.get(f"/api/v1/reports/{rid}/items/m2").json()["metrics"]["shared_match"]
        page = c.get(f"/reports/{rid}/items/m2").text
        assert shared and f"<dd>{shared} tokens, which 1 other item(s) hold too</dd>" in page, page
        assert " items</dd>" not in page


def test_a_report_with_nothing_flagged_says_so_and_links_every_item(
    migrated_url: str, index_corpus: IndexCorpus
) -> None:
    """The items page, filtered to flagged items by default, said only "No items match these
    filters" of a report whose items were all clean (a new user's trial)."""
    index_corpus(migrated_url, [{"id": "page", "text": "Nothing in this page is any benchmark's item at all."}])
    rows = _counting(3)
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        # no report at all: said so, not "no item is flagged" (a new user's trial)
        empty = c.get("/items").text
        assert "No reports yet." in empty and "is flagged" not in empty
        rid = _checked(c, rows, "clean")
        page = c.get(f"/items?report={rid}").text
        assert "No item of this report is flagged (contaminated or suspicious)" in page
        assert "No reports yet." not in page
        every = re.search(r'<a href="([^"]+)">list every item</a>', page)
        assert every is not None and "status=clean" in every.group(1)
        listed = c.get(every.group(1).replace("&amp;", "&")).text
        assert all(f"/items/c{i}" in listed for i in range(3))
        assert "No items match these filters." in c.get(f"/items?report={rid}&q=zebra").text  # a filter of the user's
        # as the form sends the default (a review): the flagged statuses named
        form = c.get(f"/items?report={rid}&status=contaminated&status=suspicious").text
        assert "No item of this report is flagged" in form
        assert "No items match these filters." in c.get(f"/items?report={rid}&field=question").text  # not "none"
        # an id searched among the flagged items shown by default, the item being clean: "no items"
        # read as "no such id" (a trial); the page says the other statuses hold it, and links them
        for query in ("q=c1", "status=contaminated&q=c1"):
            page = c.get(f"/items?report={rid}&{query}").text
            assert "No items with the statuses ticked match these filters; 1 with other statuses do" in page, query
            hint = re.search(r'<a href="([^"]+)">list every status</a>', page)
            assert hint is not None and "status=clean" in hint.group(1) and "q=c1" in hint.group(1)
            listed = c.get(hint.group(1).replace("&amp;", "&")).text
            assert "/items/c1" in listed and "/items/c2" not in listed
        assert "3 with other statuses do" in c.get(f"/items?report={rid}&status=contaminated").text


def test_counts_read_as_words_and_with_thousands_as_elsewhere(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """A new user's trial: a report of one item said "1 items", and the items page's count and the
    report's progress were written 6000 where the same page said 6,000."""
    index_corpus(migrated_url, [{"id": "page", "text": "Nothing in this page is any benchmark's item at all."}])
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, _counting(1), "one")
        assert "· 1 item ·" in c.get(f"/reports/{rid}").text
        assert "(one.jsonl, 1 item)" in c.get(f"/reports/{rid}/delete").text
        assert '<p class="meta" id="count">1 item</p>' in c.get(f"/items?report={rid}&status=clean").text
        rid = _checked(c, _counting(1001), "many")
        assert "· 1,001 items ·" in c.get(f"/reports/{rid}").text
        assert '<p class="meta" id="count">1,001 items</p>' in c.get(f"/items?report={rid}&status=clean").text


def test_an_item_page_leads_back_to_the_list_it_was_opened_from(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """A new user's trial: the item page's "items" breadcrumb dropped the list's filters and page;
    it now goes back to the list the item was opened from (this site's, as the browser says),
    else to the report's items. Its counts read as words ("1 token"), and dates say they are UTC."""
    index_corpus(migrated_url, [{"id": "page", "text": "Nothing in this page is any benchmark's item at all."}])
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, [{"id": "one", "question": "Ping"}, *_counting(3)], "crumbs")
        listed = f"/items?report={rid}&status=clean&status=too_short&q=item&page=1"
        page = c.get(f"/reports/{rid}/items/one", headers={"referer": f"http://testserver{listed}"}).text
        assert f'<a href="{listed.replace("&", "&amp;")}" id="back">items</a>' in page
        for elsewhere in ("", "http://elsewhere.example/items?report=x", f"http://testserver/reports/{rid}"):
            page = c.get(f"/reports/{rid}/items/one", headers={"referer": elsewhere} if elsewhere else {}).text
            assert f'<a href="/items?report={rid}" id="back">items</a>' in page
        assert " of 1 token, " in page and " of 1 token</dd>" in page
        assert "<th>Date (UTC)</th>" in c.get("/").text and " UTC</option>" in c.get("/items").text


def test_the_items_of_a_running_or_failed_report_say_they_are_not_all(
    migrated_url: str, index_corpus: IndexCorpus
) -> None:
    """The items page and the API's item list of a report still scoring read as final ("55 items",
    no word that more were coming), and of a failed one said only "No items match these filters"
    (a new user's trial): the page says the report is running (with a link to reload) or failed, and
    the list carries the report's status."""
    index_corpus(migrated_url, [{"id": "page", "text": "Nothing in this page is any benchmark's item at all."}])
    rows = _counting(3)
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, rows, "partly")
        done = c.get(f"/items?report={rid}").text
        assert 'id="running"' not in done and 'id="failed"' not in done and 'http-equiv="refresh"' not in done
        assert c.get(f"/api/v1/reports/{rid}/items").json()["report_status"] == "done"
        engine = make_engine(migrated_url)
        with engine.begin() as conn:
            rrepo.set_status(conn, rid, "running", done_items=1)
        running = c.get(f"/items?report={rid}&status=clean").text
        assert 'id="running"' in running and "(1 of 3 items scored)" in running
        # no self-refresh: it wiped the filter form while it was being filled in (a review); a link reloads
        assert 'http-equiv="refresh"' not in running and 'id="reload" href="/items?report=' in running
        assert "No item of this report is flagged" not in c.get(f"/items?report={rid}").text
        assert c.get(f"/api/v1/reports/{rid}/items").json()["report_status"] == "running"
        with engine.begin() as conn:
            rrepo.set_status(conn, rid, "failed", error="the database is unavailable")
        failed = c.get(f"/items?report={rid}").text
        assert 'id="failed"' in failed and "the database is unavailable" in failed
        assert 'http-equiv="refresh"' not in failed
        assert c.get(f"/api/v1/reports/{rid}/items").json()["report_status"] == "failed"
        assert 'id="running"' not in c.get("/items").text  # every report's items: no one report's state
        engine.dispose()


def test_a_failed_report_s_items_page_does_not_call_its_empty_list_the_items_scored(
    migrated_url: str, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job that fails deletes the items it wrote (nothing half-written): the page said "the list
    holds only the items scored before it did" above an empty list, which reads as "those items
    were all clean" (review, session 41)."""
    from contam.app.services import scanning

    real = scanning.Scanner.scan_stream

    def broken(self, source, progress=None, workers=None, reading=None):  # type: ignore[no-untyped-def]
        yield next(real(self, source, progress, workers, reading))  # a first chunk is written, then it fails
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(scanning, "FIRST_CHUNKS", (1,))
    monkeypatch.setattr(scanning.Scanner, "scan_stream", broken)
    index_corpus(migrated_url, CORPUS)
    rows = [{"id": "river", "question": Q1}, {"id": "other", "question": "Which planet has the most moons now?"}]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        r = c.post("/upload", files={"file": ("f.jsonl", data)}, data={"name": "f"}, follow_redirects=False)
        rid = str(r.headers["location"].rsplit("/", 1)[1])
        assert wait_for_report(c, rid)["status"] == "failed"
        assert c.get(f"/api/v1/reports/{rid}/items?status=clean&status=contaminated").json()["total"] == 0
        page = c.get(f"/items?report={rid}").text
        assert 'id="failed"' in page and "disk on fire" in page
        assert "scored before it did" not in page and "keeps no items" in page


def test_a_report_page_says_what_the_reading_noticed(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """A report's summary keeps what reading its file noticed (an answer naming no choice, ids
    shared), and its page says it; a report read as given says nothing of the kind."""
    index_corpus(migrated_url, [{"id": "page", "text": "Nothing in this page is any benchmark's item at all."}])
    q = "Which whole number comes right after {} when counting upwards?"
    rows = [{"id": "x", "question": q.format(i), "choices": ["one", "two"], "answer": 5 + i} for i in range(2)]
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, rows, "noted")
        notes = c.get(f"/api/v1/reports/{rid}").json()["summary"]["notes"]
        assert len(notes) == 2 and "row 0: 5 with 2 choices; row 1: 6 with 2 choices" in notes[0]
        assert "1 item(s) share an id with an earlier item ('x')" in notes[1]
        page = c.get(f"/reports/{rid}").text
        assert 'id="notes"' in page and "row 0: 5 with 2 choices" in page and "share an id" in page
        # the form keeps the corpus when another report is chosen: that report's page, no items, says why (a review)
        other = c.get(f"/items?report={rid}&corpus=elsewhere")
        assert other.status_code == 200 and 'id="filters"' in other.text
        assert "This report was not checked against corpus &#39;elsewhere&#39; (its corpora: web)." in other.text
        fine = _checked(c, [{"id": "y", "question": q.format(7), "choices": ["one", "two"], "answer": 1}], "fine")
        assert c.get(f"/api/v1/reports/{fine}").json()["summary"]["notes"] == []
        assert 'id="notes"' not in c.get(f"/reports/{fine}").text


def test_the_items_page_takes_a_page_size(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """`page_size` was ignored (25 items a page whatever it said; a trial): it is read, bounded as
    the API bounds it (500), kept by the pager's links and offered by the filter form."""
    index_corpus(migrated_url, [{"id": "page", "text": "Nothing in this page is any benchmark's item at all."}])
    rows = _counting(30)
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, rows, "sized")
        every = f"/items?report={rid}&status=clean"
        assert c.get(every).text.count('data-label="Score"') == 25
        page = c.get(every + "&page_size=10&page=2").text
        assert page.count('data-label="Score"') == 10 and "page 2 of 3" in page
        assert "page_size=10&amp;page=3" in page and "<option selected>10</option>" in page
        # the first and the last page a click away (a trial: "page 5 of 800", previous and next only)
        third = c.get(every + "&page_size=5&page=3").text
        first = re.search(r'<a href="([^"]+)" id="first-page">', third)
        last = re.search(r'<a href="([^"]+)" id="last-page">', third)
        assert first and last and first[1].endswith("page=1") and last[1].endswith("page=6"), third[-600:]
        assert 'id="first-page"' not in page and 'id="last-page"' not in page  # page 2 of 3: its neighbours
        assert c.get(every + "&page_size=100").text.count('data-label="Score"') == 30
        assert c.get(every + "&page_size=501").status_code == 422
        # a misspelt filter in a shared link listed every item, where the API refuses it (an
        # operator's trial): a page naming it and the one meant
        typo = c.get(f"/items?report={rid}&stauts=clean")
        assert typo.status_code == 422 and "<html" in typo.text, typo.text[:200]
        assert "unknown query parameter stauts: this takes report, status," in typo.text
        assert "(did you mean status?)" in typo.text
        # what a mail or chat app adds to a link it passes on is no filter: the page as linked
        relayed = c.get(every + "&page_size=10&utm_source=slack&utm_source=mail&fbclid=IwAR0x&GCLID=1")
        assert relayed.status_code == 200 and relayed.text.count('data-label="Score"') == 10
        # a filter of one value given twice was the last, without a word, where the API refuses it (a review)
        twice = c.get(every + "&page_size=10&page_size=20")
        assert twice.status_code == 422 and "query parameter page_size given more than once" in twice.text
        assert c.get(every + "&status=suspicious").status_code == 200  # status is a list: repeated at will
        assert c.get("/?page=1&deleted=true").status_code == 200 and c.get("/login?next=/items").status_code == 200


def test_the_upload_form_offers_only_corpora_holding_documents(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """A corpus with no documents (its files all failed) was offered, and ticking it gave a 409."""
    from contam.app.services.indexing import open_corpus
    from contam.app.store.db import make_engine

    index_corpus(migrated_url, CORPUS)
    engine = make_engine(migrated_url)
    open_corpus(engine, "hollow", SignatureConfig(), True)
    engine.dispose()
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        form = c.get("/upload").text
        assert 'value="web"' in form and 'value="hollow"' not in form
        assert "hollow" in c.get("/corpora").text  # still listed where corpora are shown
        assert "n=5, short=3, sample=1" in c.get("/corpora").text  # the settings as the CLI shows them


def test_domain_errors_are_pages_never_500(migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus) -> None:
    """Every dashboard path answers a domain error with a page and the status from one table."""
    index_corpus(migrated_url, CORPUS)
    index_corpus(migrated_url, [{"id": "x", "text": Q3}], "other", cfg=SignatureConfig(ngram_n=7))
    bench = _bench_file(tmp_path).read_bytes()
    with TestClient(create_app(Settings(database_url=migrated_url)), raise_server_exceptions=False) as c:
        rid = c.post("/upload", files={"file": ("q.jsonl", bench)}, data={"corpora": ["web"]}, follow_redirects=False)
        rid = rid.headers["location"].rsplit("/", 1)[1]
        cases = {
            "/reports/nope": (404, "no report nope"),
            f"/reports/{rid}/items/nope": (404, "no item"),
            "/items?report=nope": (404, "no report nope"),
            "/items?min_score=abc": (422, "minimum score must be a number"),
            # a parameter out of its range is a page too (it was the API's JSON error)
            # in the tool's words, not the framework's ("String should match pattern", "status.0")
            "/items?field=context": (422, "field: must be one of question, choices, answer, solution, passage"),
            "/items?status=nope": (422, "status: must be &#39;contaminated&#39;"),
        }
        for path, (code, message) in cases.items():
            r = c.get(path)
            assert (r.status_code, r.headers["content-type"].split(";")[0]) == (code, "text/html"), path
            assert message in r.text, path
        # an address nothing answers: a page for a browser (it was the API's JSON), JSON for the API
        html = {"accept": "text/html,application/xhtml+xml"}
        r = c.get("/no-such-page", headers=html)
        assert (r.status_code, r.headers["content-type"].split(";")[0]) == (404, "text/html")
        assert "nothing here: /no-such-page" in r.text
        for path in ("/api/v1/nope", "/no-such-page"):  # the API's, and a client that asks for no HTML
            r = c.get(path, headers=html if path.startswith("/api") else {})
            assert r.status_code == 404 and r.json() == {"error": "Not Found", "detail": None}, path
        for corpora, code, message in ((["nope"], 404, "no corpus named"), (["web", "other"], 409, "different")):
            r = c.post("/upload", files={"file": ("q.jsonl", bench)}, data={"corpora": corpora})
            assert r.status_code == code and message in r.text and 'id="upload-form"' in r.text


def test_nul_characters_and_huge_positions_are_refused_never_500(
    migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """PostgreSQL's text never holds NUL: a NUL in an address, a query or a form field was a 500
    there (psycopg's DataError), and an item position past a 32-bit column's range was a 500 on
    both backends (a bad-input probe). A value the database refuses is the sender's mistake."""
    index_corpus(migrated_url, CORPUS)
    with TestClient(create_app(Settings(database_url=migrated_url)), raise_server_exceptions=False) as c:
        upload = {"file": ("q.jsonl", _bench_file(tmp_path).read_bytes())}
        rid = c.post("/api/v1/benchmarks", files=upload).json()["id"]
        api = ["/api/v1/reports/%00", f"/api/v1/reports/{rid}/items?q=%00", f"/api/v1/reports/{rid}/items/%00"]
        api += ["/api/v1/corpora/%00", f"/api/v1/reports/{rid}/items/river?idx=2147483648"]
        api += [f"/api/v1/reports/{rid}/items/river?idx=99999999999999999999"]
        pages = ["/reports/%00", "/items?q=%00", "/items?corpus=%00", f"/reports/{rid}/items/river?idx=2147483648"]
        for path in api + pages:
            r = c.get(path)
            assert r.status_code < 500 and (r.status_code == 422 or "idx=" not in path), (path, r.status_code)
            kind = "application/json" if path.startswith("/api") else "text/html"
            assert r.headers["content-type"].startswith(kind), path
        assert c.delete("/api/v1/corpora/%00").status_code in (404, 422)
        named = c.post("/api/v1/benchmarks", files=upload, data={"name": "a\x00b"})
        assert named.status_code in (202, 422), named.text


def test_dashboard_requires_login_when_keys_are_set(migrated_url: str, index_corpus: IndexCorpus) -> None:
    index_corpus(migrated_url, CORPUS)
    with TestClient(create_app(Settings(database_url=migrated_url, api_keys="secret"))) as c:
        r = c.get("/items", follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"].startswith("/login")
        assert c.post("/login", data={"key": "wrong", "next": "/items"}).status_code == 401
        ok = c.post("/login", data={"key": "secret", "next": "/items"}, follow_redirects=False)
        assert ok.status_code == 303 and ok.headers["location"] == "/items"
        assert c.get("/items").status_code == 200  # the cookie is kept
    with TestClient(create_app(Settings(database_url=migrated_url, api_keys="secret"))) as c:
        # a shared link keeps its query through the sign-in (it kept the path alone)
        r = c.get("/items", params={"status": "clean", "q": "a b"}, follow_redirects=False)
        assert r.headers["location"] == "/login?next=%2Fitems%3Fstatus%3Dclean%26q%3Da%2Bb"
        form = c.get(r.headers["location"]).text
        assert 'value="/items?status=clean&amp;q=a+b"' in form
        ok = c.post("/login", data={"key": "secret", "next": "/items?status=clean&q=a+b"}, follow_redirects=False)
        assert ok.headers["location"] == "/items?status=clean&q=a+b"


def test_delete_a_corpus_after_confirming(migrated_url: str, index_corpus: IndexCorpus) -> None:
    index_corpus(migrated_url, CORPUS)
    index_corpus(migrated_url, [{"id": "x", "text": Q3}], "other", cfg=SignatureConfig(ngram_n=7))
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        assert 'href="/corpora/other/delete"' in c.get("/corpora").text
        confirm = c.get("/corpora/other/delete")  # the button leads to a confirmation, not the deed
        assert confirm.status_code == 200 and "Delete corpus other?" in confirm.text
        assert "removes its 1 document from 1 file," in confirm.text  # it said "1 documents"
        with c.app.state.engine.connect() as conn:  # type: ignore[attr-defined]
            other_id = int(repo.get_corpus(conn, "other")["id"])
        with indexing_run(c.app.state.engine, other_id):  # type: ignore[attr-defined]  # `contam index` writing into it
            busy = c.post("/corpora/other/delete", follow_redirects=False)
            assert busy.status_code == 409 and "while it is being indexed" in busy.text
        assert [x["name"] for x in c.get("/api/v1/corpora").json()] == ["other", "web"]
        done = c.post("/corpora/other/delete", follow_redirects=False)
        assert done.status_code == 303 and done.headers["location"] == "/corpora?deleted=1"
        assert "The corpus was deleted." in c.get(done.headers["location"]).text  # it landed on the list unsaid
        assert [x["name"] for x in c.get("/api/v1/corpora").json()] == ["web"]
        assert c.get("/corpora/other/delete").status_code == 404


def _counting(n: int) -> list[dict[str, object]]:
    """n clean items, c0 to c{n-1}, each with text of its own."""
    return [
        {"id": f"c{i}", "question": f"Which whole number comes right after {i} when counting upwards?"}
        for i in range(n)
    ]


def _checked(c: TestClient, rows: list[dict[str, object]], name: str = "quiz") -> str:
    """A report of `rows` made through the upload form and waited for: its id."""
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    r = c.post("/upload", files={"file": (f"{name}.jsonl", data)}, data={"name": name}, follow_redirects=False)
    assert r.status_code == 303, r.text
    rid = str(r.headers["location"].rsplit("/", 1)[1])
    rep = wait_for_report(c, rid)
    assert rep["status"] == "done", rep
    return rid


RUSSIAN = "Какой русский писатель описал путешествие к берегам Гренландии? Мелвилл так не писал."


def test_search_folds_every_script_and_reads_the_whole_item(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """The item search compared SQL lower(), which folds ASCII only: "Какой" found nothing in an
    item that begins with it; and it read the item's first 4,000 characters (a new user's trial)."""
    index_corpus(migrated_url, CORPUS)
    long_q = "Quorvania " + "and so the chronicle went on " * 700 + "who was the first Quorvanian king, Olaf?"
    rows = [{"id": "ru", "question": RUSSIAN}, {"id": "long", "question": long_q}, {"id": "river", "question": Q1}]
    rows.append({"id": "tr", "question": "Which café in İstanbul served the first coffee of the empire?"})
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, rows)
        every = ["contaminated", "suspicious", "clean", "too_short"]

        def found(q: str) -> list[str]:
            got = c.get(f"/api/v1/reports/{rid}/items", params={"q": q, "status": every, "page_size": 10}).json()
            return sorted(it["item_id"] for it in got["items"])

        assert found("Какой") == found("КАКОЙ") == found("какой") == ["ru"]
        assert found("ГРЕНЛАНДИИ") == ["ru"]
        assert found("Olaf") == found("QUORVANIAN KING") == ["long"]
        assert found("BAGHDAD") == ["river"]
        assert found("Straße") == []
        # "İ" folds to "i" and a dot above in Python: "istanbul" missed "İstanbul" (a review; PostgreSQL's
        # lower() had found it), and a decomposed accent missed a composed one
        assert found("istanbul") == found("İSTANBUL") == found("ISTANBUL") == ["tr"]
        assert found("cafe\u0301") == found("CAFÉ") == ["tr"]
        page = c.get("/items", params={"report": rid, "q": "Мелвилл", "status": every}).text
        assert "1 item<" in page and "/items/ru?" in page
        # white space as one space, and the item's id too (a trial: "Return  the" and "pyq-0024",
        # an id shown in the list, found nothing)
        assert found("Quorvanian  \n king") == ["long"]
        # a row stored before white space was folded holds it as written: the query as written finds it
        engine = make_engine(migrated_url)
        with engine.begin() as conn:
            conn.execute(update(report_item).where(report_item.c.item_id == "ru").values(search="alpha  beta gamma"))
        engine.dispose()
        assert found("ALPHA  BETA") == ["ru"] and found("alpha beta") == []
        assert found("RIVER") == ["river"] and found("tr") == ["tr"]


def test_status_sorts_by_severity_then_score_and_is_the_default(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """Sorted by status, suspicious items came first (by name), and the default, score, put a
    suspicious item of score 1.0 among contaminated ones: neither was `contam scan`'s order."""
    q4 = "Which composer wrote the opera first staged at the new Cairo opera house two years after it opened?"
    index_corpus(migrated_url, [*CORPUS, {"id": "opera-page", "text": f"An old puzzle: {q4} Think about it."}])
    rows = [
        {"id": "clean", "question": Q3},
        {"id": "asked", "question": q4, "answer": "Giuseppe Verdi, whose Aida was delayed by the siege of Paris"},
        {"id": "river", "question": Q1, "choices": ["Nile", "Tigris"], "answer": 1},
        {"id": "evil", "question": EVIL, "choices": ["nothing", "an alert"], "answer": 0},
    ]
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, rows)
        every = ["contaminated", "suspicious", "clean", "too_short"]
        got = c.get(f"/api/v1/reports/{rid}/items", params={"sort": "status", "status": every}).json()["items"]
        rank = {"contaminated": 2, "suspicious": 1, "clean": 0, "too_short": 0}
        keys = [(rank[it["status"]], it["score"]) for it in got]
        assert [k[0] for k in keys] == [2, 2, 1, 0], got  # suspicious sorted before contaminated by name
        assert keys == sorted(keys, reverse=True) and got[-1]["item_id"] == "clean", keys
        up = c.get(f"/api/v1/reports/{rid}/items", params={"sort": "status", "order": "asc", "status": every})
        assert [it["item_id"] for it in up.json()["items"]] == [it["item_id"] for it in reversed(got)]
        page = c.get("/items", params={"report": rid, "status": every}).text
        shown = re.findall(r"/items/(\w+)\?idx=", page)
        assert shown == [it["item_id"] for it in got]
        assert '<option value="status" selected>status, then score</option>' in page


def test_pages_explain_statuses_and_offer_the_reports_corpora(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """No page said what contaminated, suspicious or the score mean; the corpus filter offered the
    corpora there are now, not those the report was checked against (a new user's trial)."""
    index_corpus(migrated_url, CORPUS)
    index_corpus(migrated_url, [{"id": "x", "text": Q3}], "gone")
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, BENCH)
        c.delete("/api/v1/corpora/gone")
        index_corpus(migrated_url, [{"id": "y", "text": Q3}], "later")
        for page in (c.get(f"/reports/{rid}").text, c.get("/items", params={"report": rid}).text):
            assert 'id="legend"' in page and "not a probability" in page
            # a review: eeedf7c made a widely copied item's score (and histogram bar) what the
            # corpora hold, and the legend still said "its best document holds"
            assert "for a widely copied item (its text in many documents) the share the corpora hold" in page
        items = c.get("/items", params={"report": rid}).text
        offered = re.findall(
            r"<option (?:selected)?>([^<]+)</option>", items.split('name="corpus"')[1].split("</select>")[0]
        )
        assert offered == ["gone", "web"], offered


def test_delete_a_report_from_its_page(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """A corpus a job reads cannot be deleted "(... or delete the report, or its page on the
    dashboard)", but no page could delete a report: its page now can, after confirming."""
    index_corpus(migrated_url, CORPUS)
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, BENCH, "quiz <b>")
        page = c.get(f"/reports/{rid}").text
        assert f'href="/reports/{rid}/delete"' in page
        confirm = c.get(f"/reports/{rid}/delete")
        assert confirm.status_code == 200 and "Delete report quiz &lt;b&gt;?" in confirm.text
        assert c.get(f"/api/v1/reports/{rid}").status_code == 200  # asking is not deleting
        done = c.post(f"/reports/{rid}/delete", follow_redirects=False)
        assert done.status_code == 303 and done.headers["location"] == "/?deleted=1"
        assert "The report was deleted." in c.get(done.headers["location"]).text
        # a link cannot make the notice say something (a review: "/?deleted=... sign in at evil.example")
        spoof = c.get("/", params={"deleted": "all reports. Sign in again at https://evil.example"})
        assert spoof.status_code == 422 or "evil.example" not in spoof.text
        assert c.get(f"/api/v1/reports/{rid}").status_code == 404
        assert c.post(f"/reports/{rid}/delete").status_code == 404


# ---------------------------------------------------------------- a real browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _serving(settings: Settings) -> Iterator[str]:
    """The app on a free port of this machine, in a thread, for as long as the block runs."""
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def live_server(tmp_path: Path, index_corpus: IndexCorpus) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    upgrade(url)
    index_corpus(url, CORPUS)
    with _serving(Settings(database_url=url)) as server:
        yield server


@pytest.fixture
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), "Chromium is required for the browser tests (apt-get install chromium)"
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield b
        b.close()


def test_browser_upload_filter_and_evidence(live_server: str, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(live_server + "/")
    assert "No reports yet" in page.content()
    page.screenshot(path=str(ARTIFACTS / "01-reports-empty.png"), full_page=True)

    # upload through the form; the report page refreshes itself until the job is done
    page.click("text=Upload")
    page.set_input_files("input[name=file]", str(_bench_file(tmp_path)))
    page.fill("input[name=name]", "Quiz benchmark")
    page.screenshot(path=str(ARTIFACTS / "02-upload.png"), full_page=True)
    page.click("button[type=submit]")
    page.wait_for_selector("#summary", timeout=30_000)
    assert page.locator(".card.s-contaminated .num").inner_text() == "2"
    assert page.locator(".card.s-clean .num").inner_text() == "1"
    page.screenshot(path=str(ARTIFACTS / "03-report.png"), full_page=True)

    # filter flagged items: contaminated only, then a text search; the filters live in the URL
    page.click("text=Browse flagged items")
    page.uncheck("input[name=status][value=suspicious]")
    page.fill("input[name=q]", "baghdad")
    page.click("#filters button[type=submit]")
    page.wait_for_url("**q=baghdad**")
    assert "status=contaminated" in page.url and "status=suspicious" not in page.url
    assert page.locator("#count").inner_text() == "1 item"
    page.screenshot(path=str(ARTIFACTS / "04-flagged-items.png"), full_page=True)
    shared = page.url
    other = browser.new_page()
    other.goto(shared)  # a shared link shows the same view
    assert other.locator("#count").inner_text() == "1 item"
    other.close()

    # the item beside its training text, overlaps highlighted on both sides
    page.click("a.item-link")
    page.wait_for_selector("#evidence")
    assert "quiz-page" in page.locator("#evidence").inner_text()
    marks = page.locator("#evidence mark").all_inner_texts()
    assert any("ancient city of Baghdad" in m for m in marks), marks
    assert page.locator("#item-pane mark").count() >= 1
    page.screenshot(path=str(ARTIFACTS / "05-item.png"), full_page=True)

    # hostile text is shown as text, never run
    page.goto(page.url.split("?")[0].replace("/items/river", "/items/evil"))  # its own idx, not river's
    page.wait_for_selector("#evidence")
    assert '<script>alert("xss")</script>' in page.locator("#item-pane").inner_text()
    assert page.locator("#item-pane script, #item-pane img, #evidence img").count() == 0
    page.screenshot(path=str(ARTIFACTS / "06-item-hostile-text.png"), full_page=True)

    # a phone's width: the item page stacks the panes
    phone = browser.new_page(viewport={"width": 390, "height": 844})
    phone.goto(page.url)
    boxes = [phone.locator(sel).bounding_box() for sel in ("#item-pane", "#evidence")]
    assert boxes[0] and boxes[1] and boxes[1]["y"] > boxes[0]["y"] + boxes[0]["height"] - 1
    phone.screenshot(path=str(ARTIFACTS / "07-item-phone.png"), full_page=True)
    phone.goto(live_server + "/corpora")
    assert "web" in phone.content()
    phone.screenshot(path=str(ARTIFACTS / "08-corpora-phone.png"), full_page=True)
    assert dialogs == []

    # the API documentation renders from bundled assets (Swagger UI 5 reads OpenAPI 3.1)
    docs = browser.new_page()
    docs.goto(live_server + "/docs")
    docs.wait_for_selector(".opblock", timeout=15_000)
    assert docs.locator(".opblock").count() >= 10
    docs.screenshot(path=str(ARTIFACTS / "09-api-docs.png"))


def test_browser_items_table_keeps_its_text_column_wide(live_server: str, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Long unbreakable ids (file paths as document ids) once squeezed the text column and made
    the flagged-items table thousands of pixels tall."""
    long_id = "/usr/lib/python3.11/site-packages/a_rather_long_package_name/with/a_deep/module_path.py"
    rows = [{"id": f"{long_id}#item{i}", "question": q} for i, q in enumerate((Q1, EVIL, Q3))]
    bench = tmp_path / "long_ids_benchmark_with_a_long_file_name_too.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(live_server + "/upload")
    page.set_input_files("input[name=file]", str(bench))
    page.click("button[type=submit]")
    page.wait_for_selector("#summary", timeout=30_000)
    page.goto(live_server + "/items")
    text_cell = page.locator("table.items tbody td.snippet").first.bounding_box()
    table = page.locator("table.items").bounding_box()
    assert text_cell and table
    assert text_cell["width"] > 0.3 * table["width"], (text_cell, table)
    rows_shown = page.locator("table.items tbody tr").count()
    assert table["height"] / rows_shown < 200, table
    page.screenshot(path=str(ARTIFACTS / "09-items-long-ids.png"), full_page=True)


def test_browser_underscores_show_inside_highlighted_text(live_server: str, browser) -> None:  # type: ignore[no-untyped-def]
    """The highlight's outline was drawn over the text's bottom edge, so `has_close_elements`
    read `has close elements` inside highlighted code: the underscores must change the pixels."""
    page = browser.new_page(viewport={"width": 800, "height": 600})
    page.goto(live_server + "/corpora")
    shots = []
    for text in ("has_close_elements(numbers_list)", "has close elements(numbers list)"):
        page.evaluate(
            """t => { const d = document.createElement('div'); d.className = 'text'; d.id = 'probe';
                      const m = document.createElement('mark'); m.textContent = t; d.appendChild(m);
                      document.querySelector('main').prepend(d); }""",
            text,
        )
        shots.append(page.locator("#probe mark").screenshot())
        page.evaluate("document.getElementById('probe').remove()")
    assert shots[0] != shots[1]


def test_a_name_is_highlighted_whole_across_its_underscores() -> None:
    """Tokens stop at underscores, so `has_close_elements` came out as three highlights with bare
    underscores between them, which the highlight frames covered."""
    text = "def has_close_elements(numbers_list): x_"
    words = [(4, 7), (8, 13), (14, 22), (23, 30), (31, 35), (38, 39)]
    assert _marked(text, words) == [
        ("def ", False),
        ("has_close_elements", True),
        ("(", False),
        ("numbers_list", True),
        ("): ", False),
        ("x", True),
        ("_", False),
    ]


def test_the_answer_is_marked_on_the_item_where_the_evidence_marks_it() -> None:
    """The item's side was aligned with the whole excerpt: an answer whose first word the question
    holds, written again in the next paragraph, had its words taken from those places one by one,
    and the answer, marked on the training text, was not marked on the item (a probe's Arabic
    item: "the longest river ... ?" answered "the river Nile")."""
    q = "ما هو أطول نهر في العالم الذي يمر عبر مصر والسودان ويصب في البحر الأبيض المتوسط؟"
    a = "نهر النيل"
    before, after = "وقد كانت مكتبة الإسكندرية من أعظم المكتبات.", f"يعتبر {a} من أهم الأنهار في أفريقيا."
    excerpt = f"{before}\n\nالسؤال: {q}\nالجواب: {a}\n\n{after}"
    marks = [(excerpt.index(q), excerpt.index(q) + len(q) - 1), (excerpt.index(a), excerpt.index(a) + len(a))]
    it = {"item": {"question": q, "answer": a}, "evidence": [{"excerpt": excerpt, "highlights": marks}]}
    fields = dict(_highlighted({**it, "answer_found": True})["item_fields"])
    assert fields["answer"] == [(a, True)], fields["answer"]
    assert fields["question"][0] == (q[:-1], True), fields["question"]
    # an answer not found after the question is not marked, though the page holds its words (as
    # one of the choices it lists): it was, beside "Answer found: no" (a trial)
    fields = dict(_highlighted({**it, "answer_found": False})["item_fields"])
    assert fields["answer"] == [(a, False)] and fields["question"][0] == (q[:-1], True), fields


def test_a_refused_upload_keeps_what_was_filled_in(
    migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """A new user's trial: after a refused upload the form came back empty (name, ticked corpora,
    mapping gone), and a post without a file was a bare validation page. The form comes back
    with what was filled in (a browser never refills the file: it says so), and with no file it
    asks for one."""
    index_corpus(migrated_url, CORPUS)
    index_corpus(migrated_url, [{"id": "x", "text": Q3}], "other")  # not ticked: a default would take it too
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        filled = {"name": "my quiz", "corpora": ["web"], "question": "prompt", "answer": "gold"}
        r = c.post("/upload", files={"file": ("q.jsonl", b"")}, data=filled)
        assert r.status_code == 422 and 'id="upload-form"' in r.text, r.text
        assert 'value="my quiz"' in r.text and 'value="prompt"' in r.text and 'value="gold"' in r.text
        assert 'value="web" checked' in r.text and "choose the file again" in r.text
        r = c.post("/upload", data={"name": "no file"})
        assert r.status_code == 422 and "choose a benchmark file to check" in r.text and 'value="no file"' in r.text
        assert c.get("/upload").status_code == 200 and "checked" not in c.get("/upload").text
        # a second file, or the API's fields, were dropped unseen (a probe): refused, naming them
        bench = _bench_file(tmp_path).read_bytes()
        two = [("file", ("a.jsonl", bench)), ("file", ("b.jsonl", bench))]
        r = c.post("/upload", files=two)
        assert r.status_code == 422 and "form field file given more than once" in r.text
        r = c.post("/upload", files={"file": ("a.jsonl", bench)}, data={"thresholds": "{bad", "name": "kept"})
        assert r.status_code == 422 and "the upload form has no field thresholds" in r.text
        # what was filled in is read and kept, not "nothing of the form was read" (a review)
        assert 'value="kept"' in r.text and "Nothing of the form was read" not in r.text
        assert c.get("/api/v1/reports").json()["total"] == 0
        # ticked boxes repeat the field: taken, not refused as a field given twice
        form = {"corpora": ["web", "web"]}
        two_corpora = c.post("/upload", files={"file": ("a.jsonl", bench)}, data=form, follow_redirects=False)
        assert two_corpora.status_code == 303, two_corpora.text
        rid = two_corpora.headers["location"].rsplit("/", 1)[1]
        assert wait_for_report(c, rid)["corpora"] == ["web"]


def test_an_upload_over_a_limit_is_a_413_page_as_the_api_says_it(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """The form answered a file over CONTAM_MAX_UPLOAD_MB with 422, the API with 413, and the
    README says every refusal is a 413 (an operator's trial): a 413 page naming the setting."""
    index_corpus(migrated_url, CORPUS)
    big = b'{"question": "' + b"x " * 600_000 + b'"}\n'
    with TestClient(create_app(Settings(database_url=migrated_url, max_upload_mb=1))) as c:
        r = c.post("/upload", files={"file": ("big.jsonl", big)})
        assert r.status_code == 413 and "CONTAM_MAX_UPLOAD_MB" in r.text and "<html" in r.text, r.text[:300]
        api = c.post("/api/v1/benchmarks", files={"file": ("big.jsonl", big)})
        assert api.status_code == 413 and "CONTAM_MAX_UPLOAD_MB" in api.json()["error"]
        assert "Up to 1.0 MiB (<code>CONTAM_MAX_UPLOAD_MB</code>)" in c.get("/upload").text  # said before
        # over the limit and the MiB a form may add, the body is refused unread: that was the API's
        # JSON, the form and its reason lost (a trial); now the form with the reason, by Content-Length
        # or as the body arrives
        huge = b" " * (3 << 20)
        boundary = "b0undary"
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="b.jsonl"\r\n\r\n'.encode()
        for body in (huge, iter([head, huge, f"\r\n--{boundary}--\r\n".encode()])):
            kind = {"content-type": f"multipart/form-data; boundary={boundary}"}
            r = c.post("/upload", content=body, headers=kind, follow_redirects=False)
            assert r.status_code == 413 and 'id="upload-form"' in r.text, r.text[:300]
            assert "exceeds the limit of 1.0 MiB (CONTAM_MAX_UPLOAD_MB)" in r.text and "fill it in again" in r.text
        assert c.post("/api/v1/benchmarks", files={"file": ("b.jsonl", huge)}).json()["detail"]["value"] == 1 << 20


def _upload_in_browser(page, server: str, bench: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    """Upload `bench` under `name` through the form, in the browser, and wait for its report page."""
    page.goto(server + "/upload")
    page.set_input_files("input[name=file]", str(bench))
    page.fill("input[name=name]", name)
    page.click("button[type=submit]")
    page.wait_for_selector("#summary", timeout=30_000)


def test_browser_pages_fit_a_phone(live_server: str, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """At a phone's width the flagged-items page scrolled sideways: the benchmark filter is as wide
    as its longest option (a report's name and date), and the report page by a few pixels."""
    bench = tmp_path / "a_benchmark_file_with_a_rather_long_name_as_real_ones_have.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in BENCH))
    page = browser.new_page(viewport={"width": 390, "height": 844})
    _upload_in_browser(page, live_server, bench, "HumanEval against the python stdlib corpus (a demo run)")
    report_url = page.url
    for url in (report_url, live_server + "/items", live_server + "/", live_server + "/corpora"):
        page.goto(url)
        wide = page.evaluate("document.documentElement.scrollWidth")
        over = page.evaluate(
            "[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 390)"
            ".map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)).slice(0, 8)"
        )
        assert wide <= 390, (url, wide, over)
    page.goto(live_server + "/items")
    page.screenshot(path=str(ARTIFACTS / "10-items-phone.png"), full_page=True)


def test_an_unbroken_long_name_or_id_does_not_widen_the_pages(  # type: ignore[no-untyped-def]
    live_server: str, browser, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """A report name of 200 letters without a space (the most the upload takes) pushed the reports
    list's other columns off the screen, and an item id of 300 gave its page a horizontal scroll bar
    (a new user's trial); a corpus name of 180 made the corpora page 2,380 px wide and the upload form
    1,800 (a review): headings, list items, the form's boxes and the list's name and corpora cells
    wrap anywhere."""
    index_corpus(
        f"sqlite:///{tmp_path / 'live.db'}", [{"id": "x", "text": "Nothing of any benchmark here."}], "C" * 180
    )
    bench = tmp_path / "long.jsonl"
    rows = [dict(BENCH[0], id="I" * 300), BENCH[2]]
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _upload_in_browser(page, live_server, bench, "N" * 200)
    report_url = page.url
    item_url = report_url + "/items/" + "I" * 300 + "?idx=0"
    for url in (live_server + "/", report_url, item_url, live_server + "/corpora", live_server + "/upload"):
        page.goto(url)
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= 1280, (url, wide)
    page.goto(live_server + "/")  # the list's last column in sight, not scrolled off inside its frame
    right = page.evaluate(
        "document.querySelector('table.reports tbody tr td:last-child').getBoundingClientRect().right"
    )
    assert right <= 1280, right
    page.close()


def test_a_phone_s_report_card_gives_a_name_its_width(live_server: str, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Below 760 px the reports list is a card per report, but its name and corpora cells kept the
    table's 20rem cap: a name of a few words wrapped into a column a third of the card wide at 700 px
    (review, session 41), as the items list's cells do not (their cap is lifted on a phone)."""
    bench = tmp_path / "b.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in BENCH[:1]))
    page = browser.new_page(viewport={"width": 700, "height": 900})
    _upload_in_browser(page, live_server, bench, "a benchmark whose name runs on for a good many words here")
    page.goto(live_server + "/")
    card, cell = page.evaluate(
        "[document.querySelector('table.reports tbody tr').getBoundingClientRect().width,"
        " document.querySelector('table.reports td[data-label=Benchmark]').getBoundingClientRect().width]"
    )
    assert cell > 0.8 * card, (cell, card)
    page.close()


def test_browser_back_after_signing_out_asks_for_the_key(browser, tmp_path: Path, index_corpus: IndexCorpus) -> None:  # type: ignore[no-untyped-def]
    """A new user's trial: after "Sign out", the browser's Back showed the signed-in page again (the
    corpora, an item beside its training text) from its cache, never asking the server: pages are
    not kept now, and Back asks for the key."""
    url = f"sqlite:///{tmp_path / 'keyed.db'}"
    upgrade(url)
    index_corpus(url, CORPUS)
    with _serving(Settings(database_url=url, api_keys="secret")) as server:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(server + "/corpora")
        page.fill("input[name=key]", "secret")
        page.click("button[type=submit]")
        page.wait_for_url("**/corpora")
        assert "Documents" in page.inner_text("main")
        page.click("text=Sign out")
        page.wait_for_url("**/login")
        page.go_back()
        page.wait_for_load_state()
        assert "/login?next=" in page.url and "Documents" not in page.inner_text("main"), page.url
        page.close()


def test_browser_right_to_left_text_reads_from_the_right(live_server: str, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A new user's trial: an Arabic item and its training text were laid out left to right, flush
    left, so a sentence's question mark and the list's "Answer:" sat at the wrong end; each text
    takes its direction from its first letter now, and English stays left to right."""
    arabic = "ما هي عاصمة المملكة المغربية التي تقع على ساحل المحيط الأطلسي وتعتبر مركزا إداريا مهما؟"
    bench = tmp_path / "rtl.jsonl"
    choices = ["الرباط", "الدار البيضاء"]  # a review: the choices were still laid out left to right
    rows = ({"id": "ar", "question": arabic, "choices": choices}, BENCH[2])
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _upload_in_browser(page, live_server, bench, "rtl")
    page.goto(live_server + "/items?status=clean&sort=row&order=asc")
    snippets = page.locator("table.items td.snippet > span")
    directions = [snippets.nth(i).evaluate("e => getComputedStyle(e).direction") for i in range(2)]
    assert directions == ["rtl", "ltr"], directions
    page.locator("a.item-link", has_text="ar").click()
    page.wait_for_selector("#item-pane")
    assert page.locator("#item-pane .text").first.evaluate("e => getComputedStyle(e).direction") == "rtl"
    assert page.locator("#item-pane ol.choices li").first.evaluate("e => getComputedStyle(e).direction") == "rtl"
    # a right-to-left choice's letter stands outside it on the right: the list leaves it room
    # there, as on the left (a trial: ".A .B" drawn past the pane's border, cut off)
    pads = page.locator("#item-pane ol.choices").evaluate(
        "e => [parseFloat(getComputedStyle(e).paddingLeft), parseFloat(getComputedStyle(e).paddingRight)]"
    )
    assert pads[1] >= 20 and pads[1] == pads[0], pads
    page.close()


def test_browser_min_score_takes_a_score_as_the_list_shows_it(live_server: str, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A new user's trial: the list shows scores to two places (0.84), but the filter's box stepped
    by 0.05, so the browser refused 0.84 ("the two nearest valid values are 0.8 and 0.85") and the
    form was never sent."""
    bench = tmp_path / "b.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in BENCH))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _upload_in_browser(page, live_server, bench, "quiz")
    page.click("text=Browse flagged items")
    page.fill("input[name=min_score]", "0.84")
    assert page.evaluate("document.querySelector('input[name=min_score]').validationMessage") == ""
    page.click("#filters button[type=submit]")
    page.wait_for_url("**min_score=0.84**", timeout=5_000)
    assert page.locator("#count").inner_text() == "2 items"
    page.close()


def _hidden_columns(page, url: str) -> list[str]:  # type: ignore[no-untyped-def]
    """The tables at `url` whose columns reach past their frame: scrolled out of sight in it."""
    page.goto(url)
    return list(
        page.evaluate(
            "[...document.querySelectorAll('.table-wrap')].filter(e => e.offsetParent"
            " && e.scrollWidth > e.clientWidth).map(e => e.querySelector('th').innerText)"
        )
    )


def test_the_share_columns_are_in_sight_at_a_laptop_s_and_a_tablet_s_width(  # type: ignore[no-untyped-def]
    live_server: str, browser, tmp_path: Path
) -> None:
    """A new user's trial: the report page's per-corpus table sat in a third of the page, and its
    last column, the corpus's contaminated share, was scrolled out of its frame at 1280 px and wider
    ("Shar", "40.0"); between 760 and 870 px the reports list's last column, the same share, was."""
    bench = tmp_path / "b.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in BENCH))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _upload_in_browser(page, live_server, bench, "quiz")
    report_url = page.url
    assert page.locator("table.small th", has_text="Corpus").count() == 1
    for width in (1280, 1920, 800):
        page.set_viewport_size({"width": width, "height": 900})
        assert _hidden_columns(page, report_url) == [], width
    for width in (768, 820, 861, 1280):
        page.set_viewport_size({"width": width, "height": 900})
        assert _hidden_columns(page, live_server + "/") == [], width
    page.close()


def test_a_corpus_of_an_earlier_tokeniser_is_marked_and_not_offered(
    migrated_url: str, index_corpus: IndexCorpus
) -> None:
    """After an upgrade, a corpus an earlier release indexed was listed like any other, and offered
    on the upload form, which then failed with a 409 (an upgrade probe)."""
    import dataclasses

    index_corpus(migrated_url, CORPUS)
    index_corpus(
        migrated_url,
        [{"id": "x", "text": Q3}],
        "old",
        cfg=dataclasses.replace(SignatureConfig(), normalizer_version="2"),
    )
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        page = c.get("/corpora").text
        assert page.count("Indexed by an earlier release of contam") == 1
        assert page.index("Indexed by an earlier release") > page.index("<h2>old</h2>")
        upload = c.get("/upload").text
        assert 'value="web"' in upload and 'value="old"' not in upload
        assert c.get("/api/v1/corpora/old").json()["reproducible"] is False


def test_a_flagged_item_without_listed_documents_is_not_said_to_match_nothing(
    migrated_url: str, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new user's trial: a widespread copy, `contaminated` with no document listed, read "No
    training text matched this item" beside its status. Its documents are listed now; where none
    can be (here: none found by the second look-up), the page sends the reader to the reason."""
    from contam.app.services.scanning import Scanner

    monkeypatch.setattr(Scanner, "_widespread_copies", lambda self, wide: {})
    text = "Name the largest moon of the planet Saturn which has a thick nitrogen atmosphere and methane lakes"
    pages = [
        {
            "id": f"p{i}",
            "text": f"{' '.join(f'w{i}x{j}' for j in range(60))} {text}? {' '.join(f'v{i}y{j}' for j in range(60))}",
        }
        for i in range(15)
    ]
    index_corpus(migrated_url, pages)
    rows = [{"id": "moon", "question": text.replace("methane lakes", "hydrocarbon seas"), "answer": "Titan"}]
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, rows)
        item = c.get(f"/api/v1/reports/{rid}/items/moon").json()
        assert item["status"] == "contaminated" and not item["evidence"], item
        page = c.get(f"/reports/{rid}/items/moon").text
        assert "No document is listed: see the reason above." in page
        assert "No training text matched" not in page


def test_a_corpus_deleted_since_is_marked_where_a_report_names_it(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """After its corpus was deleted, a report's page and its items' evidence still named it as if
    it were there, and users looked for it on the corpora page (a new user's trial): each names it
    with "(no longer indexed)"; the evidence stays readable."""
    index_corpus(migrated_url, CORPUS)
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, [BENCH[0]], "river")
        assert "no longer indexed" not in c.get(f"/reports/{rid}").text
        assert "no longer indexed" not in c.get(f"/reports/{rid}/items/river?idx=0").text
        assert c.delete("/api/v1/corpora/web").status_code == 204
        page = c.get(f"/reports/{rid}").text
        assert 'corpora web <span class="gone"' in page and "(no longer indexed)" in page
        assert '<tr><td>web <span class="gone"' in page  # the per-corpus table too (a trial)
        item = c.get(f"/reports/{rid}/items/river?idx=0").text
        assert '<strong>web</strong> <span class="gone"' in item and "Tigris" in item


def test_an_item_whose_id_is_a_dot_segment_opens_from_the_items_page(
    migrated_url: str, index_corpus: IndexCorpus
) -> None:
    """Items with the id `.` or `..` could not be opened: a browser resolves those path steps away,
    `%2e` too, so /reports/R/items/.. opened the report and /items/. a 404 (a new user's trial); their
    links go by position instead."""
    index_corpus(migrated_url, [{"id": "page", "text": "Nothing in this page is any benchmark's item at all."}])
    rows = [dict(row, id=name) for row, name in zip(_counting(3), ["..", ".", "plain"], strict=True)]
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, rows, "dots")
        listed = c.get(f"/items?report={rid}&status=clean&sort=row&order=asc").text
        links = re.findall(r'class="item-link" href="([^"]+)">([^<]*)</a>', listed)
        assert [name for _href, name in links] == ["..", ".", "plain"], links
        for (href, _name), n in zip(links, range(3), strict=True):
            page = c.get(href.replace("&amp;", "&"))
            assert page.status_code == 200 and f"right after {n} when counting" in page.text, (href, page.text[:300])
        assert links[2][0] == f"/reports/{rid}/items/plain?idx=2"  # an ordinary id keeps its link
        assert c.get(f"/reports/{rid}/at/7").status_code == 404


def test_an_id_several_items_share_links_each_of_them(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """A link to an item by an id two items share was a 422 naming their idx as text, a dead end
    (a trial); the page now links each item."""
    index_corpus(migrated_url, CORPUS)
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(
            c, [{"id": "dup", "question": Q1}, {"id": "one", "question": Q3}, {"id": "dup", "question": Q1 + " Why?"}]
        )
        page = c.get(f"/reports/{rid}/items/dup")
        assert page.status_code == 422 and "several items" in page.text, page.text[:300]
        links = re.findall(r'<a href="(/reports/[^"]+/at/\d+)">idx (\d+)</a>', page.text)
        assert [k for _href, k in links] == ["0", "2"], links
        assert all(c.get(href).status_code == 200 for href, _k in links)


def test_an_item_link_trimmed_to_its_folder_lists_the_reports_items(
    migrated_url: str, index_corpus: IndexCorpus
) -> None:
    """`/reports/R/items`, an item's link with its id cut off, went to `/items/`, "no item ''" (a
    trial): it is the list of that report's items."""
    index_corpus(migrated_url, CORPUS)
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, [{"id": "river", "question": Q1}])
        r = c.get(f"/reports/{rid}/items", follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == f"/items?report={rid}", r.headers
        assert "1 item<" in c.get(f"/reports/{rid}/items").text
        assert c.get("/reports/nosuch/items").status_code == 404
        slash = c.get(f"/reports/{rid}/items/", follow_redirects=False)  # with its slash too (a trial)
        assert slash.status_code == 303 and slash.headers["location"] == f"/items?report={rid}", slash.text[:200]


def test_a_worked_solution_not_on_the_page_is_neither_counted_nor_marked(
    migrated_url: str, index_corpus: IndexCorpus
) -> None:
    """A trial: a GSM8K item whose page holds the question and the final answer only was shown as
    "Whole item found: 100.0% of 51 tokens", and the solution's words that the question has too
    ("Natalia sold", "clips in May") marked, as if the worked solution were on the page: the
    coverage leaves out a solution the page does not give, and said so nowhere."""
    q = (
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
        "How many clips did Natalia sell altogether in April and May?"
    )
    solution = (
        "Natalia sold 48/2 = 24 clips in May.\nNatalia sold 48+24 = 72 clips altogether in April and May.\n#### 72"
    )
    index_corpus(migrated_url, [*CORPUS, {"id": "help", "text": f"Homework help: {q} The answer is 72. Next one."}])
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, [{"id": "gsm", "question": q, "answer": solution}])
        it = c.get(f"/api/v1/reports/{rid}/items/gsm").json()
        m = it["metrics"]
        assert it["status"] == "contaminated" and not it["fields"]["solution"]["found"], it
        assert m["coverage"] == 1.0 and m["counted_tokens"] == m["tokens"] - it["fields"]["solution"]["tokens"], m
        page = c.get(f"/reports/{rid}/items/gsm").text
        said = f"100.0% of {m['counted_tokens']} of its {m['tokens']} tokens (its worked solution, not on the page"
        assert said in page, page
        panel = page.split("<h3>solution</h3>", 1)[1].split("</div>", 1)[0]
        assert "Natalia sold 48/2" in panel and "<mark>" not in panel, panel
        assert "<mark>" in page.split("<h3>question</h3>", 1)[1].split("</div>", 1)[0]  # the question is


def test_items_sorted_by_id_take_numbers_by_value(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """Sorted by id, the items list put q10 before q2: ids sorted as text (a session's note)."""
    index_corpus(migrated_url, CORPUS)
    rows = [{"id": f"q{k}", "question": f"{Q3} Variant {k}."} for k in (10, 2, 1, 100)]
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = _checked(c, rows)
        every = "&".join(f"status={s}" for s in ("contaminated", "suspicious", "clean", "too_short"))
        for order, expected in (("asc", ["q1", "q2", "q10", "q100"]), ("desc", ["q100", "q10", "q2", "q1"])):
            page = c.get(f"/items?report={rid}&{every}&sort=item_id&order={order}").text
            listed = re.findall(r"/items/(q\d+)\?idx=", page)
            assert list(dict.fromkeys(listed)) == expected, (order, listed)
        listing = c.get(f"/api/v1/reports/{rid}/items", params={"sort": "item_id"}).json()
        assert listing["items"] and all("id_order" not in it for it in listing["items"]), listing
