"""The REST API end to end, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import gc
import gzip
import io
import json
import os
import re
import warnings
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from conftest import IndexCorpus
from fastapi.testclient import TestClient
from helpers import wait_for_report
from pydantic import ValidationError

from contam.app.api.main import create_app
from contam.app.api.schemas import CheckResponse
from contam.app.core.config import SignatureConfig
from contam.app.services import scanning
from contam.app.services.reports import ReportService
from contam.app.settings import Settings
from contam.app.store import reports as rrepo
from contam.app.store.db import make_engine

Q1 = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
Q2 = "Tides on the open ocean are driven mostly by the gravity of the moon and the sun together"
ROWS = [
    {"id": "q1", "question": Q1, "choices": ["Nile", "Tigris"], "answer": 1},
    {"id": "q2", "question": Q2, "choices": ["yes", "no"], "answer": 0},
]


CORPUS = [{"id": "page1", "text": f"Quiz night! {Q1} A. Nile B. Tigris"}]  # holds q1, not q2


@pytest.fixture
def client(migrated_url: str, index_corpus: IndexCorpus) -> Iterator[TestClient]:
    index_corpus(migrated_url, CORPUS)
    app = create_app(Settings(database_url=migrated_url, api_keys=""))
    with TestClient(app) as c:
        yield c


def _payloads() -> dict[str, bytes]:
    jsonl = "".join(json.dumps(r) + "\n" for r in ROWS).encode()
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["id", "question", "A", "B", "answer"])
    for r in ROWS:
        w.writerow([r["id"], r["question"], *r["choices"], "AB"[r["answer"]]])
    pq_buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(ROWS), pq_buf)
    return {
        "b.jsonl": jsonl,
        "b.jsonl.gz": gzip.compress(jsonl),
        "b.json": json.dumps({"data": ROWS}).encode(),
        "b.csv": buf.getvalue().encode(),
        "b.tsv": buf.getvalue().replace(",", "\t").encode(),
        "b.parquet": pq_buf.getvalue(),
    }


@pytest.mark.parametrize("name", list(_payloads()))
def test_upload_each_format(client: TestClient, name: str) -> None:
    r = client.post("/api/v1/benchmarks", files={"file": (name, _payloads()[name])}, data={"name": "quiz"})
    assert r.status_code == 202, r.text
    rep = wait_for_report(client, r.json()["id"])
    assert rep["status"] == "done" and rep["summary"]["counts"]["contaminated"] == 1
    assert rep["summary"]["counts"]["clean"] == 1 and rep["total_items"] == 2
    item = client.get(f"/api/v1/reports/{rep['id']}/items/q1").json()
    assert item["status"] == "contaminated" and item["evidence"][0]["document_id"] == "page1"
    assert item["item"]["answer"] == "Tigris"


def test_items_that_share_an_id_are_told_apart_by_their_idx(client: TestClient) -> None:
    """A benchmark may give two items one id (here the copied q1 and the clean q2 are both "dup").
    Asked by id alone, the first one was returned for both, so the dashboard's link to the clean
    one opened the contaminated one: now the id alone is refused, naming their idx, and `?idx=`
    picks one; the dashboard links by idx."""
    rows = [{**ROWS[0], "id": "dup"}, {**ROWS[1], "id": "dup"}]
    body = "".join(json.dumps(r) + "\n" for r in rows).encode()
    rid = client.post("/api/v1/benchmarks", files={"file": ("d.jsonl", body)}).json()["id"]
    assert wait_for_report(client, rid)["status"] == "done"
    ambiguous = client.get(f"/api/v1/reports/{rid}/items/dup")
    assert ambiguous.status_code == 422 and "several items" in ambiguous.text and "idx 0, 1)" in ambiguous.text
    first, second = (client.get(f"/api/v1/reports/{rid}/items/dup", params={"idx": k}).json() for k in (0, 1))
    assert (first["idx"], first["status"]) == (0, "contaminated")
    assert (second["idx"], second["status"]) == (1, "clean")
    assert client.get(f"/api/v1/reports/{rid}/items/dup", params={"idx": 5}).status_code == 404
    page = client.get("/items", params={"report": rid, "status": ["contaminated", "clean"]}).text
    assert f'/reports/{rid}/items/dup?idx=0"' in page and f'/reports/{rid}/items/dup?idx=1"' in page
    assert "Tides on the open ocean" in client.get(f"/reports/{rid}/items/dup", params={"idx": 1}).text


def test_a_report_counts_and_filters_the_passages_found(client: TestClient) -> None:
    """A passage field is looked for apart (passage_found): the summary counts the items with one
    and how many were found, and `field=passage` lists them (a new user's trial: passages found
    word for word showed in no summary, list or page)."""
    rows = [
        {"id": "p1", "passage": Q1, "question": "Name the river described above in one word.", "answer": "Tigris"},
        {"id": "p2", "passage": Q2, "question": "Name the body pulling hardest on the tides.", "answer": "moon"},
    ]
    body = "".join(json.dumps(r) + "\n" for r in rows).encode()
    rid = client.post("/api/v1/benchmarks", files={"file": ("rc.jsonl", body)}).json()["id"]
    rep = wait_for_report(client, rid)
    assert rep["summary"]["per_field"]["passage"] == {"items": 2, "found": 1, "found_share": 0.5}, rep["summary"]
    found = client.get(f"/api/v1/reports/{rid}/items", params={"field": "passage"}).json()
    assert [i["item_id"] for i in found["items"]] == ["p1"]
    # the page lists them whatever their status (a review: it kept its default of flagged items,
    # and a passage found never changes a status, so it said no item matched)
    page = client.get("/items", params={"report": rid, "field": "passage"})
    assert page.status_code == 200 and "/items/p1" in page.text and "/items/p2" not in page.text, page.text[-2000:]


def test_report_endpoints(client: TestClient) -> None:
    rid = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", _payloads()["b.jsonl"])}).json()["id"]
    rep = wait_for_report(client, rid)
    assert rep["fingerprint"] == SignatureConfig().fingerprint() and rep["thresholds"]["longest_match"] == 13
    # times say their zone on every backend (SQLite's came back naive: "2026-12-04T18:42:30.146108")
    for stamp in (rep["created_at"], rep["finished_at"]):
        assert datetime.fromisoformat(stamp).utcoffset() == timedelta(0), stamp
    assert rep["software_version"] and len(rep["file_hash"]) == 64 and rep["corpora"] == ["web"]
    assert rep["summary"]["per_corpus"]["web"]["contaminated"] == 1
    assert client.get("/api/v1/reports").json()["total"] == 1
    items = client.get(f"/api/v1/reports/{rid}/items", params={"status": "contaminated"}).json()
    assert [i["item_id"] for i in items["items"]] == ["q1"] and items["total"] == 1
    assert client.get(f"/api/v1/reports/{rid}/items", params={"q": "tides"}).json()["total"] == 1
    # a NUL in the search: SQLite's LIKE stopped at it and listed every item; PostgreSQL refused it
    for where, filters in ((f"/api/v1/reports/{rid}/items", {}), ("/items", {})):
        for asked in ({"q": "tides\x00"}, {"corpus": "web\x00"}):
            nul = client.get(where, params={**filters, **asked})
            assert nul.status_code == 422 and "NUL" in nul.text, (where, asked, nul.text[-300:])
    assert client.get(f"/api/v1/reports/{rid}/items", params={"corpus": "web"}).json()["total"] == 1
    assert client.get(f"/api/v1/reports/{rid}/items", params={"field": "question"}).json()["total"] == 1
    assert client.get(f"/api/v1/reports/{rid}/items", params={"min_score": 0.5}).json()["total"] == 1
    page = client.get(
        f"/api/v1/reports/{rid}/items", params={"sort": "row", "order": "asc", "page_size": 1, "page": 2}
    ).json()
    assert [i["item_id"] for i in page["items"]] == ["q2"]
    assert page["items"][0]["row"] == 1  # it was null, though the list sorts by row
    bogus = client.get(f"/api/v1/reports/{rid}/items", params={"status": "bogus"})
    assert bogus.status_code == 422 and "contaminated" in bogus.text  # it answered 200 with no items
    assert client.get("/items", params={"status": "bogus"}).status_code == 422  # the page listed every item
    no_field = client.get(f"/api/v1/reports/{rid}/items", params={"field": "bogus"})  # answered 0 items
    assert no_field.status_code == 422 and "question|choices|answer|solution" in no_field.text
    assert client.get("/items", params={"field": "bogus"}).status_code == 422  # the page as the API
    assert client.get("/items", params={"field": ""}).status_code == 200  # the form's "any"
    found = client.get(f"/api/v1/reports/{rid}/items", params={"field": "question"}).json()
    assert found["total"] >= 1 and all(it["question_found"] for it in found["items"])
    exp = client.get(f"/api/v1/reports/{rid}/export", params={"format": "jsonl"})
    assert exp.status_code == 200 and len(exp.text.splitlines()) == 2
    exp_csv = client.get(f"/api/v1/reports/{rid}/export", params={"format": "csv"})
    assert exp_csv.text.startswith("item_id,") and "contaminated" in exp_csv.text
    # named after the benchmark, as the clean subset is (it was report-<hex>.csv: a trial)
    named = exp_csv.headers["content-disposition"]
    assert re.search(r'filename="b\.results-[0-9a-f]{8}\.csv"', named), named
    exported = list(csv.DictReader(io.StringIO(exp_csv.text)))  # each item's words too (a new user's trial)
    questions = {
        r["item_id"]: client.get(f"/api/v1/reports/{rid}/items/{r['item_id']}").json()["item"]["question"]
        for r in exported
    }
    assert exported and all(questions[row["item_id"]] in row["text"] for row in exported)
    clean = client.get(f"/api/v1/reports/{rid}/clean")
    assert [json.loads(x)["id"] for x in clean.text.splitlines()] == ["q2"]
    assert "b.clean.jsonl" in clean.headers["content-disposition"]
    strict = client.get(f"/api/v1/reports/{rid}/clean", params={"drop_suspicious": "true"})
    assert 'filename="b.clean-unflagged.jsonl"' in strict.headers["content-disposition"]  # not the same name
    assert client.get("/api/v1/corpora").json()[0]["name"] == "web"
    assert client.get("/api/v1/corpora/web").json()["documents"] == 1
    assert client.delete(f"/api/v1/reports/{rid}").status_code == 204
    gone = client.get(f"/api/v1/reports/{rid}")
    assert gone.status_code == 404 and gone.json()["error"].startswith("no report")


def benchmark_of(body: dict) -> list:
    from contam.app.api.schemas import CheckRequest

    return CheckRequest.model_validate(body).benchmark_items()


def test_reports_and_checks_name_the_corpora_they_left_out(
    migrated_url: str, index_corpus: IndexCorpus, tmp_path: Path
) -> None:
    """Without `corpora`, an upload or a check is scored against the corpora of one set of settings:
    an upload checked against one corpus of two said 0 contaminated where the other (indexed with
    another n) held the items, and neither the report nor the check said a corpus was left out, as
    `contam scan` says it (a trial). Named corpora were chosen: nothing is said of the others."""
    index_corpus(migrated_url, [{"id": "web-page", "text": "Nothing of any benchmark is on this page at all."}])
    index_corpus(migrated_url, CORPUS, "n8", cfg=SignatureConfig(ngram_n=8))
    data = "".join(json.dumps(r) + "\n" for r in ROWS).encode()
    note = "left out (indexed with other settings; an upload or check naming them in `corpora` checks against them): n8"
    with TestClient(create_app(Settings(database_url=migrated_url, api_keys=""))) as c:
        rid = c.post("/api/v1/benchmarks", files={"file": ("b.jsonl", data)}).json()["id"]
        rep = wait_for_report(c, rid)
        assert rep["corpora"] == ["web"] and rep["summary"]["counts"]["contaminated"] == 0
        assert rep["summary"]["notes"] == [note], rep["summary"]["notes"]
        assert note in c.get(f"/reports/{rid}").text  # the dashboard's "Read with notes"
        named = c.post("/api/v1/benchmarks", files={"file": ("b.jsonl", data)}, data={"corpora": "n8"}).json()["id"]
        rep = wait_for_report(c, named)
        assert rep["summary"]["counts"]["contaminated"] == 1 and rep["summary"]["notes"] == []
        checked = c.post("/api/v1/check", json={"texts": [Q1]}).json()
        assert checked["corpora"] == ["web"] and checked["notes"] == [note]
        CheckResponse.model_validate(checked)
        assert c.post("/api/v1/check", json={"texts": [Q1], "corpora": ["n8"]}).json()["notes"] == []
    import contam

    # in the Python API's terms: it was told of uploads and checks (a review)
    python = "left out (indexed with other settings; a scan naming them in `corpora` checks against them): n8"
    with contam.Index(migrated_url) as index, pytest.warns(UserWarning, match=r"left out \(indexed with other"):
        assert index.scan([Q1]).summary["notes"] == [python]
    bench = tmp_path / "b.jsonl"
    bench.write_bytes(data)
    with contam.Index(migrated_url) as index:
        with pytest.warns(UserWarning) as said:
            index.scan_file(bench)
        assert python in [str(w.message) for w in said]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            index.scan_file(bench, corpora="n8")


def test_a_report_notes_the_corpora_left_out_when_submitted(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """A report's notes of the corpora left out are decided when the upload chooses its corpora:
    decided at the job's end, by comparing the report's corpora with the default choice then, an
    upload that named exactly the default corpora was told of the others, as if it had named none
    (a check naming them is told nothing), and a corpus indexed while a report was queued made the
    note of one left out go."""
    index_corpus(migrated_url, [{"id": "web-page", "text": "Nothing of any benchmark is on this page at all."}])
    index_corpus(migrated_url, CORPUS, "n8", cfg=SignatureConfig(ngram_n=8))
    data = "".join(json.dumps(r) + "\n" for r in ROWS).encode()
    note = "left out (indexed with other settings; an upload or check naming them in `corpora` checks against them): n8"
    engine = make_engine(migrated_url)
    try:
        svc = ReportService(engine, 1 << 20)
        named = svc.submit(data, "b.jsonl", corpora=["web"], background=False)
        assert svc.get(named)["corpora"] == ["web"] and svc.get(named)["summary"]["notes"] == []
        svc._enqueue = lambda rid: None  # type: ignore[method-assign]  # queued, run below
        queued = svc.submit(data, "b.jsonl")
        index_corpus(migrated_url, [{"id": "later", "text": "Indexed while the report was queued."}], "web2")
        svc.run(queued)
        assert svc.get(queued)["corpora"] == ["web"] and svc.get(queued)["summary"]["notes"] == [note]
    finally:
        engine.dispose()


def test_check_endpoint(client: TestClient) -> None:
    r = client.post("/api/v1/check", json={"texts": [Q1, "Is ice cold?"], "items": [{"id": "x", "question": Q2}]})
    assert r.status_code == 200
    res = {x["item_id"]: x for x in r.json()["results"]}
    assert res["0"]["status"] == "contaminated" and res["1"]["status"] == "too_short"
    assert res["x"]["status"] == "clean"
    bad = client.post("/api/v1/check", json={"texts": []})
    assert bad.status_code == 422 and "at least one" in bad.json()["error"]
    # a body that is not JSON: 400 saying where the parser stopped (422 "JSON decode error" at "29")
    broken = client.post(
        "/api/v1/check", content=b'{"texts": ["a"] "items": []}', headers={"content-type": "application/json"}
    )
    assert broken.status_code == 400, broken.text
    assert broken.json()["error"] == "the request body is not valid JSON: Expecting ',' delimiter at character 16"
    # a body that is not UTF-8 says so, as an upload does ("There was an error parsing the body": a trial)
    latin = client.post(
        "/api/v1/check",
        content='{"texts": ["caf\u00e9"]}'.encode("latin-1"),
        headers={"content-type": "application/json"},
    )
    assert latin.status_code == 400, latin.text
    assert latin.json()["error"].startswith("the request body is not UTF-8 text (invalid byte at position 15)")
    # a key the request does not have is refused, not dropped: `corpus` checked every corpus,
    # and an item's `Question` left it with no text (too_short)
    wrong = client.post("/api/v1/check", json={"texts": [Q1], "corpus": ["c"]})
    assert wrong.status_code == 422 and "corpus: not a field this request takes" in wrong.json()["error"]
    said = client.post("/api/v1/check", json={"items": [{"Question": Q1}]}).json()["error"]
    assert said.startswith("invalid request: items.0.Question: not a field of an item (an item's fields: id, question,")
    # a chat item is told what an item holds and where such rows are read (a new user's trial)
    chat = client.post("/api/v1/check", json={"items": [{"messages": [{"role": "user", "content": Q1}]}]})
    assert chat.status_code == 422 and "items.0.messages: not a field of an item" in chat.json()["error"]
    assert chat.json()["error"].endswith("(chat messages, say) are read as a benchmark file's: POST /api/v1/benchmarks")
    past = client.post("/api/v1/check", json={"items": [{"question": Q1, "choices": ["Nile", "Tigris"], "answer": 7}]})
    assert past.status_code == 422 and "items[0]: answer 7 is not an index into its 2 choice(s)" in past.text
    # a string of digits is an index too, as a benchmark file's reader takes it (it was the text "1")
    item = {"question": Q1, "choices": ["Nile", "Tigris"], "answer": "1"}
    assert client.post("/api/v1/check", json={"items": [item]}).status_code == 200
    assert benchmark_of({"items": [item]})[0].answer == "Tigris"
    past = client.post("/api/v1/check", json={"items": [item | {"answer": "7"}]})
    assert past.status_code == 422 and "items[0]: answer 7 is not an index" in past.text
    # a letter names a choice by its place, as a file's reader takes it: "B" was the answer text "B",
    # which no copy gives, so a copy with its answer read as one without (a new user's trial)
    assert benchmark_of({"items": [item | {"answer": "b"}]})[0].answer == "Tigris"
    assert benchmark_of({"items": [{"question": Q1, "choices": ["B", "A"], "answer": "A"}]})[0].answer == "A"
    past = client.post("/api/v1/check", json={"items": [item | {"answer": "C"}]})
    assert past.status_code == 422 and "items[0]: answer 'C' is not the letter of one of its 2 choice(s)" in past.text
    many = client.post("/api/v1/check", json={"items": [item | {"answer": "7" * 5000}]})  # int() refuses it: a 500
    assert many.status_code == 200
    # a worked solution ending in its final answer is read as a file's is (the answer "72" beside it)
    gsm = benchmark_of({"items": [{"question": Q1, "answer": "48/2 = 24 in May.\n#### 72"}]})[0]
    assert (gsm.answer, gsm.solution) == ("72", "48/2 = 24 in May.")
    # other accepted answers, as a file's lists and aliases give them (at most 32)
    alias = {"question": Q1, "answer": "Sunset Boulevard", "alternatives": ["Sunset Blvd", "", "Sunset Boulevard"]}
    assert benchmark_of({"items": [alias]})[0].alternatives == ("Sunset Blvd",)
    many = client.post("/api/v1/check", json={"items": [alias | {"alternatives": ["x"] * 33}]})
    assert many.status_code == 422
    # the answer, built by the worker that scored it, is what the declared model says it is
    body = r.json()
    assert CheckResponse.model_validate(body).model_dump(mode="json") == body


def test_checks_are_scored_in_worker_processes_that_come_back(client: TestClient) -> None:
    """/check requests are scored in check workers (processes of their own, so the server's one
    interpreter does not score them); a worker that dies fails its request with a 503 naming
    what happened, and the next request is answered by a new one."""
    pool = client.app.state.checks.pool  # type: ignore[attr-defined]
    assert pool is not None
    first = client.post("/api/v1/check", json={"texts": [Q1]})
    assert first.status_code == 200 and first.json()["results"][0]["status"] == "contaminated"
    workers = list(pool._pool._processes.values())
    assert workers and all(w.pid != os.getpid() for w in workers)
    for w in workers:
        w.kill()
        w.join()
    lost = client.post("/api/v1/check", json={"texts": [Q1]})
    assert lost.status_code == 503 and "stopped" in lost.json()["error"]
    again = client.post("/api/v1/check", json={"texts": [Q1]})
    assert again.status_code == 200 and again.json() == first.json()


def test_check_requests_take_no_thread_of_the_server() -> None:
    """FastAPI runs a plain `def` dependency or endpoint in its thread pool: a thread hand-off
    each. /check's dependencies and endpoint are coroutines, so the server's own work on a
    request is the event loop's (its CPU a request fell by a third: README, /check)."""
    import inspect

    from contam.app.api import deps
    from contam.app.api.routes import check

    providers = [f for name, f in vars(deps).items() if name.startswith(("get_", "require_")) and callable(f)]
    assert providers and all(inspect.iscoroutinefunction(f) for f in providers)
    assert inspect.iscoroutinefunction(check.check)


