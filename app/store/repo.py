"""Repositories: all SQL lives here. Functions take a Connection and never commit;
the caller (an indexer file, a request) owns the transaction."""

from __future__ import annotations

import functools
import json
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, Select, and_, bindparam, delete, func, insert, or_, select, text, update
from sqlalchemy.engine import Connection

from contam.app.core.arrays import Postings, distinct, key_directory
from contam.app.core.config import SignatureConfig
from contam.app.core.signatures import text_hashes
from contam.app.errors import StateError
from contam.app.store import blocks, db
from contam.app.store.schema import (
    band_block,
    corpus,
    corpus_file,
    document,
    file_claim,
    index_run,
    key_filter,
    ngram_block,
    segment,
)


def now() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------- corpora


def _decode_corpus(row: Any) -> dict[str, Any]:
    d = dict(row)
    d["config"] = json.loads(d["config"])
    return d


def get_corpus(conn: Connection, name: str, lock: bool = False) -> dict[str, Any] | None:
    """The corpus row, its signature settings decoded (a dict), or None. `lock`: held until the
    transaction ends (PostgreSQL: FOR UPDATE; an indexing run that starts meanwhile waits on
    its foreign key to this row, then fails if the row is gone. SQLite's writer lock already
    serialises writers)."""
    q = select(corpus).where(corpus.c.name == name)
    row = conn.execute(q.with_for_update() if lock else q).mappings().first()
    return _decode_corpus(row) if row else None


def lock_corpus(conn: Connection, corpus_id: int) -> str | None:
    """The corpus's name, its row held until the transaction ends, or None if it is gone. On
    PostgreSQL FOR NO KEY UPDATE: it excludes another such hold and a delete's or rename's
    (get_corpus's `lock`), but not the key-share lock an indexer's open commit group holds on
    the row (its files and documents reference it), which FOR UPDATE waited behind: minutes."""
    q = select(corpus.c.name).where(corpus.c.id == corpus_id).with_for_update(key_share=True)
    return conn.execute(q).scalar()


def create_corpus(conn: Connection, name: str, cfg: SignatureConfig, store_text: bool) -> int:
    result = conn.execute(
        insert(corpus).values(
            name=name,
            fingerprint=cfg.fingerprint(),
            config=json.dumps(cfg.to_dict(), sort_keys=True),
            store_text=store_text,
            created_at=now(),
        )
    )
    pk = result.inserted_primary_key
    assert pk is not None
    return int(pk[0])


def delete_corpus(conn: Connection, corpus_id: int) -> None:
    """A corpus and everything indexed into it: postings (by its segments, which the posting
    tables do not reference by key), segments, documents, files and the corpus row."""
    segs = select(segment.c.id).where(segment.c.corpus_id == corpus_id).scalar_subquery()
    conn.execute(delete(ngram_block).where(ngram_block.c.seg.in_(segs)))
    conn.execute(delete(band_block).where(band_block.c.seg.in_(segs)))
    conn.execute(delete(key_filter).where(key_filter.c.seg.in_(segs)))
    conn.execute(delete(segment).where(segment.c.corpus_id == corpus_id))
    conn.execute(delete(file_claim).where(file_claim.c.corpus_id == corpus_id))
    conn.execute(delete(index_run).where(index_run.c.corpus_id == corpus_id))  # lapsed ones only: see live_runs
    conn.execute(delete(document).where(document.c.corpus_id == corpus_id))
    conn.execute(delete(corpus_file).where(corpus_file.c.corpus_id == corpus_id))
    conn.execute(delete(corpus).where(corpus.c.id == corpus_id))


def rename_corpus(conn: Connection, corpus_id: int, new_name: str) -> None:
    conn.execute(update(corpus).where(corpus.c.id == corpus_id).values(name=new_name))


# Indexing runs writing into a corpus, under a lease on the database's clock (migration 0009).


def start_run(conn: Connection, run_id: str, corpus_id: int, owner: str, lease: float) -> None:
    conn.execute(
        insert(index_run).values(
            id=run_id, corpus_id=corpus_id, owner=owner, started_at=now(), lease_until=db.clock(conn) + lease
        )
    )


def renew_run(conn: Connection, run_id: str, lease: float) -> bool:
    """Extend a run's lease; False if its row is gone (its corpus was deleted)."""
    q = update(index_run).where(index_run.c.id == run_id).values(lease_until=db.clock(conn) + lease)
    return conn.execute(q).rowcount > 0


def end_run(conn: Connection, run_id: str) -> None:
    conn.execute(delete(index_run).where(index_run.c.id == run_id))


def live_runs(conn: Connection, corpus_id: int) -> list[str]:
    """The owners of the runs writing into a corpus whose leases have not run out."""
    q = select(index_run.c.owner).where(index_run.c.corpus_id == corpus_id, _run_alive(conn))
    return list(conn.execute(q.order_by(index_run.c.started_at)).scalars())


def _run_alive(conn: Connection) -> ColumnElement[bool]:
    """An index_run row whose lease has not run out (with SQLite's grace: see db.lease_grace)."""
    return index_run.c.lease_until >= db.clock(conn) - db.lease_grace(conn)


def corpus_config(row: dict[str, Any]) -> SignatureConfig:
    return SignatureConfig.from_dict(row["config"])


def list_corpora(conn: Connection, corpus_id: int | None = None) -> list[dict[str, Any]]:
    """Every corpus (or the one of `corpus_id`) with its file, document, token and byte totals,
    and `indexing`: the owners of the runs writing into it now (live_runs)."""
    out = []
    q = _corpora_query() if corpus_id is None else _corpora_query().where(corpus.c.id == corpus_id)
    runs: dict[int, list[str]] = {}
    for cid, owner in conn.execute(select(index_run.c.corpus_id, index_run.c.owner).where(_run_alive(conn))).all():
        runs.setdefault(int(cid), []).append(str(owner))
    for row in conn.execute(q).mappings():
        d = _decode_corpus(row)
        for k in ("files", "failed_files", "bytes", "documents", "tokens", "ngrams", "windows"):
            d[k] = int(d[k])  # PostgreSQL's SUM(bigint) is numeric
        d["indexing"] = sorted(runs.get(int(d["id"]), []))
        out.append(d)
    return out


@functools.cache
def _corpora_query() -> Select[Any]:
    """list_corpora's statement, built once: building its subqueries took more than running
    it (every /check reads the listing)."""
    files = (
        select(
            corpus_file.c.corpus_id,
            func.count().label("files"),
            func.sum(corpus_file.c.size).label("bytes"),
            func.sum(corpus_file.c.n_docs).label("documents"),
            func.sum(corpus_file.c.n_tokens).label("tokens"),
            func.sum(corpus_file.c.n_ngrams).label("ngrams"),
            func.sum(corpus_file.c.n_windows).label("windows"),
        )
        .where(corpus_file.c.status == "done")
        .group_by(corpus_file.c.corpus_id)
        .subquery()
    )
    failed = (
        select(corpus_file.c.corpus_id, func.count().label("failed_files"))
        .where(corpus_file.c.status == "failed")
        .group_by(corpus_file.c.corpus_id)
        .subquery()
    )
    q = (
        select(
            corpus,
            func.coalesce(files.c.files, 0).label("files"),
            func.coalesce(failed.c.failed_files, 0).label("failed_files"),
            func.coalesce(files.c.bytes, 0).label("bytes"),
            func.coalesce(files.c.documents, 0).label("documents"),
            func.coalesce(files.c.tokens, 0).label("tokens"),
            func.coalesce(files.c.ngrams, 0).label("ngrams"),
            func.coalesce(files.c.windows, 0).label("windows"),
        )
        .outerjoin(files, files.c.corpus_id == corpus.c.id)
        .outerjoin(failed, failed.c.corpus_id == corpus.c.id)
        .order_by(corpus.c.name)
    )
    return q


