"""`contam`'s service commands: the schema, corpora, scan and serve. Thin: parse options, call
one service, print. indexer/cli.py adds the batch job's commands (index, demo) and is the
`contam` entry point, so that nothing in app imports the indexer.

Errors are mapped once, by ContamGroup: a domain error ends any command with one line
`error: <message>` on stderr and the exit code EXIT_CODES gives it."""

from __future__ import annotations

import contextlib
import csv
import errno
import ipaddress
import json
import os
import shlex
import shutil
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import orjson
import typer
from pydantic import ValidationError
from sqlalchemy.exc import DatabaseError, OperationalError
from typer._click.exceptions import UsageError
from typer.core import TyperGroup
from typer.exceptions import TyperException

from contam.app import __version__
from contam.app.core.config import Thresholds
from contam.app.core.types import SEVERITY, Status
from contam.app.errors import (
    ConfigError,
    ContamError,
    IncompatibleIndex,
    InputError,
    NotFoundError,
    NotStarted,
    SettingsConflict,
    disk_full,
    first_line,
)
from contam.app.processes import sweep_temp
from contam.app.services.corpora import API_REMEDIES, CorpusService, Remedies
from contam.app.services.database import database_trouble, migrate, open_database, shown_url, sqlite_file_missing
from contam.app.settings import default_database_url, get_settings, unknown_settings

if TYPE_CHECKING:  # the scan's and the reports' code is imported by the commands that use them (every
    # command starts with this module: `contam index` and `contam corpora` need none of it)
    from contam.app.services.checking import CheckResult
    from contam.app.services.reports import ReportService

# Exit codes (README, "Command line"): 0 clean, 1 the gate tripped (a contaminated share above
# --fail-above, or corpus files that failed), 2 a usage error (bad options, files, names), 3 a
# runtime error (the database cannot be reached, an empty corpus, anything unexpected).
EXIT_GATE, EXIT_USAGE, EXIT_RUNTIME = 1, 2, 3
EXIT_PIPE = 128 + 13  # stdout's reader went away (SIGPIPE's number): what a shell reports for a killed writer
EXIT_INTERRUPTED = 128 + 2  # SIGINT's number, as a shell reports Ctrl-C; SIGTERM ends a command the same way
# Domain error -> exit code; the nearest class in an error's ancestry decides.
EXIT_CODES: dict[type[ContamError], int] = {
    ContamError: EXIT_RUNTIME,
    InputError: EXIT_USAGE,
    ConfigError: EXIT_USAGE,
    NotFoundError: EXIT_USAGE,
    SettingsConflict: EXIT_USAGE,
    IncompatibleIndex: EXIT_RUNTIME,  # the index needs other library behaviour: re-index, or other versions
}
DEBUG = "contam.debug"  # in the click context's meta: show tracebacks


def exit_code(exc: ContamError) -> int:
    return next(EXIT_CODES[c] for c in type(exc).__mro__ if c in EXIT_CODES)


def _fail(message: str, code: int, ctx: Any = None, started: bool = True) -> NoReturn:
    """One line on stderr and the exit code; with --debug the traceback first, same exit code.
    started: False for a run that stopped before writing anything (NotStarted)."""
    if ctx is not None and ctx.meta.get(DEBUG):
        traceback.print_exc()
    if code == EXIT_RUNTIME and started and ctx is not None and ctx.invoked_subcommand == "index":
        # a run that fails after some commits keeps them: it read as if nothing were saved (a trial)
        message += " (the files reported done are kept; run it again to index the rest)"
    typer.echo("error: " + " ".join(message.split()), err=True)
    raise typer.Exit(code)


class ContamGroup(TyperGroup):
    """The command group: ends any command that raises with one line on stderr and its exit
    code (a domain error's from EXIT_CODES, anything else 3); --debug shows the traceback too,
    and keeps the exit code (a CI job tells a runtime error from a tripped gate either way)."""

    def invoke(self, ctx: Any) -> Any:  # a click Context (typer vendors its own click)
        with _terminate_as_interrupt():
            return self._invoke(ctx)

    def _invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (timeout, docker stop, systemd): cleaned up on the way out
            kept = " (an index keeps the files it committed)" if ctx.invoked_subcommand == "index" else ""
            _fail(f"interrupted: nothing half-written is kept{kept}", EXIT_INTERRUPTED)
        except ContamError as exc:
            _fail(exc.message, exit_code(exc), ctx, started=not isinstance(exc, NotStarted))
        except DatabaseError as exc:  # away mid-command, its disk full, its file damaged: one line, said so
            message, passing = database_trouble(exc)
            if passing and not isinstance(exc, OperationalError):  # another database error: unexpected
                _unexpected(exc, ctx)
            _fail(message, EXIT_RUNTIME, ctx)
        except UsageError as exc:  # click's bad option or value: one line too, exit 2
            path = exc.ctx.command_path.split()[1:] if exc.ctx is not None else [ctx.invoked_subcommand or ""]
            where = " ".join(["contam", *path])  # the failing (sub)command, under the name users type
            _fail(f"{exc.format_message()} (see {where} --help)", EXIT_USAGE)
        except (typer.Exit, typer.Abort, TyperException):  # click's own exits
            raise
        except BrokenPipeError:  # `contam scan F | head`: the reader has what it wanted; stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the last flush cannot fail
            raise typer.Exit(EXIT_PIPE) from None
        except Exception as exc:
            _unexpected(exc, ctx)


