"""The errors that cross layers, in one place: what went wrong with the config, the warehouse, a source file,
an S3 request or a storage pattern. Each message names the file, line or key and the problem."""

from __future__ import annotations


class ConfigError(Exception):
    """A configuration problem; the message names the file, the line when known, and the key."""


class WarehouseError(Exception):
    """The warehouse cannot be opened or upgraded; the message says why and what to do."""


class RejectedFile(Exception):
    """The file cannot be loaded. The message names the file, the line/column when known, and the problem."""

    def __init__(self, file: str, problem: str, line: int | None = None, column: str | None = None) -> None:
        self.file, self.problem, self.line, self.column = file, problem, line, column
        where = file
        if line is not None:
            where += f":{line}"
        if column:
            where += f": column {column!r}"
        super().__init__(f"{where}: {problem}")


class FileFailed(Exception):
    """Raised by a batch load when it knows which file of the batch cannot be loaded."""

    def __init__(self, index: int, cause: BaseException | None = None) -> None:
        self.index, self.cause = index, cause
        super().__init__(f"file {index} of the batch failed: {cause}")


class S3Error(Exception):
    """An S3 request failed; the message names the bucket/prefix or object and the reason."""


class PatternError(ValueError):
    """A checkpoint pattern or dataset root that cannot be used; the message says why."""
