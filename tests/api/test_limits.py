"""Limits under hostile input: bombs, huge texts and bodies, deep JSON, and the inputs that once
answered 500. Every refusal is a 413 or 422 that names what was refused."""

from __future__ import annotations

import bz2
import contextlib
import gc
import gzip
import io
import json
import lzma
import os
import time
import tracemalloc
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import zstandard
from conftest import IndexCorpus
from fastapi.testclient import TestClient
from helpers import wait_for_report
from hypothesis import given, settings
from hypothesis import strategies as st

from contam.app.api.main import create_app
from contam.app.api.routes.reports import attachment
from contam.app.core.units import as_mib
from contam.app.errors import InputError, LimitError
from contam.app.limits import Limits, exceeded
from contam.app.readers.benchmark import read_benchmark, read_records
from contam.app.settings import Settings

Q1 = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
ROW = {"id": "q1", "question": Q1, "answer": "Tigris"}
JSONL = (json.dumps(ROW) + "\n").encode()
COMPRESS = {
    ".gz": gzip.compress,
    ".zst": lambda b: zstandard.ZstdCompressor(level=19).compress(b),
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
}


def _app(tmp_path: Path, **limits: object) -> TestClient:
    return TestClient(create_app(Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}", **limits)))  # type: ignore[arg-type]


@pytest.fixture
def small(tmp_path: Path) -> Iterator[TestClient]:
    """A server with small limits (no corpus: every limit is checked before the corpora are)."""
    settings = {"max_decompressed_mb": 1, "max_items": 3, "max_item_chars": 500, "max_check_chars": 2000}
    settings["max_check_items"] = 5
    with _app(tmp_path, **settings, max_csv_field_chars=1000, max_json_depth=8, max_upload_mb=1) as c:
        yield c


def _upload(c: TestClient, filename: str, data: bytes, **form: str) -> tuple[int, str]:
    r = c.post("/api/v1/benchmarks", files={"file": (filename, data)}, data=form)
    return r.status_code, r.json()["error"]


def _finished_report(c: TestClient, filename: str, data: bytes) -> str:
    """The id of the report of an upload, once it is done (or failed)."""
    r = c.post("/api/v1/benchmarks", files={"file": (filename, data)})
    assert r.status_code == 202, r.text
    rid: str = r.json()["id"]
    wait_for_report(c, rid)
    return rid


def _bomb(size: int) -> bytes:
    """`size` bytes of JSONL that compress to almost nothing: one item, then blank lines."""
    return JSONL + b" " * size


@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_compressed_bomb_is_refused_at_the_decompressed_limit(small: TestClient, suffix: str) -> None:
    packed = COMPRESS[suffix](_bomb(8 << 20))
    assert len(packed) < 64 << 10  # a small upload, far under the upload limit
    code, error = _upload(small, f"b.jsonl{suffix}", packed)
    assert code == 413 and "CONTAM_MAX_DECOMPRESSED_MB" in error and "1.0 MiB" in error


def test_a_bomb_is_counted_while_inflating_never_inflated_first() -> None:
    """A 256 MiB gzip bomb refused at a 4 MiB limit keeps Python's memory to a few MiB."""
    packed = gzip.compress(_bomb(256 << 20), compresslevel=1)
    tracemalloc.start()
    try:
        with pytest.raises(LimitError, match="CONTAM_MAX_DECOMPRESSED_MB"):
            list(read_records(packed, "b.jsonl.gz", Limits(decompressed_bytes=4 << 20)))
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak


@pytest.mark.parametrize("name", ["b.jsonl.gz", "b.csv.gz", "b.json.gz"])
def test_a_long_line_is_refused_while_it_is_read(name: str) -> None:
    """A JSON lines benchmark's line was read whole before any limit was asked: one line of
    189 MB (184 KB gzipped) took the server to 1.2 GB (a probe). It is refused as it is read,
    past CONTAM_MAX_LINE_MB, in a few MiB; a CSV's line too, and a .json file of JSON lines."""
    good = json.dumps({"id": "a", "question": "fine"}) + "\n"
    long = json.dumps({"id": "x", "question": "ab " * (16 << 20)}) + "\n"
    if name.startswith("b.csv"):
        good, long = "id,question\na,fine\n", "x," + "ab " * (16 << 20) + "\n"
    packed = gzip.compress((good + long + good).encode(), compresslevel=1)
    tracemalloc.start()
    try:
        with pytest.raises(LimitError, match=r"line \d+ exceeds the limit of 1.0 MiB \(CONTAM_MAX_LINE_MB\)"):
            read_benchmark(packed, name, limits=Limits(line_bytes=1 << 20))
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 24 << 20, peak
    fits = json.dumps({"id": "y", "question": "a " * 50_000, "other": "b" * ((1 << 20) - 100_050)}) + "\n"
    assert len(fits) <= 1 << 20  # a line just under the limit is read
    first = json.dumps({"id": "a", "question": "fine"}) + "\n"
    assert len(read_benchmark((first + fits).encode(), "b.jsonl", limits=Limits(line_bytes=1 << 20))[0]) == 2


def test_item_count_is_limited(small: TestClient) -> None:
    code, error = _upload(small, "b.jsonl.gz", gzip.compress(JSONL * 4))
    assert code == 413 and "CONTAM_MAX_ITEMS" in error


def test_items_per_check_are_a_setting_s_limit(small: TestClient) -> None:
    """/check's 1,000 items were a constant answered 422, where every other limit is a setting
    whose refusal is a 413 naming it (a REST user's trial): CONTAM_MAX_CHECK_ITEMS counts texts
    and items together."""
    texts = [Q1, "Is ice cold?"]
    fits = small.post("/api/v1/check", json={"texts": texts, "items": [{"question": Q1}] * 3})
    assert fits.status_code == 404 and "no corpus" in fits.json()["error"]  # counted, not refused: nothing indexed
    r = small.post("/api/v1/check", json={"texts": texts, "items": [{"question": Q1}] * 4})
    said = r.json()["error"]
    # "the check's 6 texts and items ... exceeds" (a trial): the number is what exceeds
    assert r.status_code == 413 and said == (
        "the number of texts and items in the check, 6, (upload a benchmark for more) exceeds the limit of 5 "
        "(CONTAM_MAX_CHECK_ITEMS)"
    ), said


def test_text_per_item_is_limited_naming_item_and_field(small: TestClient) -> None:
    rows = JSONL + (json.dumps({"id": "big", "question": "x " * 400}) + "\n").encode()
    code, error = _upload(small, "b.jsonl", rows)
    assert code == 413 and "CONTAM_MAX_ITEM_CHARS" in error and "'big'" in error and "question" in error
    r = small.post("/api/v1/check", json={"items": [{"question": Q1, "answer": "y" * 501}]})
    assert r.status_code == 413 and "CONTAM_MAX_ITEM_CHARS" in r.json()["error"] and "answer" in r.json()["error"]


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"id": "i" * 501, "question": Q1}, "field id"),
        ({"question": Q1, "choices": ["c" * 501, "d"]}, "field choice 1"),
        ({"question": Q1, "answer": "a", "alternatives": ["b", "y" * 501]}, "field accepted answer 3"),
    ],
)
def test_every_field_of_a_checked_item_is_limited(small: TestClient, item: dict[str, Any], field: str) -> None:
    """CONTAM_MAX_ITEM_CHARS bounds every field of a /check item, as of a file's (a choice and the
    id among them, as the README's table says): only the question, passage, answer and solution
    were looked at, and a 200,000-character choice was scored (a README audit)."""
    r = small.post("/api/v1/check", json={"items": [item]})
    assert r.status_code == 413, r.text
    assert "CONTAM_MAX_ITEM_CHARS" in r.json()["error"] and field in r.json()["error"]


