"""The Ray executor: `contam index --executor ray [--address ADDR]`.

The driver (this process) lists the corpus files and keeps one Ray actor per worker
(IndexWorker) busy with them, a file or a group of small files per call; it never reads a
document. A worker, on whichever machine of the cluster Ray puts it, hashes its files, claims
them in the database (leases a heartbeat renews while it works), reads and signs their
documents and writes them and their postings (binary COPY into the blocks) straight into
PostgreSQL. Like the local executor's writer it keeps one transaction and one posting buffer
open across files and commits them when they hold `commit_bytes` of text or `commit_seconds`
of work, or when the driver has nothing left to send it, dropping the group's claims in the
same commit. So:

- a file is indexed exactly once: its rows commit together with its record as done (as with
  the local executor), and only while the worker still holds its claim (the fence: a group
  whose lease ran out and was taken over rolls back);
- a worker killed mid-file leaves nothing: its transaction dies with its connection, its
  claims lapse after `lease` seconds and the next worker to try the files (the driver retries
  a dead worker's uncommitted files on a new worker, or another run) takes them over;
- runs that overlap share the files: a file another run's worker holds is tried again when
  that lease would end, and found indexed by then, or taken over.

Why actors and not a task per group: a task's postings were flushed when the task ended, so a
small corpus over several workers gave one small segment per file (blocks of a few postings,
about a third more bytes per token) and one transaction per file; a worker that lives for the
run fills segments of `segment_rows` whatever the files' sizes (README, "Indexing on a Ray
cluster", has the before and after).

The workers must reach the database at the URL the driver was given and read the corpus files
at the same paths (a shared filesystem). SQLite is refused: a Ray worker on another machine
cannot open this machine's file. Ray is imported only when the executor is used.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import logging
import os
import re
import signal
import socket
import stat
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xxhash
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from contam.app.core.config import SignatureConfig
from contam.app.errors import ConfigError, ContamError, CorruptFileError, NotStarted
from contam.app.readers.corpus import (
    COMPRESSION_MAGIC,
    RawDocument,
    Skipped,
    find_files,
    read_documents,
    why_no_documents,
)
from contam.app.services.database import connect
from contam.app.services.indexing import (
    CorpusWriter,
    drop_abandoned,
    drop_stale_claims,
    file_indexed,
    forget_failures,
    indexed_alike,
    indexing_run,
    moved,
    open_corpus,
    record_move,
    release_claims,
    release_run_claims,
    renew_claims,
    take_claim,
)
from contam.indexer.job import batches, changed_while_read, file_identity, unreadable
from contam.indexer.options import IndexOptions
from contam.indexer.postings import PostingBuffer
from contam.indexer.progress import NoProgress, Progress
from contam.indexer.signing import SignedBatch, sign_batch
from contam.indexer.summary import FileReport, IndexSummary

LEASE_SECONDS = 30.0  # a claim not renewed for this long may be taken over
TWIN_LOOKAHEAD = 8  # files the driver looks at for one that is no copy of a file another worker holds
CRASH_RETRIES = 3  # times a file is tried again after its worker died, in one run
START_FAILURES = 4  # workers in a row that die before they start: the run stops (not_started)
START_NOTICE_SECONDS = 30.0  # no worker started this long after the run asked for them: said (no_worker_yet)
log = logging.getLogger("contam.ray")
KILL_MARKER = "CONTAM_TEST_KILL_MARKER"  # tests: a file naming the path whose worker kills itself mid-file


@dataclass
class Outcome:
    """What a task returns: the file's report, or `busy` seconds (another task holds it)."""

    report: FileReport
    busy: float = 0.0
    content_hash: str = ""


# ---------------------------------------------------------------- the actor, on a Ray worker

_engines: dict[str, Engine] = {}  # per worker process: one engine (and pool) per database


@functools.cache  # once per process
def code_fingerprint() -> str:
    """A hash of the contam code this process runs (the version and every module of the app
    and the indexer, which read, sign and write): a worker whose machine has another install
    than the driver's would sign with other code into the same index, and nothing would say so."""
    import contam.app
    import contam.indexer

    h = hashlib.blake2b(contam.app.__version__.encode(), digest_size=16)
    for package in (contam.app, contam.indexer):
        for root in map(Path, package.__path__):
            for path in sorted(p for p in root.rglob("*.py") if p.is_file()):  # not an editor's dangling lock
                h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    # the compiled extension by what it computes (its file differs from build to build): the
    # signatures of a fixed text (a review: a machine that pulled new C code and did not rebuild)
    signed = sign_batch(
        ["Contam signs this sentence, the same on every machine: 42 tokens, ünïcode."], SignatureConfig(), False
    )
    h.update(signed.ng_hash.tobytes() + signed.band_key.tobytes())
    return h.hexdigest()


def _engine(url: str) -> Engine:
    if url not in _engines:
        _engines[url] = connect(url)
    return _engines[url]


class Heartbeat(threading.Thread):
    """Renews a group's claims every lease/3 seconds; `lost` is set when another task took one
    over. The group adds its claims as it takes them (`held`)."""

    def __init__(self, engine: Engine, corpus_id: int, owner: str, lease: float) -> None:
        super().__init__(name="contam-claim-heartbeat", daemon=True)
        self.engine, self.corpus_id, self.owner, self.lease = engine, corpus_id, owner, lease
        self.claims = 0
        self.lock = threading.Lock()  # a renewal counts the claims the group holds at that moment
        self.lost = threading.Event()
        self.done = threading.Event()

    def held(self) -> None:
        with self.lock:
            self.claims += 1

    def run(self) -> None:
        while not self.done.wait(self.lease / 3):
            with self.lock:
                try:
                    if renew_claims(self.engine, self.corpus_id, self.owner, self.lease) < self.claims:
                        self.lost.set()
                        return
                except OperationalError:  # the database is away: the lease may lapse; the fence decides
                    continue

    def stop(self) -> None:
        self.done.set()
        if self.is_alive():
            self.join()


