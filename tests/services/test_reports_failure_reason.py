"""A failed report's error is one line, without a database error's statement or parameters."""

from __future__ import annotations

import sqlite3

from sqlalchemy.exc import IntegrityError

from contam.app.services.reports import FAILURE_CHARS, failure_reason


def test_a_database_error_is_one_short_line_without_its_statement() -> None:
    orig = sqlite3.IntegrityError("UNIQUE constraint failed: report_item.report_id, report_item.idx")
    params = [{"text": "an item's long text " * 500}]
    exc = IntegrityError("INSERT INTO report_item (report_id, idx, data) VALUES (?, ?, ?)", params, orig)
    reason = failure_reason(exc)
    assert reason == "IntegrityError: UNIQUE constraint failed: report_item.report_id, report_item.idx"
    assert "\n" not in reason and "INSERT" not in reason


def test_a_long_message_is_cut() -> None:
    reason = failure_reason(ValueError("x" * 5000 + "\nsecond line"))
    assert len(reason) <= FAILURE_CHARS and "\n" not in reason and reason.startswith("ValueError: xxx")