def test_nul_in_a_checked_item_is_refused_naming_item_and_field(small: TestClient) -> None:
    """A NUL character is refused in /check as in an upload (422, naming the item and the field)."""
    r = small.post("/api/v1/check", json={"items": [{"id": "q2", "question": Q1, "choices": ["a", "b\x00"]}]})
    assert r.status_code == 422, r.text
    assert "'q2'" in r.json()["error"] and "choice 2" in r.json()["error"] and "NUL" in r.json()["error"]


def test_accepted_answers_count_towards_a_check_requests_text(small: TestClient) -> None:
    others = [f"{k} " + "b " * 240 for k in range(5)]  # five of 482 characters: 2,410 with the question
    r = small.post("/api/v1/check", json={"items": [{"question": Q1, "answer": "a", "alternatives": others}]})
    assert r.status_code == 413 and "CONTAM_MAX_CHECK_CHARS" in r.json()["error"]


def test_text_per_check_request_is_limited(small: TestClient) -> None:
    r = small.post("/api/v1/check", json={"texts": ["word " * 90] * 5})
    assert r.status_code == 413 and "CONTAM_MAX_CHECK_CHARS" in r.json()["error"]


def test_bodies_are_counted_as_they_arrive_even_without_content_length(small: TestClient) -> None:
    """A chunked body (no Content-Length) over the limit is refused while it streams in."""

    def chunks(total: int) -> Iterator[bytes]:
        yield b'{"texts": ["'
        for _ in range(total // 65536):
            yield b"a" * 65536
        yield b'"]}'

    r = small.post("/api/v1/check", content=chunks(16 << 20), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "CONTAM_MAX_CHECK_CHARS" in r.json()["error"]
    # the bound the setting makes, and how (it named the setting beside a figure it never holds: a
    # trial), written as the API's other errors are (no spaces after separators)
    chars = small.app.state.limits.check_chars
    assert f"(six bytes a character of CONTAM_MAX_CHECK_CHARS, {chars:,}, and 1 MiB)" in r.json()["error"], r.text
    sized = small.post(
        "/api/v1/check",
        content=b"[" + b" " * (6 * chars + (2 << 20)) + b"]",
        headers={"content-type": "application/json"},
    )
    assert sized.status_code == 413 and sized.text.startswith('{"error":"the request body exceeds'), sized.text
    boundary = "b0undary"
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="b.jsonl"\r\n\r\n'.encode()

    def upload() -> Iterator[bytes]:
        yield head
        for _ in range(64):
            yield b" " * 65536
        yield f"\r\n--{boundary}--\r\n".encode()

    r = small.post(
        "/api/v1/benchmarks", content=upload(), headers={"content-type": f"multipart/form-data; boundary={boundary}"}
    )
    assert r.status_code == 413 and "CONTAM_MAX_UPLOAD_MB" in r.json()["error"] and "1.0 MiB" in r.json()["error"]
    # the detail the README promises, as every other limit gives it (it was null for the body's size)
    assert r.json()["detail"] == {"limit": "CONTAM_MAX_UPLOAD_MB", "value": 1 << 20}
    sized = small.post("/api/v1/benchmarks", files={"file": ("b.jsonl", b" " * (2 << 20))})  # Content-Length says
    assert sized.status_code == 413 and sized.json()["detail"] == {"limit": "CONTAM_MAX_UPLOAD_MB", "value": 1 << 20}


def test_csv_fields_are_limited_and_bad_text_is_a_422(small: TestClient) -> None:
    code, error = _upload(small, "b.csv", b"id,question\n1," + b"x" * 200_000 + b"\n")
    assert code == 413 and "CONTAM_MAX_CSV_FIELD_CHARS" in error and "row 2" in error
    code, error = _upload(small, "b.csv", b"id,question\n1,caf\xe9\n")
    assert code == 422 and "not UTF-8" in error


def test_a_large_csv_field_under_the_limit_is_read() -> None:
    """Python's csv module stops at 128 KiB by default; the configured limit replaces that."""
    rows = b"id,question\n1," + b"x" * 200_000 + b"\n"
    items, _ = read_benchmark(rows, "b.csv", limits=Limits(item_chars=300_000, csv_field_chars=300_000))
    assert len(items[0].question) == 200_000


DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize(
    ("form", "named"),
    [
        ({"mapping": json.dumps({"question": {"field": "question"}})}, "must name a field"),
        ({"mapping": '{"question": ["question", 3]}'}, "must name a field"),
        ({"mapping": DEEP}, "CONTAM_MAX_JSON_DEPTH"),
        ({"thresholds": '{"max_df": ' + DEEP + "}"}, "CONTAM_MAX_JSON_DEPTH"),
        ({"thresholds": '{"min_bits": 1e999}'}, "min_bits"),
        ({"thresholds": '{"min_bits": NaN}'}, "thresholds"),
        ({"name": "n" * 201}, "at most 200"),
    ],
)
def test_bad_upload_forms_are_named_not_500(small: TestClient, form: dict[str, str], named: str) -> None:
    code, error = _upload(small, "b.jsonl", JSONL, **form)
    assert code in (413, 422) and named in error


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        (b"1e999", "application/json", 422),
        (b"NaN", "application/json", 422),
        (b'{"texts": ["a b c"], "thresholds": {"min_bits": 1e999}}', "application/json", 422),
        (b'{"texts": ["a b c"], "thresholds": {"max_df": NaN}}', "application/json", 422),
        (b"hello", "text/plain", 415),
        (b"texts=hello", "application/x-www-form-urlencoded", 415),
        (('{"texts": ' + DEEP + "}").encode(), "application/json", 413),
    ],
)
def test_bad_check_bodies_are_refused_not_500(small: TestClient, body: bytes, content_type: str, status: int) -> None:
    r = small.post("/api/v1/check", content=body, headers={"content-type": content_type})
    assert r.status_code == status, r.text
    assert r.json()["error"]


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/reports?offset=100000000000000000000000",
        "/api/v1/reports/x/items?page=100000000000000000000000",
        "/api/v1/reports/x/items?min_score=abc",
        "/api/v1/reports/x/items?min_score=nan",
        "/?page=100000000000000000000000",
        "/items?page=100000000000000000000000",
        "/items?min_score=abc",
        "/items?min_score=nan",
    ],
)
def test_huge_pages_and_bad_scores_are_422(small: TestClient, url: str) -> None:
    assert small.get(url).status_code == 422


