"""The library facade (`import contam`): contam/__init__.py loads it on first use."""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import math
import numbers
import re
import sys
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from contam.app import __version__ as __version__  # re-exported by contam/__init__.py, as the two below
from contam.app.core.config import SignatureConfig, Thresholds
from contam.app.core.types import BenchmarkItem, answer_of, given_answer
from contam.app.errors import ContamError, IncompatibleIndex, InputError, NotFoundError
from contam.app.services.checking import CheckResult as ScanResult
from contam.app.services.checking import CheckService
from contam.app.services.corpora import CorpusService, Remedies
from contam.app.services.database import connect, migrate
from contam.app.services.scanning import Evidence as Evidence
from contam.app.services.scanning import ItemResult as ItemResult
from contam.app.settings import get_settings
from contam.indexer.executors import run_index
from contam.indexer.options import IndexOptions
from contam.indexer.summary import IndexSummary

ItemLike = str | Mapping[str, Any] | BenchmarkItem
ITEM_FIELDS = ("id", "question", "passage", "choices", "answer", "solution", "alternatives")  # the REST check's
ITEM_TEXTS = ITEM_FIELDS[1:6]  # those an item's text is read from


class FilesFailed(ContamError):
    """Corpus files failed to index (`contam index` exits 1 for them); the rest were indexed,
    and `summary` says what was done. Index.add(strict=False) returns the summary instead."""

    def __init__(self, summary: IndexSummary) -> None:
        self.summary = summary
        failed = summary.failed
        shown = "; ".join(str(f.error or f.path) for f in failed[:3]) + ("; ..." if len(failed) > 3 else "")
        shown = shown.replace("--text-field", "Index.add(text_field=...)")  # the CLI's words, said for Python
        super().__init__(f"{len(failed)} of {len(summary.files)} corpus file(s) failed: {shown}")

    def __reduce__(self) -> Any:  # pickled by worker pools: rebuilt from the summary
        return (FilesFailed, (self.summary,))


def as_item(row: int, item: ItemLike, ignored: set[str] | None = None) -> BenchmarkItem:
    """A text (a question alone), a mapping with the REST check's fields (ITEM_FIELDS), or a
    BenchmarkItem, as a BenchmarkItem. A mapping's key that looks like a misspelt text field
    ("choises", "Answer") is refused, naming the field: it was dropped without a word, and the
    item scored without that text (a new user's trial). Other keys (a dataset's "subject",
    "idx") are not read, as before; they are added to `ignored`, for the caller to say so."""
    if isinstance(item, BenchmarkItem):
        return item
    if isinstance(item, str):
        return BenchmarkItem(str(row), row, question=item)
    if not isinstance(item, Mapping):
        raise InputError(f"item {row}: a text, a mapping or a BenchmarkItem, not {type(item).__name__}")
    if other := [k for k in item if k not in ITEM_FIELDS]:
        if misspelt := [(k, m) for k in other if (m := _misspelt(k))]:
            raise InputError(f"item {row}: {_misspelt_fields(misspelt)}")
        if not any(k in item for k in ITEM_TEXTS):
            # a chat row ({"messages": [...]}) was scored as an empty item, too_short, with a
            # warning alone, where the REST check refuses it (a new user's trial)
            shown = ", ".join(sorted(map(str, item))[:10])
            raise InputError(
                f"item {row}: none of its keys is a field an item's text is read from (its keys: {shown}; the "
                f"fields: {', '.join(ITEM_FIELDS)}): give {{'question': ...}}, or scan the dataset's file with "
                "Index.scan_file, which reads a file's rows in any layout `contam scan` reads (chat messages too)"
            )
        if ignored is not None:
            ignored.update(str(k) for k in other)
    item = {k: v for k, v in item.items() if not _missing(v)}  # a DataFrame row's NaN was the text "nan"
    choices = _texts(row, "choices", item.get("choices"))
    ident = item.get("id")
    # as the REST check and a file's reader make them: GSM8K's "...\n#### 72" is its final answer beside
    # its solution (it was all answer here, so a page with the question alone scored otherwise: a trial)
    answer, solution, alternatives = given_answer(
        answer_of("" if item.get("answer") is None else _whole(item["answer"]), choices),  # 0 is an index
        str(item.get("solution") or ""),
        choices,
        _texts(row, "alternatives", item.get("alternatives")),
    )
    return BenchmarkItem(
        str(ident) if ident is not None else str(row),
        row,
        question=str(item.get("question") or ""),
        passage=str(item.get("passage") or ""),
        choices=choices,
        answer=answer,
        solution=solution,
        alternatives=alternatives,
    )


