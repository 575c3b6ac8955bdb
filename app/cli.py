"""`contam`: the command-line tool. Thin: parse options, call one library function, print."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from app.core.types import Status
from app.errors import ContamError
from app.settings import get_settings

app = typer.Typer(help="Benchmark contamination detector.", no_args_is_help=True, add_completion=False)
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")


def _fail(exc: ContamError) -> typer.Exit:
    typer.echo(f"error: {exc.message}", err=True)
    return typer.Exit(2)


def _engine(url: str | None) -> Any:
    from app.store.db import is_migrated, make_engine

    engine = make_engine(url or get_settings().database_url)
    if not is_migrated(engine):
        raise ContamError("the database has no schema yet: run `contam db upgrade` first")
    return engine


DbOpt = Annotated[str | None, typer.Option("--db", help="database URL (default: CONTAM_DATABASE_URL)")]


@db_app.command("upgrade")
def db_upgrade(db: DbOpt = None, revision: str = "head") -> None:
    """Create or migrate the schema (Alembic)."""
    from app.store.db import upgrade

    url = db or get_settings().database_url
    upgrade(url, revision)
    typer.echo(f"database at {revision}: {url}")


@app.command("index")
def index(
    paths: Annotated[list[Path], typer.Argument(help="corpus files or directories (recursive)")],
    corpus: Annotated[str, typer.Option("--corpus", help="corpus name")],
    text_field: str = "text",
    id_field: str = "id",
    limit: Annotated[int | None, typer.Option(help="at most this many documents per file")] = None,
    workers: Annotated[int, typer.Option(help="worker processes (0: one per core)")] = 0,
    batch_size: Annotated[int | None, typer.Option(help="documents per worker batch [CONTAM_BATCH_SIZE: 2000]")] = None,
    ngram: Annotated[int, typer.Option(help="words per exact-channel n-gram")] = 8,
    sample: Annotated[int, typer.Option(help="keep n-grams with hash %% SAMPLE == 0 (1: all)")] = 1,
    window: Annotated[int, typer.Option(help="near-channel window, tokens")] = 64,
    stride: Annotated[int, typer.Option(help="near-channel window stride, tokens")] = 32,
    shingle: Annotated[int, typer.Option(help="words per MinHash shingle")] = 3,
    num_perm: Annotated[int, typer.Option(help="MinHash permutations")] = 64,
    bands: Annotated[int, typer.Option(help="LSH bands")] = 16,
    seed: Annotated[int, typer.Option(help="MinHash seed")] = 1,
    store_text: Annotated[bool, typer.Option(help="keep document text (else a pointer into the file)")] = True,
    commit_mb: Annotated[
        float | None,
        typer.Option(
            help="commit after this many MB of text; small files share a transaction; 0: after each file "
            "[CONTAM_COMMIT_MB: 256]"
        ),
    ] = None,
    segment_rows: Annotated[
        int | None,
        typer.Option(
            help="posting rows per index segment: larger means faster look-ups, smaller faster inserts "
            "[CONTAM_SEGMENT_ROWS: 8000000]"
        ),
    ] = None,
    merge_fanout: Annotated[
        int | None,
        typer.Option(
            help="merge this many segments of one size into one, so look-ups visit few; 0: never "
            "[CONTAM_MERGE_FANOUT: 0]"
        ),
    ] = None,
    progress: Annotated[str, typer.Option(help="auto | bar | log | none")] = "auto",
    db: DbOpt = None,
) -> None:
    """Index corpus files (JSONL, JSONL.gz/.zst, Parquet, .txt) into a named corpus."""
    from app.core.config import SignatureConfig
    from indexer.job import IndexJob
    from indexer.options import IndexOptions
    from indexer.progress import BarProgress, LogProgress, NoProgress

    try:
        cfg = SignatureConfig(
            ngram_n=ngram,
            sample_mod=sample,
            window=window,
            stride=stride,
            shingle=shingle,
            num_perm=num_perm,
            bands=bands,
            seed=seed,
        )
        engine = _engine(db)
        settings = get_settings()
        opts = IndexOptions(
            text_field=text_field,
            id_field=id_field,
            limit=limit,
            workers=workers or settings.resolved_workers(),
            batch_size=batch_size or settings.batch_size,
            store_text=store_text,
            commit_bytes=int((settings.commit_mb if commit_mb is None else commit_mb) * 1e6),
            segment_rows=segment_rows or settings.segment_rows,
            merge_fanout=settings.merge_fanout if merge_fanout is None else merge_fanout,
        )
        mode = progress if progress != "auto" else ("bar" if sys.stderr.isatty() else "log")
        reporter = BarProgress() if mode == "bar" else LogProgress() if mode == "log" else NoProgress()
        try:
            with IndexJob(engine, corpus, cfg, opts, reporter) as job:
                summary = job.run(paths)
        finally:
            if isinstance(reporter, BarProgress):
                reporter.bar.stop()
    except ContamError as exc:
        raise _fail(exc) from None
    typer.echo(json.dumps(summary.as_dict(), indent=2))
    if summary.failed:
        typer.echo(f"{len(summary.failed)} file(s) failed:", err=True)
        for f in summary.failed:
            typer.echo(f"  {f.path}: {f.error}", err=True)
        raise typer.Exit(1)


@app.command("corpora")
def corpora(
    name: Annotated[str | None, typer.Argument(help="a corpus to show in detail (its health)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    db: DbOpt = None,
) -> None:
    """List indexed corpora, or show one corpus's health."""
    from app.services.corpora import CorpusService

    try:
        service = CorpusService(_engine(db))
        if name is not None:
            typer.echo(json.dumps(service.health(name), indent=2, default=str))
            return
        rows = service.list_corpora()
    except ContamError as exc:
        raise _fail(exc) from None
    if as_json:
        typer.echo(json.dumps(rows, default=str, indent=2))
        return
    if not rows:
        typer.echo("no corpora indexed yet")
    for r in rows:
        c = r["config"]
        typer.echo(
            f"{r['name']}: {r['files']} files ({r['failed_files']} failed), {r['documents']} documents, "
            f"{r['tokens']} tokens, {r['bytes'] / 1e6:.1f} MB; fingerprint {r['fingerprint']} "
            f"(n={c['ngram_n']}, sample={c['sample_mod']}, window={c['window']}/{c['stride']}, "
            f"shingle={c['shingle']}, perm={c['num_perm']}, bands={c['bands']}, seed={c['seed']})"
        )


