"""Posting blocks on SQLite too; the one-row-per-posting tables are dropped.

SQLite's writer thread spent nearly all its time binding and stepping one row per posting
(about 20 bytes a row); blocks of about 30 postings a row load several times faster and take
about 13 bytes a posting (app.store.blocks, README "Measured on this machine"). Existing SQLite
postings move into blocks, a segment at a time in slices of a million rows (a segment's bucket
may then have two blocks: a look-up reads them all): about 6 microseconds a posting, some 30
minutes per GB of indexed text, and the freed pages stay in the file until a `VACUUM`.
PostgreSQL's postings moved in 0005; its row tables are empty. Downgrade puts SQLite's
postings back into rows, a slice of blocks at a time (PostgreSQL's stay in blocks until 0005's
downgrade).

Revision ID: 0010_sqlite_blocks
Revises: 0009_index_runs
Create Date: 2026-12-02
"""

import numpy as np
import sqlalchemy as sa
from alembic import op

from contam.app.store import blocks

revision = "0010_sqlite_blocks"
down_revision = "0009_index_runs"
branch_labels = None
depends_on = None

_COLUMNS = {"ngram": ("hash", "doc_id"), "band": ("key", "doc_id", "win")}
_SLICE = 1_000_000  # rows read and written at a time


def upgrade() -> None:
    conn = op.get_bind()
    for name, cols in _COLUMNS.items():  # (on PostgreSQL the row tables are empty since 0005)
        segs = [s for (s,) in conn.exec_driver_sql(f"SELECT DISTINCT seg FROM {name} ORDER BY seg").all()]
        for seg in segs:
            rows = conn.exec_driver_sql(
                f"SELECT {', '.join(cols)} FROM {name} WHERE seg = {int(seg)} ORDER BY {', '.join(cols)}"
            )
            while part := rows.fetchmany(_SLICE):
                types = (np.int64, np.int32, np.int32)  # key, doc[, win]: the records' fields
                columns = [np.array(c, dtype=t) for c, t in zip(zip(*part, strict=True), types, strict=False)]
                flat = blocks.block_rows(columns)  # bucket, data, bucket, data, ...
                conn.execute(
                    sa.text(f"INSERT INTO {name}_block (seg, bucket, data) VALUES (:s, :b, :d)"),
                    [{"s": int(seg), "b": b, "d": d} for b, d in zip(flat[0::2], flat[1::2], strict=True)],
                )
        op.drop_table(name)


def downgrade() -> None:
    conn = op.get_bind()
    for name, cols in _COLUMNS.items():
        op.create_table(
            name,
            sa.Column("seg", sa.Integer(), nullable=False),
            *[sa.Column(c, sa.BigInteger() if c in ("hash", "key") else sa.Integer(), nullable=False) for c in cols],
            sa.PrimaryKeyConstraint("seg", *cols, name=f"pk_{name}"),
            sqlite_with_rowid=False,
        )
        if conn.dialect.name != "sqlite":
            continue
        segs = [s for (s,) in conn.exec_driver_sql(f"SELECT DISTINCT seg FROM {name}_block ORDER BY seg").all()]
        marks = ", ".join("?" * len(cols))
        for seg in segs:
            # blocks in bucket order, a slice of them at a time (memory bounded by the slice)
            data = conn.exec_driver_sql(f"SELECT data FROM {name}_block WHERE seg = {int(seg)} ORDER BY bucket")
            while part := data.fetchmany(_SLICE // 20):
                rec = blocks.in_order(blocks.decode(name, (bytes(d) for (d,) in part)))
                conn.exec_driver_sql(
                    f"INSERT INTO {name} (seg, {', '.join(cols)}) VALUES ({int(seg)}, {marks})",
                    [tuple(r) for r in rec.tolist()],
                )
            conn.exec_driver_sql(f"DELETE FROM {name}_block WHERE seg = {int(seg)}")
