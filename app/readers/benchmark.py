"""Benchmark files -> BenchmarkItem, with fields mapped to roles.

Formats: JSONL, JSON (an array, an object holding one, or JSON lines), CSV/TSV (list columns
parsed; MMLU's header-less layout), Parquet, Arrow; optionally .gz or .zst compressed. The
original ARC JSONL and lm-evaluation-harness --log_samples records are flattened first.
Roles are detected from common field names (MMLU, GSM8K, HumanEval, ARC, HellaSwag,
TruthfulQA, SQuAD, BIG-bench); a mapping {role: field} overrides detection.
Errors name the problem and, where there is one, the line or row.
"""

from __future__ import annotations

import ast
import bz2
import codecs
import csv
import dataclasses
import difflib
import glob
import gzip
import io
import itertools
import lzma
import numbers
import re
import shutil
import sys
import tempfile
import zlib
from collections import Counter
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO, Protocol

import ijson
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from contam.app.core.text import UNSPACED, mostly_cjk, mostly_unspaced
from contam.app.core.types import MAX_ALTERNATIVES, BenchmarkItem, answer_of, final_answer
from contam.app.errors import InputError, cut_short, first_line
from contam.app.limits import Limits, check_item, exceeded
from contam.app.processes import temp_prefix
from contam.app.readers.corpus import ABSENT as _ABSENT
from contam.app.readers.corpus import (
    COMPRESSION_MAGIC,
    NestedTooDeep,
    ZstdReader,
    as_utf8,
    json_array_values,
    json_value,
)
from contam.app.readers.corpus import field_value as _value

DEFAULT_LIMITS = Limits()

QUESTION_KEYS = (
    "question",
    "question_stem",  # OpenBookQA
    "prompt",
    "input",
    "problem",
    "ctx",
    "goal",
    "query",
    "instruction",
    "sentence",
    "claim",  # fact checking (FEVER, SciFact)
    "statement",  # fact checking (LIAR)
    "text",
    "hypothesis",  # NLI: judged beside its premise (a passage)
    "messages",  # a chat: [{role, content}] (OpenAI's format), their contents in order
    "conversations",  # ShareGPT's [{from, value}]
    "turns",  # MT-Bench's user turns, a list of strings
)
# text an item's question is asked about, often shared by several items (a reading passage, a
# database schema); with no question field, the item's own text (a summarisation benchmark's
# article, document or dialogue, whose summary is the answer)
PASSAGE_KEYS = ("passage", "context", "paragraph", "article", "story", "premise", "document", "dialogue", "schema")
CHOICE_KEYS = ("choices", "options", "endings", "mc1_targets", "candidates")
# names of reference answers in evaluation sets (graders' `reference_answer`, `ground_truth`,
# `expected_output`): read as none, the items were scored without their answers, with no word (a
# new user's trial). Not `response` or `completion`: Dolly's reference answer, but in an
# evaluation log the model's own (ReadNotes names them when no field is read as the answer). Not
# a list of numbers either (P3's token ids beside `targets_pretokenized`, a score per choice),
# read as "0" or "1 0 0" (a review): _graded_text
GRADED_KEYS = (
    "reference_answer",
    "ground_truth",
    "golden_answer",
    "gold_answer",
    "expected_answer",
    "expected_output",
    "targets",
)
ANSWER_KEYS = (
    "answer",
    "final_answer",  # beside a worked `solution` (scored with it), the answer itself
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
    "summary",  # summarisation (XSum, SAMSum)
    "highlights",  # CNN/DailyMail
    "query",  # text-to-SQL (Spider): the SQL, where the question has a field of its own
    "code",  # MBPP: the reference solution of a task given as `text`
    "sql",  # WikiSQL: {human_readable, sel, agg, conds}
    "correct",  # AQuA-RAT, MathQA: the letter of the right option
    "answers_spans",  # DROP on Hugging Face: {spans: [...], types: [...]}
    *GRADED_KEYS,
)
# a worked solution or rationale beside a separate final answer: scored as part of the answer
SOLUTION_KEYS = ("solution", "canonical_solution", "rationale", "explanation", "reasoning")
ID_KEYS = ("id", "task_id", "idx", "uid", "question_id", "qid", "query_id")
LETTER_COLUMNS = [
    ("A", "B", "C", "D", "E"),
    ("answer_a", "answer_b", "answer_c", "answer_d", "answer_e"),
    ("option_a", "option_b", "option_c", "option_d", "option_e"),
    ("choice_a", "choice_b", "choice_c", "choice_d", "choice_e"),
    ("opa", "opb", "opc", "opd", "ope"),
    ("ending0", "ending1", "ending2", "ending3"),
]
# One column per choice, numbered or lettered after a stem: option1/option2 (WinoGrande), sol1/sol2
# (PIQA), choice1/choice2 (COPA), answerA-answerC (Social IQa)
LETTER_COLUMNS += [
    cols
    for cols in (
        tuple(f"{stem}{sep}{s}" for s in suffixes)
        for stem in ("option", "choice", "sol", "answer", "ending")
        for sep in ("", "_")
        for suffixes in ("01234", "12345", "ABCDE", "abcde")
    )
    # NarrativeQA's answer1/answer2 are two correct answers, not choices (CosmosQA's answer0-3 are)
    if cols not in LETTER_COLUMNS and not (cols[0].startswith("answer") and cols[0].endswith("1"))
]


COMPRESSIONS = ((".gz", "gzip"), (".zst", "zstd"), (".zstd", "zstd"), (".bz2", "bz2"), (".xz", "xz"))
_DECOMPRESS_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError, zstandard.ZstdError)


BENCHMARK_TYPES = ".jsonl, .ndjson, .json, .csv, .tsv or .parquet, optionally .gz, .zst, .bz2 or .xz; or .arrow"
UPLOAD_SUFFIXES = ".jsonl,.ndjson,.json,.csv,.tsv,.parquet,.arrow,.gz,.zst,.zstd,.bz2,.xz"  # the upload form's accept


def detect_format(filename: str) -> tuple[str, str | None]:
    """(format, compression) from the file name."""
    name = filename.lower()
    comp = None
    for suffix, kind in COMPRESSIONS:
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
        f"{filename}: unsupported benchmark file type (use {BENCHMARK_TYPES}; "
        "contam scan also reads a save_to_disk folder or a folder of Parquet shards)"
    )


class _ReadsInto(Protocol):
    def readinto(self, buf: Any, /) -> int | None: ...


class _Bounded(io.RawIOBase):
    """A (decompressing) stream that refuses to give more than `limit` bytes: the size is
    counted as the content is inflated, so a small bomb stops at the limit, never in memory."""

    def __init__(
        self, inner: _ReadsInto, limit: int, filename: str, owns: Sequence[IO[bytes]] = (), what: str = "content"
    ) -> None:
        self.inner, self.limit, self.filename, self.count, self.what = inner, limit, filename, 0, what
        self._owns = owns  # closed with this stream: the decompressor and the file under it

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        if not self.closed:
            for f in self._owns:
                f.close()
        super().close()

    def readinto(self, buf: Any) -> int:
        try:
            n = self.inner.readinto(buf)
        except _DECOMPRESS_ERRORS as exc:
            raise InputError(
                f"{self.filename}: cannot decompress ({type(exc).__name__}: {exc}){cut_short(exc)}"
            ) from exc
        self.count += n or 0
        if self.count > self.limit:
            raise exceeded("decompressed_bytes", self.limit, f"{self.filename}: the {self.what}")
        return n or 0


Source = bytes | Path  # a benchmark file's bytes, or the file on disk (read as a stream)


def _raw(source: Source) -> BinaryIO:
    return io.BytesIO(source) if isinstance(source, bytes) else source.open("rb")


def open_content(data: Source, filename: str, max_bytes: int) -> io.BufferedReader:
    """The file's content as a stream, decompressed on the fly, at most `max_bytes` of it.
    Closing it closes the file: the caller closes it however its reading ends (`_closing`)."""
    _fmt, comp = detect_format(filename)
    raw = _raw(data)
    inner: Any
    try:
        if comp is None:
            _refuse_unnamed_compression(raw, filename)
        if comp == "gzip":
            inner = gzip.GzipFile(fileobj=raw)
        elif comp == "zstd":
            inner = ZstdReader(raw)
        elif comp == "bz2":
            inner = bz2.BZ2File(raw)
        elif comp == "xz":
            inner = lzma.LZMAFile(raw)  # noqa: SIM115 - closed with the stream (_Bounded owns it)
        else:
            inner = raw  # BytesIO or a file opened "rb": both read into a buffer
        owns = (inner, raw) if inner is not raw else (raw,)
        what = "content" if inner is raw else "decompressed content"
        return as_utf8(io.BufferedReader(_Bounded(inner, max_bytes, filename, owns, what), buffer_size=1 << 20))
    except BaseException:
        raw.close()
        raise


def _refuse_unnamed_compression(raw: BinaryIO, filename: str) -> None:
    """A compressed file whose name does not say so was refused as "not UTF-8 text" at its first
    byte: say what it is and what to call it. `raw` is read from where it was (its start)."""
    head = raw.read(10)
    raw.seek(0)
    for magic, suffix in COMPRESSION_MAGIC:
        if magic.match(head):
            raise InputError(
                f"{filename}: the file is {suffix[1:]}-compressed but its name does not say so; "
                f"name it {filename}{suffix} (benchmark files are decompressed by their suffix)"
            )


def _closing(stream: IO[bytes], records: Iterator[tuple[int, dict[str, Any]]]) -> Iterator[tuple[int, dict[str, Any]]]:
    """`records`, read from `stream`, which is closed when they end, fail or are dropped."""
    with stream:
        yield from records


class _Prefixed(io.RawIOBase):
    """`head` (bytes already read, or put in front), then the rest of `stream`."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        self.head, self.stream = memoryview(head), stream

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        if len(self.head):
            n = min(len(buf), len(self.head))
            buf[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        data = self.stream.read(len(buf))
        buf[: len(data)] = data
        return len(data)


def _then(head: bytes, stream: BinaryIO) -> io.BufferedReader:
    return io.BufferedReader(_Prefixed(head, stream), buffer_size=1 << 20)


def decompress(data: Source, comp: str | None, filename: str, max_bytes: int = Limits.decompressed_bytes) -> bytes:
    """The whole content of a (compressed) file, at most `max_bytes` of it."""
    with open_content(data, filename, max_bytes) as stream:
        return stream.read()


def _text(data: bytes, filename: str, first_line: int = 1) -> str:
    """`data` (which starts at line `first_line` of the file) as text; bytes that are not UTF-8
    are an error naming their line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + first_line
        raise InputError(
            f"{filename}: not UTF-8 text (invalid byte at line {line}); re-encode the file as UTF-8"
        ) from exc


