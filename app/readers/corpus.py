"""Corpus files -> iterator of RawDocument, counting every skipped record by reason.

Formats, by file name: *.jsonl / *.ndjson / *.json (one JSON object a line), optionally
.gz, .zst, .bz2 or .xz compressed; *.parquet; *.arrow (Arrow IPC, as Hugging Face save_to_disk
writes; the folder's state.json and dataset_info.json are left out); *.txt (optionally
compressed the same ways; the whole file is one document).
Bad records never stop a file: each is counted in `skipped` under a reason, as is a record
kept with a repair (REPAIRS: text in a one-byte encoding read as Windows-1252, other invalid
UTF-8 read with replacement characters), which
`split_counts` tells apart from the records left out. A file that cannot
be read to its end (truncated or corrupt compression, unreadable Parquet) raises
CorruptFileError, so the caller can record it as failed and roll back what it read.
"""

from __future__ import annotations

import bz2
import codecs
import contextlib
import difflib
import gzip
import io
import json
import lzma
import os
import re
import zlib
from collections import Counter
from collections.abc import Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import ijson
import orjson
import zstandard

from contam.app.core.text import without_surrogates
from contam.app.errors import CorruptFileError, InputError, cut_short, first_line

if TYPE_CHECKING:  # imported where Parquet or Arrow is read: an indexer of JSON lines (a Ray worker) never loads it
    import pyarrow as pa

MAX_RECORD_BYTES = 64 * 1024 * 1024
TOO_LONG_HINT = (  # said where records were left out as record_too_long (a trial: how big is too big?)
    f" (record_too_long: a record over {MAX_RECORD_BYTES // 2**20} MiB is left out, one document that large "
    "taking over 1 GB of memory to sign; split it into several records)"
)
MAX_RECORD_DEPTH = 1024  # nesting of a JSON record (a JSON line's is orjson's, the same)
_JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")
_COMPRESSIONS = (".gz", ".zst", ".zstd", ".bz2", ".xz")
# What reading a truncated or corrupt compressed file raises.
_COMPRESSION_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error, zstandard.ZstdError, lzma.LZMAError, OSError)


@dataclass(frozen=True, slots=True)
class RawDocument:
    external_id: str
    position: int  # 1-based line number (JSONL), record (JSON array) or row (Parquet, Arrow); 0 for a text file
    text: str


def corpus_format(path: Path) -> str | None:
    """'jsonl', 'parquet', 'arrow' or 'txt' by the file name, or None for a file we do not read."""
    name = path.name.lower()
    for comp in _COMPRESSIONS:
        if name.endswith(comp):
            name = name[: -len(comp)]
            break
    if name.endswith(_JSON_SUFFIXES):
        return "jsonl"
    if name.endswith(".parquet") and name == path.name.lower():
        return "parquet"
    if name.endswith(".txt"):
        return "txt"
    if name.endswith(".arrow") and name == path.name.lower():
        return "arrow"
    return None


_READS = ".jsonl, .json, .ndjson, .parquet, .arrow or .txt, optionally .gz, .zst, .bz2 or .xz"
# A Hugging Face save_to_disk folder's own files, beside its Arrow data: not corpus text.
HF_METADATA = ("state.json", "dataset_info.json", "dataset_dict.json")


def _files_in(folder: Path) -> list[Path]:
    """The corpus files under a folder (recursive), resolved; save_to_disk metadata, and hidden
    files and folders (.git, .cache), left out, as files_not_read says: they were indexed while
    the count of files not read called them not the corpus's (a trial)."""
    out: list[Path] = []
    unlisted: list[OSError] = []
    for root, dirs, files in os.walk(folder, onerror=unlisted.append):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        out += [
            _resolved(Path(root) / f)
            for f in files
            if corpus_format(Path(f)) and f not in HF_METADATA and not f.startswith(".")
        ]
    if unlisted:  # its files were left out without a word, the run exiting 0 (a trial): refused, named
        said = "; ".join(f"{e.filename}: {e.strerror or e}" for e in unlisted[:5])
        more = f" (and {len(unlisted) - 5} more)" if len(unlisted) > 5 else ""
        raise InputError(
            f"{len(unlisted)} folder(s) under {folder} cannot be listed, so their files cannot be indexed: "
            f"{said}{more}; make them readable, or name the folders to index instead of {folder}"
        )
    return out


def _resolved(path: Path) -> Path:
    """The path resolved, or as it is where it cannot be (a loop of links) or is nothing (a link
    to nothing): the indexer then fails that file alone, naming it."""
    try:
        real = path.resolve()
        there = real.exists()  # (a file in a folder that can be listed, not entered: PermissionError)
    except (RuntimeError, OSError):
        return path.absolute()
    return real if there else path.absolute()


def files_not_read(paths: list[Path]) -> tuple[Counter[str], list[str]]:
    """Files under the given folders that find_files leaves out, by suffix: not a corpus format
    (save_to_disk metadata not counted); and, by name, the hidden files of a corpus format and
    hidden folders it leaves out (.git, .cache: not the corpus's), and the linked folders it does
    not walk ("NAME/ (a link)": left out without a word, where hidden ones were named: a trial)."""
    out: Counter[str] = Counter()
    hidden: list[str] = []
    for p in dict.fromkeys(p.resolve() for p in paths):
        if p.is_dir():
            for root, dirs, files in os.walk(p):
                hidden += [str(Path(root) / d) + "/" for d in dirs if d.startswith(".")]
                hidden += [
                    f"{Path(root) / d}/ (a link)"
                    for d in dirs
                    if not d.startswith(".") and (Path(root) / d).is_symlink()
                ]
                hidden += [str(Path(root) / f) for f in files if f.startswith(".") and corpus_format(Path(f))]
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                for f in files:
                    if not (corpus_format(Path(f)) or f in HF_METADATA or f.startswith(".")):
                        suffixes = (
                            Path(f).suffixes[-2:] if Path(f).suffix.lower() in _COMPRESSIONS else Path(f).suffixes[-1:]
                        )
                        out["".join(suffixes).lower() or "no suffix"] += 1
    return out, hidden


