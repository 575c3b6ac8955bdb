"""Documents' text stored as it comes: PostgreSQL no longer tries to compress it.

The indexer stores each document's text compressed with zstd already; PostgreSQL's own
compression (pglz) tried every value over about 2 kB anyway and failed, costing the server CPU
at every insert. STORAGE EXTERNAL keeps long values out of line without that attempt. Existing
values are left as they are (the setting applies to new rows). SQLite: nothing to do.

Revision ID: 0013_document_text_storage
Revises: 0012_pending_segments
Create Date: 2026-12-03
"""

from alembic import op

revision = "0013_document_text_storage"
down_revision = "0012_pending_segments"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE document ALTER COLUMN text SET STORAGE EXTERNAL")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE document ALTER COLUMN text SET STORAGE EXTENDED")
