"""Schema changes go only through Alembic: upgrade head matches the models, and the segment
migration keeps every posting, both ways."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text

from contam.app.store import repo
from contam.app.store.db import alembic_config, make_engine, upgrade
from contam.app.store.schema import metadata


def test_migrations_match_models(migrated_url: str) -> None:
    eng = make_engine(migrated_url)
    with eng.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    eng.dispose()
    assert diff == []


def test_segment_migration_keeps_postings(db_url: str) -> None:
    """0003 moves existing postings into one segment per corpus, keyed (seg, key, doc), and back."""
    upgrade(db_url, "0002")
    eng = make_engine(db_url)
    ngrams = [(-5, 1), (7, 1), (7, 2), (9, 3)]
    bands = [(11, 2, 0), (-3, 3, 1)]
    with eng.begin() as conn:
        for cid, name in ((1, "a"), (2, "b")):
            conn.execute(
                text(
                    "INSERT INTO corpus (id, name, fingerprint, config, store_text, created_at) "
                    "VALUES (:i, :n, 'f', '{}', true, CURRENT_TIMESTAMP)"
                ),
                {"i": cid, "n": name},
            )
            conn.execute(
                text(
                    "INSERT INTO corpus_file (id, corpus_id, path, size, content_hash, status, n_docs, "
                    "n_tokens, n_ngrams, n_windows, skipped, seconds, indexed_at) VALUES (:i, :i, 'p', 1, "
                    ":h, 'done', 0, 0, 0, 0, '{}', 0, CURRENT_TIMESTAMP)"
                ),
                {"i": cid, "h": f"h{cid}"},
            )
        for doc, cid in ((1, 1), (2, 1), (3, 2)):
            conn.execute(
                text(
                    "INSERT INTO document (id, corpus_id, file_id, external_id, position, n_chars, "
                    "n_tokens, text_hash) VALUES (:d, :c, :c, 'x', 0, 1, 1, 0)"
                ),
                {"d": doc, "c": cid},
            )
        conn.execute(text("INSERT INTO ngram (hash, doc_id) VALUES (:h, :d)"), [{"h": h, "d": d} for h, d in ngrams])
        conn.execute(
            text("INSERT INTO band (key, doc_id, win) VALUES (:k, :d, :w)"),
            [{"k": k, "d": d, "w": w} for k, d, w in bands],
        )
    eng.dispose()
    try:
        upgrade(db_url)
        eng = make_engine(db_url)
        assert inspect(eng).get_pk_constraint("ngram")["constrained_columns"] == ["seg", "hash", "doc_id"]
        assert inspect(eng).get_pk_constraint("band")["constrained_columns"] == ["seg", "key", "doc_id", "win"]
        with eng.connect() as conn:
            segs = {c: (s, n) for s, c, n in conn.execute(text("SELECT id, corpus_id, rows FROM segment"))}
            got_ngrams = repo.postings(conn, "ngram")  # on PostgreSQL, in blocks since 0005
            got_bands = repo.postings(conn, "band")
        corpus_of = {1: 1, 2: 1, 3: 2}
        assert got_ngrams == sorted((segs[corpus_of[d]][0], h, d) for h, d in ngrams)
        assert got_bands == sorted((segs[corpus_of[d]][0], k, d, w) for k, d, w in bands)
        assert {c: n for c, (_, n) in segs.items()} == {1: 4, 2: 2}
        eng.dispose()
        command.downgrade(alembic_config(db_url), "0002")
        eng = make_engine(db_url)
        with eng.connect() as conn:
            assert sorted(conn.execute(text("SELECT hash, doc_id FROM ngram")).all()) == sorted(ngrams)
            assert sorted(conn.execute(text("SELECT key, doc_id, win FROM band")).all()) == sorted(bands)
        assert not inspect(eng).has_table("segment")
    finally:
        eng.dispose()
