"""Benchmark files -> BenchmarkItem, with fields mapped to roles.

Formats: JSONL, JSON (an array, or an object holding one), CSV/TSV, Parquet; optionally .gz
or .zst compressed. Roles are detected from common field names (MMLU, GSM8K, HumanEval, ARC,
HellaSwag, TruthfulQA, SQuAD, BIG-bench); a mapping {role: field} overrides detection.
Errors name the problem and, where there is one, the line or row.
"""

from __future__ import annotations

import csv
import gzip
import io
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from app.core.types import BenchmarkItem
from app.errors import InputError

QUESTION_KEYS = ("question", "prompt", "input", "problem", "ctx", "goal", "query", "instruction", "sentence", "text")
PASSAGE_KEYS = ("passage", "context", "paragraph", "article", "story")
CHOICE_KEYS = ("choices", "options", "endings", "mc1_targets", "candidates")
ANSWER_KEYS = (
    "answer",
    "canonical_solution",
    "solution",
    "target",
    "best_answer",
    "answers",
    "label",
    "answerKey",
    "answer_key",
    "expected_index",
    "gold",
    "correct_answer",
    "output",
)
ID_KEYS = ("id", "task_id", "idx", "uid", "question_id", "qid")
LETTER_COLUMNS = [
    ("A", "B", "C", "D", "E"),
    ("answer_a", "answer_b", "answer_c", "answer_d", "answer_e"),
    ("option_a", "option_b", "option_c", "option_d", "option_e"),
    ("choice_a", "choice_b", "choice_c", "choice_d", "choice_e"),
    ("opa", "opb", "opc", "opd", "ope"),
    ("ending0", "ending1", "ending2", "ending3"),
]


def detect_format(filename: str) -> tuple[str, str | None]:
    """(format, compression) from the file name."""
    name = filename.lower()
    comp = None
    for suffix, kind in ((".gz", "gzip"), (".zst", "zstd"), (".zstd", "zstd")):
        if name.endswith(suffix):
            name, comp = name[: -len(suffix)], kind
            break
    for fmt, exts in (
        ("jsonl", (".jsonl", ".ndjson")),
        ("json", (".json",)),
        ("csv", (".csv",)),
        ("tsv", (".tsv",)),
        ("parquet", (".parquet",)),
    ):
        if name.endswith(exts):
            return fmt, comp
    raise InputError(
        f"{filename}: unsupported benchmark file type (use .jsonl, .json, .csv, .tsv or .parquet, "
        "optionally .gz or .zst)"
    )


def decompress(data: bytes, comp: str | None, filename: str) -> bytes:
    try:
        if comp == "gzip":
            return gzip.decompress(data)
        if comp == "zstd":
            return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    except (OSError, EOFError, zlib.error, Exception) as exc:
        raise InputError(f"{filename}: cannot decompress ({type(exc).__name__}: {exc})") from exc
    return data


def _text(data: bytes, filename: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            f"{filename}: not UTF-8 text (invalid byte at line {line}); re-encode the file as UTF-8"
        ) from exc


def read_records(data: bytes, filename: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number from 1, record) of a benchmark file."""
    fmt, comp = detect_format(filename)
    data = decompress(data, comp, filename)
    if not data.strip():
        raise InputError(f"{filename}: the file is empty")
    if fmt == "jsonl":
        for lineno, line in enumerate(_text(data, filename).splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise InputError(f"{filename}: line {lineno} is not valid JSON ({exc})") from exc
            if not isinstance(obj, dict):
                raise InputError(f"{filename}: line {lineno} is not a JSON object")
            yield lineno, obj
    elif fmt == "json":
        try:
            obj = orjson.loads(_text(data, filename))
        except orjson.JSONDecodeError as exc:
            raise InputError(f"{filename}: not valid JSON ({exc})") from exc
        if isinstance(obj, dict):
            arrays = [v for v in obj.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
            if len(arrays) != 1:
                raise InputError(f"{filename}: a JSON object must hold exactly one array of items")
            obj = arrays[0]
        if not isinstance(obj, list):
            raise InputError(f"{filename}: JSON must be an array of objects")
        for i, rec in enumerate(obj, 1):
            if not isinstance(rec, dict):
                raise InputError(f"{filename}: item {i} is not a JSON object")
            yield i, rec
    elif fmt in ("csv", "tsv"):
        text = _text(data, filename)
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t" if fmt == "tsv" else ",")
        if not reader.fieldnames:
            raise InputError(f"{filename}: no header row")
        for i, rec in enumerate(reader, 2):
            if None in rec:
                raise InputError(f"{filename}: row {i} has more columns than the header")
            yield i, dict(rec)
    else:
        try:
            table = pq.read_table(io.BytesIO(data))
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{filename}: not a readable Parquet file ({exc})") from exc
        for i, rec in enumerate(table.to_pylist(), 1):
            yield i, rec


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return " ".join(_as_text(v) for v in value)
    if isinstance(value, dict):
        for k in ("text", "answer", "value"):
            if k in value:
                return _as_text(value[k])
    return str(value)


def _first(rec: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    lower = {k.lower(): k for k in rec}
    for k in keys:
        if k.lower() in lower and rec[lower[k.lower()]] not in (None, "", [], {}):
            return lower[k.lower()]
    return None


def _choices(value: Any) -> tuple[list[str], list[Any]]:
    """(choice texts, labels) from a list, ARC's {text, label}, TruthfulQA's {choices, labels} or
    BIG-bench's {choice: score}."""
    if isinstance(value, list):
        return [_as_text(v) for v in value], []
    if isinstance(value, dict):
        if "text" in value and isinstance(value["text"], list):
            return [_as_text(v) for v in value["text"]], list(value.get("label", []))
        if "choices" in value and isinstance(value["choices"], list):
            return [_as_text(v) for v in value["choices"]], list(value.get("labels", []))
        return [str(k) for k in value], list(value.values())
    if isinstance(value, str) and value.strip():
        return [value], []
    return [], []


