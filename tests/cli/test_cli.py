"""The command line: scan gates pipelines, serve refuses unsafe binds."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import logging
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import IndexCorpus
from helpers import stdlib_stand_in
from sqlalchemy import update
from sqlalchemy.engine import make_url
from typer.testing import CliRunner, Result

import contam
import contam.indexer.job as job_module
from contam.app.cli import command_name, serve_banner
from contam.app.core.config import SignatureConfig
from contam.app.errors import ContamError
from contam.app.services.checking import CheckService
from contam.app.services.corpora import CorpusService
from contam.app.settings import Settings, default_database_url, get_settings, unknown_settings
from contam.app.store.db import known_revisions, make_engine, upgrade
from contam.indexer.cli import app as cli
from contam.indexer.cli import demo_workdir
from contam.indexer.options import IndexOptions, index_options

Q1 = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
Q2 = "Tides on the open ocean are driven mostly by the gravity of the moon and the sun together"


@pytest.fixture(autouse=True)
def fresh_settings() -> Iterator[None]:
    """The settings are read from the environment once per process (get_settings is cached): each
    test starts with them unread and leaves them so, whatever it set in the environment."""
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def index_cli(db_url: str, corpus: str, *args: str) -> Result:
    """`contam index --corpus CORPUS --db URL --workers 1 ARGS...`, the settings read afresh."""
    get_settings.cache_clear()
    return CliRunner().invoke(cli, ["index", "--corpus", corpus, "--db", db_url, "--workers", "1", *args])


def test_files_of_one_content_are_named_with_the_file_indexed(migrated_url: str, tmp_path: Path) -> None:
    """A file whose content another holds is indexed once, under the other's name: the log and
    the run's end say which (a new user's trial: "already indexed, skipped" on a first run)."""
    (tmp_path / "a.txt").write_text("the same words in two files of one corpus\n")
    (tmp_path / "b.txt").write_text("the same words in two files of one corpus\n")
    r = index_cli(migrated_url, "web", "--progress", "log", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"))
    assert r.exit_code == 0, r.output
    assert f"b.txt: the same content as {tmp_path / 'a.txt'}, indexed once" in r.output
    said = f"1 file(s) hold the same content as another file, indexed once under its name: {tmp_path / 'b.txt'}"
    assert said + f" (as {tmp_path / 'a.txt'})" in r.output


def test_scan_formats_and_fail_above(migrated_url: str, tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    run = CliRunner()
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"task_id": "a", "prompt": Q1}) + "\n" + json.dumps({"task_id": "b", "prompt": Q2}))
    table = run.invoke(cli, ["scan", str(bench), "--db", migrated_url])
    assert table.exit_code == 0 and "contaminated" in table.output and "2 items: 1 contaminated" in table.output
    head, row = table.stdout.splitlines()[:2]  # the flagged rows under a header naming the columns
    assert head.split()[:3] == ["status", "score", "item"] and row.split()[:3] == ["contaminated", "1.00", "a"]
    js = json.loads(run.invoke(cli, ["scan", str(bench), "--db", migrated_url, "--format", "json"]).stdout)
    assert js["summary"]["contaminated_share"] == 0.5
    # the results under the key /api/v1/check answers with, so one script reads both
    assert [r["item_id"] for r in js["results"]] == ["a", "b"] and "items" not in js
    jl = run.invoke(cli, ["scan", str(bench), "--db", migrated_url, "--format", "jsonl", "--corpus", "web"])
    assert [json.loads(x)["status"] for x in jl.stdout.splitlines()] == ["contaminated", "clean"]
    csv_out = run.invoke(cli, ["scan", str(bench), "--db", migrated_url, "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(csv_out.stdout)))  # the columns of the API's CSV export
    assert rows[0]["item_id"] == "a" and rows[0]["status"] == "contaminated" and rows[0]["best_corpus"] == "web"
    assert Q1 in rows[0]["text"] and Q2 in rows[1]["text"]  # the item's words, as the dashboard's export has them
    assert rows[0]["reason"].startswith("one document holds") and rows[1]["row"] == "1"
    # every figure and flag of the JSON, the passage's too (a new user's report: they were missing)
    assert rows[0]["longest_match_share"] == "1.0" and rows[0]["passage_found"] == "False"
    assert run.invoke(cli, ["scan", str(bench), "--db", migrated_url, "--fail-above", "0.6"]).exit_code == 0
    # a bad line is named in the file as given, not by its name alone (a new user's trial)
    broken = tmp_path / "sub" / "broken.jsonl"
    broken.parent.mkdir()
    broken.write_text(json.dumps({"prompt": Q1}) + "\n{not json\n")
    bad = run.invoke(cli, ["scan", str(broken), "--db", migrated_url])
    assert bad.exit_code == 2 and f"{broken}: line 2" in bad.output, bad.output
    gated = run.invoke(cli, ["scan", str(bench), "--db", migrated_url, "--fail-above", "0.4"])
    assert gated.exit_code == 1 and "exceeds" in gated.output
    # the share compared exactly: 1 of 3 is above 0.3333, which the summary's rounded share is not
    third = tmp_path / "t.jsonl"
    third.write_text(bench.read_text() + "\n" + json.dumps({"task_id": "c", "prompt": Q2 + " again"}) + "\n")
    assert run.invoke(cli, ["scan", str(third), "--db", migrated_url, "--fail-above", "0.3333"]).exit_code == 1
    mapped = run.invoke(cli, ["scan", str(bench), "--db", migrated_url, "--fields", "question=task_id"])
    assert mapped.exit_code == 0 and "2 too short" in mapped.output
    missing = run.invoke(cli, ["scan", str(tmp_path / "nope.jsonl"), "--db", migrated_url])
    assert missing.exit_code == 2 and "no such file" in missing.output
    # --fields choices given twice is one column per choice (it kept the last); a question given
    # twice is its fields' texts in order (as the mapping printed says it); another role twice is refused
    copa = tmp_path / "copa.jsonl"
    copa.write_text(json.dumps({"premise": Q1, "choice1": "yes", "choice2": "no", "label": 1, "a": "x"}) + "\n")
    two = ["--fields", "choices=choice1", "--fields", "choices=choice2", "--format", "json"]
    js = json.loads(run.invoke(cli, ["scan", str(copa), "--db", migrated_url, *two]).stdout)
    assert js["mapping"]["choices"] == ["choice1", "choice2"] and js["mapping"]["question"] == "premise"
    both = run.invoke(
        cli, ["scan", str(copa), "--db", migrated_url, "--fields", "question=a", "--fields", "question=premise"]
    )
    assert both.exit_code == 0 and "question=a, question=premise," in both.stderr, both.output
    twice = run.invoke(cli, ["scan", str(copa), "--db", migrated_url, "--fields", "id=a", "--fields", "id=premise"])
    assert twice.exit_code == 2 and "names id twice" in twice.output


def test_the_readmes_example_files_give_what_it_says(migrated_url: str) -> None:
    """First ten minutes, step 0: the commands the README gives for examples/, and the summary it
    says they end with (a new user found no file of the walkthrough's at hand)."""
    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    commands = [
        "contam index --corpus example examples/corpus.jsonl",
        "contam scan examples/benchmark.jsonl --corpus example",
    ]
    assert all(f".venv/bin/{c}" in readme for c in commands)
    said = "`6 items: 3 contaminated, 0 suspicious, 3 clean, 0 too short; contaminated share 50.00%`"
    assert said in readme
    get_settings.cache_clear()
    run = CliRunner()
    args = [c.split()[1:] for c in commands]
    assert run.invoke(cli, [*args[0][:-1], "--db", migrated_url, str(root / args[0][-1])]).exit_code == 0
    table = run.invoke(cli, [args[1][0], str(root / args[1][1]), *args[1][2:], "--db", migrated_url])
    assert table.exit_code == 0 and said.strip("`") in table.stdout, table.output
    flagged = {line.split()[2]: line.split()[3] for line in table.stdout.splitlines()[1:4]}
    assert flagged == {
        "q1": "example:blog-rivers",
        "q2": "example:forum-fables",
        "q3": "example:news-lighthouse",
    }


def test_a_reader_that_stops_early_ends_the_scan_quietly(migrated_url: str, tmp_path: Path) -> None:
    """`contam scan F --format jsonl | head -1`: when stdout's reader goes away, the scan stops
    without an error line on stderr, with SIGPIPE's exit status (141), as a Unix tool does."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    bench = tmp_path / "b.jsonl"  # enough results to fill a pipe's buffer (64 KiB) many times over
    bench.write_text("".join(json.dumps({"id": f"i{k}", "question": f"{Q1} {k}"}) + "\n" for k in range(600)))
    cmd = [sys.executable, "-m", "contam.indexer.cli", "scan", str(bench), "--db", migrated_url, "--format", "jsonl"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(120) == 141 and json.loads(first)["item_id"] == "i0"
    assert "error" not in err and "Traceback" not in err, err


def test_commands_need_a_migrated_database(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["corpora", "--db", f"sqlite:///{tmp_path / 'empty.db'}"])
    # the command to run names the database (without --db it would migrate the default one)
    assert r.exit_code == 2 and f"run `contam db upgrade --db sqlite:///{tmp_path / 'empty.db'}`" in r.output
    assert not (tmp_path / "empty.db").exists()  # a read-only command creates no database file
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (a)").connection.close()  # a file without our schema
    r = CliRunner().invoke(cli, ["corpora", "--db", f"sqlite:///{other}"])
    assert r.exit_code == 2 and f"no schema yet: run `contam db upgrade --db sqlite:///{other}`" in r.output
    old = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade(old, "0010_sqlite_blocks")  # a schema an older version left: a table this code reads is missing
    r = CliRunner().invoke(cli, ["scan", str(tmp_path / "b.jsonl"), "--db", old])
    assert r.exit_code == 2 and "revision 0010_sqlite_blocks" in r.output
    assert f"run `contam db upgrade --db {old}`" in r.output
    # db upgrade says what it did: it said "database at head" whether it migrated or not (a trial)
    head = known_revisions()[1]
    new, mid = f"sqlite:///{tmp_path / 'new.db'}", f"sqlite:///{tmp_path / 'mid.db'}"
    upgrade(mid, "0010_sqlite_blocks")
    said = [CliRunner().invoke(cli, ["db", "upgrade", "--db", url]).output.strip() for url in (new, new, mid)]
    assert said == [
        f"database created at revision {head} (head): {new}",
        f"database already at revision {head} (head): {new}",
        f"database migrated from revision 0010_sqlite_blocks to {head} (head): {mid}",
    ]
    # the revision the database reached, read back, not the one asked for (a review: "+1", a prefix, "heads")
    low = f"sqlite:///{tmp_path / 'low.db'}"
    upgrade(low, "0010_sqlite_blocks")
    r = CliRunner().invoke(cli, ["db", "upgrade", "--db", low, "--revision", "0010"])
    assert r.output.strip() == f"database already at revision 0010_sqlite_blocks: {low}", r.output
    r = CliRunner().invoke(cli, ["db", "upgrade", "--db", low, "--revision", "+1"])
    assert r.output.startswith("database migrated from revision 0010_sqlite_blocks to 0011"), r.output
    # a revision there is not (was "CommandError: Can't locate revision", exit 3), one already passed
    r = CliRunner().invoke(cli, ["db", "upgrade", "--db", low, "--revision", "0099"])
    assert r.exit_code == 2 and "cannot upgrade to revision '0099'" in r.output and head in r.output, r.output
    r = CliRunner().invoke(cli, ["db", "upgrade", "--db", low, "--revision", "0010_sqlite_blocks"])
    assert r.exit_code == 0 and "past 0010_sqlite_blocks: db upgrade never downgrades" in r.output, r.output
    eng = make_engine(old)
    with eng.begin() as conn:  # one a newer version migrated
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    eng.dispose()
    r = CliRunner().invoke(cli, ["corpora", "--db", old])
    assert r.exit_code == 2 and "a newer version of contam migrated it" in r.output
    # db upgrade too (it said "CommandError: Can't locate revision", exit 3: an upgrade probe)
    r = CliRunner().invoke(cli, ["db", "upgrade", "--db", old])
    assert r.exit_code == 2 and "revision 9999_from_the_future, which this version of contam does not know" in r.output
    assert "a newer version of contam migrated it; use that version" in r.output, r.output


def test_serve_refuses_public_bind_without_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONTAM_API_KEYS", raising=False)
    get_settings.cache_clear()
    r = CliRunner().invoke(cli, ["serve", "--host", "0.0.0.0", "--port", "8999"])
    assert r.exit_code == 2 and "refusing to listen on 0.0.0.0 without API keys" in r.output
    assert "CONTAM_ALLOW_INSECURE_BIND=true" in r.output  # the variable a container sets (a trial)


def test_index_commits_small_files_together_unless_told(
    migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file is reported done when its transaction commits: by default small files share one."""
    for name, q in (("a", Q1), ("b", Q2)):
        (tmp_path / f"{name}.jsonl").write_text(json.dumps({"id": name, "text": q}) + "\n")

    def events(corpus: str, *extra: str) -> list[str]:
        r = index_cli(migrated_url, corpus, "--progress", "log", *extra, str(tmp_path))
        assert r.exit_code == 0, r.output
        return [line.split(" [")[0] for line in r.output.splitlines() if line.startswith(("indexing [", "done ["))]

    monkeypatch.delenv("CONTAM_COMMIT_MB", raising=False)
    assert events("grouped") == ["indexing", "indexing", "done", "done"]
    assert events("per-file-flag", "--commit-mb", "0") == ["indexing", "done", "indexing", "done"]
    monkeypatch.setenv("CONTAM_COMMIT_MB", "0")
    assert events("per-file-env") == ["indexing", "done", "indexing", "done"]


def test_index_segment_options_from_flags_and_environment(
    migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("CONTAM_BATCH_SIZE", "CONTAM_COMMIT_MB", "CONTAM_SEGMENT_ROWS", "CONTAM_MERGE_FANOUT"):
        monkeypatch.delenv(var, raising=False)
    # settings left unset mean the job's own defaults, which are defined once, in IndexOptions
    assert index_options(Settings()) == IndexOptions(workers=Settings().resolved_workers())
    for name in "abc":  # same text, so three segments of one size
        (tmp_path / f"{name}.jsonl").write_text(json.dumps({"id": name, "text": Q1}) + "\n")

    def segments(corpus: str, *extra: str) -> int:
        r = index_cli(migrated_url, corpus, "--batch-size", "1", "--progress", "none", *extra, str(tmp_path))
        assert r.exit_code == 0, r.output
        r = CliRunner().invoke(cli, ["corpora", corpus, "--db", migrated_url, "--json"])
        return int(json.loads(r.output)["segments"])

    monkeypatch.delenv("CONTAM_SEGMENT_ROWS", raising=False)
    monkeypatch.delenv("CONTAM_MERGE_FANOUT", raising=False)
    assert segments("default") == 1
    assert segments("flags", "--segment-rows", "1", "--merge-fanout", "0", "--commit-mb", "0") == 3
    assert segments("merged", "--segment-rows", "1", "--merge-fanout", "3", "--commit-mb", "0") == 1
    monkeypatch.setenv("CONTAM_SEGMENT_ROWS", "1")
    monkeypatch.setenv("CONTAM_MERGE_FANOUT", "0")
    assert segments("env", "--commit-mb", "0") == 3


def test_domain_errors_are_one_line_and_exit_code_2(migrated_url: str, tmp_path: Path) -> None:
    """Every command maps the error tree the same way (one place: ContamGroup)."""
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    run = CliRunner()
    base = ["--db", migrated_url]
    assert run.invoke(cli, ["index", "--corpus", "web", *base, "--progress", "none", str(tmp_path)]).exit_code == 0
    cases = [
        (["corpora", "nope", *base], "error: no corpus named 'nope' (the corpora: web)"),  # as scan says it
        (["corpora", "delete", "nope", *base], "error: no corpus named 'nope' (the corpora: web)"),
        (  # a list split at commas everywhere else (a new user's trial)
            ["scan", str(tmp_path / "c.jsonl"), "--corpus", "web,nope", *base],
            "(the corpora: web); to name several, give --corpus once for each",
        ),
        (["scan", str(tmp_path / "c.jsonl"), "--format", "xml", *base], "error: unknown format 'xml'"),
        (
            ["scan", str(tmp_path / "c.jsonl"), "--corpus", "nope", *base],
            "error: no corpus named 'nope' (the corpora: web)",
        ),
        (["index", "--corpus", "web", "--ngram", "7", *base, str(tmp_path)], "error: corpus 'web' was indexed"),
        (["index", "--corpus", "web", "--no-store-text", *base, str(tmp_path)], "store_text=True; keep it the same"),
        (["index", "--corpus", "web", *base, str(tmp_path / "missing")], "error: no such file or directory"),
        # 0 and -1 each took one document a file, and recorded the file as indexed so
        (["index", "--corpus", "web", "--limit", "0", *base, str(tmp_path)], "'--limit': Input should be greater"),
        (["db", "upgrade", "--db", "mysql://nowhere/x"], "error: unsupported database URL"),
        (["db", "upgrade", "--db", "mysql://u:pw@nowhere/x"], "'mysql://u:***@nowhere/x'"),  # was the password
        # libpq's and Heroku's spelling, which SQLAlchemy refuses: said, the password hidden (an operator's trial)
        (["db", "upgrade", "--db", "postgres://u:pw@nowhere/x"], "write postgresql://, not postgres://"),
        # a driver that is not installed: was "ModuleNotFoundError: No module named 'psycopg2'"
        (["db", "upgrade", "--db", "postgresql+psycopg2://u:pw@nowhere/x"], "error: unsupported database driver"),
        (["db", "upgrade", "--db", "postgresql+asyncpg://nowhere/x"], "use postgresql://... (psycopg 3"),
        # a path for a URL: was "error: ArgumentError: Could not parse SQLAlchemy URL ...", exit 3
        (["db", "upgrade", "--db", str(tmp_path / "x.db")], "error: not a database URL"),
    ]
    for args, message in cases:
        r = run.invoke(cli, args)
        assert r.exit_code == 2 and message in r.output, (args, r.output)
        assert len(r.output.strip().splitlines()) == 1, r.output
        assert ":pw@" not in r.output  # the password stays out of the message


def test_negative_workers_are_refused_by_option_and_by_environment(
    migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`contam index --workers -1` and CONTAM_WORKERS=-3 were taken (one process), where `contam
    scan --workers -1` was refused (a new user's trial); an environment value out of range was
    pydantic's "1 validation error for Settings"."""
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    run = CliRunner()
    r = run.invoke(cli, ["index", "--corpus", "web", "--db", migrated_url, "--workers", "-1", str(tmp_path)])
    assert r.exit_code == 2 and "--workers" in r.output, r.output
    monkeypatch.setenv("CONTAM_WORKERS", "-3")
    get_settings.cache_clear()  # read from the environment once per process
    r = run.invoke(cli, ["index", "--corpus", "web", "--db", migrated_url, str(tmp_path)])
    assert r.exit_code == 2, r.output
    assert r.output.strip() == "error: invalid setting: CONTAM_WORKERS: Input should be greater than or equal to 0"


def test_an_interrupted_command_speaks_of_committed_files_only_for_an_index(
    migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every interrupted command said "(an index keeps the files it committed)", a scan too."""
    from contam.app.services.checking import CheckService

    def interrupted(*_args: object, **_kw: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(CheckService, "path", interrupted)
    (tmp_path / "b.jsonl").write_text(json.dumps({"question": Q1, "answer": "Tigris"}) + "\n")
    r = CliRunner().invoke(cli, ["scan", str(tmp_path / "b.jsonl"), "--db", migrated_url])
    assert r.exit_code == 130 and r.output.strip() == "error: interrupted: nothing half-written is kept", r.output


def test_sizes_are_mib_at_the_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    """--commit-mb, CONTAM_COMMIT_MB and CONTAM_MAX_UPLOAD_MB are MiB; the code works in bytes."""
    monkeypatch.delenv("CONTAM_COMMIT_MB", raising=False)
    assert Settings(max_upload_mb=3).max_upload_bytes == 3 << 20
    assert index_options(Settings(commit_mb=2)).commit_bytes == 2 << 20
    assert index_options(Settings(commit_mb=2), commit_mb=0.5).commit_bytes == 1 << 19
    assert index_options(Settings()).commit_bytes == 256 << 20


def test_an_index_run_finds_its_files_once(migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI used to walk the paths for the progress totals and the job walked them again."""
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "a", "text": Q1}) + "\n")
    calls: list[object] = []
    real = job_module.find_files

    def counted(paths: list[Path]) -> list[Path]:
        calls.append(paths)
        return real(paths)

    monkeypatch.setattr(job_module, "find_files", counted)
    assert index_cli(migrated_url, "web", "--progress", "log", str(tmp_path)).exit_code == 0
    assert len(calls) == 1


def test_exit_codes_and_one_line_errors(migrated_url: str, tmp_path: Path) -> None:
    """0 clean, 1 gate tripped, 2 usage error, 3 runtime error; one line each, no traceback."""
    run = CliRunner()
    unreachable = "postgresql://postgres@127.0.0.1:1/nodb"
    r = run.invoke(cli, ["corpora", "--db", unreachable])
    assert r.exit_code == 3 and r.output.count("\n") == 1 and "Traceback" not in r.output
    assert (
        r.output.startswith("error: the database is unavailable: ")
        and "(postgresql://postgres@127.0.0.1:1/nodb)" in r.output
    )
    no_db = run.invoke(cli, ["corpora", "--db", "postgresql://postgres@127.0.0.1:5432/contam_no_such_db"])
    # a database to create is the user's to fix (2), told how; not an outage (3)
    assert no_db.exit_code == 2 and "create it first (`createdb contam_no_such_db`" in no_db.output, no_db.output
    # so is a user PostgreSQL does not know (a new user's trial: "the database is unavailable", exit 3)
    no_role = run.invoke(cli, ["corpora", "--db", "postgresql://contam_no_such_role@127.0.0.1:5432/test"])
    assert no_role.exit_code == 2 and 'role "contam_no_such_role" does not exist' in no_role.output, no_role.output
    assert (
        no_role.output.startswith("error: PostgreSQL refused the user of ") and "check the user name" in no_role.output
    )
    # --debug shows the traceback and keeps the exit code (it exited 1, a tripped gate's)
    debug = run.invoke(cli, ["--debug", "corpora", "--db", unreachable])
    assert debug.exit_code == 3 and "Traceback (most recent call last)" in debug.output
    assert debug.output.splitlines()[-1].startswith("error: the database is unavailable: ")
    no_host = run.invoke(cli, ["corpora", "--db", "postgresql://postgres@no-such-host.invalid:5432/db"])
    assert no_host.exit_code == 3 and no_host.output.count("\n") == 1 and "no-such-host.invalid" in no_host.output
    text_file = tmp_path / "notes.txt"  # --db at a file of something else: a usage error, not an outage
    text_file.write_text("not a database at all, just some notes\n" * 200)
    not_db = run.invoke(cli, ["corpora", "--db", f"sqlite:///{text_file}"])
    assert not_db.exit_code == 2 and "is not an SQLite database" in not_db.output, not_db.output
    folder = run.invoke(cli, ["scan", str(tmp_path), "--db", migrated_url])
    assert folder.exit_code == 2 and "is a folder: give a benchmark file" in folder.output
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "a", "question": Q1}) + "\n")
    empty = run.invoke(cli, ["scan", str(bench), "--db", migrated_url])
    assert empty.exit_code == 2 and "no corpus is indexed yet" in empty.output
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "body": Q1}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 1  # no field 'text'
    hollow = run.invoke(cli, ["scan", str(bench), "--db", migrated_url])
    assert hollow.exit_code == 3 and "corpus 'web' holds 0 documents (1 file failed)" in hollow.output
    assert run.invoke(cli, ["scan", "--bogus"]).exit_code == 2  # click's usage errors
    version = run.invoke(cli, ["--version"])
    assert version.exit_code == 0 and version.output.startswith("contam 0.")


