"""One inventory's data files -> storage_objects rows, with the first bad line and column named on failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.readers.base import duckdb_problem, quote_ident
from pipelines.ingest.readers.s3_inventory.manifest import Manifest
from pipelines.net import s3 as s3mod
from pipelines.sources import inventory_format
from pipelines.sources.inventory_format import FIELDS, REQUIRED, norm
from pipelines.warehouse import one

# fields the CSV reader parses itself (quoted empty strings are NULL); a value that does not parse fails the
# load, and `_locate` then finds its line on VARCHAR columns
CSV_TYPES = {
    "size_bytes": "BIGINT",
    "last_modified": "TIMESTAMPTZ",
    "is_latest": "BOOLEAN",
    "is_delete_marker": "BOOLEAN",
    "is_multipart": "BOOLEAN",
}
# a percent sign that does not start a %XX escape: the key is not URL-encoded as S3 Inventory writes it
MISENCODED = "contains({k}, '%') and contains(regexp_replace({k}, '%[0-9A-Fa-f]{{2}}', '', 'g'), '%')"


def load(con: duckdb.DuckDBPyConnection, m: Manifest, paths: list[Path], fid: str) -> int:
    """One INSERT over every data file; strict casts make a bad value fail it, then `_locate` names it."""
    bind: dict[str, Any] = {"files": [str(p) for p in paths], "inventory_at": m.created_at, "file_id": fid}
    if m.fmt == "csv":
        columns = {f"c{i}": CSV_TYPES.get(FIELDS.get(norm(f), ""), "VARCHAR") for i, f in enumerate(m.fields)}
        bind["columns"] = columns
        relation = (
            "read_csv($files, header = false, columns = $columns, delim = ',', quote = '\"', "
            "escape = '\"', auto_detect = false, strict_mode = true)"
        )
        exprs = _csv_exprs(m.fields)
    else:
        relation = "read_parquet($files, union_by_name = true)"
        try:  # Parquet files carry their own column names; they win over the manifest's fileSchema
            described = con.execute(
                "describe select * from read_parquet($files, union_by_name = true)", {"files": bind["files"]}
            )
            m.fields = [r[0] for r in described.fetchall()]
        except duckdb.Error as exc:
            raise RejectedFile(
                m.ref.uri, f"cannot read the Parquet data files: {duckdb_problem(exc)}"
            ) from None
        lacking = [f for f in REQUIRED if norm(f) not in {norm(x) for x in m.fields}]
        if lacking:
            raise RejectedFile(data_uri(m, 0), f"Parquet inventory lacks column(s) {', '.join(lacking)}")
        exprs = _parquet_exprs(m)
    select = ",\n        ".join(f"{expr} as {col}" for col, expr in exprs.items())
    sql = f"""
    insert into storage_objects by name
    select
        $inventory_at::timestamp::date as inventory_date,
        {select},
        $file_id as x_file_id
    from (
        select
            {", ".join(_raw_cols(m))}
        from {relation}
    )
    """  # noqa: S608 - identifiers only, values are bound
    try:
        con.execute(sql, bind)
    except duckdb.Error as exc:
        # the failed INSERT aborted the caller's transaction: find the bad value on a scratch connection
        scratch = duckdb.connect()
        try:
            scratch.execute("set TimeZone = 'UTC'")
            for i, path in enumerate(paths):
                _locate(scratch, m, i, path)
        finally:
            scratch.close()
        raise RejectedFile(m.ref.uri, f"cannot load the inventory: {duckdb_problem(exc)}") from None
    row = one(con, "select count(*) from storage_objects where x_file_id = $f", {"f": fid})
    return int(row[0]) if row else 0


def _raw_cols(m: Manifest) -> list[str]:
    """The data file's columns under their storage_objects names (unused fields dropped)."""
    out = []
    for i, name in enumerate(m.fields):
        col = FIELDS.get(norm(name))
        if col is None:
            continue
        src = f"c{i}" if m.fmt == "csv" else quote_ident(name)
        out.append(f"{src} as {quote_ident('raw_' + col)}")
    return out


def _present(m: Manifest) -> set[str]:
    return {FIELDS[norm(f)] for f in m.fields if norm(f) in FIELDS}


def _csv_exprs(fields: list[str]) -> dict[str, str]:
    have = {FIELDS[norm(f)] for f in fields if norm(f) in FIELDS}

    def col(name: str, expr: str, missing: str = "null") -> str:
        # the CSV reader already reads a quoted empty field ("") as NULL
        return expr.format(v=f"raw_{name}") if name in have else missing

    def typed(name: str, expr: str) -> str:
        return expr.format(v=f"raw_{name}") if name in have else "null"

    key = (
        f"case when {MISENCODED.format(k='raw_key')} then error('mis-encoded key') "
        "when contains(raw_key, '%') or contains(raw_key, '+') then url_decode(replace(raw_key, '+', ' ')) "
        "else raw_key end"
    )
    return {
        "bucket": "raw_bucket",
        "key": key,
        "version_id": col("version_id", "{v}"),
        "is_latest": typed("is_latest", "{v}"),
        "is_delete_marker": typed("is_delete_marker", "{v}"),
        "size_bytes": typed("size_bytes", "{v}"),
        "last_modified": typed("last_modified", "cast({v} as timestamp)"),
        "etag": col("etag", "{v}"),  # Inventory ETags carry no quotes
        "is_multipart": typed("is_multipart", "{v}"),
        "storage_class": col("storage_class", "{v}"),
        "encryption_status": col("encryption_status", "{v}"),
        "checksum_algorithm": col("checksum_algorithm", "{v}"),
        "checksum_type": "null",
        "checksum": "null",
    }