@pytest.mark.parametrize(
    ("name", "body", "message"),
    [
        ("b.jsonl", b"", "empty"),
        ("b.jsonl", b'{"question": "ok"}\n{"question": broken\n', "line 2 is not valid JSON (column 14: "),
        # a line cut short mid-string: the end of its data, not its newline, is what is wrong
        ("b.jsonl", b'{"question": "ok"}\n{"question": "cut\n', "line 2 is not valid JSON (column 18: unexpected end"),
        ("b.jsonl", '{"question": "caf\u00e9"}\n'.encode("latin-1"), "not UTF-8"),
        ("b.xlsx", b"whatever", "unsupported benchmark file type"),
        ("b.jsonl", b'{"colour": "red"}\n', "no question field"),
        ("b.json", b'{"a": 1}', "exactly one array"),
        ("b.jsonl.gz", b"not gzip at all", "cannot decompress"),
        # cut short: said so, with what to do (a new user's trial: the EOFError's words alone)
        ("b.jsonl.gz", gzip.compress(b'{"question": "what is it"}\n' * 400)[:60], "the file is cut short"),
        (
            "b.jsonl.zst",
            zstandard.ZstdCompressor().compress(b'{"question": "what is it"}\n' * 400)[:30],
            "is cut short",
        ),
        ("b.parquet", b"PAR1 garbage", "not a readable Parquet"),
        ("b.csv", b"question,answer\nwhat,yes,extra\n", "row 2 has more columns"),
    ],
)
def test_bad_uploads(client: TestClient, name: str, body: bytes, message: str) -> None:
    r = client.post("/api/v1/benchmarks", files={"file": (name, body)})
    assert r.status_code == 422, r.text
    assert message in r.json()["error"]
    assert client.get("/api/v1/reports").json()["total"] == 0  # nothing half-written