def test_a_chat_benchmark_s_fields_line_says_where_its_answer_is(migrated_url: str, tmp_path: Path) -> None:
    """A chat file has no answer field: its answer is each chat's last message, the model's (the
    reader). The fields line said only "question=messages" (a probe); it says so, and a mapped
    answer field leaves it as it was."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    chat = [{"role": "user", "content": Q1}, {"role": "assistant", "content": "The Tigris."}]
    bench = tmp_path / "chat.jsonl"
    bench.write_text(json.dumps({"id": "a", "messages": chat}) + "\n")
    out = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url, "--format", "json"])
    said = "fields: question=messages, id=id (a chat's passage: a system message most chats share; answer: its last"
    assert said in out.stderr, out.stderr
    assert "answer" in json.loads(out.stdout)["results"][0]["fields"]
    bench.write_text(json.dumps({"id": "a", "messages": chat, "answer": "Tigris"}) + "\n")
    out = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url, "--format", "json"])
    assert (
        "fields: question=messages, answer=answer, id=id (a chat's passage: a system message most chats share); corpora"
        in out.stderr
    )


def test_gate_and_thresholds_are_validated(migrated_url: str, tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "a", "question": Q1}) + "\n" + json.dumps({"id": "b", "question": Q2}) + "\n")
    run = CliRunner()

    def scan(*args: str) -> Result:
        return run.invoke(cli, ["scan", str(bench), "--db", migrated_url, *args])

    percent = scan("--fail-above", "10")
    assert percent.exit_code == 2 and "a fraction between 0 and 1" in percent.output and "use 0.1" in percent.output
    assert scan("--fail-above", "-1").exit_code == 2
    # a percentage with its sign is taken as one (a trial's "5%" was "Input should be a valid number")
    assert scan("--fail-above", "5%").exit_code == scan("--fail-above", "0.05").exit_code in (0, 1)
    assert scan("--fail-above", "0%").exit_code == scan("--fail-above", "0").exit_code == 1
    assert "not a number: a fraction such as 0.05, or 5%" in scan("--fail-above", "five").output
    assert "a percentage from 0% to under 100%" in scan("--fail-above", "150%").output
    assert "a percentage from 0% to under 100%" in scan("--fail-above", "100%").output
    # a mapping that leaves most items too short to judge is questioned (a trial: "28 too short", nothing more)
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(json.dumps({"id": f"l{i}", "question": Q1, "subject": "biology"}) + "\n" for i in range(4))
    )
    mislabelled = run.invoke(cli, ["scan", str(labels), "--db", migrated_url, "--fields", "question=subject"])
    assert (
        "4 of 4 items are too short to judge" in mislabelled.output and "is 'subject' the field" in mislabelled.output
    )
    assert "too short to judge" not in scan().output
    # Thai items are too short because the tokeniser does not cut Thai into words, not for their
    # mapping: the note says so, and the mapping is not questioned (a probe: 74% of such items too_short)
    thai = tmp_path / "thai.jsonl"
    thai.write_text("".join(json.dumps({"id": f"t{i}", "question": f"ประเทศไทยมีกี่จังหวัด {i}"}) + "\n" for i in range(4)))
    told = run.invoke(cli, ["scan", str(thai), "--db", migrated_url])
    assert told.exit_code == 0 and "4 of 4 items are mostly Thai, Lao, Khmer or Burmese" in told.output
    assert "too short to judge" not in told.output and "--fields question=FIELD" not in told.output
    # a review: one Thai item of ten made the note, and the note silenced the question of a mapping
    # that left the other nine too short as well
    mixed = tmp_path / "mixed.jsonl"
    rows = [{"id": f"m{i}", "question": Q1, "subject": "biology"} for i in range(8)]
    mixed.write_text("".join(json.dumps(r) + "\n" for r in [*rows, {"id": "t", "subject": "ประเทศไทยมีกี่จังหวัด"}]))
    asked = run.invoke(cli, ["scan", str(mixed), "--db", migrated_url, "--fields", "question=subject"])
    assert "1 of 9 items are mostly Thai" in asked.output and "is 'subject' the field" in asked.output, asked.output
    # a Thai item under a tenth of them (no note) is still not counted against the mapping: half
    # of the other ten too short is not most of them
    rows = [{"id": f"h{i}", "question": Q1, "subject": "biology" if i % 2 else Q1} for i in range(10)]
    half = tmp_path / "half.jsonl"
    half.write_text("".join(json.dumps(r) + "\n" for r in [*rows, {"id": "t", "subject": "ประเทศไทยมีกี่จังหวัด"}]))
    halved = run.invoke(cli, ["scan", str(half), "--db", migrated_url, "--fields", "question=subject"])
    assert halved.exit_code == 0 and "mostly Thai" not in halved.output
    assert "6 too short" in halved.output, halved.output
    assert "too short to judge" not in halved.output, halved.output
    # an answer that names no choice is scored as no answer, and said (a trial: 7 of 4, without a word)
    past = tmp_path / "past.jsonl"
    past.write_text(json.dumps({"id": "p", "question": Q1, "choices": ["a", "b"], "answer": 7}) + "\n")
    noted = run.invoke(cli, ["scan", str(past), "--db", migrated_url, "--format", "json"])
    assert "1 item(s) give an answer number that names none of their choices (row 0: 7 with 2 choices;" in noted.stderr
    assert json.loads(noted.stdout)["results"][0]["row"] == 0  # the place as the results give it
    assert json.loads(noted.stdout)["summary"]["notes"] == [noted.stderr.splitlines()[1]]
    assert "names none of their choices" not in scan().output
    never = scan("--fail-above", "1")  # a gate that cannot fail: 1% was meant (a trial)
    assert never.exit_code == 2 and "never fails" in never.output and "for 1% use 0.01" in never.output
    # several --fields pairs in one value, comma-separated as --thresholds takes them (a trial: read as one field)
    pairs = scan("--fields", "question=question,id=id", "--format", "json")
    assert pairs.exit_code == 0, pairs.output
    assert json.loads(pairs.stdout)["mapping"]["question"] == "question"
    assert scan("--fail-above", "0.1").exit_code == 1  # half the items are contaminated
    typo = scan("--thresholds", "longest_mach=20")
    assert typo.exit_code == 2 and "unknown threshold 'longest_mach' (did you mean longest_match?)" in typo.output
    assert "contaminated_coverage: " in scan("--thresholds", '{"contaminated_coverage": 3}').output
    upside_down = scan("--thresholds", "suspicious_coverage=0.9")  # above contaminated_coverage (0.8)
    assert (
        upside_down.exit_code == 2 and "suspicious_coverage (0.9) is above contaminated_coverage" in upside_down.output
    )
    strict = scan(
        "--thresholds", "contaminated_coverage=1.0,suspicious_coverage=1.0,passage_tokens=500", "--format", "json"
    )
    loose = scan("--format", "json")
    assert strict.exit_code == 0 and loose.exit_code == 0
    assert json.loads(loose.stdout)["summary"]["counts"]["contaminated"] == 1
    assert json.loads(loose.stdout)["mapping"] == {"question": "question", "id": "id"}
    assert "fields: question=question, id=id; corpora: web" in loose.stderr
    nameless = tmp_path / "n.jsonl"
    nameless.write_text(json.dumps({"question": Q1}) + "\n")
    rows = run.invoke(cli, ["scan", str(nameless), "--db", migrated_url, "--format", "jsonl"])
    assert json.loads(rows.stdout.splitlines()[0])["item_id"] == "0"
    assert "fields: question=question (no id field: each item is named by its row, the first 0)" in rows.stderr
    logged = scan("--progress", "log")
    assert "scanned 0/2 items" in logged.stderr and "scanned 2/2 items" in logged.stderr
    # the first pass's reading shows before scoring starts
    assert logged.stderr.index("read 2 items") < logged.stderr.index("scanned 0/2 items")
    assert scan("--progress", "bar").exit_code == 0 and scan("--progress", "dots").exit_code == 2
    assert json.loads(strict.stdout)["thresholds"]["passage_tokens"] == 500


def test_index_refuses_an_unknown_progress_mode(migrated_url: str, tmp_path: Path) -> None:
    """--progress takes auto, bar, log or none, as `contam scan`'s does: another value was taken as
    none, and the run went on and made the corpus (a README audit: `--progress foo` exited 0)."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    r = index_cli(migrated_url, "web", "--progress", "dots", str(corpus))
    assert r.exit_code == 2, r.output
    assert "--progress is auto, bar, log or none, not 'dots'" in r.stderr
    listed = CliRunner().invoke(cli, ["corpora", "--db", migrated_url, "--json"])
    assert listed.exit_code == 0 and json.loads(listed.stdout) == []  # nothing was made