def _lines(stream: BinaryIO, filename: str, max_bytes: int) -> Iterator[bytes]:
    """The stream's lines, each refused as it is read once it runs past `max_bytes` without its
    line ending (a line was read whole first: one of 189 MB, 184 KB gzipped, took the server to
    1.2 GB; a probe). A file whose lines end in CR alone (old Mac tools) is cut at the CRs."""
    lineno = 0
    while line := stream.readline(max_bytes + 2):
        lineno += 1
        content = line.rstrip(b"\r\n") if line.endswith(b"\n") else line
        if len(content) > max_bytes:
            if b"\r" in content and not line.endswith(b"\n"):
                yield from _cr_lines(line, stream, filename, max_bytes, lineno)
                return
            raise exceeded("line_bytes", max_bytes, f"{filename}: line {lineno}")
        yield line


def _cr_lines(head: bytes, stream: BinaryIO, filename: str, max_bytes: int, lineno: int) -> Iterator[bytes]:
    """_lines of a file whose lines end in CR alone, from `head` (read already, starting line
    `lineno`) on: each line with its CR, refused past `max_bytes`."""
    buf = head
    while True:
        *whole, buf = buf.split(b"\r")
        for piece in whole:
            if len(piece) > max_bytes:
                raise exceeded("line_bytes", max_bytes, f"{filename}: line {lineno}")
            lineno += 1
            yield piece + b"\r"
        if len(buf) > max_bytes:
            raise exceeded("line_bytes", max_bytes, f"{filename}: line {lineno}")
        more = stream.read(1 << 20)
        if not more:
            break
        buf += more
    if buf:
        yield buf


def _jsonl(stream: BinaryIO, filename: str, max_line: int) -> Iterator[tuple[int, dict[str, Any]]]:
    for lineno, line in enumerate(_lines(stream, filename, max_line), 1):
        if not line.strip():
            continue
        text = _text(line, filename, lineno) if lineno > 1 else _text(line, filename).lstrip("\ufeff")
        try:  # without its line ending: a line cut short mid-string is then "unexpected end of
            # data", not an "unexpected control character" (the newline) inside the string
            obj = orjson.loads(text.rstrip("\r\n"))
        except orjson.JSONDecodeError as exc:
            # the decoder counts lines and columns within the one line it was given: say the column
            where = f"column {exc.colno}: " if exc.colno else ""
            raise InputError(f"{filename}: line {lineno} is not valid JSON ({where}{exc.msg})") from exc
        if not isinstance(obj, dict):
            raise InputError(f"{filename}: line {lineno} is not a JSON object")
        yield lineno, obj


def _csv(
    stream: BinaryIO, filename: str, delimiter: str, max_field: int, max_line: int
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a CSV/TSV file; a field over `max_field` characters, or a line over `max_line`
    bytes, is refused naming the limit."""
    csv.field_size_limit(max_field)  # process-wide, and every reader sets it before reading
    lines = _utf8_lines(stream, filename, max_line)
    first = list(itertools.islice(lines, 2))  # the header and a row: which separator
    # strict: a quoted field still open at the end of the file is an error, not every line after
    # a stray opening quote read into one field (rows silently lost)
    reader = csv.DictReader(
        itertools.chain(first, lines), delimiter=csv_separator("".join(first), delimiter), strict=True
    )
    i = 1
    try:
        if not reader.fieldnames:
            raise InputError(f"{filename}: no header row")
        if reader.fieldnames[0].lstrip().startswith(("{", "[")):  # JSON under a table's name (a new user)
            raise InputError(f"{filename}: the file holds JSON, not a table: name it .jsonl (or .json)")
        named = [c for c in reader.fieldnames if c.strip()]  # unnamed columns (a row's trailing commas) hold no role
        twice = [c for c in dict.fromkeys(named) if named.count(c) > 1]
        if twice:  # a dict keeps the last of them: the other column's values were dropped unseen
            raise InputError(f"{filename}: the header names column {twice[0]!r} twice; give each column its own name")
        for i, rec in enumerate(reader, 2):
            if None in rec:
                raise InputError(f"{filename}: row {i} has more columns than the header")
            if not any((v or "").strip() for v in rec.values()):
                # separators alone (a spreadsheet's empty row, ",,,"): a blank line, as the csv
                # module skips one; read as an item, each was `too_short` and lowered the
                # contaminated share a --fail-above gate compares (a new user's trial)
                continue
            yield i, dict(rec)
    except csv.Error as exc:
        if "field limit" in str(exc):
            raise exceeded("csv_field_chars", max_field, f"{filename}: a field of row {i + 1}") from exc
        if "unexpected end of data" in str(exc):
            raise InputError(
                f'{filename}: row {i + 1} opens a quoted field that is never closed (a stray " at the start of a '
                "field?): quote the whole field and double the quotes inside it"
            ) from exc
        raise InputError(f"{filename}: row {i + 1} is not valid CSV ({exc})") from exc


OTHER_SEPARATORS = ";\t|"  # a ".csv" may be separated by one of these instead of commas


def csv_separator(head: str, delimiter: str) -> str:
    """The separator of a file that starts with `head` (its first lines): a ".csv" whose header
    is one column by commas and several by semicolons is separated by semicolons, as spreadsheets
    write CSV where the comma is the decimal mark (a new user's trial: "no question field found
    among ['ID;Question;...']"); so is one whose header and first row agree by semicolons only.
    Tabs and vertical bars likewise (a trial: a tab-separated export named ".csv" was told to
    add a header row it had); of several, the one that splits the header into the most columns
    (and of those, one that splits the first row as often)."""
    lines = head.splitlines()[:2]  # the first two lines, of any ending
    if delimiter != "," or not lines or not lines[0].strip():
        return delimiter
    seps = "," + OTHER_SEPARATORS
    try:
        top, row = ({d: len(next(csv.reader([line], delimiter=d), [])) for d in seps} for line in [*lines, ""][:2])
    except csv.Error:  # the reader says what is wrong with it
        return delimiter
    for d in sorted(OTHER_SEPARATORS, key=lambda d: (-top[d], row[d] != top[d])):  # the first row agreeing first
        if top[d] < 2:
            break
        # one column by commas; or a comma inside a column's name ("answer, final"), the next row
        # as many fields by this separator as the header and not by commas
        # (a decimal comma in the row may split it as often as the header's comma: the more columns win)
        agree = row[d] == top[d] and (row[","] != top[","] or top[d] > top[","])
        if top[","] == 1 or agree:
            return d
    return delimiter


_CR_LINE = re.compile(r"(?<=\r)(?!\n)")  # after a CR that no LF follows


def _utf8_lines(stream: BinaryIO, filename: str, max_line: int) -> Iterator[str]:
    """The file's lines as text, line endings kept (as csv wants them), each decoded on its own
    so that a byte that is not UTF-8 is named by its line (decoded ahead in blocks, it was put
    "near row 352" when it was on line 502); a line over `max_line` bytes refused (_lines)."""
    for lineno, raw in enumerate(_lines(stream, filename, max_line), 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{filename}: line {lineno} is not UTF-8 text (its byte {exc.start + 1}); re-encode the file as UTF-8"
            ) from exc
        text = text.removeprefix("\ufeff") if lineno == 1 else text
        if "\r" in text.rstrip("\r\n"):  # lines ended by CR alone (old Mac tools): csv wants them apart
            yield from _CR_LINE.split(text)
        else:
            yield text


PARQUET_BATCH = 1000  # rows converted to Python at a time


def _skip_bom(stream: io.BufferedReader) -> None:
    """Step over a UTF-8 byte order mark (Windows tools write one; JSON parsers refuse it)."""
    if stream.peek(3)[:3] == codecs.BOM_UTF8:
        stream.read(3)


def _json_array(stream: io.BufferedReader, filename: str, depth: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """The items of a JSON array, or of the one array of items a JSON object holds under a key
    (`{"data": [...], "version": 2}`), parsed one at a time (ijson): memory holds an item, not
    the file; an item nested deeper than `depth` (CONTAM_MAX_JSON_DEPTH) is refused as it is read."""
    _skip_bom(stream)
    head = stream.peek(1 << 12).lstrip()
    if not head.startswith(b"["):
        yield from _json_object(stream, filename, depth)
        return
    row = 0
    try:
        for rec in json_array_values(stream, depth):
            row += 1
            if isinstance(rec, NestedTooDeep):
                raise exceeded("json_depth", depth, f"{filename}: row {row}'s nesting")
            if not isinstance(rec, dict):
                raise InputError(f"{filename}: item {row} is not a JSON object")
            yield row, rec
    except ijson.JSONError as exc:
        raise _not_json(filename, row, exc) from exc


def _not_json(filename: str, row: int, exc: Exception) -> InputError:
    """A JSON file the streaming parser could not read past an item: what it said, and for a
    whole number past 64 bits (valid JSON its parser cannot hold) what to do instead."""
    said = first_line(exc)
    if "integer overflow" in said:
        return InputError(
            f"{filename}: item {row + 1} holds a whole number longer than 64 bits, which the JSON array reader "
            "cannot hold: write it as a string, or the file as JSON lines (one item a line), which take it"
        )
    return InputError(f"{filename}: not valid JSON {_after(row)} ({said})")


def _after(row: int) -> str:
    """Where a JSON file went wrong, by the items read before it."""
    return f"after item {row}" if row else "before its first item"


def _skip_value(events: Iterator[tuple[str, Any]], event: str, value: Any) -> None:
    """Read past a JSON value that is not the items (metadata), keeping nothing, however deep."""
    json_value(events, event, value, False, sys.maxsize)


def _json_ends(events: Iterator[tuple[str, Any]], filename: str) -> None:
    """Nothing after the top-level value (JSON lines in a .json file whose first line is too long
    to tell it by would otherwise read as its first item alone)."""
    try:
        extra = next(events, None)
    except ijson.JSONError:
        extra = ("", None)
    if extra is not None:
        raise InputError(f"{filename}: more than one JSON value; if it holds an item a line, name the file .jsonl")


def _json_object(stream: io.BufferedReader, filename: str, depth: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """The items of the one array of objects a top-level JSON object holds, streamed; its other
    values (metadata, lists of strings) are skipped as they are parsed."""
    events = iter(ijson.basic_parse(stream, use_float=True))
    row, items_key = 0, None
    try:
        if next(events)[0] != "start_map":
            raise InputError(f"{filename}: JSON must be an array of objects, or an object holding one")
        for event, key in events:
            if event == "end_map":
                _json_ends(events, filename)
                break
            event, value = next(events)  # the key's value
            if event != "start_array":
                _skip_value(events, event, value)
                continue
            first = True
            for event, value in events:  # the array's elements
                if event == "end_array":
                    break
                if first and event == "start_map":  # an array of items
                    if items_key is not None:
                        raise InputError(
                            f"{filename}: a JSON object must hold exactly one array of items "
                            f"(found {items_key!r} and {key!r}); extract one, or upload them apart"
                        )
                    items_key = key
                is_items, first = items_key == key, False
                if is_items and event != "start_map":
                    raise InputError(f"{filename}: item {row + 1} under {key!r} is not a JSON object")
                if not is_items:
                    _skip_value(events, event, value)
                    continue
                try:
                    rec = json_value(events, event, value, True, depth)
                except NestedTooDeep:
                    raise exceeded("json_depth", depth, f"{filename}: row {row + 1}'s nesting") from None
                row += 1
                yield row, rec
    except ijson.JSONError as exc:
        raise _not_json(filename, row, exc) from exc
    except StopIteration:
        raise InputError(f"{filename}: the JSON ends early, {_after(row)}") from None
    if items_key is None:
        raise InputError(f"{filename}: a JSON object must hold exactly one array of items (objects)")


def _parquet(source: Source, filename: str, limits: Limits) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a Parquet file, a batch of rows at a time; its own (uncompressed) size is checked
    before the rows are read."""
    try:
        pf = pq.ParquetFile(io.BytesIO(source) if isinstance(source, bytes) else source)
        meta = pf.metadata
        size = sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))
        if size > limits.decompressed_bytes:
            raise exceeded("decompressed_bytes", limits.decompressed_bytes, f"{filename}: the uncompressed table")
        if meta.num_rows > limits.items:
            raise exceeded("items", limits.items, f"{filename}: {meta.num_rows:,} rows")
        batches = pf.iter_batches(batch_size=PARQUET_BATCH)
        row = 0
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            for rec in batch.to_pylist():
                row += 1
                yield row, rec
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{filename}: not a readable Parquet file ({exc})") from exc


