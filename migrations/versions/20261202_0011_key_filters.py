"""Key filters: each segment keeps a Bloom filter of its keys per posting table.

A look-up fetched one block per asked-for key in every segment, and most keys of a benchmark are
in no segment: the filter lets it fetch a segment's blocks only for the keys the segment may
hold (app.store.blocks). Existing segments get their filters here, built from their blocks
(every posting is read once: about a second per 8 M postings here); a segment written without
one would otherwise be probed for every key, as before. Downgrade drops them.

Revision ID: 0011_key_filters
Revises: 0010_sqlite_blocks
Create Date: 2026-12-02
"""

import secrets

import numpy as np
import sqlalchemy as sa
from alembic import op

from contam.app.store import blocks

revision = "0011_key_filters"
down_revision = "0010_sqlite_blocks"
branch_labels = None
depends_on = None

_SLICE = 50_000  # blocks read at a time


def upgrade() -> None:
    op.create_table(
        "key_filter",
        sa.Column("seg", sa.Integer(), nullable=False),
        sa.Column("tbl", sa.String(length=8), nullable=False),
        sa.Column("part", sa.Integer(), nullable=False),
        sa.Column("scheme", sa.Integer(), nullable=False),
        sa.Column("capacity", sa.BigInteger(), nullable=False),
        sa.Column("n_keys", sa.BigInteger(), nullable=False),
        sa.Column("stamp", sa.BigInteger(), nullable=False),
        sa.Column("bits", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("seg", "tbl", "part", name="pk_key_filter"),
    )
    conn = op.get_bind()
    for table, rec in blocks.RECORDS.items():
        sizes = conn.exec_driver_sql(
            f"SELECT seg, sum(length(data)) FROM {table}_block GROUP BY seg ORDER BY seg"
        ).all()
        for seg, size in sizes:
            capacity = max(int(size) // rec.itemsize, blocks.FILTER_MIN_KEYS)  # postings: at least the keys
            bits = bytearray(blocks.filter_bytes(capacity))
            data = conn.exec_driver_sql(f"SELECT data FROM {table}_block WHERE seg = {int(seg)} ORDER BY bucket")
            while part := data.fetchmany(_SLICE):
                keys = blocks.decode(table, (bytes(d) for (d,) in part))["key"]
                blocks.filter_add(bits, np.sort(keys))
            conn.execute(
                sa.text(
                    "INSERT INTO key_filter (seg, tbl, part, scheme, capacity, n_keys, stamp, bits) "
                    "VALUES (:seg, :tbl, 0, :scheme, :capacity, :n, :stamp, :bits)"
                ),
                {
                    "seg": int(seg),
                    "tbl": table,
                    "scheme": blocks.FILTER_SCHEME,
                    "capacity": capacity,
                    "n": capacity,
                    "stamp": secrets.randbits(63),
                    "bits": bytes(bits),
                },
            )


def downgrade() -> None:
    op.drop_table("key_filter")
