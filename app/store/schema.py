"""Tables. Schema changes go through Alembic (migrations/); a test checks they match this file.

Hashes are stored as signed 64-bit integers (SQLite INTEGER, PostgreSQL BIGINT): the
signatures module converts uint64 to int64 bit for bit.
The postings (n-gram and band rows) are kept in *segments*: a segment is a run of one corpus's
postings that is only appended to until it holds `segment_rows` rows, then a new one starts, so
a bulk insert touches only the newest segment's pages and the insert rate does not fall as the
index outgrows the page cache (README, "How postings are stored"). Within a segment they are
packed 64 to 128 to a row in ngram_block and band_block (app.store.blocks), on both backends.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Sequence,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    text,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Dialect

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp in UTC, read back as one on every backend: SQLite keeps no time zone, so its
    values came back naive ("2026-12-04T18:42:30", while PostgreSQL's said +00:00); every value
    written is UTC (repo.now), so a naive one read is UTC."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


metadata = MetaData(naming_convention=NAMING)

corpus = Table(
    "corpus",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("fingerprint", String(32), nullable=False),
    Column("config", Text, nullable=False),
    Column("store_text", Boolean, nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
)

corpus_file = Table(
    "corpus_file",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("corpus_id", Integer, ForeignKey("corpus.id", ondelete="CASCADE"), nullable=False),
    Column("path", Text, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("content_hash", String(32), nullable=False),
    Column("status", String(16), nullable=False),  # done | failed
    Column("error", Text),
    Column("n_docs", Integer, nullable=False, default=0),
    Column("n_tokens", BigInteger, nullable=False, default=0),
    Column("n_ngrams", BigInteger, nullable=False, default=0),
    Column("n_windows", BigInteger, nullable=False, default=0),
    Column("skipped", Text, nullable=False, default="{}"),
    Column("seconds", Float, nullable=False, default=0.0),
    Column("indexed_at", UTCDateTime(), nullable=False),
    # the field its documents' text was read from (--text-field); NULL: "text" (indexed before
    # migration 0015). A corpus that keeps no text reads its documents again from here
    Column("text_field", Text),
    UniqueConstraint("corpus_id", "content_hash", name="uq_corpus_file_corpus_id_content_hash"),
)

document = Table(
    "document",
    metadata,
    # Ids come in blocks from allocate_doc_ids: max+1 under SQLite's write lock, a sequence on
    # PostgreSQL so that indexers on several machines never collide.
    Column("id", Integer, Sequence("document_id_seq"), primary_key=True, autoincrement=False),
    Column("corpus_id", Integer, ForeignKey("corpus.id", ondelete="CASCADE"), nullable=False),
    Column("file_id", Integer, ForeignKey("corpus_file.id", ondelete="CASCADE"), nullable=False),
    Column("external_id", Text, nullable=False),
    Column("position", BigInteger, nullable=False),  # line number, row number, or 0 for a .txt file
    Column("n_chars", Integer, nullable=False),
    Column("n_tokens", Integer, nullable=False),
    Column("text_hash", BigInteger, nullable=False),
    Column("text", LargeBinary),  # zstd-compressed UTF-8, or NULL when only the pointer is kept
    Index("ix_document_file_id", "file_id"),
    Index("ix_document_corpus_id_text_hash", "corpus_id", "text_hash"),
)

# Which indexer task holds a file of a corpus, until when (the Ray executor's tasks, on any
# machine; migration 0006 says how a claim is taken, renewed, taken over and checked).
file_claim = Table(
    "file_claim",
    metadata,
    Column("corpus_id", Integer, ForeignKey("corpus.id", ondelete="CASCADE"), nullable=False),
    Column("content_hash", String(32), nullable=False),
    Column("path", Text, nullable=False),
    Column("owner", String(64), nullable=False),  # the task attempt holding it (a random token)
    Column("expires_at", UTCDateTime(), nullable=False),  # the database's clock
    Column("takeovers", Integer, nullable=False),  # times a lapsed claim was taken over
    PrimaryKeyConstraint("corpus_id", "content_hash", name="pk_file_claim"),
)

# Which indexing runs are writing into a corpus, until when (migration 0009): delete and
# rename refuse while one holds it. lease_until: seconds since the epoch, the database's clock.
index_run = Table(
    "index_run",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("corpus_id", Integer, ForeignKey("corpus.id", ondelete="CASCADE"), nullable=False),
    Column("owner", String(64), nullable=False),  # host:pid of the run, for the refusal's message
    Column("started_at", UTCDateTime(), nullable=False),
    Column("lease_until", Float, nullable=False),
)

segment = Table(
    "segment",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("corpus_id", Integer, ForeignKey("corpus.id", ondelete="CASCADE"), nullable=False),
    Column("rows", BigInteger, nullable=False),  # n-gram plus band rows
    # Set while a merge moves rows: on the segments being emptied, the id of the one being
    # filled; on that one, its own id. Neither takes new rows nor joins another merge.
    Column("merging_into", Integer),
    # Written outside its indexer's commit group (PostgreSQL), not yet part of the index: look-ups,
    # merges and appends skip it until the group commits (migration 0012 says how).
    Column("pending", Boolean, nullable=False, server_default=false()),
    # Its blocks cut its postings by the top block_bits bits of the key (app.store.blocks; set
    # when it is made, from the rows it is made for; 18 for segments written before 0014)
    Column("block_bits", Integer, nullable=False, server_default=text("18")),
    Index("ix_segment_corpus_id", "corpus_id"),
)

# The posting tables: a segment's postings in blocks of 64 to 128, one row per block
# (app.store.blocks says why and how).
ngram_block = Table(
    "ngram_block",
    metadata,
    Column("seg", Integer, nullable=False),
    Column("bucket", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),  # packed (key int64, doc int32) records, sorted
    Index("ix_ngram_block_seg_bucket", "seg", "bucket", postgresql_with={"fillfactor": 100}),
)

band_block = Table(
    "band_block",
    metadata,
    Column("seg", Integer, nullable=False),
    Column("bucket", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),  # packed (key int64, doc int32, win int32) records
    Index("ix_band_block_seg_bucket", "seg", "bucket", postgresql_with={"fillfactor": 100}),
)

# Each segment's key filter per posting table, in parts (app.store.blocks says why and how).
key_filter = Table(
    "key_filter",
    metadata,
    Column("seg", Integer, nullable=False),
    Column("tbl", String(8), nullable=False),  # "ngram" or "band"
    Column("part", Integer, nullable=False),
    Column("scheme", Integer, nullable=False),  # blocks.FILTER_SCHEME it was written with
    Column("capacity", BigInteger, nullable=False),  # keys the part is designed for
    Column("n_keys", BigInteger, nullable=False),  # keys added (a key written again counts again)
    Column("stamp", BigInteger, nullable=False),  # random, new at every change: what readers' caches check
    Column("bits", LargeBinary, nullable=False),
    PrimaryKeyConstraint("seg", "tbl", "part", name="pk_key_filter"),
)

report = Table(
    "report",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("filename", Text, nullable=False),
    Column("file_hash", String(64), nullable=False),
    Column("status", String(16), nullable=False),  # queued | running | done | failed
    Column("error", Text),
    Column("total_items", Integer, nullable=False),
    Column("done_items", Integer, nullable=False),
    Column("read_items", Integer, nullable=False, server_default="0"),  # by the job's first pass
    Column("corpora", Text, nullable=False),  # JSON list of names
    Column("mapping", Text, nullable=False),  # JSON role -> field
    Column("thresholds", Text, nullable=False),  # JSON
    Column("fingerprint", String(32), nullable=False),
    Column("config", Text, nullable=False),  # JSON signature settings
    Column("software_version", String(32), nullable=False),
    Column("summary", Text),  # JSON, when done
    # JSON list: what an upload naming no corpora is told of those it was not checked against, as
    # chosen (migration 0018); null before it
    Column("left_out", Text),
    Column("upload", LargeBinary, nullable=False),  # zstd of the uploaded file, for re-runs and the clean subset
    Column("created_at", UTCDateTime(), nullable=False),
    Column("finished_at", UTCDateTime()),
    # the server running the job and its lease, in seconds since the epoch on the database's
    # clock (migration 0008 says how a job is held, taken up and fenced)
    Column("owner", String(64)),
    Column("lease_until", Float),
)

report_item = Table(
    "report_item",
    metadata,
    Column("report_id", String(32), ForeignKey("report.id", ondelete="CASCADE"), nullable=False),
    Column("idx", Integer, nullable=False),
    Column("item_id", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("score", Float, nullable=False),
    Column("text", Text, nullable=False),  # the item as shown, its first 4,000 characters (the list's snippet)
    # the item as shown, whole and casefolded: what the text search reads (migration 0016)
    Column("search", Text, nullable=False, server_default=""),
    # the item's id as ids sort, numbers by value ("b2" before "b10"; text.natural_key, migration 0019)
    Column("id_order", Text, nullable=False, server_default=""),
    Column("roles_found", String(64), nullable=False),  # e.g. ",question,answer," for field filters
    Column("corpora_found", Text, nullable=False),  # e.g. ",web,books,"
    Column("data", Text, nullable=False),  # JSON: metrics, fields, evidence
    PrimaryKeyConstraint("report_id", "idx", name="pk_report_item"),
    Index("ix_report_item_report_id_status", "report_id", "status"),
)