def corpus_health(conn: Connection, corpus_id: int) -> dict[str, Any]:
    """Documents, tokens, skipped records by reason, failed files, duplicates, length spread."""
    files = conn.execute(select(corpus_file).where(corpus_file.c.corpus_id == corpus_id)).mappings().all()
    done = [f for f in files if f["status"] == "done"]
    done_paths = {f["path"] for f in done}
    skipped: dict[str, int] = {}  # over the files indexed, as the other counts: a failed file keeps no record
    for f in done:
        for reason, n in json.loads(f["skipped"]).items():
            skipped[reason] = skipped.get(reason, 0) + n
    docs_q = select(func.count(), func.count(func.distinct(document.c.text_hash))).where(
        document.c.corpus_id == corpus_id
    )
    n_docs, distinct = conn.execute(docs_q).one()
    lengths = np.array(
        conn.execute(select(document.c.n_tokens).where(document.c.corpus_id == corpus_id)).scalars().all(),
        dtype=np.int64,
    )
    spread: dict[str, int] = {}
    if len(lengths):
        for name, q in (("min", 0), ("p10", 10), ("p50", 50), ("p90", 90), ("p99", 99), ("max", 100)):
            spread[name] = int(np.percentile(lengths, q))
    return {
        "files": len(done),
        "documents": int(n_docs),
        "tokens": int(sum(f["n_tokens"] for f in done)),
        "ngrams": int(sum(f["n_ngrams"] for f in done)),
        "windows": int(sum(f["n_windows"] for f in done)),
        "bytes": int(sum(f["size"] for f in done)),
        "skipped": dict(sorted(skipped.items())),
        "failed_files": [
            {
                "path": f["path"],
                "error": f["error"],
                "skipped": json.loads(f["skipped"]),
                # a version of it indexed before stays (a rerun with other settings failed on it)
                "indexed_before": f["path"] in done_paths,
            }
            for f in files
            if f["status"] == "failed"
        ],
        "duplicate_documents": int(n_docs - distinct),
        "segments": len(segments(conn, [corpus_id])),
        "tokens_per_document": spread,
        "short_documents": int((lengths < 8).sum()) if len(lengths) else 0,
    }


# ---------------------------------------------------------------- files and documents


def find_file(conn: Connection, corpus_id: int, content_hash: str) -> dict[str, Any] | None:
    row = (
        conn.execute(
            select(corpus_file).where(corpus_file.c.corpus_id == corpus_id, corpus_file.c.content_hash == content_hash)
        )
        .mappings()
        .first()
    )
    return dict(row) if row else None


def move_file(conn: Connection, file_id: int, path: str) -> None:
    """Record an indexed file under the path it was moved to."""
    conn.execute(update(corpus_file).where(corpus_file.c.id == file_id).values(path=path))


def claim_file(conn: Connection, corpus_id: int, content_hash: str) -> None:
    """Hold a file of a corpus until the transaction ends, so two indexers never write it at
    once (PostgreSQL: a transaction-level advisory lock; SQLite: the writer already holds the
    database's write lock, taken at BEGIN IMMEDIATE)."""
    if db.dialect(conn) == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:c, hashtext(:h))"), {"c": corpus_id, "h": content_hash})


# File claims with a lease (the Ray executor's tasks; PostgreSQL only): the database's clock
# decides when a lease has run out, so the clocks of the workers' machines do not matter.
_LEASE = "clock_timestamp() + make_interval(secs => CAST(:s AS double precision))"


def take_claim(conn: Connection, corpus_id: int, content_hash: str, path: str, owner: str, lease: float) -> float:
    """Claim a file for `owner` for `lease` seconds: free, or held by a lease that has run out
    (taken over). 0.0 when claimed, else the seconds left on the holder's lease."""
    taken = conn.execute(
        text(
            "INSERT INTO file_claim AS c (corpus_id, content_hash, path, owner, expires_at, takeovers) "
            f"VALUES (:c, :h, :p, :o, {_LEASE}, 0) ON CONFLICT (corpus_id, content_hash) DO UPDATE "
            "SET owner = EXCLUDED.owner, path = EXCLUDED.path, expires_at = EXCLUDED.expires_at, "
            "takeovers = c.takeovers + 1 WHERE c.expires_at < clock_timestamp() RETURNING owner"
        ),
        {"c": corpus_id, "h": content_hash, "p": path, "o": owner, "s": lease},
    ).first()
    if taken is not None:
        return 0.0
    left = conn.execute(
        text(
            "SELECT extract(epoch FROM expires_at - clock_timestamp()) FROM file_claim "
            "WHERE corpus_id = :c AND content_hash = :h"
        ),
        {"c": corpus_id, "h": content_hash},
    ).scalar()
    return max(float(left or 0.0), 0.01)  # released meanwhile: try again at once


def renew_claims(conn: Connection, corpus_id: int, owner: str, lease: float) -> int:
    """Extend the leases of `owner`'s claims by `lease` seconds from now; how many it still holds."""
    return conn.execute(
        text(f"UPDATE file_claim SET expires_at = {_LEASE} WHERE corpus_id = :c AND owner = :o"),
        {"c": corpus_id, "o": owner, "s": lease},
    ).rowcount


def release_claims(conn: Connection, corpus_id: int, owner: str, content_hashes: Sequence[str] | None = None) -> int:
    """Drop `owner`'s claims (on the given files, or all); how many it still held. In the
    transaction that writes the files this is the fence: files commit only if their task still
    holds every one of them (another task takes over a claim whose lease ran out)."""
    q = delete(file_claim).where(file_claim.c.corpus_id == corpus_id, file_claim.c.owner == owner)
    if content_hashes is not None:
        q = q.where(file_claim.c.content_hash.in_(list(content_hashes)))
    return conn.execute(q).rowcount


def release_run_claims(conn: Connection, corpus_id: int, run: str) -> int:
    """Drop the claims of every owner whose token starts with `run` (one indexing run's workers,
    stopped: their open groups rolled back); how many."""
    mine = file_claim.c.owner.startswith(run, autoescape=True)
    return conn.execute(delete(file_claim).where(file_claim.c.corpus_id == corpus_id, mine)).rowcount


def drop_stale_claims(conn: Connection, corpus_id: int) -> int:
    """Forget lapsed claims of files that are indexed whole (their holder died after another
    indexer committed the file); how many."""
    done = select(corpus_file.c.content_hash).where(
        corpus_file.c.corpus_id == corpus_id, corpus_file.c.status == "done"
    )
    return conn.execute(
        delete(file_claim).where(
            file_claim.c.corpus_id == corpus_id,
            file_claim.c.expires_at < func.clock_timestamp(),
            file_claim.c.content_hash.in_(done),
        )
    ).rowcount