def test_nul_in_a_benchmark_is_refused_naming_item_and_field(
    migrated_url: str, index_corpus: IndexCorpus, tmp_path: Path
) -> None:
    index_corpus(migrated_url, [{"id": "p", "text": f"Quiz night! {Q1}"}])
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        rows = JSONL + (json.dumps({"id": "q2", "question": Q1, "answer": "Tig\x00ris"}) + "\n").encode()
        code, error = _upload(c, "b.jsonl", rows)
        assert code == 422 and "'q2'" in error and "answer" in error and "NUL" in error
        assert c.get("/api/v1/reports").json()["total"] == 0


@pytest.mark.parametrize("filename", ["b.jsonl", "b{0}.jsonl", "{x}.jsonl"])
def test_a_refusal_naming_braces_is_said_not_raised(filename: str) -> None:
    """An id or a file name holding braces is named in the refusal as it is: the message was
    formatted after the id was put in it, a KeyError (CLI: exit 3; an upload: a 500)."""
    rows = (json.dumps({"id": "{x}", "question": "abc\x00def"}) + "\n").encode()
    with pytest.raises(InputError, match="NUL") as nul:
        read_benchmark(rows, filename)
    said = f"{filename}: item '{{x}}' (row 1), field question holds a NUL character; remove it and upload again"
    assert nul.value.message == said
    long = (json.dumps({"id": "{0}", "question": "x " * 200}) + "\n").encode()
    with pytest.raises(LimitError, match="CONTAM_MAX_ITEM_CHARS") as over:
        read_benchmark(long, filename, limits=Limits(item_chars=300))
    assert over.value.message.startswith(f"{filename}: item '{{0}}' (row 1), field question (400 characters)")