def _parquet_exprs(m: Manifest) -> dict[str, str]:
    have = _present(m)

    def col(name: str, expr: str = "{v}") -> str:
        return expr.format(v=f"raw_{name}") if name in have else "null"

    return {
        "bucket": "raw_bucket",
        "key": "raw_key",
        "version_id": col("version_id", "nullif(cast({v} as varchar), '')"),
        "is_latest": col("is_latest", "cast({v} as boolean)"),
        "is_delete_marker": col("is_delete_marker", "cast({v} as boolean)"),
        "size_bytes": col("size_bytes", "cast({v} as bigint)"),
        "last_modified": col("last_modified", "cast(cast({v} as timestamptz) as timestamp)"),
        "etag": col("etag", "nullif(trim(cast({v} as varchar), '\"'), '')"),
        "is_multipart": col("is_multipart", "cast({v} as boolean)"),
        "storage_class": col("storage_class", "upper(cast({v} as varchar))"),
        "encryption_status": col("encryption_status", "upper(cast({v} as varchar))"),
        "checksum_algorithm": col("checksum_algorithm", "upper(cast({v} as varchar))"),
        "checksum_type": "null",
        "checksum": "null",
    }


def _locate(con: duckdb.DuckDBPyConnection, m: Manifest, i: int, path: Path) -> None:
    """Raise RejectedFile naming the first bad line and column of data file `i` (if it has one)."""
    uri = data_uri(m, i)
    if m.fmt == "parquet":
        relation = "read_parquet($path)"
        bind: dict[str, Any] = {"path": str(path)}
    else:
        relation = (
            "read_csv($path, header = false, columns = $columns, delim = ',', quote = '\"', "
            "escape = '\"', auto_detect = false, strict_mode = true)"
        )
        bind = {"path": str(path), "columns": {f"c{j}": "VARCHAR" for j in range(len(m.fields))}}
    checks: list[tuple[str, str, str]] = []  # (field, condition true when bad, expectation)
    for j, name in enumerate(m.fields):
        col = FIELDS.get(norm(name))
        c = f"c{j}" if m.fmt == "csv" else quote_ident(name)
        v = f"nullif(cast({c} as varchar), '')"
        if col == "key" and m.fmt == "csv":
            bad = f"{MISENCODED.format(k=c)} or try(url_decode(replace({c}, '+', ' '))) is null"
            checks.append((name, bad, "a URL-encoded key (as S3 Inventory writes CSV keys)"))
        elif col in ("bucket", "key"):
            checks.append((name, f"{v} is null", "a value"))
        elif col == "size_bytes":
            checks.append((name, f"{v} is not null and try_cast({v} as bigint) is null", "a size in bytes"))
        elif col == "last_modified":
            checks.append(
                (
                    name,
                    f"{v} is not null and try_cast({v} as timestamptz) is null",
                    "a time like 2024-04-15T01:02:03.000Z",
                )
            )
        elif col in ("is_latest", "is_delete_marker", "is_multipart"):
            checks.append((name, f"{v} is not null and try_cast({v} as boolean) is null", "true or false"))
    if not checks:
        return
    selects = ", ".join(f"min(_row) filter (where {cond})" for _, cond, _ in checks)
    try:
        found = one(
            con,
            f"with _src as (select row_number() over () as _row, * from {relation}) select {selects} from _src",  # noqa: S608 - identifiers only
            bind,
        )
    except duckdb.Error as exc:
        raise RejectedFile(uri, f"cannot read: {duckdb_problem(exc)}") from None
    assert found is not None
    bad = [(row, check) for row, check in zip(found, checks, strict=True) if row is not None]
    if not bad:
        return
    row, (name, _, expected) = min(bad, key=lambda b: b[0])
    j = m.fields.index(name)
    c = f"c{j}" if m.fmt == "csv" else quote_ident(name)
    value = one(
        con,
        f"with _src as (select row_number() over () as _row, * from {relation}) "  # noqa: S608 - identifiers only
        f"select cast({c} as varchar) from _src where _row = $row",
        {**bind, "row": row},
    )
    shown = value[0] if value else None
    raise RejectedFile(
        uri,
        f"expected {expected}, found {shown!r} (inventory {m.ref.uri})",
        line=row,
        column=name,
    )


def data_uri(m: Manifest, i: int) -> str:
    key = str(m.files[i]["key"])
    if m.ref.uri.startswith("s3://"):
        return f"s3://{destination_bucket(m)}/{key}"
    return key


def destination_bucket(m: Manifest) -> str:
    return inventory_format.destination_bucket(json.loads(m.text), s3mod.split_uri(m.ref.uri)[0])


def prune(con: duckdb.DuckDBPyConnection, source: str, bucket: str, keep: int) -> None:
    """Keep the newest `keep` snapshots of `bucket` from this source; delete older ones."""
    old = con.execute(
        "select x_file_id from storage_snapshots where source = $s and bucket = $b "
        "order by inventory_at desc, x_file_id desc offset $keep",
        {"s": source, "b": bucket, "keep": keep},
    ).fetchall()
    for (fid,) in old:
        con.execute("delete from storage_objects where x_file_id = $f", {"f": fid})
        con.execute("delete from storage_snapshots where x_file_id = $f", {"f": fid})
