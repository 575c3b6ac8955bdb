"""Report and report-item repository (never commits)."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import zstandard
from sqlalchemy import ColumnElement, and_, bindparam, case, delete, func, insert, or_, select, true, update
from sqlalchemy.engine import Connection

from contam.app.core.text import search_folded
from contam.app.core.types import SEVERITY
from contam.app.store import db
from contam.app.store.repo import now
from contam.app.store.schema import report, report_item

NAME_CHARS: int = report.c.name.type.length  # type: ignore[attr-defined]
REPORT_COLUMNS = [c for c in report.c if c.name not in ("upload", "owner", "lease_until")]
SORTS = {
    "score": report_item.c.score,
    "row": report_item.c.idx,
    # numbers by value ("b2" before "b10"); a row an earlier release's server wrote after the
    # upgrade has no id_order, and sorts by its id as before
    "item_id": func.coalesce(func.nullif(report_item.c.id_order, ""), report_item.c.item_id),
    # by severity (contaminated, suspicious, then clean and too short), then by score, as the CLI
    # lists them: by name, "suspicious" came before "contaminated"
    "status": case({str(s): w for s, w in SEVERITY.items()}, value=report_item.c.status, else_=0),
}


JSON_COLUMNS = ("corpora", "mapping", "thresholds", "config", "summary", "left_out")  # stored as JSON text


def _encode(values: dict[str, Any]) -> dict[str, Any]:
    return {
        k: json.dumps(v, sort_keys=k == "config") if k in JSON_COLUMNS and v is not None else v
        for k, v in values.items()
    }


def compressed(upload: bytes | Path) -> bytes:
    """A benchmark file's bytes zstd-compressed, as a report keeps them (a file is read as a
    stream: only the compressed form is held)."""
    if isinstance(upload, bytes):
        return zstandard.ZstdCompressor(level=3).compress(upload)
    sink = io.BytesIO()
    with upload.open("rb") as f:
        zstandard.ZstdCompressor(level=3).copy_stream(f, sink)
    return sink.getvalue()


def create(conn: Connection, values: dict[str, Any], owner: str | None = None, lease: float = 0.0) -> None:
    """A new report; `values` hold its columns, JSON columns as Python values, and either
    `upload`, the benchmark file (its bytes, or the file on disk), or `upload_zst`, what
    `compressed` made of it (the file is kept zstd-compressed). `owner`: the server that will
    run its job, holding it for `lease` seconds (see `take_job`)."""
    blob = values.pop("upload_zst") if "upload_zst" in values else compressed(values["upload"])
    values = {**_encode(values), "upload": blob}
    held = {"owner": owner, "lease_until": db.clock(conn) + lease} if owner else {}
    conn.execute(insert(report).values(**values, **held, created_at=now(), done_items=0, read_items=0))


# ---------------------------------------------------------------- job leases
# A report's job is held by one server (`owner`) until `lease_until`, seconds since the epoch
# on the database's clock (so the servers' clocks do not matter); the server renews the lease
# while it lives, and every write of the job is fenced by its owner (migration 0008).

PENDING = ("queued", "running")


def _held_by(owner: str) -> ColumnElement[bool]:
    return and_(report.c.owner == owner, report.c.status.in_(PENDING))


def take_job(conn: Connection, report_id: str, owner: str, lease: float) -> bool:
    """Hold a queued or running report's job for `owner` for `lease` seconds: one it already
    holds, one nobody holds, or one whose lease ran out (its server died). False: the report is
    gone, finished, or held by a live server."""
    clock = db.clock(conn)
    lapsed = report.c.lease_until < clock - db.lease_grace(conn)
    free = or_(report.c.owner.is_(None), report.c.owner == owner, lapsed)
    q = update(report).where(report.c.id == report_id, report.c.status.in_(PENDING), free)
    return conn.execute(q.values(owner=owner, lease_until=clock + lease)).rowcount > 0


def renew_jobs(conn: Connection, owner: str, lease: float) -> int:
    """Extend the leases of `owner`'s pending jobs by `lease` seconds from now; how many it holds."""
    return conn.execute(update(report).where(_held_by(owner)).values(lease_until=db.clock(conn) + lease)).rowcount