def read_records(data: Source, filename: str, limits: Limits = DEFAULT_LIMITS) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number from 1, record) of a benchmark file, decompressed and parsed as a stream:
    reading stops at the first limit passed (decompressed bytes, items, CSV field size)."""
    fmt, comp = detect_format(filename)
    if fmt == "parquet" and comp is None and isinstance(data, Path):  # read in place, a batch at a time
        return _limited(_parquet(data, filename, limits), filename, limits)
    return _stream_records(open_content(data, filename, limits.decompressed_bytes), fmt, filename, limits)


def _stream_records(
    stream: io.BufferedReader, fmt: str, filename: str, limits: Limits
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Records of a (decompressed) stream in format `fmt`; the stream is closed once they end."""
    try:
        if fmt == "parquet":  # compressed, say: Parquet needs to seek, so it is spooled to disk first
            if not stream.peek(1):
                raise InputError(f"{filename}: the file is empty")
            records = _spooled_parquet(stream, filename, limits)
        elif fmt == "json":
            if not stream.peek(1 << 12).strip():
                raise InputError(f"{filename}: the file is empty")
            records = _json_array(stream, filename, limits.json_depth)
        elif not stream.peek(1):
            raise InputError(f"{filename}: the file is empty")
        elif fmt == "jsonl":
            records = _jsonl(stream, filename, limits.line_bytes)
        else:
            records = _csv(stream, filename, "\t" if fmt == "tsv" else ",", limits.csv_field_chars, limits.line_bytes)
    except BaseException:
        stream.close()
        raise
    return _limited(_closing(stream, records), filename, limits)