def test_scan_workers_default_to_contam_scan_workers(
    migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`contam scan --workers` defaults to CONTAM_SCAN_WORKERS, as `contam index --workers` does to
    CONTAM_WORKERS (the README's table names the option beside the variable); the option wins."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "a", "question": Q1}) + "\n")
    seen: list[int] = []
    init = CheckService.__init__

    def spy(self: CheckService, *args: Any, **kwargs: Any) -> None:
        seen.append(kwargs["workers"])
        init(self, *args, **kwargs)

    monkeypatch.setattr(CheckService, "__init__", spy)
    monkeypatch.setenv("CONTAM_SCAN_WORKERS", "1")
    for extra in ([], ["--workers", "2"]):
        get_settings.cache_clear()
        r = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url, "--progress", "none", *extra])
        assert r.exit_code == 0, r.output
    assert seen == [1, 2]


def test_corpora_delete_and_rename(migrated_url: str, tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    run = CliRunner()
    renamed = run.invoke(cli, ["corpora", "rename", "web", "books", "--db", migrated_url])
    assert renamed.exit_code == 0 and "renamed corpus 'web' to 'books'" in renamed.output
    shown = run.invoke(cli, ["corpora", "books", "--db", migrated_url])  # short for `corpora show books`
    assert shown.exit_code == 0 and "documents:  1 (0 exact duplicates" in shown.output
    assert not shown.output.lstrip().startswith("{")  # a summary for a person; --json for a program
    assert json.loads(run.invoke(cli, ["corpora", "books", "--json", "--db", migrated_url]).output)["documents"] == 1
    for before in (["corpora", "--json", "books"], ["corpora", "--json", "show", "books"]):  # --json before the name
        assert json.loads(run.invoke(cli, [*before, "--db", migrated_url]).output)["documents"] == 1, before
    kept = run.invoke(cli, ["corpora", "delete", "books", "--db", migrated_url], input="n\n")
    assert kept.exit_code == 0 and "kept corpus 'books'" in kept.output
    unnamed = run.invoke(cli, ["corpora", "delete", "--yes", "--db", migrated_url])
    assert unnamed.exit_code == 2 and "(see contam corpora delete --help)" in unnamed.output
    unasked = run.invoke(cli, ["corpora", "delete", "books", "--db", migrated_url], input="")  # a script's empty stdin
    assert unasked.exit_code == 2 and "pass --yes" in unasked.output
    assert "books: 1 file indexed, 1 document," in run.invoke(cli, ["corpora", "--db", migrated_url]).output
    gone = run.invoke(cli, ["corpora", "--db", migrated_url, "delete", "books", "--yes"])
    assert gone.exit_code == 0 and "deleted corpus 'books' (1 document, 1 file indexed)" in gone.output
    assert "no corpora indexed yet" in run.invoke(cli, ["corpora", "--db", migrated_url]).output
    missing = run.invoke(cli, ["corpora", "delete", "books", "--yes", "--db", migrated_url])
    assert missing.exit_code == 2 and "no corpus named 'books'" in missing.output


def test_corpora_delete_says_what_it_deleted_not_what_it_asked_about(
    migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The counts said are those of the corpus as it went, not as it was when the question was
    put: on SQLite a delete typed while a run wrote waited for its lock, the run committed, and
    the delete said "(0 documents, 0 files indexed)" of the 18,000 documents it removed (a README
    audit). Here the health read first is made stale, as such a run makes it."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    health = CorpusService.health
    stale = {"documents": 0, "files": 0, "failed_files": []}
    monkeypatch.setattr(CorpusService, "health", lambda self, name: {**health(self, name), **stale})
    gone = CliRunner().invoke(cli, ["corpora", "delete", "web", "--yes", "--db", migrated_url])
    assert gone.exit_code == 0 and "deleted corpus 'web' (1 document, 1 file indexed)" in gone.output, gone.output


def test_default_database_does_not_depend_on_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`contam` run from another folder once opened a second, empty ./data/contam.db."""
    monkeypatch.delenv("CONTAM_DATABASE_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    urls = set()
    for here in (tmp_path / "a", tmp_path / "b"):
        here.mkdir()
        monkeypatch.chdir(here)
        urls.add(Settings().database_url)
    assert urls == {f"sqlite:///{tmp_path / 'share' / 'contam' / 'contam.db'}"}
    monkeypatch.delenv("XDG_DATA_HOME")  # unset: the XDG default under the home folder
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert Settings().database_url == f"sqlite:///{tmp_path / 'home' / '.local' / 'share' / 'contam' / 'contam.db'}"


def test_a_misspelt_setting_is_said_and_a_server_without_keys_says_it_is_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CONTAM_API_KEY (one letter short) left `contam serve` open to all, and CONTAM_DATABSE_URL
    used the default database, with no word of either (an operator's trial): every command warns
    of a CONTAM_ variable that names no setting, with the one meant, and the banner of a server
    without keys says its routes are open."""
    monkeypatch.setenv("CONTAM_API_KEY", "s3cret")
    monkeypatch.setenv("CONTAM_DATABSE_URL", "postgresql://db/x")
    monkeypatch.setenv("CONTAM_NOTHING_LIKE_IT", "1")
    r = CliRunner().invoke(cli, ["corpora", "--db", f"sqlite:///{tmp_path / 'none.db'}"])
    assert "warning: CONTAM_API_KEY is no setting, and is ignored (did you mean CONTAM_API_KEYS?)" in r.output
    assert "warning: CONTAM_DATABSE_URL is no setting, and is ignored (did you mean CONTAM_DATABASE_URL?)" in r.output
    assert "warning: CONTAM_NOTHING_LIKE_IT is no setting, and is ignored\n" in r.output
    # the prefix they all share made any name look near one: no setting named that is not meant
    assert unknown_settings({"CONTAM_URL": "x", "CONTAM_DEBUG": "1", "CONTAM_BOGUS": "1"}) == [
        f"{name} is no setting, and is ignored" for name in ("CONTAM_BOGUS", "CONTAM_DEBUG", "CONTAM_URL")
    ]
    assert unknown_settings({"CONTAM_PORTS": "1", "CONTAM_MAX_UPLOAD": "1", "contam_api_key": "k"}) == [
        "CONTAM_MAX_UPLOAD is no setting, and is ignored (did you mean CONTAM_MAX_UPLOAD_MB?)",
        "CONTAM_PORTS is no setting, and is ignored (did you mean CONTAM_PORT?)",
        "contam_api_key is no setting, and is ignored (did you mean CONTAM_API_KEYS?)",
    ]
    assert "API keys:   none (CONTAM_API_KEYS): every route is open" in serve_banner(
        "sqlite:///x.db", "127.0.0.1", 8000, False
    )
    assert "API keys" not in serve_banner("sqlite:///x.db", "127.0.0.1", 8000, True)


def test_serve_says_where_things_are_and_refuses_placeholder_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    banner = serve_banner("postgresql://u:pw@db/contam", "127.0.0.1", 8000, keys=False)
    # another database than the default is named in the next steps (a new user's trial: a second
    # shell without CONTAM_DATABASE_URL indexed into the default)
    assert "dashboard:  http://localhost:8000/" in banner and "contam index --db URL --corpus NAME PATH" in banner
    assert "contam scan --db URL BENCHMARK" in banner and "new, empty" not in banner
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    default = serve_banner(default_database_url(), "127.0.0.1", 8000, keys=False)
    assert "contam index --corpus NAME PATH" in default and "--db" not in default
    # the default placed by XDG_DATA_HOME, which another shell may lack, is named by its URL (a trial)
    monkeypatch.setenv("XDG_DATA_HOME", "/tmp/trial-data")
    placed = serve_banner(default_database_url(), "127.0.0.1", 8000, keys=False)
    assert "contam index --db sqlite:////tmp/trial-data/contam/contam.db --corpus NAME PATH" in placed
    assert "contam scan --db sqlite:////tmp/trial-data/contam/contam.db BENCHMARK" in placed
    monkeypatch.setenv("XDG_DATA_HOME", "/tmp/my data")  # quoted, so that it pastes whole (a review)
    assert "index --db 'sqlite:////tmp/my data/contam/contam.db' --corpus" in serve_banner(
        default_database_url(), "127.0.0.1", 8000, keys=False
    )
    monkeypatch.delenv("XDG_DATA_HOME")
    assert "postgresql://u:***@db/contam" in banner  # the password never shown
    monkeypatch.setenv("CONTAM_API_KEYS", "change-me")
    get_settings.cache_clear()
    r = CliRunner().invoke(cli, ["serve", "--host", "0.0.0.0"])
    assert r.exit_code == 2 and "placeholder key" in r.output
    monkeypatch.delenv("CONTAM_API_KEYS")
    monkeypatch.setenv("CONTAM_DATABASE_URL", "postgresql://postgres@127.0.0.1:1/contam")
    get_settings.cache_clear()
    down = CliRunner().invoke(cli, ["serve"])
    assert (
        down.exit_code == 3
        and down.output.startswith("error: the database is unavailable: ")
        and "Traceback" not in down.output
    )
    compose = (Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text()
    assert "change-me" not in compose and "${CONTAM_API_KEYS:?" in compose


def test_a_lost_database_is_one_line_and_exit_3(tmp_path: Path) -> None:
    """No server listens on port 1: the indexer and the other commands say so in one line (a
    runtime error: exit 3)."""
    url = "postgresql+psycopg://postgres@127.0.0.1:1/nowhere?connect_timeout=2"
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": Q1}) + "\n")
    for r in (index_cli(url, "web", str(corpus)), CliRunner().invoke(cli, ["corpora", "--db", url])):
        assert r.exit_code == 3, r.output
        assert r.output.startswith("error: the database is unavailable: ") and "Traceback" not in r.output
        assert len(r.output.strip().splitlines()) == 1


def test_scan_workers_give_the_same_output(migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`scan --workers 2` splits the benchmark over two processes (chunks of one item here) and
    prints what one process prints, in the same order."""
    import contam.app.services.scanning as scanning

    monkeypatch.setattr(scanning, "CHUNK", 1)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    bench = tmp_path / "b.jsonl"
    rows = [{"task_id": f"t{i}", "prompt": q} for i, q in enumerate([Q1, Q2, Q1 + " Why?", Q2 + " Explain."])]
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    outs = []
    for workers in ("1", "2"):
        r = CliRunner().invoke(
            cli,
            ["scan", str(bench), "--db", migrated_url, "--format", "jsonl", "--workers", workers, "--progress", "none"],
        )
        assert r.exit_code == 0, r.output
        outs.append(r.stdout)
    assert outs[0] == outs[1]
    assert [json.loads(x)["item_id"] for x in outs[1].splitlines()] == ["t0", "t1", "t2", "t3"]


def test_bad_option_values_are_one_line_usage_errors(migrated_url: str) -> None:
    for args in (["--fail-above", "1 %%"], ["--fail-above", "five"], ["--workers", "-1"]):
        r = CliRunner().invoke(cli, ["scan", "b.jsonl", "--db", migrated_url, *args])
        assert r.exit_code == 2 and r.output.startswith("error: Invalid value for '--")
        assert len(r.output.strip().splitlines()) == 1 and "Usage:" not in r.output


def test_the_demo_corpus_goes_beside_sqlite_or_into_data_never_into_a_url_path(tmp_path: Path) -> None:
    assert demo_workdir(f"sqlite:///{tmp_path}/x/contam.db") == tmp_path / "x" / "demo"
    assert demo_workdir("postgresql+psycopg://postgres@127.0.0.1:5432/contam") == Path("data") / "demo"


def test_a_failed_files_progress_line_names_its_path_once(migrated_url: str, tmp_path: Path) -> None:
    """The error of a failed file starts with its path (for the run's final listing); the
    progress line, which starts with the path too, printed it twice."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "a", "body": "text under another field"}) + "\n")
    r = index_cli(migrated_url, "web", "--progress", "log", str(bad))
    line = next(x for x in r.output.splitlines() if x.startswith("failed ["))
    assert line.count(str(bad)) == 1 and "FAILED: no documents: no field 'text'" in line, line
    assert f"  {bad}: no documents" in r.output  # the final listing still names it


def test_the_demo_says_which_mb_it_counts(migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo's 'MB' (text indexed) and the corpus listing's 'MB' (files on disk) differ for
    the same corpus; each now says which it is."""
    from contam.app.store.db import make_engine
    from contam.indexer import demo

    monkeypatch.setattr(demo, "stdlib_corpus", stdlib_stand_in)
    said = demo.run_demo(make_engine(migrated_url), tmp_path / "demo", 1 << 24)
    assert "MB of text) as corpus" in said, said
    listed = CliRunner().invoke(cli, ["corpora", "--db", migrated_url]).output
    assert "MB of files on disk" in listed, listed


def test_the_demo_replaces_its_corpus_of_an_earlier_release(
    migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index_corpus: IndexCorpus
) -> None:
    """`make run` after an upgrade found the demo corpus an earlier release made, skipped the
    demo ("database already holds corpora"), and served a corpus no check could read."""
    from contam.app.store.db import make_engine
    from contam.indexer import demo

    monkeypatch.setattr(demo, "stdlib_corpus", stdlib_stand_in)
    old = dataclasses.replace(SignatureConfig(), normalizer_version="2")
    index_corpus(migrated_url, [{"id": "m", "text": Q1}], demo.DEMO_CORPUS, cfg=old)
    said = demo.run_demo(make_engine(migrated_url), tmp_path / "demo", 1 << 24)
    assert "as corpus 'python-stdlib'" in said, said
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "a", "question": Q1}) + "\n")
    r = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url, "--progress", "none"])
    assert r.exit_code == 0 and "corpora: python-stdlib" in r.stderr, r.output
    assert demo.run_demo(make_engine(migrated_url), tmp_path / "demo", 1 << 24).endswith("demo skipped")


def test_serve_names_the_port_when_another_server_holds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second `contam serve` on a taken port once started the app (and its report jobs), then
    died with uvicorn's bare "address already in use"; now it stops first, in one line."""
    monkeypatch.setenv("CONTAM_DATABASE_URL", f"sqlite:///{tmp_path / 'c.db'}")
    get_settings.cache_clear()
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        r = CliRunner().invoke(cli, ["serve", "--port", str(port)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in r.output and "CONTAM_PORT" in r.output
    monkeypatch.setenv("CONTAM_DATABASE_URL", f"sqlite:///{tmp_path / 'c.db'}")
    get_settings.cache_clear()
    bad = CliRunner().invoke(cli, ["serve", "--port", "99999"])  # was exit 3, "OverflowError: bind(): ..."
    assert bad.exit_code == 2 and "port 99999 is not a port (1 to 65535)" in bad.output
    # port 0 (any free port) was served on 8000 from --port and on a port the banner called 0 from
    # CONTAM_PORT (an operator's trial): refused, as a port no one could be told
    assert "port 0 is not a port (1 to 65535)" in CliRunner().invoke(cli, ["serve", "--port", "0"]).output
    monkeypatch.setenv("CONTAM_PORT", "0")
    get_settings.cache_clear()
    assert "port 0 is not a port (1 to 65535)" in CliRunner().invoke(cli, ["serve"]).output
    monkeypatch.delenv("CONTAM_PORT")
    get_settings.cache_clear()
    # an address no interface here has (TEST-NET-1): said so, not "another server may hold it"
    elsewhere = CliRunner().invoke(cli, ["serve", "--host", "192.0.2.1", "--port", str(port), "--allow-insecure"])
    assert elsewhere.exit_code == 2 and "no interface of this machine has that address" in elsewhere.output
    assert "another server" not in elsewhere.output, elsewhere.output


def test_the_banner_names_contam_as_the_shell_will_find_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make run` runs .venv/bin/contam; its banner said `contam index ...`, which a new user's
    shell did not find (the venv not activated)."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    exe = bin_dir / "contam"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(exe), "serve"])
    monkeypatch.setenv("PATH", str(tmp_path))
    assert command_name() == str(exe)
    banner = serve_banner(default_database_url(), "127.0.0.1", 8000, False, command_name())
    assert f"{exe} index --corpus NAME PATH" in banner
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin")
    assert command_name() == "contam"


def test_corpus_health_counts_its_segments_in_words(migrated_url: str, tmp_path: Path) -> None:
    """`contam corpora NAME` said "in 1 segments", and "1 windows" (a new user's trial)."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", str(corpus)).exit_code == 0
    r = CliRunner().invoke(cli, ["corpora", "web", "--db", migrated_url])
    assert r.exit_code == 0 and " n-grams, 1 window, in 1 segment\n" in r.output, r.output


def test_an_unexpected_error_is_one_line_and_exit_3(monkeypatch: pytest.MonkeyPatch, migrated_url: str) -> None:
    """A bug (any exception the code does not expect) ends the command in one line naming it and
    --debug, exit 3; with --debug, the traceback and the same exit code."""
    from contam.app import cli as cli_module

    def broken(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(cli_module.CorpusService, "list_corpora", broken)
    r = CliRunner().invoke(cli, ["corpora", "--db", migrated_url])
    assert r.exit_code == 3 and r.output == "error: RuntimeError: disk on fire (run with --debug for the traceback)\n"
    d = CliRunner().invoke(cli, ["--debug", "corpora", "--db", migrated_url])
    assert d.exit_code == 3 and "Traceback" in d.output and d.output.endswith("error: RuntimeError: disk on fire\n")


def test_serve_prints_where_things_are_then_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make run` ends in `contam serve`: it prints the banner (dashboard, docs, database, how to
    index your own data) before the server starts, with the settings the server gets."""
    import uvicorn

    started: list[tuple[object, str, int, dict]] = []
    monkeypatch.setattr(
        uvicorn, "run", lambda app, host, port, log_config: started.append((app, host, port, log_config))
    )
    monkeypatch.setenv("CONTAM_DATABASE_URL", f"sqlite:///{tmp_path / 'c.db'}")
    monkeypatch.setenv("CONTAM_JOB_WORKERS", "3")
    get_settings.cache_clear()
    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    r = CliRunner().invoke(cli, ["serve", "--port", str(port)])
    assert r.exit_code == 0, r.output
    assert (
        f"dashboard:  http://localhost:{port}/" in r.output and f"API docs:   http://localhost:{port}/docs" in r.output
    )
    assert f"index --db sqlite:///{tmp_path / 'c.db'} --corpus NAME PATH" in r.output  # an SQLite file by its URL
    # the file was made just now: said, as a path mistyped would otherwise serve an empty dashboard
    assert "a new, empty file, made just now" in r.output
    [(app, host, bound, log_config)] = started
    again = CliRunner().invoke(cli, ["serve", "--port", str(port)])  # the file is there now
    assert again.exit_code == 0 and "new, empty" not in again.output
    assert (host, bound) == ("127.0.0.1", port)
    # a key put in the address is refused, and was written to the access log in full (a probe)
    assert log_config["handlers"]["access"]["filters"] == ["redact_secrets"]
    redact = log_config["filters"]["redact_secrets"]["()"]()
    record = logging.LogRecord("uvicorn.access", logging.INFO, "", 0, '%s - "%s %s HTTP/%s" %d', None, None)
    record.args = ("127.0.0.1:5", "GET", "/api/v1/reports?api_key=k1&page=2&token=t&q=key", "1.1", 401)
    assert redact.filter(record)
    assert record.getMessage() == '127.0.0.1:5 - "GET /api/v1/reports?api_key=***&page=2&token=***&q=key HTTP/1.1" 401'
    assert app.state.reports._pool._max_workers == 3  # type: ignore[attr-defined]  # CONTAM_JOB_WORKERS reaches the jobs


def test_extraction_settings_are_part_of_a_files_identity(migrated_url: str, tmp_path: Path) -> None:
    """A file indexed with `--limit 1` (or another `--id-field`) is indexed again, whole, when
    the settings change: it was skipped as "unchanged" (its content hash alone was its identity)."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": f"p{i}", "key": f"k{i}", "text": f"{Q1} {i}"}) + "\n" for i in range(3))
    )

    def documents(*extra: str) -> tuple[int, int]:
        r = index_cli(migrated_url, "web", *extra, str(corpus))
        assert r.exit_code == 0, r.output
        summary = json.loads(r.stdout[r.stdout.index("{") :])
        return summary["documents"], summary["files_unchanged"]

    assert documents("--limit", "1") == (1, 0)
    assert documents() == (3, 0)  # the whole file now
    assert documents() == (0, 1)  # the same settings: unchanged
    assert documents("--id-field", "key") == (3, 0)


def test_index_a_save_to_disk_folder_from_the_command_line(migrated_url: str, tmp_path: Path) -> None:
    """`contam index` on a Hugging Face save_to_disk folder indexed 0 documents and exited 0; it
    reads the folder's Arrow data and leaves its metadata files out."""
    import pyarrow as pa

    folder = tmp_path / "ds"
    folder.mkdir()
    table = pa.Table.from_pylist([{"id": f"d{i}", "text": f"{Q1} number {i}"} for i in range(3)])
    with pa.OSFile(str(folder / "data-00000-of-00001.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    (folder / "state.json").write_text(json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}]}))
    (folder / "dataset_info.json").write_text("{}")
    r = index_cli(migrated_url, "web", str(folder))
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout[r.stdout.index("{") :])
    assert (summary["documents"], summary["files_indexed"], summary["files_failed"]) == (3, 1, 0)


def test_the_table_lists_contaminated_items_before_suspicious_ones(capsys: pytest.CaptureFixture[str]) -> None:
    """The table was sorted by score alone, so a suspicious item whose question is all there
    (0.65) came above a contaminated one found by its question and answer (0.57)."""
    from contam.app.cli import _print_table
    from contam.app.core.config import Thresholds
    from contam.app.core.scoring import ItemScore
    from contam.app.core.types import BenchmarkItem, Status
    from contam.app.services.checking import CheckResult
    from contam.app.services.scanning import Evidence, ItemResult

    def result(item_id: str, status: Status, own_coverage: float) -> ItemResult:
        score = ItemScore(status=status, reason=f"{status} here", tokens=20, own_coverage=own_coverage)
        return ItemResult(BenchmarkItem(item_id, 0, question="q"), score)

    results = [
        result("low", Status.SUSPICIOUS, 0.45),
        result("qonly", Status.SUSPICIOUS, 0.65),
        result("clean", Status.CLEAN, 0.9),
        result("qa", Status.CONTAMINATED, 0.57),
    ]
    counts = {s.value: sum(r.score.status == s for r in results) for s in Status}
    _print_table(CheckResult("f", results, {"counts": counts, "contaminated_share": 0.25}, Thresholds(), ["c"]))
    rows = [line.split()[2] for line in capsys.readouterr().out.splitlines()[1:-1]]
    assert rows == ["qa", "qonly", "low"]  # contaminated first; then by score; clean not listed
    # an id longer than the column (CNN/DailyMail's 40-character hashes) widens it for every row
    results[0] = result("62918b000e965b8f5d31c77a1dbefba4542bfe3f", Status.SUSPICIOUS, 0.45)
    _print_table(CheckResult("f", results, {"counts": counts, "contaminated_share": 0.25}, Thresholds(), ["c"]))
    lines = capsys.readouterr().out.splitlines()[:-1]
    assert len({line.index("best evidence" if k == 0 else "-  ") for k, line in enumerate(lines)}) == 1, lines
    # evidence of any length up to a line's: the reasons start in one column
    for k, name in enumerate(["a.txt", "shard-00017.jsonl.gz:doc-000123456", "x" * 60]):
        results[k].evidence = [Evidence("web", name, k, "f.jsonl", k, 0, 1, 0, "q", [[0, 1]], 1.0, 1.0, 1, None)]
    _print_table(CheckResult("f", results, {"counts": counts, "contaminated_share": 0.25}, Thresholds(), ["c"]))
    header, *rows = capsys.readouterr().out.splitlines()[:-1]
    # each row ends with its reason, "<status> here"
    starts = {len(row) - len(f"{row.split()[0]} here") for row in rows}
    assert starts == {header.index("reason")}, [header, *rows]


def test_a_scan_says_how_to_bring_back_a_corpus_of_another_release(
    migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """A corpus an earlier release indexed (another tokeniser) was "left out (indexed with other
    settings; --corpus NAME checks against them)", and --corpus NAME was then refused (a trial)."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    index_corpus(migrated_url, [corpus], "old", cfg=dataclasses.replace(SignatureConfig(), normalizer_version="2"))
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "a", "question": Q1}) + "\n")
    result = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url])
    assert result.exit_code == 0 and "corpora: web\n" in result.stderr, result.stderr
    assert "left out (indexed by another release of contam: `contam corpora delete NAME`" in result.stderr
    assert "old" in result.stderr.split("another release")[1] and "--corpus NAME checks" not in result.stderr


def test_a_scan_names_the_corpora_it_left_out_for_their_settings(migrated_url: str, tmp_path: Path) -> None:
    """Without --corpus a scan checks the corpora of one set of settings: one indexed with others
    was left out, said only by its absence from the `corpora:` line."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    assert index_cli(migrated_url, "n8", "--progress", "none", "--ngram", "8", str(corpus)).exit_code == 0
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "a", "question": Q1}) + "\n")
    broken = tmp_path / "broken.jsonl"  # every file failed: a corpus of no document (a new user's)
    broken.write_text(json.dumps({"id": "p", "body": Q1}) + "\n")
    assert index_cli(migrated_url, "empty", "--progress", "none", str(broken)).exit_code == 1
    result = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url])
    assert result.exit_code == 0 and "corpora: web\n" in result.stderr
    assert "left out (indexed with other settings; --corpus NAME checks against them): n8" in result.stderr
    assert "left out (no documents: `contam corpora` says which files failed): empty" in result.stderr
    named = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url, "--corpus", "web"])
    assert named.exit_code == 0 and "left out" not in named.stderr
    # and the JSON the scan writes says it too, as a report's summary does (it said it on stderr alone)
    out = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url, "--format", "json"])
    notes = json.loads(out.stdout)["summary"]["notes"]
    assert notes[0] == "left out (indexed with other settings; --corpus NAME checks against them): n8", notes
    assert out.stderr.count("left out (indexed with other settings") == 1