def delete_file(conn: Connection, file_id: int) -> None:
    """Forget a file record. Only used for failed files, which own no documents."""
    conn.execute(delete(corpus_file).where(corpus_file.c.id == file_id))


def versions_at(conn: Connection, corpus_id: int, paths: Sequence[str], least: int = 2) -> dict[str, int]:
    """Of `paths`, those at which the corpus holds at least `least` indexed contents (by default
    more than one: a file changed and indexed again, both versions' documents in the corpus), with
    how many."""
    out: dict[str, int] = {}
    for chunk in db.chunks(list(paths), 500):
        q = (
            select(corpus_file.c.path, func.count())
            .where(corpus_file.c.corpus_id == corpus_id, corpus_file.c.status == "done", corpus_file.c.path.in_(chunk))
            .group_by(corpus_file.c.path)
            .having(func.count() >= least)
        )
        out.update({str(p): int(n) for p, n in conn.execute(q).all()})
    return out


def documents_at(
    conn: Connection, corpus_id: int, path: str, size: int, content_hash: str | None = None
) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """Of every indexed version of the file at `path` that is `size` bytes (a file of another size
    holds other bytes), and of the file indexed under `content_hash` wherever it is: its path and
    its documents' ids (hashed as texts are: text_hashes), positions and text hashes, int64 arrays in position
    order, read a chunk at a time."""
    which = and_(corpus_file.c.path == path, corpus_file.c.size == size)
    if content_hash is not None:
        which = or_(which, corpus_file.c.content_hash == content_hash)
    versions = select(corpus_file.c.id, corpus_file.c.path).where(
        corpus_file.c.corpus_id == corpus_id, corpus_file.c.status == "done", which
    )
    out = []
    for file_id, there in conn.execute(versions).all():
        q = select(document.c.external_id, document.c.position, document.c.text_hash).where(
            document.c.file_id == file_id
        )
        ids, pos, hashes = [], [], []
        for part in conn.execute(q.order_by(document.c.position)).partitions(65536):
            ids.append(text_hashes([str(r[0]).encode("utf-8", "surrogatepass") for r in part]))
            pos.append(np.array([r[1] for r in part], np.int64))
            hashes.append(np.array([r[2] for r in part], np.int64))
        joined = [np.concatenate(a) if a else np.zeros(0, np.int64) for a in (ids, pos, hashes)]
        out.append((str(there), joined[0], joined[1], joined[2]))
    return out


def keeps_text(conn: Connection, corpus_id: int) -> bool:
    """Whether the corpus stores its documents' text (else a pointer into each source file)."""
    return bool(conn.execute(select(corpus.c.store_text).where(corpus.c.id == corpus_id)).scalar_one())


def drop_other_versions(conn: Connection, corpus_id: int, path: str, content_hash: str) -> int:
    """Delete the documents and records of the other contents indexed at `path` (the versions
    of a file before it changed); how many documents went. Their postings stay in their
    segments, pointing at no document: a look-up finds them and drops them, as it drops those of
    any document deleted since."""
    q = select(corpus_file.c.id).where(
        corpus_file.c.corpus_id == corpus_id,
        corpus_file.c.path == path,
        corpus_file.c.status == "done",
        corpus_file.c.content_hash != content_hash,
    )
    ids = list(conn.execute(q).scalars())
    if not ids:
        return 0
    gone = conn.execute(delete(document).where(document.c.file_id.in_(ids))).rowcount
    conn.execute(delete(corpus_file).where(corpus_file.c.id.in_(ids)))
    return int(gone)


def failed_paths(conn: Connection, corpus_id: int) -> set[str]:
    """The paths of the corpus's failed file records."""
    q = select(corpus_file.c.path).where(corpus_file.c.corpus_id == corpus_id, corpus_file.c.status == "failed")
    return set(conn.execute(q).scalars())


def delete_failed_files_at(conn: Connection, corpus_id: int, paths: Sequence[str]) -> None:
    """Forget the failed records of these paths (a run with other settings has read them since)."""
    for chunk in db.chunks(list(paths), _IN_BATCH.get(db.dialect(conn), 900)):
        conn.execute(
            delete(corpus_file).where(
                corpus_file.c.corpus_id == corpus_id,
                corpus_file.c.path.in_(list(chunk)),
                corpus_file.c.status == "failed",
            )
        )


def insert_file(
    conn: Connection,
    corpus_id: int,
    path: str,
    size: int,
    content_hash: str,
    status: str,
    error: str | None = None,
    skipped: dict[str, int] | None = None,
) -> int:
    result = conn.execute(
        insert(corpus_file).values(
            corpus_id=corpus_id,
            path=path,
            size=size,
            content_hash=content_hash,
            status=status,
            error=error,
            n_docs=0,
            n_tokens=0,
            n_ngrams=0,
            n_windows=0,
            skipped=json.dumps(skipped or {}, sort_keys=True),
            seconds=0.0,
            indexed_at=now(),
        )
    )
    pk = result.inserted_primary_key
    assert pk is not None
    return int(pk[0])


def finish_file(
    conn: Connection,
    file_id: int,
    *,
    n_docs: int,
    n_tokens: int,
    n_ngrams: int,
    n_windows: int,
    skipped: dict[str, int],
    seconds: float,
    text_field: str | None = None,
) -> None:
    conn.execute(
        update(corpus_file)
        .where(corpus_file.c.id == file_id)
        .values(
            text_field=text_field,
            n_docs=n_docs,
            n_tokens=n_tokens,
            n_ngrams=n_ngrams,
            n_windows=n_windows,
            skipped=json.dumps(skipped, sort_keys=True),
            seconds=seconds,
            indexed_at=now(),
        )
    )


def allocate_doc_ids(conn: Connection, n: int) -> np.ndarray:
    """n fresh document ids. SQLite: after max(id), under the write lock the file transaction holds."""
    if n == 0:
        return np.empty(0, dtype=np.int64)
    if db.dialect(conn) == "postgresql":
        ids = (
            conn.execute(text("SELECT nextval('document_id_seq') FROM generate_series(1, :n)"), {"n": n})
            .scalars()
            .all()
        )
        return np.array(sorted(ids), dtype=np.int64)
    start = conn.execute(select(func.coalesce(func.max(document.c.id), 0))).scalar_one()
    return np.arange(start + 1, start + 1 + n, dtype=np.int64)


DOC_COLUMNS = ("id", "corpus_id", "file_id", "external_id", "position", "n_chars", "n_tokens", "text_hash", "text")


# PostgreSQL types of DOC_COLUMNS, for a binary COPY
DOC_TYPES = ("int4", "int4", "int4", "text", "int8", "int4", "int4", "int8", "bytea")


def insert_documents(conn: Connection, rows: Iterable[Sequence[Any]]) -> None:
    """Insert document rows (DOC_COLUMNS). PostgreSQL: one binary COPY (an INSERT per row cost
    the writer thread and the server about twice as much)."""
    if db.dialect(conn) == "postgresql":
        db.copy_rows(conn, "document", DOC_COLUMNS, DOC_TYPES, rows)
        return
    db.bulk_insert_rows(conn, "document", DOC_COLUMNS, rows)