def test_bad_mapping_corpus_and_limit(client: TestClient, migrated_url: str) -> None:
    data = _payloads()["b.jsonl"]
    r = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", data)}, data={"mapping": '{"query": "x"}'})
    assert r.status_code == 422 and "unknown role" in r.json()["error"]
    # which of the form's JSON fields is wrong is said (it said "mapping and thresholds must be ...")
    r = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", data)}, data={"mapping": "question=q"})
    assert r.status_code == 422 and r.json()["error"].startswith("mapping is not JSON"), r.json()
    r = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", data)}, data={"thresholds": "min_bits=4"})
    assert r.status_code == 422 and r.json()["error"].startswith("thresholds: "), r.json()
    r = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", data)}, data={"corpora": "missing"})
    assert r.status_code == 404 and "no corpus named 'missing'" in r.json()["error"]
    # an override is honoured: the item's question is read from the field named, not the one detected
    rows = [{**ROWS[0], "prompt": Q2}]
    body = "".join(json.dumps(row) + "\n" for row in rows).encode()
    r = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", body)}, data={"mapping": '{"question": "prompt"}'})
    assert r.status_code == 202, r.text
    rep = wait_for_report(client, r.json()["id"])
    assert rep["status"] == "done" and rep["mapping"]["question"] == "prompt", rep
    item = client.get(f"/api/v1/reports/{rep['id']}/items/q1").json()
    assert item["item"]["question"] == Q2 and item["status"] == "clean", item  # Q1, the corpus holds; Q2, it does not
    small = create_app(Settings(database_url=migrated_url, max_upload_mb=0.0001))
    with TestClient(small) as c:
        big = c.post("/api/v1/benchmarks", files={"file": ("b.jsonl", data * 10)})
        assert big.status_code == 413 and "exceeds the limit" in big.json()["error"]
        assert "MiB" in big.json()["error"]  # limits are set and shown in MiB


