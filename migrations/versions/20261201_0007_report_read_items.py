"""Report read_items: the items a job's first pass has read, so a job shows progress while it
reads its benchmark (phase 'reading'), before any item is scored (done_items).

Revision ID: 0007_report_read_items
Revises: 0006_file_claims
Create Date: 2026-12-01
"""
import sqlalchemy as sa
from alembic import op

revision = "0007_report_read_items"
down_revision = "0006_file_claims"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # ADD COLUMN with a constant default needs no table copy, on SQLite too; existing reports
    # have read nothing yet
    op.add_column("report", sa.Column("read_items", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    # DROP COLUMN: SQLite 3.35+ and PostgreSQL alike (batch mode would reflect the table first)
    op.execute("ALTER TABLE report DROP COLUMN read_items")