def _spooled_parquet(stream: io.BufferedReader, filename: str, limits: Limits) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a Parquet stream (a .parquet.gz, say), decompressed to a temporary file and read
    from there a batch at a time: memory holds a batch, not the file."""
    with tempfile.NamedTemporaryFile(prefix=temp_prefix("parquet")) as spool:
        shutil.copyfileobj(stream, spool, 1 << 20)
        spool.flush()
        yield from _parquet(Path(spool.name), filename, limits)  # by path: Arrow reads it natively


def _limited(
    records: Iterator[tuple[int, dict[str, Any]]], filename: str, limits: Limits
) -> Iterator[tuple[int, dict[str, Any]]]:
    for n, (row, rec) in enumerate(records, 1):
        if n > limits.items:
            raise exceeded("items", limits.items, f"{filename}: the number of items")
        yield row, rec


_TEXT_KEYS_IN_ORDER = (
    "text",
    "answer",
    "value",
    "human_readable",
    "content",
    "parts",
)  # an object's text, the first of these it has (content: a chat message's; parts: Gemini's)
_TEXT_KEYS = set(_TEXT_KEYS_IN_ORDER)
_LIST_KEYS = ("text", "spans")  # an answer object's list of accepted answers


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):  # empty parts left out (an instruction whose input is empty)
        return " ".join(t for v in value if (t := _as_text(v)))
    if isinstance(value, dict):
        for k in _TEXT_KEYS_IN_ORDER:
            if k in value:
                return _as_text(value[k])
        return ""  # an object with no text (an image part of a chat message, a tool call): none
    return str(value)


def _object_in(value: Any) -> dict[str, Any] | None:
    """An object in a field's value that has no text of its own (none of _TEXT_KEYS), if any,
    looked for inside the text of those that have one too (a chat message's list of parts)."""
    if isinstance(value, dict):
        key = next((k for k in _TEXT_KEYS_IN_ORDER if k in value), None)
        return value if key is None else _object_in(value[key])
    if isinstance(value, list):
        return next((o for v in value if (o := _object_in(v)) is not None), None)
    return None


def _refuse_objects(rec: Mapping[str, Any], mapping: Mapping[str, Any], filename: str, row: int) -> None:
    """Refuse a question, passage or solution field that holds objects and no text: made into their
    Python form ("{'context': ..., 'qas': [...]}") they were scanned as one item's text (SQuAD's
    original nested file, `--fields question=paragraphs`; a new user's trial). Objects without
    text beside text (an image part of a chat message, a tool call) are left out of it. An id field
    holding an object or a list is refused too."""
    for role in ("question", "passage", "solution"):
        for f in _fields(mapping.get(role, [])):
            value = _value(rec, f)
            obj = _object_in(value)
            if obj is not None and not _as_text(value).strip():
                raise InputError(
                    f"{filename}: row {row}: the {role} field {f!r} holds objects (keys: "
                    f"{', '.join(sorted(map(str, obj))[:10])}), not text; map a field that holds text (a path "
                    "such as a.b reaches inside an object, not inside a list: flatten a file that nests "
                    "its items in lists)"
                )
    ident = _value(rec, mapping["id"]) if isinstance(mapping.get("id"), str) else None
    if isinstance(ident, dict | list):  # read as text, every item's id was "" (a trial)
        what = f"an object (keys: {', '.join(sorted(map(str, ident))[:10])})" if isinstance(ident, dict) else "a list"
        raise InputError(
            f"{filename}: row {row}: the id field {mapping['id']!r} holds {what}, not an id; map a field "
            "that holds a string or a number, or none (items are then named by their row)"
        )


def _blank(value: Any) -> bool:
    """A field with nothing in it: none, or an empty string, list or object."""
    return value is None or (isinstance(value, str | list | dict) and not value)


_SEPARATORS = re.compile(r"[\s_-]+")


def _key(name: str) -> str:
    """A field name as the guess compares it: case, spaces, underscores and hyphens aside, so a
    spreadsheet's "Correct Answer" and "Option A" are correct_answer and option_a (a new user's
    trial: "Correct Answer" was not the answer, and every answer went unlooked for)."""
    return _SEPARATORS.sub("", name).lower()


def _keys(rec: Mapping[str, Any]) -> dict[str, str]:
    """The record's field names by _key (of two with one key, the first)."""
    out: dict[str, str] = {}
    for k in rec:
        out.setdefault(_key(k), k)
    return out


def _first(rec: Mapping[str, Any], keys: tuple[str, ...], text: bool = False, scalar: bool = False) -> str | None:
    """The first of `keys` the record has with a value (text: a string or a list of strings,
    not an object such as Natural Questions' `document`, its HTML and token lists; scalar: not
    an object or a list, as an id is); names compared by _key."""
    named = _keys(rec)
    for k in keys:
        field = named.get(_key(k))
        value = None if field is None else rec[field]
        if _blank(value) or (scalar and isinstance(value, dict | list)):
            continue
        if text and not (
            isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
        ):
            continue
        return field
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
        return _lettered(value) or [value], []
    return [], []


_OPTION = re.compile(r"(?:^|,\s*|\s)([a-jA-J])\s*\)\s*")


def _lettered(text: str) -> list[str]:
    """The options of one string that lists them lettered in order, MathQA's "a ) rs . 400 , b )
    rs . 300 , c ) ..." (the letter's "a )" left out, as a choice's text is); [] otherwise."""
    starts: list[tuple[int, int]] = []  # (where the letter's mark starts, where its text starts)
    for m in _OPTION.finditer(text):
        if m.group(1).lower() == "abcdefghij"[len(starts)]:
            starts.append((m.start(), m.end()))
    if len(starts) < 2 or starts[0][0] != 0:
        return []
    ends = [s for s, _e in starts[1:]] + [len(text)]
    return [text[e:end].strip().rstrip(",").strip() for (_s, e), end in zip(starts, ends, strict=True)]


def _other_than(keys: tuple[str, ...], *taken: Any) -> tuple[str, ...]:
    """`keys` but those naming a field another role took (compared by _key, as _first matches:
    "canonical solution" was the answer and the solution both, a review)."""
    gone = {_key(x) for t in taken for x in (t if isinstance(t, list) else [t]) if isinstance(x, str)}
    return tuple(k for k in keys if _key(k) not in gone)


def _graded_text(rec: Mapping[str, Any], key: str) -> bool:
    """Whether answer name `key` may be the record's answer: any but a graders' name (GRADED_KEYS)
    whose field holds a list of other than texts (token ids, a score per choice)."""
    field = _keys(rec).get(_key(key)) if key in GRADED_KEYS else None
    value = rec[field] if field is not None else None
    return not (isinstance(value, list) and not all(isinstance(v, str) for v in value))


def detect_mapping(rec: Mapping[str, Any]) -> dict[str, Any]:
    """Role -> field name (or list of field names for lettered choice columns)."""
    mapping: dict[str, Any] = {}
    q = _first(rec, QUESTION_KEYS)
    premise = _first(rec, ("premise",))
    if premise and (not q or len(str(rec[q]).split()) <= 1 < len(str(rec[premise]).split())):
        q = premise  # COPA's "question" is only "cause" or "effect": its premise is the item's text
    p = _first(rec, PASSAGE_KEYS, text=True)
    named = _keys(rec)
    if not q and not any(_key(k) in named for k in QUESTION_KEYS) and not any("question" in k for k in named):
        q = p  # no question field at all: the passage is the item's own text (an article to summarise)
    # a maths word problem's body before its question is the item's text too (SVAMP's and ASDiv's,
    # told by their equation; a forum post's body follows its title, and is no word problem)
    body = _first(rec, ("body",), text=True) if _first(rec, ("equation", "formula")) else None
    # an instruction and its input (Alpaca's layout, where many an input is empty): both, as one
    # text; taken from the first record alone, the other field's text went unread (a probe: copies
    # of the inputs "clean", of the instructions "too_short")
    task = [named[k] for k in ("instruction", "input") if k in named and not isinstance(rec[named[k]], dict)]
    if len(task) == 2 and q in task:  # a record's own question field first (a review)
        mapping["question"] = task
    elif q:
        mapping["question"] = [body, q] if body and body != q else q
    if p and p != q:
        mapping["passage"] = p
    c = _first(rec, CHOICE_KEYS)
    if c:
        mapping["choices"] = c
    elif "target_scores" in rec:
        mapping["choices"] = "target_scores"
    else:
        for cols in LETTER_COLUMNS:
            if len(cols[0]) == 1:  # single letters as written (MMLU's A-D; "a" and "b" are a sum's numbers, a review)
                present, first = [k for k in cols if k in rec], cols[0] in rec
            else:
                present, first = [named[_key(k)] for k in cols if _key(k) in named], _key(cols[0]) in named
            if len(present) >= 2 and first:  # from the first: answer1/answer2 are not answer0-4
                mapping["choices"] = present
                break
    a = _first(rec, tuple(k for k in _other_than(ANSWER_KEYS, mapping.get("choices"), q, p) if _graded_text(rec, k)))
    if a and a.lower() == "correct" and len(_item_choices(rec, mapping)[0]) < 2:
        a = None  # AQuA's letter names one of the options; without a list of them it is no answer (a flag)
    if a:
        mapping["answer"] = a
    elif "target_scores" in rec:
        mapping["answer"] = "target_scores"
    s = _first(rec, _other_than(SOLUTION_KEYS, mapping.get("answer"), q, p))
    if s:
        mapping["solution"] = s
    i = _first(rec, ID_KEYS, scalar=True)  # an `id` holding an object is no id: items are named by row
    if i:
        mapping["id"] = i
    return mapping


def _int_like(value: Any) -> int | None:
    """An answer given as a number: an int (not a bool) or a string of ASCII digits, maybe
    negative ("2", "-1" in CSV; not "\u00b2", which str.isdigit() takes)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        s = value.strip()
        if s.isascii() and s.removeprefix("-").isdigit() and len(s) <= 18:  # int() refuses 4,300 digits
            return int(s)
    return None


def index_base(records: Iterator[dict[str, Any]], mapping: Mapping[str, Any]) -> int:
    """_index_base, 0 for a file with no numeric answers into choices."""
    return _index_base(records, mapping) or 0


def _index_base(records: Iterator[dict[str, Any]], mapping: Mapping[str, Any]) -> int | None:
    """Whether a file's numeric answers count the choices from 1 (WinoGrande's "1"/"2", Social
    IQa's labels 1-3) or from 0 (MMLU, PIQA, HellaSwag). From 1 when none is 0 and either some
    answer equals its item's number of choices (an index past the last one, counted from 0), or
    there are so many answers that a file counting from 0 would have shown a 0 (under a 1%
    chance of none, answers spread evenly over k choices). Otherwise from 0, the default. Not
    counted: items whose choices carry their own labels (ARC's "1"-"4": named by those), answers
    that are also the text of one of the item's choices, negative answers (unlabelled items).
    Stops at the first 0. None: no record has a numeric answer into choices of its own."""
    past_last, no_zero_chance, seen = False, 1.0, False
    for rec in records:
        choices, labels = _item_choices(rec, mapping)
        value = _get(rec, mapping["answer"])
        k = _int_like(value)
        if k is None or k < 0 or labels or len(choices) < 2 or str(value).strip() in choices:
            continue
        if k == 0:
            return 0
        seen = True
        past_last = past_last or k == len(choices)
        no_zero_chance *= 1 - 1 / len(choices)
    if not seen:
        return None
    return 1 if past_last or no_zero_chance < 0.01 else 0


def _item_choices(rec: Mapping[str, Any], mapping: Mapping[str, Any]) -> tuple[list[str], list[Any]]:
    """(choice texts, labels) of a record under `mapping` (no choices without a choices role)."""
    if "choices" not in mapping:
        return [], []
    field = mapping["choices"]
    if isinstance(field, list):  # lettered or numbered columns, one per choice
        return [_as_text(v) for v in (_value(rec, f) for f in field) if v not in (None, "")], []
    return _choices(_value(rec, field))


def _get(rec: Mapping[str, Any], field: Any) -> Any:
    """A field's value, or the values of a list of fields."""
    return [_value(rec, f) for f in field] if isinstance(field, list) else _value(rec, field)


def _has(rec: Mapping[str, Any], name: str) -> bool:
    return _value(rec, name, _ABSENT) is not _ABSENT


def _flags(labels: list[Any], choices: list[str]) -> bool:
    """Whether `labels` mark exactly one of the choices correct with a 1 among 0s."""
    return (
        len(labels) == len(choices) > 1
        and all(isinstance(x, int) and not isinstance(x, bool) and x in (0, 1) for x in labels)
        and labels.count(1) == 1
    )


def _listed(value: Any, keys: tuple[str, ...] = _LIST_KEYS) -> list[str] | None:
    """The texts of an answer given as several (a list; an object's `keys` list: SQuAD's {text:
    [...]}, DROP's {spans: [...]}), objects without text left out (KILT's provenance); None for
    an answer given once."""
    if isinstance(value, dict):
        value = next((value[k] for k in keys if isinstance(value.get(k), list)), None)
    if not isinstance(value, list):
        return None
    return [_as_text(v) for v in value if not isinstance(v, dict) or _TEXT_KEYS & v.keys()]


def _unlabelled(value: Any) -> bool:
    """An answer that is the integer -1 (not the text "-1", which a maths item may answer): Hugging
    Face's mark for a test item whose label is withheld, with choices or without (a trial: a
    `gold` of -1 was read as the answer "-1", and a page's "Answer: 1." found it)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) == -1


def _alternatives(value: Any, choices: list[str], answer: str) -> tuple[str, ...]:
    """Other texts that give a free-text answer (BenchmarkItem.alternatives): the rest of a list
    of accepted answers (SQuAD's {text: [...]}, NQ's), TriviaQA's aliases, "yes" or "no" beside a
    boolean's "True" or "False" (BoolQ: pages answer its questions so). None for an answer
    among choices (the choices say it)."""
    if choices:
        return ()
    texts = ["yes" if value else "no"] if isinstance(value, bool) else _listed(value, (*_LIST_KEYS, "aliases"))
    if texts is None:
        return ()
    kept = dict.fromkeys(t.strip() for t in texts if t.strip() and t.strip() != answer.strip())
    return tuple(kept)[:MAX_ALTERNATIVES]


def _answer(value: Any, choices: list[str], labels: list[Any], base: int = 0) -> str:
    """The answer's text: an index (counted from `base`) or letter into the choices, a label, or
    text itself."""
    if isinstance(value, dict) and choices and labels and all(isinstance(v, (int, float)) for v in value.values()):
        best = max(value, key=lambda k: value[k])  # BIG-bench target_scores
        return str(best)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral) and choices:
        if labels and value in labels and len(labels) == len(choices) and not all(isinstance(x, int) for x in labels):
            return choices[labels.index(value)]
        if base and 1 <= int(value) <= len(choices):
            return choices[int(value) - 1]
        return answer_of(value, choices)  # an index, the text of a choice, or no answer
    if isinstance(value, str) and choices:
        s = value.strip()
        if labels and s in [str(x) for x in labels]:
            return choices[[str(x) for x in labels].index(s)]
        if len(s) == 1 and s.isascii() and s.isalpha():
            return answer_of(s, choices)  # a letter names a choice by its place (past them: the text)
        k = _int_like(s)
        if k is not None and len(choices) > 1:
            if 0 <= k - base < len(choices):
                return choices[k - base]
            if s not in choices:  # a number into no choice (-1: unlabelled) is no answer, as an int is
                return ""
    if isinstance(value, list) and labels and choices and len(value) == len(choices):
        picked = [c for c, flag in zip(choices, value, strict=True) if flag]
        return " ".join(picked)
    if not choices and (texts := _listed(value)) is not None:
        # accepted answers, any one of them right (SQuAD's annotators', TriviaQA's aliases, NQ's):
        # the first, as a copy gives one answer (joined, SQuAD's three "Denver Broncos" were
        # one answer no page holds)
        return next((t for t in texts if t.strip()), "")
    return _as_text(value)


def to_item(
    row: int,
    rec: dict[str, Any],
    mapping: Mapping[str, Any],
    base: int = 0,
    keep_raw: bool = True,
    system: str | None = None,
) -> BenchmarkItem:
    """The item of one record under a role mapping; base: what the file's numeric answers count
    the choices from (index_base); keep_raw: keep the record on the item (a scan reads none of it);
    system: the system message most of the file's chats share (_shared_system), if any."""

    def get(field: Any) -> Any:
        return _get(rec, field)

    choices, labels = _item_choices(rec, mapping)
    listed = get(mapping["choices"]) if "choices" in mapping else None
    answer = ""
    alternatives: tuple[str, ...] = ()
    if "answer" in mapping:
        value = get(mapping["answer"])
        if mapping.get("answer") == "target_scores" and isinstance(value, dict):
            answer = str(max(value, key=lambda k: value[k])) if value else ""
        elif not choices and (mapping["answer"] == "label" and _int_like(value) is not None or _unlabelled(value)):
            answer = ""  # a class label (NLI's 0-2; -1: unlabelled) of an item without choices is no text
        else:
            answer = _answer(value, choices, labels, base)
        alternatives = _alternatives(value, choices, answer) if answer else ()
    elif isinstance(listed, dict) and "labels" in listed and _flags(labels, choices):
        answer = choices[labels.index(1)]  # TruthfulQA's {choices, labels}: 1 marks the correct choice
    ident = get(mapping["id"]) if "id" in mapping else None
    asked = get(mapping["question"]) if "question" in mapping else None
    context = get(mapping["passage"]) if "passage" in mapping else None
    asked, context, answer = _chat(asked, context, answer, None if "passage" in mapping else system)
    solution = _as_text(get(mapping["solution"])) if "solution" in mapping else ""
    if not solution and not choices:
        answer, solution = final_answer(answer)
    return BenchmarkItem(
        item_id=_as_text(ident) if ident not in (None, "") else str(row),
        row=row,
        question=_as_text(asked),
        passage=_as_text(context),
        choices=tuple(choices),
        answer=answer,
        solution=solution,
        raw=rec if keep_raw else {},
        alternatives=alternatives,
    )


_REPLY_ROLES = ("assistant", "gpt", "chatgpt", "model", "bot", "chatbot", "bard")  # the model's, by file layout


def _turns(value: Any) -> Any:
    """A question field's value with a chat's messages unwrapped from the one-field list a mapping
    such as `question=[messages]` gives (anything else as it is)."""
    return value[0] if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list) else value


def _speaker(message: dict[str, Any]) -> str:
    return str(message.get("role", message.get("from", ""))).lower()


def _chat(asked: Any, context: Any, answer: str, system: str | None) -> tuple[Any, Any, str]:
    """(question, passage, answer) of an item whose question is a chat's messages ({role, content}
    objects; anything else is returned as it is). With no answer, a last message the model speaks
    after someone else's is the answer: the chat's reference reply (read as part of the question,
    a copy of the prompt alone held part of the "question", and no answer was ever found). Its
    system messages whose text is `system`, the one most of the file's chats share, are the
    passage, where other turns with text remain: instructions every item carries (read as the
    question, a benchmark of five chats counted its system prompt as each item's own text, and a
    copy of one item's turns held 74% of it: a new user's trial). A system message of its own (a
    document to summarise, a schema) stays the item's text (a review)."""
    turns = _turns(asked)
    if not isinstance(turns, list) or not turns or not all(isinstance(m, dict) for m in turns):
        return asked, context, answer
    if not answer and len(turns) >= 2:
        last, before = turns[-1], turns[-2]
        if _speaker(last) in _REPLY_ROLES and _speaker(before) not in _REPLY_ROLES and _as_text(last).strip():
            turns, answer = turns[:-1], _as_text(last)
    if system is not None:
        shared = [m for m in turns if _speaker(m) == "system" and _as_text(m) == system]
        rest = [m for m in turns if not (_speaker(m) == "system" and _as_text(m) == system)]
        if shared and _as_text(rest).strip():
            return rest, shared, answer
    return turns, context, answer


def _shared_system(records: Iterable[dict[str, Any]], mapping: Mapping[str, Any]) -> str | None:
    """The system message the chats of a file share (the text of the one most of the first
    DETECT_ROWS records with one hold, if two or more, more than half of them, do), or None."""
    if "passage" in mapping or "question" not in mapping:
        return None
    seen: Counter[str] = Counter()
    for rec in itertools.islice(records, DETECT_ROWS):
        turns = _turns(_get(rec, mapping["question"]))
        if isinstance(turns, list):
            texts = {_as_text(m) for m in turns if isinstance(m, dict) and _speaker(m) == "system"}
            seen.update(texts)
    if not seen:
        return None
    text, times = seen.most_common(1)[0]
    return text if times >= 2 and 2 * times > seen.total() else None


ROLES = ("question", "passage", "choices", "answer", "solution", "id")
# not a role: what a file's numeric answers count its choices from, "0" or "1" (index_base)
ANSWER_BASE = "answer_base"


def _given_mapping(mapping: Mapping[str, Any] | None) -> dict[str, Any]:
    """A user's role -> field mapping, checked: known roles, each naming a field (or a list of
    fields, as for lettered choice columns)."""
    given = dict(mapping or {})
    unknown = set(given) - {*ROLES, ANSWER_BASE}
    if unknown:  # with the role meant, as an unknown threshold's name is (a trial: "questoin")
        meant = [m for u in sorted(map(str, unknown)) for m in difflib.get_close_matches(u, [*ROLES, ANSWER_BASE], 1)]
        hint = f"did you mean {', '.join(meant)}? " if meant else ""
        raise InputError(
            f"unknown role(s) in field mapping: {', '.join(sorted(map(str, unknown)))} "
            f"({hint}roles: question, passage, choices, answer, solution, id; and {ANSWER_BASE}=0 or 1)"
        )
    if ANSWER_BASE in given:
        if str(given[ANSWER_BASE]) not in ("0", "1"):
            raise InputError(f"field mapping: {ANSWER_BASE} is 0 or 1 (numeric answers count the choices from it)")
        given[ANSWER_BASE] = str(given[ANSWER_BASE])
    for role in ("choices", "question"):  # "option1,option2": one column per choice; "Body,Question"
        several = given.get(role)
        if isinstance(several, str) and "," in several:
            given[role] = [c.strip() for c in several.split(",") if c.strip()]
    for role, f in given.items():
        if role == ANSWER_BASE:
            continue
        names = f if isinstance(f, list) else [f]
        if not names or not all(isinstance(x, str) and x for x in names):
            raise InputError(
                f"field mapping: {role} must name a field (a string), or a list of fields, not {json_type(f)}"
            )
    return given


def json_type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), "a number")