def test_a_scan_says_its_own_time_apart_from_the_process_start(migrated_url: str, tmp_path: Path) -> None:
    """The speed target counts the scan without the interpreter's start and imports: the scan
    says on stderr how long it took from its command's start, and how many items that was."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    bench = tmp_path / "b.jsonl"
    bench.write_text("".join(json.dumps({"id": str(k), "question": f"{Q1} {k}"}) + "\n" for k in range(1002)))
    t0 = time.perf_counter()
    result = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url, "--format", "json"])
    wall = time.perf_counter() - t0
    assert result.exit_code == 0, result.output
    said = re.search(
        r"scanned 1,002 items in ([\d.]+) s \(([\d,]+) items/s; process start not counted\)", result.stderr
    )
    assert said, result.stderr
    assert 0 < float(said.group(1)) <= wall
    assert json.loads(result.stdout)["summary"]["items"] == 1002  # stdout holds the report alone
    table = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url])  # its counts as its total: "1,002"
    assert re.search(r"^1,002 items: [\d,]+ contaminated, .*1,0\d\d clean", table.stdout, re.M), table.stdout[-300:]
    bench.write_text(json.dumps({"id": "one", "question": Q1}) + "\n")
    one = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url, "--format", "json"])
    assert "scanned 1 item in " in one.stderr, one.stderr  # was "1 items"


def test_scan_help_names_its_argument_as_the_readme_does() -> None:
    """The README documents `contam scan FILE|FOLDER`; the help said `{file}`."""
    out = CliRunner().invoke(cli, ["scan", "--help"], terminal_width=120).output
    assert "FILE|FOLDER" in out and "{file}" not in out


def test_the_command_starts_without_the_job_and_api_modules() -> None:
    """Every `contam` command imports the CLI first: the indexing job, the demo, the progress bar
    and the API's models are imported by the commands that use them (0.13 s of 1.3 s at start on
    a slow machine, bench/MEASUREMENTS.md, session 23); so are the scan's matching and scoring, the
    reports and pyarrow (0.67 -> 0.57 s for `contam index`, `contam corpora` and the Ray driver,
    session 41)."""
    heavy = ["contam.indexer.job", "contam.indexer.demo", "contam.indexer.executors", "rich.progress"]
    heavy += ["contam.app.api.schemas", "fastapi", "uvicorn", "ray"]
    heavy += ["contam.app.core.matching", "contam.app.core.scoring", "contam.app.services.scanning"]
    heavy += ["contam.app.services.reports", "pyarrow"]
    code = f"import sys, contam.indexer.cli; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_option_and_argument_says_what_it_is() -> None:
    """A new user's trial: --text-field, --id-field, demo --force and db upgrade --revision had no
    description, and options read as Python types (`--corpus <list[str]>`, `--workers <int range>`,
    `contam index {paths}...`). Every parameter of every command has help, and the ones the README
    shows name what they take."""
    import click
    import typer

    root = typer.main.get_command(cli)

    def walk(cmd: click.Command, path: str) -> None:
        for p in cmd.params:
            if p.name == "help":
                continue
            said = p.help if isinstance(p, click.Option) else getattr(p, "help", None)
            assert said, f"{path} {p.name}: no help"
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(root, "contam")
    run = CliRunner()
    index_help = run.invoke(cli, ["index", "--help"], terminal_width=200).output
    assert "{PATH}..." in index_help and "--corpus NAME" in index_help and "{paths}" not in index_help
    scan_help = run.invoke(cli, ["scan", "--help"], terminal_width=200).output
    for shown in ("--corpus NAME", "--fields ROLE=FIELD", "answer_base", "--workers N"):
        assert shown in scan_help, shown
    assert "<list[str]>" not in scan_help and "int range" not in scan_help


def test_the_schema_check_reads_the_revisions_alembic_reads() -> None:
    """Every command checks the database's schema revision against this code's migrations. It
    read them through Alembic (importing it and every migration: 0.16 s of a 0.65 s start); the
    migration files' own lines are read now, and must say what Alembic says."""
    from alembic.script import ScriptDirectory

    from contam.app.store.db import alembic_config, known_revisions

    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    revisions, head = known_revisions()
    assert head == script.get_current_head()
    assert revisions == {r.revision for r in script.walk_revisions()}


