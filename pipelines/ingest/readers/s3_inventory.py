"""Amazon S3 Inventory reports (manifest.json + CSV.gz or Parquet data files) -> storage_objects.

The source's uri is a local folder (or one manifest.json) or an `s3://bucket/prefix/` where reports are
delivered: `<prefix>/<source-bucket>/<config-id>/YYYY-MM-DDTHH-MMZ/manifest.json` with the data files under
`<config-id>/data/`. Every run takes the newest report of each inventory configuration found there (a newer
inventory date supersedes the older one for that bucket) and loads it if the ledger has not seen it;
`keep_inventories` (default 2) snapshots per bucket are kept, older ones deleted.

- Fields by the manifest's `fileSchema` (CSV has no header); `Bucket`, `Key` and `Size` are required,
  `VersionId`, `IsLatest`, `IsDeleteMarker`, `LastModifiedDate`, `ETag`, `StorageClass`,
  `IsMultipartUploaded`, `EncryptionStatus`, `ChecksumAlgorithm` used when present, the rest ignored.
- CSV keys are URL-encoded (`+` and `%20` are spaces) and decoded; Parquet keys are raw. ORC is refused.
- Each data file's size and `MD5checksum` are checked against the manifest (option `verify_md5`, default
  true), so a truncated or replaced file is refused before anything is written.
- Bad input rejects the whole source run (one transaction), the previous inventory stays: a manifest that
  is not JSON or names a missing data file, a mis-encoded key, a size or date that is not one, each named
  with its file, line and column.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from pipelines import s3 as s3mod
from pipelines.config import Source
from pipelines.errors import RejectedFile
from pipelines.ingest.ledger import file_id, record_snapshot
from pipelines.ingest.readers.base import LoadContext, LoadResult, SourceReader, duckdb_problem, quote_ident
from pipelines.ingest.snapshots import loaded_snapshot, replace_snapshot
from pipelines.ingest.storage_patterns import sync_config
from pipelines.sources.options import S3InventoryOptions
from pipelines.warehouse import one

# inventory field (lower case, no separators) -> storage_objects column
FIELDS = {
    "bucket": "bucket",
    "key": "key",
    "versionid": "version_id",
    "islatest": "is_latest",
    "isdeletemarker": "is_delete_marker",
    "size": "size_bytes",
    "lastmodifieddate": "last_modified",
    "etag": "etag",
    "storageclass": "storage_class",
    "ismultipartuploaded": "is_multipart",
    "encryptionstatus": "encryption_status",
    "checksumalgorithm": "checksum_algorithm",
}
REQUIRED = ("Bucket", "Key", "Size")
# fields the CSV reader parses itself (quoted empty strings are NULL); a value that does not parse fails the
# load, and `_locate` then finds its line on VARCHAR columns
CSV_TYPES = {
    "size_bytes": "BIGINT",
    "last_modified": "TIMESTAMPTZ",
    "is_latest": "BOOLEAN",
    "is_delete_marker": "BOOLEAN",
    "is_multipart": "BOOLEAN",
}
STAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2})-(\d{2})Z$")
# a percent sign that does not start a %XX escape: the key is not URL-encoded as S3 Inventory writes it
MISENCODED = "contains({k}, '%') and contains(regexp_replace({k}, '%[0-9A-Fa-f]{{2}}', '', 'g'), '%')"


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


@dataclass
class ManifestRef:
    uri: str
    folder: str  # the report's dated folder name (YYYY-MM-DDTHH-MMZ) when it has one
    group: str  # the inventory configuration's folder (reports of one configuration supersede each other)
    local_path: Path | None = None
    size: int | None = None
    modified_at: datetime | None = None
    etag: str | None = None


@dataclass
class Manifest:
    ref: ManifestRef
    text: str
    source_bucket: str
    fmt: str  # csv | parquet
    fields: list[str]
    files: list[dict[str, Any]]
    created_at: datetime
    md5: str


class S3InventoryReader(SourceReader):
    def load_source(self, con: duckdb.DuckDBPyConnection, source: Source, ctx: LoadContext) -> LoadResult:
        try:
            return self._load_source(con, source, ctx)
        except (
            OSError
        ) as exc:  # a file that vanished or cannot be read mid-run: the run is refused, not crashed
            where = exc.filename or ctx.config.source_location(source)
            raise RejectedFile(str(where), f"cannot read: {exc.strerror or exc}") from None

    def _load_source(self, con: duckdb.DuckDBPyConnection, source: Source, ctx: LoadContext) -> LoadResult:
        opts = source.options_as(S3InventoryOptions)
        keep, verify = opts.keep_inventories, opts.verify_md5
        location = ctx.config.source_location(source)
        sync_config(con, ctx.config, ctx.loaded_at, location)
        store: _Store = (
            _S3Store(source, location) if source.is_s3 else _LocalStore(Path(location))  # type: ignore[assignment]
        )
        refs = store.manifests()
        if not refs:
            raise RejectedFile(location, "no inventory manifest.json found here")
        newest: dict[str, ManifestRef] = {}
        for ref in sorted(refs, key=lambda r: (r.folder, r.uri)):
            newest[ref.group] = ref  # the latest dated folder of each inventory configuration
        by_bucket: dict[str, Manifest] = {}
        for ref in newest.values():
            m = _parse_manifest(ref, store.read(ref))
            other = by_bucket.get(m.source_bucket)
            if other is None or (m.created_at, m.ref.uri) > (other.created_at, other.ref.uri):
                by_bucket[m.source_bucket] = m
        rows = 0
        warnings = []
        loaded = 0
        for bucket, m in sorted(by_bucket.items()):
            fid = file_id(source.name, m.ref.uri)
            done = loaded_snapshot(con, fid)
            if done and done[0] == m.md5:
                warnings.append(f"{m.ref.uri}: already loaded")
                continue
            loaded += 1
            with tempfile.TemporaryDirectory(prefix="wastewatch-inventory-") as tmp:
                paths = [store.data_file(m, i, Path(tmp)) for i in range(len(m.files))]
                if verify:
                    _verify(m, paths)
                con.execute("delete from storage_objects where x_file_id = $f", {"f": fid})
                n = _load(con, m, paths, fid) if paths else 0
            replace_snapshot(
                con,
                file_id=fid,
                source=source,
                store="s3",
                bucket=bucket,
                taken_at=m.created_at,
                region=source.region,
                resource_id=bucket,
                uri=m.ref.uri,
                now=ctx.loaded_at,
            )
            record_snapshot(
                con,
                file_id=fid,
                source=source,
                uri=m.ref.uri,
                size=m.ref.size,
                modified_at=m.ref.modified_at,
                etag=m.ref.etag,
                checksum=m.md5,
                rows=n,
                now=ctx.loaded_at,
            )
            _prune(con, source.name, bucket, keep)
            rows += n
        return LoadResult(rows=rows, warnings=warnings, changed=loaded > 0)


# ------------------------------------------------------------------------------------------ manifests


def _parse_manifest(ref: ManifestRef, data: bytes) -> Manifest:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RejectedFile(ref.uri, f"manifest is not UTF-8 text: {exc.reason}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RejectedFile(ref.uri, f"manifest is not valid JSON: {exc.msg}", line=exc.lineno) from None
    if not isinstance(doc, dict):
        raise RejectedFile(ref.uri, "manifest is not a JSON object")
    missing = [k for k in ("sourceBucket", "fileFormat", "fileSchema", "files") if k not in doc]
    if missing:
        raise RejectedFile(ref.uri, f"manifest lacks {', '.join(missing)}")
    fmt = str(doc["fileFormat"]).strip().lower()
    if fmt == "orc":
        raise RejectedFile(ref.uri, "ORC inventory reports are not supported; configure CSV or Parquet")
    if fmt not in ("csv", "parquet"):
        raise RejectedFile(ref.uri, f"fileFormat {doc['fileFormat']!r}: expected CSV or Parquet")
    fields = _schema_fields(str(doc["fileSchema"]))
    have = {_norm(f) for f in fields}
    lacking = [f for f in REQUIRED if _norm(f) not in have]
    if lacking:
        raise RejectedFile(
            ref.uri,
            f"fileSchema lacks {', '.join(lacking)} (it has: {doc['fileSchema']}); "
            "configure the inventory with the Size field",
        )
    files = doc["files"]
    if not isinstance(files, list) or not all(isinstance(f, dict) and f.get("key") for f in files):
        raise RejectedFile(ref.uri, "files must be a list of {key, size, MD5checksum}")
    return Manifest(
        ref=ref,
        text=text,
        source_bucket=str(doc["sourceBucket"]),
        fmt=fmt,
        fields=fields,
        files=files,
        created_at=_created(doc, ref),
        md5=hashlib.md5(data).hexdigest(),  # noqa: S324 - a content fingerprint, as manifest.checksum is
    )


def _schema_fields(schema: str) -> list[str]:
    """`Bucket, Key, Size, ...` (CSV), `struct<bucket:string,...>` or `message s3.inventory { ... }`."""
    s = schema.strip()
    if s.lower().startswith("struct<"):
        return [part.split(":", 1)[0].strip() for part in s[len("struct<") : -1].split(",") if part.strip()]
    if s.lower().startswith("message"):
        return re.findall(r"\b(?:required|optional)\s+\w+\s+(\w+)", s)
    return [f.strip() for f in s.split(",") if f.strip()]


def _created(doc: dict[str, Any], ref: ManifestRef) -> datetime:
    stamp = doc.get("creationTimestamp")
    if stamp is not None:
        try:
            return datetime.fromtimestamp(int(str(stamp)) / 1000, UTC).replace(tzinfo=None)
        except (ValueError, OverflowError, OSError):
            raise RejectedFile(
                ref.uri, f"creationTimestamp {stamp!r}: expected milliseconds since 1970 as a string"
            ) from None
    m = STAMP.match(ref.folder)
    if m:
        y, mo, d, h, mi = (int(x) for x in m.groups())
        return datetime(y, mo, d, h, mi)
    if ref.modified_at:
        return ref.modified_at
    raise RejectedFile(ref.uri, "cannot tell the inventory's date: no creationTimestamp and no dated folder")


def _verify(m: Manifest, paths: list[Path]) -> None:
    for i, (entry, path) in enumerate(zip(m.files, paths, strict=True)):
        size = path.stat().st_size
        want_size = entry.get("size")
        if want_size is not None and int(want_size) != size:
            raise RejectedFile(
                m.ref.uri,
                f"files[{i}] {entry['key']}: {size:,} bytes, the manifest says {int(want_size):,} "
                "(truncated or replaced)",
            )
        want = entry.get("MD5checksum")
        if want:
            h = hashlib.md5()  # noqa: S324 - the checksum S3 Inventory publishes
            with path.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 22), b""):
                    h.update(chunk)
            if h.hexdigest() != str(want).lower():
                raise RejectedFile(
                    m.ref.uri,
                    f"files[{i}] {entry['key']}: MD5 {h.hexdigest()} differs from the manifest's {want}",
                )


# ------------------------------------------------------------------------------------------ loading


def _load(con: duckdb.DuckDBPyConnection, m: Manifest, paths: list[Path], fid: str) -> int:
    """One INSERT over every data file; strict casts make a bad value fail it, then `_locate` names it."""
    bind: dict[str, Any] = {"files": [str(p) for p in paths], "inventory_at": m.created_at, "file_id": fid}
    if m.fmt == "csv":
        columns = {
            f"c{i}": CSV_TYPES.get(FIELDS.get(_norm(f), ""), "VARCHAR") for i, f in enumerate(m.fields)
        }
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
        lacking = [f for f in REQUIRED if _norm(f) not in {_norm(x) for x in m.fields}]
        if lacking:
            raise RejectedFile(_data_uri(m, 0), f"Parquet inventory lacks column(s) {', '.join(lacking)}")
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
        col = FIELDS.get(_norm(name))
        if col is None:
            continue
        src = f"c{i}" if m.fmt == "csv" else quote_ident(name)
        out.append(f"{src} as {quote_ident('raw_' + col)}")
    return out


def _present(m: Manifest) -> set[str]:
    return {FIELDS[_norm(f)] for f in m.fields if _norm(f) in FIELDS}


def _csv_exprs(fields: list[str]) -> dict[str, str]:
    have = {FIELDS[_norm(f)] for f in fields if _norm(f) in FIELDS}

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
    uri = _data_uri(m, i)
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
        col = FIELDS.get(_norm(name))
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


def _data_uri(m: Manifest, i: int) -> str:
    key = str(m.files[i]["key"])
    if m.ref.uri.startswith("s3://"):
        return f"s3://{_destination_bucket(m)}/{key}"
    return key


def _destination_bucket(m: Manifest) -> str:
    doc = json.loads(m.text)
    dest = str(doc.get("destinationBucket") or "")
    return dest.rsplit(":", 1)[-1] if dest else s3mod.split_uri(m.ref.uri)[0]


def _prune(con: duckdb.DuckDBPyConnection, source: str, bucket: str, keep: int) -> None:
    """Keep the newest `keep` snapshots of `bucket` from this source; delete older ones."""
    old = con.execute(
        "select x_file_id from storage_snapshots where source = $s and bucket = $b "
        "order by inventory_at desc, x_file_id desc offset $keep",
        {"s": source, "b": bucket, "keep": keep},
    ).fetchall()
    for (fid,) in old:
        con.execute("delete from storage_objects where x_file_id = $f", {"f": fid})
        con.execute("delete from storage_snapshots where x_file_id = $f", {"f": fid})


# ------------------------------------------------------------------------------------------ stores


class _Store:
    def manifests(self) -> list[ManifestRef]:
        raise NotImplementedError

    def read(self, ref: ManifestRef) -> bytes:
        raise NotImplementedError

    def data_file(self, m: Manifest, i: int, tmp: Path) -> Path:
        raise NotImplementedError


def _ref_names(parts: list[str]) -> tuple[str, str]:
    """(dated folder, configuration folder) of a manifest from its path segments."""
    folder = parts[-2] if len(parts) >= 2 else ""
    group = "/".join(parts[:-2]) if STAMP.match(folder) else "/".join(parts[:-1])
    return folder, group


class _LocalStore(_Store):
    def __init__(self, root: Path) -> None:
        self.root = root

    def manifests(self) -> list[ManifestRef]:
        if self.root.is_file():
            found = [self.root] if self.root.name == "manifest.json" else []
        elif self.root.is_dir():
            found = sorted(self.root.rglob("manifest.json"))
        else:
            raise RejectedFile(str(self.root), "no such file or folder")
        out = []
        for p in found:
            st = p.stat()
            folder, group = _ref_names(list(p.resolve().parts))
            out.append(
                ManifestRef(
                    uri=str(p.resolve()),
                    folder=folder,
                    group=group,
                    local_path=p,
                    size=st.st_size,
                    modified_at=datetime.fromtimestamp(st.st_mtime, UTC).replace(tzinfo=None),
                )
            )
        return out

    def read(self, ref: ManifestRef) -> bytes:
        assert ref.local_path is not None
        try:
            return ref.local_path.read_bytes()
        except OSError as exc:
            raise RejectedFile(ref.uri, f"cannot read: {exc.strerror}") from None

    def data_file(self, m: Manifest, i: int, tmp: Path) -> Path:
        """The data file for files[i]: its key is relative to the destination bucket, whose root is an
        ancestor of the manifest's folder (or, for a copied report, its data/ sibling)."""
        key = str(m.files[i]["key"]).lstrip("/")
        parts = key.split("/")
        assert m.ref.local_path is not None
        tried = []
        for ancestor in m.ref.local_path.resolve().parents:
            for start in range(len(parts) - 1) if len(parts) > 1 else (0,):
                candidate = ancestor.joinpath(*parts[start:])
                if candidate.is_file():
                    return candidate
            tried.append(str(ancestor))
            if len(tried) > 6:
                break
        raise RejectedFile(
            m.ref.uri,
            f"files[{i}]: data file {key!r} not found (looked under {tried[0]} and its parents)",
        )