def _fields(f: Any) -> list[Any]:
    return f if isinstance(f, list) else [f]


def _mapping_for(
    rec: Mapping[str, Any], given: dict[str, Any], filename: str, row: int, later: Mapping[str, Any]
) -> dict[str, Any]:
    """The roles detected on the first record, under those the user gave: a partial mapping
    leaves detection of the other roles on (a detected role never reuses a given field). A first
    record whose question is empty takes the question field the first rows have between them
    (`later`: _later_fields): one empty question refused the whole file (a new user's trial)."""
    named = {r: f for r, f in given.items() if r != ANSWER_BASE}
    taken = {x for f in named.values() for x in _fields(f)}
    detected = detect_mapping(rec)
    if "question" not in detected and later and "question" in (theirs := detect_mapping(later)):
        detected = {"question": theirs["question"], **detected}
    used: dict[str, Any] = {}
    for role, f in detected.items():
        if role in given:
            continue
        kept = [x for x in _fields(f) if x not in taken]  # a field the user gave another role is theirs
        if kept == _fields(f) or (role == "question" and kept):
            used[role] = f if kept == _fields(f) else kept[0] if len(kept) == 1 else kept
    used.update(given)
    if "question" not in used:
        raise InputError(_no_question(rec, named, detected, filename, row))
    return used


def _no_question(
    rec: Mapping[str, Any], given: Mapping[str, Any], detected: Mapping[str, Any], filename: str, row: int
) -> str:
    """Why no field is the question, and what to give: a field the guess took for the question
    but the user gave another role ("no question field found among [..., 'question']", a new
    user's trial), the text fields inside nested objects (which a dotted path names), or, in a
    table, a header row that may be missing."""
    how = (
        "give a field mapping such as question=<field> (`contam scan --fields question=<field>`; the "
        'API\'s `mapping`, {"question": "<field>"}; the upload form\'s "question" box)'
    )
    mine = _fields(detected.get("question", []))
    roles = {x: r for r, f in given.items() for x in _fields(f)}
    if lost := [x for x in mine if x in roles]:
        return (
            f"{filename}: row {row}: the field {lost[0]!r}, the question by its name, is mapped as "
            f"{roles[lost[0]]}; name the question's field too: {how}"
        )
    said = f"{filename}: row {row}: no question field found among {sorted(rec)}; {how}"
    asked = {_key(k) for k in QUESTION_KEYS}
    if empty := [k for k in rec if _key(str(k)) in asked and _blank(rec[k])]:
        # one a question's name, left empty where no row read ahead fills it (all of the first
        # rows, or a compressed Parquet file, not read ahead): listed among the fields in which
        # "no question field" was found, unexplained (a review)
        return (
            f"{said}; the field {empty[0]!r} is empty in row {row} and no row read ahead fills it: "
            f"question={empty[0]} reads it as the question all the same"
        )
    if nested := _text_paths(rec):
        shown = ", ".join(path for path, _n in nested[:12]) + (", ..." if len(nested) > 12 else "")
        # a question's name first (not a long passage, a review)
        named = [path for path, _n in nested if _key(path.rsplit(".", 1)[-1]) in asked]
        example = named[0] if named else max(nested, key=lambda pn: pn[1])[0]
        return f"{said}; a field inside an object is named by its path, e.g. question={example} (text fields: {shown})"
    if _is_table(filename):
        return f"{said}; a CSV file's first row names its columns: if this file has no header row, add one"
    return said


def _fields_of(rec: Mapping[str, Any], found: Mapping[str, Any]) -> str:
    """A record's fields, for a mapping that names a question field it lacks: its top level, the
    text fields inside its objects (named by path), and the one likely meant (a trial: a misspelt
    `data.prompt.txt` was shown the top level alone, `data`)."""
    said = f"its fields: {', '.join(sorted(rec)) or 'none'}"
    nested = [path for path, _n in _text_paths(rec)]
    if nested:
        shown = ", ".join(nested[:12]) + (", ..." if len(nested) > 12 else "")
        said += f"; text fields inside its objects: {shown}"
    asked = [str(x) for x in _fields(found["question"])]
    meant = [m for x in asked for m in difflib.get_close_matches(x, [*map(str, rec), *nested], 1)]
    return said + (f"; did you mean {meant[0]}?" if meant else "")