def test_corpora_indexed_with_other_settings_are_a_conflict(
    client: TestClient, migrated_url: str, index_corpus: IndexCorpus
) -> None:
    """Checking corpora indexed with different signature settings together is a 409, not a 422."""
    index_corpus(migrated_url, [{"id": "x", "text": Q2}], "other", cfg=SignatureConfig(ngram_n=7))
    data = _payloads()["b.jsonl"]
    r = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", data)}, data={"corpora": "web,other"})
    assert r.status_code == 409 and "different signature settings" in r.json()["error"]
    r = client.post("/api/v1/check", json={"texts": [Q1], "corpora": ["web", "other"]})
    assert r.status_code == 409
    # the field once per name, as a form of checkboxes sends it, and one name as a string (both were 422s:
    # a new user's trial)
    r = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", data)}, data={"corpora": ["web", "other"]})
    assert r.status_code == 409 and "different signature settings" in r.json()["error"]
    one = client.post("/api/v1/check", json={"texts": [Q1], "corpora": "web"})
    assert one.status_code == 200 and one.json()["corpora"] == ["web"], one.text


def test_defaults_beside_other_corpora_and_refusals_name_their_cause(
    client: TestClient, migrated_url: str, index_corpus: IndexCorpus
) -> None:
    """Without `corpora`, /check and uploads use the corpora whose settings match (a corpus
    with other settings once made every default request a 409); a corpus with no documents is
    a 409 naming it; an unknown threshold name is refused, not ignored; the mapping a report
    used is stored with it."""
    index_corpus(migrated_url, [{"id": "x", "text": Q2}], "other", cfg=SignatureConfig(ngram_n=7))
    index_corpus(migrated_url, [{"id": "y", "body": Q2}], "empty")  # no `text` field: no documents
    r = client.post("/api/v1/check", json={"texts": [Q1]})
    assert (
        r.status_code == 200 and r.json()["corpora"] == ["web"] and r.json()["results"][0]["status"] == "contaminated"
    )
    both = client.post("/api/v1/check", json={"texts": [Q1], "corpora": ["web", "other"]}).json()["error"]
    assert "other (ngram_n=7); web (the default settings)" in both  # the 409 names each corpus and its settings
    empty = client.post("/api/v1/check", json={"texts": [Q1], "corpora": ["empty"]})
    assert empty.status_code == 409 and "'empty'" in empty.json()["error"] and "0 documents" in empty.json()["error"]
    typo = client.post("/api/v1/check", json={"texts": [Q1], "thresholds": {"longest_mach": 20}})
    assert typo.status_code == 422 and "unknown threshold 'longest_mach' (did you mean longest_match?)" in typo.text
    # the upload form's thresholds alike (it said "Extra inputs are not permitted": a new user)
    form = {"thresholds": json.dumps({"longest_matc": 3})}
    up = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", _payloads()["b.jsonl"])}, data=form)
    assert up.status_code == 422, up.text
    assert up.json()["error"] == "thresholds: unknown threshold 'longest_matc' (did you mean longest_match?)"
    # every problem said, not the first alone, and a name as it was given (a review)
    form = {"thresholds": json.dumps({"max_{df}": 3, "contaminated_coverage": 5, "longest_matc": 3})}
    up = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", _payloads()["b.jsonl"])}, data=form)
    said = up.json()["error"]
    assert "unknown threshold 'max_{df}' (did you mean max_df?)" in said and "'longest_matc'" in said, said
    assert "contaminated_coverage: Input should be less than or equal to 1" in said, said
    rid = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", _payloads()["b.jsonl"])}).json()["id"]
    rep = wait_for_report(client, rid)
    assert (
        rep["corpora"] == ["web"] and rep["mapping"]["question"] == "question" and rep["mapping"]["answer"] == "answer"
    )


