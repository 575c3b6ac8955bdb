"""Domain errors -> HTTP, in one place: the table below is the API's whole error mapping."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DatabaseError, DataError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from contam.app.api.schemas import CheckItemIn, ErrorRead, unknown_threshold
from contam.app.errors import (
    ConfigError,
    ContamError,
    InputError,
    LimitError,
    NotFoundError,
    SettingsConflict,
    StateError,
    UnavailableError,
    disk_full,
    first_line,
)
from contam.app.services.database import database_trouble, refused_value, unavailable_reason

# The nearest class in an error's ancestry decides; anything else in the tree is a 400.
STATUS: dict[type[ContamError], int] = {
    NotFoundError: 404,
    SettingsConflict: 409,  # also FingerprintMismatch: the index holds other signature settings
    LimitError: 413,  # the message names the setting (CONTAM_MAX_...)
    StateError: 409,  # an empty corpus, a corpus a job is using
    InputError: 422,
    ConfigError: 422,
    UnavailableError: 503,
}
log = logging.getLogger("contam.server")
RETRY_AFTER = {"Retry-After": "5"}  # with every 503: the database may be back in a few seconds
# The error bodies every API route may answer with, for the OpenAPI document.
RESPONSES: dict[int | str, dict[str, Any]] = {c: {"model": ErrorRead} for c in (400, 401, 404, 409, 413, 415, 422, 503)}


def status_of(exc: ContamError) -> int:
    return next((STATUS[c] for c in type(exc).__mro__ if c in STATUS), 400)


def log_failure(request: Request, code: int, message: str) -> None:
    """Why the server answered 5xx, in its log: the access line alone said "503 Service
    Unavailable" with no reason, a dropped database or a full disk too (an operator's trial)."""
    log.warning("%s %s answered %d: %s", request.method, request.url.path, code, message)


def error_body(message: str, detail: Any = None) -> dict[str, Any]:
    return {"error": message, "detail": detail}


async def domain_error(req: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ContamError)
    code = status_of(exc)
    if code >= 500:
        log_failure(req, code, exc.message)
    return JSONResponse(error_body(exc.message, exc.detail), status_code=code, headers=_headers(code))


def _headers(code: int) -> dict[str, str] | None:
    return RETRY_AFTER if code == 503 else None


async def database_error(req: Request, exc: Exception) -> JSONResponse:
    """The database cannot be reached (or is locked past the busy timeout): a 503 with the
    driver's reason, never a 500."""
    assert isinstance(exc, DatabaseError)
    message, passing = database_trouble(exc, "; try again shortly")
    unreachable = passing and isinstance(exc, OperationalError)
    reason = unavailable_reason(exc)
    log_failure(req, 503 if unreachable else 500, message if reason in message else f"{message} ({reason})")
    if not passing or not isinstance(exc, OperationalError):  # a full disk or a damaged file (SQLite's
        # DatabaseError "malformed"): the server's trouble, which waiting does not mend
        return JSONResponse(error_body(message, unavailable_reason(exc)), status_code=500)
    body = error_body("the database is unavailable; try again shortly", unavailable_reason(exc))
    return JSONResponse(body, status_code=503, headers=RETRY_AFTER)


async def os_error(req: Request, exc: Exception) -> JSONResponse:
    """A disk that filled up under a write (an upload's copy, a scan's tables): 507 saying so; any
    other OSError, a 500 naming it, in JSON as every other answer."""
    full = disk_full(exc)
    message, code = (full, 507) if full else (f"{type(exc).__name__}: {first_line(exc)}", 500)
    log_failure(req, code, message)
    return JSONResponse(error_body(message), status_code=code)


async def data_error(_req: Request, exc: Exception) -> JSONResponse:
    """A value of the request the database refuses to store or compare (a NUL character, which
    PostgreSQL's text never holds): a 422 naming it, never a 500."""
    assert isinstance(exc, DataError)
    return JSONResponse(error_body(refused_value(exc)), status_code=422)


_ALTERNATIVES = re.compile(r"\^\(([\w|]+)\)\??\$")  # alternatives, "^(question|choices)$" (or none: "...)?$")


