"""A report's results as files: every item as JSONL or CSV, and the uploaded benchmark without
the items a report flagged, in the benchmark's own format."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Collection, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from contam.app.core.types import Status
from contam.app.errors import InputError
from contam.app.readers.benchmark import benchmark_format, benchmark_records

CSV_COLUMNS = [
    "item_id", "row", "status", "score", "reason", "tokens", "own_tokens", "own_coverage", "coverage",
    "longest_match", "longest_match_share", "own_bits", "ngram_overlap", "question_found", "answer_found",
    "answer_with_question", "passage_found", "best_document", "best_corpus",
]  # fmt: skip
MEDIA_TYPES = {"jsonl": "application/x-ndjson", "csv": "text/csv"}


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """A text a spreadsheet would run as a formula (=, +, -, @, tab, CR first) gets a leading
    apostrophe (OWASP's CSV injection advice); numbers and other text are written as they are."""
    return f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def csv_row(item: dict[str, Any]) -> list[Any]:
    """One item (a stored item, or ItemResult.as_dict() with its row as `idx`) as CSV_COLUMNS."""
    m, ev = item["metrics"], (item["evidence"][0] if item["evidence"] else {})
    return [_cell(v) for v in [
        item["item_id"], item["idx"], item["status"], item["score"], item["reason"], m["tokens"], m["own_tokens"],
        m["own_coverage"], m["coverage"], m["longest_match"], m.get("longest_match_share", ""), m["own_bits"],
        m["ngram_overlap"], item["question_found"], item["answer_found"], item["answer_with_question"],
        item.get("passage_found", ""), ev.get("document_id", ""), ev.get("corpus", ""),
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
    data: bytes, filename: str, statuses: Mapping[int, str], drop: Collection[Status]
) -> tuple[bytes, str]:
    """The benchmark file `data` without the records whose status (by record index) is in
    `drop`, in its own format (compression dropped); the bytes and a file name for them."""
    fmt, comp = benchmark_format(filename)
    keep = [rec for i, (_row, rec) in enumerate(benchmark_records(data, filename)) if statuses.get(i) not in drop]
    out_name = f"{filename.rsplit('.', 2 if comp else 1)[0]}.clean.{fmt}"
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in keep).encode(), out_name
    if fmt == "json":
        return json.dumps(keep, ensure_ascii=False, indent=1).encode(), out_name
    if fmt in ("csv", "tsv"):
        buf = io.StringIO()
        cols = list(keep[0]) if keep else list(next(iter(benchmark_records(data, filename)))[1])
        w = csv.DictWriter(buf, fieldnames=cols, delimiter="\t" if fmt == "tsv" else ",")
        w.writeheader()
        w.writerows(keep)
        return buf.getvalue().encode(), out_name
    sink = io.BytesIO()
    table = pa.Table.from_pylist(keep)
    if fmt == "arrow":  # an Arrow stream, as save_to_disk writes
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    else:
        pq.write_table(table, sink)
    return sink.getvalue(), out_name
