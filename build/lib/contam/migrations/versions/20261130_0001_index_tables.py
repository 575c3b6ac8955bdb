"""Index tables: corpora, corpus files, documents, n-gram and LSH band postings.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "corpus",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("fingerprint", sa.String(32), nullable=False),
        sa.Column("config", sa.Text(), nullable=False),
        sa.Column("store_text", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_corpus"),
        sa.UniqueConstraint("name", name="uq_corpus_name"),
    )
    op.create_table(
        "corpus_file",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("corpus_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("content_hash", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text()),
        sa.Column("n_docs", sa.Integer(), nullable=False),
        sa.Column("n_tokens", sa.BigInteger(), nullable=False),
        sa.Column("n_ngrams", sa.BigInteger(), nullable=False),
        sa.Column("n_windows", sa.BigInteger(), nullable=False),
        sa.Column("skipped", sa.Text(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("indexed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["corpus_id"], ["corpus.id"], name="fk_corpus_file_corpus_id_corpus", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_corpus_file"),
        sa.UniqueConstraint("corpus_id", "content_hash", name="uq_corpus_file_corpus_id_content_hash"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(sa.schema.CreateSequence(sa.Sequence("document_id_seq")))
    op.create_table(
        "document",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("corpus_id", sa.Integer(), nullable=False),
        sa.Column("file_id", sa.Integer(), nullable=False),
        sa.Column("external_id", sa.Text(), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("n_chars", sa.Integer(), nullable=False),
        sa.Column("n_tokens", sa.Integer(), nullable=False),
        sa.Column("text_hash", sa.BigInteger(), nullable=False),
        sa.Column("text", sa.LargeBinary()),
        sa.ForeignKeyConstraint(["corpus_id"], ["corpus.id"], name="fk_document_corpus_id_corpus", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["file_id"], ["corpus_file.id"], name="fk_document_file_id_corpus_file", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_document"),
    )
    op.create_index("ix_document_file_id", "document", ["file_id"])
    op.create_index("ix_document_corpus_id_text_hash", "document", ["corpus_id", "text_hash"])
    op.create_table(
        "ngram",
        sa.Column("hash", sa.BigInteger(), nullable=False),
        sa.Column("doc_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("hash", "doc_id", name="pk_ngram"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "band",
        sa.Column("key", sa.BigInteger(), nullable=False),
        sa.Column("doc_id", sa.Integer(), nullable=False),
        sa.Column("win", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", "doc_id", "win", name="pk_band"),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("band")
    op.drop_table("ngram")
    op.drop_index("ix_document_corpus_id_text_hash", table_name="document")
    op.drop_index("ix_document_file_id", table_name="document")
    op.drop_table("document")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(sa.schema.DropSequence(sa.Sequence("document_id_seq")))
    op.drop_table("corpus_file")
    op.drop_table("corpus")