def open_segment(conn: Connection, corpus_id: int, rows: int, segment_rows: int) -> int:
    """The segment that takes the next `rows` posting rows of a corpus: the newest one with
    room for them within `segment_rows`, else a new one (so a full buffer is always a sorted
    append into an empty segment, and small writes fill the newest). On PostgreSQL a segment
    another indexer is filling (its row is locked until that indexer commits) is skipped, so
    indexers never wait for each other."""
    row = conn.execute(
        select(segment.c.id)
        .where(
            segment.c.corpus_id == corpus_id,
            segment.c.merging_into.is_(None),
            ~segment.c.pending,
            segment.c.rows + rows <= segment_rows,
        )
        .order_by(segment.c.id.desc())
        .limit(1)
        .with_for_update(skip_locked=True)
    ).first()
    if row is None:
        bits = blocks.bits_for(max(rows, segment_rows))  # it takes rows until it holds segment_rows
        pk = conn.execute(insert(segment).values(corpus_id=corpus_id, rows=rows, block_bits=bits)).inserted_primary_key
        assert pk is not None
        return int(pk[0])
    conn.execute(update(segment).where(segment.c.id == row[0]).values(rows=segment.c.rows + rows))
    return int(row[0])


def insert_ngrams(conn: Connection, seg: int, hashes: np.ndarray, doc_ids: np.ndarray) -> None:
    """Append (hash, doc_id) rows, sorted by both, to segment `seg`."""
    _insert_blocks(conn, "ngram", seg, (hashes.astype(np.int64, copy=False), doc_ids.astype(np.int32, copy=False)))


def insert_bands(conn: Connection, seg: int, keys: np.ndarray, doc_ids: np.ndarray, wins: np.ndarray) -> None:
    """Append (key, doc_id, win) rows, sorted by all three, to segment `seg`."""
    cols = (keys.astype(np.int64, copy=False), doc_ids.astype(np.int32, copy=False), wins.astype(np.int32, copy=False))
    _insert_blocks(conn, "band", seg, cols)


# ---------------------------------------------------------------- pending segments (PostgreSQL)
#
# A full segment is written on a connection of its own, in a transaction of its own, while the
# indexer's commit group goes on (app.services.indexing.SegmentStager): it stays `pending`,
# skipped by look-ups, merges and appends, until the group that wrote it commits (migration
# 0012). Each session writing into it holds a shared advisory lock on it (PENDING_LOCK, the
# segment id) from before its row is visible until it is published or dropped, so a pending
# segment whose lock is free belongs to writers that are gone.

PENDING_LOCK = 0x636F6E74  # the advisory locks' first key: pending segments (the second is the id)


def open_pending_segment(conn: Connection, corpus_id: int, rows: int, hold: int | None = None) -> int:
    """In the transaction open on `conn`: a new pending segment of a corpus for `rows` posting
    rows, its blocks sized for `hold` rows (default: `rows`), locked by this session (before its
    row can be seen); its id. Its rows go in with insert_ngrams and insert_bands; nothing of it
    is visible until publish_segments."""
    bits = blocks.bits_for(rows if hold is None else hold)
    values = {"corpus_id": corpus_id, "rows": rows, "pending": True, "block_bits": bits}
    pk = conn.execute(insert(segment).values(**values)).inserted_primary_key
    assert pk is not None
    seg = int(pk[0])
    lock_pending_segment(conn, seg)
    return seg


def lock_pending_segment(conn: Connection, seg: int) -> None:
    """This session writes into pending segment `seg` (a shared lock: several sessions may)."""
    conn.execute(text("SELECT pg_advisory_lock_shared(:ns, :seg)"), {"ns": PENDING_LOCK, "seg": int(seg)})


def publish_segments(conn: Connection, segs: Sequence[int]) -> int:
    """In the commit group's transaction: the pending segments become part of the index when it
    commits; how many of them were still there (fewer: one was dropped as abandoned)."""
    if not segs:
        return 0
    q = update(segment).where(segment.c.id.in_([int(s) for s in segs]), segment.c.pending).values(pending=False)
    return int(conn.execute(q).rowcount)


def unlock_segments(conn: Connection, segs: Sequence[int]) -> None:
    """Release this session's locks on segments it published or dropped."""
    for s in segs:
        conn.execute(text("SELECT pg_advisory_unlock_shared(:ns, :seg)"), {"ns": PENDING_LOCK, "seg": int(s)})


def drop_pending(conn: Connection, segs: Sequence[int]) -> None:
    """Delete pending segments and their blocks and key filters (a published one is kept)."""
    segs = [int(s) for s in segs]
    if not segs:
        return
    gone = conn.execute(delete(segment).where(segment.c.id.in_(segs), segment.c.pending).returning(segment.c.id))
    _drop_segment_rows(conn, [int(s) for s in gone.scalars()])


def drop_abandoned_segments(conn: Connection, corpus_id: int) -> list[int]:
    """Delete the pending segments of a corpus whose writer is gone (its session's lock is
    free: a killed or disconnected indexer), with their blocks and filters; their ids. A live
    writer's pending segments are left alone, and so is a segment published meanwhile (the
    delete re-reads the flag of a row that changed under it)."""
    if db.dialect(conn) != "postgresql":
        return []
    gone = conn.execute(
        text(
            "DELETE FROM segment WHERE corpus_id = :c AND pending AND pg_try_advisory_xact_lock(:ns, id) RETURNING id"
        ),
        {"c": corpus_id, "ns": PENDING_LOCK},
    )
    segs = [int(s) for s in gone.scalars()]
    _drop_segment_rows(conn, segs)
    return segs


def pending_segments(conn: Connection, corpus_id: int) -> int:
    """How many segments of the corpus are pending (staged by a writer, not yet published)."""
    q = select(func.count()).select_from(segment).where(segment.c.corpus_id == corpus_id, segment.c.pending)
    return int(conn.execute(q).scalar_one())


def _drop_segment_rows(conn: Connection, segs: list[int]) -> None:
    if segs:
        conn.execute(delete(ngram_block).where(ngram_block.c.seg.in_(segs)))
        conn.execute(delete(band_block).where(band_block.c.seg.in_(segs)))
        conn.execute(delete(key_filter).where(key_filter.c.seg.in_(segs)))