def _unexpected(exc: Exception, ctx: Any) -> NoReturn:
    """An error no handler names: a full disk said so, anything else by its type and first line."""
    full = disk_full(exc)
    if full:
        _fail(full, EXIT_RUNTIME, ctx)
    hint = "" if ctx.meta.get(DEBUG) else " (run with --debug for the traceback)"
    _fail(f"{type(exc).__name__}: {first_line(exc)}{hint}", EXIT_RUNTIME, ctx)


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt in this process while a command runs, so it cleans up as
    Ctrl-C does: a killed `contam index` held its corpus (delete and rename refused) until its
    run's lease lapsed, two minutes on. A process forked meanwhile (a worker) ends on SIGTERM as
    it always did. Outside the main thread (a test runner's) nothing is changed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    me = os.getpid()

    def terminated(signum: int, _frame: Any) -> None:
        if os.getpid() != me:  # a forked worker: the default action
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:  # None: a handler set outside Python, which cannot be put back; the default then
        signal.signal(signal.SIGTERM, before if before is not None else signal.SIG_DFL)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"contam {__version__}")
        raise typer.Exit()


def options(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="show the traceback of an error")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    """Benchmark contamination detector. Exit codes: 0 clean, 1 gate tripped (--fail-above, or
    files that failed to index), 2 usage error, 3 runtime error, 130 interrupted (Ctrl-C,
    SIGTERM), 141 output closed early (a pipe)."""
    ctx.meta[DEBUG] = debug
    for line in unknown_settings(os.environ):  # every command reads its settings from there
        typer.echo(f"warning: {line}", err=True)


app = typer.Typer(cls=ContamGroup, help="Benchmark contamination detector.", no_args_is_help=True, add_completion=False)
db_app = typer.Typer(cls=ContamGroup, help="Database schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")

DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="database URL (default: CONTAM_DATABASE_URL, else SQLite at $XDG_DATA_HOME/contam/contam.db "
        "or ~/.local/share/contam/contam.db)",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON")]


def database_url(db: str | None) -> str:
    return db or get_settings().database_url


@db_app.command("upgrade")
def db_upgrade(
    db: DbOpt = None,
    revision: Annotated[str, typer.Option(help="the Alembic revision to go to (head: the latest)")] = "head",
) -> None:
    """Create or migrate the schema (Alembic)."""
    url = database_url(db)
    before, now, head = migrate(url, revision)
    # said apart: a migration, a new schema, or nothing to do (a trial: one line for all three)
    at_head = " (head)" if now == head else ""
    url = shown_url(url)  # its password hidden: `make run` and compose's migrate service print this line to logs
    if before is None:
        typer.echo(f"database created at revision {now}{at_head}: {url}")
    elif before == now and revision not in ("head", "heads") and not now.startswith(revision):
        # an older revision asked for: nothing was done, which "already at" did not say (an operator's trial)
        typer.echo(f"database at revision {now}{at_head}, past {revision}: db upgrade never downgrades: {url}")
    elif before == now:
        typer.echo(f"database already at revision {now}{at_head}: {url}")
    else:
        typer.echo(f"database migrated from revision {before} to {now}{at_head}: {url}")


def _group(name: str, help: str, cls: type[ContamGroup] = ContamGroup) -> typer.Typer:
    """A command group of `contam` (`contam NAME ...`) that lists its objects when given no command."""
    group = typer.Typer(cls=cls, invoke_without_command=True, help=help)
    app.add_typer(group, name=name)
    return group


reports_app = _group("reports", "List and delete reports (the API's and the dashboard's). `contam reports` lists them.")


def _group_db(ctx: typer.Context, db: str | None) -> str:
    """The database URL of --db given to a group's command, or to the group itself (`contam
    corpora --db URL delete NAME`)."""
    return database_url(db or (ctx.parent.params.get("db") if ctx.parent else None))