def release_jobs(conn: Connection, owner: str) -> int:
    """Let `owner`'s pending jobs go (a server stopping): any server may take them up at once."""
    return conn.execute(update(report).where(_held_by(owner)).values(lease_until=0.0)).rowcount


def stale_jobs(conn: Connection) -> list[str]:
    """Pending reports nobody holds, or whose lease ran out, oldest first."""
    free = or_(report.c.owner.is_(None), report.c.lease_until < db.clock(conn) - db.lease_grace(conn))
    q = select(report.c.id).where(report.c.status.in_(PENDING), free).order_by(report.c.created_at, report.c.id)
    return list(conn.execute(q).scalars())


def _job(report_id: str, owner: str | None) -> ColumnElement[bool]:
    """The report, fenced by the job's owner when one is given."""
    cond = report.c.id == report_id
    return cond if owner is None else and_(cond, report.c.owner == owner)


def reports_using(conn: Connection, name: str) -> list[str]:
    """The ids of the reports queued or running on corpus `name` (their jobs read it)."""
    rows = conn.execute(select(report.c.id, report.c.corpora).where(report.c.status.in_(("queued", "running"))))
    return sorted(str(rid) for rid, names in rows if name in json.loads(names))


def listed(names: Sequence[str]) -> str:
    """Names as a report item's roles_found and corpora_found columns hold them (",a,b,"), so that
    a filter finds one by its commas."""
    return "," + ",".join(names) + ","


def rename_corpus(conn: Connection, old: str, new: str, since: Any, batch: int = 1000) -> int:
    """Corpus `old`, made at `since`, is called `new` in every report made with it: the corpora it
    was checked against, its summary's per-corpus counts, and each item's evidence and corpora
    found (the reports kept the old name, so the item list's corpus filter found nothing under
    the new one and the dashboard offered a corpus that no longer exists: a new user's trial).
    Reports name corpora, so two are left as they are (a review): one made before `since`, with
    an older corpus of that name since deleted, and one that already names `new`, a deleted
    corpus (its counts would merge with this one's). The number of reports changed."""
    ids = []
    rows = conn.execute(select(report.c.id, report.c.corpora, report.c.summary).where(report.c.created_at >= since))
    for rid, names, summary in rows.all():
        corpora = json.loads(names)
        if old not in corpora or new in corpora:
            continue
        values: dict[str, Any] = {"corpora": [new if c == old else c for c in corpora]}
        said = json.loads(summary) if summary is not None else None
        if said and old in said.get("per_corpus", {}):
            said["per_corpus"] = dict(sorted((new if k == old else k, v) for k, v in said["per_corpus"].items()))
            values["summary"] = said
        conn.execute(update(report).where(report.c.id == rid).values(**_encode(values)))
        ids.append(rid)
    for rid in ids:
        _rename_in_items(conn, rid, old, new, batch)
    return len(ids)


def _rename_in_items(conn: Connection, report_id: str, old: str, new: str, batch: int) -> None:
    """rename_corpus in one report's items, `batch` at a time, each batch in one statement; the
    corpora found made again from the evidence, as `item_row` makes them (a name may hold a
    comma, which the stored ",a,b," cannot tell from two names)."""
    found = report_item.c.corpora_found.contains(f",{old},", autoescape=True)
    change = (
        update(report_item)
        .where(report_item.c.report_id == report_id, report_item.c.idx == bindparam("at"))
        .values(corpora_found=bindparam("found"), data=bindparam("item"))
    )
    last = -1
    while rows := conn.execute(
        select(report_item.c.idx, report_item.c.data)
        .where(report_item.c.report_id == report_id, found, report_item.c.idx > last)
        .order_by(report_item.c.idx)
        .limit(batch)
    ).all():
        changed = []
        for idx, data in rows:
            d = json.loads(data)
            evidence = d.get("evidence") or []
            for e in evidence:
                if e.get("corpus") == old:
                    e["corpus"] = new
            names = sorted({str(e.get("corpus")) for e in evidence})
            changed.append({"at": idx, "found": listed(names), "item": json.dumps(d)})
        conn.execute(change, changed)
        last = rows[-1][0]