@dataclass
class Claimed:
    path: Path
    size: int
    content_hash: str
    report: FileReport | None = None  # once written in the open group
    before: os.stat_result | None = None  # the file as it was hashed (changed_while_read)


class OpenGroup:
    """The files an IndexWorker has written since its last commit, under one owner (its claims)."""

    def __init__(self, store: CorpusWriter, lease: float, run: str = "") -> None:
        self.owner = run + uuid.uuid4().hex  # the run's token first: a stopped run drops its claims
        self.files: list[Claimed] = []
        self.twins: list[tuple[Claimed, Claimed]] = []  # (a file, the file of the group holding its content)
        self.text_bytes = 0
        self.started = time.perf_counter()
        self.heartbeat = Heartbeat(store.engine, store.corpus_id, self.owner, lease)
        self.heartbeat.start()
        store.begin()


class IndexWorker:
    """A Ray actor, one per worker for a run: indexes the files the driver sends into the
    corpus, exactly once (see the module doc).

    It keeps one transaction (its group) and one posting buffer open across the driver's calls
    and commits them when they hold `commit_bytes` of text or `commit_seconds` of work, or when
    the driver asks (`commit`: nothing left to send), as the local executor's writer does. So
    postings go to PostgreSQL in segments as large as the local executor's, however small the
    files, and a call costs the driver one file's round trip, not a transaction."""

    def __init__(
        self,
        url: str,
        corpus_id: int,
        cfg: SignatureConfig,
        opts: IndexOptions,
        lease: float,
        code: str,
        run: str = "",
    ) -> None:
        _test_kill("")
        # another install than the driver's is refused at the first call (an error here would read
        # as a worker that died, and be retried on new ones)
        self.foreign = code != code_fingerprint()
        self.cfg, self.opts, self.lease, self.run = cfg, opts, lease, run
        self.engine, self.corpus_id = _engine(url), corpus_id
        self.store = CorpusWriter(self.engine, corpus_id).__enter__()  # the actor's connection, for its life
        self.postings = PostingBuffer(self.store, opts.segment_rows)
        self.writes = _Writes(ThreadPoolExecutor(1, thread_name_prefix="contam-db"), self.store, self.postings)
        self.group: OpenGroup | None = None

    def ready(self) -> str:
        """The driver's first call: answered once the worker has started (so a worker that dies
        later is told from one that never started); its machine's name."""
        return socket.gethostname()

    def index(self, paths: list[str]) -> list[Outcome]:
        """Write the files into the open group; the outcomes of the files not taken (unchanged,
        busy), and of the group's files when this call committed or rolled it back."""
        if self.foreign:
            raise ContamError(
                f"the Ray worker on {socket.gethostname()} runs other contam code than the driver "
                "(another version or checkout, or a checkout in the driver's working directory, which "
                "Ray puts on the workers' path): install the same contam on every machine of the "
                "cluster (and restart Ray there, `ray stop` then `ray start ...`), then run again"
            )
        out: list[Outcome] = []
        for path in paths:
            p = Path(path)
            try:
                before = p.stat()
                size, (chash, same_bytes) = before.st_size, file_identity(p, self.opts)
            except OSError as exc:  # the machine named: the driver's may read it (a shared filesystem missing)
                out.append(Outcome(unreadable(p, exc, f" on {socket.gethostname()}, where its Ray worker runs")))
                continue
            if (there := file_indexed(self.engine, self.corpus_id, chash)) is not None:
                if moved(there, path):  # PostgreSQL only: no write lock of its own to wait for
                    record_move(self.engine, self.corpus_id, [(chash, there := path)])
                out.append(Outcome(FileReport(path, "unchanged", bytes=size, indexed_as=there), content_hash=chash))
                continue
            picks = (self.opts.text_field, self.opts.id_field, self.opts.limit)
            if (there := indexed_alike(self.engine, self.corpus_id, p, same_bytes, *picks)) is not None:
                forget_failures(self.engine, self.corpus_id, [path])  # its documents as indexed before
                out.append(Outcome(FileReport(path, "unchanged", bytes=size, indexed_as=there), content_hash=chash))
                continue
            group = self.group = self.group or OpenGroup(self.store, self.lease, self.run)
            if first := next((c for c in group.files if c.content_hash == chash), None):
                # its content is in this group already: indexed once, under the first file's path,
                # when the group commits (its own claim made it wait out the lease as "busy")
                group.twins.append((Claimed(p, size, chash), first))
                continue
            if wait := take_claim(self.engine, self.corpus_id, chash, path, group.owner, self.lease):
                out.append(Outcome(FileReport(path, "busy", bytes=size), busy=wait, content_hash=chash))
                continue
            group.heartbeat.held()
            c = Claimed(p, size, chash, before=before)
            group.files.append(c)
            c.report = _write_file(self.writes, c, self.cfg, self.opts, group.heartbeat)
            if c.report.status in ("failed", "busy"):
                out += self._abandon(c)
                continue
            group.text_bytes += c.report.text_bytes
        if self.group is not None and self._full(self.group):
            out += self.commit()
        return out

    def commit(self) -> list[Outcome]:
        """Commit the open group, only while it holds every claim (else it rolls back and its
        files are handed back to be tried again); their outcomes."""
        group, self.group = self.group, None
        if group is None:
            return []
        written = [c for c in group.files if c.report is not None]
        self.postings.flush()
        group.heartbeat.stop()
        if not self.store.release_claims(group.owner, [c.content_hash for c in written]):  # one was taken over
            self._drop(group)
            release_claims(self.engine, self.corpus_id, group.owner)
            return [_again(c.size, str(c.path), c.content_hash) for c in [*written, *(t for t, _ in group.twins)]]
        self.store.commit()
        # failed records of the paths with other settings go
        forget_failures(
            self.engine, self.corpus_id, [str(c.path) for c in written if c.report and c.report.status == "done"]
        )
        twins = [
            Outcome(
                FileReport(str(t.path), "unchanged", bytes=t.size, indexed_as=_indexed_as(first)),
                content_hash=t.content_hash,
            )
            for t, first in group.twins
        ]
        return [Outcome(c.report, content_hash=c.content_hash) for c in written if c.report is not None] + twins

    def close(self) -> None:
        """End the worker's connection (its group is committed: the driver asks when all is done)."""
        self.writes.db.shutdown()
        self.store.__exit__(None, None, None)

    def _full(self, group: OpenGroup) -> bool:
        return (
            group.text_bytes >= self.opts.commit_bytes
            or time.perf_counter() - group.started >= self.opts.commit_seconds
        )

    def _abandon(self, bad: Claimed) -> list[Outcome]:
        """A file of the group failed (corrupt) or lost its claim: the group rolls back whole; a
        corrupt file is recorded as failed, the others are handed back (busy, no wait)."""
        group, self.group = self.group, None
        assert group is not None and bad.report is not None
        self._drop(group)
        recorded = bad.report.status == "failed" and self.store.record_failure(
            str(bad.path), bad.size, bad.content_hash, bad.report.error or "", bad.report.skipped, group.owner
        )
        release_claims(self.engine, self.corpus_id, group.owner)
        failed = [Outcome(bad.report, content_hash=bad.content_hash)] if recorded else []
        return failed + [
            _again(c.size, str(c.path), c.content_hash)
            for c in [*group.files, *(t for t, _ in group.twins)]
            if not (recorded and c is bad)
        ]

    def _drop(self, group: OpenGroup) -> None:
        self.store.rollback()
        self.postings.clear()
        group.heartbeat.stop()