def _insert_blocks(
    conn: Connection,
    table: str,
    seg: int,
    rows: np.ndarray | Sequence[np.ndarray],
    new_keys: bool = True,
    bits: int | None = None,
) -> None:
    """Append rows sorted by key (records, or their columns) to segment `seg` as blocks
    (app.store.blocks): on PostgreSQL one binary COPY stream, on SQLite multi-row INSERTs. Their
    keys go into the segment's key filter first (new_keys False: rows the segment held before,
    put back, whose keys its filter has). bits: the segment's block bits, when the caller has
    read them already (a merge step writes into several segments)."""
    if not (len(rows) if isinstance(rows, np.ndarray) else len(rows[0])):
        return
    if new_keys:
        _filter_add(conn, table, seg, rows["key"] if isinstance(rows, np.ndarray) else rows[0])
    bits = block_bits(conn, [seg])[seg] if bits is None else bits
    if db.dialect(conn) == "postgresql":
        db.copy_in(conn, f"{table}_block", ("seg", "bucket", "data"), blocks.copy_payload(seg, rows, bits))
        return
    cols = [rows[name] for name in rows.dtype.names or ()] if isinstance(rows, np.ndarray) else list(rows)
    per = max(1, min(_BLOCKS_PER_STATEMENT, db.sqlite_variables(conn) // 2))  # blocks per INSERT
    row = f"({int(seg)}, ?, ?)"
    head = f"INSERT INTO {table}_block (seg, bucket, data) VALUES "
    raw = conn.connection.driver_connection
    assert raw is not None
    cur = raw.cursor()
    for a, b in blocks.slices(cols[0], bits=bits):  # a sixteenth of the buckets at a time: the block objects' memory
        flat = blocks.block_rows([c[a:b] for c in cols], bits)
        full = len(flat) - len(flat) % (2 * per)
        if full:
            cur.executemany(head + ",".join([row] * per), (flat[i : i + 2 * per] for i in range(0, full, 2 * per)))
        if full < len(flat):
            cur.execute(head + ",".join([row] * ((len(flat) - full) // 2)), flat[full:])
    cur.close()


def block_bits(conn: Connection, segs: Iterable[int]) -> dict[int, int]:
    """Each segment's block bits (app.store.blocks), read afresh: on SQLite a deleted segment's
    id may be given to a new one, so they are not cached. A segment that is not there is an
    error: guessing its bits could miss every posting written into it."""
    ids = sorted({int(s) for s in segs})
    if not ids:
        return {}
    q = select(segment.c.id, segment.c.block_bits).where(segment.c.id.in_(ids))
    found = {int(i): int(b) for i, b in conn.execute(q).all()}
    if missing := [s for s in ids if s not in found]:
        raise StateError(f"posting segment(s) {missing} not in the index (deleted meanwhile?)")
    return found


_BLOCKS_PER_STATEMENT = 300  # a multi-row INSERT halves SQLite's cost per block against one a statement


def _filter_add(conn: Connection, table: str, seg: int, keys: np.ndarray) -> None:
    """Keys (sorted) about to be written into segment `seg` added to its key filter
    (app.store.blocks): into its last part while that has room for them, else into a new part
    sized for them. A segment that holds blocks of this table but no filter (written before
    filters were kept) first gets one of everything it holds, so its filter never misses a key."""
    keys = np.asarray(keys, dtype=np.int64)
    where = (key_filter.c.seg == seg, key_filter.c.tbl == table)
    last = conn.execute(
        select(key_filter.c.part, key_filter.c.capacity, key_filter.c.n_keys, key_filter.c.scheme)
        .where(*where)
        .order_by(key_filter.c.part.desc())
        .limit(1)
    ).first()
    if last is None:
        held = conn.exec_driver_sql(f"SELECT 1 FROM {table}_block WHERE seg = {int(seg)} LIMIT 1").first()
        if held is not None:
            keys = np.union1d(keys, _fetch_blocks(conn, table, [seg])["key"])
    distinct = int(np.count_nonzero(np.diff(keys))) + 1 if len(keys) else 0
    if last is not None and last.scheme == blocks.FILTER_SCHEME and last.n_keys + distinct <= last.capacity:
        part = int(last.part)
        bits = bytearray(conn.execute(select(key_filter.c.bits).where(*where, key_filter.c.part == part)).scalar_one())
        blocks.filter_add(bits, keys)
        conn.execute(
            update(key_filter)
            .where(*where, key_filter.c.part == part)
            .values(n_keys=key_filter.c.n_keys + distinct, stamp=_stamp(), bits=bytes(bits))
        )
        return
    capacity = max(distinct, blocks.FILTER_MIN_KEYS)
    bits = bytearray(blocks.filter_bytes(capacity))
    blocks.filter_add(bits, keys)
    conn.execute(
        insert(key_filter).values(
            seg=seg,
            tbl=table,
            part=0 if last is None else int(last.part) + 1,
            scheme=blocks.FILTER_SCHEME,
            capacity=capacity,
            n_keys=distinct,
            stamp=_stamp(),
            bits=bytes(bits),
        )
    )


def _stamp() -> int:
    return secrets.randbits(63)


FILTER_SCHEME = blocks.FILTER_SCHEME

# Filter parts read by this process, by stamp (a part's stamp changes whenever its bits do), least
# recently used first, up to FILTER_CACHE_BYTES: a scan reads each part once, /check requests share them.
FILTER_CACHE_BYTES = 1 << 30
_filters: OrderedDict[int, bytes] = OrderedDict()
_filters_size = 0
_filters_lock = threading.Lock()


def _segment_filters(conn: Connection, table: str, segs: Sequence[int]) -> dict[int, list[bytes]]:
    """segment -> the parts of its key filter for `table`, for the segments that have a complete
    one of this code's scheme (the others are probed for every key)."""
    global _filters_size
    if not segs:
        return {}
    # driver SQL: a select built per look-up cost more than running it (a /check makes two)
    listed = ",".join(str(int(s)) for s in segs)
    rows = conn.exec_driver_sql(
        f"SELECT seg, part, scheme, stamp FROM key_filter WHERE tbl = '{table}' AND seg IN ({listed})"
    ).all()
    usable = {int(seg) for seg, _p, _s, _t in rows} - {int(seg) for seg, _p, sch, _t in rows if sch != FILTER_SCHEME}
    out: dict[int, list[bytes]] = {s: [] for s in usable}
    for seg, part, _scheme, stamp in rows:
        if int(seg) not in usable:
            continue
        with _filters_lock:
            bits = _filters.get(int(stamp))
            if bits is not None:
                _filters.move_to_end(int(stamp))
        if bits is None:
            got = conn.exec_driver_sql(
                f"SELECT bits FROM key_filter WHERE seg = {int(seg)} AND tbl = '{table}' AND part = {int(part)}"
            ).scalar_one()
            bits = bytes(got)
            with _filters_lock:  # another thread may have read the same part meanwhile: counted once
                if int(stamp) in _filters:
                    bits = _filters[int(stamp)]
                else:
                    _filters[int(stamp)] = bits
                    _filters_size += len(bits)
                    while _filters_size > FILTER_CACHE_BYTES and len(_filters) > 1:
                        _filters_size -= len(_filters.popitem(last=False)[1])
        out[int(seg)].append(bits)
    return out


def _fetch_blocks(conn: Connection, table: str, segs: Sequence[int]) -> np.ndarray:
    """Every record of the blocks of `segs` (look-ups read buckets: _fetch_buckets)."""
    sql = f"SELECT data FROM {table}_block WHERE seg IN ({','.join(str(int(s)) for s in segs)})"
    raw = conn.connection.driver_connection
    assert raw is not None
    if db.dialect(conn) == "postgresql":
        with raw.cursor(binary=True) as cur:
            return blocks.decode(table, [r[0] for r in cur.execute(sql).fetchall()])
    cur = raw.cursor()
    found = [r[0] for r in cur.execute(sql).fetchall()]
    cur.close()
    return blocks.decode(table, found)


def _fetch_buckets(conn: Connection, table: str, asked: dict[int, np.ndarray]) -> list[bytes]:
    """The blocks of each segment's buckets (`asked`: segment -> sorted buckets),
    several segments to a statement (a UNION ALL of one indexed select each): a /check asks few
    buckets of each segment, and a statement a segment cost it more than the reading."""
    pg = db.dialect(conn) == "postgresql"
    budget = _KEYS_BATCH["postgresql"] if pg else min(_KEYS_BATCH["sqlite"], db.sqlite_variables(conn))
    raw = conn.connection.driver_connection
    assert raw is not None
    found: list[bytes] = []
    parts: list[tuple[int, list[int]]] = []
    size = 0

    def run() -> None:
        if pg:
            sql = " UNION ALL ".join(
                f"SELECT data FROM {table}_block WHERE seg = {s} AND bucket = ANY(%s::int[])" for s, _b in parts
            )
            with raw.cursor(binary=True) as cur:
                found.extend(r[0] for r in cur.execute(sql, [b for _s, b in parts]).fetchall())
        else:
            sql = " UNION ALL ".join(
                f"SELECT data FROM {table}_block WHERE seg = {s} AND bucket IN ({','.join('?' * len(b))})"
                for s, b in parts
            )
            cur = raw.cursor()
            found.extend(r[0] for r in cur.execute(sql, [x for _s, b in parts for x in b]).fetchall())
            cur.close()
        parts.clear()

    for s, buckets in asked.items():
        for chunk in db.chunks(buckets.tolist(), budget):
            if size + len(chunk) > budget:
                run()
                size = 0
            parts.append((int(s), list(chunk)))
            size += len(chunk)
    if parts:
        run()
    return found


def postings(conn: Connection, table: str, segs: Sequence[int] | None = None) -> list[tuple[int, ...]]:
    """Every posting (seg, key, doc[, win]) of `table` ("ngram" or "band"), of the given
    segments or all, sorted, decoded from their blocks (for tests and checks)."""
    if segs is None:
        segs = [int(s) for s in conn.exec_driver_sql(f"SELECT DISTINCT seg FROM {table}_block").scalars()]
    out: list[tuple[int, ...]] = []
    for s in segs:
        rec = blocks.in_order(_fetch_blocks(conn, table, [s]))
        out.extend((s, *map(int, r)) for r in rec.tolist())
    return sorted(out)


def posting_count(conn: Connection, table: str) -> int:
    """How many postings `table` ("ngram" or "band") holds, counted from its blocks' lengths."""
    n = conn.exec_driver_sql(f"SELECT coalesce(sum(length(data)), 0) FROM {table}_block").scalar_one()
    return int(n) // blocks.RECORDS[table].itemsize


def segment_sizes(conn: Connection, corpus_id: int) -> list[tuple[int, int]]:
    """(segment id, rows) of a corpus, oldest first (pending ones left out)."""
    q = (
        select(segment.c.id, segment.c.rows)
        .where(segment.c.corpus_id == corpus_id, ~segment.c.pending)
        .order_by(segment.c.id)
    )
    return [(int(i), int(n)) for i, n in conn.execute(q).all()]


def lock_segments(conn: Connection, corpus_id: int) -> list[tuple[int, int]]:
    """(segment id, rows) of a corpus's segments not in a merge, oldest first, locked until
    the transaction ends. On PostgreSQL segments another indexer holds are left out."""
    q = (
        select(segment.c.id, segment.c.rows)
        .where(segment.c.corpus_id == corpus_id, segment.c.merging_into.is_(None), ~segment.c.pending)
        .order_by(segment.c.id)
        .with_for_update(skip_locked=True)
    )
    return [(int(i), int(n)) for i, n in conn.execute(q).all()]


def start_merge(conn: Connection, corpus_id: int, sources: Sequence[int]) -> int:
    """Create the segment that `sources` merge into and mark all of them as merging."""
    rows = select(func.coalesce(func.sum(segment.c.rows), 0)).where(segment.c.id.in_(sources))
    bits = blocks.bits_for(int(conn.execute(rows).scalar_one()))
    pk = conn.execute(insert(segment).values(corpus_id=corpus_id, rows=0, block_bits=bits)).inserted_primary_key
    assert pk is not None
    target = int(pk[0])
    conn.execute(update(segment).where(segment.c.id.in_([*sources, target])).values(merging_into=target))
    return target


def unfinished_merges(conn: Connection, corpus_id: int) -> list[tuple[int, list[int]]]:
    """(target, sources) of merges that were started and not finished (an interrupted run)."""
    rows = conn.execute(
        select(segment.c.id, segment.c.merging_into)
        .where(segment.c.corpus_id == corpus_id, segment.c.merging_into.is_not(None))
        .order_by(segment.c.id)
    ).all()
    merges: dict[int, list[int]] = {}
    for seg, target in rows:
        merges.setdefault(int(target), [])
        if seg != target:
            merges[int(target)].append(int(seg))
    return sorted(merges.items())


def move_postings(conn: Connection, target: int, sources: Sequence[int], lo: int, hi: int | None) -> None:
    """Move the rows of `sources` whose key is in [lo, hi) (hi None: no upper bound) into
    `target`, in key order.

    One call is one step of a merge: a look-up between steps finds every row exactly once (in
    the target or still in its source), and a step repeated after a crash moves nothing twice.
    Keys are uniform 64-bit hashes, so equal key ranges hold about equal numbers of rows."""
    conn.execute(select(segment.c.id).where(segment.c.id == target).with_for_update())  # one mover at a time
    _move_blocks(conn, target, sources, lo, hi)


def _move_blocks(conn: Connection, target: int, sources: Sequence[int], lo: int, hi: int | None) -> None:
    """move_postings: take the sources' blocks of the range's buckets, put their rows in the
    range into `target` and the rest (edge buckets) back into their source."""
    bits = block_bits(conn, [*sources, target])  # read once for the step's writes
    rng = " OR ".join(
        f"(seg = {int(s)} AND bucket >= {blocks.bucket_of(lo, b)}"
        + (f" AND bucket <= {blocks.bucket_of(int(hi) - 1, b)})" if hi is not None else ")")
        for s, b in bits.items()
        if s != target
    )
    moved = 0
    for table in ("ngram", "band"):
        taken = _take_blocks(conn, f"DELETE FROM {table}_block WHERE {rng} RETURNING seg, data")
        into: list[np.ndarray] = []
        for src in sources:
            rec = blocks.decode(table, (d for s, d in taken if s == src))
            inside = (rec["key"] >= lo) & ((rec["key"] < hi) if hi is not None else True)
            _insert_blocks(conn, table, int(src), blocks.in_order(rec[~inside]), new_keys=False, bits=bits[int(src)])
            into.append(rec[inside])
            n = int(inside.sum())
            conn.execute(update(segment).where(segment.c.id == src).values(rows=segment.c.rows - n))
            moved += n
        _insert_blocks(conn, table, target, blocks.in_order(np.concatenate(into)), bits=bits[target])
    conn.execute(update(segment).where(segment.c.id == target).values(rows=segment.c.rows + moved))


def _take_blocks(conn: Connection, sql: str) -> list[tuple[int, bytes]]:
    """The (seg, data) rows a DELETE ... RETURNING takes (data as bytes on both backends)."""
    raw = conn.connection.driver_connection
    assert raw is not None
    if db.dialect(conn) == "postgresql":
        with raw.cursor(binary=True) as cur:
            return [(int(s), bytes(d)) for s, d in cur.execute(sql).fetchall()]
    cur = raw.cursor()
    taken = [(int(s), bytes(d)) for s, d in cur.execute(sql).fetchall()]
    cur.close()
    return taken


def finish_merge(conn: Connection, target: int, sources: Sequence[int]) -> None:
    """Drop the emptied source segments; the target takes new rows and merges again."""
    conn.execute(delete(key_filter).where(key_filter.c.seg.in_(sources)))
    conn.execute(delete(segment).where(segment.c.id.in_(sources)))
    conn.execute(update(segment).where(segment.c.id == target).values(merging_into=None))


def corpora_gone(conn: Connection, created: Mapping[int, Any]) -> set[int]:
    """Of these corpus ids (each with the time it was created), those no longer in the database,
    or made again since under the same id (SQLite gives a deleted corpus's id to the next)."""
    rows = conn.execute(select(corpus.c.id, corpus.c.created_at).where(corpus.c.id.in_(list(created))))
    now = {int(i): at for i, at in rows}
    return {i for i, at in created.items() if i not in now or now[i] != at}


def segments(conn: Connection, corpus_ids: Sequence[int] | None) -> list[int]:
    """Ids of the posting segments of the given corpora (or all)."""
    if corpus_ids is None:
        return [int(s) for s in conn.execute(_SEGMENTS_ALL).scalars()]
    return [int(s) for s in conn.execute(_SEGMENTS_OF, {"ids": list(corpus_ids)}).scalars()]


# built once: each look-up reads the segment list, and building the select cost more than running it
_SEGMENTS_ALL = select(segment.c.id).where(~segment.c.pending).order_by(segment.c.id)
_SEGMENTS_OF = _SEGMENTS_ALL.where(segment.c.corpus_id.in_(bindparam("ids", expanding=True)))


def lookup_segments(conn: Connection, corpus_ids: Sequence[int] | None) -> list[int] | None:
    """The segments several look-ups on `conn` may share (their `segs`): on SQLite a read
    transaction sees one snapshot, so the list read once holds for all of them (a chunk of a
    scan asked for it three times). None on PostgreSQL, where each statement sees what has
    committed by then: each look-up reads the list it runs with, as a merge may have moved rows
    into a new segment meanwhile."""
    return segments(conn, corpus_ids) if db.dialect(conn) == "sqlite" else None


def read_filters(conn: Connection, corpus_ids: Sequence[int] | None) -> int:
    """Read the key filters of the corpora's segments (both posting tables) into this process's
    cache, as the first look-ups would, and say how many bytes they hold: a scan does it while
    its first pass runs apart, so the workers it forks find them read (each read them for its
    first chunk: 95 MB from PostgreSQL for a 200 MB corpus, a third of a second per worker).
    Filters of more than half the cache are left to the look-ups (0)."""
    segs = segments(conn, corpus_ids)
    if not segs:
        return 0
    listed = ",".join(str(int(s)) for s in segs)
    size = conn.exec_driver_sql(f"SELECT coalesce(sum(length(bits)), 0) FROM key_filter WHERE seg IN ({listed})")
    if int(size.scalar_one()) > FILTER_CACHE_BYTES // 2:  # they would push one another out: each look-up reads them
        return 0
    return sum(
        len(bits) for t in ("ngram", "band") for parts in _segment_filters(conn, t, segs).values() for bits in parts
    )


# ---------------------------------------------------------------- look-ups for scoring

_IN_BATCH = {"sqlite": 900, "postgresql": 50_000}
_KEYS_BATCH = {"sqlite": 8_000, "postgresql": 50_000}  # at most; SQLite's own limit may be lower


def _matching(
    conn: Connection, table: str, keys: Sequence[int], corpus_ids: Sequence[int] | None, segs: Sequence[int] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the distinct keys asked for, sorted; the records (key, doc[, win]) whose key is one of
    them, in the segments of the given corpora (or all; segs: those segments, read here if None),
    in no particular order; each record's key's place among the keys): the blocks of the keys'
    buckets, filtered to the keys asked for (app.store.blocks.select). The filter is a binary
    search of each record's key among the keys (a block holds dozens of records of which one or
    two are asked for), by bucket of a key directory, in C as the blocks are read: np.isin sorted
    the records and the keys together, a third of a scan's look-ups."""
    segs = segments(conn, corpus_ids) if segs is None else segs
    want = distinct(np.asarray(keys, dtype=np.int64))
    if not segs or not len(want):
        return want, np.empty(0, dtype=blocks.RECORDS[table]), np.empty(0, dtype=np.int64)
    filters = _segment_filters(conn, table, segs)
    bits = block_bits(conn, segs)
    every = {b: blocks.buckets(want, b) for b in set(bits.values())}
    asked: dict[int, np.ndarray] = {}  # segment -> the buckets of the keys its filter may hold
    for s in segs:
        parts = filters.get(s)
        mine = every[bits[int(s)]]
        asked[s] = mine if parts is None else mine[blocks.may_hold(parts, want)]
    found = _fetch_buckets(conn, table, {s: distinct(b) for s, b in asked.items() if len(b)})
    rec, pos = blocks.select(table, found, want, key_directory(want))
    return want, rec, pos


def ngram_lookup(
    conn: Connection,
    hashes: Sequence[int],
    corpus_ids: Sequence[int] | None,
    max_df: int,
    segs: Sequence[int] | None = None,
) -> tuple[dict[int, int], dict[int, list[int]]]:
    """(hash -> number of documents holding it, absent if none; hash -> those documents, in
    order, for the hashes held by at most max_df documents), in the given corpora (or all),
    from one fetch of their blocks. segs: the corpora's segments from lookup_segments (read
    here if None)."""
    df, postings = ngram_table(conn, hashes, corpus_ids, max_df, segs)
    return df, postings.as_dict()


def ngram_table(
    conn: Connection,
    hashes: Sequence[int],
    corpus_ids: Sequence[int] | None,
    max_df: int,
    segs: Sequence[int] | None = None,
) -> tuple[dict[int, int], Postings]:
    """ngram_lookup's answer with the documents as arrays (what the scanner reads), not lists."""
    want, rec, pos = _matching(conn, "ngram", hashes, corpus_ids, segs)
    counts = np.bincount(pos, minlength=len(want))
    rec, pos, counts = _copies_once(conn, rec, pos, counts, max_df)
    held = np.flatnonzero(counts)
    df = dict(zip(want[held].tolist(), counts[held].tolist(), strict=True))
    rare = blocks.in_order(rec[counts[pos] <= max_df])
    return df, Postings.of(rare["key"], rare["doc"])


# a key in more than max_df documents but at most this many times max_df has its documents' texts
# compared: exact copies of one page (mirrors, re-crawls) are one text, and count once
COPIES_READ = 10
# documents shorter than this count each, copies or not: a text this short (a title, a question, a
# chat line: the short channel's items are as short) is written alike by many hands, and forty
# documents that were each "What is the capital city of France?" made that question rare (a review)
COPY_MIN_TOKENS = 32


def _copies_once(
    conn: Connection, rec: np.ndarray, pos: np.ndarray, counts: np.ndarray, max_df: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The look-up's records, their keys' places and each key's document count, where a key in
    more than max_df documents (up to COPIES_READ times as many) counts the distinct texts of its
    documents of COPY_MIN_TOKENS tokens or more, and keeps one document of each text per corpus
    (the first by name, file and place: not by id, which says in what order they were indexed).
    A page held twelve times byte for byte made every n-gram of the short item it holds "common",
    and the item `clean` (session 48's note): its copies say no more than the page once does.
    Twelve different pages holding the same words are still twelve, and each corpus holding the
    page keeps a copy (its per-corpus figures count it)."""
    if not len(counts) or counts.max() <= max_df:  # (max_df may be 2**62: ngram_postings)
        return rec, pos, counts
    over = (counts > max_df) & (counts <= max_df * COPIES_READ)
    if not over.any():
        return rec, pos, counts
    mine = over[pos]
    docs = np.unique(rec["doc"][mine])
    text, corpus_rank, rank = _copy_codes(conn, docs)
    at = np.searchsorted(docs, rec["doc"][mine])
    t, c, r, p = text[at], corpus_rank[at], rank[at], pos[mine]
    order = np.lexsort((r, c, t, p))
    t, c, p = t[order], c[order], p[order]
    new_text = np.ones(len(order), dtype=bool)
    new_text[1:] = (p[1:] != p[:-1]) | (t[1:] != t[:-1])
    kept = new_text.copy()
    kept[1:] |= c[1:] != c[:-1]
    keep = np.ones(len(rec), dtype=bool)
    keep[np.flatnonzero(mine)[order[~kept]]] = False
    counts = counts.copy()
    counts[over] = np.bincount(p[new_text], minlength=len(counts))[over]
    return rec[keep], pos[keep], counts


def _copy_codes(conn: Connection, doc_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per document (`doc_ids` sorted, without repeats): its text's code (equal for documents of one
    text hash of COPY_MIN_TOKENS tokens or more; a document shorter, or gone since the look-up,
    has one of its own), its corpus, and, among copies of one text, its rank by corpus name,
    document name, file and place (the names read for copies only: most documents have none)."""
    n = len(doc_ids)
    hashes, tokens, corpora = np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, -1, np.int64)
    for chunk in db.chunks(doc_ids.tolist(), _IN_BATCH.get(db.dialect(conn), 900)):
        q = select(document.c.id, document.c.text_hash, document.c.n_tokens, document.c.corpus_id)
        rows = conn.execute(q.where(document.c.id.in_(list(chunk)))).all()
        if rows:
            cols = np.array([tuple(map(int, r)) for r in rows], dtype=np.int64).reshape(-1, 4)
            at = np.searchsorted(doc_ids, cols[:, 0])
            hashes[at], tokens[at], corpora[at] = cols[:, 1], cols[:, 2], cols[:, 3]
    shares = tokens >= COPY_MIN_TOKENS  # a document gone since the look-up has 0 tokens: a text of its own
    pairs = np.stack([np.where(shares, 0, 1), np.where(shares, hashes, doc_ids)], axis=1)
    _, text, times = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
    text = text.reshape(-1).astype(np.int64)
    rank = np.zeros(n, dtype=np.int64)
    copies = np.flatnonzero(times[text] > 1)
    if len(copies):
        metas = documents_meta(conn, doc_ids[copies].tolist(), text=False)
        keys = [
            (m["corpus"], m["external_id"], m["source_file"], int(m["position"])) if (m := metas.get(d)) else ("",)
            for d in doc_ids[copies].tolist()
        ]
        rank[copies[sorted(range(len(keys)), key=keys.__getitem__)]] = np.arange(len(keys))
    return text, corpora, rank


def ngram_df(
    conn: Connection, hashes: Sequence[int], corpus_ids: Sequence[int] | None, segs: Sequence[int] | None = None
) -> dict[int, int]:
    """hash -> number of documents (of the given corpora, or all) holding it; absent if none."""
    return ngram_lookup(conn, hashes, corpus_ids, 0, segs)[0]


def ngram_postings(
    conn: Connection, hashes: Sequence[int], corpus_ids: Sequence[int] | None, segs: Sequence[int] | None = None
) -> dict[int, list[int]]:
    """hash -> documents holding it (of the given corpora, or all), in order."""
    return ngram_lookup(conn, hashes, corpus_ids, 2**62, segs)[1]


def band_hits(
    conn: Connection,
    keys: Sequence[int],
    corpus_ids: Sequence[int] | None,
    max_per_key: int = 50,
    segs: Sequence[int] | None = None,
) -> dict[int, list[tuple[int, int]]]:
    """band key -> [(document, window)], dropping keys shared by more than max_per_key windows
    (a band value that common is boilerplate, not a near duplicate); segs as ngram_lookup."""
    return {
        k: [(v >> 32, v & 0xFFFFFFFF) for v in pairs]
        for k, pairs in band_table(conn, keys, corpus_ids, max_per_key, segs).as_dict().items()
    }


def band_table(
    conn: Connection,
    keys: Sequence[int],
    corpus_ids: Sequence[int] | None,
    max_per_key: int = 50,
    segs: Sequence[int] | None = None,
) -> Postings:
    """band_hits' answer as arrays (what the scanner reads): each (document, window) one int64,
    document << 32 | window, in order."""
    rec = blocks.in_order(_matching(conn, "band", keys, corpus_ids, segs)[1])
    sizes = np.unique(rec["key"], return_counts=True)[1]
    rec = rec[np.repeat(sizes <= max_per_key, sizes)]
    return Postings.of(rec["key"], (rec["doc"].astype(np.int64) << 32) | rec["win"].astype(np.int64))


def documents_meta(conn: Connection, doc_ids: Sequence[int], text: bool = True) -> dict[int, dict[str, Any]]:
    """id -> the document's row (names, position, token count, text hash) and, with `text`,
    its stored text (zstd-compressed; None for a pointer-only document)."""
    out: dict[int, dict[str, Any]] = {}
    size = _IN_BATCH.get(db.dialect(conn), 900)
    q = _documents_query(text)
    for chunk in db.chunks(sorted(set(doc_ids)), size):
        for row in conn.execute(q, {"ids": list(chunk)}).mappings():
            out[int(row["id"])] = dict(row)
    return out


@functools.cache
def _documents_query(text: bool) -> Select[Any]:
    """documents_meta's statement, built once (each /check request runs it)."""
    body = [document.c.text] if text else []
    return (
        select(
            document.c.id,
            document.c.external_id,
            document.c.position,
            document.c.n_tokens,
            document.c.text_hash,
            *body,
            corpus.c.name.label("corpus"),
            corpus_file.c.path.label("source_file"),
            corpus_file.c.text_field,
        )
        .join(corpus, corpus.c.id == document.c.corpus_id)
        .join(corpus_file, corpus_file.c.id == document.c.file_id)
        .where(document.c.id.in_(bindparam("ids", expanding=True)))
    )