def test_long_names_and_non_ascii_file_names(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """On both databases: a name over 200 characters is a 422; a file named in any script
    comes back from /clean under its own name (RFC 5987), its ASCII stand-in escaped."""
    index_corpus(migrated_url, [{"id": "p", "text": f"Quiz night! {Q1}"}])
    with TestClient(create_app(Settings(database_url=migrated_url))) as c:
        code, error = _upload(c, "b.jsonl", JSONL, name="n" * 201)
        assert code == 422 and "at most 200" in error
        name = "Prüfung β " + "x" * 250 + ".jsonl"
        rid = _finished_report(c, name, JSONL + JSONL.replace(b"q1", b"q2"))
        clean = c.get(f"/api/v1/reports/{rid}/clean")
        assert clean.status_code == 200, clean.text
        disposition = clean.headers["content-disposition"]
        assert "filename*=UTF-8''Pr%C3%BCfung%20%CE%B2%20xxx" in disposition
        assert disposition.isascii() and 'filename="Pr_fung _ xxx' in disposition
    quoted = attachment('a"b\\c\r\nSet-Cookie: x.jsonl')
    assert quoted.startswith("attachment; filename=\"a_b_c__Set-Cookie_ x.jsonl\"; filename*=UTF-8''a%22b%5Cc%0D%0A")


def test_the_clean_subset_is_read_under_the_server_s_limits(migrated_url: str, index_corpus: IndexCorpus) -> None:
    """A server that allows CSV cells longer than the default took the upload, then refused its
    clean subset (read under the defaults): a review."""
    index_corpus(migrated_url, [{"id": "p", "text": f"Quiz night! {Q1}"}])
    notes = "n" * 1_100_000  # over the default CONTAM_MAX_CSV_FIELD_CHARS (1,000,000), in a column not scored
    data = f'id,question,answer,notes\nq1,"{Q1}",Tigris,{notes}\nq2,"Which river is the longest of all?",Nile,x\n'
    with TestClient(create_app(Settings(database_url=migrated_url, max_csv_field_chars=2_000_000))) as c:
        rid = _finished_report(c, "b.csv", data.encode())
        assert c.get(f"/api/v1/reports/{rid}").json()["status"] == "done"
        clean = c.get(f"/api/v1/reports/{rid}/clean")
        assert clean.status_code == 200, clean.text[:300]


def test_a_partial_mapping_keeps_detecting_the_other_fields() -> None:
    """HumanEval mapped with only question=prompt keeps its ids and answers."""
    rec = {"task_id": "HumanEval/0", "prompt": "def f(x):\n", "canonical_solution": "    return x\n", "test": "t"}
    items, used = read_benchmark((json.dumps(rec) + "\n").encode(), "h.jsonl", {"question": "prompt"})
    assert used == {"question": "prompt", "answer": "canonical_solution", "id": "task_id"}
    assert items[0].item_id == "HumanEval/0" and items[0].answer == "    return x\n"
    # a detected role never takes a field the user gave to another role
    rec2 = {"question": "Q?", "answer": "A"}
    _, used2 = read_benchmark((json.dumps(rec2) + "\n").encode(), "q.jsonl", {"passage": "answer"})
    assert used2 == {"question": "question", "passage": "answer"}


def test_every_compression_the_reader_knows_reads_back() -> None:
    for suffix, pack in COMPRESS.items():
        items, _ = read_benchmark(pack(JSONL * 2), f"b.jsonl{suffix}")
        assert [i.question for i in items] == [Q1, Q1], suffix
    multi = zstandard.ZstdCompressor().compress(JSONL) + zstandard.ZstdCompressor().compress(JSONL)
    assert len(read_benchmark(multi, "b.jsonl.zst")[0]) == 2  # every frame, not the first only
    assert len(read_benchmark(io.BytesIO(gzip.compress(JSONL) * 2).getvalue(), "b.jsonl.gz")[0]) == 2


def _arrow(columns: dict[str, list[str]]) -> bytes:
    sink = pa.BufferOutputStream()
    table = pa.table(columns)
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


@pytest.mark.parametrize(
    ("name", "content"),
    [
        *((f"b.jsonl{suffix}", COMPRESS[suffix](_bomb(8 << 20))) for suffix in COMPRESS),  # over the limit
        ("cut.jsonl.gz", gzip.compress(JSONL * 50)[:-40]),  # a corrupt stream
        ("bad.jsonl", JSONL + b"{not json\n"),  # a malformed line
        ("bad.json", b'[{"question": "q"}, {"question":'),  # a JSON array cut short
        ("empty.csv", b""),  # refused before reading a record
        ("ok.jsonl.zst", zstandard.compress(JSONL * 3)),  # read to the end
        ("ok.tsv", b"question\tanswer\nq one two three\tyes\n"),
        ("bad.arrow", b"not an Arrow stream at all"),  # opened twice (stream, then file format)
        ("ok.arrow", _arrow({"question": ["q one two three"], "answer": ["yes"]})),
    ],
)
def test_a_file_read_from_disk_is_closed_however_reading_ends(tmp_path: Path, name: str, content: bytes) -> None:
    """A refused or broken upload leaves no file open behind it: the server reads thousands of
    uploads in one process, and an unclosed file is a descriptor held until the interpreter finds
    it (and a ResourceWarning then)."""
    path = tmp_path / name
    path.write_bytes(content)

    def read() -> None:
        with contextlib.suppress(InputError, LimitError):
            read_benchmark(path, name, limits=Limits(decompressed_bytes=1 << 20))

    _assert_closes_its_files(read)


def _assert_closes_its_files(read: Callable[[], None]) -> None:
    """`read` leaves no file descriptor open (the collector off: what it would close later is what
    the reader left open) and no file for the interpreter to find open (ResourceWarning)."""
    gc.collect()
    gc.disable()
    try:
        before = len(os.listdir("/proc/self/fd"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            read()
            left_open = len(os.listdir("/proc/self/fd")) - before
            gc.collect()
    finally:
        gc.enable()
    assert left_open == 0
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]


@pytest.mark.parametrize("name", ["many.jsonl.gz", "many.csv", "many.json"])
def test_a_file_is_closed_when_its_reader_stops_early(tmp_path: Path, name: str) -> None:
    """A consumer that takes a few records and drops the rest (an export's first row, an answer
    base read ahead) closes the file with the generator."""
    rows = [{"question": f"question number {k} about trade routes", "answer": "yes"} for k in range(500)]
    if name.endswith(".csv"):
        content = ("question,answer\n" + "".join(f"{r['question']},yes\n" for r in rows)).encode()
    elif name.endswith(".json"):
        content = json.dumps(rows).encode()
    else:
        content = gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode())
    path = tmp_path / name
    path.write_bytes(content)

    def read_one() -> None:
        records = read_records(path, name)
        assert next(records)[1]["question"] == "question number 0 about trade routes"
        records.close()  # type: ignore[attr-defined]

    _assert_closes_its_files(read_one)


def _depth(data: bytes) -> int:
    """The deepest bracket nesting outside strings, byte by byte (what json_depth computes)."""
    depth = deepest = i = 0
    while i < len(data):
        c = data[i : i + 1]
        if c == b'"':
            i += 1
            while i < len(data) and data[i : i + 1] != b'"':
                i += 2 if data[i : i + 1] == b"\\" else 1
        elif c in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif c in (b"]", b"}"):
            depth -= 1
        i += 1
    return deepest


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"[", b"]", b"{", b"}", b'"', b"\\", b"a", b",", b":", b'\\"', b"1"]), max_size=60))
def test_the_json_depth_is_the_bracket_nesting_outside_strings(parts: list[bytes]) -> None:
    data = b"".join(parts)
    from contam.app.core import _native

    assert _native.json_depth(data, 10**6) == _depth(data)


