"""Schema changes go only through Alembic: upgrade head matches the models, and the segment
migration keeps every posting, both ways."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, inspect, text

from contam.app.store import blocks, repo, reports
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
        assert not inspect(eng).has_table("ngram") and not inspect(eng).has_table("band")  # in blocks since 0010
        with eng.connect() as conn:
            segs = {c: (s, n) for s, c, n in conn.execute(text("SELECT id, corpus_id, rows FROM segment"))}
            got_ngrams = repo.postings(conn, "ngram")  # in blocks: PostgreSQL since 0005, SQLite since 0010
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


def test_block_migration_moves_sqlite_rows_into_blocks_and_back(tmp_path: Path) -> None:
    """0010 packs a SQLite index's one-row-per-posting tables into blocks: every posting and
    every look-up answer is kept, and the downgrade gives the rows back."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade(url, "0009_index_runs")
    rng = np.random.default_rng(7)
    ngrams = sorted(
        {
            (s, int(h), int(d))
            for s in (1, 2)
            for h, d in zip(rng.integers(-(2**63), 2**63 - 1, 3000), rng.integers(1, 50, 3000), strict=True)
        }
    )
    ngrams += [(1, 12345, d) for d in (3, 4)] + [(2, 12345, 9)]  # one key in two segments and docs
    bands = sorted(
        {
            (s, int(k), int(d), int(w))
            for s in (1, 2)
            for k, d, w in zip(
                rng.integers(-(2**63), 2**63 - 1, 1000),
                rng.integers(1, 50, 1000),
                rng.integers(0, 9, 1000),
                strict=True,
            )
        }
    )
    eng = make_engine(url)
    with eng.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO corpus (id, name, fingerprint, config, store_text, created_at) "
                "VALUES (1, 'a', 'f', '{}', 1, CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(text("INSERT INTO segment (id, corpus_id, rows) VALUES (1, 1, 0), (2, 1, 0)"))
        conn.execute(
            text("INSERT INTO ngram (seg, hash, doc_id) VALUES (:s, :h, :d)"),
            [{"s": s, "h": h, "d": d} for s, h, d in ngrams],
        )
        conn.execute(
            text("INSERT INTO band (seg, key, doc_id, win) VALUES (:s, :k, :d, :w)"),
            [{"s": s, "k": k, "d": d, "w": w} for s, k, d, w in bands],
        )
    eng.dispose()
    upgrade(url)
    eng = make_engine(url)
    try:
        with eng.connect() as conn:
            assert not inspect(conn).has_table("ngram")
            assert repo.postings(conn, "ngram") == sorted(ngrams)
            assert repo.postings(conn, "band") == sorted(bands)
            asked = [h for _s, h, _d in ngrams[::7]]
            want: dict[int, list[int]] = {}
            for _s, h, d in sorted(ngrams, key=lambda r: (r[1], r[2])):
                if h in set(asked):
                    want.setdefault(h, []).append(d)
            assert repo.ngram_postings(conn, asked, [1]) == want
            assert repo.ngram_df(conn, [12345, 1], [1]) == {12345: 3}
        eng.dispose()
        command.downgrade(alembic_config(url), "0009_index_runs")
        eng = make_engine(url)
        with eng.connect() as conn:
            assert sorted(tuple(r) for r in conn.execute(text("SELECT seg, hash, doc_id FROM ngram"))) == sorted(ngrams)
            assert sorted(tuple(r) for r in conn.execute(text("SELECT seg, key, doc_id, win FROM band"))) == sorted(
                bands
            )
            assert conn.execute(text("SELECT count(*) FROM ngram_block")).scalar() == 0
    finally:
        eng.dispose()


def test_document_text_is_stored_without_compressing_it_again(pg_url: str) -> None:
    """The documents' text is zstd already: PostgreSQL keeps it out of line without trying pglz (0013).
    (PostgreSQL only: it ran on SQLite too, returning at once, a test that could not fail.)"""
    eng = make_engine(pg_url)
    with eng.connect() as conn:
        storage = conn.exec_driver_sql(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = 'document'::regclass AND attname = 'text'"
        ).scalar_one()
    eng.dispose()
    assert storage == "e"


