"""Settings from the environment (prefix CONTAM_), built by a function, never at import."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from contam.app.core.units import MiB, mib_to_bytes
from contam.app.errors import ConfigError
from contam.app.limits import Limits
from contam.app.services.database import RETRY_SECONDS

_LIMITS = Limits()  # the defaults, defined once in app.limits


def default_database_url() -> str:
    """SQLite under the user's data folder ($XDG_DATA_HOME/contam, else ~/.local/share/contam), so
    that `contam` run from any folder opens the same database (CONTAM_DATABASE_URL overrides it)."""
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{base / 'contam' / 'contam.db'}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CONTAM_", extra="ignore")

    database_url: str = Field(
        default_factory=default_database_url,
        description="SQLAlchemy URL of the index database (default: contam.db under the user's data folder)",
    )
    host: str = Field("127.0.0.1", description="address `contam serve` listens on")
    port: int = Field(8000, description="port `contam serve` listens on")
    api_keys: str = Field("", description="comma-separated API keys; empty means no authentication")
    session_secret: str = Field(
        "", description="secret the dashboard's sign-in cookies are signed with; empty: a random one per start"
    )
    allow_insecure_bind: bool = Field(False, description="allow a non-loopback host without API keys")
    max_upload_mb: float = Field(200.0, gt=0, description="largest benchmark upload accepted, in MiB")
    max_decompressed_mb: float = Field(
        _LIMITS.decompressed_bytes / MiB, gt=0, description="largest benchmark after decompression, in MiB"
    )
    max_items: int = Field(_LIMITS.items, gt=0, description="most items in one benchmark")
    max_item_chars: int = Field(_LIMITS.item_chars, gt=0, description="most characters in one field of an item")
    max_check_chars: int = Field(_LIMITS.check_chars, gt=0, description="most characters in one /check request")
    max_check_items: int = Field(_LIMITS.check_items, gt=0, description="most texts and items in one /check request")
    max_json_depth: int = Field(_LIMITS.json_depth, gt=0, description="deepest nesting of a JSON request body")
    max_csv_field_chars: int = Field(
        _LIMITS.csv_field_chars, gt=0, description="most characters in one field of a CSV/TSV benchmark"
    )
    max_line_mb: float = Field(
        _LIMITS.line_bytes / MiB, gt=0, description="longest line of a JSON lines or CSV/TSV benchmark, in MiB"
    )
    job_workers: int = Field(2, ge=1, description="report jobs the server runs at once")
    scan_workers: int = Field(
        0, ge=0, description="processes a report job scores its chunks of up to 500 items in; 0 means one per core"
    )
    check_workers: int = Field(0, ge=0, description="processes that score /api/v1/check requests; 0 means one per core")
    job_retry_seconds: float = Field(
        RETRY_SECONDS, ge=0, description="how long a report job retries an unreachable database before failing"
    )
    job_lease_seconds: float = Field(
        30.0,
        gt=0,
        description="seconds a report job stays its server's after its last renewal; then others may take it up",
    )
    workers: int = Field(0, ge=0, description="indexer worker processes; 0 means one per core")
    # The indexer's knobs below default to None: the job's own default (indexer.options.IndexOptions).
    batch_size: int | None = Field(None, gt=0, description="documents per indexing batch")
    commit_mb: float | None = Field(
        None, ge=0, description="indexer commits after this many MiB of text; 0: after each file"
    )
    segment_rows: int | None = Field(None, gt=0, description="posting rows the indexer buffers and writes as a segment")
    merge_fanout: int | None = Field(
        None, ge=0, description="the indexer merges this many segments of one size; 0: never"
    )
    claim_lease_seconds: float = Field(
        30.0, gt=0, description="the Ray executor: a file's claim lapses this long after its worker last renewed it"
    )
    demo: bool = Field(True, description="index a demo corpus and check a demo benchmark on an empty database")

    @property
    def max_upload_bytes(self) -> int:
        return mib_to_bytes(self.max_upload_mb)

    def limits(self) -> Limits:
        return Limits(
            decompressed_bytes=mib_to_bytes(self.max_decompressed_mb),
            items=self.max_items,
            item_chars=self.max_item_chars,
            check_chars=self.max_check_chars,
            check_items=self.max_check_items,
            json_depth=self.max_json_depth,
            csv_field_chars=self.max_csv_field_chars,
            line_bytes=mib_to_bytes(self.max_line_mb),
        )

    def key_set(self) -> set[str]:
        return {k.strip() for k in self.api_keys.split(",") if k.strip()}

    def resolved_workers(self) -> int:
        return self.workers if self.workers > 0 else (os.cpu_count() or 1)


# CONTAM_ names read elsewhere than Settings: the test suite's PostgreSQL URL, and the indexer's hook
# for tests that kill a worker mid-file
OTHER_NAMES = ("CONTAM_TEST_PG", "CONTAM_TEST_KILL_MARKER")


def unknown_settings(environ: Mapping[str, str]) -> list[str]:
    """A line for each CONTAM_ variable that names no setting, with the one likely meant: a
    misspelt CONTAM_API_KEY left the server open to all and CONTAM_DATABSE_URL used the default
    database, without a word (an operator's trial)."""
    known = [f"CONTAM_{name.upper()}" for name in Settings.model_fields] + list(OTHER_NAMES)
    out = []
    for name in sorted(k for k in environ if k.upper().startswith("CONTAM_") and k.upper() not in known):
        # compared without the prefix all share, which made any name look near one (CONTAM_URL was
        # told CONTAM_PORT, CONTAM_DEBUG CONTAM_DEMO)
        meant = difflib.get_close_matches(name.upper()[7:], [k[7:] for k in known], 1, 0.6)
        hint = f" (did you mean CONTAM_{meant[0]}?)" if meant else ""
        out.append(f"{name} is no setting, and is ignored{hint}")
    return out


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings from the environment; a value out of range is one line naming its variable
    (it was pydantic's "1 validation error for Settings")."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(f"CONTAM_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid setting: {problems}") from None
