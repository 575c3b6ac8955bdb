import codecs
import gzip
import json
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from contam.app.errors import CorruptFileError, InputError
from contam.app.readers.corpus import find_files, open_binary, read_documents, read_jsonl, why_no_documents

DOCS = [{"id": "a", "text": "alpha beta gamma"}, {"id": "b", "text": "delta epsilon"}]


def _jsonl(docs: list[dict]) -> bytes:
    return b"".join(json.dumps(d).encode() + b"\n" for d in docs)


def _read(path: Path, **kw) -> tuple[list, Counter]:
    skipped: Counter = Counter()
    return list(read_documents(path, skipped, **kw)), skipped


@pytest.mark.parametrize("name", ["c.jsonl", "c.jsonl.gz", "c.jsonl.zst", "c.parquet", "c.txt"])
def test_every_format(tmp_path: Path, name: str) -> None:
    p = tmp_path / name
    if name.endswith(".gz"):
        p.write_bytes(gzip.compress(_jsonl(DOCS)))
    elif name.endswith(".zst"):
        p.write_bytes(zstandard.ZstdCompressor().compress(_jsonl(DOCS)))
    elif name.endswith(".parquet"):
        pq.write_table(pa.table({"id": ["a", "b"], "text": [d["text"] for d in DOCS]}), p)
    elif name.endswith(".txt"):
        p.write_text("alpha beta gamma\ndelta epsilon\n")
    else:
        p.write_bytes(_jsonl(DOCS))
    docs, skipped = _read(p)
    if name.endswith(".txt"):
        assert [(d.external_id, d.text) for d in docs] == [("c.txt", "alpha beta gamma\ndelta epsilon\n")]
    else:
        assert [(d.external_id, d.text) for d in docs] == [("a", "alpha beta gamma"), ("b", "delta epsilon")]
    assert not skipped


def test_bad_records_are_counted_by_reason(tmp_path: Path) -> None:
    p = tmp_path / "bad.jsonl"
    lines = [
        b'{"id": 1, "text": "good one"}',  # kept
        b'{"id": 2, "text": "caf\xe9 latin-1"}',  # Latin-1: kept, read as Windows-1252, counted
        b'{"id": 3, "text": "unterminated',  # malformed JSON
        b"[1, 2, 3]",  # not an object
        b'{"id": 4}',  # missing text
        b'{"id": 5, "text": 42}',  # non-string text
        b'{"id": 6, "text": "   "}',  # empty text
        b'{"text": "no id here"}',  # id falls back to file:line
        b"",  # blank line: ignored
        b'{"id": 9, "text": "' + b"x" * 5000 + b'"}',  # over the record limit
        b'{"id": 10, "text": "after the long line"}',
    ]
    p.write_bytes(b"\n".join(lines) + b"\n")
    skipped: Counter = Counter()
    docs = list(read_jsonl(p, "text", "id", skipped, max_bytes=1000))
    assert [d.external_id for d in docs] == ["1", "2", "bad.jsonl:8", "10"]
    assert docs[1].text == "caf\u00e9 latin-1"
    assert docs[2].position == 8
    assert skipped == Counter(
        decoded_cp1252=1,
        malformed_json=1,
        not_an_object=1,
        missing_text=1,
        non_string_text=1,
        empty_text=1,
        record_too_long=1,
    )


