"""The indexing job against real SQLite and PostgreSQL databases: counts, exactly-once files,
groups and their commits, corrupt files, interruptions and kills."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import IndexCorpus
from helpers import make_docs, snapshot, write_jsonl
from sqlalchemy import Engine, event, select, text
from typer.testing import CliRunner

import contam.indexer.job as job_module
from contam.app.core.config import SignatureConfig
from contam.app.errors import FingerprintMismatch, SettingsConflict
from contam.app.services.scanning import Scanner
from contam.app.store import repo
from contam.app.store.db import make_engine, upgrade
from contam.app.store.schema import corpus_file, document
from contam.indexer.cli import app as cli
from contam.indexer.progress import BarProgress, LogProgress
from contam.indexer.summary import FileReport


def test_index_counts_and_rerun_is_idempotent(migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", make_docs(30, 120, 1, "a"))
    b = write_jsonl(tmp_path / "b.jsonl.gz", make_docs(20, 80, 2, "b"), gz=True)
    s = index_corpus(migrated_url, [tmp_path], "c", batch_size=7)
    d = s.as_dict()
    assert (d["files_indexed"], d["documents"], d["tokens"]) == (2, 50, 30 * 120 + 20 * 80)
    assert d["windows"] > 50 and d["ngrams"] > 0.95 * (30 * 113 + 20 * 73)
    first = snapshot(migrated_url)
    assert len(first["grams"]) == d["ngrams"]
    if migrated_url.startswith("postgresql"):  # planner statistics refreshed after the bulk load
        eng = make_engine(migrated_url)
        with eng.connect() as conn:
            analyzed = conn.execute(text("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'ngram_block'"))
            assert analyzed.scalar_one() is not None
        eng.dispose()
    again = index_corpus(migrated_url, [a, b], "c")
    assert again.as_dict()["files_unchanged"] == 2 and again.as_dict()["documents"] == 0
    assert snapshot(migrated_url) == first
    # the same content under another path is the same file
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "a2.jsonl").write_bytes(a.read_bytes())
    assert index_corpus(migrated_url, [tmp_path / "copy"], "c").as_dict()["files_unchanged"] == 1


def test_files_of_one_content_in_a_run_share_its_outcome(
    migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """Two empty files: the first failed and the second was `unchanged`, as if it had been
    indexed (a new user's trial). A file whose content an earlier file of the run holds now
    shares that file's outcome: failed with its reason, or unchanged (indexed once)."""
    (tmp_path / "a.jsonl").write_bytes(b"")
    (tmp_path / "b.jsonl").write_bytes(b"")
    good = write_jsonl(tmp_path / "c.jsonl", make_docs(5, 40, 3, "c"))
    (tmp_path / "d.jsonl").write_bytes(good.read_bytes())
    s = index_corpus(migrated_url, [tmp_path], "twins")
    status = {Path(f.path).name: (f.status, f.error) for f in s.files}
    assert status["a.jsonl"][0] == "failed" and status["c.jsonl"] == ("done", None)
    assert status["b.jsonl"] == (
        "failed",
        f"{tmp_path / 'b.jsonl'}: the same content as {tmp_path / 'a.jsonl'}: no documents: the file holds no records",
    )
    assert status["d.jsonl"] == ("unchanged", None)
    assert (s.as_dict()["files_failed"], s.as_dict()["documents"]) == (2, 5)
    # which file it is the same as, this run's or an earlier one's (a new user's trial: "already
    # indexed, skipped" on a corpus's first run, naming no other file)
    twins = {Path(f.path).name: f.same_as for f in s.files if f.status == "unchanged"}
    assert twins == {"d.jsonl": str(good)}
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "e.jsonl").write_bytes(good.read_bytes())
    again = index_corpus(migrated_url, [good, tmp_path / "e"], "twins")
    assert {Path(f.path).name: f.same_as for f in again.files} == {"c.jsonl": "", "e.jsonl": str(good)}


def test_parallel_workers_give_the_same_index(db_url: str, tmp_path: Path, index_corpus: IndexCorpus) -> None:
    write_jsonl(tmp_path / "a.jsonl", make_docs(40, 200, 3, "a"))
    write_jsonl(tmp_path / "b.jsonl", make_docs(40, 50, 4, "b"))
    upgrade(db_url)
    index_corpus(db_url, [tmp_path], "c", workers=2, batch_size=5)
    parallel = snapshot(db_url)
    other = tmp_path / "serial.db"
    serial_url = f"sqlite:///{other}"
    upgrade(serial_url)
    index_corpus(serial_url, [tmp_path], "c", workers=1, batch_size=1000)
    assert snapshot(serial_url) == parallel


def test_mismatched_settings_are_refused(migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus) -> None:
    f = write_jsonl(tmp_path / "a.jsonl", make_docs(3, 50, 1, "a"))
    index_corpus(migrated_url, [f], "c")
    g = write_jsonl(tmp_path / "b.jsonl", make_docs(3, 50, 2, "b"))
    with pytest.raises(FingerprintMismatch, match="ngram_n: index has 5, requested 13"):
        index_corpus(migrated_url, [g], "c", cfg=SignatureConfig(ngram_n=13))
    # a different corpus name may use other settings
    assert index_corpus(migrated_url, [g], "other", cfg=SignatureConfig(ngram_n=13)).as_dict()["documents"] == 3


