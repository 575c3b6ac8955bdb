"""Domain errors -> dashboard pages, in one place: the table below, applied to every page by
PageRoute, so no page answers 500 for an error the user can act on."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlencode

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute
from sqlalchemy.exc import DatabaseError, DataError, OperationalError

from contam.app.api.bodies import query_lists, query_names, repeated_query, tracking, unknown_query
from contam.app.api.errors import log_failure, plain_problem
from contam.app.errors import (
    ConfigError,
    ContamError,
    InputError,
    LimitError,
    NotFoundError,
    SettingsConflict,
    StateError,
    UnavailableError,
)
from contam.app.services.database import database_trouble, refused_value
from contam.app.web.rendering import render

# The nearest class in an error's ancestry decides: (HTTP status, page title).
PAGES: dict[type[ContamError], tuple[int, str]] = {
    NotFoundError: (404, "Not found"),
    SettingsConflict: (409, "Settings conflict"),
    StateError: (409, "Not now"),  # a corpus a job uses or an indexing run writes into, as the API's 409
    LimitError: (413, "Too large"),  # the message names the setting, as the API's 413 (an operator's trial: 422 here)
    InputError: (422, "Not accepted"),
    ConfigError: (422, "Not accepted"),
    UnavailableError: (503, "Database unavailable"),
}
OTHER = (400, "Cannot do that")


class LoginRequired(Exception):
    """Raised by the sign-in dependency; the page answers with a redirect to /login."""


def page_status(exc: ContamError) -> tuple[int, str]:
    return next((PAGES[c] for c in type(exc).__mro__ if c in PAGES), OTHER)


def error_page(request: Request, exc: ContamError) -> Response:
    code, title = page_status(exc)
    if code >= 500:
        log_failure(request, code, exc.message)
    return render(request, "error.html", code, title=title, message=exc.message)


def invalid_query(exc: RequestValidationError) -> str:
    """What a request's parameters got wrong, one clause each ("field: must be one of ...")."""
    return "; ".join(f"{plain_problem(err)} (got {err.get('input')!r})" for err in exc.errors())


class PageRoute(APIRoute):
    """A dashboard route: domain errors become an error page, a missing sign-in a redirect."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        asked, listed = query_names(self.dependant), query_lists(self.dependant)

        async def page(request: Request) -> Response:
            try:
                # a misspelt filter in a shared link (`/items?report=R&stauts=clean`) listed every
                # item, where the API refuses it (an operator's trial): a 422 page naming it. What a
                # mail or chat app adds to a link it passes on (utm_source, fbclid) is no filter. One
                # that takes a single value, given twice (`&sort=score&sort=row`), is refused as the
                # API refuses it: the page sorted by the last without a word (a review)
                if unknown := unknown_query(request, asked, tracking) or repeated_query(request, listed, tracking):
                    raise InputError(unknown)
                return await handler(request)
            except LoginRequired:
                # the query too: a shared link to a filtered view or to one of several items of an id
                here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse(f"/login?{urlencode({'next': here})}", status_code=303)
            except ContamError as exc:
                return error_page(request, exc)
            except RequestValidationError as exc:  # a query parameter out of its range: a page, not JSON
                return error_page(request, InputError(invalid_query(exc)))
            except OperationalError as exc:  # the database is away: say so, never a 500
                return error_page(request, UnavailableError(database_trouble(exc, "; try again shortly")[0]))
            except DataError as exc:  # a value the database refuses (a NUL in the address, on PostgreSQL)
                return error_page(request, InputError(refused_value(exc)))
            except DatabaseError as exc:  # a damaged SQLite file ("malformed"): said as such
                damaged, passing = database_trouble(exc)
                if passing:
                    raise
                return error_page(request, UnavailableError(damaged))

        return page