def _confirmed(question: str, kept: str) -> bool:
    """Whether the user answers yes to `question`; `kept` (what is kept: "corpus 'web'") is said
    on a no, and is the error, exit 2, when nothing answers (end of input: a script, a pipe)."""
    try:
        ok = typer.confirm(question)
    except typer.Abort:
        _fail(f"{kept} kept: nothing answered the question; pass --yes to delete without asking", 2)
    if not ok:  # declined: nothing to do, and not an error
        typer.echo(f"kept {kept}")
    return ok


def _as_json_or_none(rows: list[dict[str, Any]], as_json: bool, none: str) -> bool:
    """A group's listing printed as JSON (True: nothing more to print), or `none` said where
    there are no rows (False: the caller prints the rows as lines)."""
    if as_json:
        typer.echo(json.dumps(rows, default=str, indent=2))
    elif not rows:
        typer.echo(none)
    return as_json


def _reports(ctx: typer.Context, db: str | None) -> ReportService:
    """The report service on --db given here or to `contam reports` itself (it runs no job)."""
    from contam.app.services.reports import ReportService

    return ReportService(open_database(_group_db(ctx, db)), 0)


@reports_app.callback()
def reports(
    ctx: typer.Context,
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """List reports, the newest first: id, status, items scored, contaminated share, name, corpora."""
    if ctx.invoked_subcommand is not None:
        return
    total, rows = _reports(ctx, db).list_reports(1000, 0)
    if _as_json_or_none(rows, as_json, "no reports yet"):
        return
    for r in rows:
        share = (r.get("summary") or {}).get("contaminated_share")
        waits = r["status"] in ("queued", "running") and not r.get("held")
        typer.echo(
            f"{r['id']}  {r['status']:<9} {r['done_items']:,}/{r['total_items']:,} items"
            + (" (no server holds its job: the next `contam serve` takes it up)" if waits else "")
            + (f", {share:.1%} contaminated" if share is not None else "")
            + f"  {r['name']}  (corpora: {', '.join(r.get('corpora') or []) or 'none'}; {r['created_at']})"
        )
    if total > len(rows):
        typer.echo(f"... {total - len(rows):,} older report(s) not listed")


@reports_app.command("delete")
def reports_delete(
    ctx: typer.Context,
    report_id: Annotated[str, typer.Argument(help="the report's id", metavar="ID")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask")] = False,
    db: DbOpt = None,
) -> None:
    """Delete a report and its items; a job under way stops at its next step, whichever server runs
    it (with no server running, the way to free a corpus a killed server's job held: a trial)."""
    service = _reports(ctx, db)
    rep = service.get(report_id)
    if not yes and not _confirmed(
        f"delete report {report_id} ({rep['name']}, {rep['status']})?", f"report {report_id}"
    ):
        return
    service.delete(report_id)
    typer.echo(f"deleted report {report_id}")


class CorporaGroup(ContamGroup):
    """`contam corpora` lists; `contam corpora NAME` is short for `contam corpora show NAME`."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["show", *args]
        return super().resolve_command(ctx, args)


corpora_app = _group(
    "corpora",
    "List, show, rename and delete corpora. `contam corpora` lists them; `contam corpora NAME` shows one.",
    CorporaGroup,
)


def _corpora(ctx: typer.Context, db: str | None) -> CorpusService:
    """The service on --db given here or to `contam corpora` itself."""
    return CorpusService(open_database(_group_db(ctx, db)))


@corpora_app.callback()
def corpora(
    ctx: typer.Context,
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """List indexed corpora (`contam corpora NAME` shows one corpus's health)."""
    if ctx.invoked_subcommand is not None:
        return
    rows = CorpusService(open_database(database_url(db))).list_corpora()
    if _as_json_or_none(rows, as_json, "no corpora indexed yet"):
        return
    for r in rows:
        c = r["config"]
        typer.echo(
            f"{r['name']}: {_count(r['files'], 'file')} indexed"  # "2 files (2 failed)" read as both failed
            + (f", {r['failed_files']} failed, " if r["failed_files"] else ", ")
            + f"{_count(r['documents'], 'document')}, "
            f"{r['tokens']:,} tokens, {r['bytes'] / 1e6:.1f} MB of files on disk; fingerprint {r['fingerprint']} "
            f"(n={c['ngram_n']}, short={c.get('short_n', 0)}, sample={c['sample_mod']}, "
            f"window={c['window']}/{c['stride']}, "
            f"shingle={c['shingle']}, perm={c['num_perm']}, bands={c['bands']}, seed={c['seed']})"
            + ("" if r["reproducible"] else f"; {STALE}")
            + (f"; BEING INDEXED now ({', '.join(r['indexing'])})" if r.get("indexing") else "")
        )


@corpora_app.command("show")
def corpora_show(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="the corpus", metavar="NAME")],
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """One corpus's health: documents, skipped records, failed files and why, settings."""
    health = _corpora(ctx, db).health(name)
    as_json = as_json or bool(ctx.parent and ctx.parent.params.get("as_json"))  # `corpora --json NAME` too
    typer.echo(json.dumps(health, indent=2, default=str) if as_json else health_text(health))


def _count(n: int, noun: str) -> str:
    """'1 segment', '3 segments'."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


STALE = (  # a corpus whose index an earlier release's tokeniser made (an upgrade probe: nothing said so)
    "INDEXED BY AN EARLIER RELEASE: scans refuse it until it is indexed again "
    "(`contam corpora delete NAME`, then `contam index`)"
)


def health_text(h: dict[str, Any]) -> str:
    """A corpus's health as lines for a person (`--json` gives every field)."""
    c, spread = h["config"], h["tokens_per_document"]
    lines = [
        f"corpus {h['name']} (fingerprint {h['fingerprint']})",
        *(
            [f"  indexing:   now, by {', '.join(h['indexing'])} (its files count as each group commits)"]
            if h.get("indexing")
            else []
        ),
        f"  files:      {h['files']:,} indexed ({h['bytes'] / 1e6:.1f} MB of files on disk), "
        f"{len(h['failed_files'])} failed",
        f"  documents:  {h['documents']:,} ({h['duplicate_documents']:,} exact duplicates, "
        f"{h['short_documents']:,} under 8 tokens)",
        f"  tokens:     {h['tokens']:,}"
        + ("; per document " + ", ".join(f"{k} {v:,}" for k, v in spread.items()) if spread else ""),
        f"  postings:   {h['ngrams']:,} n-grams, {_count(h['windows'], 'window')}, "
        f"in {_count(h['segments'], 'segment')}",
        "  skipped:    " + (", ".join(f"{k}={v:,}" for k, v in h["skipped"].items()) or "nothing"),
        "  repaired:   " + (", ".join(f"{k}={v:,}" for k, v in h["repaired"].items()) or "nothing"),
        f"  settings:   n={c['ngram_n']}, short={c.get('short_n', 0)}, sample={c['sample_mod']}, "
        f"window={c['window']}/{c['stride']}, "
        f"shingle={c['shingle']}, perm={c['num_perm']}, bands={c['bands']}, seed={c['seed']}",
    ]
    if not h["reproducible"]:
        lines.insert(1, f"  {STALE}")
    for f in h["failed_files"]:  # what it skipped before it failed: none of it is in the corpus
        skipped = ", ".join(f"{k}={v}" for k, v in f.get("skipped", {}).items())
        kept = " (a version indexed before stays in the corpus)" if f.get("indexed_before") else ""
        lines.append(f"  failed:     {f['error']}" + (f" (skipped before: {skipped})" if skipped else "") + kept)
    return "\n".join(lines)


@corpora_app.command("delete")
def corpora_delete(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="the corpus", metavar="NAME")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask")] = False,
    db: DbOpt = None,
) -> None:
    """Delete a corpus and everything indexed into it (refused while a report job uses it or a
    `contam index` run writes into it)."""
    service = _corpora(ctx, db)
    health = service.health(name)
    question = f"delete corpus {name!r} ({_count(health['documents'], 'document')})?"
    if not yes and not _confirmed(question, f"corpus {name!r}"):
        return
    gone = service.delete(name)  # what it held when it went (a run may have committed since the question)
    typer.echo(
        f"deleted corpus {name!r} ({_count(gone['documents'], 'document')}, {_count(gone['files'], 'file')} indexed"
        + (f", {gone['failed_files']} failed)" if gone["failed_files"] else ")")
    )


@corpora_app.command("rename")
def corpora_rename(
    ctx: typer.Context,
    old: Annotated[str, typer.Argument(help="the corpus", metavar="NAME")],
    new: Annotated[str, typer.Argument(help="its new name (no slash)", metavar="NEW_NAME")],
    db: DbOpt = None,
) -> None:
    """Give a corpus another name (refused while a report job uses it or a `contam index` run
    writes into it)."""
    _corpora(ctx, db).rename(old, new)
    typer.echo(f"renamed corpus {old!r} to {new!r}")


def _mapping(fields: list[str] | None) -> dict[str, str | list[str]] | None:
    """--fields role=field, repeated, as a mapping (None: detect the fields); choices given more
    than once are one column per choice, in order (--fields choices=sol1 --fields choices=sol2),
    a question given more than once its fields' texts in order (Body, then Question)."""
    mapping: dict[str, str | list[str]] = {}
    # several pairs in one value, comma-separated as --thresholds takes them (a trial: they were read
    # as one field "prompt_text,choices=opts"); a field name holding a comma is given alone
    given = [
        p for f in fields or [] for pieces in [f.split(",")] for p in (pieces if all("=" in x for x in pieces) else [f])
    ]
    for f in given:
        role, sep, name = (x.strip() for x in f.partition("="))
        if not sep:
            raise InputError(f"--fields takes role=field, got {f!r}")
        if role in mapping and role not in ("choices", "question"):
            raise InputError(
                f"--fields names {role} twice ({mapping[role]!r}, {name!r}); only choices and question take several"
            )
        if role in mapping:
            before = mapping[role]
            mapping[role] = [*(before if isinstance(before, list) else [before]), name]
        else:
            mapping[role] = name
    return mapping or None


_INDENT = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS


def _print_json(checked: CheckResult) -> None:
    head = {"fingerprint": checked.fingerprint, "corpora": checked.corpora, "mapping": checked.mapping}
    head |= {"thresholds": checked.thresholds.as_dict(), "summary": checked.summary}
    # orjson: the standard library's encoder took 3 s of a 10,000-item scan's 30 in this process
    sys.stdout.flush()
    # "results", as /api/v1/check answers: one script reads both
    sys.stdout.buffer.write(orjson.dumps(head | {"results": [r.as_dict() for r in checked.results]}, option=_INDENT))
    sys.stdout.buffer.write(b"\n")
    sys.stdout.buffer.flush()


def _print_jsonl(checked: CheckResult) -> None:
    sys.stdout.flush()
    for r in checked.results:
        sys.stdout.buffer.write(orjson.dumps(r.as_dict(), option=orjson.OPT_APPEND_NEWLINE))
    sys.stdout.buffer.flush()


def _print_csv(checked: CheckResult) -> None:
    """The columns of the dashboard's and the API's CSV export, reason and corpus included."""
    from contam.app.services.exports import CSV_COLUMNS, csv_row

    w = csv.writer(sys.stdout)
    w.writerow(CSV_COLUMNS)
    for r in checked.results:
        d = r.as_dict()
        w.writerow(csv_row(d | {"idx": d["row"], "text": r.item.question}))  # its text as shown (shown_chars)


EVIDENCE_COLUMN_MAX = 80  # characters of the evidence column; a longer document name pushes its reason on


def _print_table(checked: CheckResult) -> None:
    """Flagged items, contaminated before suspicious and the highest score first within each (a
    suspicious item's score may be higher than a contaminated one's: the status says what the
    evidence shows, the score how much of the item's own text it holds), under a header line
    (none when nothing is flagged), then the counts."""
    flagged = sorted(
        (r for r in checked.results if Status(r.score.status).flagged),
        key=lambda r: (-SEVERITY[Status(r.score.status)], -r.score.score),
    )
    width = max([30, *(len(r.item.item_id) for r in flagged)])  # ids as long as a hash keep the columns
    wheres = [f"{r.evidence[0].corpus}:{r.evidence[0].document_id}" if r.evidence else "-" for r in flagged]
    header = "best evidence (corpus:document)"
    # the reasons line up after the evidence, unless a document's name is longer than a line
    at = max([len(header), *(len(w) for w in wheres if len(w) <= EVIDENCE_COLUMN_MAX)])
    if flagged:
        typer.echo(f"{'status':13s} {'score':>5s}  {'item':{width}s} {header:{at}s}  reason")
    for r, where in zip(flagged, wheres, strict=True):
        status, item = f"{r.score.status:13s} {r.score.score:5.2f}", f"{r.item.item_id:{width}s}"
        typer.echo(f"{status}  {item} {where:{at}s}  {r.score.reason}")
    c, share = checked.summary["counts"], checked.summary["contaminated_share"]
    counts = ", ".join(f"{c[s]:,} {s.replace('_', ' ')}" for s in Status)  # "5,502 clean" as "6,000 items"
    typer.echo(
        f"{_count(len(checked.results), 'item')}: {counts}; contaminated share {share:.2%} "
        f"(fingerprint {checked.fingerprint})"
    )


FORMATS: dict[str, Callable[[CheckResult], None]] = {
    "table": _print_table,
    "json": _print_json,
    "jsonl": _print_jsonl,
    "csv": _print_csv,
}


def _thresholds(text: str | None) -> Thresholds | None:
    """--thresholds as JSON ({"longest_match": 20}) or key=value pairs (longest_match=20,
    min_bits=8), checked against the thresholds there are: an unknown name or a value out of
    range is an error, never ignored."""
    if text is None:
        return None
    if text.lstrip().startswith("{"):
        try:
            given = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"--thresholds is not valid JSON ({exc.msg})") from exc
    else:
        pairs = [p.partition("=") for p in text.replace(",", " ").split()]
        if any(not sep for _, sep, _ in pairs):
            raise InputError(f"--thresholds takes JSON or name=value pairs, got {text!r}")
        given = {k.strip(): v.strip() for k, _, v in pairs}
    from contam.app.api.schemas import ThresholdsIn, threshold_problems  # only --thresholds needs them here

    try:
        return ThresholdsIn.model_validate(given).to_thresholds()
    except ValidationError as exc:
        raise InputError(f"--thresholds: {threshold_problems(exc)}") from exc