@app.command("scan")
def scan(
    file: Annotated[Path, typer.Argument(help="benchmark file (JSONL, JSON, CSV/TSV, Parquet; .gz/.zst)")],
    corpus: Annotated[list[str] | None, typer.Option("--corpus", help="corpus name (repeatable; default all)")] = None,
    fields: Annotated[list[str] | None, typer.Option("--fields", help="role=field, e.g. question=prompt")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table | json | jsonl | csv")] = "table",
    fail_above: Annotated[float | None, typer.Option(help="exit 1 when the contaminated share exceeds RATE")] = None,
    db: DbOpt = None,
) -> None:
    """Check a benchmark file without a server; exits 1 above --fail-above."""
    import csv

    from app.readers.benchmark import read_benchmark
    from app.services.reports import summarize
    from app.services.scanning import Scanner

    if fmt not in ("table", "json", "jsonl", "csv"):
        raise _fail(ContamError(f"unknown format {fmt!r} (table, json, jsonl or csv)"))
    try:
        mapping = {}
        for f in fields or []:
            role, sep, name = f.partition("=")
            if not sep:
                raise ContamError(f"--fields takes role=field, got {f!r}")
            mapping[role.strip()] = name.strip()
        if not file.exists():
            raise ContamError(f"no such file: {file}")
        items, _used = read_benchmark(file.read_bytes(), file.name, mapping or None)
        scanner = Scanner(_engine(db), corpus or None)
        results = scanner.scan(items)
    except ContamError as exc:
        raise _fail(exc) from None
    summary = summarize(results, scanner.th)
    out = sys.stdout
    if fmt == "json":
        json.dump(
            {"fingerprint": scanner.fingerprint, "summary": summary, "items": [r.as_dict() for r in results]},
            out,
            indent=1,
        )
        out.write("\n")
    elif fmt == "jsonl":
        for r in results:
            out.write(json.dumps(r.as_dict()) + "\n")
    elif fmt == "csv":
        w = csv.writer(out)
        w.writerow(["item_id", "status", "score", "coverage", "longest_match", "near_similarity", "document"])
        for r in results:
            d = r.as_dict()
            w.writerow(
                [
                    d["item_id"],
                    d["status"],
                    d["score"],
                    d["metrics"]["best_doc_coverage"],
                    d["metrics"]["longest_match"],
                    d["metrics"]["near_similarity"],
                    r.evidence[0]["document_id"] if r.evidence else "",
                ]
            )
    else:
        flagged = [r for r in results if Status(r.score.status).flagged]
        for r in sorted(flagged, key=lambda r: -r.score.score):
            where = f"{r.evidence[0]['corpus']}:{r.evidence[0]['document_id']}" if r.evidence else "-"
            typer.echo(f"{r.score.status:13s} {r.score.score:5.2f}  {r.item.item_id:30s} {where}  {r.score.reason}")
        c = summary["counts"]
        typer.echo(
            f"{len(results)} items: " + ", ".join(f"{c[s]} {s.replace('_', ' ')}" for s in Status) + "; "
            f"contaminated share {summary['contaminated_share']:.2%} (fingerprint {scanner.fingerprint})"
        )
    if fail_above is not None and summary["contaminated_share"] > fail_above:
        typer.echo(f"contaminated share {summary['contaminated_share']:.2%} exceeds {fail_above:.2%}", err=True)
        raise typer.Exit(1)


@app.command("serve")
def serve(
    host: Annotated[str | None, typer.Option(help="address (default CONTAM_HOST, 127.0.0.1)")] = None,
    port: Annotated[int | None, typer.Option(help="port (default CONTAM_PORT, 8000)")] = None,
    allow_insecure: Annotated[bool, typer.Option(help="listen beyond loopback without API keys")] = False,
) -> None:
    """Run the API (and dashboard)."""
    import contextlib
    import ipaddress

    import uvicorn

    from app.api.main import create_app

    settings = get_settings()
    host = host or settings.host
    port = port or settings.port
    loopback = host == "localhost"
    with contextlib.suppress(ValueError):  # a host name, not an address
        loopback = loopback or ipaddress.ip_address(host).is_loopback
    if not loopback and not settings.key_set() and not (allow_insecure or settings.allow_insecure_bind):
        raise _fail(
            ContamError(f"refusing to listen on {host} without API keys: set CONTAM_API_KEYS, or pass --allow-insecure")
        )
    uvicorn.run(create_app(settings), host=host, port=port)


@app.command("demo")
def demo(db: DbOpt = None, force: bool = False) -> None:
    """On an empty database: index part of Python's standard library, check HumanEval against it."""
    from indexer.demo import run_demo

    settings = get_settings()
    if not settings.demo and not force:
        typer.echo("demo disabled (CONTAM_DEMO=false)")
        return
    try:
        msg = run_demo(_engine(db), Path(settings.database_url.split("///")[-1]).parent / "demo", force)
    except ContamError as exc:
        raise _fail(exc) from None
    typer.echo(msg)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
