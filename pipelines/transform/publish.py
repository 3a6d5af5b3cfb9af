"""Publishing the warehouse for ad-hoc readers: the read-only published copy `sql` opens, kept beside the
warehouse and updated by what changed (two private copies used in turn) or copied whole when small.

The transform's records of what it built (sql/intermediate/incremental/) and the ingest's ledger say what
changed; docs/reliability.md, "Nights independent of history", states the promises and their tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import Config
from pipelines.errors import WarehouseError
from pipelines.failpoints import failpoint
from pipelines.warehouse import (
    FILE_LOCK_WAIT_S,
    SCHEMA_VERSION,
    _open,
    _quote_ident,
    _quote_text,
    _running,
    glob_escape,
    lock_down,
    rows,
    scalar,
    sql_text,
)


def publish(config: Config) -> Path:
    """Update the read-only published twin for ad-hoc users by what changed, and rename it into place.

    The caller must not hold a connection to the warehouse. Two private copies beside the target are used
    in turn: the one the target is not (readers hold the target, and DuckDB refuses to write a file a reader
    holds) is brought up to date from the warehouse, table by table and, for landed tables, file by file
    (`_update_copy`), then hard-linked to a temp name renamed over the target, so a reader never sees a
    half-written file and keeps reading the copy it opened. A copy that is missing, still held by a reader
    of an earlier publish, left unrecorded by a killed publish, or from another schema is made again by a
    whole-file copy. Copies that killed publishes left behind are deleted first (their names carry the
    writer's pid).
    """
    src = config.warehouse_path
    dst = config.published_path
    if not src.exists():
        raise WarehouseError(f"{src}: nothing to publish yet")
    con = _open(src, False, FILE_LOCK_WAIT_S)
    try:
        con.execute("checkpoint")
    finally:
        con.close()
    _remove_stale_copies(dst)
    copy = _private_copy(dst)
    small = src.stat().st_size <= config.duckdb.publish_update_above_mb * 2**20
    record = None if small else _copy_record(copy)
    if record is None or not _update_copy(copy, src, record, config.spark_marts_dir):
        _whole_copy(src, copy, config.spark_marts_dir, recorded=not small)
    shutil.copymode(src, copy)  # readers need the warehouse's permissions
    failpoint("publish.copied")
    fd, tmp = tempfile.mkstemp(prefix=f"{dst.name}.{os.getpid()}.", suffix=PUBLISH_SUFFIX, dir=dst.parent)
    os.close(fd)
    try:
        os.unlink(tmp)
        os.link(copy, tmp)
        os.replace(tmp, dst)
        failpoint("publish.replaced")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dst


# the two private copies the published twin is a hard link of, in turn: `<published name>.<letter>`
PRIVATE_COPIES = ("a", "b")
# beside each private copy: what it holds (`<copy>.json`), written once it is complete
RECORD_SUFFIX = ".json"


def private_copies(dst: Path) -> list[Path]:
    return [dst.with_name(f"{dst.name}.{c}") for c in PRIVATE_COPIES]


def _private_copy(dst: Path) -> Path:
    """The private copy to update: the one the published twin is not (by inode)."""
    published = dst.stat().st_ino if dst.exists() else None
    copies = private_copies(dst)
    free = [c for c in copies if not (c.exists() and c.stat().st_ino == published)]
    return next((c for c in free if c.exists()), free[0])


def _copy_record(copy: Path) -> dict[str, Any] | None:
    """What a private copy holds (its record), None when there is no complete copy to update."""
    record = copy.with_name(copy.name + RECORD_SUFFIX)
    if not copy.exists() or Path(f"{copy}.wal").exists() or not record.exists():
        return None
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if data.get("schema") == SCHEMA_VERSION else None


def _write_record(copy: Path, parts: dict[str, dict[str, int] | None]) -> None:
    record = copy.with_name(copy.name + RECORD_SUFFIX)
    tmp = record.with_name(record.name + ".tmp")
    tmp.write_text(json.dumps({"schema": SCHEMA_VERSION, "tables": parts}, sort_keys=True), encoding="utf-8")
    os.replace(tmp, record)


def _forget_record(copy: Path) -> None:
    """Before a private copy is written: a publish killed from here on leaves it unrecorded (made again)."""
    copy.with_name(copy.name + RECORD_SUFFIX).unlink(missing_ok=True)


def _whole_copy(src: Path, copy: Path, marts_dir: str | None, recorded: bool = True) -> None:
    """Make the private copy again from the whole warehouse file, its Spark views turned into tables; with
    `recorded`, what it holds is recorded for the next publish to update it by what changed."""
    _forget_record(copy)
    copy.unlink(missing_ok=True)  # a reader of an earlier publish may still hold it: it keeps its file
    Path(f"{copy}.wal").unlink(missing_ok=True)
    # named as the twin's temp copies, so that a killed publish's is deleted by the next (`_remove_stale_copies`)
    fd, tmp = tempfile.mkstemp(
        prefix=f"{copy.name[:-2]}.{os.getpid()}.", suffix=PUBLISH_SUFFIX, dir=copy.parent
    )
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        _materialise_file_views(Path(tmp), marts_dir)
        parts = None
        if recorded:
            con = _open(src, False, FILE_LOCK_WAIT_S)
            try:
                parts = _table_parts(con)
            finally:
                con.close()
        os.replace(tmp, copy)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if parts is not None:
        _write_record(copy, parts)


# a table of more rows than this with no record of its changes is copied whole at every publish rather
# than fingerprinted from its values
CONTENT_TOKEN_ROWS = 200_000
# the private copy as `_update_copy` attaches it to the warehouse's connection
COPY_ALIAS = "published_copy"


def _table_parts(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, int] | None]:
    """The parts of each table of the warehouse (`con`'s database) and a token of each part's rows that
    changes whenever they are written again; None for a table with no such record (copied whole each time).

    The tokens come from what wrote the rows: the transform's records of what it built
    (`sql/publish/build_parts.sql`: each day of a table kept by day, else the whole table as one part), the
    ingestion ledger for each file of a landed table, and, for any other small table, the hash of its
    values. Each table's columns are a part too ('#shape'), so a table whose columns changed is made again.
    """
    from pipelines.marts.registry import DAY_MARTS, REGISTRY, ROLLUPS  # what the transform writes

    relations = rows(con, sql_text("publish", "relations"), {"db": scalar(con, "select current_database()")})
    tables = {r["name"]: r for r in relations if not r["is_view"]}
    built: dict[str, dict[str, int]] = {}
    if all(t in tables for t in _BUILD_RECORDS):
        for r in rows(con, sql_text("publish", "build_parts")):
            built.setdefault(r["object"], {})[r["part"]] = int(r["token"])
    by_day = set(ROLLUPS + DAY_MARTS)  # their records' parts are the days of their `hour` column
    transformed = {m.name for m in REGISTRY}
    out: dict[str, dict[str, int] | None] = {}
    for name, t in tables.items():
        parts: dict[str, int] | None
        # the table's own records and those kept beside them under `<name>/...` (cost_hourly/modelled)
        others = sorted(
            (f"{obj} {k}", v)
            for obj, ps in built.items()
            if obj.startswith(name + "/")
            for k, v in ps.items()
        )
        mine = built.get(name, {})
        if name in by_day and mine:
            parts = {f"day {k}": v for k, v in mine.items() if k not in ("files", "inputs")}
            parts["*"] = _text_token(json.dumps([mine.get("files"), mine.get("inputs"), others]))
        elif mine or others:
            parts = {"*": _text_token(json.dumps([sorted(mine.items()), others]))}
        elif name not in transformed and "x_file_id " in f"{t['shape']}, " and "ingest_files" in tables:
            found = rows(con, sql_text("publish", "file_parts"), {"table": name})
            parts = {f"file {r['part']}": int(r["token"]) for r in found}
        elif (t["estimated_rows"] or 0) <= CONTENT_TOKEN_ROWS and name not in _BUILD_RECORDS:
            found = rows(con, sql_text("publish", "content_token"), {"table": name})
            parts = {"*": int(found[0]["token"])}
        else:
            parts = None
        if parts is not None:
            parts["#shape"] = _text_token(t["shape"] or "")
        out[name] = parts
    return out


# the transform's records of what it built (sql/intermediate/incremental/)
_BUILD_RECORDS = ("int_incremental_days", "int_incremental_files", "int_mart_inputs")


def _text_token(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def _update_copy(copy: Path, src: Path, record: dict[str, Any], marts_dir: str | None) -> bool:
    """Bring the private copy up to date from the warehouse by the parts whose tokens differ from its record:
    a day or file of rows deleted and inserted again, a table replaced or dropped, comments set. False (and
    the copy left for a whole-file copy) when it cannot be: a reader of an earlier publish holds it, or the
    warehouse's views differ from the copy's (a new wastewatch's SQL).

    The copy is attached to a connection of the warehouse (the process may hold the warehouse already, and
    DuckDB opens a file once per process)."""
    con = _open(src, False, FILE_LOCK_WAIT_S)
    try:
        try:
            con.execute(f"attach {_quote_text(str(copy))} as {COPY_ALIAS}")
        except duckdb.Error:
            return False  # held by a reader of an earlier publish
        warehouse = scalar(con, "select current_database()")
        theirs = {r["name"]: r for r in rows(con, sql_text("publish", "relations"), {"db": warehouse})}
        mine = {r["name"]: r for r in rows(con, sql_text("publish", "relations"), {"db": COPY_ALIAS})}
        file_views = [n for n, r in theirs.items() if r["is_view"] and _reads_files(r["sql"])]
        views = {n: r for n, r in theirs.items() if r["is_view"] and n not in file_views}
        if views != {n: r for n, r in mine.items() if r["is_view"] and n not in file_views}:
            con.execute(f"detach {COPY_ALIAS}")
            return False
        _forget_record(copy)
        parts = _table_parts(con)
        old: dict[str, dict[str, int] | None] = record.get("tables", {})
        con.execute("begin transaction")
        for name in sorted(set(mine) - set(theirs)):
            kind = "view" if mine[name]["is_view"] else "table"
            con.execute(f"drop {kind} {COPY_ALIAS}.{_quote_ident(name)}")
        for name, now in parts.items():
            _update_table(con, name, now, old.get(name), mine.get(name))
        for name in file_views:  # the Spark marts: their view again, made a table below as a whole copy's are
            if name in mine:
                kind = "view" if mine[name]["is_view"] else "table"
                con.execute(f"drop {kind} {COPY_ALIAS}.{_quote_ident(name)}")
            con.execute(f"use {COPY_ALIAS}")
            try:
                con.execute(theirs[name]["sql"])
            finally:
                con.execute(f"use {_quote_ident(warehouse)}")
        mine = {r["name"]: r for r in rows(con, sql_text("publish", "relations"), {"db": COPY_ALIAS})}
        for name, r in theirs.items():
            if name in mine and name not in file_views and not r["is_view"]:
                _copy_comments(con, name, r, mine[name])
        con.execute("commit")
        failpoint("publish.updated")
        con.execute(f"checkpoint {COPY_ALIAS}")
        con.execute(f"detach {COPY_ALIAS}")
    finally:
        con.close()
    _materialise_file_views(copy, marts_dir)
    _write_record(copy, parts)
    return True


def _reads_files(sql: str | None) -> bool:
    return bool(sql and re.search(r"read_(parquet|csv|json)", sql))


def _update_table(
    con: duckdb.DuckDBPyConnection,
    name: str,
    now: dict[str, int] | None,
    before: dict[str, int] | None,
    mine: dict[str, Any] | None,
) -> None:
    """One table of the copy brought up to date: the parts whose tokens changed deleted and inserted again
    (days by the table's `hour`, files by its `x_file_id`), or the whole table."""
    ident, target = _quote_ident(name), f"{COPY_ALIAS}.{_quote_ident(name)}"
    whole = (
        now is None
        or before is None
        or mine is None
        or mine["is_view"]
        or now.get("#shape") != before.get("#shape")
    )
    if whole:
        if mine is not None and mine["is_view"]:
            con.execute(f"drop view {target}")
        con.execute(f"create or replace table {target} as from {ident}")  # noqa: S608 - quoted catalogue names
        return
    assert now is not None and before is not None
    changed = sorted(k for k in set(now) | set(before) if k != "#shape" and now.get(k) != before.get(k))
    if not changed:
        return
    days = [k[4:] for k in changed if k.startswith("day ")]
    files = [k[5:] for k in changed if k.startswith("file ")]
    if len(days) + len(files) != len(changed):  # the whole table is one part
        con.execute(f"delete from {target}")  # noqa: S608
        con.execute(f"insert into {target} by name from {ident}")  # noqa: S608
        return
    column, keys = ("cast(hour::date as varchar)", days) if days else ("cast(x_file_id as varchar)", files)
    con.execute(f"delete from {target} where list_contains($k, {column})", {"k": keys})  # noqa: S608
    con.execute(f"insert into {target} by name from {ident} where list_contains($k, {column})", {"k": keys})  # noqa: S608


def _copy_comments(
    con: duckdb.DuckDBPyConnection, name: str, theirs: dict[str, Any], mine: dict[str, Any]
) -> None:
    """The warehouse's comments on a table and its columns, where the copy's differ."""
    ident = f"{COPY_ALIAS}.{_quote_ident(name)}"
    if theirs["comment"] != mine["comment"]:
        con.execute(f"comment on table {ident} is {_quote_text(theirs['comment'])}")
    if theirs["column_comments"] != mine["column_comments"]:
        have = {c["column"]: c["comment"] for c in mine["column_comments"] or []}
        want = {c["column"]: c["comment"] for c in theirs["column_comments"] or []}
        for column in set(have) | set(want):
            if have.get(column) != want.get(column):
                con.execute(
                    f"comment on column {ident}.{_quote_ident(column)} is {_quote_text(want.get(column))}"
                )


def _materialise_file_views(copy: Path, marts_dir: str | None) -> list[str]:
    """Turn the copy's views over files (the Spark engine's Parquet marts) into tables of the same name, with
    their comments: `wastewatch sql` opens the copy without file access, and no folder of marts is ever
    whitelisted for it (DuckDB's allowed_directories would reopen COPY ... TO there). This connection may
    read the marts folder only: a view over any other file (one planted in the warehouse to carry a secret
    into the readers' copy) cannot be read here and stays a view, which `sql` refuses to read."""
    con = duckdb.connect(str(copy))
    done = []
    try:
        if marts_dir and not marts_dir.startswith("s3://"):
            con.execute("set allowed_directories = $d", {"d": [marts_dir.rstrip("/") + "/"]})
        lock_down(con)
        views = con.execute(
            "select view_name, comment from duckdb_views() "
            "where not internal and schema_name = 'main' and regexp_matches(sql, 'read_(parquet|csv|json)')"
        ).fetchall()
        for name, comment in views:
            notes = con.execute(
                "select column_name, comment from duckdb_columns() where table_name = $n and comment is not null",
                {"n": name},
            ).fetchall()
            ident, staged = _quote_ident(name), _quote_ident(name + "__published")
            try:
                con.execute("begin transaction")
                con.execute(f"create table {staged} as select * from {ident}")  # noqa: S608 - quoted catalogue names
                con.execute(f"drop view {ident}")
                con.execute(f"alter table {staged} rename to {ident}")
                if comment:
                    con.execute(f"comment on table {ident} is {_quote_text(comment)}")
                for column, note in notes:
                    con.execute(f"comment on column {ident}.{_quote_ident(column)} is {_quote_text(note)}")
                con.execute("commit")
            except duckdb.Error:
                con.execute("rollback")
                continue
            done.append(name)
        if done:
            con.execute("checkpoint")
    finally:
        con.close()
    return done


# a publish's temp copy: `<published name>.<pid>.<random>.publishing`, renamed over the target when complete
PUBLISH_SUFFIX = ".publishing"


def _remove_stale_copies(dst: Path) -> list[Path]:
    """Delete the temp copies that publishes killed mid-copy left beside `dst` (their process is gone);
    a copy whose process still runs is left alone. Returns what was deleted."""
    removed = []
    for tmp in dst.parent.glob(f"{glob_escape(dst.name)}.*{PUBLISH_SUFFIX}"):
        pid = tmp.name[len(dst.name) + 1 :].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and _running(int(pid)):
            continue
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    # earlier versions named their copies `<name>.<random>.tmp`, without a pid: one writer at a time
    # publishes, so such a copy is a leftover
    for tmp in dst.parent.glob(f"{glob_escape(dst.name)}.*.tmp"):
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    return removed
