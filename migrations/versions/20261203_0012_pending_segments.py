"""Pending segments: a segment an indexer writes outside its commit group's transaction.

On PostgreSQL the indexer writes a full segment's blocks on a second connection, in a
transaction of its own, while its group goes on (the server's COPY then overlaps reading and
signing instead of stopping them). Such a segment is `pending` until the group that wrote it
commits, which clears the flag in the same transaction as its files; look-ups, merges and
appends skip pending segments, so a group that rolls back or a run that dies leaves nothing
visible. Its writer holds an advisory lock on it while it is pending; a pending segment whose
lock is free (the writer's session ended) is dropped by the next writer into its corpus
(app.store.repo.drop_abandoned_segments). Existing segments are not pending.

Revision ID: 0012_pending_segments
Revises: 0011_key_filters
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_pending_segments"
down_revision = "0011_key_filters"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("segment", sa.Column("pending", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    conn = op.get_bind()
    for table in ("ngram_block", "band_block", "key_filter"):  # a pending segment's rows were never part of the index
        conn.exec_driver_sql(f"DELETE FROM {table} WHERE seg IN (SELECT id FROM segment WHERE pending)")
    conn.exec_driver_sql("DELETE FROM segment WHERE pending")
    op.drop_column("segment", "pending")
