"""A report's results as files: every item as JSONL or CSV, and the uploaded benchmark without
the items a report flagged, in the benchmark's own format."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Collection, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from contam.app.core.types import Status
from contam.app.errors import InputError
from contam.app.limits import Limits
from contam.app.readers.benchmark import (
    DEFAULT_LIMITS,
    benchmark_format,
    benchmark_records,
    csv_separator,
    headerless_columns,
    json_layout,
    open_content,
)

CSV_COLUMNS = [
    "item_id", "row", "status", "score", "reason", "tokens", "own_tokens", "own_coverage", "coverage",
    "longest_match", "longest_match_share", "own_bits", "ngram_overlap", "question_found", "answer_found",
    "answer_with_question", "passage_found", "best_document", "best_corpus", "text",
]  # fmt: skip
MEDIA_TYPES = {"jsonl": "application/x-ndjson", "csv": "text/csv"}


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """A text a spreadsheet would run as a formula (=, +, -, @, tab, CR first) gets a leading
    apostrophe (OWASP's CSV injection advice); numbers and other text are written as they are."""
    return f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def csv_row(item: dict[str, Any]) -> list[Any]:
    """One item (a stored item, or ItemResult.as_dict() with its row as `idx` and its `text`) as
    CSV_COLUMNS; `text`, the item as the dashboard shows it (its first 4,000 characters), last:
    a sheet of ids and figures named no item's words (a new user's trial)."""
    m, ev = item["metrics"], (item["evidence"][0] if item["evidence"] else {})
    return [_cell(v) for v in [
        item["item_id"], item["idx"], item["status"], item["score"], item["reason"], m["tokens"], m["own_tokens"],
        m["own_coverage"], m["coverage"], m["longest_match"], m.get("longest_match_share", ""), m["own_bits"],
        m["ngram_overlap"], item["question_found"], item["answer_found"], item["answer_with_question"],
        item.get("passage_found", ""), ev.get("document_id", ""), ev.get("corpus", ""), item.get("text", ""),
    ]]  # fmt: skip


def export_items(items: list[dict[str, Any]], fmt: str) -> tuple[bytes, str]:
    """Stored items (as the store returns them) as JSONL or CSV; the bytes and their media type."""
    if fmt == "jsonl":
        return "".join(json.dumps(i) + "\n" for i in items).encode(), MEDIA_TYPES[fmt]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(CSV_COLUMNS)
        w.writerows(csv_row(i) for i in items)
        return buf.getvalue().encode(), MEDIA_TYPES[fmt]
    raise InputError(f"unknown export format {fmt!r} (use jsonl or csv)")


def without_items(
    data: bytes,
    filename: str,
    statuses: Mapping[int, str],
    drop: Collection[Status],
    limits: Limits = DEFAULT_LIMITS,
) -> tuple[bytes, str]:
    """The benchmark file `data` without the records whose status (by record index) is in
    `drop`, in its own format (compression dropped); the bytes and a file name for them. `limits`:
    what reading it may take (the server's, as when its items were read).

    What is kept is the file as it was, less the dropped records: JSON lines are the file's own
    lines; CSV and TSV rows are the file's cells, its header row (or none, as MMLU's files) and
    line endings; a JSON object keeps what holds the items; Parquet and Arrow keep their schema
    and column types, an empty subset included. (Records written anew from what the reader made of
    them turned a JSON list in a CSV cell into a Python one, gave MMLU's files a header row, and
    dropped a JSON object's other keys: a new user's trial.)"""
    fmt, comp = benchmark_format(filename)
    rows = [row for row, _rec in benchmark_records(data, filename, limits)]
    keep = [i for i in range(len(rows)) if statuses.get(i) not in drop]
    # the two subsets the dashboard offers, named apart: both were "NAME.clean.jsonl" (a session's note)
    subset = "clean-unflagged" if Status.SUSPICIOUS in drop else "clean"
    out_name = f"{filename.rsplit('.', 2 if comp else 1)[0]}.{subset}.{fmt}"
    if fmt in ("parquet", "arrow") and not comp:
        return _table_rows(data, fmt, keep), out_name
    with open_content(data, filename, limits.decompressed_bytes) as stream:
        raw = stream.read()
    if fmt in ("parquet", "arrow"):
        return _table_rows(raw, fmt, keep), out_name
    if fmt == "jsonl" or (fmt == "json" and json_layout(io.BufferedReader(io.BytesIO(raw)))[0] == "lines"):
        wanted = {rows[i] for i in keep}  # a JSON line's row is its line number
        return b"".join(line for n, line in enumerate(io.BytesIO(raw), 1) if n in wanted), out_name
    if fmt == "json":
        return _json_rows(raw, len(rows), keep), out_name
    return _csv_rows(raw, "\t" if fmt == "tsv" else ",", len(rows), keep), out_name


def _table_rows(data: bytes, fmt: str, rows: list[int]) -> bytes:
    """Rows `rows` of a Parquet file or an Arrow stream or file, with its schema."""
    keep = pa.array(rows, type=pa.int64())
    sink = io.BytesIO()
    if fmt == "parquet":
        parquet = pq.ParquetFile(io.BytesIO(data))  # read once: its codecs, then its rows
        meta = parquet.metadata
        named = {"UNCOMPRESSED": "none", "LZ4_RAW": "lz4"}  # as write_table names them
        codecs: str | dict[str, str] = "snappy"
        if meta.num_row_groups:  # each column's own, as the file's first row group has it
            group = meta.row_group(0)
            codecs = {
                group.column(i).path_in_schema: named.get(c, c.lower())
                for i in range(group.num_columns)
                for c in [group.column(i).compression]
            }
        pq.write_table(parquet.read().take(keep), sink, compression=codecs)
        return sink.getvalue()
    try:
        table, new = pa.ipc.open_stream(data).read_all(), pa.ipc.new_stream  # as save_to_disk writes
    except pa.ArrowInvalid:  # the file format: written back as one (it came back as a stream)
        table, new = pa.ipc.open_file(data).read_all(), pa.ipc.new_file
    with new(sink, table.schema) as writer:
        writer.write_table(table.take(keep))
    return sink.getvalue()


def _json_rows(raw: bytes, n: int, keep: list[int]) -> bytes:
    """A JSON array of `n` items, or an object holding one, with only items `keep`."""
    try:
        doc = json.loads(raw.decode("utf-8-sig"))
    except (ValueError, RecursionError) as exc:  # read as records, refused whole: never a server error
        raise InputError(f"the benchmark file cannot be written back as JSON ({type(exc).__name__})") from exc
    if isinstance(doc, list):
        doc = [doc[i] for i in keep]
    else:
        for key, value in doc.items():  # the array of objects the reader took the items from
            if isinstance(value, list) and len(value) == n and all(isinstance(v, dict) for v in value):
                doc[key] = [value[i] for i in keep]
                break
    try:
        return json.dumps(doc, ensure_ascii=False, indent=1).encode()
    except UnicodeEncodeError:  # a lone surrogate the file held escaped: escaped again
        return json.dumps(doc, indent=1).encode()


def _csv_rows(raw: bytes, delimiter: str, n: int, keep: list[int]) -> bytes:
    """A CSV or TSV file's header row (if it has one) and rows `keep` of its `n`, each cell as
    the file has it, with the file's line ending."""
    text = raw.decode("utf-8")
    delimiter = csv_separator(text.removeprefix("\ufeff")[: 1 << 16], delimiter)  # as the reader took it
    rows = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), delimiter=delimiter)
    table = [r for r in rows if r]  # as DictReader skips
    head = [] if headerless_columns(raw, delimiter) is not None else table[:1]
    body = table[len(head) :]
    if len(body) != n:  # not the rows the reader read: never a subset of other rows
        raise InputError(f"the benchmark file reads as {n} items but {len(body)} rows: no clean subset")
    # the first line ending outside a quoted cell (a cell may hold a line break of its own)
    ending = next((m[1] for m in re.finditer(r'"(?:[^"]|"")*"|(\r\n|\r|\n)', text) if m[1]), "\n")
    bom = "\ufeff" if text.startswith("\ufeff") else ""  # kept: spreadsheets read UTF-8 by it
    return (bom + "".join(_csv_line(row, delimiter) + ending for row in head + [body[i] for i in keep])).encode()


def _csv_line(cells: list[str], delimiter: str) -> str:
    """One row, a cell quoted where it holds the delimiter, a quote or a line break of either
    kind (csv.writer quotes only the characters of its own line ending: a cell's CR went out bare
    beside LF endings, a line break to any reader)."""
    special = (delimiter, '"', "\r", "\n")
    if cells == [""]:  # a row of one empty cell, not an empty line (which readers skip)
        return '""'
    return delimiter.join('"' + c.replace('"', '""') + '"' if any(ch in c for ch in special) else c for c in cells)