def detect_mapping(rec: Mapping[str, Any]) -> dict[str, Any]:
    """Role -> field name (or list of field names for lettered choice columns)."""
    mapping: dict[str, Any] = {}
    q = _first(rec, QUESTION_KEYS)
    if q:
        mapping["question"] = q
    p = _first(rec, PASSAGE_KEYS)
    if p and p != q:
        mapping["passage"] = p
    c = _first(rec, CHOICE_KEYS)
    if c:
        mapping["choices"] = c
    elif "target_scores" in rec:
        mapping["choices"] = "target_scores"
    else:
        for cols in LETTER_COLUMNS:
            present = [k for k in cols if k in rec]
            if len(present) >= 2:
                mapping["choices"] = present
                break
    a = _first(rec, tuple(k for k in ANSWER_KEYS if k not in (mapping.get("choices"), q, p)))
    if a:
        mapping["answer"] = a
    elif "target_scores" in rec:
        mapping["answer"] = "target_scores"
    i = _first(rec, ID_KEYS)
    if i:
        mapping["id"] = i
    return mapping


def _answer(value: Any, choices: list[str], labels: list[Any]) -> str:
    """The answer's text: an index or letter into the choices, a label, or text itself."""
    if isinstance(value, dict) and choices and labels and all(isinstance(v, (int, float)) for v in value.values()):
        best = max(value, key=lambda k: value[k])  # BIG-bench target_scores
        return str(best)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int) and choices:
        if labels and value in labels and len(labels) == len(choices) and not all(isinstance(x, int) for x in labels):
            return choices[labels.index(value)]
        if 0 <= value < len(choices):
            return choices[value]
    if isinstance(value, str) and choices:
        s = value.strip()
        if labels and s in [str(x) for x in labels]:
            return choices[[str(x) for x in labels].index(s)]
        if len(s) == 1 and s.upper() in "ABCDEFGHIJ" and ord(s.upper()) - 65 < len(choices):
            return choices[ord(s.upper()) - 65]
        if s.isdigit() and int(s) < len(choices) and len(choices) > 1:
            return choices[int(s)]
    if isinstance(value, list) and labels and choices and len(value) == len(choices):
        picked = [c for c, flag in zip(choices, value, strict=True) if flag]
        return " ".join(picked)
    return _as_text(value)


def to_item(row: int, rec: dict[str, Any], mapping: Mapping[str, Any]) -> BenchmarkItem:
    def get(field: Any) -> Any:
        if isinstance(field, list):
            return [rec.get(f) for f in field]
        return rec.get(field)

    choices: list[str] = []
    labels: list[Any] = []
    if "choices" in mapping:
        choices, labels = _choices(get(mapping["choices"]))
        if isinstance(mapping["choices"], list):
            choices = [_as_text(v) for v in get(mapping["choices"]) if v not in (None, "")]
    answer = ""
    if "answer" in mapping:
        value = get(mapping["answer"])
        if mapping.get("answer") == "target_scores" and isinstance(value, dict):
            answer = str(max(value, key=lambda k: value[k])) if value else ""
        else:
            answer = _answer(value, choices, labels)
    ident = get(mapping["id"]) if "id" in mapping else None
    return BenchmarkItem(
        item_id=_as_text(ident) if ident not in (None, "") else str(row),
        row=row,
        question=_as_text(get(mapping["question"])) if "question" in mapping else "",
        passage=_as_text(get(mapping["passage"])) if "passage" in mapping else "",
        choices=tuple(choices),
        answer=answer,
        raw=rec,
    )


def read_benchmark(
    data: bytes, filename: str, mapping: Mapping[str, Any] | None = None, max_items: int | None = None
) -> tuple[list[BenchmarkItem], dict[str, Any]]:
    """Items of a benchmark file and the role mapping used."""
    items: list[BenchmarkItem] = []
    used: dict[str, Any] | None = dict(mapping) if mapping else None
    unknown = set(used or {}) - {"question", "passage", "choices", "answer", "id"}
    if unknown:
        raise InputError(
            f"unknown role(s) in field mapping: {', '.join(sorted(unknown))} "
            "(roles: question, passage, choices, answer, id)"
        )
    for row, rec in read_records(data, filename):
        if used is None or "question" not in used:
            detected = detect_mapping(rec)
            used = {**detected, **(used or {})}
            if "question" not in used:
                raise InputError(
                    f"{filename}: row {row}: no question field found among {sorted(rec)}; "
                    "give a field mapping such as question=<field>"
                )
        for role, f in used.items():
            fields = f if isinstance(f, list) else [f]
            if role in ("question",) and not any(x in rec for x in fields):
                raise InputError(f"{filename}: row {row} has no field {f!r} (mapped to {role})")
        items.append(to_item(len(items), rec, used))
        if max_items is not None and len(items) > max_items:
            raise InputError(f"{filename}: more than {max_items} items")
    if not items:
        raise InputError(f"{filename}: no items in the file")
    return items, used or {}