def test_an_index_of_an_earlier_tokeniser_is_refused_with_the_way_out(
    migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """No option gives the tokeniser of an earlier release (NORMALIZER_VERSION): indexing more into
    its corpus, and scanning it, say to delete it and index again, not to pick other settings."""
    f = write_jsonl(tmp_path / "a.jsonl", make_docs(3, 50, 1, "a"))
    index_corpus(migrated_url, [f], "c", cfg=dataclasses.replace(SignatureConfig(), normalizer_version="2"))
    g = write_jsonl(tmp_path / "b.jsonl", make_docs(3, 50, 2, "b"))
    with pytest.raises(FingerprintMismatch, match=r"normalizer_version: index has '2'.*contam corpora delete c"):
        index_corpus(migrated_url, [g], "c")
    with pytest.raises(FingerprintMismatch, match=r"cannot reproduce .*normalizer_version.*contam corpora delete c"):
        Scanner(make_engine(migrated_url))
    # an upgrade probe: of two such corpora the refusal named the first, and no listing said which were stale
    index_corpus(migrated_url, [g], "d", cfg=dataclasses.replace(SignatureConfig(), normalizer_version="2"))
    with pytest.raises(FingerprintMismatch, match=r"corpus 'c', 'd' were indexed with settings this scorer cannot"):
        Scanner(make_engine(migrated_url))
    index_corpus(migrated_url, [g], "new")
    listed = CliRunner().invoke(cli, ["corpora", "--db", migrated_url]).output.splitlines()
    assert [line.split(":")[0] for line in listed if "INDEXED BY AN EARLIER RELEASE" in line] == ["c", "d"], listed
    shown = CliRunner().invoke(cli, ["corpora", "c", "--db", migrated_url]).output
    assert "INDEXED BY AN EARLIER RELEASE: scans refuse it" in shown, shown
    from contam.app.services.corpora import CorpusService

    svc = CorpusService(make_engine(migrated_url))
    assert svc.names(with_documents=True) == ["new"]  # what the upload form offers
    assert [c["reproducible"] for c in svc.list_corpora()] == [False, False, True]


def test_a_rerun_over_unchanged_files_deletes_nothing(
    engine: Engine, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """Each unchanged file's failed records were deleted one path at a time, each delete reading
    every file of the corpus: a rerun over 10,000 unchanged files took 37 s (a probe). Now the
    corpus's failed paths are read once, and a path without one is not deleted at all."""
    files = [write_jsonl(tmp_path / f"f{i}.jsonl", make_docs(1, 30, i, f"f{i}")) for i in range(40)]
    index_corpus(engine, files, "c")
    statements: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda _c, _cur, sql, *_a: statements.append(sql))
    again = index_corpus(engine, files, "c").as_dict()
    assert again["files_unchanged"] == 40, again
    assert not [q for q in statements if q.lstrip().upper().startswith("DELETE FROM CORPUS_FILE")], statements


def test_keeping_text_or_not_is_a_settings_conflict(
    migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """store_text is fixed per corpus; asking otherwise is a conflict (the API's 409), not bad input."""
    index_corpus(migrated_url, [write_jsonl(tmp_path / "a.jsonl", make_docs(3, 50, 1, "a"))], "c")
    with pytest.raises(SettingsConflict, match="store_text=True; keep it the same"):
        index_corpus(migrated_url, [write_jsonl(tmp_path / "b.jsonl", make_docs(3, 50, 2, "b"))], "c", store_text=False)


def test_corrupt_file_fails_alone_and_exit_code(migrated_url: str, tmp_path: Path) -> None:
    write_jsonl(tmp_path / "good.jsonl", make_docs(5, 40, 1, "g"))
    blob = gzip.compress("".join(json.dumps(d) + "\n" for d in make_docs(400, 60, 2, "x")).encode())
    (tmp_path / "broken.jsonl.gz").write_bytes(blob[: len(blob) // 2])
    bad_lines = tmp_path / "messy.jsonl"
    bad_lines.write_bytes(b'{"id": 1, "text": "fine text here"}\nnot json\n{"id": 2, "text": 7}\n{"id": 3}\n')
    result = CliRunner().invoke(
        cli, ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none", str(tmp_path)]
    )
    assert result.exit_code == 1, result.output
    assert "broken.jsonl.gz" in result.output and "cannot read to the end" in result.output
    eng = make_engine(migrated_url)
    with eng.connect() as conn:
        row = repo.get_corpus(conn, "c")
        assert row is not None
        health = repo.corpus_health(conn, row["id"])
        # nothing of the broken file was kept
        n_docs = conn.execute(text("SELECT count(*) FROM document")).scalar_one()
    eng.dispose()
    assert n_docs == 6
    assert health["documents"] == 6 and health["files"] == 2
    assert health["skipped"] == {"malformed_json": 1, "missing_text": 1, "non_string_text": 1}
    assert [f["path"].endswith("broken.jsonl.gz") for f in health["failed_files"]] == [True]
    # `contam corpora NAME` shows it; a rerun retries the failed file (and fails again)
    shown = CliRunner().invoke(cli, ["corpora", "c", "--db", migrated_url])
    assert shown.exit_code == 0 and "1 failed" in shown.output and "broken.jsonl.gz" in shown.output
    listed = CliRunner().invoke(cli, ["corpora", "--db", migrated_url])
    assert "c: 2 files indexed, 1 failed, 6 documents" in listed.output  # "(1 failed)" read as one of the 2
    rerun = CliRunner().invoke(
        cli, ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none", str(tmp_path)]
    )
    assert rerun.exit_code == 1 and '"files_unchanged": 2' in rerun.output


def test_a_file_that_cannot_be_opened_fails_alone(migrated_url: str, tmp_path: Path) -> None:
    """A link to nothing or a loop of links in a folder stopped the whole run ("error:
    FileNotFoundError", "RuntimeError: Symlink loop"), the files after it never indexed, and
    every rerun stopped there again: each fails alone, named, and the rest are indexed."""
    folder = tmp_path / "c"
    folder.mkdir()
    for name in ("a", "z"):
        write_jsonl(folder / f"{name}.jsonl", make_docs(3, 40, ord(name), name))
    (folder / "gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (folder / "x.jsonl").symlink_to(folder / "y.jsonl")
    (folder / "y.jsonl").symlink_to(folder / "x.jsonl")
    args = ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none"]
    result = CliRunner().invoke(cli, [*args, str(folder)])
    assert result.exit_code == 1, result.output
    summary = json.loads(result.stdout)
    assert (summary["files_indexed"], summary["files_failed"], summary["documents"]) == (2, 3, 6)
    assert f"{folder / 'gone.jsonl'}: cannot be read (No such file or directory)" in result.stderr
    assert f"{folder / 'x.jsonl'}: cannot be read (Too many levels of symbolic links)" in result.stderr
    given = CliRunner().invoke(cli, [*args, str(folder / "x.jsonl")])
    assert given.exit_code == 2 and f"a link to nothing, or a loop of links: {folder / 'x.jsonl'}" in given.output


def test_ids_no_database_holds_are_stored_replaced(migrated_url: str, tmp_path: Path) -> None:
    """A NUL (PostgreSQL) or a lone surrogate (both backends) in one record's id stopped the whole
    run with an encoding error naming no file, and every rerun the same: replaced, they index."""
    lines = [
        json.dumps({"id": "n\x00ul", "text": "a document whose id holds a nul character"}),
        '{"id": "s\\ud800x", "text": "a document whose id holds a lone surrogate"}',
        json.dumps({"id": "plain", "text": "a document with an ordinary id"}),
        # a lone surrogate in the text: indexed (json.loads reads it, where orjson refused the line),
        # it broke every JSON output and page that showed it (a review)
        '{"id": "t", "text": "Lone \\ud800 surrogate inside a document about the capital city of France"}',
    ]
    (tmp_path / "odd.jsonl").write_text("\n".join(lines) + "\n")
    args = ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none"]
    result = CliRunner().invoke(cli, [*args, str(tmp_path / "odd.jsonl")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["repaired"] == {"surrogate_replaced": 1}
    eng = make_engine(migrated_url)
    with eng.connect() as conn:
        ids = conn.execute(text("SELECT external_id FROM document ORDER BY position")).scalars().all()
    eng.dispose()
    assert ids == ["n\ufffdul", "s\ufffdx", "plain", "t"]
    (tmp_path / "b.jsonl").write_text(
        json.dumps({"id": "q", "question": "a document about the capital city of France"})
    )
    scan = CliRunner().invoke(cli, ["scan", str(tmp_path / "b.jsonl"), "--db", migrated_url, "--format", "json"])
    assert scan.exit_code == 0, scan.output
    assert "Lone \ufffd surrogate" in json.loads(scan.stdout)["results"][0]["evidence"][0]["excerpt"]


def test_an_id_field_named_and_missing_is_told(migrated_url: str, tmp_path: Path) -> None:
    """--id-field naming a field the records lack was ignored in silence (the documents got
    FILE:LINE ids), where a missing --text-field fails the file: a table without the column fails
    as well, and JSON records without it are counted (indexed, named FILE:LINE)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    write_jsonl(tmp_path / "a.jsonl", make_docs(3, 40, 1, "a"))
    table = pa.table({"id": ["p1"], "text": ["a parquet document with a few words in it"]})
    pq.write_table(table, tmp_path / "t.parquet")
    args = ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none"]
    result = CliRunner().invoke(cli, [*args, "--id-field", "nosuch", str(tmp_path)])
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    assert summary["repaired"] == {"missing_id": 3} and summary["files_failed"] == 1
    assert f"{tmp_path / 't.parquet'}: no column 'nosuch' (columns: id, text; --id-field names it)" in result.stderr
    assert "records indexed with a repair: missing_id=3" in result.stderr
    said = f"(missing_id: no field 'nosuch' (--id-field) in {tmp_path / 'a.jsonl'}; fields seen there: id, text; "
    assert said + "each such record is named by its file and place instead)" in result.stderr, result.stderr
    # the field there, empty in a record: not "no field" (a review)
    (tmp_path / "e").mkdir()
    write_jsonl(tmp_path / "e" / "e.jsonl", [{"key": "k1", "text": "one text here"}, {"key": None, "text": "two"}])
    empty = CliRunner().invoke(cli, [*args, "--corpus", "e", "--id-field", "key", str(tmp_path / "e")])
    assert "(missing_id: the field 'key' (--id-field) is empty or not text or a number in some records;" in empty.stderr
    again = CliRunner().invoke(cli, [*args, "--corpus", "d", str(tmp_path)])  # the default id: optional, not told
    assert again.exit_code == 0 and json.loads(again.stdout)["repaired"] == {}


def test_the_run_so_far_counts_a_group_indexed_again_once(migrated_url: str, tmp_path: Path) -> None:
    """A corrupt file rolls its group back and the good files are indexed again: the log's "the
    run so far" counted their text twice (8.4 MB for a 4.2 MB file; a careful user's check)."""
    write_jsonl(tmp_path / "a.jsonl", make_docs(300, 200, 1, "a"))
    blob = gzip.compress("".join(json.dumps(d) + "\n" for d in make_docs(400, 60, 2, "x")).encode())
    (tmp_path / "z.jsonl.gz").write_bytes(blob[: len(blob) // 2])
    args = ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "log", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    done = next(line for line in result.stderr.splitlines() if line.startswith("done [1/2]"))
    own = done.split(" MB of text")[0].rsplit(", ", 1)[1]
    assert f"(the run so far: {own} MB at" in done, done
    assert json.loads(result.stdout)["text_mb"] == pytest.approx(float(own), abs=0.06)


def test_a_record_too_long_is_left_out_with_the_limit_named(migrated_url: str, tmp_path: Path) -> None:
    """A 65 MB record was left out as `record_too_long` without the limit said anywhere near (a trial)."""
    path = tmp_path / "huge.jsonl"
    with path.open("w") as f:
        f.write(json.dumps({"id": "big", "text": "word " * (13 * 2**20 + 1)}) + "\n")
        f.write(json.dumps({"id": "small", "text": "a short document of its own"}) + "\n")
    args = ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none", str(path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0 and json.loads(result.stdout)["documents"] == 1
    assert "1 record(s) left out: record_too_long=1" in result.stderr
    assert "a record over 64 MiB is left out" in result.stderr and "split it into several records" in result.stderr
    one = tmp_path / "one.txt"  # a text file is one record: too long, the file fails, and says the limit (a review)
    one.write_text("word " * (13 * 2**20 + 1))
    failed = CliRunner().invoke(cli, [*args[:-1], str(one)])
    assert failed.exit_code == 1 and "every record was skipped (record_too_long: 1)" in failed.stderr
    assert "a record over 64 MiB is left out" in failed.stderr


ACCENTED = (
    "The caf\u00e9 au lait served in the old town square of Besan\u00e7on pleased every na\u00efve visitor that summer"
)


def test_a_latin1_record_is_indexed_repaired_not_counted_as_skipped(migrated_url: str, tmp_path: Path) -> None:
    """A record of Latin-1 from an old tool is indexed, read as Windows-1252 (it was read with
    replacement characters, "caf\ufffd", before): the summary, the progress log and the corpus's
    health say it was repaired, and skipped (left out) stays for what was left out. It was counted
    among the skipped records. An accented item copied from it is found."""
    path = tmp_path / "old.jsonl"
    path.write_bytes(
        f'{{"id": 1, "text": "{ACCENTED}"}}\n'.encode("latin-1")
        + '{"id": 3, "body": "no text field, na\u00efve"}\n'.encode("latin-1")  # repaired, then skipped
        + b'{"id": 2, "text": "plain text of the second record"}\nnot json\n'
    )
    utf16 = tmp_path / "wide.jsonl"  # UTF-32 with no byte order mark: every record garbled, none repaired
    utf16.write_bytes((json.dumps({"id": "w", "text": "rivers and tides"}) + "\n").encode("utf-32-le"))
    args = ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "log"]
    result = CliRunner().invoke(cli, [*args, str(path), str(utf16)])
    assert result.exit_code == 1, result.output  # the UTF-16 file gave no document
    summary = json.loads(result.stdout)
    assert summary["documents"] == 2
    # the files indexed only, as documents are: the UTF-16 file kept nothing, and its error says
    # what it skipped (it was counted here, and under the corpus's health, as kept files' were)
    assert summary["skipped"] == {"malformed_json": 1, "missing_text": 1}
    assert "every record was skipped (malformed_json: 2)" in result.stderr
    assert summary["repaired"] == {"decoded_cp1252": 1}  # the one record indexed, not the one skipped
    assert "(skipped: malformed_json=1, missing_text=1) (repaired: decoded_cp1252=1)" in result.stderr
    # said at the end whatever the progress mode, not only in the JSON
    assert "2 record(s) left out: malformed_json=1, missing_text=1" in result.stderr
    # and where they were, file by file (counts alone sent users through the file looking)
    assert f"  {path}: missing_text at line 2; malformed_json at line 4" in result.stderr
    assert f"  {path}: decoded_cp1252 at line 1" in result.stderr
    assert "records indexed with a repair: decoded_cp1252=1" in result.stderr
    assert "read as Windows-1252, the Latin-1 of old tools" in result.stderr  # a guess: said, with what to do
    assert "iconv -f latin2 -t utf-8, and index it into a new corpus" in result.stderr
    assert "re-encode it as UTF-8" in result.stderr and "repaired" not in result.stderr.split("wide.jsonl")[-1]
    # old.jsonl, in the failed file's commit group, is indexed again under its own number ([3/2] before)
    assert f"indexing again [1/2] {path}" in result.stderr and "[3/2]" not in result.stderr
    health = json.loads(CliRunner().invoke(cli, ["corpora", "c", "--db", migrated_url, "--json"]).stdout)
    assert health["documents"] == 2 and health["repaired"] == {"decoded_cp1252": 1}
    assert health["skipped"] == {"malformed_json": 1, "missing_text": 1}
    assert [(f["path"], f["skipped"]) for f in health["failed_files"]] == [(str(utf16), {"malformed_json": 2})]
    shown = CliRunner().invoke(cli, ["corpora", "c", "--db", migrated_url]).output
    assert "repaired:   decoded_cp1252=1" in shown
    assert "(skipped before: malformed_json=2)" in shown
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "q", "question": ACCENTED}) + "\n")
    scanned = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url, "--format", "json"])
    assert json.loads(scanned.stdout)["results"][0]["status"] == "contaminated", scanned.output


def test_a_latin1_text_file_among_utf8_ones_is_named(migrated_url: str, tmp_path: Path) -> None:
    """A .txt file is one document with no line to name: its repair was counted ("decoded_cp1252=1")
    and no file named, where a JSON lines file's is named with its line (a new user's trial)."""
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "a.txt").write_text("plain text of the first file", encoding="utf-8")
    (folder / "b.txt").write_bytes(ACCENTED.encode("latin-1"))
    (folder / "c.txt").write_text("caf\u00e9 written as UTF-8", encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["index", "--corpus", "t", "--db", migrated_url, "--progress", "none", str(folder)]
    )
    assert result.exit_code == 0, result.output
    assert "records indexed with a repair: decoded_cp1252=1" in result.stderr
    assert f"  {folder / 'b.txt'}: decoded_cp1252 at the whole file" in result.stderr
    assert "a.txt" not in result.stderr and "c.txt" not in result.stderr


def test_corrupt_file_inside_a_group_leaves_the_rest_indexed_once(
    db_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """Files share a transaction; a corrupt one rolls back its group, whose good files are redone."""
    mixed, clean = tmp_path / "mixed", tmp_path / "clean"
    mixed.mkdir()
    clean.mkdir()
    for d in (mixed, clean):
        write_jsonl(d / "a.jsonl", make_docs(40, 90, 1, "a"))
        write_jsonl(d / "c.jsonl.gz", make_docs(30, 70, 3, "c"), gz=True)
    blob = gzip.compress("".join(json.dumps(d) + "\n" for d in make_docs(300, 60, 2, "b")).encode())
    (mixed / "b-broken.jsonl.gz").write_bytes(blob[: len(blob) // 2])
    upgrade(db_url)
    s = index_corpus(db_url, [mixed], "c", batch_size=25)  # default grouping: a and b share a transaction
    assert [(Path(f.path).name, f.status) for f in s.files] == [
        ("a.jsonl", "done"),
        ("b-broken.jsonl.gz", "failed"),
        ("c.jsonl.gz", "done"),
    ]
    assert s.as_dict()["documents"] == 70
    fresh_url = f"sqlite:///{tmp_path / 'fresh.db'}"
    upgrade(fresh_url)
    index_corpus(fresh_url, [clean], "c", batch_size=25)
    got, want = snapshot(db_url), snapshot(fresh_url)
    assert got["docs"] == want["docs"] and got["grams"] == want["grams"] and got["bands"] == want["bands"]
    assert [(Path(p).name, st, n) for p, st, n in got["files"]] == [
        ("a.jsonl", "done", 40),
        ("b-broken.jsonl.gz", "failed", 0),
        ("c.jsonl.gz", "done", 30),
    ]


def test_an_error_while_reading_stops_the_run_and_keeps_no_part_of_it(
    migrated_url: str, tmp_path: Path, monkeypatch, index_corpus: IndexCorpus
) -> None:  # type: ignore[no-untyped-def]
    """An unexpected error (or Ctrl-C) in the middle of a file ends the run promptly, never hangs,
    and leaves only what was committed before it: here nothing, as the files share a group."""
    write_jsonl(tmp_path / "a.jsonl", make_docs(30, 50, 1, "a"))
    write_jsonl(tmp_path / "b.jsonl", make_docs(30, 50, 2, "b"))
    real = job_module.read_documents

    def failing(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        for i, doc in enumerate(real(path, *args, **kwargs)):
            if path.name == "b.jsonl" and i == 20:
                raise PermissionError(f"{path}: lost access")
            yield doc

    monkeypatch.setattr(job_module, "read_documents", failing)
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            index_corpus(migrated_url, [tmp_path], "c", batch_size=5)
        except BaseException as exc:
            outcome.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the indexer hung after an error in the main thread"
    assert len(outcome) == 1 and isinstance(outcome[0], PermissionError)
    assert snapshot(migrated_url)["docs"] == []


def test_a_file_changed_while_it_is_read_fails_and_keeps_nothing(
    migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index_corpus: IndexCorpus
) -> None:
    """A file appended to as it was indexed was recorded at its old size and hash with some of the
    new records, and the next run indexed it again, whole: its documents twice (a trial). It fails
    now, saying so, its rows rolled back with its group's, and the next run indexes it once; the
    other file of the group is indexed again after it."""
    grow = write_jsonl(tmp_path / "a-grow.jsonl", make_docs(20, 30, 7, "g"))
    write_jsonl(tmp_path / "b-still.jsonl", make_docs(5, 30, 8, "s"))
    real = job_module.read_documents

    def growing(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        for i, doc in enumerate(real(path, *args, **kwargs)):
            if path == grow and i == 5:
                with path.open("a") as f:
                    f.write(json.dumps({"id": "late", "text": "a record appended while the file was read"}) + "\n")
            yield doc

    monkeypatch.setattr(job_module, "read_documents", growing)
    first = {Path(f.path).name: f for f in index_corpus(migrated_url, [tmp_path], "c", batch_size=5).files}
    assert first["a-grow.jsonl"].status == "failed" and first["b-still.jsonl"].status == "done"
    assert "changed while it was read" in (first["a-grow.jsonl"].error or "")
    ids = [d[0] for d in snapshot(migrated_url)["docs"]]
    assert len(ids) == 5 and all(i.startswith("s") for i in ids), ids
    monkeypatch.setattr(job_module, "read_documents", real)
    again = index_corpus(migrated_url, [tmp_path], "c")
    assert [f.status for f in again.files] == ["done", "unchanged"] and again.total("documents") == 21


def test_a_file_rewritten_at_its_size_is_said_to_be_written_to(tmp_path: Path) -> None:
    """Bytes rewritten in place, the size kept, were "changed while it was read (N bytes when it
    was hashed, N now)": two equal sizes said nothing of what changed (a trial)."""
    f = tmp_path / "a.jsonl"
    f.write_text("x" * 100)
    before = f.stat()
    assert job_module.changed_while_read(f, before) is None
    f.write_text("y" * 100)
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    said = job_module.changed_while_read(f, before)
    assert said is not None and "written to since it was hashed, its size the same" in said, said


class _Events:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def run_started(self, files: list[Path]) -> None:
        pass

    def file_started(self, path: str, size: int) -> None:
        self.seen.append("start " + Path(path).name)

    def advanced(self, documents: int, nbytes: int) -> None:
        assert documents > 0 and nbytes > 0
        self.seen.append("advanced")

    def file_finished(self, report) -> None:  # type: ignore[no-untyped-def]
        self.seen.append("done " + Path(report.path).name)


@pytest.mark.parametrize(
    ("opts", "order"),
    [
        ({}, ["start a.jsonl", "start b.jsonl", "done a.jsonl", "done b.jsonl"]),
        ({"commit_bytes": 0}, ["start a.jsonl", "done a.jsonl", "start b.jsonl", "done b.jsonl"]),
        ({"commit_seconds": 0.0}, ["start a.jsonl", "done a.jsonl", "start b.jsonl", "done b.jsonl"]),
    ],
    ids=["grouped", "by-size", "by-time"],
)
def test_a_group_commits_at_its_size_or_time_limit(
    migrated_url: str, tmp_path: Path, opts: dict, order: list[str], index_corpus: IndexCorpus
) -> None:
    """Files are reported done when their transaction commits; the text read and signed is
    reported before that (the progress bar once sat at 0% until a group committed)."""
    write_jsonl(tmp_path / "a.jsonl", make_docs(5, 40, 1, "a"))
    write_jsonl(tmp_path / "b.jsonl", make_docs(5, 40, 2, "b"))
    events = _Events()
    index_corpus(migrated_url, [tmp_path], "c", progress=events, **opts)
    assert [e for e in events.seen if e != "advanced"] == order
    assert "advanced" in events.seen[: events.seen.index("done a.jsonl")]


def test_pointer_only_corpus_keeps_no_text(migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus) -> None:
    write_jsonl(tmp_path / "a.jsonl", make_docs(3, 30, 1, "a"))
    index_corpus(migrated_url, [tmp_path], "c", store_text=False)
    eng = make_engine(migrated_url)
    with eng.connect() as conn:
        assert conn.execute(select(document.c.text)).scalars().all() == [None, None, None]
        assert conn.execute(select(document.c.position)).scalars().all() == [1, 2, 3]
    eng.dispose()


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "contam.indexer.cli", *args]


@pytest.mark.parametrize("commit_mb", ["0", "256"], ids=["commit-per-file", "commit-per-group"])
def test_killed_run_resumes_to_the_same_index(
    db_url: str, tmp_path: Path, commit_mb: str, index_corpus: IndexCorpus
) -> None:
    """SIGKILL the indexer in the middle of a file, rerun, compare with an uninterrupted run.

    With a commit per file the first file survives the kill; with the default grouping the
    three small-to-medium files share one transaction and nothing survives. Either way the
    rerun ends with exactly the index of a run that was never interrupted.
    """
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write_jsonl(corpus / "a-small.jsonl", make_docs(50, 100, 1, "a"))
    write_jsonl(corpus / "b-big.jsonl", make_docs(12000, 120, 2, "b"))
    write_jsonl(corpus / "c-small.jsonl.gz", make_docs(50, 100, 3, "c"), gz=True)
    upgrade(db_url)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = _cli(
        "index",
        "--corpus",
        "c",
        "--db",
        db_url,
        "--workers",
        "1",
        "--batch-size",
        "200",
        "--commit-mb",
        commit_mb,
        "--progress",
        "log",
        str(corpus),
    )
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("indexing [2/3]"):
            break
    time.sleep(0.3)  # well inside the big file, which takes over a second
    assert proc.poll() is None, "indexer finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = snapshot(db_url)
    survived = 1 if commit_mb == "0" else 0
    assert [f[0].endswith("a-small.jsonl") for f in partial["files"]] == [True] * survived
    assert len(partial["docs"]) == 50 * survived  # nothing of a file in progress
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert f'"files_unchanged": {survived}' in done.stdout and f'"files_indexed": {3 - survived}' in done.stdout
    resumed = snapshot(db_url)
    fresh_url = f"sqlite:///{tmp_path / 'fresh.db'}"
    upgrade(fresh_url)
    index_corpus(fresh_url, [corpus], "c", batch_size=200)
    fresh = snapshot(fresh_url)
    assert resumed["docs"] == fresh["docs"] and len(fresh["docs"]) == 12100
    assert resumed["grams"] == fresh["grams"]
    assert resumed["bands"] == fresh["bands"]
    assert resumed["files"] == fresh["files"]


# ---------------------------------------------------------------- zero is never silent


def test_a_failure_forgotten_in_a_group_rolled_back_is_forgotten_when_the_file_goes_round_again(
    migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """A file that failed before (a wrong --text-field) is indexed in one group with a corrupt
    file: the group rolls back (its forgetting of the old failure too) and the good file goes
    round again. The writer's list of failed paths must forget the rollback's undoing too, or the
    old failure stays in the corpus's health beside the file indexed (a review)."""
    good = write_jsonl(tmp_path / "a.jsonl", make_docs(3, 40, 1, "a"))
    assert [f.status for f in index_corpus(migrated_url, [good], "c", text_field="txt").files] == ["failed"]
    bad = tmp_path / "b.jsonl.gz"
    bad.write_bytes(gzip.compress(b"".join(json.dumps(d).encode() + b"\n" for d in make_docs(50, 40, 2, "b")))[:-40])
    run = index_corpus(migrated_url, [good, bad], "c")
    assert [f.status for f in run.files] == ["done", "failed"], [(f.path, f.status) for f in run.files]
    eng = make_engine(migrated_url)
    with eng.connect() as conn:
        rows = conn.execute(select(corpus_file.c.path, corpus_file.c.status)).all()
    eng.dispose()
    assert sorted((Path(p).name, st) for p, st in rows) == [("a.jsonl", "done"), ("b.jsonl.gz", "failed")], rows


def test_a_file_without_documents_fails_naming_the_fields_it_holds(
    migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """A wrong --text-field once indexed 0 documents and exited 0; then the right one skipped the
    file as "already indexed". Now the file fails, naming its fields, and the rerun indexes it."""
    data = write_jsonl(tmp_path / "d.jsonl", make_docs(3, 40, 1, "d"))
    wrong = index_corpus(migrated_url, [data], "c", text_field="txt")
    assert [f.status for f in wrong.files] == ["failed"]
    assert "no field 'txt'; fields seen: id, text" in str(wrong.files[0].error)
    right = index_corpus(migrated_url, [data], "c", text_field="text")
    assert [f.status for f in right.files] == ["done"] and right.as_dict()["documents"] == 3
    eng = make_engine(migrated_url)
    with eng.connect() as conn:  # the stale failure of the same path is forgotten
        assert conn.execute(select(corpus_file.c.status)).scalars().all() == ["done"]
    again_wrong = index_corpus(migrated_url, [data], "c", text_field="txt")
    assert [f.status for f in again_wrong.files] == ["failed"]
    unchanged = index_corpus(migrated_url, [data], "c", text_field="text")
    assert [f.status for f in unchanged.files] == ["unchanged"]
    with eng.connect() as conn:  # indexed whole already: the newer failure is forgotten too
        assert conn.execute(select(corpus_file.c.status)).scalars().all() == ["done"]
    eng.dispose()
    blank = tmp_path / "blank.jsonl"
    blank.write_text(json.dumps({"id": "x", "text": "  "}) + "\n")
    empty = index_corpus(migrated_url, [blank], "c")
    assert "every record was skipped (empty_text: 1)" in str(empty.files[0].error)


def test_a_path_that_fails_again_with_other_settings_is_listed_once(
    migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """A failed file tried again with another --text-field, failing again, was listed twice among
    the corpus's failed files (once a try: a trial counted a file four times, "10 failed" of a
    few); the latest failure says why it fails now."""
    data = write_jsonl(tmp_path / "d.jsonl", make_docs(3, 40, 1, "d"))
    for field in ("txt", "body", "content"):
        assert [f.status for f in index_corpus(migrated_url, [data], "c", text_field=field).files] == ["failed"]
    health = CliRunner().invoke(cli, ["corpora", "c", "--db", migrated_url, "--json"])
    failed = json.loads(health.stdout)["failed_files"]
    assert [(Path(f["path"]).name, "no field 'content'" in f["error"]) for f in failed] == [("d.jsonl", True)], failed


def test_index_command_exits_non_zero_when_nothing_was_indexed(migrated_url: str, tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "m.py").write_text("print('hello')\n")
    run = CliRunner()
    r = run.invoke(cli, ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", str(code)])
    assert r.exit_code == 2 and "no corpus files in this folder" in r.output
    data = write_jsonl(tmp_path / "d.jsonl", make_docs(2, 40, 1, "d"))
    args = ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none"]
    r = run.invoke(cli, [*args, "--text-field", "body", str(data)])
    assert r.exit_code == 1 and "no field 'body'; fields seen: id, text" in r.output
    assert run.invoke(cli, [*args, str(data)]).exit_code == 0
    # records wrapped in one object (some exports write {"data": [...]}) were told to choose
    # another --text-field, which cannot help: they are told where the records are
    wrapped = tmp_path / "w.json"
    wrapped.write_text(json.dumps({"data": make_docs(2, 40, 2, "w"), "version": 2}))
    r = run.invoke(cli, [*args, str(wrapped)])
    assert r.exit_code == 1 and "one JSON object whose 'data' holds the records" in r.output, r.output
    assert "--text-field" not in r.output.split("w.json")[-1]


def test_the_progress_bar_moves_before_a_file_commits(tmp_path: Path) -> None:
    """Files commit in groups, so the bar once sat at 0% until the end of the run."""
    a = write_jsonl(tmp_path / "a.jsonl", make_docs(40, 100, 1, "a"))
    bar = BarProgress()
    try:
        bar.run_started([a])
        bar.file_started(str(a), a.stat().st_size)
        bar.advanced(20, a.stat().st_size // 2)  # half the file read and signed, nothing committed
        half = bar.bar.tasks[0].completed / bar.bar.tasks[0].total
        assert 0.4 < half < 0.6
        bar.advanced(20, a.stat().st_size)  # more text than the file holds on disk (compression): capped
        assert bar.bar.tasks[0].completed == pytest.approx(a.stat().st_size / 1e6)
        bar.file_finished(FileReport(str(a), "done", documents=40, bytes=a.stat().st_size, text_bytes=a.stat().st_size))
        assert bar.bar.tasks[0].completed == pytest.approx(bar.bar.tasks[0].total)
    finally:
        bar.close()


def test_log_lines_give_the_run_rate_as_the_summary_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file's own interval (from its first batch written to its last) leaves out the signing
    done ahead of it and the commit: its rate read 19 and 28 MB/s in a run of 5 MB/s."""
    out = io.StringIO()
    log = LogProgress(out)
    now = [100.0]
    monkeypatch.setattr("contam.indexer.progress.time.perf_counter", lambda: now[0])
    log.run_started([Path("a.jsonl"), Path("b.jsonl")])
    log.advanced(10, 2_000_000)
    log.advanced(10, 2_000_000)
    now[0] += 4.0  # four seconds into the run, both files written, then committed together
    for name in ("a.jsonl", "b.jsonl"):
        log.file_finished(FileReport(name, "done", documents=10, tokens=500, text_bytes=2_000_000, seconds=0.1))
    lines = out.getvalue().splitlines()
    assert [x.split("; ")[0].endswith("2.0 MB of text (the run so far: 4.0 MB at 1.0 MB/s)") for x in lines] == [
        True,
        True,
    ]


def test_a_finished_file_s_line_carries_its_own_number() -> None:
    """ "indexing [1/3] a" then "done [2/3] a": the bracket counted files finished, read as the
    file's number (a new user's trial). A file keeps its number; the count follows the message."""
    out = io.StringIO()
    log = LogProgress(out)
    log.run_started([Path("a.jsonl"), Path("b.jsonl"), Path("c.jsonl")])
    log.file_finished(FileReport("c.jsonl", "unchanged"))  # never started: the next number
    log.file_started("a.jsonl", 10)
    log.file_started("b.jsonl", 10)
    log.file_finished(FileReport("b.jsonl", "done", documents=1))
    log.file_finished(FileReport("a.jsonl", "failed", error="a.jsonl: broken"))
    lines = out.getvalue().splitlines()
    assert lines[0] == "unchanged [1/3] c.jsonl: already indexed, skipped; 1 of 3 files finished"
    assert lines[3].startswith("done [3/3] b.jsonl: ") and lines[3].endswith("; 2 of 3 files finished")
    assert lines[4].startswith("failed [2/3] a.jsonl: FAILED") and lines[4].endswith("; 3 of 3 files finished")


def test_a_folder_s_files_that_are_no_corpus_format_are_named_not_left_out_silently(
    migrated_url: str, tmp_path: Path
) -> None:
    """A folder's .csv and .md were left out of the index without a word."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps({"id": 1, "text": "plain text of the first record"}) + "\n")
    (folder / "b.csv").write_text("id,text\n1,x\n")
    (folder / "notes.md").write_text("# notes\n")
    (folder / ".hidden").write_text("x")
    (folder / ".git").mkdir()  # a clone's own files are not the corpus's
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "rows.csv.gz").write_bytes(b"")
    args = ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none", str(folder)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["documents"] == 1
    assert "3 file(s) in the folders not indexed, not a corpus format (.csv: 1, .csv.gz: 1, .md: 1)" in result.stderr
    # hidden corpus files and folders are not the corpus's either: they were indexed without a word,
    # while the count above left them out as not the corpus's (a trial); named, one is indexed
    (folder / ".cache").mkdir()
    (folder / ".cache" / "x.jsonl").write_text(json.dumps({"id": 2, "text": "a cached copy of something"}) + "\n")
    (folder / ".draft.jsonl").write_text(json.dumps({"id": 3, "text": "a draft kept out of the corpus"}) + "\n")
    again = CliRunner().invoke(cli, args)
    assert json.loads(again.stdout)["documents"] == 0 and json.loads(again.stdout)["files_unchanged"] == 1
    assert "3 hidden or linked file(s) or folder(s) in the folders not indexed (" in again.stderr, again.stderr
    assert "name one to index it" in again.stderr and str(folder / ".draft.jsonl") in again.stderr
    named = CliRunner().invoke(cli, [*args[:-1], str(folder / ".draft.jsonl")])
    assert json.loads(named.stdout)["documents"] == 1, named.output
    # a linked folder inside is not walked (documented) and was not named, where hidden ones were
    # (a trial and a review); it is named now, and indexed when named
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "l.jsonl").write_text(json.dumps({"id": 4, "text": "a shard kept in another folder"}) + "\n")
    (folder / "linked").symlink_to(elsewhere, target_is_directory=True)
    linked = CliRunner().invoke(cli, args)
    assert json.loads(linked.stdout)["documents"] == 0, linked.output
    assert f"{folder / 'linked'}/ (a link)" in linked.stderr, linked.stderr
    assert json.loads(CliRunner().invoke(cli, [*args[:-1], str(folder / "linked")]).stdout)["documents"] == 1


def test_a_file_indexed_again_with_other_content_is_told(migrated_url: str, tmp_path: Path) -> None:
    """A file fixed (re-encoded, a record corrected) and indexed again at the same path is new
    content: the corpus then holds both versions' documents. Nothing said so (a new user's trial:
    "7 indexed files for 6 paths"); the summary lists the path and stderr says how to start over."""
    path = tmp_path / "notes.jsonl"
    path.write_text(json.dumps({"id": "a", "text": "caf\u00e9 rivers and tides in the old town"}) + "\n")
    args = ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none", str(path)]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0 and json.loads(first.stdout)["paths_with_older_versions"] == []
    again = CliRunner().invoke(cli, args)  # unchanged: nothing to say
    assert json.loads(again.stdout)["paths_with_older_versions"] == [] and "warning" not in again.stderr
    fixed_rows = [{"id": "a", "text": "cafe rivers and tides in the old town, fixed"}, {"id": "b", "text": "more"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in fixed_rows))
    fixed = CliRunner().invoke(cli, args)
    assert fixed.exit_code == 0 and json.loads(fixed.stdout)["paths_with_older_versions"] == [str(path)]
    assert "1 file(s) were indexed before with other content" in fixed.stderr and f"{path}: 2 versions" in fixed.stderr
    assert "contam corpora delete c" in fixed.stderr
    # the same content read with other extraction settings into other documents is a version too,
    # and the warning says so (it spoke of other content only: a new user's trial, after `--limit 1`)
    limited = CliRunner().invoke(cli, [*args[:-1], "--limit", "1", str(path)])
    assert json.loads(limited.stdout)["paths_with_older_versions"] == [str(path)]
    assert "other content or other extraction settings (--text-field, --id-field, --limit)" in limited.stderr


def test_a_failed_rerun_of_an_indexed_file_says_its_version_stays(migrated_url: str, tmp_path: Path) -> None:
    """A rerun with a wrong --text-field fails on a file indexed before: the run's error list and
    the corpus's health listed it as failed beside its indexed version, as if the index were lost
    (session 48's note). Both now say that version's documents stay; a file never indexed is
    not said to."""
    kept, new = tmp_path / "kept.jsonl", tmp_path / "new.jsonl"
    kept.write_text(json.dumps({"text": "rivers and tides in the old town by the harbour wall"}) + "\n")
    args = ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none"]
    assert CliRunner().invoke(cli, [*args, str(kept)]).exit_code == 0
    new.write_text(json.dumps({"text": "a file this corpus never held whole"}) + "\n")
    wrong = CliRunner().invoke(cli, [*args, "--text-field", "body", str(kept), str(new)])
    assert wrong.exit_code == 1 and "2 file(s) failed" in wrong.stderr, wrong.output
    assert json.loads(wrong.stdout)["failed_paths_indexed_before"] == [str(kept)]
    assert "(1 of them was indexed before: that version's documents stay in the corpus" in wrong.stderr
    health = CliRunner().invoke(cli, ["corpora", "c", "--db", migrated_url])
    failed = [line for line in health.stdout.splitlines() if line.strip().startswith("failed:")]
    assert len(failed) == 2, health.stdout
    assert [str(kept) in line for line in failed] == [
        "(a version indexed before stays in the corpus)" in line for line in failed
    ]
    assert any("(a version indexed before stays in the corpus)" in line for line in failed)


def test_files_of_one_content_that_fail_are_each_listed(migrated_url: str, tmp_path: Path) -> None:
    """A trial: four files failed (two empty, two copies of a record without text) and `contam
    corpora` listed two, failure records being kept by content: a copy's failure was none of its
    own, and a later run's failure of another file of that content replaced the earlier one. Each
    path that failed is listed, with its reason."""
    folder = tmp_path / "e2"
    folder.mkdir()
    (folder / "a.txt").write_text("")
    (folder / "b.jsonl").write_text("")
    (folder / "c.jsonl").write_text('{"x": 1}\n')
    (folder / "d.jsonl").write_text('{"x": 1}\n')
    args = ["index", "--corpus", "emp", "--db", migrated_url, "--workers", "1", "--progress", "none"]
    run = CliRunner().invoke(cli, [*args, str(folder)])
    assert run.exit_code == 1 and "4 file(s) failed" in run.stderr, run.output

    def listed() -> dict[str, str]:
        health = CliRunner().invoke(cli, ["corpora", "emp", "--db", migrated_url]).stdout
        failed = [line.split("failed:", 1)[1].strip() for line in health.splitlines() if "  failed:" in line]
        return {Path(line.split(":", 1)[0]).name: line for line in failed}

    assert sorted(listed()) == ["a.txt", "b.jsonl", "c.jsonl", "d.jsonl"], listed()
    assert "the same content as" in listed()["d.jsonl"]
    # another run's failure of a file of the same content is that file's, not a replacement
    (tmp_path / "empty.jsonl").write_text("")
    CliRunner().invoke(cli, [*args, str(tmp_path / "empty.jsonl")])
    assert sorted(listed()) == ["a.txt", "b.jsonl", "c.jsonl", "d.jsonl", "empty.jsonl"], listed()
    # and a path that is read (a fixed file) drops its own failure only
    (folder / "c.jsonl").write_text('{"text": "now a record with words in it"}\n')
    assert CliRunner().invoke(cli, [*args, str(folder / "c.jsonl")]).exit_code == 0
    assert sorted(listed()) == ["a.txt", "b.jsonl", "d.jsonl", "empty.jsonl"], listed()


def test_a_file_read_again_into_the_same_documents_is_unchanged(migrated_url: str, tmp_path: Path) -> None:
    """A folder indexed again with `--text-field text,content` to take the files that failed (as the
    failure says to) stored every other file's documents a second time: an item copied into 6 pages
    was then in 12, over max_df, and scanned clean, and the CI gate passed (a trial). Settings that
    give the very documents (ids, positions and texts) a version at that path holds leave the file
    unchanged; settings that give others still index a new version."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    q = "Which Moravian friar bred pea plants to discover the laws of dominant and recessive traits?"
    pages = [{"id": f"d{i}", "text": f"Page {i} about gardens and peas. Quiz: {q} Answer: Mendel."} for i in range(6)]
    (folder / "web.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pages))
    (folder / "blog.jsonl").write_text(json.dumps({"id": "b", "content": "a blog post on rivers and tides"}) + "\n")
    args = ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none"]
    first = CliRunner().invoke(cli, [*args, str(folder)])
    assert first.exit_code == 1 and json.loads(first.stdout)["documents"] == 6  # blog.jsonl failed
    # a copy under another name, before or after it in the run, is the same bytes: indexed once (a
    # second trial: a mirror was stored again by the rerun, and the item scanned clean)
    (folder / "0-copy.jsonl").write_bytes((folder / "web.jsonl").read_bytes())
    (folder / "web-mirror.jsonl").write_bytes((folder / "web.jsonl").read_bytes())
    again = CliRunner().invoke(cli, [*args, "--text-field", "text,content", str(folder)])
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert (summary["files_unchanged"], summary["files_indexed"], summary["documents"]) == (3, 1, 1), summary
    assert summary["paths_with_older_versions"] == [], summary
    health = CliRunner().invoke(cli, ["corpora", "c", "--db", migrated_url, "--json"])
    assert json.loads(health.stdout)["documents"] == 7 and json.loads(health.stdout)["failed_files"] == []
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "q", "question": q, "answer": "Mendel"}) + "\n")
    scan = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url, "--format", "json"])
    assert json.loads(scan.stdout)["results"][0]["status"] == "contaminated"
    # other documents from the same bytes (another field) are a new version, as before
    (folder / "web.jsonl").write_text("".join(json.dumps({**r, "title": f"t{i}"}) + "\n" for i, r in enumerate(pages)))
    titles = CliRunner().invoke(cli, [*args, "--text-field", "title", str(folder / "web.jsonl")])
    assert json.loads(titles.stdout)["paths_with_older_versions"] == [str(folder / "web.jsonl")], titles.output


def test_a_file_of_another_size_is_not_read_to_compare_its_documents(
    migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index_corpus: IndexCorpus
) -> None:
    """Telling a file read again into the same documents costs a read of it: a file appended to
    (another size: other bytes) was read once more for it, a third time in all, and every version's
    documents held in memory (a review). Only versions of its size are compared, until one differs."""
    import contam.app.services.indexing as indexing

    f = write_jsonl(tmp_path / "a.jsonl", make_docs(6, 30, 9, "a"))
    index_corpus(migrated_url, [f], "c")
    reads: list[Path] = []
    real = indexing.read_documents
    monkeypatch.setattr(indexing, "read_documents", lambda p, *a, **k: (reads.append(p), real(p, *a, **k))[1])
    with f.open("a") as out:
        out.write(json.dumps({"id": "late", "text": "one more record at the end of the file"}) + "\n")
    assert [r.status for r in index_corpus(migrated_url, [f], "c").files] == ["done"] and reads == []
    assert [r.status for r in index_corpus(migrated_url, [f], "c", text_field="text,body").files] == ["unchanged"]
    assert reads == [f]  # the same bytes, other settings: read to tell


def test_a_text_file_indexed_again_with_another_text_field_is_unchanged(migrated_url: str, tmp_path: Path) -> None:
    """A folder of JSONL files whose text is in `content`, and a .txt file: the first run fails the
    JSONL files, saying to give --text-field, and indexes the .txt; run again as told, the .txt is
    one document whatever the field is, so it is unchanged, not a second version of itself (a new
    user's trial: the corpus held it twice, and a check listed the same evidence twice)."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps({"id": 1, "content": "plain text of the first record"}) + "\n")
    (folder / "notes.txt").write_text("rivers and tides in the old town, a note of its own\n")
    args = ["index", "--corpus", "c", "--db", migrated_url, "--workers", "1", "--progress", "none"]
    first = CliRunner().invoke(cli, [*args, str(folder)])
    assert first.exit_code == 1 and "--text-field" in first.output and json.loads(first.stdout)["documents"] == 1
    again = CliRunner().invoke(cli, [*args, "--text-field", "content", str(folder)])
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert summary["paths_with_older_versions"] == [] and "other extraction settings" not in again.stderr
    assert summary["documents"] == 1, summary  # the JSONL's record; the .txt unchanged


def test_a_fifo_in_a_corpus_folder_fails_alone_not_waited_on(migrated_url: str, tmp_path: Path) -> None:
    """A trial: a FIFO named like a corpus file (`mkfifo c/fifo.jsonl`) hung the run for good,
    hashing it waiting for a writer. It fails alone, "not a regular file"; the rest is indexed."""
    import os
    import subprocess
    import sys

    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps({"text": "rivers and tides in the old town by the harbour"}) + "\n")
    os.mkfifo(folder / "fifo.jsonl")
    cmd = [sys.executable, "-m", "contam.indexer.cli", "index", "--corpus", "c", "--db", migrated_url]
    run = subprocess.run([*cmd, "--progress", "none", str(folder)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    assert f"{folder / 'fifo.jsonl'}: cannot be read (not a regular file" in run.stderr, run.stderr
    assert json.loads(run.stdout)["files_indexed"] == 1
