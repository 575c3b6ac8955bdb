"""`contam`'s service commands: the schema, corpora, scan and serve. Thin: parse options, call
one service, print. indexer/cli.py adds the batch job's commands (index, demo) and is the
`contam` entry point, so that nothing in app imports the indexer.

Errors are mapped once, by ContamGroup: a domain error ends any command with one line
`error: <message>` on stderr and the exit code EXIT_CODES gives it."""

from __future__ import annotations

import contextlib
import csv
import ipaddress
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from sqlalchemy.exc import OperationalError
from typer.core import TyperGroup

from app.core.types import Status
from app.errors import ConfigError, ContamError, InputError, UnavailableError
from app.services.checking import CheckResult, CheckService
from app.services.corpora import CorpusService
from app.services.database import migrate, open_database, unavailable_reason
from app.settings import get_settings

# Domain error -> exit code; the nearest class in an error's ancestry decides. Every domain
# error means "could not do as asked" (2); 1 is the commands' own verdict (files that failed,
# a contaminated share above --fail-above).
EXIT_CODES: dict[type[ContamError], int] = {ContamError: 2}


def exit_code(exc: ContamError) -> int:
    return next(EXIT_CODES[c] for c in type(exc).__mro__ if c in EXIT_CODES)


class ContamGroup(TyperGroup):
    """The command group: turns a domain error raised by any command into its exit code."""

    def invoke(self, ctx: Any) -> Any:  # a click Context (typer vendors its own click)
        try:
            return super().invoke(ctx)
        except ContamError as exc:
            typer.echo("error: " + " ".join(exc.message.split()), err=True)
            raise typer.Exit(exit_code(exc)) from None
        except OperationalError as exc:  # the database is away: one line, not a traceback
            typer.echo(f"error: the database is unavailable: {unavailable_reason(exc)}", err=True)
            raise typer.Exit(exit_code(UnavailableError(""))) from None


app = typer.Typer(cls=ContamGroup, help="Benchmark contamination detector.", no_args_is_help=True, add_completion=False)
db_app = typer.Typer(cls=ContamGroup, help="Database schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")

DbOpt = Annotated[str | None, typer.Option("--db", help="database URL (default: CONTAM_DATABASE_URL)")]


def database_url(db: str | None) -> str:
    return db or get_settings().database_url


@db_app.command("upgrade")
def db_upgrade(db: DbOpt = None, revision: str = "head") -> None:
    """Create or migrate the schema (Alembic)."""
    url = database_url(db)
    migrate(url, revision)
    typer.echo(f"database at {revision}: {url}")


@app.command("corpora")
def corpora(
    name: Annotated[str | None, typer.Argument(help="a corpus to show in detail (its health)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    db: DbOpt = None,
) -> None:
    """List indexed corpora, or show one corpus's health."""
    service = CorpusService(open_database(database_url(db)))
    if name is not None:
        typer.echo(json.dumps(service.health(name), indent=2, default=str))
        return
    rows = service.list_corpora()
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


def _mapping(fields: list[str] | None) -> dict[str, str] | None:
    """--fields role=field, repeated, as a mapping (None: detect the fields)."""
    mapping = {}
    for f in fields or []:
        role, sep, name = f.partition("=")
        if not sep:
            raise InputError(f"--fields takes role=field, got {f!r}")
        mapping[role.strip()] = name.strip()
    return mapping or None


def _print_json(checked: CheckResult) -> None:
    items = [r.as_dict() for r in checked.results]
    json.dump({"fingerprint": checked.fingerprint, "summary": checked.summary, "items": items}, sys.stdout, indent=1)
    sys.stdout.write("\n")


def _print_jsonl(checked: CheckResult) -> None:
    for r in checked.results:
        sys.stdout.write(json.dumps(r.as_dict()) + "\n")


def _print_csv(checked: CheckResult) -> None:
    w = csv.writer(sys.stdout)
    w.writerow(["item_id", "status", "score", "own_coverage", "coverage", "longest_match", "own_bits", "document"])
    for r in checked.results:
        d = r.as_dict()
        m = d["metrics"]
        document = r.evidence[0].document_id if r.evidence else ""
        w.writerow([d["item_id"], d["status"], d["score"], m["own_coverage"], m["coverage"], m["longest_match"],
                    m["own_bits"], document])  # fmt: skip


def _print_table(checked: CheckResult) -> None:
    """Flagged items, highest score first, then the counts."""
    flagged = [r for r in checked.results if Status(r.score.status).flagged]
    for r in sorted(flagged, key=lambda r: -r.score.score):
        where = f"{r.evidence[0].corpus}:{r.evidence[0].document_id}" if r.evidence else "-"
        typer.echo(f"{r.score.status:13s} {r.score.score:5.2f}  {r.item.item_id:30s} {where}  {r.score.reason}")
    c, share = checked.summary["counts"], checked.summary["contaminated_share"]
    counts = ", ".join(f"{c[s]} {s.replace('_', ' ')}" for s in Status)
    typer.echo(
        f"{len(checked.results)} items: {counts}; contaminated share {share:.2%} (fingerprint {checked.fingerprint})"
    )


FORMATS: dict[str, Callable[[CheckResult], None]] = {
    "table": _print_table,
    "json": _print_json,
    "jsonl": _print_jsonl,
    "csv": _print_csv,
}


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
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (table, json, jsonl or csv)")
    mapping = _mapping(fields)
    if not file.exists():
        raise InputError(f"no such file: {file}")
    checked = CheckService(open_database(database_url(db))).benchmark(file.read_bytes(), file.name, mapping, corpus)
    FORMATS[fmt](checked)
    share = checked.summary["contaminated_share"]
    if fail_above is not None and share > fail_above:
        typer.echo(f"contaminated share {share:.2%} exceeds {fail_above:.2%}", err=True)
        raise typer.Exit(1)


def _is_loopback(host: str) -> bool:
    with contextlib.suppress(ValueError):  # a host name, not an address
        return ipaddress.ip_address(host).is_loopback
    return host == "localhost"


@app.command("serve")
def serve(
    host: Annotated[str | None, typer.Option(help="address (default CONTAM_HOST, 127.0.0.1)")] = None,
    port: Annotated[int | None, typer.Option(help="port (default CONTAM_PORT, 8000)")] = None,
    allow_insecure: Annotated[bool, typer.Option(help="listen beyond loopback without API keys")] = False,
) -> None:
    """Run the API (and dashboard)."""
    # Imported here: FastAPI and uvicorn take about a second to import, which every other
    # command (a scan in a pipeline, say) would otherwise pay.
    import uvicorn

    from app.api.main import create_app

    settings = get_settings()
    host = host or settings.host
    if not _is_loopback(host) and not settings.key_set() and not (allow_insecure or settings.allow_insecure_bind):
        raise ConfigError(
            f"refusing to listen on {host} without API keys: set CONTAM_API_KEYS, or pass --allow-insecure"
        )
    uvicorn.run(create_app(settings), host=host, port=port or settings.port)