def _indexed_as(c: Claimed) -> str:
    """The path a file's content is indexed under: its own, or the path another indexer committed it under."""
    return c.report.indexed_as if c.report and c.report.status == "unchanged" else str(c.path)


def take_group(pending: deque[str], sizes: dict[str, int], cap: int) -> list[str]:
    """The next call's files, taken from the front of `pending`: the first, then the next ones
    while the group holds at most `cap` bytes (`sizes`: each file's)."""
    group = [pending.popleft()]
    size = sizes[group[0]]
    while pending and size + sizes[pending[0]] <= cap:
        group.append(pending.popleft())
        size += sizes[group[-1]]
    return group


def _size(path: Path) -> int:
    """A file's size on disk; 0 for one that cannot be read (its worker reports it failed)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


TEXT_PER_COMPRESSED_BYTE = 4  # about what text compresses to with gzip (zstd, bz2 and xz: a little more)


def _text_size(path: Path, size: int) -> int:
    """About how many bytes of text a file of `size` bytes on disk holds, from its first and last
    bytes: a gzip file's trailer says (mod 2**32, of its last member: no less than the size on
    disk is taken), another compressed file is TEXT_PER_COMPRESSED_BYTE a byte, anything else its
    size (Parquet and Arrow too). What orders the files and sizes the groups: by bytes on disk, a
    large .zst file went after smaller plain ones and could again be the last alone (a review)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO, opened, waits for a writer (a review)
            return size
        with open(path, "rb") as f:
            head = f.read(16)  # the longest magic: bzip2's, 10 bytes
            kind = next((suffix for magic, suffix in COMPRESSION_MAGIC if magic.match(head)), "")
            if kind == ".gz" and size >= 18:
                f.seek(-4, os.SEEK_END)
                return max(size, int.from_bytes(f.read(4), "little"))
    except OSError:
        return size
    return size * TEXT_PER_COMPRESSED_BYTE if kind else size


def _again(size: int, path: str, content_hash: str = "") -> Outcome:
    return Outcome(FileReport(path, "busy", bytes=size), busy=0.01, content_hash=content_hash)


class _Writes:
    """A file's batches written by the worker's database thread while its main thread signs the
    next batch (the database's time, mostly waiting for COPY, overlaps signing, as in the local
    executor's writer thread); at most `depth` batches wait to be written."""

    def __init__(self, db: ThreadPoolExecutor, store: CorpusWriter, postings: PostingBuffer, depth: int = 1) -> None:
        self.db, self.store, self.postings, self.depth = db, store, postings, depth
        self.pending: deque[Future[None]] = deque()

    def put(self, file_id: int, batch: list[RawDocument], sb: SignedBatch) -> None:
        self.pending.append(self.db.submit(self._write, file_id, batch, sb))
        while len(self.pending) > self.depth:
            self.pending.popleft().result()

    def _write(self, file_id: int, batch: list[RawDocument], sb: SignedBatch) -> None:
        ids = self.store.add_documents(file_id, batch, sb.n_chars, sb.n_tokens, sb.text_hash, sb.blobs)
        self.postings.add(sb, ids)

    def drain(self) -> None:
        """Wait for every batch to be written (before the store is used from the main thread)."""
        while self.pending:
            self.pending.popleft().result()


