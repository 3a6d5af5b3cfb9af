"""The folders Spark writes a mart's builds to, and how the warehouse's view is pointed at one.

Each build goes to a folder of its own (`<marts_dir>/<mart>/<UTC time>-<id>/`); the warehouse's view is
switched to it in the mart's transaction, then older builds are removed (the last two are kept, so a
reader of the previous view is not cut off).
"""

from __future__ import annotations

import re
import shutil
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipelines.config import Config
from pipelines.warehouse import one, sql_text

KEEP_BUILDS = 2


@dataclass
class Built:
    """One build of a mart's Spark part: the folder its Parquet went to and its row count."""

    folder: str
    rows: int


def spark_path(uri: str) -> str:
    """A ledger URI as Spark's Hadoop file systems name it (s3:// is read by hadoop-aws as s3a://)."""
    return "s3a://" + uri[len("s3://") :] if uri.startswith("s3://") else uri


def spark_file(uri: str) -> str:
    """A file to read, as `spark_path`, with the characters Hadoop reads as a glob (`*?[]{}\\`) escaped: a
    file named `br[1]_x.csv` is that file, not a pattern."""
    return re.sub(r"([*?\[\]{}\\])", r"\\\1", spark_path(uri))


def inflated(uri: str) -> bool:
    """Whether Hadoop reads the file as it is packed: gzip only when named `.gz` in lower case (it picks the
    codec by that suffix, and would read a `.CSV.GZ`'s bytes as text, which the ingest inflates)."""
    return not (uri.lower().endswith(".gz") and not uri.endswith(".gz"))


def new_folder(config: Config, mart: str) -> str:
    """A fresh build folder for `mart` under the marts folder (named so that builds sort by time)."""
    return f"{config.spark_marts_dir}/{mart}/{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def create_view(con: duckdb.DuckDBPyConnection, sql: str, built: Built, glob: str) -> None:
    """Run a view's SQL with `$parquet` replaced by the build's files (`glob` under its folder)."""
    # DuckDB takes no parameters in a view's body: the folder (our own, from the config) as a SQL string
    literal = "'" + (built.folder + "/" + glob).replace("'", "''") + "'"
    con.execute(sql.replace("$parquet", literal))


def attach_view(con: duckdb.DuckDBPyConnection, mart: str, built: Built, glob: str) -> None:
    """Make `mart` the view of sql/spark/warehouse/<mart>.sql over the build (`<mart>_empty` without rows)."""
    con.execute(f"drop table if exists {mart}")  # our own constant; the view replaces the DuckDB table
    if built.rows == 0:
        con.execute(sql_text("spark/warehouse", f"{mart}_empty"))
        return
    create_view(con, sql_text("spark/warehouse", mart), built, glob)


def attached_folder(con: duckdb.DuckDBPyConnection, mart: str) -> tuple[str, str | None]:
    """What the warehouse's `mart` is: ("parquet", the build folder its view reads), ("empty", None) for the
    view of a build without rows, or ("table", None) when DuckDB built it."""
    row = one(con, "select sql from duckdb_views() where view_name = $n and not internal", {"n": mart})
    if not row:
        return "table", None
    # the view's body names its files as a SQL string (create_view): <folder>/<glob>
    found = re.search(r"read_parquet\('((?:[^']|'')*)'", str(row[0]))
    if not found:
        return "empty", None
    return "parquet", found.group(1).replace("''", "'").split("/*", 1)[0]


def remove_old_builds(built: Built) -> list[str]:
    """Remove the local build folders older than the last KEEP_BUILDS (s3:// ones are left to a lifecycle
    rule); the folders removed."""
    if built.folder.startswith("s3://"):
        return []
    parent = Path(built.folder).parent
    if not parent.is_dir():  # a build of nothing to read wrote no folder, and none was written before
        return []
    builds = sorted(p for p in parent.iterdir() if p.is_dir())
    old = [p for p in builds[:-KEEP_BUILDS] if p.name != Path(built.folder).name]
    for p in old:
        shutil.rmtree(p)
    return [str(p) for p in old]


def remove_build(built: Built) -> None:
    """Remove one build's folder (local only; an s3:// one is left to the prefix's lifecycle rule)."""
    if not built.folder.startswith("s3://"):
        shutil.rmtree(built.folder, ignore_errors=True)