def _share(text: str) -> float:
    """--fail-above's value: a fraction, or a percentage written with its sign ("5%": 0.05; a
    trial's "5%" was "Input should be a valid number")."""
    given = text.strip()
    try:
        value = float(given[:-1]) if given.endswith("%") else float(given)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a number: a fraction such as 0.05, or 5%") from None
    if not given.endswith("%"):
        return value
    if not 0 <= value < 100:  # said here, in the user's own terms (_gate would speak of fractions)
        raise typer.BadParameter(f"{text!r}: a percentage from 0% to under 100% (100% never fails)")
    return value / 100


FailAboveOpt = Annotated[
    float | None,
    typer.Option(
        parser=_share,
        metavar="FRACTION",
        help="exit 1 when the contaminated share exceeds this fraction (0.10, or 10%)",
    ),
]


def _gate(fail_above: float | None) -> None:
    """--fail-above is a share: a fraction in [0, 1] (10 meant as percent would never trip)."""
    if fail_above is not None and not 0 <= fail_above <= 1:
        hint = f" (for {fail_above:g}% use {fail_above / 100:g})" if 1 < fail_above <= 100 else ""
        raise InputError(f"--fail-above is a fraction between 0 and 1, e.g. 0.10 for 10%; got {fail_above:g}{hint}")
    if fail_above == 1:  # a share never exceeds 100%: a gate that cannot fail (a trial meant 1%)
        raise InputError("--fail-above 1 never fails (a share cannot exceed 100%); for 1% use 0.01")