def _missing(value: Any) -> bool:
    """None, NaN or pandas' NA: a DataFrame's missing value (`to_dict("records")` gives NaN where a
    row has none, a nullable column NA), which is no text (str() made it "nan"; NA had no truth value)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    return type(value).__name__ in ("NAType", "NaTType")


def _whole(value: Any) -> Any:
    """A whole number given as a float (2.0) as the int it is, as the REST check reads it: a
    DataFrame's integer column with a missing value is float64 (2.0, NaN), and the answer 2.0 of
    three choices was the text "2.0", no choice and no warning, where it is the third."""
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and float(value).is_integer():
        return int(float(value))
    return value


def _rows(items: Any) -> Any:
    """A pandas DataFrame's rows, as mappings: iterating one gives its column names, each of which
    was scored as a question, all too_short, without a word (a trial). A polars DataFrame's too (its
    to_dict takes no "records": a TypeError). Other iterables as they are."""
    if hasattr(items, "columns") and not isinstance(items, Mapping):
        if hasattr(items, "iter_rows"):  # polars, whose missing value is None
            return items.iter_rows(named=True)
        if hasattr(items, "to_dict"):
            return items.to_dict("records")
    return items


# how a scan's notes tell a Python user to act on the corpora it left out (it was told of uploads)
PYTHON_REMEDIES = Remedies(
    "a scan naming them in `corpora` checks against them", "Index.delete(NAME), then Index.add(NAME, paths) again"
)
CLI_FIRST = "run `contam index` first"  # what the services tell a caller with no corpus to check against
# the way out of scanning.py's refusal of an index made by another release, in CLI commands
REINDEX = re.compile(
    r"\(`contam corpora delete (?P<name>.+?)`, then `contam index --corpus (?P=name) PATH\.\.\.` on its files\)"
)


@contextlib.contextmanager
def _in_python_terms() -> Iterator[None]:
    """The services' "no corpus is indexed yet: run `contam index` first", and the way out of an
    index another release made, said as the Python API does it (Index.add, Index.delete): a
    notebook's user was sent to the command line (a trial)."""
    try:
        yield
    except NotFoundError as exc:
        if CLI_FIRST not in exc.message:
            raise
        told = exc.message.replace(CLI_FIRST, "add one first with Index.add(corpus, paths) (`contam index` in a shell)")
        raise NotFoundError(told, exc.detail) from None
    except IncompatibleIndex as exc:  # an index another release made: its way out was CLI commands too
        python = REINDEX.sub(
            lambda m: f"(Index.delete({m['name']!r}), then Index.add({m['name']!r}, paths))", exc.message
        )
        if python == exc.message:
            raise
        raise IncompatibleIndex(python, exc.detail) from None


def _texts(row: int, name: str, given: Any) -> tuple[str, ...]:
    """A list of texts (a list, a tuple, an array; a single text is one); a missing one (None,
    NaN) is the empty text, as a benchmark file's null is, keeping its place: it was "None", a
    choice a page could hold."""
    given = () if given is None else given
    if isinstance(given, bytes | bytearray):
        given = given.decode("utf-8", "replace")
    if isinstance(given, str):  # a string is one choice, not one a character (a review)
        given = (given,) if given else ()
    refused = InputError(f"item {row}: {name} must be a list of texts, got {type(given).__name__}")
    if isinstance(given, Mapping):  # ARC's {"text": [...], "label": [...]}: its reader knows the layout
        raise InputError(
            f"{refused.message} (a dataset's own layout, such as ARC's {{'text': [...], 'label': [...]}}, "
            "goes through Index.scan_file, which reads it; or give the list of texts)"
        )
    if not isinstance(given, Iterable):
        raise refused
    try:
        return tuple("" if _missing(c) else str(c) for c in given)
    except TypeError:  # iterable in name only (a 0-d array)
        raise refused from None


