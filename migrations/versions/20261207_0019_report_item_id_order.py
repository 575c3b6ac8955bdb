"""Report items' sort key for their ids: report_item.id_order, each run of digits as its length and
then its value, so the items list sorted by id puts "b2" before "b10" (it sorted the ids as text,
b10 first). Existing rows are filled from their item_id, a page of rows at a time, as 0016 does.

Revision ID: 0019_report_item_id_order
Revises: 0018_report_left_out
Create Date: 2026-12-07
"""

import re

import sqlalchemy as sa
from alembic import op

revision = "0019_report_item_id_order"
down_revision = "0018_report_left_out"
branch_labels = None
depends_on = None

PAGE = 1000  # rows read and written at a time
_DIGIT_RUN = re.compile(r"[0-9]+")


def natural_key(text: str) -> str:
    """app.core.text.natural_key as of this revision."""

    def number(m: re.Match[str]) -> str:
        digits = m.group().lstrip("0") or "0"
        return f"{min(len(digits), 99):02d}{digits}"

    return _DIGIT_RUN.sub(number, text)


def upgrade() -> None:
    op.add_column("report_item", sa.Column("id_order", sa.Text(), nullable=False, server_default=""))
    bind = op.get_bind()
    after = ("", -1)
    while True:  # page by key: SQLite must not update a table a select still reads
        rows = bind.execute(
            sa.text(
                "SELECT report_id, idx, item_id FROM report_item WHERE (report_id, idx) > (:r, :i) "
                "ORDER BY report_id, idx LIMIT :n"
            ),
            {"r": after[0], "i": after[1], "n": PAGE},
        ).all()
        if not rows:
            return
        updates = [{"r": report_id, "i": idx, "k": natural_key(item_id)} for report_id, idx, item_id in rows]
        bind.execute(sa.text("UPDATE report_item SET id_order = :k WHERE report_id = :r AND idx = :i"), updates)
        after = (rows[-1][0], rows[-1][1])


def downgrade() -> None:
    # DROP COLUMN: SQLite 3.35+ and PostgreSQL alike (batch mode would reflect the table first)
    op.execute("ALTER TABLE report_item DROP COLUMN id_order")