PROGRESS_MODES = ("auto", "bar", "log", "none")


def check_progress(mode: str) -> None:
    """Refuse a --progress value other than auto, bar, log or none (`contam index` took any other
    as none, and went on: a README audit)."""
    if mode not in PROGRESS_MODES:
        raise InputError(f"--progress is auto, bar, log or none, not {mode!r}")


@contextlib.contextmanager
def scan_progress(mode: str) -> Iterator[tuple[Callable[[int, int], None] | None, Callable[[int], None] | None]]:
    """The scan's progress on stderr, (scored, read): a bar (on a terminal, by default), log
    lines, or nothing; `read` moves it while the first pass reads the items, before scoring."""
    check_progress(mode)
    if mode == "auto":
        mode = "bar" if sys.stderr.isatty() else "none"
    if mode == "none":
        yield None, None
    elif mode == "log":
        yield (
            lambda done, total: typer.echo(f"scanned {done}/{total} items", err=True),
            lambda read: typer.echo(f"read {read} items", err=True),
        )
    else:
        from rich.console import Console
        from rich.progress import Progress

        # drawn on each update, not by a refresh thread: a process without threads may fork its
        # scan workers (a process with threads starts them from a fork server, more slowly)
        with Progress(console=Console(stderr=True), transient=True, auto_refresh=False) as bar:
            task = bar.add_task("reading", total=None)
            yield (
                lambda done, total: bar.update(task, description="scanning", completed=done, total=total, refresh=True),
                lambda read: bar.update(task, description=f"reading ({read} items)", refresh=True),
            )