def test_api_keys(migrated_url: str, index_corpus: IndexCorpus) -> None:
    index_corpus(migrated_url, CORPUS)
    with TestClient(create_app(Settings(database_url=migrated_url, api_keys="k1,k2"))) as c:
        assert c.get("/health").status_code == 200
        r = c.get("/api/v1/reports")
        assert r.status_code == 401 and "API key" in r.json()["error"]
        assert c.get("/api/v1/reports", headers={"Authorization": "Bearer nope"}).status_code == 401
        assert c.get("/api/v1/reports", headers={"Authorization": "Bearer k2"}).status_code == 200


def test_interrupted_job_resumes_on_restart(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """A server that died mid-job leaves a 'running' report; the next start finishes it."""
    index_corpus(migrated_url, CORPUS)
    eng = make_engine(migrated_url)
    svc = ReportService(eng, Settings().max_upload_bytes)
    rid = svc.submit(_payloads()["b.jsonl"], "b.jsonl", background=False)
    with eng.begin() as conn:  # roll the report back to the state a crash leaves behind
        rrepo.delete_items(conn, rid)
        rrepo.set_status(conn, rid, "running", summary=None, done_items=0)
    svc.shutdown()
    eng.dispose()
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        assert c.get(f"/api/v1/reports/{rid}").json()["status"] in ("queued", "running", "done")
        rep = wait_for_report(c, rid)
        assert rep["status"] == "done" and rep["summary"]["counts"]["contaminated"] == 1
        assert c.get(f"/api/v1/reports/{rid}/items").json()["total"] == 2


def test_failing_job_is_marked_failed_with_its_reason(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    real = scanning.Scanner.scan_stream

    def broken(self, source, progress=None, workers=None, reading=None):  # type: ignore[no-untyped-def]
        yield next(real(self, source, progress, workers, reading))  # a first chunk is written, then the job fails
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(scanning, "FIRST_CHUNKS", (1,))
    monkeypatch.setattr(scanning.Scanner, "scan_stream", broken)
    rid = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", _payloads()["b.jsonl"])}).json()["id"]
    rep = wait_for_report(client, rid)
    assert rep["status"] == "failed" and rep["error"] == "RuntimeError: disk on fire"
    assert client.get(f"/api/v1/reports/{rid}/items").json()["total"] == 0  # nothing half-written
    export = client.get(f"/api/v1/reports/{rid}/export")
    assert export.status_code == 409  # a state (it was 422); a failed report never becomes done (a new user's trial)
    assert "failed (RuntimeError: disk on fire): it has no results to export; upload the" in export.json()["error"]


def test_docs_page_is_served_without_a_cdn(client: TestClient) -> None:
    page = client.get("/docs").text
    assert "/static/swagger/swagger-ui-bundle.js" in page and "cdn" not in page.lower()
    assert client.get("/static/swagger/swagger-ui-bundle.js").status_code == 200


def test_openapi_lists_every_route(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for p in [
        "/api/v1/benchmarks",
        "/api/v1/check",
        "/api/v1/reports",
        "/api/v1/reports/{report_id}",
        "/api/v1/reports/{report_id}/items",
        "/api/v1/reports/{report_id}/items/{item_id}",
        "/api/v1/reports/{report_id}/export",
        "/api/v1/reports/{report_id}/clean",
        "/api/v1/corpora",
        "/health",
    ]:
        assert p in paths, p


def test_openapi_says_what_the_downloads_are(client: TestClient) -> None:
    """The export and the clean subset were documented as answering application/json too (FastAPI's
    default response class), which they never do: a client generated from the schema parsed a CSV
    or a Parquet file as JSON (a trial). Each now lists only the types it sends."""
    paths = client.get("/openapi.json").json()["paths"]
    downloads = [p for p in paths if p.endswith(("/export", "/clean"))]
    answers = {p: set(paths[p]["get"]["responses"]["200"]["content"]) for p in downloads}
    assert answers == {
        "/api/v1/reports/{report_id}/export": {"application/x-ndjson", "text/csv"},
        "/api/v1/reports/{report_id}/clean": {"application/octet-stream"},
    }


def test_delete_a_corpus(client: TestClient, migrated_url: str, index_corpus: IndexCorpus) -> None:
    """Once a corpus with other settings blocked every default upload; now it can go, except
    while a job uses it (409)."""
    index_corpus(migrated_url, [{"id": "x", "text": Q2}], "other", cfg=SignatureConfig(ngram_n=7))
    data = _payloads()["b.jsonl"]
    rid = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", data)}).json()["id"]
    assert wait_for_report(client, rid)["corpora"] == ["web"]  # by default the corpora with the default settings
    engine = make_engine(migrated_url)
    with engine.begin() as conn:
        rrepo.set_status(conn, rid, "running")
    busy = client.delete("/api/v1/corpora/web")
    assert busy.status_code == 409 and "while a report job uses it" in busy.json()["error"]
    with engine.begin() as conn:
        rrepo.set_status(conn, rid, "done")
    engine.dispose()
    assert client.delete("/api/v1/corpora/web").status_code == 204
    assert client.delete("/api/v1/corpora/web").status_code == 404
    assert [c["name"] for c in client.get("/api/v1/corpora").json()] == ["other"]
    r = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", data)})
    assert r.status_code == 202 and wait_for_report(client, r.json()["id"])["corpora"] == ["other"]


def test_dashboard_downloads_work_for_a_signed_in_user(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """With API keys on, the report page's download links (API GETs) once answered 401 to a
    user signed in to the dashboard; the sign-in cookie now serves reads, never writes."""
    index_corpus(migrated_url, CORPUS)
    with TestClient(create_app(Settings(database_url=migrated_url, api_keys="k1"))) as c:
        auth = {"Authorization": "Bearer k1"}
        created = c.post("/api/v1/benchmarks", files={"file": ("b.jsonl", _payloads()["b.jsonl"])}, headers=auth)
        assert created.status_code == 202
        rid = created.json()["id"]
        assert created.headers["location"] == f"/api/v1/reports/{rid}"  # a 202 says where to follow it
        assert wait_for_report(c, rid, headers=auth)["status"] == "done"
        links = [f"/api/v1/reports/{rid}/export?format=jsonl", f"/api/v1/reports/{rid}/export?format=csv"]
        links += [f"/api/v1/reports/{rid}/clean", f"/api/v1/reports/{rid}/clean?drop_suspicious=true"]
        assert all(c.get(u).status_code == 401 for u in links)  # not signed in
        assert c.post("/login", data={"key": "k1", "next": f"/reports/{rid}"}).status_code == 200
        page = c.get(f"/reports/{rid}").text
        assert all(u.replace("&", "&amp;") in page or u in page for u in links)
        assert [c.get(u).status_code for u in links] == [200, 200, 200, 200]
        write = c.post("/api/v1/benchmarks", files={"file": ("b.jsonl", _payloads()["b.jsonl"])})
        assert write.status_code == 401 and c.delete(f"/api/v1/reports/{rid}").status_code == 401


def test_the_clean_subset_drops_suspicious_items_only_when_asked(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """The clean subset leaves out the contaminated items; `drop_suspicious=true` the suspicious ones
    too (the report page's link to it was only checked to answer 200)."""
    copied = ("Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?", "Tigris")
    asked = (
        "Why do migrating birds fly in a V shaped formation over long distances during autumn months?",
        "Flying in formation reduces air drag for the birds that follow the leader",
    )
    corpus = [
        {"id": "quiz", "text": f"Quiz night! {copied[0]} Answer: {copied[1]}."},  # question and answer
        {"id": "forum", "text": f"Forum post: {asked[0]} I never knew."},  # the question alone
    ]
    index_corpus(migrated_url, corpus)
    rows = [("copied", *copied), ("asked", *asked), ("fresh", Q2, "the moon")]
    body = "".join(json.dumps({"id": i, "question": q, "answer": a}) + "\n" for i, q, a in rows).encode()
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rid = c.post("/api/v1/benchmarks", files={"file": ("b.jsonl", body)}).json()["id"]
        assert wait_for_report(c, rid)["status"] == "done"
        items = c.get(f"/api/v1/reports/{rid}/items").json()["items"]
        assert {it["item_id"]: it["status"] for it in items} == {
            "copied": "contaminated",
            "asked": "suspicious",
            "fresh": "clean",
        }
        kept = c.get(f"/api/v1/reports/{rid}/clean")
        assert [json.loads(x)["id"] for x in kept.text.splitlines()] == ["asked", "fresh"]
        strict = c.get(f"/api/v1/reports/{rid}/clean", params={"drop_suspicious": "true"})
        assert [json.loads(x)["id"] for x in strict.text.splitlines()] == ["fresh"]


def test_swagger_example_bodies_work(client: TestClient) -> None:
    """Swagger UI's "Try it out" body once named a corpus "string" and answered 404."""
    spec = client.get("/openapi.json").json()
    examples = spec["paths"]["/api/v1/check"]["post"]["requestBody"]["content"]["application/json"]["examples"]
    assert set(examples) == {"texts", "items"}
    for ex in examples.values():
        r = client.post("/api/v1/check", json=ex["value"])
        assert r.status_code == 200, r.text


def test_an_upload_sent_wrongly_is_told_what_is_wrong(client: TestClient) -> None:
    """A new user's trial: a JSON body or the raw file (application/octet-stream, x-ndjson) got
    422 "Field required" for `file`, as did a file sent as `upload`; two files in `file` were
    taken as the second, silently. Each is now refused naming the problem, and nothing is made."""
    data = _payloads()["b.jsonl"]
    # curl --data-binary @b.jsonl sends the raw file as a urlencoded form: its text was a field name
    sent = (("application/json", b'{"question": "x"}'), ("application/octet-stream", data))
    for ctype, body in (*sent, ("application/x-www-form-urlencoded", data)):
        r = client.post("/api/v1/benchmarks", content=body, headers={"content-type": ctype})
        assert r.status_code == 415 and "multipart/form-data" in r.json()["error"], r.text
        assert "-F file=@FILE" in r.json()["error"] and ctype in r.json()["error"]
    r = client.post("/api/v1/benchmarks", files={"upload": ("b.jsonl", data)})
    assert r.status_code == 422 and r.json()["error"].startswith("unknown form field upload: this takes file, name")
    two = [("file", ("b.jsonl", data)), ("file", ("c.jsonl", data))]
    with warnings.catch_warnings(record=True) as said:  # the refused form's spooled files closed (a review)
        warnings.simplefilter("always")
        r = client.post("/api/v1/benchmarks", files=two)
        gc.collect()
    assert r.status_code == 422 and "form field file given more than once" in r.json()["error"]
    assert not [w for w in said if issubclass(w.category, ResourceWarning)], [str(w.message) for w in said]
    # a body cut off inside its file part (no closing boundary) lost the part: "Field required"
    head = b'--b0\r\nContent-Disposition: form-data; name="file"; filename="b.jsonl"\r\n\r\n'
    cut = client.post(
        "/api/v1/benchmarks", content=head + data, headers={"content-type": "multipart/form-data; boundary=b0"}
    )
    assert cut.status_code == 422 and cut.json()["error"].startswith(
        "the upload holds no complete file part named `file`"
    )
    assert "cut off before the part's closing boundary" in cut.json()["error"]
    assert client.get("/api/v1/reports").json()["total"] == 0
    ok = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", data)}, data={"name": "quiz"})
    assert ok.status_code == 202, ok.text


def test_check_takes_null_as_a_field_not_sent() -> None:
    """`"passage": null` (a client writing every optional field) was a 422, "Input should be a valid
    string", while `"id": null` was taken as no id; a null is now the field left out, and a key the
    request does not have is still refused, null or not (a new user's trial)."""
    from contam.app.api.schemas import CheckRequest

    nulls = {"id": None, "passage": None, "choices": None, "answer": None, "solution": None, "alternatives": None}
    item = benchmark_of({"items": [{"question": Q1, **nulls}], "texts": None, "thresholds": None, "corpora": None})[0]
    plain = benchmark_of({"items": [{"question": Q1}]})[0]
    assert item == plain
    with pytest.raises(ValidationError, match="not a field this request takes|Extra inputs"):
        CheckRequest.model_validate({"items": [{"question": Q1, "Passage": None}]})
    # a threshold sent as null takes its default, as a field does (a review); an unknown one is still refused
    nested = CheckRequest.model_validate({"items": [{"question": Q1}], "thresholds": {"min_bits": None}})
    assert nested.thresholds == CheckRequest.model_validate({"items": [{"question": Q1}]}).thresholds
    with pytest.raises(ValidationError):
        CheckRequest.model_validate({"items": [{"question": Q1}], "thresholds": {"min_bitz": None}})
    with pytest.raises(ValidationError):
        CheckRequest.model_validate({"items": [{"question": Q1}], "corpus": None})
    # an integer id is its digits, as an uploaded file's is read (it was a 422: a trial); not a bool
    assert benchmark_of({"items": [{"id": 7, "question": Q1}]})[0].item_id == "7"
    with pytest.raises(ValidationError):
        CheckRequest.model_validate({"items": [{"id": True, "question": Q1}]})


def test_a_query_parameter_a_route_does_not_take_is_refused(client: TestClient) -> None:
    """`?stauts=clean&pagesize=3` gave every item, 50 a page, and `/reports?page_size=2` every
    report, as if nothing had been asked (a new user's trial), where a JSON body's unknown key is
    refused: each API route now refuses a query parameter it does not take, naming the nearest."""
    rid = client.post("/api/v1/benchmarks", files={"file": ("b.jsonl", _payloads()["b.jsonl"])}).json()["id"]
    wait_for_report(client, rid)
    r = client.get(f"/api/v1/reports/{rid}/items?stauts=clean&pagesize=3")
    assert r.status_code == 422, r.text
    said = r.json()["error"]
    assert said.startswith("unknown query parameters pagesize, stauts: this takes status, min_score") and (
        "(did you mean page_size, status?)" in said
    ), said
    r = client.get("/api/v1/reports?page_size=2")
    assert r.status_code == 422 and "this takes limit, offset" in r.json()["error"], r.text
    assert client.get("/api/v1/reports?limit=2&offset=0").status_code == 200
    ok = client.get(f"/api/v1/reports/{rid}/items?status=clean&page_size=3&sort=row")
    assert ok.status_code == 200 and ok.json()["page_size"] == 3
    items = ok.json()["items"]
    one = client.get(f"/api/v1/reports/{rid}/items/{items[0]['item_id']}?idx={items[0]['idx']}")
    assert one.status_code == 200, one.text
    assert client.get(f"/api/v1/reports/{rid}?verbose=1").status_code == 422
    # a one-value parameter given twice was taken as its last value, silently; status may repeat
    twice = client.get(f"/api/v1/reports/{rid}/items?sort=score&sort=row&page=1&page=2")
    assert twice.status_code == 422, twice.text
    said = "query parameter page, sort given more than once: give it once (only status may be repeated)"
    assert twice.json()["error"] == said
    assert client.get(f"/api/v1/reports/{rid}/items?status=clean&status=suspicious").status_code == 200
    assert client.get(f"/api/v1/reports/{rid}/export?format=csv&format=jsonl").status_code == 422