def test_scan_and_the_python_api_read_the_limits_from_the_settings(
    migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`contam scan` and contam.Index used the default limits whatever the environment said, so
    a benchmark over one could not be scanned at all, and the error named a variable that changed
    nothing (a probe of the scale edges)."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "a", "question": Q1}) + "\n" + json.dumps({"id": "b", "question": Q2}) + "\n")
    monkeypatch.setenv("CONTAM_MAX_ITEMS", "1")
    get_settings.cache_clear()
    r = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url, "--progress", "none"])
    assert r.exit_code == 2 and "the number of items exceeds the limit of 1 (CONTAM_MAX_ITEMS)" in r.output, r.output
    with contam.Index(migrated_url) as index, pytest.raises(ContamError, match="CONTAM_MAX_ITEMS"):
        index.scan_file(bench)
    monkeypatch.setenv("CONTAM_MAX_ITEMS", "2")
    get_settings.cache_clear()
    r = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url, "--progress", "none"])
    assert r.exit_code == 0, r.output


def test_index_options_out_of_range_are_refused(
    migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A negative batch size ran one document a batch (27x slower), a negative segment size or
    commit size was taken, a fan-out of 1 never merged, without a word (a probe)."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    for args in (["--batch-size", "-5"], ["--batch-size", "0"], ["--segment-rows", "-1"], ["--commit-mb", "-1"]):
        r = index_cli(migrated_url, "web", *args, str(corpus))
        assert r.exit_code == 2 and "Invalid value" in r.output, (args, r.output)
    r = index_cli(migrated_url, "web", "--merge-fanout", "1", str(corpus))
    assert r.exit_code == 2 and "must be 0 (never merge) or at least 2" in r.output, r.output
    # an infinite or not-a-number commit size was an OverflowError, exit 3 (a trial)
    for value in ("inf", "Infinity"):
        r = index_cli(migrated_url, "web", "--commit-mb", value, str(corpus))
        assert r.exit_code == 2 and "--commit-mb (CONTAM_COMMIT_MB) must be a number of MiB" in r.output, r.output
    monkeypatch.setenv("CONTAM_COMMIT_MB", "1e999")
    r = index_cli(migrated_url, "web", str(corpus))
    assert r.exit_code == 2 and "must be a number of MiB, not inf" in r.output, r.output
    monkeypatch.delenv("CONTAM_COMMIT_MB")
    for name, value in (("CONTAM_BATCH_SIZE", "-1"), ("CONTAM_COMMIT_MB", "-5"), ("CONTAM_MAX_UPLOAD_MB", "0")):
        monkeypatch.setenv(name, value)
        r = index_cli(migrated_url, "web", str(corpus))
        assert r.exit_code == 2 and name in r.output, (name, r.output)
        monkeypatch.delenv(name)
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0


def test_a_damaged_database_file_is_said_to_be_damaged(tmp_path: Path) -> None:
    """A SQLite file cut short was "the database is unavailable: database disk image is
    malformed" (exit 3), which reads as a passing outage (a probe of storage failures)."""
    src = tmp_path / "whole.db"
    migrated_url = f"sqlite:///{src}"
    upgrade(migrated_url)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "text": f"quiz {i}: {Q1} " * 30}) + "\n" for i in range(300)))
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    damaged = tmp_path / "damaged.db"
    data = src.read_bytes()
    damaged.write_bytes(data[: len(data) // 2])
    get_settings.cache_clear()
    r = CliRunner().invoke(cli, ["corpora", "--db", f"sqlite:///{damaged}"])
    assert r.exit_code == 2 and "the database file is damaged" in r.output, r.output
    # damaged past the schema's pages: it opens, and a scan meets the damage as SQLite's
    # DatabaseError, which only the opening's check named (a review)
    middle = tmp_path / "middle.db"
    page = 4096
    assert len(data) > 40 * page, len(data)
    middle.write_bytes(data[: 20 * page] + b"\xff" * (len(data) - 20 * page))
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "a", "question": Q1}) + "\n")
    r = CliRunner().invoke(cli, ["scan", str(bench), "--db", f"sqlite:///{middle}", "--progress", "none"])
    assert r.exit_code == 3 and "the database file is damaged" in r.output, r.output


