"""The errors that cross layers, in one place: what went wrong with the config, the warehouse, a source file,
an S3 request or a storage pattern. Each message names the file, line or key and the problem.

Every message is redacted when the error is made (pipelines/redact.py): an error's text can reach stderr,
a log, the ledger's `error` column or a report, and never carries a credential to any of them.
"""

from __future__ import annotations

from typing import Any

from pipelines.redact import redact


class _Redacted(Exception):
    """An exception whose message passes through `redact()`."""

    def __init__(self, message: object = "", *args: object) -> None:
        super().__init__(redact(message), *args)


class ConfigError(_Redacted):
    """A configuration problem; the message names the file, the line when known, and the key."""


class WarehouseError(_Redacted):
    """The warehouse cannot be opened or upgraded; the message says why and what to do."""


class WarehouseBusy(WarehouseError):
    """Another process holds the warehouse's run-level lock; `holder` is what its lock file says (pid, host,
    started_at, command), when readable."""

    def __init__(self, message: str, holder: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class RejectedFile(_Redacted):
    """The file cannot be loaded. The message names the file, the line/column when known, and the problem."""

    def __init__(self, file: str, problem: str, line: int | None = None, column: str | None = None) -> None:
        self.file, self.problem, self.line, self.column = file, redact(problem), line, column
        where = file
        if line is not None:
            where += f":{line}"
        if column:
            where += f": column {column!r}"
        super().__init__(f"{where}: {problem}")


class SourceFailed(_Redacted):
    """A source that cannot be read at all (an API that cannot be reached or refuses the credentials): the run
    reports it as a failure of the source and keeps the source's rows."""


class FileFailed(Exception):
    """Raised by a batch load when it knows which file of the batch cannot be loaded."""

    def __init__(self, index: int, cause: BaseException | None = None) -> None:
        self.index, self.cause = index, cause
        super().__init__(f"file {index} of the batch failed: {cause}")


class S3Error(_Redacted):
    """An S3 request failed; the message names the bucket/prefix or object and the reason."""


class PatternError(ValueError):
    """A checkpoint pattern or dataset root that cannot be used; the message says why."""