ScanCorpusOpt = Annotated[
    list[str] | None,
    typer.Option("--corpus", help="corpus (repeatable; default: those with matching settings)", metavar="NAME"),
]
FieldsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--fields",
        help="role=field (roles: question, passage, choices, answer, solution, id; answer_base=0|1 says "
        "what numeric answers count choices from), e.g. question=prompt",
        metavar="ROLE=FIELD",
    ),
]
ScanWorkersOpt = Annotated[
    int,
    typer.Option(
        min=0,
        metavar="N",
        help="processes scoring chunks of up to 500 items (0: one per core); same results [CONTAM_SCAN_WORKERS: 0]",
    ),
]


@app.command("scan")
def scan(
    file: Annotated[
        Path,
        typer.Argument(
            help="benchmark file (JSONL, JSON, CSV/TSV, Parquet, Arrow; .gz/.zst/.bz2/.xz) or save_to_disk folder",
            metavar="FILE|FOLDER",
        ),
    ],
    corpus: ScanCorpusOpt = None,
    fields: FieldsOpt = None,
    fmt: Annotated[str, typer.Option("--format", help="table | json | jsonl | csv")] = "table",
    fail_above: FailAboveOpt = None,
    thresholds: Annotated[
        str | None, typer.Option(help='decision thresholds: JSON or name=value, e.g. "longest_match=20,min_bits=8"')
    ] = None,
    progress: Annotated[str, typer.Option(help="on stderr: auto (a bar on a terminal) | bar | log | none")] = "auto",
    workers: ScanWorkersOpt = 0,
    db: DbOpt = None,
) -> None:
    """Check a benchmark file without a server; exits 1 above --fail-above."""
    from contam.app.services.checking import CheckService
    from contam.app.services.results import SHOWN_CHARS

    t0 = time.perf_counter()
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (table, json, jsonl or csv)")
    _gate(fail_above)
    th = _thresholds(thresholds)
    mapping = _mapping(fields)
    engine = open_database(database_url(db))
    sweep_temp()  # what a killed scan or server left in the temporary folder
    with scan_progress(progress) as (report, read):
        settings = get_settings()  # --workers 0 (not given) is CONTAM_SCAN_WORKERS's, as a report job's
        checked = CheckService(
            engine, settings.limits(), workers=workers or settings.scan_workers, remedies=CLI_REMEDIES
        ).path(
            file,
            mapping,
            corpus,
            th,
            report,
            keep_text=False,
            reading=read,
            shown_chars=SHOWN_CHARS if fmt == "csv" else 0,  # the CSV's text column
        )
    typer.echo(f"fields: {_fields_line(checked.mapping)}; corpora: {', '.join(checked.corpora)}", err=True)
    for note in checked.summary["notes"]:
        typer.echo(note, err=True)
    if hint := _mostly_too_short(checked):
        typer.echo(hint, err=True)
    FORMATS[fmt](checked)
    typer.echo(scan_timing(checked.summary["items"], time.perf_counter() - t0), err=True)
    counts, items = checked.summary["counts"], checked.summary["items"]
    share = counts[Status.CONTAMINATED.value] / items if items else 0.0  # exact: the summary's is rounded
    if fail_above is not None and share > fail_above:
        typer.echo(f"contaminated share {share:.2%} exceeds {fail_above:.2%}", err=True)
        raise typer.Exit(EXIT_GATE)


