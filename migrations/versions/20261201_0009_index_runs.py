"""Index runs: which indexing runs are writing into a corpus, under a lease.

A corpus could be deleted or renamed while `contam index` was writing into it (only report
jobs were checked): on PostgreSQL the run's next commit then failed on a foreign key, or wrote
under the new name unseen. Each run now records itself here while it runs and renews its
lease (seconds since the epoch on the database's clock); delete and rename refuse while a run
whose lease has not run out holds the corpus. A killed run's row stays until its lease lapses.

Revision ID: 0009_index_runs
Revises: 0008_report_lease
Create Date: 2026-12-01
"""
import sqlalchemy as sa
from alembic import op

revision = "0009_index_runs"
down_revision = "0008_report_lease"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "index_run",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("corpus_id", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(length=64), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["corpus_id"], ["corpus.id"], name="fk_index_run_corpus_id_corpus", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_index_run"),
    )


def downgrade() -> None:
    op.drop_table("index_run")
