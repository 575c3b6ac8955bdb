"""What the indexing batch job needs from the store, as use cases: open a corpus (refusing
other settings), tell whether a file is indexed, and write one corpus's files, documents and
postings on one connection whose transactions the job begins, commits and rolls back."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import xxhash
from sqlalchemy import Connection, Engine, RootTransaction
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from contam.app.core.config import SignatureConfig
from contam.app.core.signatures import text_hashes
from contam.app.errors import (
    CorruptFileError,
    FingerprintMismatch,
    InputError,
    RunRefused,
    SettingsConflict,
    StateError,
    first_line,
)
from contam.app.readers.corpus import RawDocument, Skipped, read_documents
from contam.app.services.segments import merge_segments
from contam.app.store import db, repo
from contam.app.store import reports as reports_repo

log = logging.getLogger("contam.indexing")

RUN_LEASE_SECONDS = 120.0  # an indexing run's hold on its corpus lapses this long after its last renewal
DELETED_AS_STARTED = "the corpus was deleted as this indexing run started; run it again"


@contextmanager
def indexing_run(engine: Engine, corpus_id: int, lease: float = RUN_LEASE_SECONDS) -> Iterator[None]:
    """Hold the corpus for an indexing run while it writes (delete and rename refuse meanwhile):
    a row in index_run whose lease a thread renews every sixth of it. On SQLite a renewal waits
    while a writer (this run's, for a commit group) holds the lock, so a lease counts as run out
    only once it is also older than the busy timeout (`db.lease_grace`)."""
    run_id = uuid.uuid4().hex
    try:
        with db.writing(engine) as conn:  # the corpus held: a report job queued meanwhile waits for this check
            name = repo.lock_corpus(conn, corpus_id)
            if name is None:  # a delete held the corpus row, then removed it
                raise RunRefused(DELETED_AS_STARTED)
            if using := reports_repo.reports_using(conn, name):
                raise RunRefused(_in_use(name, using))
            repo.start_run(conn, run_id, corpus_id, f"{socket.gethostname()[:40]}:{os.getpid()}", lease)
    except IntegrityError:  # likewise, between the check and the insert
        raise RunRefused(DELETED_AS_STARTED) from None
    done = threading.Event()

    def renew() -> None:
        while not done.wait(lease / 6):
            try:
                with engine.begin() as conn:
                    if not repo.renew_run(conn, run_id, lease):
                        log.error("indexing run: its corpus was deleted while it wrote; its next commit fails")
                        return
            except SQLAlchemyError as exc:  # the next beat tries again; the run itself reports errors
                log.warning("indexing run: its hold on the corpus was not renewed: %s", first_line(exc))

    beat = threading.Thread(target=renew, name="contam-index-run", daemon=True)
    beat.start()
    try:
        yield
    finally:
        done.set()
        beat.join()
        with suppress(SQLAlchemyError), engine.begin() as conn:  # else its lease lapses
            repo.end_run(conn, run_id)


def _in_use(name: str, reports: Sequence[str]) -> str:
    """Why an indexing run may not start: report jobs read the corpus. Files committed while one
    scored made its report half before, half after (a trial: the first 20 items `clean`, the
    last 20, copies of the same new files, `contaminated`, under one fingerprint)."""
    return (
        f"cannot index into corpus {name!r} while a report job reads it (report {', '.join(reports[:5])}): its "
        "report would mix the index before and after the new files; run it again when the job is done, or "
        "delete the report (`contam reports delete ID`, DELETE /api/v1/reports/ID); a report whose server "
        "stopped is taken up by the next `contam serve`"
    )


CORPUS_NAME_MAX = 200  # characters (the column's width)


def check_corpus_name(name: str) -> None:
    """Refuse a name the API and the dashboard could not address: one with a slash (a path's
    separator: `/api/v1/corpora/x%2Fy` was a 404, and the dashboard's delete link too), a comma
    (lists of corpora are comma-separated: a report upload's `corpora` split "a,b" into two names,
    so a corpus of that name could not be asked for), dots alone
    (`.` and `..` are path steps a client resolves away), a character that does not print (a
    control character, a line separator), space at either end, none at all, or more than
    CORPUS_NAME_MAX characters."""
    if not name.strip():
        raise InputError("a corpus name cannot be empty")
    bad = (
        "a slash"
        if "/" in name
        else "a comma, which separates names in lists of corpora"
        if "," in name
        else "dots alone"
        if not name.strip(".")
        else "a character that does not print"
        if not all(c.isprintable() for c in name)
        else ""
    )
    if bad or name != name.strip() or len(name) > CORPUS_NAME_MAX:
        why = bad or ("space at its start or end" if name != name.strip() else f"over {CORPUS_NAME_MAX} characters")
        why_not = (
            "a report upload's corpora and the item filters list corpora so"
            if "," in name
            else "the API and the dashboard address a corpus by its name in their URLs"
        )
        raise InputError(f"corpus name {name[:80]!r} holds {why}: {why_not}; choose another (e.g. 'web-2024')")


def open_corpus(engine: Engine, name: str, cfg: SignatureConfig, store_text: bool) -> int:
    """The corpus id, creating the corpus (its name checked: check_corpus_name); refuses
    settings that differ from the stored ones. Two indexers that start together on a new corpus
    create it once: on SQLite they wait for each other's write lock; on PostgreSQL the one whose
    insert loses takes the corpus the other made (it failed with the database's UniqueViolation:
    a trial)."""
    try:
        with db.writing(engine) as conn:  # reads, then may write
            row = repo.get_corpus(conn, name)
            if row is None:
                check_corpus_name(name)
                return repo.create_corpus(conn, name, cfg, store_text)
    except IntegrityError:
        with engine.connect() as conn:
            row = repo.get_corpus(conn, name)
        if row is None:  # made and deleted meanwhile: not a race to hide
            raise
    _same_settings(row, name, cfg, store_text)
    return int(row["id"])


def _same_settings(row: dict[str, Any], name: str, cfg: SignatureConfig, store_text: bool) -> None:
    """Refuse settings that differ from those the corpus was indexed with."""
    if row["fingerprint"] != cfg.fingerprint():
        stored = repo.corpus_config(row)
        diffs = stored.differences(cfg)
        listing = "; ".join(f"{k}: index has {a!r}, requested {b!r}" for k, (a, b) in diffs.items())
        fix = (  # no option sets the tokeniser, the hash schemes or the libraries: only indexing afresh
            f"delete it (`contam corpora delete {name}`) and index it again, or index under another name"
            if stored != stored.with_code_of(cfg)
            else "use the same settings or another corpus name"
        )
        raise FingerprintMismatch(
            f"corpus {name!r} was indexed with other signature settings ({listing}); {fix}",
            {k: list(v) for k, v in diffs.items()},
        )
    if bool(row["store_text"]) != store_text:
        raise SettingsConflict(
            f"corpus {name!r} was indexed with store_text={bool(row['store_text'])}; keep it the same"
        )


def drop_abandoned(engine: Engine, corpus_id: int, wait: float = 0.0) -> int:
    """Drop the pending segments of the corpus whose writers are gone (PostgreSQL: a stopped run's
    workers' staged postings; a live writer's are left alone); how many. `wait`: seconds to try
    again while some are left, for writers still ending (a killed Ray worker's session ends a
    moment after the kill is asked for)."""
    deadline, dropped = time.monotonic() + wait, 0
    while True:
        with engine.begin() as conn:
            dropped += len(repo.drop_abandoned_segments(conn, corpus_id))
            left = repo.pending_segments(conn, corpus_id) if db.dialect(conn) == "postgresql" else 0
        if not left or time.monotonic() >= deadline:
            return dropped
        time.sleep(0.2)


def failure_key(path: str, content_hash: str) -> str:
    """The key a failed file's record is kept under, in place of its content's: the content with
    the path. A failure is a path's: keyed by content, files of one content failing apart (two
    empty files) were one record, each failure replacing the last, and `contam corpora` listed
    one of them (a trial). The next run reads a failed file again whatever its key."""
    return xxhash.xxh3_128_hexdigest(f"failed\0{path}\0{content_hash}".encode())


def record_failures(engine: Engine, corpus_id: int, failures: Sequence[tuple[str, int, str, str]]) -> None:
    """Record files that failed without being read, as copies of a file of the run that failed
    ((path, size, content hash, error) each): a record of its own per path, the path's earlier
    failure replaced. Not while this process's own writer may hold SQLite's write lock."""
    if not failures:
        return
    with db.writing(engine) as conn:
        repo.delete_failed_files_at(conn, corpus_id, [path for path, *_rest in failures])
        for path, size, content_hash, error in failures:
            repo.insert_file(conn, corpus_id, path, size, failure_key(path, content_hash), "failed", error, {})


def file_indexed(engine: Engine, corpus_id: int, content_hash: str) -> str | None:
    """The path of a file with this content indexed whole in the corpus (a failed one is not), or
    None: a file with the same content under another name is indexed once, and said so."""
    with engine.connect() as conn:
        existing = repo.find_file(conn, corpus_id, content_hash)
    return str(existing["path"]) if existing is not None and existing["status"] == "done" else None


def indexed_alike(
    engine: Engine,
    corpus_id: int,
    path: Path,
    same_bytes: str | None,
    text_field: str,
    id_field: str,
    limit: int | None,
) -> str | None:
    """The path of a version the corpus holds indexed, at `path` and of the file's size, or of the
    same bytes anywhere (`same_bytes`: the file's identity with the default settings,
    job.file_identity), that gave the very documents (ids, positions and texts) the file gives
    now, read with these settings; None if there is none. A file is a new one when its content or
    the settings that pick its documents change, and a folder indexed again with `--text-field
    text,content` to take the files that failed stored every other file's documents twice, a copy
    of one under another name too, so an item copied into 6 pages was in 12, over `max_df`, and
    scanned clean (two trials). Read only for a file indexed before under another identity and of
    its size (a file appended to is not read for it: a review), and only until a document differs."""
    try:
        size = path.stat().st_size
    except OSError:
        return None  # gone: indexing it says so
    with engine.connect() as conn:
        versions = repo.documents_at(conn, corpus_id, str(path), size, same_bytes)
    if not versions:
        return None
    alive = list(versions)  # those every document read so far agrees with
    at = 0
    try:
        for batch in _batched(read_documents(path, Skipped(), text_field, id_field, limit), 4096):
            ids = text_hashes([d.external_id.encode("utf-8", "surrogatepass") for d in batch])
            pos = np.array([d.position for d in batch], np.int64)
            got = text_hashes([d.text.encode("utf-8", "surrogatepass") for d in batch])
            end = at + len(batch)
            alive = [
                v
                for v in alive
                if np.array_equal(v[2][at:end], pos)
                and np.array_equal(v[3][at:end], got)
                and (v[0] != str(path) or np.array_equal(v[1][at:end], ids))  # a copy's ids may be file:line
            ]
            if not alive:
                return None
            at = end
    except (CorruptFileError, OSError):
        return None  # indexed as a new file, which says what is wrong with it
    return next((v[0] for v in alive if len(v[2]) == at), None)


def _batched(docs: Iterator[RawDocument], n: int) -> Iterator[list[RawDocument]]:
    batch: list[RawDocument] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch


def moved(there: str, path: str) -> bool:
    """Whether a file at `path` whose content is indexed under `there` is that file moved: `there`
    no longer names a file (os.path.exists: False too where it cannot be looked at) and `path` does.
    A corpus keeping no text reads its documents again from the recorded path, and a scan told the
    user to index the file again where it now is, which found it indexed already and changed
    nothing (a trial): record_move then makes the record follow it."""
    return path != there and not os.path.exists(there) and os.path.isfile(path)


def record_move(engine: Engine, corpus_id: int, moves: Sequence[tuple[str, str]]) -> None:
    """Record each (content hash, path) of files moved since they were indexed under their new
    path. Not while this process's own writer may hold SQLite's write lock (the local executor:
    after its writer stops; a review: the move waited out the busy timeout, then failed)."""
    if not moves:
        return
    with engine.begin() as conn:
        for content_hash, path in moves:
            existing = repo.find_file(conn, corpus_id, content_hash)
            if existing is not None:
                repo.move_file(conn, int(existing["id"]), path)


class FileVersion(Protocol):
    path: str
    status: str


def older_versions(engine: Engine, corpus_id: int, reports: Sequence[FileVersion]) -> dict[str, int]:
    """Of the files this run indexed, those whose path the corpus held with other content before
    (a file fixed and indexed again: both versions' documents stay in the corpus), with how many
    versions it holds now."""
    done = [r.path for r in reports if r.status == "done"]
    if not done:
        return {}
    with engine.connect() as conn:
        return repo.versions_at(conn, corpus_id, done)


def failed_but_kept(engine: Engine, corpus_id: int, reports: Sequence[FileVersion]) -> list[str]:
    """Of the files this run failed on, those of which the corpus holds a version indexed before
    (a rerun with a wrong --text-field, say): their documents stay, which the run's error list and
    the corpus's health, listing the file as failed beside its indexed version, did not say."""
    failed = [r.path for r in reports if r.status == "failed"]
    if not failed:
        return []
    with engine.connect() as conn:
        return sorted(repo.versions_at(conn, corpus_id, failed, least=1))


def forget_failures(engine: Engine, corpus_id: int, paths: Sequence[str]) -> None:
    """Drop the failed records of paths whose content is indexed (an earlier run with other
    settings, e.g. a wrong --text-field, failed on them): the corpus's health no longer lists
    them. The corpus's failed paths are read once and only those deleted: a delete per path
    read every file of the corpus, so a rerun over 10,000 unchanged files took 37 s (a probe).
    A writing transaction only when there is one to delete (on SQLite a deferred one that
    reads, then deletes, would fail at once while another indexer writes)."""
    with engine.connect() as conn:
        failed = repo.failed_paths(conn, corpus_id) & set(paths)
    if failed:
        with db.writing(engine) as conn:
            repo.delete_failed_files_at(conn, corpus_id, sorted(failed))


# ---------------------------------------------------------------- file claims (Ray executor)


def take_claim(engine: Engine, corpus_id: int, content_hash: str, path: str, owner: str, lease: float) -> float:
    """Claim a file for `owner` in a transaction of its own (so others see it at once): 0.0
    when claimed, else the seconds left on the lease of the task that holds it."""
    with engine.begin() as conn:
        return repo.take_claim(conn, corpus_id, content_hash, path, owner, lease)


def renew_claims(engine: Engine, corpus_id: int, owner: str, lease: float) -> int:
    """The heartbeat: extend `owner`'s leases; how many claims it still holds."""
    with engine.begin() as conn:
        return repo.renew_claims(conn, corpus_id, owner, lease)


def release_claims(engine: Engine, corpus_id: int, owner: str) -> None:
    """Drop all of `owner`'s claims in a transaction of their own (its files were rolled back)."""
    with engine.begin() as conn:
        repo.release_claims(conn, corpus_id, owner)


def release_run_claims(engine: Engine, corpus_id: int, run: str, wait: float = 5.0) -> int:
    """Drop the claims of a stopped run's workers (their owners start with `run`) in a
    transaction of its own, waiting at most `wait` seconds for a dying worker's transaction
    that still locks one; how many."""
    with engine.begin() as conn:
        if db.dialect(conn) == "postgresql":
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = {int(wait * 1000)}")
        return repo.release_run_claims(conn, corpus_id, run)


def drop_stale_claims(engine: Engine, corpus_id: int) -> int:
    with engine.begin() as conn:
        return repo.drop_stale_claims(conn, corpus_id)


Columns = Callable[[], Sequence[np.ndarray]]  # rows sorted by key, as columns, made when called


class _Lane:
    """A connection and the one thread that uses it."""

    def __init__(self, engine: Engine, name: str) -> None:
        self.conn = engine.connect()
        self.thread = ThreadPoolExecutor(1, thread_name_prefix=name)
        self.locked: list[int] = []  # pending segments this session holds a lock on

    def unlock(self) -> None:
        segs, self.locked = self.locked, []
        repo.unlock_segments(self.conn, segs)
        self.conn.commit()

    def close(self) -> None:
        self.thread.shutdown(wait=True)
        self.conn.close()


class SegmentStager:
    """PostgreSQL: full segments written on connections and threads of their own while the
    commit group goes on, so the server's COPY overlaps reading and signing instead of holding
    up the writer (README, "How postings are stored"): the segment's n-gram blocks on one
    connection, its band blocks on another at the same time (a COPY is one server process, which
    was the run's slowest stage). Each is a pending segment (repo.open_pending_segment) until the
    group commits (`publish`, in the group's transaction) or rolls back (`discard`). At most one
    is being written at a time: the next waits for it."""

    def __init__(self, engine: Engine, corpus_id: int) -> None:
        self.corpus_id = corpus_id
        self.lanes = (_Lane(engine, "contam-segments"), _Lane(engine, "contam-bands"))
        self.writing: Future[int] | None = None
        self.opened = threading.Event()  # the segment being written has its id
        self.opened.set()
        self.segs: list[int] = []  # the open group's pending segments (written, or being written)
        self.failed: BaseException | None = None

    def stage(self, rows: int, ngrams: Columns, bands: Columns, hold: int) -> None:
        self.wait()
        self.opened.clear()
        self.writing = self.lanes[0].thread.submit(self._write, rows, ngrams, bands, hold)

    def _write(self, rows: int, ngrams: Columns, bands: Columns, hold: int) -> int:
        lane = self.lanes[0]
        try:
            with lane.conn.begin():  # committed first: both lanes' blocks belong to a segment row
                seg = repo.open_pending_segment(lane.conn, self.corpus_id, rows, hold)
                lane.locked.append(seg)
            self.segs.append(seg)
        finally:
            self.opened.set()
        band_rows = self.lanes[1].thread.submit(self._bands, seg, bands)
        try:
            with lane.conn.begin():
                repo.insert_ngrams(lane.conn, seg, *ngrams())
        finally:
            band_rows.result()
        return seg

    def _bands(self, seg: int, bands: Columns) -> None:
        lane = self.lanes[1]
        with lane.conn.begin():
            repo.lock_pending_segment(lane.conn, seg)
            lane.locked.append(seg)
            repo.insert_bands(lane.conn, seg, *bands())

    def wait_opened(self) -> None:
        """Wait until the segment being written has its id (segment ids follow the order of
        their rows; its blocks may still be on their way: a write on another connection goes
        on beside them)."""
        self.opened.wait()

    def wait(self) -> None:
        """Wait for the segment being written; raise what writing it raised (once: then the
        group must roll back)."""
        writing, self.writing = self.writing, None
        if writing is not None:
            try:
                writing.result()
            except BaseException as exc:
                self.failed = exc
        if self.failed is not None:
            failed, self.failed = self.failed, None
            raise failed

    def publish(self, conn: Connection) -> None:
        """In the group's transaction on `conn`: its pending segments join the index at its commit."""
        self.wait()
        if repo.publish_segments(conn, self.segs) != len(self.segs):
            raise StateError("a pending segment of this indexer was dropped as abandoned (its connection was lost)")

    def published(self) -> None:
        """After the group committed: let go of its segments' locks."""
        self.segs = []
        with suppress(SQLAlchemyError):  # a lost connection has let go of them already
            for lane in self.lanes:
                lane.thread.submit(lane.unlock).result()

    def discard(self) -> None:
        """After the group rolled back: drop its pending segments (written or being written).
        A database lost meanwhile leaves them pending, their locks gone with the connections:
        the next writer drops them (and the error that rolled the group back is the one raised)."""
        with suppress(BaseException):
            self.wait()
        segs, self.segs = self.segs, []
        with suppress(SQLAlchemyError):
            if segs:
                self.lanes[0].thread.submit(self._drop, segs).result()
            for lane in self.lanes:
                lane.thread.submit(lane.unlock).result()

    def _drop(self, segs: list[int]) -> None:
        conn = self.lanes[0].conn
        with conn.begin():
            repo.drop_pending(conn, segs)

    def close(self) -> None:
        try:
            self.discard()
        finally:
            for lane in self.lanes:
                lane.close()


class CorpusWriter:
    """One connection writing into one corpus. Writes join the group transaction the caller
    opened with `begin` and end with `commit` or `rollback`; nothing here commits on its own
    but `record_failure`, the maintenance steps, which run between groups, and the context
    manager's exit, which closes the connection. On PostgreSQL full segments may be written
    on a second connection (`stage_segment`), joining the index when the group commits."""

    def __init__(self, engine: Engine, corpus_id: int) -> None:
        self.engine, self.corpus_id = engine, corpus_id
        self._store_text: bool | None = None
        # the corpus's failed paths, read when first needed and kept for the writer's run (read per
        # group, a run committing each file read them per file); a failed record another run adds
        # meanwhile for a path this one indexes stays until the next run that indexes it
        self._failed: set[str] | None = None
        self._conn: Connection | None = None
        self._group: RootTransaction | None = None
        self._stager: SegmentStager | None = None

    def __enter__(self) -> CorpusWriter:
        conn = self._conn = self.engine.connect().execution_options(**db.WRITE)
        db.claim_cache(conn)
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("PRAGMA wal_autocheckpoint=0")  # checkpoint() runs after each group
            conn.commit()  # (the statement began SQLAlchemy's implicit transaction)
        else:
            with conn.begin():  # what a killed writer left pending, never part of the index
                dropped = repo.drop_abandoned_segments(conn, self.corpus_id)
            if dropped:
                log.info("dropped %d pending segments a stopped indexer left", len(dropped))
            self._stager = SegmentStager(self.engine, self.corpus_id)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            with suppress(SQLAlchemyError):  # a lost database: closing is all there is to do
                self.conn.rollback()  # what close() would do with an unfinished group
                db.claim_cache(self.conn, whole=False)  # the pool's other users keep their share
                self.conn.commit()
        finally:
            try:
                if self._stager is not None:
                    self._stager.close()
            finally:
                self.conn.close()

    @property
    def conn(self) -> Connection:
        assert self._conn is not None, "use CorpusWriter as a context manager"
        return self._conn

    # ---------------------------------------------------------------- the group transaction

    @property
    def in_group(self) -> bool:
        return self._group is not None

    def begin(self) -> None:
        self._group = self.conn.begin()

    def commit(self) -> None:
        if self._group is not None:
            if self._stager is not None:
                self._stager.publish(self.conn)
            self._group.commit()
            if self._stager is not None:
                self._stager.published()
        self._group = None

    def rollback(self) -> None:
        if self._group is not None:
            self._group.rollback()
        self._group = None
        self._failed = None  # what the group deleted or added is undone: read it again
        if self._stager is not None:
            self._stager.discard()

    # ---------------------------------------------------------------- files and documents

    def start_file(self, path: str, size: int, content_hash: str) -> int | str:
        """Record a file as indexed (in the group: it counts once the group commits): its id; or,
        where another indexer committed the same content while this one waited for it (skip it),
        the path it was committed under."""
        repo.claim_file(self.conn, self.corpus_id, content_hash)
        existing = repo.find_file(self.conn, self.corpus_id, content_hash)
        if existing is not None and existing["status"] == "done":
            return str(existing["path"])
        return self._replace_file(path, size, content_hash, "done", None, None)

    def finish_file(
        self,
        file_id: int,
        *,
        documents: int,
        tokens: int,
        ngrams: int,
        windows: int,
        skipped: dict[str, int],
        seconds: float,
        text_field: str | None = None,
    ) -> None:
        repo.finish_file(
            self.conn,
            file_id,
            n_docs=documents,
            n_tokens=tokens,
            n_ngrams=ngrams,
            n_windows=windows,
            skipped=skipped,
            seconds=seconds,
            text_field=text_field,
        )

    def record_failure(
        self, path: str, size: int, content_hash: str, error: str, skipped: dict[str, int], owner: str | None = None
    ) -> bool:
        """Record a file that could not be read to its end, in a transaction of its own (call
        it after `rollback`): the next run tries the file again. With `owner`, the record is
        written only if that task still holds the file's claim, which it releases (False if not)."""
        with self.conn.begin() as tx:
            if owner is not None and not repo.release_claims(self.conn, self.corpus_id, owner, [content_hash]):
                tx.rollback()
                return False
            self._replace_file(path, size, content_hash, "failed", error, skipped)
        return True

    def release_claims(self, owner: str, content_hashes: Sequence[str]) -> bool:
        """In the group: drop `owner`'s claims on the files, so that they are gone exactly when
        the files commit; False if another task took one of them over (then roll back)."""
        return repo.release_claims(self.conn, self.corpus_id, owner, content_hashes) == len(set(content_hashes))

    def _keeps_text(self) -> bool:
        if self._store_text is None:
            self._store_text = repo.keeps_text(self.conn, self.corpus_id)
        return self._store_text

    def _replace_file(
        self, path: str, size: int, content_hash: str, status: str, error: str | None, skipped: dict[str, int] | None
    ) -> int:
        existing = repo.find_file(self.conn, self.corpus_id, content_hash)
        if existing is not None:  # failed before: forget it
            repo.delete_file(self.conn, existing["id"])
        if self._failed is None:  # once a group: a delete per path read all the corpus's files
            self._failed = repo.failed_paths(self.conn, self.corpus_id)
        if status == "done":
            if path in self._failed:  # failed before with other settings (another --text-field): forget it
                repo.delete_failed_files_at(self.conn, self.corpus_id, [path])
                self._failed.discard(path)
            if not self._keeps_text():  # an older version's text can never be read again: it goes
                repo.drop_other_versions(self.conn, self.corpus_id, path, content_hash)
        elif status == "failed":
            if path in self._failed:  # failed before with other settings: the latest failure says it
                repo.delete_failed_files_at(self.conn, self.corpus_id, [path])  # (it was listed once a try: a trial)
            self._failed.add(path)
            content_hash = failure_key(path, content_hash)
        return repo.insert_file(self.conn, self.corpus_id, path, size, content_hash, status, error, skipped)

    def add_documents(
        self,
        file_id: int,
        docs: Sequence[RawDocument],
        n_chars: Sequence[int],
        n_tokens: np.ndarray,
        text_hash: np.ndarray,
        blobs: Sequence[bytes] | None,
    ) -> np.ndarray:
        """Insert a batch's documents (text compressed in `blobs`, or None: pointers only); their ids."""
        ids = repo.allocate_doc_ids(self.conn, len(docs))
        texts: Sequence[bytes | None] = blobs if blobs is not None else [None] * len(docs)
        rows = (
            (
                int(ids[i]),
                self.corpus_id,
                file_id,
                d.external_id,
                d.position,
                n_chars[i],
                int(n_tokens[i]),
                int(text_hash[i]),
                texts[i],
            )
            for i, d in enumerate(docs)
        )
        repo.insert_documents(self.conn, rows)
        return ids

    # ---------------------------------------------------------------- postings

    def stage_segment(self, rows: int, ngrams: Columns, bands: Columns, hold: int | None = None) -> bool:
        """Write `rows` posting rows as a new segment in the background, joining the index when
        the group commits (PostgreSQL; the columns are made on the writing thread); False where
        that is not done (SQLite: one writer at a time), and the caller writes them itself.
        hold: the rows the segment is made to hold, its blocks sized for them (default `rows`)."""
        if self._stager is None:
            return False
        self._stager.stage(rows, ngrams, bands, rows if hold is None else hold)
        return True

    def open_segment(self, rows: int, segment_rows: int) -> int:
        """The segment that takes the next `rows` posting rows (see repo.open_segment)."""
        if self._stager is not None:  # segments numbered in the order their rows came
            self._stager.wait_opened()
        return repo.open_segment(self.conn, self.corpus_id, rows, segment_rows)

    def insert_ngrams(self, seg: int, hashes: np.ndarray, doc_ids: np.ndarray) -> None:
        repo.insert_ngrams(self.conn, seg, hashes, doc_ids)

    def insert_bands(self, seg: int, keys: np.ndarray, doc_ids: np.ndarray, wins: np.ndarray) -> None:
        repo.insert_bands(self.conn, seg, keys, doc_ids, wins)

    # ---------------------------------------------------------------- upkeep, between groups

    def checkpoint(self) -> None:
        """Copy SQLite's WAL into the database: keeps the WAL (and its disk) to about one group."""
        db.checkpoint(self.conn)

    def merge_segments(self, segment_rows: int, fanout: int, stop: Callable[[], bool]) -> None:
        merge_segments(self.conn, self.corpus_id, segment_rows, fanout, stop)

    def statistics_stale(self) -> bool:
        return db.statistics_stale(self.conn)

    def refresh_statistics(self) -> None:
        db.refresh_statistics(self.conn)