def _decode(row: Any) -> dict[str, Any]:
    d = dict(row)
    for k in JSON_COLUMNS:
        if d.get(k) is not None:
            d[k] = json.loads(d[k])
    d["phase"] = phase(d)
    return d


def phase(rep: dict[str, Any]) -> str:
    """queued | reading (the job's first pass reads every item) | scoring | done | failed."""
    if rep["status"] != "running":
        return str(rep["status"])
    return "reading" if rep["done_items"] == 0 and rep["read_items"] < rep["total_items"] else "scoring"


def get(conn: Connection, report_id: str) -> dict[str, Any] | None:
    row = conn.execute(select(*REPORT_COLUMNS).where(report.c.id == report_id)).mappings().first()
    return _decode(row) if row else None


def upload(conn: Connection, report_id: str) -> bytes | None:
    """The benchmark file a report was made from, as uploaded."""
    blob = conn.execute(select(report.c.upload).where(report.c.id == report_id)).scalar_one_or_none()
    return None if blob is None else zstandard.ZstdDecompressor().decompress(blob, max_output_size=1 << 34)


def upload_to(conn: Connection, report_id: str, dest: IO[bytes]) -> bool:
    """The benchmark file a report was made from, written to `dest` as it is decompressed
    (False: no such report)."""
    blob = conn.execute(select(report.c.upload).where(report.c.id == report_id)).scalar_one_or_none()
    if blob is None:
        return False
    zstandard.ZstdDecompressor().copy_stream(io.BytesIO(blob), dest)
    return True


def list_all(conn: Connection, limit: int = 100, offset: int = 0) -> tuple[int, list[dict[str, Any]]]:
    """The reports, newest first; each with `held`: a server holds its job under a live lease (a
    queued or running report that none holds waits for the next server: `contam reports` said
    `running` of a job whose server had stopped, an operator's trial)."""
    total = conn.execute(select(func.count()).select_from(report)).scalar_one()
    live = and_(report.c.owner.is_not(None), report.c.lease_until >= db.clock(conn) - db.lease_grace(conn))
    q = select(*REPORT_COLUMNS, case((live, True), else_=False).label("held"))
    rows = conn.execute(q.order_by(report.c.created_at.desc(), report.c.id).limit(limit).offset(offset)).mappings()
    return int(total), [_decode(r) for r in rows]


def set_status(conn: Connection, report_id: str, status: str, owner: str | None = None, **values: Any) -> bool:
    """Whether the report is still there to take it (a deleted one is not, nor, given the job's
    `owner`, one another server has taken up)."""
    values = _encode(values)
    if status in ("done", "failed"):
        values["finished_at"] = now()
    return conn.execute(update(report).where(_job(report_id, owner)).values(status=status, **values)).rowcount > 0


def set_progress(conn: Connection, report_id: str, done: int, owner: str | None = None) -> bool:
    """Whether the report is still there to take it (see `set_status`)."""
    return conn.execute(update(report).where(_job(report_id, owner)).values(done_items=done)).rowcount > 0


def set_read(conn: Connection, report_id: str, read: int, owner: str | None = None) -> bool:
    """Items the job's first pass has read; whether the report is still there to take it."""
    return conn.execute(update(report).where(_job(report_id, owner)).values(read_items=read)).rowcount > 0


def delete_items(conn: Connection, report_id: str) -> None:
    conn.execute(delete(report_item).where(report_item.c.report_id == report_id))


def delete_report(conn: Connection, report_id: str) -> bool:
    conn.execute(delete(report_item).where(report_item.c.report_id == report_id))
    return conn.execute(delete(report).where(report.c.id == report_id)).rowcount > 0


def insert_items(conn: Connection, report_id: str, rows: list[dict[str, Any]]) -> None:
    """Item rows; each row's `data` (the item's full result, a dict) is stored as JSON."""
    if rows:
        conn.execute(insert(report_item), [{"report_id": report_id, **r, "data": json.dumps(r["data"])} for r in rows])