def _write_file(writes: _Writes, c: Claimed, cfg: SignatureConfig, opts: IndexOptions, hb: Heartbeat) -> FileReport:
    """Write a file's documents and postings in the store's open transaction; its report
    ("done", "unchanged": committed meanwhile by another indexer, "failed", or "busy": a claim lost)."""
    store = writes.store
    report = FileReport(str(c.path), "done", bytes=c.size)
    t0 = time.perf_counter()
    file_id = store.start_file(str(c.path), c.size, c.content_hash)
    if isinstance(file_id, str):  # committed meanwhile, under this path or another's
        report.status, report.indexed_as = "unchanged", file_id
        return report
    skipped = Skipped()
    try:
        docs = read_documents(c.path, skipped, opts.text_field, opts.id_field, opts.limit)
        for batch in batches(docs, opts):
            sb = sign_batch([d.text for d in batch], cfg, opts.store_text)
            writes.put(file_id, batch, sb)
            report.documents += len(batch)
            report.tokens += int(sb.n_tokens.sum())
            report.ngrams += len(sb.ng_hash)
            report.windows += len(sb.band_key) // cfg.bands
            report.text_bytes += sum(sb.n_chars)
            _test_kill(str(c.path))
            if hb.lost.is_set():
                report.status = "busy"
                break
    except CorruptFileError as exc:
        report.status, report.error = "failed", exc.message
    finally:
        writes.drain()
    if report.status == "done" and c.before is not None and (changed := changed_while_read(c.path, c.before)):
        report.status, report.error = "failed", changed
    report.skipped, report.skipped_at = dict(sorted(skipped.items())), skipped.where
    if report.status == "done" and report.documents == 0:  # zero is never silent
        report.status, report.error = "failed", f"{c.path}: {why_no_documents(c.path, opts.text_field, skipped)}"
    if report.status != "done":
        return report
    report.seconds = time.perf_counter() - t0
    store.finish_file(file_id, **report.counts(), text_field=opts.text_field)
    return report


def _test_kill(path: str) -> None:
    """The tests' hook: with CONTAM_TEST_KILL_MARKER naming a file that holds part of this
    path, the first worker to get here deletes the file and kills itself (-9) mid-file; a file
    holding "slow:SECONDS" makes every file take that much longer (two runs then overlap however
    busy the machine is); "start:kill" or "start:raise" makes every worker die as it starts (path
    ""), killed or by an error in its creation; "always:NAME" kills every worker that reaches a
    path holding NAME (the file kills its workers, the marker stays); "grow:NAME" appends a
    record to the file at a path holding NAME, once, as it is read."""
    marker = os.environ.get(KILL_MARKER)
    if not marker:
        return
    try:
        want = Path(marker).read_text().strip()
        if not path:
            if want == "start:kill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif want == "start:raise":
                raise ImportError("cannot import name '_native' from 'contam.app.core' (the tests' hook)")
        elif want.startswith("slow:"):
            time.sleep(float(want[len("slow:") :]))
        elif want.startswith("always:") and want[len("always:") :] in path:
            os.kill(os.getpid(), signal.SIGKILL)
        elif want.startswith("grow:") and want[len("grow:") :] in path:
            os.remove(marker)
            with open(path, "a", encoding="utf-8") as f:
                f.write('{"id": "late", "text": "a record appended while the file was read"}\n')
        elif want and want in path:
            os.remove(marker)  # only one worker gets past this
            os.kill(os.getpid(), signal.SIGKILL)
    except FileNotFoundError:
        return


# ---------------------------------------------------------------- the driver