def test_segments_written_before_block_bits_keep_18_bits_both_ways(db_url: str) -> None:
    """0014: a segment written before it was cut into 2**18 blocks and reads so after the upgrade
    (the column's default); the block tables keep rows up to a page inline on PostgreSQL; the
    downgrade is refused while a segment of other bits exists (it could not be read), and goes
    back once none does."""
    upgrade(db_url, "0013_document_text_storage")
    rng = np.random.default_rng(7)
    keys = np.unique(rng.integers(-(2**63), 2**63 - 1, 3000, dtype=np.int64))
    docs = np.full(len(keys), 5, np.int32)
    eng = make_engine(db_url)
    with eng.begin() as conn:  # what the code before 0014 wrote: 18-bit blocks, no block_bits
        conn.exec_driver_sql(
            "INSERT INTO corpus (id, name, fingerprint, config, store_text, created_at) "
            "VALUES (1, 'c', 'f', '{}', true, CURRENT_TIMESTAMP)"
        )
        conn.exec_driver_sql(f"INSERT INTO segment (id, corpus_id, rows) VALUES (1, 1, {len(keys)})")
        flat = blocks.block_rows([keys, docs], 18)
        conn.exec_driver_sql(
            "INSERT INTO ngram_block (seg, bucket, data) VALUES " + ",".join(["(1, ?, ?)"] * (len(flat) // 2))
            if db_url.startswith("sqlite")
            else "INSERT INTO ngram_block (seg, bucket, data) VALUES " + ",".join(["(1, %s, %s)"] * (len(flat) // 2)),
            tuple(flat),
        )
    eng.dispose()
    upgrade(db_url)
    eng = make_engine(db_url)
    with eng.connect() as conn:
        assert repo.block_bits(conn, [1]) == {1: 18}
        df, _docs = repo.ngram_lookup(conn, keys.tolist(), [1], max_df=10)
        assert df == dict.fromkeys(keys.tolist(), 1)
        if db_url.startswith("postgresql"):
            opts = conn.exec_driver_sql("SELECT reloptions FROM pg_class WHERE relname = 'ngram_block'").scalar_one()
            assert "toast_tuple_target=8160" in opts
    with eng.begin() as conn:
        conn.exec_driver_sql("INSERT INTO segment (id, corpus_id, rows, block_bits) VALUES (2, 1, 10, 16)")
    cfg = alembic_config(db_url)
    with pytest.raises(RuntimeError, match="re-index"):
        command.downgrade(cfg, "0013_document_text_storage")
    with eng.begin() as conn:
        conn.exec_driver_sql("DELETE FROM segment WHERE id = 2")
    eng.dispose()
    command.downgrade(cfg, "0013_document_text_storage")
    eng = make_engine(db_url)
    assert "block_bits" not in {c["name"] for c in inspect(eng).get_columns("segment")}
    eng.dispose()


def _old_report(conn: Connection, items: int) -> None:
    """A done report "r" of `items` items, as the report table held it before 0016."""
    conn.execute(
        text(
            "INSERT INTO report (id, name, filename, file_hash, status, total_items, done_items, read_items, "
            "corpora, mapping, thresholds, fingerprint, config, software_version, upload, created_at) VALUES "
            "('r', 'r', 'f.jsonl', 'h', 'done', :n, :n, :n, '[]', '{}', '{}', 'f', '{}', 'v', :u, CURRENT_TIMESTAMP)"
        ),
        {"n": items, "u": b""},
    )


def _old_items(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Report "r"'s items (i: idx, t: text, f: roles_found, d: data), clean, as written before 0016."""
    conn.execute(
        text(
            "INSERT INTO report_item (report_id, idx, item_id, status, score, text, roles_found, "
            "corpora_found, data) VALUES ('r', :i, 'x', 'clean', 0, :t, :f, ',,', :d)"
        ),
        rows,
    )


def test_report_items_made_before_0017_are_filtered_by_their_passage_found(db_url: str) -> None:
    """0017 adds "passage" to the fields found of rows whose result says passage_found: a report
    made before the field filter knew it listed none of them for `field=passage` (a review), while
    its summary counted them. A downgrade takes it out again."""
    upgrade(db_url, "0016_report_item_search")
    eng = make_engine(db_url)
    with eng.begin() as conn:
        _old_report(conn, 3)
        rows = [
            {"i": 0, "t": "t", "f": ",question,", "d": json.dumps({"passage_found": True})},
            {"i": 1, "t": "t", "f": ",,", "d": json.dumps({"passage_found": True})},
            {"i": 2, "t": "t", "f": ",question,", "d": json.dumps({"passage_found": False})},
        ]
        _old_items(conn, rows)
    eng.dispose()
    upgrade(db_url)
    eng = make_engine(db_url)
    with eng.connect() as conn:
        found = dict(conn.execute(text("SELECT idx, roles_found FROM report_item")).all())
        assert found == {0: ",question,passage,", 1: ",passage,", 2: ",question,"}
        assert reports.query_items(conn, "r", role="passage")[0] == 2
    eng.dispose()
    command.downgrade(alembic_config(db_url), "0016_report_item_search")
    eng = make_engine(db_url)
    with eng.connect() as conn:
        assert dict(conn.execute(text("SELECT idx, roles_found FROM report_item")).all()) == {
            0: ",question,",
            1: ",,",
            2: ",question,",
        }
    eng.dispose()


def test_report_items_made_before_0016_are_searched_whole_and_casefolded(db_url: str) -> None:
    """0016 fills report_item.search from the item each row keeps (`data`), not from `text`, which
    holds its first 4,000 characters; rows of more than one page are all filled, and the search
    finds a capital of any script (SQL lower() folds ASCII only)."""
    upgrade(db_url, "0015_file_text_field")
    eng = make_engine(db_url)
    long_q = "Какой " + "word " * 1000 + "Quorvanian"
    with eng.begin() as conn:
        _old_report(conn, 1201)
        item = {"question": long_q, "passage": "", "choices": ["Olaf", "Eric"], "answer": "Olaf", "solution": ""}
        rows = [
            {"i": k, "t": long_q[:4000], "f": ",,", "d": json.dumps({"item": {**item, "question": f"{long_q} {k}"}})}
            for k in range(1201)
        ]
        _old_items(conn, rows)
    eng.dispose()
    upgrade(db_url)
    eng = make_engine(db_url)
    with eng.connect() as conn:
        search = dict(conn.execute(text("SELECT idx, search FROM report_item")).all())
        assert len(search) == 1201 and search[1200] == f"{long_q} 1200\nA. Olaf\nB. Eric\nAnswer: Olaf".casefold()
        total, _items = reports.query_items(conn, "r", q="КАКОЙ")
        assert total == 1201
        assert reports.query_items(conn, "r", q="quorvanian 1200")[0] == 1
    with eng.begin() as conn:  # a row an earlier release's server wrote after the upgrade: no search text
        conn.execute(text("UPDATE report_item SET search = '' WHERE idx = 7"))
    with eng.connect() as conn:
        assert reports.query_items(conn, "r", q="WORD WORD")[0] == 1201  # found in its text, as before
        assert reports.query_items(conn, "r", q="quorvanian")[0] == 1200  # past the text's 4,000 characters
    eng.dispose()


def test_report_items_made_before_0019_sort_their_ids_by_number(db_url: str) -> None:
    """0019 gives each row a sort key for its id from its item_id (the ids sorted as text: b10
    before b2); a row an earlier release's server writes after the upgrade, without one, sorts by
    its id as before. A downgrade takes the column out again."""
    upgrade(db_url, "0018_report_left_out")
    eng = make_engine(db_url)
    ids = ["b10", "b2", "b1", "a100", "a9", "b02"]
    with eng.begin() as conn:
        _old_report(conn, len(ids))
        conn.execute(
            text(
                "INSERT INTO report_item (report_id, idx, item_id, status, score, text, roles_found, "
                "corpora_found, data) VALUES ('r', :i, :id, 'clean', 0, 't', ',,', ',,', '{}')"
            ),
            [{"i": k, "id": item_id} for k, item_id in enumerate(ids)],
        )
    eng.dispose()
    upgrade(db_url)
    eng = make_engine(db_url)

    def by_id(descending: bool = False) -> list[str]:
        with eng.connect() as conn:
            got = reports.query_items(conn, "r", sort="item_id", descending=descending, limit=100)[1]
            return [r["item_id"] for r in got]

    assert by_id() == ["a9", "a100", "b1", "b02", "b2", "b10"]
    assert by_id(descending=True) == ["b10", "b2", "b02", "b1", "a100", "a9"]
    with eng.begin() as conn:  # written by an earlier release's server: no key, its id as text
        conn.execute(text("UPDATE report_item SET id_order = '' WHERE item_id = 'a9'"))
    assert by_id() == ["a100", "a9", "b1", "b02", "b2", "b10"]  # "a9" as text, after "a03100"
    eng.dispose()
    command.downgrade(alembic_config(db_url), "0018_report_left_out")
    eng = make_engine(db_url)
    assert "id_order" not in {c["name"] for c in inspect(eng).get_columns("report_item")}
    eng.dispose()
