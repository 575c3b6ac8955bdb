"""Report job leases: which server runs a report's job (owner), until when (lease_until).

Several servers may share one database (behind a load balancer, or a second `contam serve`
started by mistake). A server used to resume every queued or running report at start, so a
second server re-ran, and corrupted, a job a live server was running. Now the server that
submits or takes up a job holds it under a lease it renews while it lives; another server
takes up only jobs whose lease ran out (their server died), and every write of a job is fenced
by its owner, so a job taken over stops at its next write. lease_until is seconds since the
epoch on the database's clock, so the servers' clocks do not matter.

Revision ID: 0008_report_lease
Revises: 0007_report_read_items
Create Date: 2026-12-01
"""
import sqlalchemy as sa
from alembic import op

revision = "0008_report_lease"
down_revision = "0007_report_read_items"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # reports left by an older server have no owner: any server may take them up
    op.add_column("report", sa.Column("owner", sa.String(length=64), nullable=True))
    op.add_column("report", sa.Column("lease_until", sa.Float(), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE report DROP COLUMN lease_until")
    op.execute("ALTER TABLE report DROP COLUMN owner")