def test_the_json_depth_check_takes_time_and_memory_of_one_pass() -> None:
    """The check ran a regular expression over the strings: it kept a backtracking frame per
    character (a 5 MB body took 600 MB and half a second of the server's event loop; a probe), and
    an unterminated run of escaped quotes took time in its square (60 KB: 10 s, before the API
    key was asked for; a review). Now one pass in C."""
    from contam.app.limits import check_json_depth

    body = json.dumps({"texts": ["ab " * 700_000, 'a "quoted" \\ word'], "more": [[1, 2], {"a": "]"}]}).encode()
    hostile = b'{"x": "' + b'\\"' * 1_000_000
    tracemalloc.start()
    try:
        started = time.perf_counter()
        check_json_depth(body, 3)
        check_json_depth(hostile, 3)
        took = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20 and took < 0.5, (peak, took)
    with pytest.raises(LimitError, match="CONTAM_MAX_JSON_DEPTH"):
        check_json_depth(json.dumps({"a": [["x]]]]"], [[["deep"]]]]}).encode(), 3)


def test_line_limit_counts_the_line_without_its_ending_and_cuts_cr_only_files() -> None:
    """A CSV whose lines end in CR alone (old Mac tools) was one line to the line limit, so one
    past 16 MiB was refused whole; a CRLF line of exactly the limit was refused where an LF line
    was read (a review)."""
    header, row = "id,question\r", "q{},what is the capital of France and why\r"
    rows = header + "".join(row.format(i) for i in range(200))
    items, _used = read_benchmark(rows.encode(), "b.csv", limits=Limits(line_bytes=1000))
    assert len(items) == 200 and items[-1].item_id == "q199"
    exact = json.dumps({"id": "a", "question": "x" * 60})
    for ending in ("\n", "\r\n"):
        got = read_benchmark((exact + ending).encode(), "b.jsonl", limits=Limits(line_bytes=len(exact)))[0]
        assert len(got) == 1, ending
    with pytest.raises(LimitError, match="line 1 exceeds"):
        read_benchmark((exact + "\n").encode(), "b.jsonl", limits=Limits(line_bytes=len(exact) - 1))
    with pytest.raises(LimitError, match="line 3 exceeds"):
        read_benchmark(
            (header + row.format(0) + "x," + "y" * 2000 + "\r").encode(), "b.csv", limits=Limits(line_bytes=1000)
        )


def test_a_limit_below_one_mib_is_said_as_it_is() -> None:
    """A limit of 0.01 MiB was "the limit of 0.0 MiB" (a README audit)."""
    assert as_mib(10_485) == "0.01 MiB" and as_mib(1 << 20) == "1.0 MiB" and as_mib(0) == "0.0 MiB"
    assert "the limit of 0.01 MiB (CONTAM_MAX_UPLOAD_MB)" in exceeded("upload_bytes", 10_485, "the upload").message