def check_path(p: Path) -> None:
    """Refuse a path given to index that is not there, or a file of no format read here (a
    folder's files are looked at as it is walked)."""
    if not p.exists():
        what = "a link to nothing, or a loop of links" if p.is_symlink() else "no such file or directory"
        raise InputError(f"{what}: {p}")
    if not p.is_dir() and not corpus_format(p):
        raise InputError(f"{p}: unsupported file type (use {_READS})")


def find_files(paths: list[Path]) -> list[Path]:
    """Corpus files under the given files and directories (recursive), sorted, de-duplicated."""
    found: dict[str, Path] = {}
    for p in paths:
        check_path(p)
        if p.is_dir():
            in_dir = _files_in(p)
            if not in_dir:
                hidden = files_not_read([p])[1]  # said, where they alone were there (a trial)
                left = (
                    f"; hidden and linked ones are left out, name one to index it: {', '.join(hidden[:3])}"
                    if hidden
                    else ""
                )
                raise InputError(f"{p}: no corpus files in this folder (reads {_READS}){left}")
            found.update((str(fp), fp) for fp in in_dir)
        else:
            found[str(p.resolve())] = p.resolve()
    return [found[k] for k in sorted(found)]


# what each compression's stream starts with, and the suffix that names it
COMPRESSION_MAGIC = (
    (re.compile(rb"\x1f\x8b\x08"), ".gz"),
    (re.compile(rb"\x28\xb5\x2f\xfd|[\x50-\x5f]\x2a\x4d\x18"), ".zst"),  # a frame, or a skippable one
    (re.compile(rb"BZh[1-9]1AY&SY"), ".bz2"),
    (re.compile(rb"\xfd7zXZ\x00"), ".xz"),
)


def _misnamed(path: Path) -> str:
    """Why a compressed file failed at its start, where its first bytes are not what its suffix
    names ("" otherwise): "cannot read to the end (BadGzipFile: Not a gzipped file (b'no'))" was
    said of a file nothing could be read of (a new user's trial)."""
    name = path.name.lower()
    name = name[:-1] if name.endswith(".zstd") else name  # zstd's other suffix
    named = next(((m, s) for m, s in COMPRESSION_MAGIC if name.endswith(s)), None)
    try:
        with open(path, "rb") as f:
            head = f.read(10)
    except OSError:
        return ""
    if named is None or named[0].match(head):
        return ""
    actual = next((s[1:] + "-compressed" for m, s in COMPRESSION_MAGIC if m.match(head)), "not compressed")
    return (
        f"{path}: its name says {path.suffix[1:]}, but the file is {actual} (it starts {head[:8]!r}): "
        "give it the name of what it is"
    )


def open_binary(path: Path) -> io.BufferedReader:
    """The file's decompressed byte stream (gzip, zstd, bzip2 and xz by name), as UTF-8 (as_utf8)."""
    stream = _decompressed(path)
    return as_utf8(stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(cast(Any, stream), 1 << 20))


def _decompressed(path: Path) -> IO[bytes]:
    name = path.name.lower()
    if name.endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    if name.endswith((".zst", ".zstd")):
        return cast(IO[bytes], ZstdReader(open(path, "rb"), ZSTD_CORPUS_WINDOW))
    if name.endswith(".bz2"):
        return cast(IO[bytes], bz2.open(path, "rb"))
    if name.endswith(".xz"):
        return cast(IO[bytes], lzma.open(path, "rb"))
    return open(path, "rb")


# the largest window a zstd frame may ask for: zstandard's default (128 MiB: what `zstd` itself
# decodes without --long or --memory) for an upload, whose memory the server bounds; the format's
# largest (2 GiB, `zstd --long=31`) for a corpus file, which the indexer reads from its own disk
# (files made with --long=30 failed "cannot read to the end": a new user's trial)
ZSTD_WINDOW = 1 << 27
ZSTD_CORPUS_WINDOW = 1 << 31