def test_custom_fields_and_limit(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_bytes(_jsonl([{"doc": f"d{i}", "body": f"text {i}"} for i in range(10)]))
    docs, _ = _read(p, text_field="body", id_field="doc", limit=3)
    assert [d.external_id for d in docs] == ["d0", "d1", "d2"]


def test_truncated_gzip_raises_corrupt(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl.gz"
    blob = gzip.compress(_jsonl(DOCS * 500))
    p.write_bytes(blob[: len(blob) // 2])
    with pytest.raises(CorruptFileError, match="cannot read to the end"):
        _read(p)
    # past the first MiB read: the message says how far it got (a new user's trial)
    rng = random.Random(5)
    words = [f"w{rng.randrange(10**6)}" for _ in range(400_000)]
    docs = [{"id": str(i), "text": " ".join(words[i * 40 : (i + 1) * 40])} for i in range(10_000)]
    blob = gzip.compress(_jsonl(docs))
    p.write_bytes(blob[: len(blob) // 2])
    with pytest.raises(CorruptFileError, match=r"cannot read to the end after line \d+ \(EOFError") as info:
        _read(p)
    # and what that usually means (a new user's trial: the EOFError's words alone named no cause)
    assert info.value.message.endswith(
        "the file is cut short, as an interrupted download or copy leaves it; fetch or copy it again"
    )


@pytest.mark.parametrize(
    ("name", "make", "said"),
    [
        ("a.jsonl.gz", lambda b: b, 'its name says gz, but the file is not compressed (it starts b\'{"id": "\')'),
        ("a.jsonl.zst", gzip.compress, "its name says zst, but the file is gz-compressed"),
        ("a.jsonl.zstd", gzip.compress, "its name says zstd, but the file is gz-compressed"),
        # a zstd stream may open with a skippable frame: zstd still (here, one the reader cannot read)
        ("a.jsonl.gz", lambda b: b"\x50\x2a\x4d\x18" + b, "its name says gz, but the file is zst-compressed"),
        (
            "a.txt.xz",
            lambda b: zstandard.ZstdCompressor().compress(b),
            "its name says xz, but the file is zst-compressed",
        ),
    ],
)
def test_a_compressed_name_on_other_bytes_says_what_the_file_is(
    tmp_path: Path, name: str, make: Callable[[bytes], bytes], said: str
) -> None:
    """A file nothing could be read of was "cannot read to the end (BadGzipFile: Not a gzipped
    file (b'no'))" (a new user's trial): its first bytes say what it is."""
    p = tmp_path / name
    p.write_bytes(make(_jsonl(DOCS)))
    with pytest.raises(CorruptFileError) as info:
        _read(p)
    assert info.value.message == f"{p}: {said}" or info.value.message.startswith(f"{p}: {said}"), info.value.message
    assert "give it the name of what it is" in info.value.message


def test_corrupt_zstd_raises_corrupt(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl.zst"
    p.write_bytes(b"\x28\xb5\x2f\xfd" + b"garbage" * 100)
    with pytest.raises(CorruptFileError):
        _read(p)


def test_truncated_zstd_raises_corrupt_and_frames_read_whole(tmp_path: Path) -> None:
    """zstandard's stream reader ended a cut-off file quietly where its data stopped: half the
    documents were indexed as the whole file, and a rerun found it unchanged (a new user's
    trial). A file of several frames still reads whole."""
    data = _jsonl(DOCS * 500)
    blob = zstandard.ZstdCompressor().compress(data)
    for cut in (len(blob) // 2, 40):  # inside the data; inside the first block
        p = tmp_path / f"t{cut}.jsonl.zst"
        p.write_bytes(blob[:cut])
        with pytest.raises(CorruptFileError, match=r"ends inside a zstd frame \(truncated\)") as info:
            _read(p)
        # with what that usually means, as gzip's, bz2's and xz's cut-short files (a review)
        assert info.value.message.endswith(
            "the file is cut short, as an interrupted download or copy leaves it; fetch or copy it again"
        )
    two = tmp_path / "two.jsonl.zst"
    half = len(data) // 2 - len(data) // 2 % len(_jsonl(DOCS[:1]))
    cctx = zstandard.ZstdCompressor()
    two.write_bytes(cctx.compress(data[:half]) + cctx.compress(data[half:]))
    assert len(_read(two)[0]) == len(DOCS) * 500


def test_several_text_fields_take_the_first_a_record_or_a_table_has(tmp_path: Path) -> None:
    """A corpus whose files keep their text under different names (Parquet's `text`, an export's
    `doc.content`) took a run per name, and rerunning the whole failed the others' files (a new
    user's trial). `--text-field doc.content,text`: a record's text is the first of them it holds
    with text, a table's the first column it has; with none, the message names them all."""
    j = tmp_path / "b.jsonl"
    rows = [
        {"id": "j1", "doc": {"content": "nested content"}},
        {"id": "j2", "text": "plain text"},
        {"id": "j3", "doc": {"content": None}, "text": "text beside a null"},
        {"id": "j4", "doc": {"content": " "}},
    ]
    j.write_text("".join(json.dumps(r) + "\n" for r in rows))
    docs, skipped = _read(j, text_field="doc.content, text")
    assert [(d.external_id, d.text) for d in docs] == [
        ("j1", "nested content"),
        ("j2", "plain text"),
        ("j3", "text beside a null"),
    ]
    assert skipped == Counter(empty_text=1)
    t = tmp_path / "a.parquet"
    pq.write_table(pa.table({"id": ["p1"], "text": ["parquet text"]}), t)
    assert [d.text for d in _read(t, text_field="doc.content,text")[0]] == ["parquet text"]
    with pytest.raises(CorruptFileError, match=r"no column 'body' or 'txt' \(columns: id, text;"):
        _read(t, text_field="body,txt")
    assert why_no_documents(j, "body,txt", Counter(missing_text=4)).startswith(
        "no documents: no field 'body' or 'txt'; fields seen: id, doc, text"
    )


def test_a_text_field_whose_name_holds_a_comma_is_still_read(tmp_path: Path) -> None:
    """`--text-field a,b` names two fields, but a field or column named "title,body" was read
    before the list came, and could no longer be named at all (a review): the name as given is
    looked for first. A record whose only field of the list holds empty text counts as empty, not
    as missing (it said "every record was skipped (missing_text: 1)" of a file holding the field)."""
    j = tmp_path / "c.jsonl"
    j.write_text(json.dumps({"id": "j1", "title,body": "text under a comma"}) + "\n")
    assert [d.text for d in _read(j, text_field="title,body")[0]] == ["text under a comma"]
    t = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": ["p1"], "title,body": ["parquet text"]}), t)
    assert [d.text for d in _read(t, text_field="title,body")[0]] == ["parquet text"]
    e = tmp_path / "e.jsonl"
    e.write_text(json.dumps({"id": "e1", "text": " "}) + "\n")
    docs, skipped = _read(e, text_field="doc.content,text")
    assert docs == [] and skipped == Counter(empty_text=1)


def _long_window(data: bytes) -> bytes:
    """`data` as `zstd --long=30` writes it from a pipe: a frame that asks for a 1 GiB window."""
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=30, enable_ldm=True)
    obj = zstandard.ZstdCompressor(compression_params=params).compressobj()  # no content size: the window stays
    return obj.compress(data) + obj.flush()


def test_a_corpus_file_made_with_zstd_long_is_read(tmp_path: Path) -> None:
    """A frame asking for more than zstandard's default window (128 MiB) failed "cannot read to
    the end (ZstdError: ... Frame requires too much memory for decoding)", as if cut short (a new
    user's trial: `zstd --long=30`). Corpus files are read with the format's largest window; a
    benchmark upload keeps the default, and says what the file is and what to do."""
    data = _jsonl(DOCS * 50)
    blob = _long_window(data)
    assert zstandard.get_frame_parameters(blob).window_size == 1 << 30
    p = tmp_path / "long.jsonl.zst"
    p.write_bytes(blob)
    assert len(_read(p)[0]) == len(DOCS) * 50
    from contam.app.readers.benchmark import read_benchmark

    with pytest.raises(InputError, match=r"window over 128 MiB \(a file made with `zstd --long`\).*without --long"):
        read_benchmark(_long_window(b'{"question": "Which river flows through Baghdad?"}\n'), "b.jsonl.zst")


def test_zstd_output_is_bounded_per_read(tmp_path: Path) -> None:
    """A zstd block of 128 KiB can take 4 bytes: the reader gave the decompressor a MiB of input
    at a time, so a 64 KB upload of zeros made 2 GiB in one call before the size limit saw any of
    it (a review). Reading the first MiB of 512 MiB of zeros now allocates a few MiB."""
    import tracemalloc

    cctx = zstandard.ZstdCompressor(level=3).compressobj()
    p = tmp_path / "zeros.txt.zst"
    p.write_bytes(b"".join([cctx.compress(b"\0" * (1 << 24)) for _ in range(32)] + [cctx.flush()]))
    assert p.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with open_binary(p) as f:
            assert len(f.read(1 << 20)) == 1 << 20
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, peak


def test_parquet_without_text_column_and_garbage(tmp_path: Path) -> None:
    p = tmp_path / "n.parquet"
    pq.write_table(pa.table({"body": ["x"]}), p)
    with pytest.raises(
        CorruptFileError, match="no column 'text' .columns: .*; choose the text field with --text-field"
    ):
        _read(p)
    q = tmp_path / "g.parquet"
    q.write_bytes(b"not parquet at all")
    with pytest.raises(CorruptFileError):
        _read(q)


def test_parquet_non_string_values(tmp_path: Path) -> None:
    p = tmp_path / "v.parquet"
    pq.write_table(pa.table({"text": ["ok text", None, ""]}), p)
    docs, skipped = _read(p)
    assert [d.text for d in docs] == ["ok text"]
    assert skipped == Counter(missing_text=1, empty_text=1)


def test_a_text_field_inside_an_object_is_named_by_its_path(tmp_path: Path) -> None:
    """`--text-field document.text` found no field (a benchmark's fields took such paths, a
    corpus's did not: a new user's trial): JSON lines, Parquet and Arrow struct columns alike,
    and the id field too; a key that holds the dots itself is taken first."""
    rows = [{"meta": {"id": "a1"}, "document": {"text": "first text"}}, {"meta": {}, "document": {"title": "x"}}]
    j = tmp_path / "n.jsonl"
    j.write_text("".join(json.dumps(r) + "\n" for r in rows) + json.dumps({"document.text": "dotted key"}) + "\n")
    skipped: Counter[str] = Counter()
    docs = list(read_documents(j, skipped, "document.text", "meta.id"))
    assert [(d.external_id, d.text) for d in docs] == [("a1", "first text"), ("n.jsonl:3", "dotted key")]
    assert skipped["missing_text"] == 1
    table = pa.table({"meta": [{"id": "p1"}, {"id": "p2"}], "document": [{"text": "one"}, {"text": "two"}]})
    pq.write_table(table, tmp_path / "n.parquet")
    with pa.OSFile(str(tmp_path / "n.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    for name in ("n.parquet", "n.arrow"):
        got = [(d.external_id, d.text) for d in read_documents(tmp_path / name, Counter(), "document.text", "meta.id")]
        assert got == [("p1", "one"), ("p2", "two")], name
        with pytest.raises(CorruptFileError, match="no column 'doc.text'"):
            list(read_documents(tmp_path / name, Counter(), "doc.text"))
        # a path the struct does not hold is a missing column, the id's too (a review: the first
        # was "every record was skipped", the second indexed with FILE:ROW ids)
        with pytest.raises(CorruptFileError, match="no column 'document.txt'") as exc:
            list(read_documents(tmp_path / name, Counter(), "document.txt"))
        # the struct's fields by path, and the one meant (a trial was shown `meta, document` alone)
        assert "fields inside its structs: meta.id, document.text; did you mean document.text?" in exc.value.message
        with pytest.raises(CorruptFileError, match="no column 'meta.idx'"):
            list(read_documents(tmp_path / name, Counter(), "document.text", "meta.idx"))
    # a struct field whose own name holds a dot is reached as a JSON object's key is (a review)
    pq.write_table(pa.table({"id": ["x1"], "doc": [{"body.text": "dotted field"}]}), tmp_path / "dot.parquet")
    got = [(d.external_id, d.text) for d in read_documents(tmp_path / "dot.parquet", Counter(), "doc.body.text")]
    assert got == [("x1", "dotted field")]
    # an Arrow file with a schema and no batch says it holds no records (a review: StopIteration)
    with pa.OSFile(str(tmp_path / "empty.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema):
        pass
    assert list(read_documents(tmp_path / "empty.arrow", Counter())) == []
    assert why_no_documents(tmp_path / "empty.arrow", "text", Counter()) == "no documents: the file holds no records"
    pq.write_table(pa.table({"document": ["plain text"]}), tmp_path / "plain.parquet")
    with pytest.raises(CorruptFileError, match="no column 'document.text'"):
        list(read_documents(tmp_path / "plain.parquet", Counter(), "document.text"))
    # with the text inside its objects, by path: "fields seen: meta, doc" alone did not say that
    # doc.content was there, nor how a field inside is named (a new user's trial)
    assert why_no_documents(j, "document.txt", Counter(missing_text=2)) == (
        "no documents: no field 'document.txt'; fields seen: meta, document, document.text; text inside objects, "
        "named by their path: document.text, meta.id, document.title (choose the text field with --text-field)"
    )
    # the object itself named: its fields, the longest text first (a new user's trial: "every
    # record was skipped (non_string_text: 769)")
    skipped = Counter[str]()
    assert list(read_documents(j, skipped, "document")) == [] and skipped["non_string_text"] == 2, skipped
    assert why_no_documents(j, "document", skipped) == (
        "no documents: the field 'document' holds objects, not text (their fields: text); "
        "name the text inside, e.g. --text-field document.text (other records skipped: missing_text: 1)"
    )
    # only text is suggested, looked for inside nested objects too; with none, none (a review: a number was)
    o = tmp_path / "o.jsonl"
    o.write_text(json.dumps({"doc": {"id": 1, "body": {"text": "hello world"}, "lang": "en"}}) + "\n")
    said = why_no_documents(o, "doc", Counter(non_string_text=1))
    assert said.endswith("(their fields: id, body, lang); name the text inside, e.g. --text-field doc.body.text"), said
    o.write_text(json.dumps({"meta": {"id": 1, "n": 3}}) + "\n")
    assert why_no_documents(o, "meta", Counter(non_string_text=1)).endswith("(their fields: id, n)")


def test_find_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for n in ("a.jsonl", "sub/b.jsonl.gz", "sub/c.parquet", "sub/readme.md", "d.txt"):
        (tmp_path / n).write_bytes(b"")
    names = [p.name for p in find_files([tmp_path, tmp_path / "a.jsonl"])]
    assert names == ["a.jsonl", "d.txt", "b.jsonl.gz", "c.parquet"]
    with pytest.raises(InputError, match="no such file"):
        find_files([tmp_path / "missing"])
    with pytest.raises(InputError, match="unsupported"):
        find_files([tmp_path / "sub" / "readme.md"])


def test_a_json_array_corpus_file_is_read_a_record_at_a_time(tmp_path: Path) -> None:
    """A .json corpus file holding a JSON array (`json.dump(records)`) was read as JSON lines:
    one malformed line, then "no documents: every record was skipped (not_an_object: 1)"."""
    from contam.app.readers.corpus import fields_seen

    records = [{"id": f"d{i}", "text": f"document {i} about rivers"} for i in range(3)] + [7, {"id": "e"}]
    path = tmp_path / "docs.json"
    path.write_text(json.dumps(records, indent=1))
    gz = tmp_path / "docs.json.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    for p in (path, gz):
        skipped: Counter[str] = Counter()
        docs = list(read_jsonl(p, "text", "id", skipped))
        assert [(d.external_id, d.position, d.text) for d in docs] == [
            (f"d{i}", i + 1, f"document {i} about rivers") for i in range(3)
        ]
        assert skipped == Counter({"not_an_object": 1, "missing_text": 1})
    assert fields_seen(path) == ["id", "text"]  # what a wrong --text-field is told
    (tmp_path / "cut.json").write_text(json.dumps(records)[:-30])
    with pytest.raises(
        CorruptFileError, match=r"cut.json: not valid JSON after record \d+ .parse error: premature EOF"
    ):
        list(read_jsonl(tmp_path / "cut.json", "text", "id", Counter()))


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-16-be-bom"])
def test_a_corpus_file_in_utf16_or_utf32_with_a_byte_order_mark_is_read(tmp_path: Path, encoding: str) -> None:
    """Windows tools save "Unicode text" as UTF-16 with a byte order mark: read as bytes, each of
    its records was a malformed line (and one more for the NUL after each newline: 6 for 5
    records), so the file gave no document. Told by its mark, it is decoded as it is read, in
    JSON lines and in plain text alike."""
    records = [{"id": f"d{i}", "text": f"caf\u00e9 rivers and tides number {i}"} for i in range(5)]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in records)
    data = codecs.BOM_UTF16_BE + text.encode("utf-16-be") if encoding == "utf-16-be-bom" else text.encode(encoding)
    (tmp_path / "docs.jsonl").write_bytes(data)
    skipped: Counter[str] = Counter()
    docs = list(read_jsonl(tmp_path / "docs.jsonl", "text", "id", skipped))
    assert [(d.external_id, d.text) for d in docs] == [(r["id"], r["text"]) for r in records] and not skipped
    (tmp_path / "notes.txt").write_bytes("Plain caf\u00e9 notes.".encode(encoding.removesuffix("-be-bom")))
    assert [d.text for d in read_documents(tmp_path / "notes.txt", skipped)] == ["Plain caf\u00e9 notes."]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_corpus_file_in_utf16_without_a_byte_order_mark_is_read(tmp_path: Path, encoding: str) -> None:
    """UTF-16 with no mark: a NUL beside nearly every character of Latin script tells it (each
    line was a malformed record, and one more for the NUL after the newline)."""
    records = [{"id": f"d{i}", "text": f"caf\u00e9 rivers and tides number {i}"} for i in range(5)]
    path = tmp_path / "docs.jsonl"
    path.write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode(encoding))
    skipped: Counter[str] = Counter()
    assert [d.text for d in read_jsonl(path, "text", "id", skipped)] == [r["text"] for r in records] and not skipped


def test_a_corpus_file_in_utf32_is_told_to_be_reencoded(tmp_path: Path) -> None:
    """A JSONL file saved as UTF-32 with no byte order mark gives no document; the reason says
    the file is not UTF-8 and to re-encode it, beside the counts of what was skipped (its NUL
    bytes tell it: they are valid UTF-8, but never in text)."""
    from contam.app.readers.corpus import why_no_documents

    path = tmp_path / "docs.jsonl"
    rows = "".join(json.dumps({"id": f"d{i}", "text": "rivers"}) + "\n" for i in range(3))
    path.write_bytes(rows.encode("utf-32-le"))
    skipped: Counter[str] = Counter()
    assert list(read_jsonl(path, "text", "id", skipped)) == []
    why = why_no_documents(path, "text", skipped)
    assert why.startswith("no documents: every record was skipped (") and "re-encode it as UTF-8" in why
    utf8 = tmp_path / "ok.jsonl"
    utf8.write_text(json.dumps({"id": "d", "text": 7}) + "\n")  # skipped for another reason: no such hint
    skipped = Counter()
    assert list(read_jsonl(utf8, "text", "id", skipped)) == [] and "UTF-8" not in why_no_documents(
        utf8, "text", skipped
    )
    # a Parquet file is binary, never text in another encoding: its empty texts get no such hint
    table = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "text": [None, ""]}), table)
    skipped = Counter()
    assert list(read_documents(table, skipped)) == []
    why = why_no_documents(table, "text", skipped)
    assert why.startswith("no documents: every record was skipped (") and "UTF-8" not in why
    # a JSON array in Latin-1 breaks before its first record: said so, with the hint
    latin = tmp_path / "old.json"
    latin.write_bytes('[{"id": "a", "text": "caf\u00e9"}]'.encode("latin-1"))
    with pytest.raises(CorruptFileError, match="before its first record") as err:
        list(read_jsonl(latin, "text", "id", Counter()))
    assert "record 0" not in str(err.value) and "re-encode it as UTF-8" in str(err.value)


def test_skipped_records_say_where_they_were(tmp_path: Path) -> None:
    """A Skipped count keeps the first places of each reason (lines of JSON lines, records of a
    JSON array, rows of Parquet); a plain Counter keeps the counts only, as before."""
    from contam.app.readers.corpus import Skipped

    lines = ['{"id": 1, "text": "kept"}', "not json", '{"id": 3}', "[1, 2]", "also not json"] + ["bad"] * 3
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n")
    skipped = Skipped()
    assert [d.text for d in read_documents(tmp_path / "a.jsonl", skipped)] == ["kept"]
    assert skipped == {"malformed_json": 5, "missing_text": 1, "not_an_object": 1}
    assert skipped.where == {
        "malformed_json": ["line 2", "line 5", "line 6"],  # the first three
        "missing_text": ["line 3"],
        "not_an_object": ["line 4"],
    }
    (tmp_path / "b.json").write_text(json.dumps([{"id": 1, "text": "kept"}, {"id": 2}]))
    skipped = Skipped()
    list(read_documents(tmp_path / "b.json", skipped))
    assert skipped.where == {"missing_text": ["record 2"]}
    pq.write_table(pa.table({"id": ["a", "b"], "text": ["kept", None]}), tmp_path / "c.parquet")
    skipped = Skipped()
    list(read_documents(tmp_path / "c.parquet", skipped))
    # the second row, counted from 1 as lines and records are (a new user's trial: it was "row 1")
    assert skipped.where == {"missing_text": ["row 2"]}
    pq.write_table(pa.table({"text": ["one", "two"]}), tmp_path / "d.parquet")
    docs = list(read_documents(tmp_path / "d.parquet", Skipped()))  # no id column: named by file and row
    assert [(d.external_id, d.position) for d in docs] == [("d.parquet:1", 1), ("d.parquet:2", 2)]


@pytest.mark.parametrize("suffix", [".bz2", ".xz"])
def test_bzip2_and_xz_corpora_are_read_and_a_cut_one_fails(tmp_path: Path, suffix: str) -> None:
    """Benchmarks took .bz2 and .xz; corpora were "unsupported file type" (a bad-input probe)."""
    import bz2
    import lzma

    compress = bz2.compress if suffix == ".bz2" else lzma.compress
    lines = "".join(json.dumps({"id": f"d{i}", "text": f"document number {i} " * 200}) + "\n" for i in range(200))
    blob = compress(lines.encode())
    (tmp_path / f"c.jsonl{suffix}").write_bytes(blob)
    assert find_files([tmp_path]) == [(tmp_path / f"c.jsonl{suffix}").resolve()]
    docs = list(read_documents(tmp_path / f"c.jsonl{suffix}", Counter()))
    assert [d.external_id for d in docs] == [f"d{i}" for i in range(200)]
    (tmp_path / f"cut.txt{suffix}").write_bytes(blob[: len(blob) // 2])
    with pytest.raises(CorruptFileError, match=f"cut.txt{suffix}: cannot read to the end"):
        list(read_documents(tmp_path / f"cut.txt{suffix}", Counter()))


def test_text_in_a_one_byte_encoding_is_read_as_windows_1252_and_damaged_utf8_repaired(tmp_path: Path) -> None:
    """A record in Latin-1 was indexed with replacement characters ("caf\ufffd", a token no copy of
    an accented item shares): text that is not UTF-8 and holds no UTF-8 character beyond ASCII is
    a one-byte encoding's, read as Windows-1252 (its curly quotes and euro too; its five unassigned
    bytes as Latin-1's); UTF-8 damaged by a stray byte keeps its characters, the byte replaced. A
    text file alike."""
    p = tmp_path / "old.jsonl"
    lines = [
        '{"id": 1, "text": "na\u00efve caf\u00e9 \u201cdone\u201d for 5\u20ac"}'.encode("cp1252"),
        b'{"id": 2, "text": "crise\x81s"}',  # unassigned in Windows-1252
        '{"id": 3, "text": "r\u00e9sum\u00e9 '.encode() + b"\xff" + b' ok"}',  # UTF-8 with a stray byte
    ]
    p.write_bytes(b"\n".join(lines) + b"\n")
    docs, skipped = _read(p)
    assert [d.text for d in docs] == [
        "na\u00efve caf\u00e9 \u201cdone\u201d for 5\u20ac",
        "crise\x81s",
        "r\u00e9sum\u00e9 \ufffd ok",
    ]
    assert skipped == Counter(decoded_cp1252=2, invalid_utf8_replaced=1)
    t = tmp_path / "old.txt"
    t.write_bytes("Gr\u00fc\u00dfe aus K\u00f6ln".encode("latin-1"))
    docs, skipped = _read(t)
    assert [d.text for d in docs] == ["Gr\u00fc\u00dfe aus K\u00f6ln"] and skipped == Counter(decoded_cp1252=1)


def test_a_chats_messages_are_one_document(tmp_path: Path) -> None:
    """Fine-tuning sets keep their text as a chat's messages, and a trial's chat corpus could not be
    indexed: `--text-field messages` skipped every record ("non_string_text"), the default said
    nothing of the field, and a one-line chat file was "one JSON object whose 'messages' holds the
    records". A chat is one document, a message a paragraph: OpenAI's role/content (content parts
    too) and ShareGPT's from/value; a list of numbers stays no text."""
    rows = [
        {"id": "o", "messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"}]},
        {"id": "s", "conversations": [{"from": "human", "value": "Name a river."}, {"from": "gpt", "value": "Nile"}]},
        {
            "id": "p",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Describe it"}, {"type": "image_url"}]}],
        },
        {"id": "n", "messages": [1, 2, 3]},
    ]
    p = tmp_path / "chat.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    skipped: Counter = Counter()
    docs = list(read_documents(p, skipped, "messages,conversations"))
    assert [(d.external_id, d.text) for d in docs] == [
        ("o", "What is 2+2?\n\n4"),
        ("s", "Name a river.\n\nNile"),
        ("p", "Describe it"),
    ]
    assert skipped == Counter(non_string_text=1), skipped
    said = why_no_documents(p, "text", Counter())
    assert said.endswith(
        "; a chat's messages, read as one text: conversations, messages (choose the text field with --text-field)"
    ), said
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(rows[0]) + "\n")
    assert "holds the records" not in why_no_documents(one, "text", Counter())
    table = tmp_path / "chat.parquet"
    pq.write_table(pa.Table.from_pylist(rows[:1]), table)
    assert [d.text for d in read_documents(table, Counter(), "messages")] == ["What is 2+2?\n\n4"]


def test_an_object_in_the_first_text_field_falls_back_to_the_next(tmp_path: Path) -> None:
    """`--text-field text,content` takes the first field a record holds text in: an object in
    `text` hid the `content` after it, the record skipped as non_string_text (a trial)."""
    p = tmp_path / "a.jsonl"
    rows = [{"id": "1", "text": {"nested": "x"}, "content": "real text"}, {"id": "2", "text": {"n": 1}}]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    skipped: Counter = Counter()
    assert [d.text for d in read_documents(p, skipped, "text,content")] == ["real text"]
    assert skipped == Counter(non_string_text=1)


def test_a_folder_of_hidden_corpus_files_alone_says_they_are_left_out(tmp_path: Path) -> None:
    """A folder holding only `.secret.jsonl` was "no corpus files in this folder", the hidden file
    left out without a word (a trial)."""
    (tmp_path / ".secret.jsonl").write_text(json.dumps({"id": 1, "text": "x"}) + "\n")
    with pytest.raises(
        InputError, match=r"no corpus files in this folder .*hidden and linked ones are left out, name one"
    ):
        find_files([tmp_path])


def test_a_folder_that_cannot_be_listed_refuses_the_run_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trial: a subfolder the indexer could not list (its permissions; a stale NFS handle) was
    skipped without a word, its shards missing, and the run exited 0. It is refused, named, with
    what to do."""
    import os

    (tmp_path / "c" / "locked").mkdir(parents=True)
    (tmp_path / "c" / "a.jsonl").write_text('{"text": "one"}\n')
    (tmp_path / "c" / "locked" / "d.jsonl").write_text('{"text": "two"}\n')
    real = os.scandir

    def scandir(path: object = ".") -> object:
        if str(path).endswith("locked"):  # as root, chmod 000 does not bite
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(InputError, match=r"1 folder\(s\) under .*/c cannot be listed.*locked: Permission denied"):
        find_files([tmp_path / "c"])
    assert find_files([tmp_path / "c" / "a.jsonl"]) == [(tmp_path / "c" / "a.jsonl").resolve()]


def test_a_file_that_cannot_be_looked_at_does_not_abort_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review: a folder that can be listed but not entered (mode r--) made Path.exists raise
    PermissionError for its files, and the whole run ended in a bare PermissionError (exit 3).
    Such a file is kept as named; the indexer then fails it alone, saying it cannot be read."""
    (tmp_path / "c" / "sub").mkdir(parents=True)
    (tmp_path / "c" / "a.jsonl").write_text('{"text": "one"}\n')
    (tmp_path / "c" / "sub" / "x.jsonl").write_text('{"text": "two"}\n')
    real = Path.exists

    def exists(self: Path, *args: object, **kwargs: object) -> bool:
        if self.parent.name == "sub":  # as root, mode 644 on the folder does not bite
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "exists", exists)
    assert [p.name for p in find_files([tmp_path / "c"])] == ["a.jsonl", "x.jsonl"]