def _text_paths(rec: Mapping[str, Any], prefix: str = "", depth: int = 3) -> list[tuple[str, int]]:
    """Dotted paths of the text fields inside the record's objects (not its top level's), up to
    `depth` levels down, each with its text's length."""
    out: list[tuple[str, int]] = []
    for k, v in rec.items():
        if isinstance(v, dict) and depth > 1:
            out += _text_paths(v, f"{prefix}{k}.", depth - 1)
        elif prefix and isinstance(v, str) and v.strip():
            out.append((f"{prefix}{k}", len(v)))
    return out


def _is_table(filename: str) -> bool:
    """A CSV or TSV file, compressed or not."""
    name = filename.lower()
    for suffix, _kind in COMPRESSIONS:
        name = name.removesuffix(suffix)
    return name.endswith((".csv", ".tsv"))


def _check_item(item: BenchmarkItem, filename: str, row: int, limits: Limits) -> None:
    """Refuse an item with a field over the per-item limit or holding a NUL character, naming the
    file, the item, its row and the field."""
    check_item(item, f"{filename}: ", limits.item_chars, "upload again", f" (row {row})")


def read_benchmark(
    data: Source, filename: str, mapping: Mapping[str, Any] | None = None, limits: Limits = DEFAULT_LIMITS
) -> tuple[list[BenchmarkItem], dict[str, Any]]:
    """Items of a benchmark file and the role mapping used; `limits` bound what is read."""
    used: dict[str, Any] = {}
    items = list(iter_benchmark(data, filename, mapping, limits, used))
    return items, used


