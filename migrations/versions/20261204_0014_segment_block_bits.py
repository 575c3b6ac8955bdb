"""Each segment's number of blocks is its own: segment.block_bits.

A segment's postings were cut into 2**18 blocks by the top 18 bits of the key, whatever its
size: an 8 M-row segment gave blocks of about 30 postings, and each block is a row with a B-tree
entry, about half of PostgreSQL's COPY of the segment (bench/MEASUREMENTS.md, session 14). New
segments get 2**block_bits blocks of 64 to 128 postings (app.store.blocks.bits_for); existing
ones keep 18, which the column's default gives them. PostgreSQL: the block tables keep rows up to
a page inline (toast_tuple_target), so a block never pays a compression attempt or a TOAST
table: a large merged segment's blocks may pass the default 2 kB.

Revision ID: 0014_segment_block_bits
Revises: 0013_document_text_storage
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0014_segment_block_bits"
down_revision = "0013_document_text_storage"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("segment", sa.Column("block_bits", sa.Integer(), nullable=False, server_default=sa.text("18")))
    if op.get_bind().dialect.name == "postgresql":
        for table in ("ngram_block", "band_block"):
            op.execute(f"ALTER TABLE {table} SET (toast_tuple_target = 8160)")


def downgrade() -> None:
    # Segments with other block bits cannot be read as 18-bit ones: refuse rather than mislead.
    bind = op.get_bind()
    if bind.execute(sa.text("SELECT count(*) FROM segment WHERE block_bits <> 18")).scalar_one():
        raise RuntimeError("segments written since 0014 have other block bits: re-index instead of downgrading")
    if bind.dialect.name == "postgresql":
        for table in ("ngram_block", "band_block"):
            op.execute(f"ALTER TABLE {table} RESET (toast_tuple_target)")
    op.drop_column("segment", "block_bits")
