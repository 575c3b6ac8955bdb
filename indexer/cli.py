"""The `contam` command: app/cli.py's service commands plus the batch job's (index, demo).

It lives here, above both, because the indexer imports app and app must not import the
indexer. Thin like the rest: parse options, run the job, print its summary."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from contam.app import cli as service_cli
from contam.app.cli import ContamGroup, DbOpt, check_progress, database_url
from contam.app.core.config import SignatureConfig
from contam.app.readers.corpus import TOO_LONG_HINT, check_path, fields_seen, files_not_read
from contam.app.services.database import open_database
from contam.app.settings import get_settings
from contam.indexer.options import IndexOptions, index_options

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from contam.indexer.progress import NoProgress
    from contam.indexer.summary import IndexSummary

# The job's modules (the executors, Ray's included, the writer, the progress bar, the demo) are
# imported by the commands that run them: `contam scan`, `serve` and `corpora` start without them.

SIG = SignatureConfig()  # the defaults the options show
OPTS = IndexOptions()

app = typer.Typer(
    cls=ContamGroup, callback=service_cli.options, no_args_is_help=True, add_completion=False, rich_markup_mode=None
)


def _progress(mode: str) -> NoProgress:
    from contam.indexer.progress import BarProgress, LogProgress, NoProgress

    if mode == "auto":
        mode = "bar" if sys.stderr.isatty() else "log"
    return BarProgress() if mode == "bar" else LogProgress() if mode == "log" else NoProgress()


# The options whose help names their environment variable and default.
WorkersOpt = Annotated[
    int,
    typer.Option(
        min=0,
        metavar="N",
        help="worker processes (0: one per core); with --executor ray, files in work at once (0: one per CPU "
        "of the cluster) [CONTAM_WORKERS: 0]",
    ),
]
BatchSizeOpt = Annotated[
    int | None, typer.Option(min=1, help=f"documents per worker batch [CONTAM_BATCH_SIZE: {OPTS.batch_size}]")
]
CommitMbOpt = Annotated[
    float | None,
    typer.Option(
        min=0,
        help="commit after this many MiB of text; small files share a transaction; 0: after each file "
        f"[CONTAM_COMMIT_MB: {OPTS.commit_bytes >> 20}]",
    ),
]
SegmentRowsOpt = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="posting rows per index segment: larger means faster look-ups, smaller faster inserts "
        f"[CONTAM_SEGMENT_ROWS: {OPTS.segment_rows}]",
    ),
]
MergeFanoutOpt = Annotated[
    int | None,
    typer.Option(
        min=0,
        help="merge this many segments of one size into one (2 or more), so look-ups visit few; 0: never "
        f"[CONTAM_MERGE_FANOUT: {OPTS.merge_fanout}]",
    ),
]


ExecutorOpt = Annotated[
    str,
    typer.Option(
        help="local: worker processes on this machine; ray: Ray tasks on a cluster's machines, each writing "
        "its files straight into the database (PostgreSQL only)"
    ),
]
AddressOpt = Annotated[
    str | None,
    typer.Option(
        help="the Ray cluster to run on, e.g. HEAD:6390 (default: RAY_ADDRESS, else the cluster started last "
        "on this machine, else a new one here)"
    ),
]


PathsArg = Annotated[
    list[Path], typer.Argument(help="corpus files or directories (recursive)", metavar="PATH", show_default=False)
]
CorpusOpt = Annotated[str, typer.Option("--corpus", help="corpus name (no slash)", metavar="NAME")]
TextFieldOpt = Annotated[
    str,
    typer.Option(
        help="the records' field holding the document's text (JSON lines, Parquet, Arrow); a.b: the field b "
        "inside the object (or struct column) a; a,b: the first of them a record (a table: a column) has"
    ),
]
IdFieldOpt = Annotated[str, typer.Option(help="the records' field naming the document (without it: FILE:LINE)")]


@app.command("index")
def index(
    paths: PathsArg,
    corpus: CorpusOpt,
    text_field: TextFieldOpt = OPTS.text_field,
    id_field: IdFieldOpt = OPTS.id_field,
    limit: Annotated[int | None, typer.Option(min=1, help="at most this many documents per file")] = OPTS.limit,
    workers: WorkersOpt = 0,
    batch_size: BatchSizeOpt = None,
    ngram: Annotated[int, typer.Option(help="words per exact-channel n-gram")] = SIG.ngram_n,
    short_ngram: Annotated[
        int, typer.Option(help="words per short-channel n-gram (3), or 0 for none: short items and edits need it")
    ] = SIG.short_n,
    sample: Annotated[int, typer.Option(help="keep n-grams with hash % SAMPLE == 0 (1: all)")] = SIG.sample_mod,
    window: Annotated[int, typer.Option(help="near-channel window, tokens")] = SIG.window,
    stride: Annotated[int, typer.Option(help="near-channel window stride, tokens")] = SIG.stride,
    shingle: Annotated[int, typer.Option(help="words per MinHash shingle")] = SIG.shingle,
    num_perm: Annotated[int, typer.Option(help="MinHash permutations")] = SIG.num_perm,
    bands: Annotated[int, typer.Option(help="LSH bands")] = SIG.bands,
    seed: Annotated[int, typer.Option(help="MinHash seed")] = SIG.seed,
    store_text: Annotated[
        bool, typer.Option(help="keep document text (else a pointer into the file)")
    ] = OPTS.store_text,
    commit_mb: CommitMbOpt = None,
    segment_rows: SegmentRowsOpt = None,
    merge_fanout: MergeFanoutOpt = None,
    progress: Annotated[str, typer.Option(help="auto | bar | log | none")] = "auto",
    executor: ExecutorOpt = "local",
    address: AddressOpt = None,
    db: DbOpt = None,
) -> None:
    """Index corpus files (JSON lines: .jsonl, .ndjson, .json; .txt; each compressed with gzip,
    zstd, bzip2 or xz or not; Parquet; Arrow or a save_to_disk folder) into a named corpus."""
    check_progress(progress)  # before anything is opened or made
    cfg = SignatureConfig(
        ngram_n=ngram, short_n=short_ngram, sample_mod=sample, window=window, stride=stride, shingle=shingle,
        num_perm=num_perm, bands=bands, seed=seed,
    )  # fmt: skip
    opts = index_options(
        get_settings(), workers=workers, batch_size=batch_size, commit_mb=commit_mb, segment_rows=segment_rows,
        merge_fanout=merge_fanout, text_field=text_field, id_field=id_field, limit=limit, store_text=store_text,
    )  # fmt: skip
    from contam.indexer.executors import check_executor, run_index
    from contam.indexer.progress import BarProgress

    url = database_url(db)
    check_executor(executor, address, url)  # before the database is opened: SQLite is refused first
    engine = open_database(url)
    _say_if_new(engine, corpus, paths)
    reporter = _progress(progress)
    try:
        tasks = workers or get_settings().workers or None  # Ray: 0 is one task per CPU of the cluster
        summary = run_index(
            engine, corpus, cfg, opts, paths, executor=executor, address=address, tasks=tasks, progress=reporter
        )
    finally:
        if isinstance(reporter, BarProgress):
            reporter.close()
    typer.echo(json.dumps(summary.as_dict(), indent=2))
    _tell(summary, paths, opts.id_field)


def _say_if_new(engine: Engine, corpus: str, paths: list[Path]) -> None:
    """A corpus name that names none makes a new corpus: said on stderr with the corpora there are,
    where there are some (a typo in --corpus made one without a word: a new user's trial). A name
    refused, or a path not there, is refused first, never said to be new and then refused (a new
    user's trial, a README audit)."""
    from contam.app.services.corpora import CorpusService
    from contam.app.services.indexing import check_corpus_name

    check_corpus_name(corpus)
    for path in paths:
        check_path(path)
    names = CorpusService(engine).names()
    if names and corpus not in names:
        shown = ", ".join(sorted(names)[:20]) + (", ..." if len(names) > 20 else "")
        typer.echo(f"a new corpus {corpus!r} (the corpora: {shown})", err=True)


def _tell_where(summary: IndexSummary, reasons: set[str]) -> None:
    """Where the first records of each reason were, file by file (of the files indexed)."""
    for f in summary.files:
        places = {k: v for k, v in f.skipped_at.items() if k in reasons and v}  # in the order met
        # a record without a place is the whole file's (a .txt file is one document: a trial's
        # Latin-1 .txt among UTF-8 ones was counted, never named)
        places |= {k: ["the whole file"] for k in sorted(reasons) if f.skipped.get(k) and k not in places}
        if f.status == "done" and places:
            more = {k: f.skipped.get(k, 0) > len(v) for k, v in places.items()}
            said = "; ".join(f"{k} at {', '.join(v)}{', ...' if more[k] else ''}" for k, v in places.items())
            typer.echo(f"  {f.path}: {said}", err=True)


def _tell_missing_id(summary: IndexSummary, id_field: str) -> None:
    """Which field --id-field named, and in which file the records lack it, with the fields they
    hold: a misspelt id field is indexed (each record named by its place), where a misspelt
    --text-field fails the file, and the note did not say which field was missing (a new user's
    trial). Where every such file has the field, some records hold no usable id in it."""
    files = [f.path for f in summary.files if f.skipped.get("missing_id")]
    seen = {path: fields_seen(Path(path)) for path in files}
    top = id_field.split(".")[0]
    lacking = [path for path in files if seen[path] and top not in seen[path]]
    many = f" ({len(files)} files)" if len(files) > 1 else ""
    if lacking:
        there = ", ".join(seen[lacking[0]])
        said = f"no field {id_field!r} (--id-field) in {lacking[0]}{many}; fields seen there: {there}"
    else:
        said = f"the field {id_field!r} (--id-field) is empty or not text or a number in some records{many}"
    typer.echo(f"  (missing_id: {said}; each such record is named by its file and place instead)", err=True)


def _tell_twins(summary: IndexSummary) -> None:
    """Files whose content another file holds, indexed once under that file's name: its documents
    never name them as evidence (a new user's trial: "already indexed" on a corpus's first run)."""
    twins = [f for f in summary.files if f.status == "unchanged" and f.same_as]
    if twins:
        shown = "; ".join(f"{f.path} (as {f.same_as})" for f in twins[:3])
        more = f"; {len(twins) - 3} more" if len(twins) > 3 else ""
        typer.echo(
            f"{len(twins)} file(s) hold the same content as another file, indexed once under its name: {shown}{more}",
            err=True,
        )


def _tell(summary: IndexSummary, paths: list[Path], id_field: str) -> None:
    """On stderr, what the JSON summary alone would leave unsaid: a folder's files of other types
    not read, files indexed under another's name, records left out or repaired, and the files
    that failed (exit 1)."""
    others, hidden = files_not_read(paths)
    if others:  # a folder's .csv or .md is not indexed: say so
        kinds = ", ".join(f"{k}: {v}" for k, v in sorted(others.items()))
        typer.echo(
            f"{sum(others.values())} file(s) in the folders not indexed, not a corpus format ({kinds})", err=True
        )
    if hidden:  # and hidden ones, which it indexed without a word (a trial)
        shown = ", ".join(hidden[:3]) + (", ..." if len(hidden) > 3 else "")
        typer.echo(
            f"{len(hidden)} hidden or linked file(s) or folder(s) in the folders not indexed ({shown}): name one "
            "to index it",
            err=True,
        )
    _tell_twins(summary)
    skipped, repaired = summary.records()
    if skipped:  # said where it is seen too, not only in the JSON (`contam corpora NAME` keeps it)
        reasons = ", ".join(f"{k}={v}" for k, v in skipped.items())
        typer.echo(f"{sum(skipped.values())} record(s) left out: {reasons}", err=True)
        _tell_where(summary, set(skipped))
        if skipped.get("record_too_long"):  # the limit named (a trial: how big is too big?)
            typer.echo(f"  {TOO_LONG_HINT.strip()}", err=True)
    if repaired:  # a record may have several repairs: their counts, not a count of records
        typer.echo(f"records indexed with a repair: {', '.join(f'{k}={v}' for k, v in repaired.items())}", err=True)
        _tell_where(summary, set(repaired))
    if repaired.get("missing_id"):  # --id-field names a field these records lack
        _tell_missing_id(summary, id_field)
    if repaired.get("decoded_cp1252"):  # Latin-1 from an old tool, read as such: said, since it is a guess
        typer.echo(
            "  (their text was not UTF-8 and held no UTF-8 character beyond ASCII: read as Windows-1252, the "
            "Latin-1 of old tools; a file in another one-byte encoding (Latin-2, KOI8-R, ...) is misread so: "
            "re-encode it as UTF-8, e.g. iconv -f latin2 -t utf-8, and index it into a new corpus)",
            err=True,
        )
    if repaired.get("invalid_utf8_replaced"):  # UTF-8 damaged here and there: those bytes are lost, not the words
        typer.echo(
            "  (their bytes that are not UTF-8 became U+FFFD; to keep those characters, repair the file's "
            "UTF-8 and index it into a new corpus: indexed again here, the changed file would sit beside its "
            "old version)",
            err=True,
        )
    if summary.older_versions:  # a file fixed and indexed again: its old documents stay too
        typer.echo(
            f"warning: {len(summary.older_versions)} file(s) were indexed before with other content or other "
            "extraction settings (--text-field, --id-field, --limit), and the "
            f"corpus holds every version's documents (to keep only the current ones, delete the corpus, "
            f"`contam corpora delete {summary.corpus}`, and index again):",
            err=True,
        )
        for path, n in sorted(summary.older_versions.items()):
            typer.echo(f"  {path}: {n} versions", err=True)
    if summary.failed:
        _tell_failed(summary)
        raise typer.Exit(1)


def _tell_failed(summary: IndexSummary) -> None:
    """The files that failed, on stderr, and which of them keep a version indexed before."""
    typer.echo(f"{len(summary.failed)} file(s) failed:", err=True)
    for f in summary.failed:  # the errors of unreadable files name their path already
        error = str(f.error)
        typer.echo("  " + (error if error.startswith(f.path) else f"{f.path}: {error}"), err=True)
    if summary.failed_kept:  # listed as failed beside its indexed version, the index looked lost
        typer.echo(
            f"  ({len(summary.failed_kept)} of them {'was' if len(summary.failed_kept) == 1 else 'were'} "
            "indexed before: that version's documents stay in the corpus, and `contam corpora "
            f"{summary.corpus}` lists the failure beside it until a run reads the file)",
            err=True,
        )


app.add_typer(service_cli.app)  # corpora, scan, serve and db (listed after index and demo)


@app.command("demo")
def demo(
    db: DbOpt = None,
    force: Annotated[bool, typer.Option(help="run even where CONTAM_DEMO=false turns the demo off")] = False,
) -> None:
    """On an empty database: index part of Python's standard library, check HumanEval against it."""
    settings = get_settings()
    if not settings.demo and not force:
        typer.echo("demo disabled (CONTAM_DEMO=false)")
        return
    from contam.indexer.demo import run_demo

    url = database_url(db)
    typer.echo(run_demo(open_database(url), demo_workdir(url), settings.max_upload_bytes, force))


def demo_workdir(url: str) -> Path:
    """Where the demo corpus is written: beside a SQLite file, else ./data/demo (a PostgreSQL URL
    is no path: it made a directory named after the URL)."""
    if url.startswith("sqlite:///") and not url.endswith(":memory:"):
        return Path(url.removeprefix("sqlite:///")).parent / "demo"
    return Path("data") / "demo"


def main() -> None:
    app()


if __name__ == "__main__":
    main()
