"""Domain errors -> HTTP, in one place."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.errors import ConfigError, ContamError, FingerprintMismatch, InputError, NotFoundError

STATUS = {NotFoundError: 404, InputError: 422, FingerprintMismatch: 409, ConfigError: 422}


def install(app: FastAPI) -> None:
    @app.exception_handler(ContamError)
    async def _domain(_req: Request, exc: ContamError) -> JSONResponse:
        code = next((c for t, c in STATUS.items() if isinstance(exc, t)), 400)
        return JSONResponse({"error": exc.message, "detail": exc.detail}, status_code=code)

    @app.exception_handler(RequestValidationError)
    async def _validation(_req: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": "invalid request", "detail": exc.errors()}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_req: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(
            {"error": str(exc.detail), "detail": None},
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )
