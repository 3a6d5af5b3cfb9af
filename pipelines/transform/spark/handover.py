"""Rows the warehouse hands to Spark: what Spark has no reader for (other telemetry kinds' samples, the job
boundaries, bills of the formats Spark does not read where they lie).

DuckDB writes them as Parquet into a folder of their own under the marts folder, which Spark reads and
the build removes when it is done (a local folder; under an s3:// marts folder a lifecycle rule on
`_handover/` expires it, as it does old builds). Through the marts folder, not through the process: Spark
and the warehouse both reach it already (Spark writes the marts there, the warehouse reads them), a cluster reads
the rows in parallel, and neither the wastewatch process nor the Spark driver holds them at once (a Spark
Connect server keeps a client's local rows in its driver's memory: 1.2 M bill lines through Arrow ran a
default 1 GB driver out of heap).
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import duckdb

from pipelines.config import Config
from pipelines.transform.spark.builds import Built, new_folder, remove_build, spark_path
from pipelines.warehouse import sql_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

HANDOVER = "_handover"
# a hand-over folder older than this was left by a build that was killed: removed by the next build
STALE = timedelta(days=1)


class Handover:
    """One build's hand-over folder: `rows()` writes a query's rows there and returns them as a Spark frame;
    leaving the `with` block removes the folder (after the Spark jobs that read it)."""

    def __init__(self, spark: SparkSession, con: duckdb.DuckDBPyConnection, config: Config) -> None:
        self.spark, self.con = spark, con
        self.folder = new_folder(config, HANDOVER)
        self.written = 0
        if not self.folder.startswith("s3://"):  # an s3:// marts folder is left to its lifecycle rule
            sweep(Path(self.folder).parent, datetime.now(UTC) - STALE)

    def rows(self, sql: str, params: dict[str, Any], empty_ok: bool = False) -> DataFrame | None:
        """The warehouse's rows of sql/spark/warehouse/<sql>.sql as a Spark frame, timestamps as the
        session's UTC wall time; None when there are none, unless `empty_ok`."""
        from pyspark.sql import functions as F

        self.written += 1
        path = f"{self.folder}/{self.written:03d}-{sql}.parquet"
        if not path.startswith("s3://"):
            Path(self.folder).mkdir(parents=True, exist_ok=True)
        # the file's name is our own folder and constant; the query's values are bound
        literal = "'" + path.replace("'", "''") + "'"
        written = self.con.execute(
            f"copy (\n{sql_text('spark/warehouse', sql)}\n) to {literal} (format parquet)", params
        ).fetchall()[0][0]
        if not written and not empty_ok:
            return None
        # dates and times as written (a job's open end is 0001-01-01): a Spark 3.5 server would otherwise
        # refuse to guess between its calendars for a file without Spark's own metadata
        df = (
            self.spark.read.option("datetimeRebaseMode", "CORRECTED")
            .option("int96RebaseMode", "CORRECTED")
            .parquet(spark_path(path))
        )
        stamps = {f.name for f in df.schema.fields if f.dataType.typeName().startswith("timestamp")}
        return df.select(
            *[(F.col(c).cast("timestamp_ntz") if c in stamps else F.col(c)).alias(c) for c in df.columns]
        )

    def __enter__(self) -> Handover:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        remove_build(Built(self.folder, 0))


def sweep(parent: Path, before: datetime) -> None:
    """Remove the hand-over folders under `parent` named (by `new_folder`) for a time before `before`: what
    killed builds left."""
    if not parent.is_dir():
        return
    for folder in parent.iterdir():
        try:
            made = datetime.strptime(folder.name.split("-", 1)[0], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        except ValueError:
            continue  # not a build's folder: left alone
        if folder.is_dir() and made < before:
            shutil.rmtree(folder, ignore_errors=True)
