"""Report left_out: what an upload naming no corpora was told of the corpora it was not checked
against (the notes of corpora.left_out, a JSON list), decided when the upload chose its corpora.

Decided at the job's end instead, by comparing the report's corpora with the default choice then,
an upload that named exactly the default corpora was told of the others as if it had named none,
and a corpus indexed, deleted or renamed while the job was queued or ran made the note go or come.
Existing reports (null) add no note.

Revision ID: 0018_report_left_out
Revises: 0017_report_item_passage_role
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0018_report_left_out"
down_revision = "0017_report_item_passage_role"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("report", sa.Column("left_out", sa.Text(), nullable=True))


def downgrade() -> None:
    # DROP COLUMN: SQLite 3.35+ and PostgreSQL alike (batch mode would reflect the table first)
    op.execute("ALTER TABLE report DROP COLUMN left_out")
