"""One file per transaction: a changed file replaces the rows it loaded before."""

from __future__ import annotations

import zlib

import duckdb

from pipelines.config import Config, Source
from pipelines.errors import RejectedFile
from pipelines.failpoints import failpoint
from pipelines.ingest import ledger
from pipelines.ingest.files import SourceFile
from pipelines.ingest.ledger import NEW_VERSION_REJECTED, FileOutcome, file_id
from pipelines.ingest.readers.base import FileReader, LoadContext, duckdb_problem
from pipelines.ingest.sniff import checksum_and_problem, encoding_problem, is_binary_name, refusal, shorten
from pipelines.warehouse import stored_in, transaction, utcnow


def ingest_file(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    source: Source,
    reader: FileReader,
    target: str,
    f: SourceFile,
) -> FileOutcome:
    """Load `f` unless the ledger has it unchanged; a file that cannot load is recorded rejected, and a
    rejected new version of a loaded file leaves the old rows in place (noted on the ledger row)."""
    fid = file_id(source.name, f)
    prev = ledger.previous(con, fid)
    if ledger.unchanged(con, prev, f):
        return FileOutcome(source.name, f.uri, "unchanged", target=target)
    found = None
    if is_binary_name(f.local_path.name):
        checksum = f.checksum()
    else:  # not text, or NUL bytes in it, found before any reader parses it, in the checksum's read
        checksum, found = checksum_and_problem(f.local_path)
        f.knows_checksum(checksum)
    now = utcnow()
    ctx = LoadContext(source=source, config=config, file_id=fid, loaded_at=now)
    try:
        if found is not None:
            raise RejectedFile(f.uri, found[0], line=found[1])
        with transaction(con):
            con.execute(f"delete from {stored_in(target)} where x_file_id = $id", {"id": fid})  # noqa: S608 - identifiers only, values are bound
            result = reader.load(con, f, ctx)
            # documented repairs (a cut last line skipped, ...) travel in the ledger's error column as a note
            note = "; ".join(f"repaired: {w}" for w in result.warnings) or None
            ledger.record(con, fid, source, f, checksum, "loaded", note, result, now)
        return FileOutcome(
            source.name, f.uri, "loaded", rows=result.rows, target=target, repairs=result.warnings
        )
    except RejectedFile as exc:
        error = str(exc)
    except zlib.error as exc:  # a damaged deflate block of a .gz (zlib's error is not an OSError)
        error = f"{f.uri}: cannot read: the gzip stream is damaged ({exc})"
    except (duckdb.Error, OSError, EOFError) as exc:
        error = f"{f.uri}: cannot load: {duckdb_problem(exc)}"
    except Exception as exc:  # any other reader error is this file's rejection, not the run's end
        error = str(refusal(f.uri, exc, source.kind))
    error = shorten(_encoding_named(f, error))
    with transaction(con):
        if prev and prev["status"] == "loaded":
            # the earlier version's rows are still in the table (rolled back): keep holding them
            con.execute(
                "update ingest_files set error = $e, checked_at = $now where file_id = $id",
                {"e": f"{NEW_VERSION_REJECTED}{error}", "now": now, "id": fid},
            )
        else:
            ledger.record(con, fid, source, f, checksum, "rejected", error, None, now)
        failpoint("ingest.rejection.before_commit")
    return FileOutcome(source.name, f.uri, "rejected", error=error, target=target)


def _encoding_named(f: SourceFile, error: str) -> str:
    """A rejected file that is not UTF-8 text is rejected as such, as billing files are: what the reader
    tripped over (a CSV error without a reason, JSON that does not parse, a wrong field count) follows
    from the encoding, and the user's fix is to export UTF-8."""
    try:
        found = encoding_problem(f.local_path)
    except (OSError, EOFError, zlib.error):  # a damaged .gz: the reader's own error says so
        return error
    if found is None:
        return error
    problem, line = found
    return f"{f.uri}:{line}: {problem}"