def query_items(
    conn: Connection,
    report_id: str | None,
    *,
    status: Sequence[str] | None = None,
    min_score: float | None = None,
    role: str | None = None,
    corpus: str | None = None,
    q: str | None = None,
    sort: str = "score",
    descending: bool = True,
    limit: int = 50,
    offset: int = 0,
) -> tuple[int, list[dict[str, Any]]]:
    """Items matching the filters (one report, or all when report_id is None), with the total."""
    conds = []
    if report_id is not None:
        conds.append(report_item.c.report_id == report_id)
    if status:
        conds.append(report_item.c.status.in_(list(status)))
    if min_score is not None:
        conds.append(report_item.c.score >= min_score)
    if role:
        conds.append(report_item.c.roles_found.contains(f",{role},", autoescape=True))
    if corpus:
        conds.append(report_item.c.corpora_found.contains(f",{corpus},", autoescape=True))
    if q:
        # folded in Python on both sides: SQL's lower() folds ASCII only ("Какой" is not "какой");
        # a row without it (written by a server of an earlier release still running after the
        # upgrade) is searched as before, in its text
        by_text = and_(report_item.c.search == "", func.lower(report_item.c.text).contains(q.lower(), autoescape=True))
        # and its id: "look at pyq-0024" found nothing, the id not being the item's text (a trial)
        by_id = func.lower(report_item.c.item_id).contains(q.strip().lower(), autoescape=True)
        # rows stored before white space was folded hold it as written: the query as written finds them
        as_written = report_item.c.search.contains(search_folded(q, spaces=False), autoescape=True)
        conds.append(or_(report_item.c.search.contains(search_folded(q), autoescape=True), as_written, by_text, by_id))
    where = and_(true(), *conds)
    total = conn.execute(select(func.count()).select_from(report_item).where(where)).scalar_one()
    col = SORTS.get(sort, report_item.c.score)
    # ties: by score within a status; ids of one key ("b1", "b01") as text
    tie = {"status": [report_item.c.score], "item_id": [report_item.c.item_id]}.get(sort, [])
    cols = [col, *tie]
    order = [*(c.desc() if descending else c.asc() for c in cols), report_item.c.report_id, report_item.c.idx]
    rows = conn.execute(
        select(report_item, report.c.name.label("report_name"))
        .join(report, report.c.id == report_item.c.report_id)
        .where(where)
        .order_by(*order)
        .limit(limit)
        .offset(offset)
    ).mappings()
    return int(total), [_item(r) for r in rows]


def _item(row: Any) -> dict[str, Any]:
    d = dict(row)
    data = json.loads(d.pop("data"))
    d.pop("roles_found", None)
    d.pop("corpora_found", None)
    d.pop("search", None)
    d.pop("id_order", None)
    return {**d, **data, "row": d["idx"]}  # the item's place in the benchmark, as the CLI and exports give it


def item_positions(conn: Connection, report_id: str, item_id: str, limit: int) -> list[int]:
    """The idx of a report's items with this id (a benchmark may give several the same one), in
    input order, at most `limit` of them."""
    q = (
        select(report_item.c.idx)
        .where(report_item.c.report_id == report_id, report_item.c.item_id == item_id)
        .order_by(report_item.c.idx)
        .limit(limit)
    )
    return [int(i) for i in conn.execute(q).scalars()]


def get_item(conn: Connection, report_id: str, item_id: str | None, idx: int) -> dict[str, Any] | None:
    """The report's item at position idx, if it has this id (any id: None)."""
    where = [report_item.c.report_id == report_id, report_item.c.idx == idx]
    where += [] if item_id is None else [report_item.c.item_id == item_id]
    row = (
        conn.execute(
            select(report_item, report.c.name.label("report_name"))
            .join(report, report.c.id == report_item.c.report_id)
            .where(*where)
        )
        .mappings()
        .first()
    )
    return _item(row) if row else None


def statuses_by_idx(conn: Connection, report_id: str) -> dict[int, str]:
    rows = conn.execute(select(report_item.c.idx, report_item.c.status).where(report_item.c.report_id == report_id))
    return {int(i): s for i, s in rows.all()}
