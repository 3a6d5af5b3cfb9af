"""Errors a reader raises for a file it cannot load."""

from __future__ import annotations


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
