"""The field each file's documents were read from: corpus_file.text_field.

A corpus indexed with --no-store-text keeps no text: a scan reads a candidate document again
from its file, at its position. It read the record's "text" field whatever field the file was
indexed from (--text-field content), and found no text, so a copy in such a file was silently
scored as no copy at all. Files indexed before this revision were read from "text" unless told
otherwise, which NULL stands for; a file of another field indexed before it is re-read as an
error naming it, never as no text (app.services.scanning).

Revision ID: 0015_file_text_field
Revises: 0014_segment_block_bits
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

revision = "0015_file_text_field"
down_revision = "0014_segment_block_bits"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("corpus_file", sa.Column("text_field", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("corpus_file", "text_field")
