"""A source read whole (an API listing, a file-system walk): each run replaces the source's rows."""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipelines.config import Config, Source
from pipelines.errors import RejectedFile, SourceFailed
from pipelines.failpoints import failpoint
from pipelines.ingest import ledger
from pipelines.ingest.files import SourceFile
from pipelines.ingest.ledger import FileOutcome, file_id
from pipelines.ingest.readers.base import LoadContext, SourceReader, duckdb_problem
from pipelines.ingest.sniff import refusal, shorten
from pipelines.warehouse import stored_in, transaction, utcnow


def ingest_source(
    con: duckdb.DuckDBPyConnection, config: Config, source: Source, reader: SourceReader, target: str
) -> FileOutcome:
    """Replace the source's previous rows with what `load_source` reads, in one transaction (a reader with
    `replaces_all` False replaces only what it read); SourceFailed (the source cannot be read at all) leaves
    everything as it was and reaches the caller. The ledger
    holds one row for the source (uri = its location). A source whose reader found nothing new (every
    inventory report already loaded) is `unchanged`: its ledger row keeps its rows and load time."""
    location = config.source_location(source)
    fid = file_id(source.name, ledger.source_key(config, source))
    now = utcnow()
    pseudo = SourceFile(uri=location, local_path=Path(location), relative="", size=0, modified_at=now)
    ctx = LoadContext(source=source, config=config, file_id=fid, loaded_at=now)
    try:
        with transaction(con):
            if reader.replaces_all:
                con.execute(f"delete from {stored_in(target)} where x_file_id = $id", {"id": fid})  # noqa: S608 - our constant
            result = reader.load_source(con, source, ctx)
            if not result.changed and ledger.held(con, fid):
                con.execute(
                    "update ingest_files set checked_at = $now, error = null where file_id = $id",
                    {"now": now, "id": fid},
                )
                return FileOutcome(source.name, location, "unchanged", target=target)
            ledger.record(con, fid, source, pseudo, None, "loaded", None, result, now)
            failpoint("ingest.snapshot.before_commit")
        return FileOutcome(source.name, location, "loaded", rows=result.rows, target=target)
    except RejectedFile as exc:
        error = str(exc)
    except OSError as exc:  # a file that vanished or cannot be read mid-run: the run is refused, not crashed
        error = str(RejectedFile(str(exc.filename or location), f"cannot read: {exc.strerror or exc}"))
    except duckdb.Error as exc:
        error = f"{location}: cannot load: {duckdb_problem(exc)}"
    except SourceFailed:  # the source cannot be read at all: the run reports it and keeps its rows
        raise
    except Exception as exc:  # any other reader error: this source's refusal, not the run's end
        error = str(refusal(location, exc, source.kind))
    error = shorten(error)
    with transaction(con):
        ledger.record(con, fid, source, pseudo, None, "rejected", error, None, now)
    return FileOutcome(source.name, location, "rejected", error=error, target=target)
