"""The fingerprint pins what the libraries compute (known answers), not their versions: an
index built under one xxhash release is usable under another that hashes alike, and refused
under one that hashes otherwise."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
import xxhash
from alembic import command
from conftest import IndexCorpus
from helpers import make_docs
from sqlalchemy import Engine, text
from typer.testing import CliRunner

from contam.app.core import config
from contam.app.core.config import SignatureConfig, known_answers
from contam.app.errors import FingerprintMismatch
from contam.app.services.scanning import Scanner
from contam.app.store.db import alembic_config, make_engine, upgrade
from contam.indexer.cli import app as cli


@pytest.fixture
def fresh_answers() -> Iterator[None]:
    """Known answers recomputed, as by a new process, before and after the test."""
    config._known_answers.cache_clear()
    yield
    config._known_answers.cache_clear()


def test_a_library_upgrade_that_computes_the_same_is_accepted(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch, fresh_answers: None
) -> None:
    index_corpus(engine, make_docs(2, 60, 1, "a"), "web")
    real_version = metadata.version
    monkeypatch.setattr(metadata, "version", lambda d: "9.9.9" if d in ("xxhash", "datasketch") else real_version(d))
    assert Scanner(engine).cfg.libraries == known_answers()  # a patch release of xxhash is no reason to refuse


def test_a_library_that_computes_otherwise_is_refused(
    engine: Engine, index_corpus: IndexCorpus, monkeypatch: pytest.MonkeyPatch, fresh_answers: None, tmp_path: Path
) -> None:
    index_corpus(engine, make_docs(2, 60, 1, "a"), "web")
    real = xxhash.xxh3_64_intdigest
    monkeypatch.setattr(xxhash, "xxh3_64_intdigest", lambda b: real(b + b"!"))  # a release that hashes otherwise
    config._known_answers.cache_clear()
    with pytest.raises(FingerprintMismatch, match="known_ngrams: index has '[0-9a-f]{16}', this scorer has"):
        Scanner(engine)
    # the command line: a runtime error (3), the environment's doing, not a usage error (2)
    bench = tmp_path / "b.jsonl"
    bench.write_text('{"id": "a", "question": "which river runs through the old town of the valley"}\n')
    r = CliRunner().invoke(cli, ["scan", str(bench), "--db", engine.url.render_as_string(hide_password=False)])
    assert r.exit_code == 3 and "cannot reproduce" in r.output, r.output


def test_migration_turns_stored_versions_into_known_answers(db_url: str) -> None:
    upgrade(db_url, "0003")
    old = SignatureConfig().to_dict()
    current = {**old, "libraries": {"unicodedata": unicodedata.unidata_version, "xxhash": "3.4.1", "datasketch": "1.6"}}
    other_unicode = {**old, "libraries": {"unicodedata": "9.0.0", "xxhash": "3.4.1", "datasketch": "1.6"}}
    eng = make_engine(db_url)
    with eng.begin() as conn:
        for cid, cfg in ((1, current), (2, other_unicode)):
            conn.execute(
                text(
                    "INSERT INTO corpus (id, name, fingerprint, config, store_text, created_at) "
                    "VALUES (:i, :n, 'old', :c, true, CURRENT_TIMESTAMP)"
                ),
                {"i": cid, "n": f"c{cid}", "c": json.dumps(cfg)},
            )
    try:
        upgrade(db_url)
        with eng.connect() as conn:
            rows = {
                i: (f, json.loads(c)) for i, f, c in conn.execute(text("SELECT id, fingerprint, config FROM corpus"))
            }
        assert rows[1] == (SignatureConfig().fingerprint(), SignatureConfig().to_dict())
        assert rows[2] == ("old", other_unicode)  # another Unicode version: not vouched for
        command.downgrade(alembic_config(db_url), "0003")
        with eng.connect() as conn:
            back = json.loads(conn.execute(text("SELECT config FROM corpus WHERE id = 1")).scalar_one())
        assert set(back["libraries"]) == {"unicodedata", "xxhash", "datasketch"}
    finally:
        eng.dispose()
