"""Limits on what one request or upload may make the server hold: defined once here (the
settings take their defaults from `Limits`), enforced where input is read, each refusal naming
the setting that bounds it (a LimitError, answered 413)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from contam.app.core import _native
from contam.app.core.units import MiB, as_mib
from contam.app.errors import InputError, LimitError

if TYPE_CHECKING:
    from contam.app.core.types import BenchmarkItem

MAX_ITEM_POSITION = 2**31 - 1  # the largest item position (`idx`) a report keeps: a 32-bit INTEGER column


@dataclass(frozen=True)
class Limits:
    """What one upload or request may hold. Each field has a CONTAM_MAX_... setting (README)."""

    decompressed_bytes: int = 256 * MiB  # a benchmark's bytes after decompression (counted while inflating)
    items: int = 100_000  # items in one benchmark
    item_chars: int = 100_000  # characters in one field of one item
    check_chars: int = 1_000_000  # characters in one /check request, all texts and items together
    check_items: int = 1000  # texts and items in one /check request (answered within it; more: a report)
    json_depth: int = 32  # nesting of a JSON request body or of the mapping/thresholds form fields
    csv_field_chars: int = 1_000_000  # characters in one CSV/TSV field
    line_bytes: int = 16 * MiB  # bytes in one line of a JSON lines or CSV/TSV benchmark (refused while read)

    @property
    def json_body_bytes(self) -> int:
        """The largest JSON request body: room for `check_chars` escaped characters (\\uXXXX is
        six bytes) and the structure around them."""
        return 6 * self.check_chars + MiB


SETTING = {
    "decompressed_bytes": "CONTAM_MAX_DECOMPRESSED_MB",
    "items": "CONTAM_MAX_ITEMS",
    "item_chars": "CONTAM_MAX_ITEM_CHARS",
    "check_chars": "CONTAM_MAX_CHECK_CHARS",
    "check_items": "CONTAM_MAX_CHECK_ITEMS",
    "json_depth": "CONTAM_MAX_JSON_DEPTH",
    "csv_field_chars": "CONTAM_MAX_CSV_FIELD_CHARS",
    "line_bytes": "CONTAM_MAX_LINE_MB",
    "upload_bytes": "CONTAM_MAX_UPLOAD_MB",
    "json_body_bytes": "CONTAM_MAX_CHECK_CHARS",  # a JSON body may hold 6 bytes a character and a MiB
}


def exceeded(limit: str, value: int, what: str) -> LimitError:
    """The error for `what` going over `limit` (a Limits field name, or upload_bytes)."""
    shown = as_mib(value) if limit.endswith("_bytes") else f"{value:,}"
    setting = SETTING[limit]
    if limit == "json_body_bytes":  # a bound the setting makes, not the setting: say how (a trial)
        setting = f"six bytes a character of {setting}, {(value - MiB) // 6:,}, and 1 MiB"
    return LimitError(f"{what} exceeds the limit of {shown} ({setting})", {"limit": SETTING[limit], "value": value})


def check_item(item: BenchmarkItem, where: str, item_chars: int, again: str, row: str = "") -> None:
    """Refuse an item with a field over `item_chars` characters (CONTAM_MAX_ITEM_CHARS) or holding
    a NUL character (which PostgreSQL cannot store), naming the item (after `where`, a file's
    name or nothing), its `row` as said after it, and the field. Joined, not formatted: an id or
    a file name holding braces was a KeyError there (a README audit: `{"id": "{x}"}` with a NUL
    was a 500)."""
    said = f"{where}item {item.item_id[:80]!r}{row}"
    for name, text in item.named_texts():
        if len(text) > item_chars:
            raise exceeded("item_chars", item_chars, f"{said}, field {name} ({len(text):,} characters)")
        if "\x00" in text:
            raise InputError(f"{said}, field {name} holds a NUL character; remove it and {again}")


def check_json_depth(raw: bytes | str, max_depth: int, what: str = "the JSON body") -> None:
    """Refuse JSON nested deeper than `max_depth` before it is parsed (parsers recurse): one pass in
    C over the bytes (_native.json_depth; a regular expression for the strings took time in the
    square of a run of escaped quotes, 10 s for 60 KB, before the API key was asked for; a review)."""
    data = raw.encode() if isinstance(raw, str) else raw
    if _native.json_depth(data, max_depth) > max_depth:
        raise exceeded("json_depth", max_depth, f"the nesting of {what}")