def not_started(n: int, exc: Exception, auth_mode: str | None) -> str:
    """What a run says when its Ray workers die before they start: what Ray said of the last
    (the last line of an error in the worker's creation, or the first of a death), and what
    causes it. A new user's trial: RAY_AUTH_MODE=token against a cluster without token
    authentication, and a checkout not built in the driver's working directory (which Ray puts
    on the workers' path), each had every file "failed" and "run it again"."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    init_failed = bool(getattr(exc, "actor_init_failed", False))
    said = ((lines[-1] if init_failed else _death_reason(str(exc))) if lines else type(exc).__name__).rstrip(".")
    causes = []
    if _IMPORT_FAILED.search(said):
        causes.append(
            "the workers cannot import this contam (a checkout in the driver's working directory, which "
            "Ray puts on the workers' path, not built or of another version: run from another directory, "
            "or `make install` in it; or contam missing from a worker machine)"
        )
    elif init_failed:
        causes.append(
            "the workers failed as they started, as Ray says (every worker machine must reach the database at "
            "the URL given)"
        )
    elif (auth_mode or "").lower() == "token":  # a worker that ran its creation was reached
        causes.append(  # only if: on a cluster with token authentication, unsetting it fails the connection
            "RAY_AUTH_MODE=token is set here, and a cluster started without token authentication cannot start "
            "this driver's workers: if it was, unset it"
        )
    causes.append("the workers' logs say more (Ray's session folder on their machines, /tmp/ray/session_latest/logs)")
    return (
        f"the Ray workers died before they started ({n} in a row), so no file was indexed by them; "
        f"Ray says: {said}. Likely: " + "; or ".join(causes)
    )


def no_worker_yet(asked: int) -> str:
    """What a run says when none of its workers has started after START_NOTICE_SECONDS: Ray
    waits for CPUs to free up without a word, and so did the run (a review)."""
    import ray

    free = ray.available_resources().get("CPU", 0)  # type: ignore[no-untyped-call]
    total = ray.cluster_resources().get("CPU", 0)  # type: ignore[no-untyped-call]
    return (
        f"no Ray worker has started in {START_NOTICE_SECONDS:.0f} s ({asked} asked for, each taking a CPU; the "
        f"cluster has {total:g} CPUs, {free:g} free): another job holds them, or the cluster cannot start "
        "workers; the run waits for them (Ctrl-C stops it)"
    )


_IMPORT_FAILED = re.compile(r"\b(?:ImportError|ModuleNotFoundError|No module named|cannot import)\b")


def _death_reason(text: str) -> str:
    """Ray's reason for an actor's death: its first line is always "The actor died unexpectedly
    before finishing this task", then come tab-indented fields (class_name, actor_id, pid, ...),
    then the reason ("The actor is dead because its worker process has died. Worker exit type:
    ..."), up to its list of common causes; without a reason, the first line."""
    lines = [line for line in text.splitlines() if line.strip()]
    reason = next((line for line in lines[1:] if not line.startswith("\t")), lines[0] if lines else "")
    return reason.split(" Some common causes")[0].strip()


RAY_NEEDS_POSTGRESQL = (
    "--executor ray needs a PostgreSQL database (--db postgresql://...): Ray workers, "
    "which may run on other machines, cannot open this machine's SQLite file"
)


def require_postgresql(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        raise ConfigError(RAY_NEEDS_POSTGRESQL)


CONNECT_SECONDS = 5.0  # how long a cluster's head may take to accept a connection and answer
# An HTTP/2 client's first bytes (RFC 9113, 3.4: the preface and an empty SETTINGS frame): a gRPC
# server, as Ray's head (GCS) and Ray Client's server are, answers with a SETTINGS frame of its own
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_NOT_THERE = (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH)


def require_ray_head(address: str | None, timeout: float = CONNECT_SECONDS) -> None:
    """Refuse at once an address where no Ray cluster answers: ray.init retried a closed port for
    13 minutes, printing a warning every few seconds, and then suggested token authentication, and
    PostgreSQL's port for longer (session 35). `address` as ray.init takes it (None and "auto":
    RAY_ADDRESS, if set); a HOST:PORT or ray://HOST:PORT is asked, at the host Ray would connect to
    (a loopback name becomes the node's address, as Ray makes it). What cannot be told in
    `timeout` (no answer, a name server that fails for now), other schemes (http:// job
    submission) and a cluster started last on this machine are left to Ray. An address that is
    no HOST:PORT (no port, a port that is not one) is a usage error (ConfigError)."""
    given = os.environ.get("RAY_ADDRESS") if address in (None, "auto") else address
    if not given or given in ("auto", "local") or ("://" in given and not given.startswith("ray://")):
        return
    host, sep, port = given.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        if given.startswith("ray://"):
            return  # Ray's client has a default port: Ray says what is wrong with it
        # Ray's ValueError ("Invalid address format: 6391") read as a run that failed midway
        # (exit 3, "run it again to index the rest"): a new user's trial
        named = f"{given} (RAY_ADDRESS)" if given != address else given
        raise ConfigError(
            f"the Ray address {named} is not HOST:PORT: give the address `ray start --head` printed "
            "(HOST:6379 unless it was given another --port), ray://HOST:PORT, auto or local"
        )
    host = named = host.strip("[]")
    if not given.startswith("ray://"):
        with contextlib.suppress(Exception):  # private to Ray: where it is not, the host as given
            from ray._private.services import resolve_ip_for_localhost

            host = resolve_ip_for_localhost(named)
    at = f"{host}:{port}" + (f" (where Ray connects for {named})" if host != named else "")
    where = f"cannot reach the Ray cluster at {given}{' (RAY_ADDRESS)' if given != address else ''}"
    said = _first_bytes(host, int(port), timeout, f"{where}: nothing answers at {at}")
    if said is not None and (len(said) < 4 or said[3] != 4):  # a frame's type is its 4th byte
        tls = "" if os.environ.get("RAY_USE_TLS") else "; or, for a cluster with TLS, set RAY_USE_TLS=1"
        raise NotStarted(
            f"{where}: the server at {at} is not a Ray cluster's head (it does not speak gRPC: another "
            f"service's port?); give the port `ray start --head` printed (6379 unless it was given --port){tls}"
        )


def _first_bytes(host: str, port: int, timeout: float, refusal: str) -> bytes | None:
    """What the server at host:port says first to an HTTP/2 client, up to 4 bytes (fewer: it closed
    the connection), or None where that cannot be told in `timeout` (or TLS is asked for); refused
    (`refusal`, and why) where nothing listens there or the host is unknown."""
    try:
        conn = socket.create_connection((host, port), timeout)
    except OSError as exc:
        unknown = isinstance(exc, socket.gaierror) and exc.errno in (socket.EAI_NONAME, socket.EAI_NODATA)
        if not unknown and exc.errno not in _NOT_THERE:
            return None  # a timeout, a name server failing for now: Ray's to try
        raise NotStarted(
            f"{refusal} ({exc.strerror or exc}); give the address of the cluster's head node (HOST:6379 "
            "unless `ray start --head` was given another --port), or start one there"
        ) from exc
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        conn.close()
        return None
    said, deadline = b"", time.monotonic() + timeout
    with conn:
        try:
            conn.sendall(_H2_PREFACE)
            while len(said) < 4:  # recv gives what has come (a timeout makes the socket non-blocking)
                conn.settimeout(max(0.001, deadline - time.monotonic()))
                piece = conn.recv(4 - len(said))
                if not piece:
                    break
                said += piece
        except TimeoutError:
            return None
        except OSError:
            pass  # reset: not a gRPC server either
    return said


class RayJob:
    """Index files into one corpus with Ray tasks. Use as a context manager: it connects to the
    cluster at `address` (None: Ray's own choice, RAY_ADDRESS or the cluster started last on
    this machine, else a new local one) unless this process is connected already, and
    disconnects if it connected, as soon as a run needs the cluster no more (a next run connects
    again). `tasks`: files in work at once (None: the cluster's CPUs)."""

    def __init__(
        self,
        engine: Engine,
        corpus: str,
        cfg: SignatureConfig,
        opts: IndexOptions,
        progress: Progress | None = None,
        *,
        address: str | None = None,
        tasks: int | None = None,
        lease: float = LEASE_SECONDS,
    ) -> None:
        require_postgresql(engine)
        self.engine, self.corpus, self.cfg, self.opts = engine, corpus, cfg, opts
        self.progress = progress or NoProgress()
        self.address, self.tasks, self.lease = address, tasks, lease
        self.url = engine.url.render_as_string(hide_password=False)
        self._connected = False

    def __enter__(self) -> RayJob:
        self._connect()
        return self

    def _connect(self) -> None:
        import ray

        if not ray.is_initialized():
            require_ray_head(self.address)
            # ray.init sets its own SIGTERM handler (sys.exit(15)): the CLI's, which ends a run
            # as Ctrl-C does (exit 130, "interrupted"), is put back after it
            main = threading.current_thread() is threading.main_thread()
            before = signal.getsignal(signal.SIGTERM) if main else None
            try:
                ray.init(address=self.address, logging_level=logging.WARNING, include_dashboard=False)
            except ConnectionError as exc:
                hint = (
                    ""
                    if os.environ.get("RAY_AUTH_MODE")
                    else " (a cluster with token authentication: set RAY_AUTH_MODE=token)"
                )
                raise NotStarted(f"cannot reach the Ray cluster at {self.address or 'auto'}: {exc}{hint}") from exc
            finally:
                if before is not None:
                    signal.signal(signal.SIGTERM, before)
            self._connected = True

    def __exit__(self, *exc: object) -> None:
        self._disconnect()

    def _disconnect(self) -> None:
        """Let go of the cluster if this job connected to it (ray.shutdown: about 0.3 s)."""
        if self._connected:
            import ray

            ray.shutdown()
            self._connected = False

    def run(self, paths: list[Path]) -> IndexSummary:
        t0 = time.perf_counter()
        self._connect()
        files = find_files(paths)
        self.progress.run_started(files)
        corpus_id = open_corpus(self.engine, self.corpus, self.cfg, self.opts.store_text)
        with indexing_run(self.engine, corpus_id):  # delete and rename refuse while it writes
            return self._index(files, corpus_id, t0)

    def _index(self, files: list[Path], corpus_id: int, t0: float) -> IndexSummary:
        reports = _Scheduler(self, corpus_id, files).run(files)
        # the rest needs no cluster: a thread lets go of it while the database finishes here, where
        # an interrupt cancels the statement under way (Ray's shutdown was a tenth of Ray's lag
        # behind the local executor on 200 MB: bench/MEASUREMENTS.md, session 33)
        with ThreadPoolExecutor(1, thread_name_prefix="contam-ray-shutdown") as pool:
            letting_go = pool.submit(self._disconnect)
            self._finish(corpus_id, reports)
            letting_go.result()
        order = {str(p): i for i, p in enumerate(files)}
        done = sorted(reports, key=lambda r: order[r.path])
        return IndexSummary.of(self.engine, self.corpus, corpus_id, done, time.perf_counter() - t0)

    def _finish(self, corpus_id: int, reports: list[FileReport]) -> None:
        """What the local writer does at its end: merges due, statistics, stale claims dropped."""
        with CorpusWriter(self.engine, corpus_id) as store:
            store.merge_segments(self.opts.segment_rows, self.opts.merge_fanout, lambda: False)
            if any(r.status == "done" for r in reports) or store.statistics_stale():
                store.refresh_statistics()
        drop_stale_claims(self.engine, corpus_id)


def _kill(worker: Any) -> None:
    """End a worker. Ray may refuse to kill one whose creation it cancelled ("System error: Actor
    creation cancelled": a worker that died before it started, RAY_AUTH_MODE=token against a
    cluster without it, now and then): it is gone either way. Raised, that stood for the run's
    own error, and the workers after it in the run's list were left alive, their claims held."""
    import ray
    from ray.exceptions import RayError

    with contextlib.suppress(RayError):
        ray.kill(worker)


class _Scheduler:
    """The driver's loop: one IndexWorker actor per worker, each sent a group of files whenever
    it is idle once it has started (answered `ready`), asked to commit when nothing is left to
    send it; busy files are tried again when their holder's lease would end, the files of a
    worker that died (those it had not committed) after their claims lapse, on a new worker.

    Files go largest first (by their text, as _text_size reckons it), and a call takes a group of
    files of up to a 2 x tasks-th of the text left to send (and at most a 2 x tasks-th of the
    corpus's, and `commit_bytes`): large groups while much is left, single small files at the end, so the
    workers finish together (guided self-scheduling over the longest first; with a fixed
    share, one of two workers on 200 MB finished its last group of four files a second after the
    other: bench/MEASUREMENTS.md, session 25). The worker's open group and posting buffer span
    its calls, so small groups still make full-sized posting blocks. Files handed back go where
    their size puts them; a likely copy of a file another worker holds waits a little (see
    _twins_apart), so copies of one file are indexed under the first path given."""

    def __init__(self, job: RayJob, corpus_id: int, files: list[Path]) -> None:
        import ray

        self.job, self.corpus_id = job, corpus_id
        cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
        self.limit = max(1, job.tasks or cpus)
        self.actor_class = ray.remote(IndexWorker).options(num_cpus=1, max_restarts=0)
        self.sizes = {str(p): _size(p) for p in files}  # on disk: reported, and copies have equal ones
        self.text = {str(p): _text_size(p, self.sizes[str(p)]) for p in files}
        self.group_bytes = min(job.opts.commit_bytes, sum(self.text.values()) // (2 * self.limit))
        self.crashes: Counter[str] = Counter()
        self.later: list[tuple[float, str, str]] = []  # (when, path, content hash) of busy files
        self.workers: list[Any] = []
        self.held: dict[Any, set[str]] = {}  # per worker: files sent and not yet committed or handed back
        self.inflight: dict[Any, Any] = {}  # call -> worker
        self.reports: list[FileReport] = []
        self.left = 0  # bytes of text (_text_size) of the files in `pending`
        self.openings: dict[str, int] = {}  # _opening's
        self.token = uuid.uuid4().hex[:16]  # the start of every claim owner's token of this run's workers
        self.starting: dict[Any, Any] = {}  # a worker's first call (ready) -> the worker, until it answers
        self.started: set[Any] = set()  # the workers that answered it: only they are sent files
        self.ever_started = False  # a worker of the run has started (and so may have written)
        self.failed_starts = 0  # workers in a row that died before they started

    def run(self, files: list[Path]) -> list[FileReport]:
        import ray

        # largest first (session 36: in the bench corpus's order, its five 25 MB files last, one
        # worker signed the last alone while the other waited: Ray's last commit 2.8 s after the
        # last file was handed out, the local executor's 1.2 s: bench/MEASUREMENTS.md)
        pending = self.largest_first(str(p) for p in files)
        self.left = sum(self.text[p] for p in pending)
        self.workers = [self._start() for _ in range(self.limit)]
        waiting_since = time.monotonic()
        try:
            while pending or self.inflight or self.later or any(self.held.values()):
                if not self.started and waiting_since and time.monotonic() - waiting_since > START_NOTICE_SECONDS:
                    waiting_since = 0.0  # said once
                    log.warning(no_worker_yet(self.limit))
                self._due(pending)
                busy = set(self.inflight.values())
                for w in [w for w in self.workers if w in self.started and w not in busy]:
                    self._send(w, pending)
                if not self.inflight and not self.starting:
                    time.sleep(0.05)
                    continue
                ready, _ = ray.wait([*self.inflight, *self.starting], num_returns=1, timeout=0.2)
                for ref in ready:
                    if ref in self.starting:
                        self._answered(ref, self.starting.pop(ref))
                    else:
                        self._collect(ref, self.inflight.pop(ref))
            # their connections end cleanly; a worker not started yet (more asked for than the
            # cluster's CPUs) has none, and would not answer till the others are gone
            ray.get([w.close.remote() for w in self.workers if w in self.started], timeout=60)
        finally:  # on an error or Ctrl-C too: killing a worker ends its call in progress and rolls its group back
            for w in self.workers:
                _kill(w)
            self._let_go()
        return self.reports

    def _let_go(self) -> None:
        """Drop the claims the run's workers still hold (a run stopped by Ctrl-C, SIGTERM or an
        error: their groups rolled back), once their calls have ended, so a rerun or another run
        takes the files at once: they waited out the lease (30 s) for a run that had stopped (a new
        user's trial). A group committing as its worker was killed either committed (its claims
        gone with it) or rolled back; one whose claim is dropped here cannot commit after (the
        fence). A worker still alive past the wait keeps what it claims after: that lapses, as a
        killed driver's workers' claims do."""
        import ray

        if not self.inflight and not any(self.held.values()):
            return  # every group committed or was handed back: nothing held
        with contextlib.suppress(Exception):  # the run's own error (or the interrupt) is what is said
            if self.inflight:  # the killed workers' calls end as they die
                ray.wait(list(self.inflight), num_returns=len(self.inflight), timeout=5)
        with contextlib.suppress(Exception):
            release_run_claims(self.job.engine, self.corpus_id, self.token)
        # and the postings its stopped workers staged (their sessions gone, their locks free): they
        # stayed until the next run into the corpus, 16-26 M rows of blocks a run (a trial)
        with contextlib.suppress(Exception):
            drop_abandoned(self.job.engine, self.corpus_id, wait=5.0)

    def largest_first(self, paths: Iterable[str]) -> deque[str]:
        """The files by their text, the largest first (stable: of equal ones, the first given first)."""
        return deque(sorted(paths, key=lambda p: -self.text[p]))

    def _start(self) -> Any:
        job = self.job
        code = code_fingerprint()
        w: Any = self.actor_class.remote(job.url, self.corpus_id, job.cfg, job.opts, job.lease, code, self.token)
        self.held[w] = set()
        self.starting[w.ready.remote()] = w  # files once it answers (a worker that never starts holds none)
        return w

    def _send(self, worker: Any, pending: deque[str]) -> None:
        """A group of files to an idle worker, or, with none left to send, a commit."""
        if not pending:
            if self.held[worker]:
                self.inflight[worker.commit.remote()] = worker
            return
        if not self._twins_apart(worker, pending):
            return
        group = take_group(pending, self.text, min(self.group_bytes, self.left // (2 * self.limit)))
        self.left -= sum(self.text[path] for path in group)
        for path in group:
            self.job.progress.file_started(path, self.sizes[path])
        self.held[worker].update(group)
        self.inflight[worker.index.remote(group)] = worker

    def _twins_apart(self, worker: Any, pending: deque[str]) -> bool:
        """Sizes put copies of one file side by side: sent to two workers at once, the first to
        claim the content indexed it, the other waited out a third of its lease, and which path
        the content was indexed under was chance, where the local executor takes the first in
        the order given. So of the next TWIN_LOOKAHEAD files the first that is no likely copy (of
        the size and first bytes) of a file another worker holds goes first; if all are, the
        worker waits (False) and the holder takes the copy up later, as the twin of a file of its
        group, or once its group is committed, as unchanged."""
        theirs: dict[int, list[str]] = {}
        for w, held in self.held.items():
            for q in held if w is not worker else ():
                theirs.setdefault(self.sizes[q], []).append(q)
        for k in range(min(len(pending), TWIN_LOOKAHEAD)):
            path = pending[k]
            if not any(self._opening(path) == self._opening(q) for q in theirs.get(self.sizes[path], [])):
                del pending[k]
                pending.appendleft(path)
                return True
        return False

    def _opening(self, path: str) -> int:
        """A hash of a file's first 64 KiB (0: unreadable), once per file."""
        if path not in self.openings:
            try:
                with open(path, "rb") as f:
                    self.openings[path] = xxhash.xxh3_64_intdigest(f.read(1 << 16))
            except OSError:
                self.openings[path] = 0
        return self.openings[path]

    def _due(self, pending: deque[str]) -> None:
        """Busy files whose time has come: done by the holder meanwhile, or back to `pending`,
        where their size puts them (the largest first, as the run began)."""
        now, waiting, back = time.monotonic(), [], []
        for when, path, chash in self.later:
            if when > now:
                waiting.append((when, path, chash))
            elif chash and (there := file_indexed(self.job.engine, self.corpus_id, chash)) is not None:
                self._finish(FileReport(path, "unchanged", bytes=self.sizes[path], indexed_as=there))
            else:
                back.append(path)
                self.left += self.text[path]
        self.later = waiting
        if back:
            ordered = self.largest_first([*pending, *back])
            pending.clear()
            pending.extend(ordered)

    def _collect(self, ref: Any, worker: Any) -> None:
        import ray
        from ray.exceptions import NodeDiedError, OutOfMemoryError, RayActorError, RayTaskError, WorkerCrashedError

        try:
            outcomes: list[Outcome] = ray.get(ref)
        except (RayActorError, WorkerCrashedError, NodeDiedError, OutOfMemoryError) as exc:
            self._lost(worker, exc)
            return
        except RayTaskError as exc:  # a problem the worker named (another install, a lost segment): said as it said it
            if isinstance(exc.cause, ContamError):
                raise exc.cause from None
            raise
        self.failed_starts = 0  # a worker answered: the cluster can start them
        held = self.held[worker]
        for out in outcomes:
            held.discard(out.report.path)
            if out.report.status == "busy":
                when = time.monotonic() + min(out.busy, self.job.lease / 3)
                self.later.append((when, out.report.path, out.content_hash))
            else:
                self._finish(out.report)

    def _lost(self, worker: Any, exc: Exception) -> None:
        """A worker died: its uncommitted files are tried again (their claims lapse after the
        lease; the retry takes them over then), on a new worker. A worker that died before it
        started (answered `ready`) holds no file and counts against none; after START_FAILURES
        such workers in a row the run stops, saying what Ray said and what causes it (the files
        had been recorded as failed, "its Ray worker died 4 times", with no word of why)."""
        if worker not in self.started:  # it died before it answered `ready`, holding no file
            self.failed_starts += 1
            if self.failed_starts >= START_FAILURES:
                self._give_up(worker, exc)
                return
        self.started.discard(worker)
        for path in self.held.pop(worker):
            self.crashes[path] += 1
            if self.crashes[path] > CRASH_RETRIES:
                error = f"{path}: its Ray worker died {self.crashes[path]} times ({type(exc).__name__})"
                self._finish(FileReport(path, "failed", bytes=self.sizes[path], error=error))
            else:
                self.later.append((time.monotonic(), path, ""))
        _kill(worker)
        self.workers[self.workers.index(worker)] = self._start()

    def _give_up(self, worker: Any, exc: Exception) -> None:
        """START_FAILURES workers in a row died before they started: with none started, the run
        stops; with some at work, it goes on with them, this worker not replaced, and says so (a
        machine of the cluster that cannot start workers took each new one, and its deaths in a row
        stopped a run the others were doing: a review)."""
        said = not_started(self.failed_starts, exc, os.environ.get("RAY_AUTH_MODE"))
        if not self.started:
            # a worker that started may have committed a group whose answer never came: "the
            # files reported done are kept" is said then (NotStarted: nothing written; a review)
            raise (ContamError if self.ever_started else NotStarted)(said)
        log.warning("%s; the run goes on with the %d worker(s) that started", said, len(self.started))
        self.held.pop(worker, None)
        _kill(worker)
        self.workers.remove(worker)

    def _answered(self, ref: Any, worker: Any) -> None:
        """A worker's first call (ready) ended: it has started, and is sent files from now on; or
        it died before it started (_lost). Files go to started workers only: one that never
        starts (more workers asked for than the cluster's CPUs, a cluster that cannot start them)
        holds none, where its files had waited for it for ever (a run of 8 files with --workers 4
        on a cluster of 2 CPUs never ended), and a worker that died holding files had started."""
        import ray
        from ray.exceptions import RayError

        try:
            ray.get(ref)
        except RayError as exc:  # `ready` raises nothing of its own: whatever Ray says, it did not start
            self._lost(worker, exc)
            return
        self.started.add(worker)
        self.ever_started = True
        self.failed_starts = 0  # the cluster can start them

    def _finish(self, report: FileReport) -> None:
        if report.status == "done":
            self.job.progress.advanced(report.documents, report.text_bytes)
        self.reports.append(report)
        self.job.progress.file_finished(report)