def _mostly_too_short(checked: CheckResult) -> str | None:
    """What a scan whose items are mostly too short to judge says of its mapping: a field mapped
    as the question that holds a label ("subject") leaves every item a word or two, and the scan
    said only "28 too short" (a trial)."""
    items, short = checked.summary["items"], checked.summary["counts"].get(Status.TOO_SHORT.value, 0)
    # items in Thai, say, are too short for another reason (the notes say so when a tenth of them
    # are): left out of the count, not silencing it (a review: one Thai item of ten did); counted
    # by the reader, where the note's number was parsed back from its text, and missing under a tenth
    if items < 4 or 2 * (short - checked.unspaced) <= items - checked.unspaced:
        return None
    question = checked.mapping.get("question")
    named = ", ".join(question) if isinstance(question, list) else str(question)
    return (
        f"{short:,} of {items:,} items are too short to judge (under 4 tokens of text): is {named!r} the field "
        "that holds their question? (--fields question=FIELD)"
    )


def _fields_line(mapping: dict[str, Any]) -> str:
    """The role mapping as --fields takes it back (a list of fields is the role given once per
    field), and, for a chat, where its passage and answer come from when no field gives them."""
    used = ", ".join(f"{role}={x}" for role, f in mapping.items() for x in (f if isinstance(f, list) else [f]))
    chat = mapping.get("question") in ("messages", "conversations")
    parts = [] if not chat or "passage" in mapping else ["passage: a system message most chats share"]
    parts += [] if not chat or "answer" in mapping else ["answer: its last message where the model speaks it"]
    # an item without an id is named by its row: said, so a row number is not taken for an id (a trial)
    no_id = "" if "id" in mapping else " (no id field: each item is named by its row, the first 0)"
    return used + (f" (a chat's {'; '.join(parts)})" if parts else "") + no_id


# how a scan's notes tell its user to act on the corpora it left out
CLI_REMEDIES = Remedies("--corpus NAME checks against them", API_REMEDIES.other_release)


def scan_timing(items: int, seconds: float) -> str:
    """The scan's own time on stderr (from the command's start, its code imported, to the last
    result written): what a pipeline's timer adds to it is the process start."""
    rate = items / max(seconds, 1e-9)
    return f"scanned {_count(items, 'item')} in {seconds:.2f} s ({rate:,.0f} items/s; process start not counted)"


def _is_loopback(host: str) -> bool:
    with contextlib.suppress(ValueError):  # a host name, not an address
        return ipaddress.ip_address(host).is_loopback
    return host == "localhost"