def plain_problem(err: Mapping[str, Any]) -> str:
    """One validation error in the words of this tool: where, then what is wrong, without the
    framework's ("Extra inputs are not permitted", "String should match pattern '^(...)$'" and
    "status.0" said nothing a user could act on: a new user's trial)."""
    loc = [str(x) for x in err.get("loc", ())]
    where = ".".join(x for x in loc[1:] if not x.isdigit() or loc[0] == "body") or "request"
    kind, ctx, msg = err.get("type"), err.get("ctx") or {}, str(err.get("msg", "invalid"))
    if kind == "extra_forbidden" and len(loc) > 2 and loc[-2] == "thresholds":
        return f"{'.'.join(loc[1:-1])}: {unknown_threshold(loc[-1])}"
    if kind == "extra_forbidden" and loc[:2] == ["body", "items"] and len(loc) == 4:
        # a chat item ({"messages": [...]}) was told only that, not what an item holds nor where
        # such rows are read (a new user's trial)
        fields = ", ".join(CheckItemIn.model_fields)
        return (
            f"{where}: not a field of an item (an item's fields: {fields}); a dataset's rows in another layout "
            "(chat messages, say) are read as a benchmark file's: POST /api/v1/benchmarks"
        )
    if kind == "extra_forbidden":
        return f"{where}: not a field this request takes"
    if kind == "string_pattern_mismatch" and (m := _ALTERNATIVES.fullmatch(str(ctx.get("pattern", "")))):
        return f"{where}: must be one of {', '.join(m.group(1).split('|'))}"
    if kind in ("enum", "literal_error") and "expected" in ctx:
        return f"{where}: must be {ctx['expected']}"
    return f"{where}: {msg}"


def _problems(exc: RequestValidationError) -> list[dict[str, Any]]:
    """Where and what, without echoing the input: it may be huge, bytes, or a float JSON
    cannot carry (1e999, NaN), and the answer must always be JSON."""
    return [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")), "type": e.get("type")}
        for e in exc.errors()
    ]


NO_FILE = (
    "the upload holds no complete file part named `file`: send the benchmark as the multipart field `file` "
    "(curl -F file=@bench.jsonl URL); a body cut off before the part's closing boundary loses it"
)


async def validation_error(_req: Request, exc: Exception) -> JSONResponse:
    """422 naming each field that is wrong; a body that is not JSON at all is a 400 saying where
    the parser stopped ("JSON decode error" at a bare character offset told neither)."""
    assert isinstance(exc, RequestValidationError)
    broken = next((e for e in exc.errors() if e.get("type") == "json_invalid"), None)
    if broken is not None:
        at = broken.get("loc", ("body", "?"))[-1]
        why = (broken.get("ctx") or {}).get("error", "not JSON")
        message = f"the request body is not valid JSON: {why} at character {at}"
        return JSONResponse(error_body(message), status_code=400)
    problems = _problems(exc)
    no_file = any(p["loc"] == ["body", "file"] and p["type"] == "missing" for p in problems)
    said = "invalid request: " + "; ".join(plain_problem(e) for e in exc.errors())
    return JSONResponse(error_body(NO_FILE if no_file else said, problems), status_code=422)


async def http_error(_req: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    detail = getattr(exc, "limit_detail", None)  # a body over its limit (bodies.TooLarge): the setting and value
    message = str(exc.detail)
    if isinstance(exc.__cause__, UnicodeDecodeError):  # FastAPI said "There was an error parsing the body" (a trial)
        message = (
            f"the request body is not UTF-8 text (invalid byte at position {exc.__cause__.start}): "
            "send JSON encoded as UTF-8"
        )
    return JSONResponse(error_body(message, detail), status_code=exc.status_code, headers=exc.headers)


def install(app: FastAPI) -> None:
    app.add_exception_handler(ContamError, domain_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(OperationalError, database_error)
    app.add_exception_handler(DatabaseError, database_error)  # other than the two named here
    app.add_exception_handler(DataError, data_error)
    app.add_exception_handler(OSError, os_error)