class ZstdReader(io.RawIOBase):
    """The decompressed bytes of a zstd stream of one frame or more, read as it comes, that fails
    (EOFError, as gzip's reader does) where the stream ends inside a frame: zstandard's
    stream_reader ended a cut-off file quietly where the data stopped, so half a corpus file was
    indexed as the whole of it. Input goes to the decompressor SLICE bytes at a time:
    a call has no output bound, and a zstd block of 128 KiB can take 4 bytes, so a 64 KB upload of
    zeros made 2 GiB in one call before the size limit could see it (256 bytes a call read a 105 MB
    file in 0.17 s, a KiB in 0.14 s, the stream reader in 0.10 s). Closing it closes `raw`."""

    CHUNK = 1 << 20  # input read at a time, and about the output made before a read returns
    SLICE = 1 << 8  # input per decompress call: at most 8 MiB out

    def __init__(self, raw: IO[bytes], max_window: int = ZSTD_WINDOW) -> None:
        super().__init__()
        self.raw = raw
        self.max_window = max_window
        # one for every frame (making one cost 16 us)
        self._dctx = zstandard.ZstdDecompressor(max_window_size=max_window)
        self._frame = self._dctx.decompressobj()
        self._in_frame = False  # input given to the current frame that has not ended it
        self._in = memoryview(b"")  # input read, from _pos on not yet decompressed
        self._pos = 0
        self._out = memoryview(b"")  # decompressed, not yet read
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._out and not self._done:
            self._fill()
        n = min(len(b), len(self._out))
        b[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def _fill(self) -> None:
        if self._pos >= len(self._in):
            self._in, self._pos = memoryview(self.raw.read(self.CHUNK)), 0
            if not self._in:
                if self._in_frame:  # an EOFError, as gzip, bz2 and xz raise: said as a file cut short (cut_short)
                    raise EOFError("the file ends inside a zstd frame (truncated)")
                self._done = True
                return
        out: list[bytes] = []
        made = 0
        while self._pos < len(self._in) and made < self.CHUNK:
            piece = self._in[self._pos : self._pos + self.SLICE]
            try:
                out.append(self._frame.decompress(piece))
            except zstandard.ZstdError as exc:
                if "too much memory" not in str(exc):
                    raise
                raise zstandard.ZstdError(
                    f"a zstd frame asks for a window over {self.max_window >> 20} MiB (a file made with `zstd "
                    "--long`), more than is allowed here: decompress the file first, or compress it without --long"
                ) from exc
            made += len(out[-1])
            self._pos += len(piece)
            self._in_frame = True
            if self._frame.eof:  # the next frame's bytes, if any, go round again
                self._pos -= len(self._frame.unused_data)
                self._frame = self._dctx.decompressobj()
                self._in_frame = False
        self._out = memoryview(b"".join(out))

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
        super().close()


# byte order marks of the wide encodings Windows tools write ("Unicode text"): UTF-32's first, as
# UTF-32LE's begins with UTF-16LE's
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def as_utf8(stream: io.BufferedReader) -> io.BufferedReader:
    """The stream as UTF-8 bytes: a UTF-16 or UTF-32 file, told by its byte order mark, or
    UTF-16 without one, told by the NUL byte beside each character of Latin script, is decoded
    as it is read (read as bytes, each of its lines was a malformed record); any other stream is
    returned as it is."""
    head = stream.peek(4096)[:4096]
    for bom, encoding in _WIDE_BOMS:
        if head.startswith(bom):
            return io.BufferedReader(_Transcoded(stream, encoding), 1 << 20)
    guessed = _utf16_without_bom(head)
    return io.BufferedReader(_Transcoded(stream, guessed), 1 << 20) if guessed else stream


def _utf16_without_bom(head: bytes) -> str | None:
    """ "utf-16-le" or "utf-16-be" for text of mostly Latin script written in UTF-16 with no byte
    order mark (a NUL after, or before, nearly every character), else None. Binary files
    (Parquet, Arrow) have NULs in both places, UTF-8 text none."""
    if len(head) < 16:
        return None
    head = head[: len(head) // 2 * 2]
    even, odd = head[0::2].count(0) / (len(head) // 2), head[1::2].count(0) / (len(head) // 2)
    if odd > 0.9 and even < 0.1:
        return "utf-16-le"
    if even > 0.9 and odd < 0.1:
        return "utf-16-be"
    return None


class _Transcoded(io.RawIOBase):
    """A stream in `encoding` read as UTF-8 bytes (characters it cannot decode replaced)."""

    def __init__(self, stream: io.BufferedReader, encoding: str) -> None:
        self._text = io.TextIOWrapper(stream, encoding=encoding, errors="replace", newline="")
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        while not self._pending:
            chunk = self._text.read(1 << 16)
            if not chunk:
                return 0
            self._pending = chunk.encode("utf-8")
        n = min(len(buf), len(self._pending))
        buf[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        if not self.closed:
            self._text.close()
        super().close()


class Skipped(Counter[str]):
    """Records skipped or repaired, by reason (a Counter), and where the first few of each were
    (`where`: reason -> ["line 4", ...]): the readers say where they are (`at`) as they read."""

    SHOWN = 3

    def __init__(self) -> None:
        super().__init__()
        self.at = ""
        self.where: dict[str, list[str]] = {}

    def __setitem__(self, key: str, value: int) -> None:
        if self.at and value > self.get(key, 0):
            places = self.where.setdefault(key, [])
            if len(places) < self.SHOWN:
                places.append(self.at)
        super().__setitem__(key, value)


def _at(skipped: Counter[str], place: str) -> None:
    """Say where the reader is, for a Skipped count (a plain Counter keeps no places)."""
    if isinstance(skipped, Skipped):
        skipped.at = place


# reasons counted for records that were indexed, repaired, not left out
# missing_id: no --id-field, FILE:LINE its id; surrogate_replaced: a lone "\ud800" escape became U+FFFD
# decoded_cp1252: not UTF-8, and no UTF-8 character beyond ASCII in it: read as Windows-1252
REPAIRS = frozenset({"decoded_cp1252", "invalid_utf8_replaced", "missing_id", "surrogate_replaced"})
DEFAULT_ID_FIELD = "id"  # optional: a record without it is named FILE:LINE; one named otherwise is asked for


def split_counts(counts: Mapping[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """(records skipped, records indexed with a repair), each by reason, from one count of both."""
    skipped = {k: v for k, v in sorted(counts.items()) if k not in REPAIRS}
    return skipped, {k: v for k, v in sorted(counts.items()) if k in REPAIRS}


# a character of UTF-8 beyond ASCII: a lead byte and its continuation bytes (no overlong form, no surrogate)
_UTF8_WIDE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
    rb"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}|\xf4[\x80-\x8f][\x80-\xbf]{2}"
)


def _decode(raw: bytes) -> tuple[str, str | None]:
    """The text, and the repair it took (None: UTF-8 as it is; counted only for a record that
    becomes a document). Bytes that are not UTF-8 and hold no character of UTF-8 beyond ASCII
    are text in a one-byte encoding, read as Windows-1252 (the superset of Latin-1 that old tools
    write and that browsers read a "latin1" page as; its five unassigned bytes as Latin-1's
    controls), `decoded_cp1252`: with replacement characters, "café" was "caf\ufffd", a token
    no copy of an accented item shares (Latin-1 text makes a UTF-8 character by chance only where
    an accented capital or "ß" meets a symbol such as "°" or "»"). Otherwise, UTF-8 damaged here
    and there: the bytes that are not UTF-8 become U+FFFD, `invalid_utf8_replaced`."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        pass
    if _UTF8_WIDE.search(raw) is None:
        return raw.decode("cp1252", "contam-latin1"), "decoded_cp1252"
    return raw.decode("utf-8", "replace"), "invalid_utf8_replaced"


def _latin1_for(exc: UnicodeError) -> tuple[str, int]:
    """A codecs error handler: a byte Windows-1252 leaves unassigned read as Latin-1 reads it."""
    assert isinstance(exc, UnicodeDecodeError)
    return exc.object[exc.start : exc.end].decode("latin-1"), exc.end


codecs.register_error("contam-latin1", _latin1_for)


_ENCODING_HINT = " (the file is not UTF-8 text: re-encode it as UTF-8)"


def _not_utf8(path: Path, sample: int = 1 << 16) -> bool:
    """Whether a JSON-lines or text file's first bytes are not UTF-8 text (UTF-16, Latin-1); a
    Parquet or Arrow file is binary, and never text in another encoding."""
    if corpus_format(path) not in ("jsonl", "txt"):
        return False
    with contextlib.suppress(*_COMPRESSION_ERRORS), open_binary(path) as stream:
        head = stream.read(sample)
        if b"\x00" in head:  # UTF-16 or UTF-32 with no byte order mark: text never holds NUL
            return True
        try:
            codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
        except UnicodeDecodeError:
            return True
    return False


def _read_lines(buffered: io.BufferedReader, skipped: Counter[str], max_bytes: int) -> Iterator[tuple[int, bytes]]:
    """(line number, line) pairs; over-long lines are skipped without holding them in memory."""
    lineno = 0
    while True:
        line = buffered.readline(max_bytes + 1)
        if not line:
            return
        lineno += 1
        _at(skipped, f"line {lineno}")
        if len(line) > max_bytes and not line.endswith(b"\n"):
            skipped["record_too_long"] += 1
            while True:  # drain the rest of the line
                rest = buffered.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
            continue
        yield lineno, line


ABSENT = object()


def text_fields(text_field: str) -> list[str]:
    """The fields a --text-field names: one, or several separated by commas, of which a record's
    text is the first it holds (a table's: the first column it has). A corpus whose files keep
    their text under different names (Parquet's `text`, an export's `doc.content`) took a run
    per name, and a rerun of the whole failed the files of the other names (a new user's trial)."""
    return [f.strip() for f in text_field.split(",") if f.strip()] or [text_field]


def _looked_up(text_field: str) -> list[str]:
    """The fields a record's or a table's text is looked for in: the name as given first, a field
    named "title,body" as before a list was read (it could no longer be named: a review), then
    text_fields."""
    return list(dict.fromkeys([text_field, *text_fields(text_field)]))


def _first_text(rec: Mapping[str, Any], fields: list[str]) -> Any:
    """The value of the first of `fields` the record holds as text (a chat's messages too), not
    null nor blank; else the first one it holds (None when it holds none), for _text_of to count
    as empty, missing or no text (a blank `text` after a missing `doc.content` was counted
    missing: a review; an object in `text` hid the `content` after it: a trial)."""
    if len(fields) == 1:  # the usual case, once per record: no list, no scan of the text
        return field_value(rec, fields[0])
    held = None
    for f in fields:
        v = field_value(rec, f)
        if v is None:
            continue
        if isinstance(v, str) and v and not v.isspace():  # isspace stops at the first letter: no copy
            return v
        if isinstance(v, list) and chat_text(v) is not None:  # a chat's messages are text (_text_of)
            return v
        held = v if held is None else held  # blank text or an object: a later field may hold text (a trial)
    return held


def field_value(rec: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """rec[name], or, for a name with dots that is not a key, the value at that path inside
    nested objects ("sql.human_readable": WikiSQL's SQL; a corpus's "document.text"); `default`
    if there is none. The benchmark reader's field paths and the corpus's --text-field alike."""
    if name in rec or "." not in name:
        return rec.get(name, default)
    parts = name.split(".")
    for cut in range(1, len(parts)):  # a key may hold dots itself: each way of reading the path
        inner = rec.get(".".join(parts[:cut]))
        if isinstance(inner, Mapping):
            found = field_value(inner, ".".join(parts[cut:]), ABSENT)
            if found is not ABSENT:
                return found
    return default


def _column_of(schema: pa.Schema, field: str) -> tuple[str, str | None] | None:
    """(column, path inside it) of a field of a table: the column itself, or for "a.b" the struct
    column "a" whose type holds "b" (so a wrong path is refused as a missing column is); None if
    the table has no such field."""
    if field in schema.names:
        return field, None
    parts = field.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:cut])
        if head not in schema.names:
            continue
        if _struct_holds(schema.field(head).type, parts[cut:]):
            return head, ".".join(parts[cut:])
    return None


def _struct_holds(kind: pa.DataType, parts: list[str]) -> bool:
    """Whether a struct type holds the field at path `parts`, a field's own name holding dots too
    (each way of reading the path, as field_value reads an object)."""
    import pyarrow as pa

    if not parts:
        return True
    if not pa.types.is_struct(kind):
        return False
    for cut in range(1, len(parts) + 1):
        k = kind.get_field_index(".".join(parts[:cut]))
        if k >= 0 and _struct_holds(kind.field(k).type, parts[cut:]):
            return True
    return False


def _column_values(batch: Any, column: tuple[str, str | None]) -> list[Any]:
    """A table batch's values of a field (_column_of): the column's, or those at the path inside
    each of its objects (None where a row has none)."""
    name, inner = column
    values: list[Any] = batch.column(name).to_pylist()
    if inner is None:
        return values
    return [field_value(v, inner) if isinstance(v, Mapping) else None for v in values]


def _text_of(value: Any, skipped: Counter[str]) -> str | None:
    if value is None:
        skipped["missing_text"] += 1
        return None
    if isinstance(value, list) and (chat := chat_text(value)) is not None:
        value = chat
    if not isinstance(value, str):
        skipped["non_string_text"] += 1
        return None
    if not value.strip():
        skipped["empty_text"] += 1
        return None
    return value


MESSAGE_TEXT_KEYS = ("content", "value", "text")  # a chat message's text: OpenAI's, ShareGPT's, others'


def chat_text(messages: list[Any]) -> str | None:
    """A chat's messages as one document, each message's text a paragraph (fine-tuning sets hold
    benchmark items so: a trial's chat corpus could not be indexed, `messages` "non_string_text"):
    a list of texts, or of messages whose text is under MESSAGE_TEXT_KEYS (itself a text or a list
    of parts with a "text"); None for any other list (a list of numbers is no text)."""
    parts = []
    for m in messages:
        text = m if isinstance(m, str) else _message_text(m) if isinstance(m, dict) else None
        if text is None:
            return None
        parts.append(text)
    return "\n\n".join(p for p in parts if p.strip()) or None


def _message_text(message: dict[str, Any]) -> str | None:
    value = next((message[k] for k in MESSAGE_TEXT_KEYS if k in message), None)
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: [{"type": "text", "text": ...}, {"type": "image_url", ...}]
        return "\n".join(p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "" if value is None and any(k in message for k in ("role", "from")) else None


def _usable_id(value: Any) -> bool:
    """Whether a record's id field holds an id (_id_of names it FILE:LINE otherwise)."""
    return value is not None and not isinstance(value, dict | list)


def _id_of(value: Any, fallback: str) -> str:
    """A record's id as the index can store it: NUL and lone surrogates (a JSON "\\ud800") are
    replaced by U+FFFD, as no database's text holds them (one such id stopped the whole run, every
    rerun too)."""
    if not _usable_id(value):
        return fallback
    return without_surrogates(str(value).replace("\x00", "\ufffd"))


class NestedTooDeep(Exception):
    """A JSON value nested deeper than its reader's bound (json_value)."""


_OPEN, _CLOSE = ("start_map", "start_array"), ("end_map", "end_array")


def json_value(events: Iterator[tuple[str, Any]], event: str, value: Any, keep: bool, max_depth: int) -> Any:
    """The JSON value whose first event of `events` (ijson.basic_parse) is (`event`, `value`),
    read to its end: built when `keep` (else skipped, holding nothing); NestedTooDeep once it is
    read, if it nests containers deeper than `max_depth` (the value itself is depth 1), the
    events then standing after it. basic_parse, not ijson.parse or ijson.items: those give each
    event its path, a string as long as the nesting, and a record of 100,000 nested lists (200
    KB) took 23 GB before its depth was checked."""
    builder = ijson.ObjectBuilder() if keep else None
    depth = deepest = 0
    while True:
        depth += (event in _OPEN) - (event in _CLOSE)
        if depth > deepest:
            deepest = depth
            if deepest > max_depth:
                builder = None  # read on to its end, keeping nothing
        if builder is not None:
            builder.event(event, value)
        if depth == 0:
            if deepest > max_depth:
                raise NestedTooDeep(f"nested {deepest} deep")
            return builder.value if builder is not None else None
        event, value = next(events)


def json_array_values(stream: IO[bytes], max_depth: int) -> Iterator[Any]:
    """The elements of the JSON array `stream` holds, parsed one at a time (memory holds one);
    an element nested deeper than `max_depth` comes as a NestedTooDeep (not raised: the next
    ones follow). ijson.JSONError for what is not one JSON array."""
    events = iter(ijson.basic_parse(stream, use_float=True))
    first = next(events, None)
    if first is None or first[0] != "start_array":
        raise ijson.JSONError("not a JSON array")
    for event, value in events:
        if event == "end_array":
            break
        try:
            yield json_value(events, event, value, True, max_depth)
        except NestedTooDeep as exc:
            yield exc
    for _ in events:  # what follows the array: nothing, or an error
        pass


def _lenient_json(line: bytes) -> tuple[Any, str | None, str]:
    """A line orjson refused, read as Python's json reads it: text that is not UTF-8 decoded as
    _decode decodes it, and NaN and Infinity taken (json.dumps writes them, by default, into
    fields a corpus does not read); (value, the repair _decode made, the reason it is skipped:
    "" if it is not)."""
    text, repaired = _decode(line)  # orjson rejects invalid UTF-8
    try:
        return json.loads(text), repaired, ""
    except RecursionError:  # nested deeper than Python's stack allows (orjson: 1,024)
        return None, repaired, "nested_too_deep"
    except ValueError:
        return None, repaired, "malformed_json"


def _json_records(
    path: Path, skipped: Counter[str], max_bytes: int
) -> Generator[tuple[int, Any, str | None], None, None]:
    """(line number, value, the repair its decoding made, _decode's) of a JSON-lines file, or
    (record number, value, None) of a JSON array (parsed one at a time); malformed lines are
    skipped and counted."""
    with open_binary(path) as stream:
        if stream.peek(3)[:3] == codecs.BOM_UTF8:  # a byte order mark: JSON parsers refuse it
            stream.read(3)
        if stream.peek(1 << 12).lstrip()[:1] == b"[":  # a JSON array of records (a .json file)
            row = 0
            try:
                for row, obj in enumerate(json_array_values(stream, MAX_RECORD_DEPTH), 1):
                    _at(skipped, f"record {row}")
                    if isinstance(obj, NestedTooDeep):
                        skipped["nested_too_deep"] += 1
                        continue
                    yield row, obj, None
            except ijson.JSONError as exc:
                where = f"after record {row}" if row else "before its first record"
                hint = _ENCODING_HINT if _not_utf8(path) else ""
                raise CorruptFileError(f"{path}: not valid JSON {where} ({first_line(exc)}){hint}") from exc
            return
        for lineno, line in _read_lines(stream, skipped, max_bytes):
            if not line.strip():
                continue
            repaired = None
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                obj, repaired, why = _lenient_json(line)
                if why:
                    skipped[why] += 1
                    continue
            yield lineno, obj, repaired


def read_jsonl(
    path: Path, text_field: str, id_field: str, skipped: Counter[str], max_bytes: int = MAX_RECORD_BYTES
) -> Iterator[RawDocument]:
    """Documents of a JSON-lines file (.jsonl, .ndjson, .json) or of a .json file holding a JSON array."""
    lineno = 0
    fields = _looked_up(text_field)
    try:
        for lineno, obj, repaired in _json_records(path, skipped, max_bytes):
            if not isinstance(obj, dict):
                skipped["not_an_object"] += 1
                continue
            text = _text_of(_first_text(obj, fields), skipped)
            if text is None:
                continue
            if repaired:
                skipped[repaired] += 1
            if (whole := without_surrogates(text)) != text:  # "\ud800" alone: it broke every output
                text = whole
                skipped["surrogate_replaced"] += 1
            ident = field_value(obj, id_field)
            if id_field != DEFAULT_ID_FIELD and not _usable_id(ident):  # a field asked for by name
                skipped["missing_id"] += 1
            yield RawDocument(_id_of(ident, f"{path.name}:{lineno}"), lineno, text)
    except _COMPRESSION_ERRORS as exc:
        if not lineno and (why := _misnamed(path)):
            raise CorruptFileError(why) from exc
        where = f" after line {lineno}" if lineno else ""
        raise CorruptFileError(
            f"{path}: cannot read to the end{where} ({type(exc).__name__}: {exc}){cut_short(exc)}"
        ) from exc


def read_txt(path: Path, skipped: Counter[str], max_bytes: int = MAX_RECORD_BYTES) -> Iterator[RawDocument]:
    try:
        with open_binary(path) as stream:
            raw = stream.read(max_bytes + 1)
    except _COMPRESSION_ERRORS as exc:
        why = _misnamed(path) or f"{path}: cannot read to the end ({type(exc).__name__}: {exc}){cut_short(exc)}"
        raise CorruptFileError(why) from exc
    if len(raw) > max_bytes:
        skipped["record_too_long"] += 1
        return
    decoded, repaired = _decode(raw)
    text = _text_of(decoded, skipped)
    if text is not None:
        if repaired:
            skipped[repaired] += 1
        yield RawDocument(path.name, 0, text)


def read_parquet(path: Path, text_field: str, id_field: str, skipped: Counter[str]) -> Iterator[RawDocument]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise CorruptFileError(f"{path}: not a readable Parquet file ({exc})") from exc
    text_col = _text_column(path, text_field, pf.schema_arrow)
    id_col = _id_column(path, id_field, pf.schema_arrow)
    cols = list(dict.fromkeys([text_col[0]] + ([id_col[0]] if id_col else [])))
    row = 0
    try:
        for batch in pf.iter_batches(batch_size=2048, columns=cols):
            texts = _column_values(batch, text_col)
            ids = _column_values(batch, id_col) if id_col else [None] * len(texts)
            yield from _batch_documents(path, texts, ids, row, skipped, id_field != DEFAULT_ID_FIELD)
            row += len(texts)
    except (pa.ArrowException, OSError) as exc:
        raise CorruptFileError(f"{path}: corrupt Parquet data after row {row} ({exc})") from exc


def _first_records(path: Path, records: int) -> list[Any]:
    """The first `records` values of a JSON-lines file (or array), as far as it reads."""
    first: list[Any] = []
    records_read = _json_records(path, Counter(), MAX_RECORD_BYTES)
    with contextlib.suppress(*_COMPRESSION_ERRORS, CorruptFileError), contextlib.closing(records_read):
        first.extend(obj for _n, (_lineno, obj, _repaired) in zip(range(records), records_read, strict=False))
    return first


def _jsonl_fields(path: Path, records: int) -> list[str]:
    """The keys of the first `records` JSON objects of a JSON-lines file (or array), in order of appearance."""
    seen: dict[str, None] = {}
    for obj in _first_records(path, records):
        if isinstance(obj, dict):
            seen.update(dict.fromkeys(map(str, obj)))
    return list(seen)


def fields_seen(path: Path, records: int = 100) -> list[str]:
    """The field names a corpus file holds (JSON lines: those of its first records; Parquet: its
    columns; a text file has none): what a message about a wrong --text-field shows."""
    fmt = corpus_format(path)
    if fmt in ("parquet", "arrow"):
        import pyarrow as pa
        import pyarrow.parquet as pq
    if fmt == "parquet":
        with contextlib.suppress(pa.ArrowException, OSError):
            return list(pq.ParquetFile(path).schema_arrow.names)
        return []
    if fmt == "arrow":
        with contextlib.suppress(pa.ArrowException, OSError, CorruptFileError, StopIteration):  # no batch at all
            return list(next(_arrow_batches(path)).schema.names)
        return []
    return _jsonl_fields(path, records) if fmt == "jsonl" else []


TEXT_FIELD_HINT = "choose the text field with --text-field"  # the Python API says text_field= (FilesFailed)


def why_no_documents(path: Path, text_field: str, skipped: Counter[str]) -> str:
    """Why a corpus file gave no documents, naming the likely cause: a missing text field (with
    the fields it does hold), records that were all skipped, or no records at all."""
    fields = fields_seen(path)
    if fields and not any(_field_there(path, fields, f) for f in _looked_up(text_field)):
        if wrapper := _records_inside(path):  # {"data": [{...}, ...]}: the records are one level down
            return (
                f"no documents: the file is one JSON object whose {wrapper!r} holds the records; give contam "
                f"JSON lines or a JSON array of records (e.g. jq -c '.{wrapper}[]' FILE > FILE.jsonl)"
            )
        seen = f"fields seen: {', '.join(fields)}{_nested_text(path)}{_chats(path)}"
        return f"no documents: no field {_named(text_fields(text_field))}; {seen} ({TEXT_FIELD_HINT})"
    left_out, _repaired = split_counts(skipped)
    objects = (found for f in _looked_up(text_field) if (found := _object_field(path, f)) is not None)
    if left_out.get("non_string_text") and (inside := next(objects, None)) is not None:
        text_field, (keys, text_path) = inside
        others = ", ".join(f"{k}: {v}" for k, v in left_out.items() if k != "non_string_text")
        return (
            f"no documents: the field {text_field!r} holds objects, not text (their fields: {', '.join(keys)})"
            + (f"; name the text inside, e.g. --text-field {text_field}.{text_path}" if text_path else "")
            + (f" (other records skipped: {others})" if others else "")
        )
    if left_out:
        reasons = ", ".join(f"{k}: {v}" for k, v in left_out.items())
        # a file in another encoding (UTF-16 from Windows tools, say) fails as garbled records
        encoding = _ENCODING_HINT if _not_utf8(path) else ""
        limit = TOO_LONG_HINT if left_out.get("record_too_long") else ""  # a .txt is one record: the limit said
        return f"no documents: every record was skipped ({reasons}){encoding}{limit}"
    return "no documents: the file holds no records"


def _nested_text(path: Path) -> str:
    """ "; text inside objects, named by their path: doc.content, ..." for JSON lines whose first records hold text one
    level down or more (a new user's trial was told "fields seen: meta, doc" of a file whose text
    was doc.content, and not that a field inside is named by its path); "" if none do."""
    if corpus_format(path) != "jsonl":
        return ""
    longest: dict[str, int] = {}
    for rec in _first_records(path, 100):
        for k, v in rec.items() if isinstance(rec, dict) else ():
            for inner, n in _text_paths(v) if isinstance(v, Mapping) else ():
                longest[f"{k}.{inner}"] = max(n, longest.get(f"{k}.{inner}", 0))
    if not longest:
        return ""
    paths = sorted(longest, key=lambda p: -longest[p])
    shown = ", ".join(paths[:6]) + (", ..." if len(paths) > 6 else "")
    return f"; text inside objects, named by their path: {shown}"


def _chats(path: Path) -> str:
    """ "; a chat's messages, read as one text: messages" for JSON lines whose first records hold
    a field of chat messages (chat_text reads them), "" if none do."""
    if corpus_format(path) != "jsonl":
        return ""
    names = {str(k) for rec in _first_records(path, 20) if isinstance(rec, dict) for k, v in rec.items() if _is_chat(v)}
    return f"; a chat's messages, read as one text: {', '.join(sorted(names))}" if names else ""


def _object_field(path: Path, text_field: str) -> tuple[str, tuple[list[str], str | None]] | None:
    """(the field, (the keys, and the path inside of its longest text, if any)) of the object a
    JSON-lines file's text field holds in its first records; None if it holds none (a new
    user's --text-field meta was told only "non_string_text: 769")."""
    if corpus_format(path) != "jsonl":
        return None
    for rec in _first_records(path, 100):
        value = field_value(rec, text_field) if isinstance(rec, dict) else None
        if isinstance(value, dict) and value:
            texts = sorted(_text_paths(value), key=lambda kv: -kv[1])
            return text_field, ([str(k) for k in value][:10], texts[0][0] if texts else None)
    return None


def _text_paths(obj: Mapping[str, Any], depth: int = 3) -> Iterator[tuple[str, int]]:
    """(dotted path, length) of every string inside an object, `depth` levels down at most."""
    for k, v in obj.items():
        if isinstance(v, str) and v.strip():
            yield str(k), len(v)
        elif isinstance(v, Mapping) and depth > 1:
            yield from ((f"{k}.{p}", n) for p, n in _text_paths(v, depth - 1))


def _field_there(path: Path, fields: list[str], text_field: str) -> bool:
    """Whether a corpus file has the text field: one of the first records of JSON lines holds its
    path ("document.text" inside "document"); a table's readers check their schema themselves."""
    if corpus_format(path) != "jsonl":
        parts = text_field.split(".")
        return any(".".join(parts[:k]) in fields for k in range(1, len(parts) + 1))
    return any(
        field_value(rec, text_field, ABSENT) is not ABSENT for rec in _first_records(path, 100) if isinstance(rec, dict)
    )


def _records_inside(path: Path) -> str | None:
    """The field of a JSON file's one object that holds a list of objects (records wrapped in an
    object, as some exports write them), if that is all the file holds."""
    first = _first_records(path, 2)
    if len(first) != 1 or not isinstance(first[0], dict):
        return None
    lists = [k for k, v in first[0].items() if isinstance(v, list) and v and isinstance(v[0], dict) and not _is_chat(v)]
    return str(lists[0]) if len(lists) == 1 else None


def _is_chat(value: Any) -> bool:
    """Whether a value is a chat's messages (each with a role or speaker), which chat_text reads:
    a one-line chat file was "one JSON object whose 'messages' holds the records" (a trial)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and ("role" in m or "from" in m) for m in value)
        and chat_text(value) is not None
    )


def _arrow_batches(path: Path) -> Iterator[pa.RecordBatch]:
    """The record batches of an Arrow IPC file (stream format, as save_to_disk writes, or file format)."""
    import pyarrow as pa

    try:
        reader: Any = pa.ipc.open_stream(pa.memory_map(str(path)))
    except (pa.ArrowException, OSError):
        try:
            reader = pa.ipc.open_file(pa.memory_map(str(path)))
        except (pa.ArrowException, OSError) as exc:
            raise CorruptFileError(f"{path}: not a readable Arrow file ({exc})") from exc
        yield from (reader.get_batch(i) for i in range(reader.num_record_batches))
        return
    yield from reader


def read_arrow(path: Path, text_field: str, id_field: str, skipped: Counter[str]) -> Iterator[RawDocument]:
    """Documents of an Arrow file, batch by batch (memory-mapped: bounded memory)."""
    import pyarrow as pa

    row = 0
    try:
        for batch in _arrow_batches(path):
            text_col = _text_column(path, text_field, batch.schema)
            id_col = _id_column(path, id_field, batch.schema)
            texts = _column_values(batch, text_col)
            ids = _column_values(batch, id_col) if id_col else [None] * len(texts)
            yield from _batch_documents(path, texts, ids, row, skipped, id_field != DEFAULT_ID_FIELD)
            row += len(texts)
    except (pa.ArrowException, OSError) as exc:
        raise CorruptFileError(f"{path}: corrupt Arrow data after row {row} ({exc})") from exc


def _text_column(path: Path, text_field: str, schema: pa.Schema) -> tuple[str, str | None]:
    """The text field's column (_column_of; of several, the first the table has); a table with
    none of them fails, naming its columns."""
    fields = text_fields(text_field)
    col = next((c for f in _looked_up(text_field) if (c := _column_of(schema, f)) is not None), None)
    if col is None:
        names = ", ".join(schema.names) + _inside_structs(schema, fields[0])
        raise CorruptFileError(f"{path}: no column {_named(fields)} (columns: {names}; {TEXT_FIELD_HINT})")
    return col


def _named(fields: list[str]) -> str:
    """'a', or 'a' or 'b': the text fields asked for, as a message names them."""
    return " or ".join(map(repr, fields))


def _inside_structs(schema: pa.Schema, asked: str) -> str:
    """The text fields inside a table's struct columns, named by path, and the one likely meant (a
    trial: `--text-field doc.txt` was shown the columns `id, doc` alone)."""
    import pyarrow as pa

    def paths(fields: Iterable[pa.Field], prefix: str, depth: int) -> list[str]:
        out = []
        for f in fields:
            if pa.types.is_struct(f.type) and depth:
                out += paths(f.type, f"{prefix}{f.name}.", depth - 1)
            elif prefix and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type)):
                out.append(prefix + f.name)  # text fields only: the hint names what --text-field can take
        return out

    nested = paths(schema, "", 3)
    if not nested:
        return ""
    meant = difflib.get_close_matches(asked, [*schema.names, *nested], 1)
    shown = ", ".join(nested[:12]) + (", ..." if len(nested) > 12 else "")
    return f"; fields inside its structs: {shown}" + (f"; did you mean {meant[0]}?" if meant else "")


def _id_column(path: Path, id_field: str, schema: pa.Schema) -> tuple[str, str | None] | None:
    """The id field's column (_column_of), if the table has it. A table without the id column
    asked for by name (--id-field) fails, as one without the text column does: it was indexed
    with FILE:ROW ids, silently."""
    col = _column_of(schema, id_field)
    if col is None and id_field != DEFAULT_ID_FIELD:
        names = ", ".join(schema.names)
        raise CorruptFileError(f"{path}: no column {id_field!r} (columns: {names}; --id-field names it)")
    return col


def _batch_documents(
    path: Path, texts: list[Any], ids: list[Any], first_row: int, skipped: Counter[str], named_id: bool
) -> Iterator[RawDocument]:
    """The documents of one column batch (Parquet or Arrow) after the first_row rows before it,
    rows counted from 1 as lines are (a new user's trial: a JSON-lines file's second record was
    "line 2", a Parquet file's "row 1"); `named_id`: the id column was asked for by name (a row
    without an id is counted)."""
    for row, (value, ident) in enumerate(zip(texts, ids, strict=True), first_row + 1):
        _at(skipped, f"row {row}")
        text = _text_of(value, skipped)
        if text is not None:
            if named_id and not _usable_id(ident):
                skipped["missing_id"] += 1
            yield RawDocument(_id_of(ident, f"{path.name}:{row}"), row, text)


def read_documents(
    path: Path, skipped: Counter[str], text_field: str = "text", id_field: str = "id", limit: int | None = None
) -> Iterator[RawDocument]:
    """Documents of one corpus file (see module doc); stops after `limit` documents."""
    fmt = corpus_format(path)
    if fmt == "jsonl":
        it = read_jsonl(path, text_field, id_field, skipped)
    elif fmt == "parquet":
        it = read_parquet(path, text_field, id_field, skipped)
    elif fmt == "txt":
        it = read_txt(path, skipped)
    elif fmt == "arrow":
        it = read_arrow(path, text_field, id_field, skipped)
    else:
        raise InputError(f"{path}: unsupported file type")
    for count, doc in enumerate(it, 1):
        yield doc
        if limit is not None and count >= limit:
            return