def test_a_full_disk_is_said_to_be_full_not_unavailable(tmp_path: Path) -> None:
    """A full disk was "the database is unavailable" (and 503 "try again shortly", which waiting
    does not mend), or, from SQLite's checkpoint, "OperationalError: ..." as an unexpected error.
    The database is made full for real (SQLite's max_page_count); a checkpoint fails only when the
    disk itself is, so its failure is given to a real connection through the engine's do_connect
    hook: its wal_checkpoint fails as SQLite's does."""
    import sqlite3

    from sqlalchemy import event
    from sqlalchemy.exc import OperationalError

    from contam.app.services.database import database_trouble
    from contam.app.store import db as store_db

    url = f"sqlite:///{tmp_path / 'c.db'}"
    upgrade(url)
    engine = make_engine(url)
    with engine.connect() as conn:
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar_one()
        conn.exec_driver_sql(f"PRAGMA max_page_count={pages}")  # not a page more
        with pytest.raises(OperationalError, match="database or disk is full") as full:
            conn.exec_driver_sql("CREATE TABLE filler AS SELECT zeroblob(1048576) AS x")
    message, passing = database_trouble(full.value, "; try again shortly")
    assert message.startswith("the disk holding the database is full") and not passing, message
    assert database_trouble(OperationalError("SELECT", None, sqlite3.OperationalError("locked")))[1]

    class DiskFull(sqlite3.Connection):
        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
            if sql.startswith("PRAGMA wal_checkpoint"):
                raise sqlite3.OperationalError("database or disk is full")
            return super().execute(sql, *args)

    @event.listens_for(engine, "do_connect")
    def on_a_full_disk(_dialect: Any, _record: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
        cparams["factory"] = DiskFull

    engine.dispose()  # the connections made from now on are DiskFull
    with engine.connect() as conn, pytest.raises(OperationalError, match="disk is full") as raised:
        store_db.checkpoint(conn)
    assert database_trouble(raised.value)[0].startswith("the disk holding the database is full")
    engine.dispose()


def test_a_full_temporary_disk_is_said_as_such(
    migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scan writes its first pass's tables to the temporary folder: on a full one it said
    "OSError: 558357 requested and 44016 written" (numpy's short write; a new user's trial)."""
    import errno

    from contam.app.errors import disk_full

    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "a", "question": Q1}) + "\n")

    def no_room(*_a: object, **_k: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("contam.app.services.scanning._Bench.build", no_room)
    r = CliRunner().invoke(cli, ["scan", str(bench), "--db", migrated_url, "--progress", "none"])
    assert r.exit_code == 3 and "no space left on the disk being written" in r.output and "TMPDIR" in r.output, r.output
    assert disk_full(OSError("558357 requested and 44016 written")) is not None
    assert disk_full(OSError(errno.EACCES, "Permission denied")) is None


def test_a_postgresql_database_that_does_not_exist_says_to_create_it() -> None:
    """`contam db upgrade` on PostgreSQL makes the tables, not the database: a missing one was
    "the database is unavailable: ... does not exist", exit 3, as if the server were away (a trial)."""
    url = f"postgresql+psycopg://postgres@127.0.0.1:5432/contam_missing_{os.getpid()}"
    for args in (["db", "upgrade"], ["corpora"]):
        r = CliRunner().invoke(cli, [*args, "--db", url])
        assert r.exit_code == 2 and "create it first (`createdb contam_missing_" in r.output, r.output


def test_reports_are_listed_and_deleted_from_the_command_line(migrated_url: str, tmp_path: Path) -> None:
    """A killed server's job held its corpus until a server ran again, and the refusal said to
    delete the report through the API or the dashboard: the CLI had no way (a trial). `contam
    reports` lists them; `contam reports delete ID` deletes one, asking first, and frees the corpus."""
    from contam.app.services.reports import ReportService
    from contam.app.store import reports as rrepo
    from contam.app.store.schema import report

    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    engine = make_engine(migrated_url)
    service = ReportService(engine, 1 << 20)
    rid = service.submit(json.dumps({"id": "a", "question": Q1}).encode(), "quiz.jsonl", background=False)
    service.shutdown()
    with engine.begin() as conn:  # as a killed server's job leaves it, its lease run out
        rrepo.set_status(conn, rid, "running")
        conn.execute(update(report).where(report.c.id == rid).values(lease_until=0.0))
    run = CliRunner()
    listed = run.invoke(cli, ["reports", "--db", migrated_url])
    assert listed.exit_code == 0 and listed.output.startswith(f"{rid}  running ") and "quiz.jsonl" in listed.output
    assert "(corpora: web;" in listed.output
    # no server holds it: said, where `running` alone read as a job under way (an operator's trial)
    assert "1/1 items (no server holds its job: the next `contam serve` takes it up)" in listed.output
    with engine.begin() as conn:  # a live server's job
        assert rrepo.take_job(conn, rid, "a-server", 60.0)
    assert "no server holds" not in run.invoke(cli, ["reports", "--db", migrated_url]).output
    with engine.begin() as conn:
        rrepo.set_status(conn, rid, "running")
    assert json.loads(run.invoke(cli, ["reports", "--json", "--db", migrated_url]).output)[0]["id"] == rid
    refused = run.invoke(cli, ["corpora", "delete", "web", "--yes", "--db", migrated_url])
    assert refused.exit_code == 3 and "`contam reports delete ID`" in refused.output
    kept = run.invoke(cli, ["reports", "delete", rid, "--db", migrated_url], input="n\n")
    assert kept.exit_code == 0 and f"kept report {rid}" in kept.output
    gone = run.invoke(cli, ["reports", "delete", rid, "--yes", "--db", migrated_url])
    assert gone.exit_code == 0 and gone.output.strip() == f"deleted report {rid}"
    assert run.invoke(cli, ["reports", "--db", migrated_url]).output.strip() == "no reports yet"
    assert run.invoke(cli, ["reports", "delete", rid, "--yes", "--db", migrated_url]).exit_code == 2  # no such report
    assert run.invoke(cli, ["corpora", "delete", "web", "--yes", "--db", migrated_url]).exit_code == 0
    engine.dispose()


def test_indexing_into_a_new_corpus_beside_others_says_so(migrated_url: str, tmp_path: Path) -> None:
    """A typo in --corpus made a new corpus without a word (a new user's trial): stderr names it as
    new, with the corpora there are; the first corpus, and one indexed again, are not remarked on."""
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    first = index_cli(migrated_url, "web", "--progress", "none", str(tmp_path / "c.jsonl"))
    assert first.exit_code == 0 and "new corpus" not in first.stderr
    again = index_cli(migrated_url, "web", "--progress", "none", str(tmp_path / "c.jsonl"))
    assert again.exit_code == 0 and "new corpus" not in again.stderr
    typo = index_cli(migrated_url, "wbe", "--progress", "none", str(tmp_path / "c.jsonl"))
    assert typo.exit_code == 0 and "a new corpus 'wbe' (the corpora: web)" in typo.stderr, typo.stderr
    # a name refused is refused first, not said to be new and then refused (a new user's trial)
    bad = index_cli(migrated_url, "bad,name", "--progress", "none", str(tmp_path / "c.jsonl"))
    assert bad.exit_code != 0 and "a comma" in bad.stderr and "new corpus" not in bad.stderr, bad.stderr
    # so is a path not there, or a file of no corpus format (a README audit)
    for missing in (tmp_path / "nowhere.jsonl", tmp_path / "notes.pdf"):
        missing.with_suffix(".pdf").write_text("x")
        gone = index_cli(migrated_url, "wbf", "--progress", "none", str(missing))
        assert gone.exit_code == 2 and "new corpus" not in gone.stderr, gone.stderr
        assert ("no such file" in gone.stderr) == (missing.suffix == ".jsonl"), gone.stderr


def test_db_upgrade_hides_the_password_of_the_url(pg_url: str) -> None:
    """`contam db upgrade` echoed its URL whole, password included, into `make run`'s output and
    the logs of compose's migrate service (an operator's trial); every other message hides it."""
    with_password = make_url(pg_url).set(password="S3cretPw").render_as_string(hide_password=False)
    r = CliRunner().invoke(cli, ["db", "upgrade", "--db", with_password])
    assert r.exit_code == 0 and "database already at revision" in r.output, r.output
    assert "S3cretPw" not in r.output and ":***@" in r.output


def test_the_servers_own_log_lines_reach_its_log() -> None:
    """`contam serve` configured uvicorn's loggers only: the server's own INFO lines ("report R:
    taking up the job a stopped server left") were dropped, and its warnings came without a level
    (an operator's trial killed a server mid-job, restarted it and saw nothing said)."""
    from contam.app.api.security import server_log_config

    config = server_log_config()
    ours = config["loggers"].get("contam")
    assert ours is not None and ours["level"] == "INFO" and ours["handlers"] == ["default"]
    assert config["handlers"]["default"]["stream"] == "ext://sys.stderr"  # beside uvicorn's own lines


def test_serve_says_it_migrated_an_older_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`contam serve` migrates the schema as it starts: an operator who restarted a server on new
    code was told nothing of the database's upgrade (one that older servers share still runs old
    code against it), where `contam db upgrade` says what it did (an operator's trial)."""
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *_a, **_k: None)
    old = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade(old, "0016_report_item_search")
    monkeypatch.setenv("CONTAM_DATABASE_URL", old)
    get_settings.cache_clear()
    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    head = known_revisions()[1]
    r = CliRunner().invoke(cli, ["serve", "--port", str(port)])
    assert r.exit_code == 0 and f"migrated from revision 0016_report_item_search to {head}" in r.output, r.output
    again = CliRunner().invoke(cli, ["serve", "--port", str(port)])
    assert again.exit_code == 0 and "migrated from" not in again.output, again.output


def test_an_index_run_refused_for_a_report_job_says_nothing_was_kept(migrated_url: str, tmp_path: Path) -> None:
    """An indexing run refused at its start, a report job reading the corpus, ended with "the files
    reported done are kept; run it again to index the rest", of a run that wrote nothing (a REST
    user's trial): it says why it was refused, and no more."""
    from contam.app.services.reports import ReportService
    from contam.app.store import reports as rrepo
    from contam.app.store.db import make_engine

    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": f"quiz: {Q1}"}) + "\n")
    assert index_cli(migrated_url, "web", "--progress", "none", str(corpus)).exit_code == 0
    engine = make_engine(migrated_url)
    reports = ReportService(engine, 1 << 20)
    try:
        rid = reports.submit(json.dumps({"id": "a", "question": Q1}).encode() + b"\n", "b.jsonl", background=False)
        with engine.begin() as conn:
            rrepo.set_status(conn, rid, "queued")
        more = tmp_path / "more.jsonl"
        more.write_text(json.dumps({"id": "q", "text": "another page of text to index here"}) + "\n")
        refused = index_cli(migrated_url, "web", "--progress", "none", str(more))
        assert refused.exit_code == 3 and "while a report job reads it" in refused.stderr, refused.stderr
        assert "kept" not in refused.stderr
    finally:
        reports.shutdown()
        engine.dispose()