def _misspelt(key: Any) -> str | None:
    """The text field a key is likely a misspelling of, or None (an id is no text: "idx" is a
    dataset's own key, not a misspelt "id")."""
    close = difflib.get_close_matches(str(key), ITEM_FIELDS[1:], 1, 0.8)
    return close[0] if close else None


def _misspelt_fields(keys: Sequence[tuple[Any, str]]) -> str:
    said = ", ".join(f"{k!r} (did you mean {field!r}?)" for k, field in keys)
    return (
        f"{said} {'is not a field' if len(keys) == 1 else 'are not fields'} of an item, and the item would be "
        f"scored without that text (the fields: {', '.join(ITEM_FIELDS)}); rows of a dataset's own layout go "
        "through Index.scan_file, which maps their fields as `contam scan` does"
    )


def _names(corpora: str | Sequence[str] | None) -> list[str] | None:
    """Corpus names: one name alone is one corpus, not one a character."""
    return None if corpora is None else [corpora] if isinstance(corpora, str) else list(corpora)


def _thresholds(given: Thresholds | Mapping[str, Any] | None) -> Thresholds | None:
    """Thresholds, or a mapping of some of them by name (checked as the CLI and the API check them)."""
    if given is None or isinstance(given, Thresholds):
        return given
    if not isinstance(given, Mapping):
        raise InputError(f"thresholds: a Thresholds or a mapping of names to values, not {type(given).__name__}")
    from pydantic import ValidationError

    from contam.app.api.schemas import ThresholdsIn, threshold_problems

    try:
        return ThresholdsIn.model_validate(dict(given)).to_thresholds()
    except ValidationError as exc:
        raise InputError(f"thresholds: {threshold_problems(exc)}") from exc