PLACEHOLDER_KEYS = {"change-me", "changeme", "changeit"}  # keys from examples, known to everyone


def command_name() -> str:
    """How to call this `contam` again: its name when the shell finds this one on PATH, else its
    path (`make run` calls .venv/bin/contam, which is not on PATH until the venv is activated)."""
    argv0 = sys.argv[0]
    found = shutil.which("contam")
    if Path(argv0).name == "contam" and not (found and os.path.samefile(found, argv0)):
        return os.path.relpath(argv0) if not os.path.isabs(argv0) else argv0
    return "contam"


def check_port(host: str, port: int) -> None:
    """Refuse, in one line, a port another process listens on (uvicorn would log a bare
    "address already in use" after the app had started)."""
    if not 1 <= port <= 65535:  # 0, any free port, would be one the banner could not name (an operator's trial)
        raise ConfigError(f"port {port} is not a port (1 to 65535): choose another with --port or CONTAM_PORT")
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host}: {exc.strerror}") from None
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            hint = (  # an address of another machine was told "another server may hold it" (an operator's trial)
                "no interface of this machine has that address: give one of its own, or 0.0.0.0 for all "
                "(--host or CONTAM_HOST)"
                if exc.errno == errno.EADDRNOTAVAIL
                else "another server may hold it: stop it, or choose another port with --port or CONTAM_PORT"
            )
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror} ({hint})") from None


def serve_banner(
    database_url: str, host: str, port: int, keys: bool, command: str = "contam", created: bool = False
) -> str:
    """What `contam serve` (and so `make run`) says first: where everything is, what to do next.
    created: the database file was made just now (a typo in its path serves an empty dashboard: say
    so); a database other than the default is named in the next steps, which a shell without
    CONTAM_DATABASE_URL would otherwise run against the default (a new user's trial), as is the
    default when XDG_DATA_HOME placed it, which a shell without that variable does not find (a
    second trial: `XDG_DATA_HOME=... make run`, then `contam index` in another terminal made a
    second, empty database); an SQLite file by its URL, which holds no password."""
    shown = "localhost" if _is_loopback(host) else host
    elsewhere = database_url != default_database_url() or bool(os.environ.get("XDG_DATA_HOME"))
    by_url = database_url.startswith("sqlite")  # a file's URL holds no password: shown whole
    placeholder = elsewhere and not by_url
    db = "" if not elsewhere else " --db URL" if placeholder else f" --db {shlex.quote(database_url)}"
    return "\n".join(
        [
            f"contam {__version__}",
            f"  dashboard:  http://{shown}:{port}/" + ("  (sign in with one of CONTAM_API_KEYS)" if keys else ""),
            *(
                []
                if keys
                else ["  API keys:   none (CONTAM_API_KEYS): every route is open to whoever reaches this address"]
            ),
            f"  API docs:   http://{shown}:{port}/docs",
            f"  database:   {shown_url(database_url)}  (CONTAM_DATABASE_URL)"
            + (
                "\n              a new, empty file, made just now: check the path if you meant another"
                if created
                else ""
            ),
            f"  your data:  {command} index{db} --corpus NAME PATH...   then   {command} scan{db} BENCHMARK.jsonl"
            + (
                "\n              (URL: the database above; or set CONTAM_DATABASE_URL there as here)"
                if placeholder
                else ""
            ),
        ]
    )


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

    from contam.app.api.main import create_app
    from contam.app.api.security import server_log_config

    settings = get_settings()
    host = host or settings.host
    if not _is_loopback(host) and not settings.key_set() and not (allow_insecure or settings.allow_insecure_bind):
        raise ConfigError(
            f"refusing to listen on {host} without API keys: set CONTAM_API_KEYS, or pass --allow-insecure "
            "(CONTAM_ALLOW_INSECURE_BIND=true, as a container sets it)"
        )
    if settings.key_set() & PLACEHOLDER_KEYS:
        raise ConfigError("CONTAM_API_KEYS holds a placeholder key anyone can guess: use a secret one")
    port = settings.port if port is None else port  # --port 0 was taken for no port given: 8000, unsaid
    created = sqlite_file_missing(settings.database_url)
    before, now, _head = migrate(settings.database_url)  # the app does it too; here a database out of reach is one line
    check_port(host, port)
    banner = serve_banner(settings.database_url, host, port, bool(settings.key_set()), command_name(), created)
    if before is not None and before != now:  # said: a restart on new code upgraded the schema, silently (a trial)
        banner += f"\n  schema:     migrated from revision {before} to {now} as the server started"
    typer.echo(banner, err=True)
    uvicorn.run(create_app(settings), host=host, port=port, log_config=server_log_config())
