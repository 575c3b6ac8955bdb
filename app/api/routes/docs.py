"""Swagger UI at /docs from the swagger-ui-bundle package: nothing is fetched from a CDN."""

from __future__ import annotations

import swagger_ui_bundle
from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/static/swagger"
router = APIRouter(include_in_schema=False)


def assets() -> StaticFiles:
    """The Swagger UI files, for create_app to mount at ASSETS."""
    return StaticFiles(directory=swagger_ui_bundle.swagger_ui_path)


@router.get("/docs")
def docs() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="contam API",
        swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
    )