def _nested_within(value: Any, depth: int, filename: str, row: int) -> None:
    """Refuse a record nested deeper than `depth` (CONTAM_MAX_JSON_DEPTH) before anything walks
    it recursively (a field of 5,000 nested lists was a RecursionError: a 500 on upload)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            if d > depth:
                raise exceeded("json_depth", depth, f"{filename}: row {row}'s nesting")
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))


NOTED = 3  # places a note names


@dataclass
class ReadNotes:
    """What reading a benchmark file noticed that is no error but changes what is scored, said
    beside the results rather than left unsaid (a trial: an answer 7 of 4 choices was scored as
    an item without an answer, and ids shared by several items passed without a word).

    outside: answers given as a number that names none of the item's choices (counted, the first
        NOTED as (row, answer, choices)); unlabelled: answers of -1 (Hugging Face's mark for a test
        item whose label is withheld); shared: ids held by more than one item (the first NOTED);
        both are scored as items without an answer; cjk: items mostly in Chinese or Japanese
        characters (said when a tenth of the items or more: see mostly_cjk); unspaced: items mostly in
        Thai, Lao, Khmer or Burmese, which the tokeniser does not cut into words (likewise: see
        mostly_unspaced); shots: harness prompts holding few-shot examples (likewise)."""

    items: int = 0
    cjk: int = 0  # items whose question is mostly CJK characters (mostly_cjk)
    unspaced: int = 0  # items whose question is mostly in a script written without spaces (mostly_unspaced)
    shots: int = 0  # harness prompts over twice their document's text: few-shot examples (_few_shot)
    outside: int = 0
    outside_at: list[tuple[int, str, int]] = dataclasses.field(default_factory=list)
    unlabelled: int = 0
    shared: int = 0
    shared_ids: dict[str, None] = dataclasses.field(default_factory=dict)  # the first NOTED + 1 ids shared
    unread: list[str] = dataclasses.field(default_factory=list)  # the first record's fields no role reads
    _ids: set[str] = dataclasses.field(default_factory=set, repr=False)

    def reset(self) -> None:
        """Forget what an earlier reading of the file noticed (a scan reads it twice)."""
        self.items = self.cjk = self.unspaced = self.shots = self.outside = self.unlabelled = self.shared = 0
        self.outside_at, self.shared_ids, self._ids, self.unread = [], {}, set(), []

    def add(self, item: BenchmarkItem, rec: Mapping[str, Any], mapping: Mapping[str, Any]) -> None:
        """Note what `item`, read from record `rec` under `mapping`, holds; places are the item's
        `row`, as the results number them (from 0; `idx` in the API)."""
        self.items += 1
        if self.items == 1 and "answer" not in mapping and not item.answer:
            # no answer field: the answer may be in a field of another name ("gold_idx",
            # "reference"), dropped without a word (new users' trials); not said of an answer read
            # otherwise (a chat's reply, the choice TruthfulQA's labels mark: a review)
            read = {str(x).split(".")[0] for r, f in mapping.items() if r != ANSWER_BASE for x in _fields(f)}
            self.unread = [k for k in rec if k not in read]
        self.cjk += mostly_cjk(item.question)
        self.unspaced += mostly_unspaced(item.question)
        self.shots += _few_shot(rec, mapping)
        if item.item_id in self._ids:
            self.shared += 1
            if len(self.shared_ids) <= NOTED:  # those shown, and whether there are more
                self.shared_ids[item.item_id] = None
        self._ids.add(item.item_id)
        if "answer" not in mapping or item.answer:
            return
        value = _get(rec, mapping["answer"])
        k = _int_like(value)
        if k == -1 and (item.choices or _unlabelled(value)):
            self.unlabelled += 1
        elif k is not None and item.choices:
            self.outside += 1
            if len(self.outside_at) < NOTED:
                self.outside_at.append((item.row, str(value).strip(), len(item.choices)))

    def said(self) -> list[str]:
        """The notes as sentences (none when all was read as given)."""
        out = []
        if self.outside:
            where = "; ".join(f"row {r}: {a} with {k} choices" for r, a, k in self.outside_at)
            more = ", ..." if self.outside > len(self.outside_at) else ""
            out.append(
                f"{self.outside:,} item(s) give an answer number that names none of their choices ({where}{more}; "
                "rows as the results number them, from 0): scored as items without an answer; is the field mapped "
                "as the answer the right one?"
            )
        if self.unlabelled:
            out.append(
                f"{self.unlabelled:,} item(s) have the answer -1 (a test item whose label is withheld): "
                "scored as items without an answer"
            )
        if self.shared:
            first = list(itertools.islice(self.shared_ids, NOTED))
            ids = ", ".join(repr(i[:40]) for i in first) + (", ..." if len(self.shared_ids) > NOTED else "")
            out.append(
                f"{self.shared:,} item(s) share an id with an earlier item ({ids}): results tell them apart by "
                "their row (position in the file, from 0; `idx` in the API)"
            )
        if self.unread:
            out.append(
                f"no field was read as the answer (fields not read: {', '.join(self.unread[:NOTED])}"
                f"{', ...' if len(self.unread) > NOTED else ''}): items are scored without their answer; if one "
                "of these holds it, give --fields answer=FIELD (the API's `mapping`)"
            )
        if self.shots and 10 * self.shots >= self.items:
            out.append(
                f"{self.shots:,} of {self.items:,} items are lm-evaluation-harness prompts more than twice as long as "
                "their document (few-shot examples?): a page holding an example flags the item; mapping the "
                "document's fields (question=doc.question, choices=doc.choices, answer=doc.answer, or the task's "
                "names) judges the item alone"
            )
        if self.cjk and 10 * self.cjk >= self.items:
            out.append(
                f"{self.cjk:,} of {self.items:,} items are mostly Chinese or Japanese characters, each of which is "
                "a token (a word is one in other scripts): a flag of a short one may be a common phrase of a word or "
                "two rather than a copy, on a small corpus above all; read its evidence"
            )
        if self.unspaced and 10 * self.unspaced >= self.items:
            out.append(
                f"{self.unspaced:,} of {self.items:,} items are mostly Thai, Lao, Khmer or Burmese, {UNSPACED}: "
                "this tool does not cut them into words, so the text between two spaces is one token; such an "
                "item is too_short or a few tokens, and a copy run into the text around it is missed (a probe: "
                "6% of planted copies of Thai items found): a clean or too_short result says little of these items"
            )
        return out


def _few_shot(rec: Mapping[str, Any], mapping: Mapping[str, Any]) -> bool:
    """Whether an lm-evaluation-harness record (flattened by _harness: `prompt`, `target`, `doc`)
    is read by its prompt, and the prompt holds examples before the item: over twice as long as
    the text of its document, and in three parts or more between blank lines, the harness's
    delimiter of examples (a zero-shot prompt is a description, or MMLU's header, and the item: a
    review's zero-shot abstract algebra, short questions under the header, was taken for few-shot)."""
    doc, prompt = rec.get("doc"), rec.get("prompt")
    if mapping.get("question") != "prompt" or "target" not in rec or not isinstance(doc, dict):
        return False
    if not isinstance(prompt, str) or prompt.strip().count("\n\n") < 2:
        return False
    own = sum(len(_as_text(v)) for v in doc.values() if isinstance(v, str | list))
    return len(prompt) > 2 * own


def iter_benchmark(
    data: Source,
    filename: str,
    mapping: Mapping[str, Any] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    used: dict[str, Any] | None = None,
    keep_raw: bool = True,
    notes: ReadNotes | None = None,
) -> Iterator[BenchmarkItem]:
    """The items of a benchmark file one at a time, as the file is read (nothing else is kept):
    `used`, if given, receives the role mapping once the first record is read; `keep_raw`: keep
    each item's record (the scanner does not need it); `notes`, if given, is filled afresh with
    what the reading noticed (ReadNotes)."""
    if notes is not None:
        notes.reset()
    given = _given_mapping(mapping)
    unseen = {f"{r}={x}": x for r, f in given.items() if r != ANSWER_BASE for x in _fields(f)}  # named, no row has
    first: list[str] = []
    found: dict[str, Any] | None = None
    n = base = 0
    system: str | None = None
    whose = "the first row's question"  # where the question's field was found
    later = _later_fields(data, filename, limits)  # read ahead, before the items' own reading opens the file
    for row, rec in _layout_records(data, filename, limits):
        if unseen:
            unseen = {k: x for k, x in unseen.items() if not _has(rec, x)}
        if found is None:
            first = sorted(rec)
            found = _mapping_for(rec, given, filename, row, later)
            found |= _later_roles(later, found, given)
            if "question" not in given and not any(_has(rec, x) for x in _fields(found["question"])):
                whose = "the question of the rows after it"  # it said "the first row's" (a review)
            counted_from = _base_of(data, filename, limits, rec, found)
            if counted_from is not None:  # said with the fields, and kept with a report's mapping
                found[ANSWER_BASE] = str(counted_from)
                base = counted_from
            system = _system_of(data, filename, limits, rec, found)
            if used is not None:
                used.update(found)
        if not any(_has(rec, x) for x in _fields(found["question"])):
            how = "the question, as the field mapping names it" if "question" in given else whose
            raise InputError(
                f"{filename}: row {row} has no field {found['question']!r} ({how}); {_fields_of(rec, found)}"
            )
        _refuse_objects(rec, found, filename, row)
        item = to_item(n, rec, found, base, keep_raw, system)
        _check_item(item, filename, row, limits)
        if notes is not None:
            notes.add(item, rec, found)
        n += 1
        yield item
    if not n:  # a table's one row is its header (a trial: a header-less one-row CSV said only this)
        header = "; a CSV file's first row names its columns: if this file has no header row, add one"
        raise InputError(f"{filename}: no items in the file{header if _is_table(filename) else ''}")
    if unseen:  # `choices=nosuch` left every item without choices, its label the answer text
        raise InputError(
            f"{filename}: the field mapping names a field no row has: {', '.join(unseen)}; "
            f"the first row's fields: {', '.join(first) or 'none'}"
        )


DETECT_ROWS = 100  # records read ahead for roles the first one lacks (a later row's choices)


def _later_fields(data: Source, filename: str, limits: Limits) -> dict[str, Any]:
    """The fields the first DETECT_ROWS records have between them (each with the first value
    that is not blank, the first record's first), or {} when they hold none the first record
    lacks. Read in a pass of its own, closed before the items' reading starts; whatever is wrong
    with the file is left for that reading to say, at its row. Not for a compressed Parquet file,
    which is decompressed whole to disk to be read (once for the items is enough; its columns
    are the same in every row anyway)."""
    fmt, comp = benchmark_format(filename)
    if fmt == "parquet" and comp is not None:
        return {}
    first: dict[str, Any] | None = None
    merged: dict[str, Any] = {}
    records = _layout_records(data, filename, limits)
    try:
        for k, (_row, rec) in enumerate(records):
            if k >= DETECT_ROWS:
                break
            first = rec if first is None else first
            for key, value in rec.items():
                if _blank(merged.get(key)) and not _blank(value):
                    merged[key] = value
    except InputError:
        pass
    finally:
        records.close()
    if first is None or merged.keys() <= {k for k, v in first.items() if not _blank(v)}:
        return {}
    return merged


def _later_roles(later: dict[str, Any], found: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Roles the first record lacks that the first rows have between them (`later`:
    _later_fields): a file whose first item is open-ended and whose third has choices (and a
    numeric answer that indexes them) kept no choices for any item, and took that answer as its
    text. The first record's roles (`found`) stay as they are; a role taken here uses no field
    they use."""
    if not later:
        return {}
    taken = {x for f in found.values() for x in _fields(f)}
    return {
        role: f
        for role, f in detect_mapping(later).items()
        if role not in found and role not in given and not taken & set(_fields(f))
    }


def _base_of(data: Source, filename: str, limits: Limits, first: dict[str, Any], mapping: dict[str, Any]) -> int | None:
    """What the file's numeric answers count the choices from (index_base; `answer_base` in the
    mapping, if given), read ahead of the items when the first record's answer is a number into
    choices without labels of their own; None for a file with no such answers."""
    if "answer" not in mapping or mapping["answer"] == "target_scores":
        return None
    if ANSWER_BASE in mapping:  # the user's word, whatever the first record's answer is
        return int(mapping[ANSWER_BASE])
    choices, labels = _item_choices(first, mapping)
    # a first record without choices (a file mixing open and multiple-choice items) says nothing:
    # the records with choices do
    if choices and (labels or len(choices) < 2 or _int_like(_get(first, mapping["answer"])) is None):
        return None
    if not choices and "choices" not in mapping:
        return None

    def records() -> Iterator[dict[str, Any]]:
        try:
            for _row, rec in _layout_records(data, filename, limits):
                yield rec
        except InputError:  # said by the items' own reading, at its row, after the items before it
            return

    return _index_base(records(), mapping)


def _system_of(
    data: Source, filename: str, limits: Limits, first: dict[str, Any], mapping: dict[str, Any]
) -> str | None:
    """_shared_system of the file, read ahead of the items when its first record is a chat with a
    system message; None otherwise."""
    turns = _turns(_get(first, mapping["question"])) if "question" in mapping and "passage" not in mapping else None
    if not isinstance(turns, list) or not any(isinstance(m, dict) and _speaker(m) == "system" for m in turns):
        return None

    def records() -> Iterator[dict[str, Any]]:
        try:
            for _row, rec in _layout_records(data, filename, limits):
                yield rec
        except InputError:  # said by the items' own reading, at its row
            return

    return _shared_system(records(), mapping)


def _layout_records(data: Source, filename: str, limits: Limits) -> Generator[tuple[int, dict[str, Any]], None, None]:
    """(row, record) of a benchmark file, each checked for depth and flattened from a known layout."""
    for row, raw in benchmark_records(data, filename, limits):
        _nested_within(raw, limits.json_depth, filename, row)
        yield row, known_layout(raw)


# ---------------------------------------------------------------- the layouts ML teams hold
# Each a function of its own, around read_records (benchmark_records) and in read_benchmark
# (known_layout): JSON lines in a
# .json file (`Dataset.to_json()`), Arrow files (`save_to_disk`), list columns in CSV (as
# `datasets` writes them), header-less MMLU CSV, the original ARC JSONL and
# lm-evaluation-harness --log_samples output.

MMLU_COLUMNS = ["question", "A", "B", "C", "D", "answer"]


def benchmark_format(filename: str) -> tuple[str, str | None]:
    """detect_format, and 'arrow' for an Arrow file (uncompressed)."""
    if filename.lower().endswith(".arrow"):
        return "arrow", None
    return detect_format(filename)


JSON_LINE_PEEK = 1 << 20  # a .json file's first line longer than this is not one item of JSON lines


def benchmark_records(
    data: Source, filename: str, limits: Limits = DEFAULT_LIMITS
) -> Iterator[tuple[int, dict[str, Any]]]:
    """read_records, and the layouts it cannot tell by the file name: Arrow, JSON lines in a
    .json file, a CSV without a header (MMLU's); CSV list columns parsed. Read as a stream: only
    the first lines are looked at to tell the layout."""
    fmt, comp = benchmark_format(filename)
    if isinstance(data, Path) and (data.is_dir() or _split_shards(data)):
        yield from read_folder_records(data, limits)
        return
    if fmt == "arrow":
        yield from read_arrow_records(data, filename, limits)
        return
    if fmt not in ("json", "csv", "tsv"):
        yield from read_records(data, filename, limits)
        return
    stream = open_content(data, filename, limits.decompressed_bytes)
    stem = filename.rsplit(".", 1)[0] if comp else filename  # the name of the decompressed content
    yield from _closing(stream, _sniffed_records(stream, fmt, stem, limits))


def _sniffed_records(
    stream: io.BufferedReader, fmt: str, stem: str, limits: Limits
) -> Iterator[tuple[int, dict[str, Any]]]:
    """benchmark_records of a JSON, CSV or TSV stream, its layout told by its first lines."""
    if fmt == "json":
        layout, head = json_layout(stream)
        if layout == "array":  # (often one line: the whole file)
            yield from _stream_records(stream, "json", stem, limits)
            return
        if layout == "lines":
            name = stem.removesuffix(".json").removesuffix(".JSON") + ".jsonl"
            yield from _stream_records(_then(head, stream), "jsonl", name, limits)
            return
    else:
        head = stream.readline(limits.line_bytes + 1)  # two whole lines (a longer one is refused when read)
        head += stream.readline(limits.line_bytes + 1)
        head += stream.read(max(0, (1 << 16) - len(head)))  # and at least 64 KiB if there is that much
    header = headerless_columns(head, "\t" if fmt == "tsv" else ",") if fmt != "json" else None
    records: Iterator[tuple[int, dict[str, Any]]]
    if header is not None:  # rows numbered as in the file, which has no header line
        named = ("\t" if fmt == "tsv" else ",").join(header).encode() + b"\n" + head
        records = ((row - 1, rec) for row, rec in _stream_records(_then(named, stream), fmt, stem, limits))
    else:
        records = _stream_records(_then(head, stream), fmt, stem, limits)
    for row, rec in records:
        if fmt != "json" and None in rec.values():  # csv's value for a column the row does not reach
            layout = "the header" if header is None else "MMLU's layout (6)"
            raise InputError(f"{stem}: row {row} has fewer columns than {layout}")
        yield row, csv_values(rec) if fmt != "json" else rec


def json_layout(stream: io.BufferedReader) -> tuple[str, bytes]:
    """What a .json file holds: "array" (of items), "lines" (JSON lines: a line per item, as
    `Dataset.to_json()` writes) or "object" (holding the items' array), and the bytes read to
    tell (the stream goes on after them; none for an array, its byte order mark stepped over).
    The clean-subset export asks it too, so both read a file alike."""
    _skip_bom(stream)
    if stream.peek(1 << 12).lstrip()[:1] == b"[":
        return "array", b""
    # JSON lines has a line per item; a line longer than that is plain JSON, streamed
    head = stream.readline(JSON_LINE_PEEK)
    if head.endswith(b"\n"):
        head += stream.readline(JSON_LINE_PEEK)
    head += stream.read(max(0, (1 << 16) - len(head)))  # and at least 64 KiB if there is that much
    return ("lines" if is_json_lines(head) else "object"), head


def is_json_lines(data: bytes) -> bool:
    """Whether a .json file holds one JSON object a line (`Dataset.to_json()`'s default)."""
    lines = [line for line in data.lstrip().splitlines()[:2] if line.strip()]
    if len(lines) < 2 or not lines[0].lstrip().startswith(b"{"):
        return False
    try:
        return isinstance(orjson.loads(lines[0]), dict)
    except orjson.JSONDecodeError:  # an object spread over lines: plain JSON
        return False


def read_arrow_records(
    data: Source, filename: str, limits: Limits = DEFAULT_LIMITS
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of an Arrow IPC file, stream format (Hugging Face `save_to_disk`) or file format,
    a record batch at a time."""
    reader: Any = None
    opened: list[Any] = []  # closed however the reading ends: Arrow keeps a refused file open
    try:
        for opener in (pa.ipc.open_stream, pa.ipc.open_file):
            source = pa.BufferReader(data) if isinstance(data, bytes) else pa.OSFile(str(data))
            opened.append(source)
            try:
                reader = opener(source)
                break
            except (pa.ArrowException, OSError):
                continue
        if reader is None:
            raise InputError(f"{filename}: not a readable Arrow file")
        if isinstance(reader, pa.ipc.RecordBatchFileReader):
            batches: Iterator[pa.RecordBatch] = (reader.get_batch(i) for i in range(reader.num_record_batches))
        else:
            batches = iter(reader)
        row = 0
        try:
            for batch in batches:
                if row + batch.num_rows > limits.items:
                    raise exceeded("items", limits.items, f"{filename}: more than {limits.items:,} rows")
                for rec in batch.to_pylist():
                    row += 1
                    yield row, rec
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{filename}: not a readable Arrow file ({exc})") from exc
    finally:
        for source in opened:
            source.close()


def benchmark_source(path: Path) -> tuple[Source, str]:
    """A benchmark on disk: a file, or a Hugging Face `save_to_disk` folder or Parquet shard
    folder of one split, left on disk to be read as a stream (a folder's files
    one after the other, each a record batch at a time: read_folder_records). A folder's
    layout is checked now."""
    if not path.exists() and not _split_shards(path):
        raise InputError(f"no such file: {path}")
    if path.is_file():
        return path, str(path)  # as given: an error names the file the user can find
    if path.exists() and not path.is_dir():  # read more than once (its layout, then its items): no pipe will do
        raise InputError(
            f"{path} is not a file but a pipe or device (standard input, <(...), a FIFO): save the benchmark "
            "to a file and give that"
        )
    _folder_files(path)
    return path, f"{path.name}.arrow"


def _split_shards(path: Path) -> list[Path]:
    """The Parquet shards of one split named as a path inside the folder holding several
    (FOLDER/test: FOLDER/test-00000-of-00002.parquet, ...), as Hugging Face names them; none if
    the path exists or its folder holds no such shard."""
    if path.exists() or not path.parent.is_dir():
        return []
    return sorted(path.parent.glob(glob.escape(path.name) + "-*.parquet"))


def read_folder_records(path: Path, limits: Limits = DEFAULT_LIMITS) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a save_to_disk folder's Arrow files or of a split's Parquet shards, in order,
    numbered across the files; a file at a time, a record batch at a time (they were joined
    into one table in memory before)."""
    kind, files = _folder_files(path)
    if kind == "parquet":  # the limits for all shards together, before any row is read
        try:
            metas = [pq.ParquetFile(f).metadata for f in files]
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{path}: a Parquet shard cannot be read ({exc})") from exc
        rows = sum(m.num_rows for m in metas)
        size = sum(m.row_group(g).total_byte_size for m in metas for g in range(m.num_row_groups))
        if size > limits.decompressed_bytes:
            raise exceeded("decompressed_bytes", limits.decompressed_bytes, f"{path}: the uncompressed shards")
        if rows > limits.items:
            raise exceeded("items", limits.items, f"{path}: {rows:,} rows")
    row = 0
    for f in files:
        name = str(f.relative_to(path.parent))
        records = read_arrow_records(f, name, limits) if kind == "arrow" else _parquet(f, name, limits)
        for _r, rec in records:
            row += 1
            if row > limits.items:
                raise exceeded("items", limits.items, f"{path}: more than {limits.items:,} rows")
            yield row, rec


def _folder_files(path: Path) -> tuple[str, list[Path]]:
    """("arrow", a save_to_disk folder's Arrow files) or ("parquet", one split's shards)."""
    if (path / "dataset_dict.json").exists():
        splits = sorted(p.name for p in path.iterdir() if (p / "state.json").exists())
        raise InputError(
            f"{path} holds several splits ({', '.join(splits)}): give one, e.g. {path / (splits or ['test'])[0]}"
        )
    if (path / "state.json").exists():
        state = orjson.loads((path / "state.json").read_bytes())
        files = [path / f["filename"] for f in state.get("_data_files", [])]
        if not files or not all(f.is_file() for f in files):
            raise InputError(f"{path}: a save_to_disk folder whose Arrow files cannot be read")
        return "arrow", files
    return "parquet", _split_shards(path) or _parquet_shards(path)


def _split_of(name: str) -> str:
    """The split a Parquet shard's file name says: before its first "-" (test-00000-of-00002.parquet:
    test; train.parquet: train), none for a shard number alone (0000.parquet, as the Hub's Parquet
    conversion names a split's shards in its folder: the folder is the split)."""
    stem = name.split("-")[0].removesuffix(".parquet")
    return "" if stem.isdigit() else stem


def _parquet_shards(path: Path) -> list[Path]:
    """The Parquet shards of the one split a folder holds (refused: none, or several splits)."""
    shards = sorted(p for depth in ("*", "*/*", "*/*/*") for p in path.glob(depth + ".parquet"))  # not a whole disk
    if not shards:
        raise InputError(
            f"{path} is a folder: give a benchmark file (JSONL, JSON, CSV/TSV, Parquet, Arrow), "
            "a Hugging Face save_to_disk folder, or a folder of one split's Parquet shards"
        )
    splits = {str(s.parent.relative_to(path) / _split_of(s.name)) for s in shards}
    if len(shards) > 1 and len(splits) > 1:
        named = sorted(splits)
        example = next((path / x for x in named if x != "." and ((path / x).is_dir() or _split_shards(path / x))), None)
        how = f", e.g. {example}" if example else ""
        raise InputError(f"{path} holds several splits ({', '.join(named)}): give one file or folder{how}")
    others = sorted(  # benchmark files of other kinds beside the shards: which one was meant?
        str(p.relative_to(path))
        for depth in ("*", "*/*", "*/*/*")
        for p in path.glob(depth)
        if p.is_file() and p.suffix.lower() != ".parquet" and _is_benchmark_file(p.name)
    )
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise InputError(
            f"{path} holds other benchmark files beside its Parquet shards ({shown}): give one file, "
            "or a folder holding only one split's shards"
        )
    return shards


HUB_METADATA = ("dataset_infos.json", "dataset_info.json", "dataset_dict.json", "state.json")  # not benchmarks


def _is_benchmark_file(name: str) -> bool:
    if name.lower() in HUB_METADATA or name.startswith("."):
        return False
    try:
        benchmark_format(name)
    except InputError:
        return False
    return True


def headerless_columns(data: bytes, delimiter: str) -> list[str] | None:
    """MMLU's column names for a CSV without a header (question, four choices, answer letter),
    else None (the first row is the header)."""
    head = data[: 1 << 16].decode("utf-8-sig", "replace")
    first = next(csv.reader(io.StringIO(head, newline=""), delimiter=delimiter), [])
    named = {c.strip().lower() for c in first} & {k.lower() for k in QUESTION_KEYS + ANSWER_KEYS + ID_KEYS}
    if len(first) == 6 and first[5].strip() in ("A", "B", "C", "D") and not named:
        return MMLU_COLUMNS
    return None


def _literal(value: str) -> Any:
    """A list or dict written by Python's repr or as JSON ("['a', 'b']"), else the string."""
    s = value.strip()
    if len(s) < 2 or (s[0], s[-1]) not in (("[", "]"), ("{", "}")) or len(s) > 1 << 20:
        return value
    try:
        parsed = ast.literal_eval(s)  # literals only: never evaluates code
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return value
    return parsed if isinstance(parsed, (list, dict)) else value


def csv_values(rec: dict[str, Any]) -> dict[str, Any]:
    """A CSV row with list and dict columns parsed (HellaSwag's endings as `datasets` writes them)."""
    return {k: _literal(v) if isinstance(v, str) else v for k, v in rec.items()}


def _arc(rec: dict[str, Any]) -> dict[str, Any] | None:
    """The original ARC JSONL: question.stem and question.choices [{label, text}], answerKey. The
    original paths name the same fields still (`--fields question=question.stem`, as the file
    reads, was refused: "row 1 has no field 'question.stem'", a probe)."""
    q = rec.get("question")
    if not (isinstance(q, dict) and isinstance(q.get("stem"), str) and isinstance(q.get("choices"), list)):
        return None
    choices = [c for c in q["choices"] if isinstance(c, dict)]
    flat = {k: v for k, v in rec.items() if k != "question"}
    texts = [_as_text(c.get("text")) for c in choices]
    listed = {"text": texts, "label": [c.get("label") for c in choices]}
    return flat | {"question": q["stem"], "choices": listed, "question.stem": q["stem"], "question.choices": listed}


def _harness_arguments(args: Any) -> list[list[Any]]:
    """lm-evaluation-harness request arguments as [context, continuation] pairs, from both the
    list layout ([[ctx, cont], ...]) and the dict one ({"gen_args_0": {"arg_0": ctx, "arg_1": cont}})."""
    if isinstance(args, dict):
        return [[a.get("arg_0"), a.get("arg_1")] for a in args.values() if isinstance(a, dict)]
    if isinstance(args, list):
        return [list(a) if isinstance(a, (list, tuple)) else [a, None] for a in args]
    return []


def _harness(rec: dict[str, Any]) -> dict[str, Any] | None:
    """An lm-evaluation-harness --log_samples record: the prompt the model saw (the context,
    few-shot examples included), the continuations it scored as choices, the target, and the
    document itself (`doc`: a mapping may name its fields, `doc.question`)."""
    if not ("doc_id" in rec and "arguments" in rec and isinstance(rec.get("doc"), dict)):
        return None
    pairs = _harness_arguments(rec["arguments"])
    if not pairs or not isinstance(pairs[0][0], str):
        return None
    conts = [c for _, c in pairs if isinstance(c, str)]
    # the benchmark's own id where the document has one (ARC's "Mercury_7175875"), else the
    # harness's position: the samples' ids were 0..n-1 beside documents that named themselves
    own = rec["doc"].get("id")
    ident = own if isinstance(own, str | int) and not isinstance(own, bool) and own != "" else rec["doc_id"]
    # the document kept: a prompt with few-shot examples sampled per item is judged by them too (a
    # trial: a page holding a shot flagged the item), and `doc.question` and the like name the item alone
    out: dict[str, Any] = {"id": ident, "prompt": pairs[0][0], "target": rec.get("target"), "doc": rec["doc"]}
    return out | ({"choices": conts} if len(conts) > 1 else {})


def known_layout(rec: dict[str, Any]) -> dict[str, Any]:
    """A record in a layout whose roles field names alone cannot tell (ARC, the harness's
    samples), flattened to plain fields; any other record as it is."""
    for flatten in (_harness, _arc):
        flat = flatten(rec)
        if flat is not None:
            return flat
    return rec
