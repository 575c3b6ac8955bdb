"""Templates for the dashboard: one Jinja environment, its filters registered once, at import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from contam.app.core.types import Status

HERE = Path(__file__).parent
STATIC_URL = "/static"
STATUSES = tuple(Status)


def pct(value: Any) -> str:
    return f"{100 * float(value or 0):.1f}%"


def thousands(value: Any) -> str:
    """A count as the CLI prints it: 12,394,682."""
    return f"{int(value or 0):,}"


def tojson_pretty(value: Any) -> str:
    return json.dumps(value, indent=1, default=str)


def url_part(value: Any) -> str:
    """One path segment of a link, every reserved character percent-encoded ('/' too: the
    route takes the whole rest of the path, and '..' or '?' in an id must not move the link)."""
    return quote(str(value), safe="")


templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.filters["pct"] = pct
templates.env.filters["thousands"] = thousands
templates.env.filters["url_part"] = url_part
templates.env.filters["tojson_pretty"] = tojson_pretty


def static_files() -> StaticFiles:
    """The stylesheet, for create_app to mount at STATIC_URL."""
    return StaticFiles(directory=str(HERE / "static"))


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """A page; every template also gets the item statuses, in order. No page is kept by the browser:
    after "Sign out", Back showed the signed-in page (items, training text) from its cache, not
    asking the server, which would have asked for the key (a new user's trial)."""
    page = templates.TemplateResponse(request, name, {"statuses": STATUSES, **context}, status_code=status_code)
    page.headers["Cache-Control"] = "no-store"
    return page