class Index:
    """An index database (SQLite file or PostgreSQL): add corpora, scan items and files."""

    def __init__(self, url: str | None = None) -> None:
        """`url`: an SQLAlchemy URL (default: CONTAM_DATABASE_URL, else the user's contam.db).
        The schema is created or migrated to the current version."""
        self.url = url or get_settings().database_url
        migrate(self.url)
        self.engine = connect(self.url)

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.engine.dispose()

    def add(
        self,
        corpus: str,
        paths: str | Path | Iterable[str | Path],
        *,
        text_field: str = "text",
        id_field: str = "id",
        settings: SignatureConfig | None = None,
        workers: int = 1,
        executor: str = "local",
        address: str | None = None,
        strict: bool = True,
    ) -> IndexSummary:
        """Index corpus files or folders (`paths`, or one path) into `corpus` (created with `settings` if new);
        `text_field` names the records' text field, or several separated by commas (the first a record has).
        A file that cannot be read, or gives no documents (a wrong `text_field`, say), fails
        with its reason; the others are indexed, then FilesFailed is raised, holding the
        summary (`strict=False`: the summary is returned, its `failed` files listed there).

        `executor`: "local", `workers` processes on this machine, or "ray", Ray tasks on the
        cluster at `address` (None: RAY_ADDRESS, else the cluster started last on this machine,
        else a new local one), `workers` files in work at once (0: one per CPU of the cluster),
        each worker writing straight into the database (PostgreSQL only), as `contam index
        --executor ray --address ADDR` does."""
        opts = IndexOptions(text_field=text_field, id_field=id_field, workers=workers)
        given = [paths] if isinstance(paths, str | Path) else paths  # one path, not one a character
        cfg, files = settings or SignatureConfig(), [Path(p) for p in given]
        summary = run_index(
            self.engine, corpus, cfg, opts, files, executor=executor, address=address, tasks=workers or None
        )
        if strict and summary.failed:
            raise FilesFailed(summary)
        return summary

    def corpora(self) -> list[str]:
        return CorpusService(self.engine).names()

    def delete(self, corpus: str) -> None:
        CorpusService(self.engine).delete(corpus)

    def scan(
        self,
        items: Iterable[ItemLike],
        *,
        corpora: str | Sequence[str] | None = None,
        thresholds: Thresholds | Mapping[str, Any] | None = None,
    ) -> ScanResult:
        """Score items against the corpora (default: those whose settings match); nothing is
        stored. `items` may be a pandas or polars DataFrame (its rows are the items; a missing value, NaN, is
        a field not given). An item is a text (its question), a mapping with the REST check's fields
        (ITEM_FIELDS: a key like a misspelt one is refused; other keys are not read, and a
        warning names them) or a BenchmarkItem;
        `corpora` names (one name alone is one corpus); `thresholds` a Thresholds or a mapping
        of some of them by name ({"min_bits": 20}), checked as the CLI checks them."""
        # a server's bounds on one request: the caller's items are in its own memory already (a
        # 5,000-row frame was refused, "upload a benchmark for more"); each field's stays
        unbounded = dataclasses.replace(get_settings().limits(), check_items=sys.maxsize, check_chars=sys.maxsize)
        checks, ignored = CheckService(self.engine, unbounded, remedies=PYTHON_REMEDIES), set[str]()
        given, outside, unlabelled = [], [], 0
        for i, it in enumerate(_rows(items)):
            given.append(item := as_item(i, it, ignored))
            value = _whole(it.get("answer")) if isinstance(it, Mapping) else None
            if item.choices and not item.answer and not _missing(value) and str(value).strip():
                if str(value).strip() == "-1":  # Hugging Face's unlabelled test item, as Index.scan_file says it
                    unlabelled += 1
                else:
                    outside.append(f"item {i}: {str(value).strip()[:20]} with {len(item.choices)} choices")
        if outside:  # said, as Index.scan_file says it (the answer was dropped without a word: a trial)
            more = ", ..." if len(outside) > 3 else ""
            warnings.warn(
                f"{len(outside)} item(s) give an answer that names none of their choices ({'; '.join(outside[:3])}"
                f"{more}; an index counts from 0): scored as items without an answer",
                stacklevel=2,
            )
        if unlabelled:  # not "names none of their choices": the -1 of a test split whose labels are withheld
            warnings.warn(
                f"{unlabelled} item(s) have the answer -1 (a test item whose label is withheld): "
                "scored as items without an answer",
                stacklevel=2,
            )
        if ignored:  # said, where they were dropped without a word (a new user's trial)
            shown = ", ".join(sorted(ignored)[:10]) + (", ..." if len(ignored) > 10 else "")
            warnings.warn(
                f"keys no item has were not read: {shown} (the fields: {', '.join(ITEM_FIELDS)}; a dataset's "
                "passage, answer or choices under other names go through Index.scan_file)",
                stacklevel=2,
            )
        with _in_python_terms():
            checked = checks.items(given, _names(corpora), _thresholds(thresholds))
        for note in checked.summary["notes"]:  # corpora left out, as Index.scan_file says what it noticed
            warnings.warn(note, stacklevel=2)
        return checked

    def scan_file(
        self,
        path: str | Path,
        *,
        mapping: Mapping[str, Any] | None = None,
        corpora: str | Sequence[str] | None = None,
        thresholds: Thresholds | Mapping[str, Any] | None = None,
        workers: int | None = None,
    ) -> ScanResult:
        """Score every item of a benchmark file or save_to_disk folder (any format `contam scan` reads);
        what the reading noticed (answers that name no choice, shared ids: `summary["notes"]`) is
        also given as warnings, as `contam scan` says it on stderr. `workers`: processes scoring
        its chunks of up to 500 items, as `contam scan --workers` (0: one per core; None: the
        CONTAM_SCAN_WORKERS setting, one per core by default); the results are the same. It
        scored in this process alone, half the CLI's speed on two cores (a trial)."""
        whole = isinstance(workers, numbers.Integral) and not isinstance(workers, bool)  # numpy's too
        if workers is not None and (not whole or workers < 0):
            raise InputError(f"workers must be a whole number, 0 or more (0: one per core), not {workers!r}")
        settings = get_settings()
        count = settings.scan_workers if workers is None else int(workers)
        with _in_python_terms():
            checked = CheckService(self.engine, settings.limits(), workers=count, remedies=PYTHON_REMEDIES).path(
                Path(path), mapping, _names(corpora), _thresholds(thresholds)
            )
        for note in checked.summary["notes"]:  # the corpora left out first, as Index.scan says them
            warnings.warn(note, stacklevel=2)
        return checked
