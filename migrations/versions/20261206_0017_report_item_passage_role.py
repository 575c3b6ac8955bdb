"""Report items found by their passage field: report_item.roles_found lists "passage".

The item list filters by the fields found (`field=`), read from roles_found; a passage field is
looked for apart (`passage_found`) and was not among them, so `field=passage` listed no item of a
report made before it was, while the report's summary counted them. Existing rows whose result
(`data`) says passage_found gain it, a page of rows at a time, as 0016 fills its column.

Revision ID: 0017_report_item_passage_role
Revises: 0016_report_item_search
Create Date: 2026-12-06
"""

import json
from collections.abc import Callable

import sqlalchemy as sa
from alembic import op

revision = "0017_report_item_passage_role"
down_revision = "0016_report_item_search"
branch_labels = None
depends_on = None

PAGE = 1000  # rows read and written at a time


def _roles(found: str, passage: bool) -> str:
    """roles_found (",question,answer,") with "passage" last if `passage`, without it otherwise."""
    roles = [r for r in found.strip(",").split(",") if r and r != "passage"] + (["passage"] if passage else [])
    return "," + ",".join(roles) + ","


def _rewrite(passage_of: Callable[[str], bool]) -> None:
    """roles_found of every row, "passage" in it where `passage_of` its data."""
    bind = op.get_bind()
    after = ("", -1)
    while True:  # page by key: SQLite must not update a table a select still reads
        rows = bind.execute(
            sa.text(
                "SELECT report_id, idx, roles_found, data FROM report_item WHERE (report_id, idx) > (:r, :i) "
                "ORDER BY report_id, idx LIMIT :n"
            ),
            {"r": after[0], "i": after[1], "n": PAGE},
        ).all()
        if not rows:
            return
        updates = [
            {"r": report_id, "i": idx, "f": new}
            for report_id, idx, found, data in rows
            if (new := _roles(found, passage_of(data))) != found
        ]
        if updates:
            bind.execute(sa.text("UPDATE report_item SET roles_found = :f WHERE report_id = :r AND idx = :i"), updates)
        after = (rows[-1][0], rows[-1][1])


def upgrade() -> None:
    _rewrite(lambda data: bool((json.loads(data) or {}).get("passage_found")))


def downgrade() -> None:
    _rewrite(lambda _data: False)
