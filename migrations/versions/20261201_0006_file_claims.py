"""File claims: which indexer task holds a corpus file, until when (a lease).

The Ray executor's tasks run on other machines, so a file cannot be held by a lock of the
indexing process alone: a task records its claim here in a short transaction of its own and
renews it while it works (a heartbeat). A claim whose lease ran out (its worker died, or lost
the database) may be taken over by any other task; the task that lost it finds out when it
commits (the claim is checked in the file's transaction) and rolls back. The file's rows are
written in one transaction, as before, so a dead worker leaves nothing behind but its claim.

Revision ID: 0006_file_claims
Revises: 0005_posting_blocks
Create Date: 2026-12-01
"""
import sqlalchemy as sa
from alembic import op

revision = "0006_file_claims"
down_revision = "0005_posting_blocks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "file_claim",
        sa.Column("corpus_id", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(length=32), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("owner", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("takeovers", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["corpus_id"], ["corpus.id"], name="fk_file_claim_corpus_id_corpus", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("corpus_id", "content_hash", name="pk_file_claim"),
    )


def downgrade() -> None:
    op.drop_table("file_claim")
