"""One exception tree for the whole project. No HTTP or CLI knowledge here: the transports map it."""

from __future__ import annotations

import errno
import tempfile


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line (drivers and parsers add SQL, carets, context)."""
    return (str(exc).strip().splitlines() or [""])[0]


def disk_full(exc: BaseException) -> str | None:
    """What to say of a disk that filled up under a write (ENOSPC), else None: a scan writes its
    first pass's tables and an upload its decompressed copy to the temporary folder, and said
    only "OSError: 558357 requested and 44016 written" (a new user's trial)."""
    if isinstance(exc, OSError) and (exc.errno == errno.ENOSPC or "requested and" in str(exc)):
        return (
            f"no space left on the disk being written ({first_line(exc)}): free space, or set TMPDIR to a "
            f"folder on a disk with room (temporary files go to {tempfile.gettempdir()})"
        )
    return None


def cut_short(exc: BaseException) -> str:
    """What a reader adds to a compressed file's error where the stream ended early: the usual
    cause and what to do (a new user's trial: "EOFError: Compressed file ended before the
    end-of-stream marker was reached", said as is, named neither)."""
    if isinstance(exc, EOFError):
        return ": the file is cut short, as an interrupted download or copy leaves it; fetch or copy it again"
    return ""


class ContamError(Exception):
    """Base class: a problem the user can act on, with a message that names it."""

    def __init__(self, message: str, detail: object | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail

    def __reduce__(self) -> tuple[type[ContamError], tuple[str, object | None]]:
        """Pickled whole (a reader's error raised in a scan's pass-1 process reaches the scan)."""
        return type(self), (self.message, self.detail)


class ConfigError(ContamError):
    """Settings that cannot work (bad numbers, unknown options)."""


class InputError(ContamError):
    """A file or request the user gave us is unreadable or malformed."""


class NotFoundError(ContamError):
    """A named corpus, report or item does not exist."""


class SettingsConflict(ContamError):
    """What was asked for conflicts with settings already stored (a corpus, a report)."""


class FingerprintMismatch(SettingsConflict):
    """An index built with one set of signature settings was asked to work with another."""


class IncompatibleIndex(FingerprintMismatch):
    """The index was built by code that computes otherwise than this code (another normalizer,
    or a library that now hashes differently): the environment's doing, not the command's."""


class CorruptFileError(InputError):
    """A corpus file cannot be read to its end (truncated or corrupt compression, bad Parquet)."""


class LimitError(InputError):
    """An upload or request larger than a configured limit; `detail` names the setting."""


class StateError(ContamError):
    """The stored state does not allow what was asked: a corpus without documents, a corpus a
    job is using."""


class NotStarted(ContamError):
    """A run that stopped before it wrote anything (a cluster it could not reach): nothing is
    kept, and running it again as it is fails the same way."""


class RunRefused(StateError, NotStarted):
    """An indexing run the stored state refuses before it writes anything (a report job reads its
    corpus): `contam index` said the files reported done were kept, of a run that wrote none."""


class UnavailableError(ContamError):
    """The database cannot be reached (wrong host, port, name or credentials, or it is down, or
    refuses work right now); retrying later may succeed."""