class _S3Store(_Store):
    def __init__(self, source: Source, location: str) -> None:
        self.source = source
        self.bucket, self.prefix = s3mod.split_uri(location)
        self.client = s3mod.client(source, source.options_as(S3InventoryOptions).retries)

    def manifests(self) -> list[ManifestRef]:
        out = []
        try:
            for page in s3mod.object_pages(self.client, self.bucket, self.prefix):
                for entry in page:
                    if entry["Key"].rsplit("/", 1)[-1] != "manifest.json":
                        continue
                    obj = s3mod.as_object(self.bucket, entry)
                    folder, group = _ref_names(obj.key.split("/"))
                    out.append(
                        ManifestRef(
                            uri=obj.uri,
                            folder=folder,
                            group=group,
                            size=obj.size,
                            modified_at=obj.last_modified,
                            etag=obj.etag or None,
                        )
                    )
        except s3mod.ListingInterrupted as exc:
            raise RejectedFile(
                f"s3://{self.bucket}/{self.prefix}", f"cannot list inventory reports: {exc.reason}"
            ) from None
        return out

    def read(self, ref: ManifestRef) -> bytes:
        bucket, key = s3mod.split_uri(ref.uri)
        try:
            return self.client.get_object(Bucket=bucket, Key=key)["Body"].read()
        except Exception as exc:
            raise RejectedFile(ref.uri, f"cannot read: {s3mod.problem(exc)}") from None

    def data_file(self, m: Manifest, i: int, tmp: Path) -> Path:
        bucket = _destination_bucket(m)
        key = str(m.files[i]["key"]).lstrip("/")
        dest = tmp / f"{i:05d}-{key.rsplit('/', 1)[-1]}"
        try:
            self.client.download_file(bucket, key, str(dest))
        except Exception as exc:
            raise RejectedFile(
                m.ref.uri, f"files[{i}]: data file s3://{bucket}/{key} cannot be read: {s3mod.problem(exc)}"
            ) from None
        return dest
