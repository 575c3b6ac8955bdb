"""Report items' search text: report_item.search, the item as shown, whole and casefolded.

The item list's text search compared lower(text) with the query lowered. SQLite's lower() (and
PostgreSQL's under the C locale) folds ASCII only, so "Какой" did not find "Какой" unless typed
in lower case; and `text` holds the first 4,000 characters (what the list shows), so a word past
them was never found. `search` holds the whole item as shown, folded by Python (NFKC and casefolded),
and the query is folded the same way. Existing rows are filled from the item each keeps in `data`,
a page of rows at a time (200,000 report items took 6 s on SQLite and 8 s on PostgreSQL).

Revision ID: 0016_report_item_search
Revises: 0015_file_text_field
Create Date: 2026-12-05
"""

import json
import unicodedata

import sqlalchemy as sa
from alembic import op

revision = "0016_report_item_search"
down_revision = "0015_file_text_field"
branch_labels = None
depends_on = None

PAGE = 1000  # rows read and written at a time


def shown(item: dict) -> str:
    """BenchmarkItem.display_text of the item a report keeps (data["item"]), as of this revision."""
    choices = item.get("choices") or []
    parts = [item.get("passage") or "", item.get("question") or ""]
    parts += [f"{chr(65 + i)}. {c}" for i, c in enumerate(choices)] if len(choices) <= 26 else []
    if item.get("solution"):
        parts.append(f"Solution: {item['solution']}")
    if item.get("answer"):
        parts.append(f"Answer: {item['answer']}")
    return "\n".join(p for p in parts if p)


def folded(text: str) -> str:
    """app.core.text.search_folded as of this revision: NFKC, casefolded, "i" + U+0307 as "i"."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold()).replace("i\u0307", "i")


def upgrade() -> None:
    op.add_column("report_item", sa.Column("search", sa.Text(), nullable=False, server_default=""))
    bind = op.get_bind()
    after = ("", -1)
    while True:  # page by key: SQLite must not update a table a select still reads
        rows = bind.execute(
            sa.text(
                "SELECT report_id, idx, text, data FROM report_item WHERE (report_id, idx) > (:r, :i) "
                "ORDER BY report_id, idx LIMIT :n"  # a row value: the primary key's index finds the page
            ),
            {"r": after[0], "i": after[1], "n": PAGE},
        ).all()
        if not rows:
            return
        updates = []
        for report_id, idx, text, data in rows:
            item = (json.loads(data) or {}).get("item")
            updates.append({"r": report_id, "i": idx, "s": folded(shown(item) if item else text)})
        bind.execute(sa.text("UPDATE report_item SET search = :s WHERE report_id = :r AND idx = :i"), updates)
        after = (rows[-1][0], rows[-1][1])


def downgrade() -> None:
    op.drop_column("report_item", "search")
