"""Use cases around indexed corpora: list them, each one's health, and which of them a scan
uses (`select_corpora`)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine

from contam.app.core.config import SignatureConfig, index_settings
from contam.app.errors import NotFoundError, SettingsConflict, StateError
from contam.app.readers.corpus import split_counts
from contam.app.services.indexing import RUN_LEASE_SECONDS, check_corpus_name
from contam.app.store import db, repo
from contam.app.store import reports as reports_repo


def reproducible(corpus: Mapping[str, Any]) -> bool:
    """Whether this code can score against a corpus (a row of repo.list_corpora): its index was
    made by the same tokeniser, hash schemes and library answers, whatever its options."""
    return not index_settings(corpus["config"])[1]


@dataclass(frozen=True)
class Remedies:
    """How a caller's user acts on a corpus a check of every corpus left out (left_out), in the
    terms of the way they use contam: the Python API's users were told of uploads and commands."""

    other_settings: str  # how to check against corpora indexed with other settings
    other_release: str  # how to index again one another release made


# the REST API has no indexing: its users index with the CLI
API_REMEDIES = Remedies(
    "an upload or check naming them in `corpora` checks against them",
    "`contam corpora delete NAME`, then `contam index` again",
)


def left_out(listing: Sequence[Mapping[str, Any]], checked: Sequence[str], remedies: Remedies) -> list[str]:
    """What a check of every corpus says of the corpora it did not check (rows of
    repo.list_corpora), rather than leave them out unsaid: those indexed with other settings,
    by another release (only indexing them again helps), or holding no document (every file
    failed: a new user's scan left two such corpora out without a word; an upload checked
    against one corpus of two reported 0 contaminated where the other held 3, and nothing said
    so: a trial); `remedies`: what to do, in the caller's terms."""
    unchecked = [c for c in listing if c["documents"] and c["name"] not in checked]
    why = {
        f"indexed with other settings; {remedies.other_settings}": [c["name"] for c in unchecked if reproducible(c)],
        f"indexed by another release of contam: {remedies.other_release}": [
            c["name"] for c in unchecked if not reproducible(c)
        ],
        "no documents: `contam corpora` says which files failed": [c["name"] for c in listing if not c["documents"]],
    }
    return [f"left out ({reason}): {', '.join(names)}" for reason, names in why.items() if names]


def being_indexed(listing: Sequence[Mapping[str, Any]], checked: Sequence[str]) -> list[str]:
    """What a check says of the corpora it read while an indexing run wrote into them (rows of
    repo.list_corpora): it read the files committed so far. A scan mid-run passed a CI gate that
    the finished index trips, without a word; report jobs are refused then (a trial)."""
    return [
        f"corpus {c['name']!r} is being indexed now ({', '.join(c['indexing'])}): this check read the files "
        "committed so far, and may find more once the run ends"
        for c in listing
        if c["name"] in checked and c.get("indexing")
    ]


def no_corpus(missing: Sequence[str], names: Sequence[str]) -> NotFoundError:
    """The error of corpus names that name none, with the corpora there are (the first 20), and,
    for a name holding a comma, how several are given: a list split at commas everywhere else,
    `--corpus a,b` was "no corpus named 'a,b'" (a new user's trial)."""
    there = ", ".join(sorted(names)[:20]) or "none yet"
    several = (
        "; to name several, give --corpus once for each (a corpus name holds no comma)"
        if any("," in m for m in missing)
        else ""
    )
    # a misspelt name told the corpora there are, not which was meant, where --fields and
    # --thresholds say it (a new user's trial: `shardl` for `shard1`)
    meant = _closest(missing[0], names) if len(missing) == 1 and not several else []
    guess = f"; did you mean {' or '.join(map(repr, meant))}?" if meant else ""
    return NotFoundError(f"no corpus named {', '.join(map(repr, missing))} (the corpora: {there}){several}{guess}")


