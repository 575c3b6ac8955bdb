"""Reports and their items.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "report",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("filename", sa.Text(), nullable=False),
        sa.Column("file_hash", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text()),
        sa.Column("total_items", sa.Integer(), nullable=False),
        sa.Column("done_items", sa.Integer(), nullable=False),
        sa.Column("corpora", sa.Text(), nullable=False),
        sa.Column("mapping", sa.Text(), nullable=False),
        sa.Column("thresholds", sa.Text(), nullable=False),
        sa.Column("fingerprint", sa.String(32), nullable=False),
        sa.Column("config", sa.Text(), nullable=False),
        sa.Column("software_version", sa.String(32), nullable=False),
        sa.Column("summary", sa.Text()),
        sa.Column("upload", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.PrimaryKeyConstraint("id", name="pk_report"),
    )
    op.create_table(
        "report_item",
        sa.Column("report_id", sa.String(32), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("roles_found", sa.String(64), nullable=False),
        sa.Column("corpora_found", sa.Text(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["report_id"], ["report.id"], name="fk_report_item_report_id_report",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("report_id", "idx", name="pk_report_item"),
    )
    op.create_index("ix_report_item_report_id_status", "report_item", ["report_id", "status"])


def downgrade() -> None:
    op.drop_index("ix_report_item_report_id_status", table_name="report_item")
    op.drop_table("report_item")
    op.drop_table("report")
