"""Corpus settings pin what the libraries compute (known answers), not their versions.

Corpora were stored with the versions of unicodedata, xxhash and datasketch, so a patch-level
upgrade of xxhash made every scan refuse the index. Their `libraries` become the known answers
of this installation (app.core.signatures.known_answers) and the fingerprint is recomputed,
for every corpus indexed under this Python's Unicode version (xxh3 and the MinHash maths are
fixed algorithms; normalisation follows the Unicode tables). Corpora indexed under another
Unicode version keep their old settings, and a scan names the difference. No schema change.

Revision ID: 0004_known_answers
Revises: 0003
Create Date: 2026-12-01
"""
import json
import unicodedata
from importlib import metadata

import sqlalchemy as sa
from alembic import op

from contam.app.core.config import SignatureConfig, known_answers

revision = "0004_known_answers"
down_revision = "0003"
branch_labels = None
depends_on = None

_corpus = sa.table("corpus", sa.column("id", sa.Integer), sa.column("fingerprint", sa.String),
                   sa.column("config", sa.Text))


def _rewrite(convert) -> None:
    conn = op.get_bind()
    for cid, config in conn.execute(sa.select(_corpus.c.id, _corpus.c.config)).all():
        cfg = json.loads(config)
        libraries = convert(cfg.get("libraries") or {})
        if libraries is None:
            continue
        cfg["libraries"] = libraries
        new = SignatureConfig.from_dict(cfg)
        conn.execute(sa.update(_corpus).where(_corpus.c.id == cid).values(
            fingerprint=new.fingerprint(), config=json.dumps(new.to_dict(), sort_keys=True)))


def upgrade() -> None:
    def convert(libraries: dict) -> dict | None:
        if libraries.get("unicodedata") != unicodedata.unidata_version:
            return None  # another Unicode version (or already converted): left as it is
        return known_answers()
    _rewrite(convert)


def downgrade() -> None:
    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "missing"

    def convert(libraries: dict) -> dict | None:
        if "unicodedata" in libraries:
            return None
        return {"unicodedata": unicodedata.unidata_version, "xxhash": version("xxhash"),
                "datasketch": version("datasketch")}
    _rewrite(convert)
