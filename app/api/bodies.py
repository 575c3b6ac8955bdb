"""Request bodies, bounded before anything parses them: BodyLimit counts every body as it
arrives (with or without Content-Length), JsonRoute lets only JSON reach a JSON route and
refuses nesting deeper than the limit before the parser recurses into it."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Coroutine
from typing import Any, get_args, get_origin

from fastapi import Request, Response, params
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contam.app.core.units import MiB
from contam.app.limits import Limits, check_json_depth, exceeded

FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
# dashboard pages that answer a body refused for its size with their form and the reason: the
# upload form's file over CONTAM_MAX_UPLOAD_MB showed the API's JSON, the form lost (a trial)
FORM_PAGES = frozenset({"/upload"})


class TooLarge(HTTPException):
    """A 413 raised while a body is read (an HTTPException passes FastAPI's body parsing
    unchanged), keeping the LimitError's detail: {"limit": setting, "value": bytes}."""

    def __init__(self, limit: str, value: int, what: str) -> None:
        refused = exceeded(limit, value, what)
        super().__init__(413, refused.message)
        self.limit_detail = refused.detail


class BodyLimit:
    """Refuse a request body over its limit as it arrives: a form (an upload) may hold the
    upload limit and a MiB for the form around the file, anything else a JSON request's size.
    Nothing over the limit is read into memory or spooled to disk. One whose Content-Length is
    over it is answered here (a 413 in JSON), but on FORM_PAGES, whose reading of the body is
    refused instead, so the page says why."""

    def __init__(self, app: ASGIApp, upload_bytes: int, limits: Limits) -> None:
        self.app, self.upload_bytes, self.json_bytes = app, upload_bytes, limits.json_body_bytes

    def _limit(self, headers: Headers) -> tuple[TooLarge, int]:
        """The refusal and the bytes allowed before it (a form: the file's limit and a MiB)."""
        if headers.get("content-type", "").lower().startswith(FORM_TYPES):
            return TooLarge("upload_bytes", self.upload_bytes, "the upload"), self.upload_bytes + MiB
        return TooLarge("json_body_bytes", self.json_bytes, "the request body"), self.json_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal, limit = self._limit(headers)
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            if scope["path"] not in FORM_PAGES:
                await _answer_413(send, refusal)
                return

            async def unread() -> Message:  # the page's own reading of its form is refused, nothing read
                raise refusal

            await self.app(scope, unread, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > limit:  # an HTTPException passes FastAPI's body parsing unchanged
                raise refusal
            return message

        await self.app(scope, counted, send)


async def _answer_413(send: Send, exc: TooLarge) -> None:
    # written as the API's other errors are (FastAPI's JSONResponse: no spaces after separators)
    body = json.dumps({"error": exc.detail, "detail": exc.limit_detail}, separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def is_json(content_type: str) -> bool:
    main = content_type.split(";", 1)[0].strip().lower()
    return main == "application/json" or (main.startswith("application/") and main.endswith("+json"))


class JsonRoute(APIRoute):
    """An API route: a JSON body must say so (form posts, which any web page can make, get 415)
    and is refused over the nesting limit (CONTAM_MAX_JSON_DEPTH) before it is parsed. A form
    route (an upload) must be sent as a multipart form, with the fields it takes, each once:
    a JSON body or a raw file got a bare "Field required" for `file`, a file sent as `upload`
    the same, and two files in `file` were taken as the last one, silently."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        field = self.body_field
        takes_json = field is not None and not isinstance(field.field_info, params.Form)
        takes_form = field is not None and not takes_json
        fields = [f.alias for f in self.dependant.body_params]
        many = {f.alias for f in self.dependant.body_params if _takes_many(f.field_info.annotation)}
        files = any(isinstance(f.field_info, params.File) for f in self.dependant.body_params)
        asked = query_names(self.dependant)
        listed = query_lists(self.dependant)

        async def route(request: Request) -> Response:
            if unknown := unknown_query(request, asked) or repeated_query(request, listed):
                raise HTTPException(422, unknown)
            if takes_json:
                if not is_json(request.headers.get("content-type", "")):
                    raise HTTPException(415, "send the request body as JSON (Content-Type: application/json)")
                limits: Limits = request.app.state.limits
                check_json_depth(await request.body(), limits.json_depth)
            elif takes_form:
                await _check_form(request, fields, many, files)
            return await handler(request)

        return route


def query_names(d: Dependant) -> list[str]:
    """The query parameters a route takes, its dependencies' too."""
    return [f.alias for f in d.query_params] + [name for sub in d.dependencies for name in query_names(sub)]


# What mail, chat and ad links add to an address they pass on (Google's utm_* and click ids,
# Facebook's, Microsoft's, Mailchimp's): a dashboard link a teammate follows from such a message
# carries them, and a page refused for them read as a broken link
TRACKING_PREFIXES = ("utm_",)
TRACKING_NAMES = frozenset({"fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "mc_cid", "mc_eid", "_ga"})


def tracking(name: str) -> bool:
    """Whether a query parameter is one a link's messenger added (TRACKING_NAMES)."""
    return name.lower() in TRACKING_NAMES or name.lower().startswith(TRACKING_PREFIXES)


def query_lists(d: Dependant) -> set[str]:
    """The query parameters a route takes once per value (a list), its dependencies' too."""
    own = {f.alias for f in d.query_params if _takes_many(f.field_info.annotation)}
    return own.union(*(query_lists(sub) for sub in d.dependencies))


def repeated_query(request: Request, lists: set[str], ignored: Callable[[str], bool] = lambda _: False) -> str | None:
    """Why a request's query is refused: a parameter that takes one value given several times
    (`?sort=score&sort=row` was sorted by the last, silently); None if there is none. `ignored`:
    names let through (a link's tracking parameters, on a dashboard page)."""
    params = request.query_params
    repeated = sorted({k for k in params if k not in lists and not ignored(k) and len(params.getlist(k)) > 1})
    if not repeated:
        return None
    many = f" (only {', '.join(sorted(lists))} may be repeated)" if lists else ""
    return f"query parameter {', '.join(repeated)} given more than once: give it once{many}"


def unknown_query(request: Request, known: list[str], ignored: Callable[[str], bool] = lambda _: False) -> str | None:
    """Why a request's query parameters are refused: one the route does not take, named (and the
    nearest it does); None if there is none. A misspelt filter (`?stauts=clean`, `?pagesize=3`)
    gave every item, 50 a page, as if it were not there (a new user's trial), where a JSON
    body's unknown key is refused. `ignored`: names let through whatever the route takes."""
    unknown = sorted({k for k in request.query_params if k not in known and not ignored(k)})
    if not unknown:
        return None
    near = [m for k in unknown for m in difflib.get_close_matches(k, known, 1)]
    takes = f"this takes {', '.join(known)}" if known else "this takes none"
    return f"unknown query parameter{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}: {takes}" + (
        f" (did you mean {', '.join(near)}?)" if near else ""
    )


def _takes_many(annotation: Any) -> bool:
    """Whether a form field's type is a list (or an optional one): a field given once per value."""
    return any(get_origin(a) in (list, tuple, set) for a in (annotation, *get_args(annotation)))


async def _check_form(request: Request, fields: list[str], many: set[str], files: bool) -> None:
    """Refuse, naming the problem, a form route's request that is not a multipart form (`files`:
    the route takes a file, which only multipart carries), holds a field the route does not take,
    or gives one of its fields more than once (`many`: those that take a list, as a form of
    checkboxes sends one field per box)."""
    example = f"curl -F {fields[0]}=@FILE ..." if fields else "a multipart form"
    main = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    # a form with a file part can only be multipart: `curl --data-binary @b.jsonl URL` sends the
    # raw file as application/x-www-form-urlencoded, whose parse made the file's text a field name
    if main not in (FORM_TYPES[:1] if files else FORM_TYPES):
        raise HTTPException(
            415,
            f"send a multipart form (Content-Type: multipart/form-data) with the fields {', '.join(fields)} "
            f"({example}), not {main or 'a body without a Content-Type'}",
        )
    form = await request.form()  # kept on the request: the handler reads the same parse
    unknown = sorted({k for k in form if k not in fields})
    repeated = sorted({k for k in form if k not in many and len(form.getlist(k)) > 1})
    if unknown or repeated:  # its spooled files closed now: the handler that would close them is not reached
        await form.close()
    if unknown:
        raise HTTPException(
            422,
            f"unknown form field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}: this takes {', '.join(fields)}",
        )
    if repeated:
        raise HTTPException(
            422, f"form field {', '.join(repeated)} given more than once: send one of each (one file an upload)"
        )