def _closest(name: str, names: Sequence[str]) -> list[str]:
    """The names most like `name` (difflib's ratio, at least 0.6), all of them on a tie: `shardl`
    is as like `shard1` as `shard2`."""
    scored = [(difflib.SequenceMatcher(None, name.lower(), n.lower()).ratio(), n) for n in names]  # `WEB`: web
    best = max((r for r, _n in scored), default=0.0)
    return sorted(n for r, n in scored if r == best) if best >= 0.6 else []


class CorpusService:
    """Reads corpora and their health (the health view is assembled here and nowhere else);
    deletes and renames them."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def list_corpora(self) -> list[dict[str, Any]]:
        """Every corpus with its size (files, documents, tokens, bytes), signature settings, and
        `reproducible`: whether this release can scan it (False: an earlier release's tokeniser
        made its index, which must be made again)."""
        with self.engine.connect() as conn:
            rows = repo.list_corpora(conn)
        return [r | {"reproducible": reproducible(r)} for r in rows]

    def names(self, with_documents: bool = False) -> list[str]:
        """Every corpus's name; with_documents: only those a benchmark can be checked against
        (holding documents, and indexed by this release's tokeniser)."""
        return [c["name"] for c in self.list_corpora() if not with_documents or (c["documents"] and c["reproducible"])]

    def health(self, name: str) -> dict[str, Any]:
        """One corpus's health: documents, tokens, skipped records, failed files, duplicates,
        lengths and posting segments, with its settings."""
        with self.engine.connect() as conn:
            row = repo.get_corpus(conn, name)
            if row is None:
                raise no_corpus([name], [r["name"] for r in repo.list_corpora(conn)])
            return _health_view(conn, row)

    def delete(self, name: str) -> dict[str, Any]:
        """Remove a corpus and everything indexed into it; refused while a report job uses it
        or an indexing run writes into it. Its totals (files, documents, ...) as they were when
        it went: read under the lock, since a run may have committed while the delete waited for
        it (the CLI said "0 documents" of a corpus of 18,000: a README audit). A run already writing
        refuses it at once (_unused, before the lock): on SQLite a delete asked mid-run waited for the
        run's commit, found it ended, and deleted what it had just indexed (a trial)."""
        with self.engine.connect() as conn:  # a run writing now: refused, not waited for
            self._unused(conn, name, "delete", lock=False)
        with db.writing(self.engine) as conn:  # SQLite: the write lock before the checks
            row = self._unused(conn, name, "delete")
            [gone] = repo.list_corpora(conn, int(row["id"]))
            repo.delete_corpus(conn, int(row["id"]))
        return gone

    def rename(self, name: str, new_name: str) -> None:
        """Give a corpus another name, in the reports made with it too; refused while a report job
        or an indexing run uses it, or if the name is taken."""
        check_corpus_name(new_name)
        with self.engine.connect() as conn:  # as delete
            self._unused(conn, name, "rename", lock=False)
        with db.writing(self.engine) as conn:
            row = self._unused(conn, name, "rename")
            if repo.get_corpus(conn, new_name) is not None:
                raise SettingsConflict(f"there is already a corpus named {new_name!r}")
            repo.rename_corpus(conn, int(row["id"]), new_name)
            reports_repo.rename_corpus(conn, name, new_name, row["created_at"])  # reports name it as it is now

    @staticmethod
    def _unused(conn: Connection, name: str, verb: str, lock: bool = True) -> dict[str, Any]:
        row = repo.get_corpus(conn, name, lock=lock)  # locked: no indexing run may start until we commit
        if row is None:
            raise no_corpus([name], [r["name"] for r in repo.list_corpora(conn)])
        using = reports_repo.reports_using(conn, name)
        if using:  # named, with the way on: a report whose server was killed waits for the next one
            raise StateError(
                f"cannot {verb} corpus {name!r} while a report job uses it (report {', '.join(using[:5])}); try "
                "again when it is done, or delete the report (`contam reports delete ID`, DELETE "
                "/api/v1/reports/ID, or its page on the dashboard); a report whose server stopped is taken up by "
                "the next `contam serve`"
            )
        runs = repo.live_runs(conn, int(row["id"]))
        if runs:
            raise StateError(
                f"cannot {verb} corpus {name!r} while it is being indexed ({', '.join(runs)}); try again when "
                f"the run is done (a killed run lets go of it {RUN_LEASE_SECONDS:.0f} s after it stopped)"
            )
        return row

    def overview(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every corpus's listing row beside its health view."""
        with self.engine.connect() as conn:
            return [(row, _health_view(conn, row)) for row in repo.list_corpora(conn)]


def _health_view(conn: Connection, row: dict[str, Any]) -> dict[str, Any]:
    health = repo.corpus_health(conn, int(row["id"]))
    health["skipped"], health["repaired"] = split_counts(health["skipped"])  # left out, and kept repaired
    said = {"name": row["name"], "fingerprint": row["fingerprint"], "config": row["config"]}
    return said | {"reproducible": reproducible(row), "indexing": repo.live_runs(conn, int(row["id"]))} | health


def _config_text(cfg: dict[str, Any], base: dict[str, Any]) -> str:
    """The settings of `cfg` that differ from `base`, as k=v (or "the defaults")."""
    diffs = SignatureConfig.from_dict(base).differences(SignatureConfig.from_dict(cfg))
    return ", ".join(f"{k}={b!r}" for k, (_a, b) in diffs.items()) or "the default settings"


def _one_setting(rows: list[dict[str, Any]], named: bool) -> list[dict[str, Any]]:
    """The corpora sharing one set of signature settings: the only set there is, else (unless
    the corpora were named) the default one; else a conflict that names every corpus and how
    its settings differ from the defaults."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["fingerprint"], []).append(r)
    if len(groups) == 1:
        return rows
    default = SignatureConfig()
    if default.fingerprint() in groups and not named:
        return groups[default.fingerprint()]
    base = default.to_dict()
    listing = "; ".join(f"{r['name']} ({_config_text(r['config'], base)})" for r in rows)
    raise SettingsConflict(
        f"the corpora were indexed with different signature settings: {listing}; "
        "choose corpora with the same settings to check together (`contam scan --corpus NAME`, the API's "
        "`corpora`, the upload form's corpus boxes)",
        {r["name"]: r["fingerprint"] for r in rows},
    )


def select_corpora(engine: Engine, names: list[str] | None = None) -> list[str]:
    """The corpora a scan uses: those named (each must exist and hold documents), or by default
    every corpus holding documents whose settings match (the only settings there are, else the
    default ones). Refuses when nothing would be checked against: a scan of an empty corpus
    would call every item clean."""
    return select_corpora_listing(engine, names)[0]


def select_corpora_listing(engine: Engine, names: list[str] | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """select_corpora's names and the listing (repo.list_corpora) they were chosen from: a
    Scanner built right after takes it (`listing`) instead of reading it again."""
    with engine.connect() as conn:
        rows = repo.list_corpora(conn)
    if names:
        missing = sorted(set(names) - {r["name"] for r in rows})
        if missing:
            raise no_corpus(missing, [r["name"] for r in rows])
        chosen = [r for r in rows if r["name"] in set(names)]
        empty = [r for r in chosen if r["documents"] == 0]
    else:
        chosen = [r for r in rows if r["documents"] > 0]
        empty = [r for r in rows if r["documents"] == 0] if not chosen else []
    if not rows:
        raise NotFoundError("no corpus is indexed yet: run `contam index` first")
    if empty:
        # "shows why its files failed" of a corpus none of whose files failed (an interrupted first
        # run) sent the user looking for failures there were none of (a new user's trial)
        why = " (`contam corpora NAME` shows why its files failed)" if any(r["failed_files"] for r in empty) else ""
        raise StateError(
            "nothing to check against: "
            + "; ".join(f"corpus {r['name']!r} holds 0 documents ({_files(r['failed_files'])} failed)" for r in empty)
            + f". Index documents into it first{why}"
        )
    return [r["name"] for r in _one_setting(chosen, bool(names))], rows


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"
