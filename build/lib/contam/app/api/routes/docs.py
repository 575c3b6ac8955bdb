"""Swagger UI at /docs from the swagger-ui-bundle package: nothing is fetched from a CDN, and
no inline script runs (its start-up is /docs/init.js), so the page works under the strict
Content-Security-Policy every response carries."""

from __future__ import annotations

import swagger_ui_bundle
from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS = "/static/swagger"
router = APIRouter(include_in_schema=False)

PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>contam API</title>
<link rel="stylesheet" href="{ASSETS}/swagger-ui.css">
<link rel="icon" href="{ASSETS}/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{ASSETS}/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
"""
INIT = """window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  layout: "BaseLayout",
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
"""


def assets() -> StaticFiles:
    """The Swagger UI files, for create_app to mount at ASSETS."""
    return StaticFiles(directory=swagger_ui_bundle.swagger_ui_path)


@router.get("/docs")
def docs() -> HTMLResponse:
    return HTMLResponse(PAGE)


@router.get("/docs/init.js")
def docs_init() -> Response:
    return Response(INIT, media_type="text/javascript")
