"""`engine: spark`: storage_objects_current computed on Spark (local mode) from the raw S3 Inventory reports
equals DuckDB's, row for row; the warehouse reads it as a view over Parquet partitioned by bucket, and the
storage marts built on it and the storage rules' findings are the same on both engines."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import Config, load_config
from pipelines.errors import ConfigError, WarehouseError
from pipelines.transform.build import build_mart
from pipelines.warehouse import connect
from rules import Window, get_rule
from tests.helpers import spark as spark_helper
from tests.helpers.storage import copy_fixture_report, project, run_ingest, write_parquet_report, write_report

MART = "storage_objects_current"
# the marts built on storage_objects_current, in build order (storage_prices first: the others read it)
DOWNSTREAM = ("storage_prices", "storage_checkpoints", "storage_datasets", "storage_dataset_matches")
STORAGE_RULES = ("STO001", "STO002", "STO003", "STO005")


def _same_rows(con: duckdb.DuckDBPyConnection, table: str, expected: str) -> int:
    """Assert `table` and `expected` hold the same rows both ways (EXCEPT ALL counts duplicates) and the same
    column types; the number of rows compared. DOUBLE columns are compared to 1e-9: DuckDB adds a DOUBLE
    (storage_datasets' monthly_cost) in the order it reads the rows, which differs between a table and
    Parquet, so such a sum can differ in its last bits (DECIMAL money is compared exactly)."""
    types = con.execute(f"select column_name, column_type from (describe {table})").fetchall()
    assert types == con.execute(f"select column_name, column_type from (describe {expected})").fetchall()
    # the columns as compared: a DOUBLE rounded to 9 decimals, everything else as it is
    columns = ", ".join(f'round("{c}", 9)' if t == "DOUBLE" else f'"{c}"' for c, t in types)
    for a, b in ((table, expected), (expected, table)):
        differ = con.execute(
            f"select {columns} from {a} except all select {columns} from {b} order by all limit 5"
        ).fetchall()
        assert differ == [], f"rows of {a} that are not in {b}: {differ}"
    return int(con.execute(f"select count(*) from {table}").fetchall()[0][0])


def _findings(con: duckdb.DuckDBPyConnection, window: Window) -> dict[str, list[str]]:
    """The storage rules' findings over the window, each as sorted JSON rows."""
    detected = datetime(2026, 12, 1, 6, 0)
    out = {}
    for rid in STORAGE_RULES:
        rule = get_rule(rid)
        frame = rule.evaluate(con, window, rule.make_params(None), detected)
        out[rid] = sorted(json.dumps(r, sort_keys=True, default=str) for r in frame.to_dicts())
    return out


def test_spark_storage_objects_equal_duckdb_on_the_demo(
    spark: Any, demo_dir: tuple[Path, str], tmp_path: Path
) -> None:
    config = spark_helper.demo_copy(demo_dir[0], tmp_path)
    on_duckdb = config.model_copy(update={"engine": "duckdb"})
    window = Window.iso_week("2026-W48")
    con = connect(config.warehouse_path)
    try:
        n = build_mart(con, MART, on_duckdb)
        con.execute(f"create table expected as from {MART}")
        for name in DOWNSTREAM:
            build_mart(con, name, on_duckdb)
            con.execute(f"create table expected_{name} as from {name}")
        findings = _findings(con, window)
        assert sum(len(f) for f in findings.values()) > 0, findings

        assert build_mart(con, MART, config) == n > 0
        assert spark_helper.mart_kind(con, MART) == "view"
        assert _same_rows(con, MART, "expected") == n
        # the demo's reports exercise URL-decoded keys, checkpoint runs with steps, datasets and loose files
        roles = dict(con.execute(f"select role, count(*) from {MART} group by 1").fetchall())
        assert set(roles) == {"checkpoint", "dataset", None}, roles
        assert con.execute(f"select count(*) from {MART} where contains(key, ' ')").fetchone()[0] > 0
        assert con.execute(f"select count(step) from {MART}").fetchone()[0] > 0
        # what reads the mart sees the same rows: the storage marts built on the view (the duplicate
        # candidates by Spark over its Parquet), the rules' findings
        for name in DOWNSTREAM:
            build_mart(con, name, config)
            assert _same_rows(con, name, f"expected_{name}") > 0, name
        assert spark_helper.mart_kind(con, "storage_dataset_matches") == "view"
        assert _findings(con, window) == findings

        # the Parquet Spark wrote, partitioned by bucket, is what the view reads
        (build,) = sorted((tmp_path / "marts" / MART).iterdir())
        buckets = {r[0] for r in con.execute(f"select distinct bucket from {MART}").fetchall()}
        assert {p.name for p in build.iterdir() if p.is_dir()} == {f"bucket_part={b}" for b in buckets}

        # back on DuckDB the marts are tables again, with the same rows
        build_mart(con, MART, on_duckdb)
        assert spark_helper.mart_kind(con, MART) == "table"
        assert _same_rows(con, MART, "expected") == n
        build_mart(con, "storage_dataset_matches", on_duckdb)
        assert spark_helper.mart_kind(con, "storage_dataset_matches") == "table"
    finally:
        con.close()


# the patterns of tests/ingest/storage/test_patterns.py on S3, and {step} and {loss} values that DuckDB's
# casts take or refuse in ways Spark's own casts would not
PATTERNS = [
    "s3://ck/{project}/{run_id}/**",
    "s3://ck/shared/run-{run_id}/**",
    "s3://*/exp/{run_id}/ckpt-{step}/",
    "s3://ck2/{run_id}/step{step}/loss{loss}.pt",
]
ROOTS = ["s3://ck/datasets/", "s3://data/", "s3://*/shared-data/"]
SEGMENTS = ["ck", "ck2", "data", "datasets", "exp", "shared", "shared-data", "run-1", "r2", "ckpt-10", "ckpt-",
            "step5", "loss0.5.pt", "lossx.pt", "a", "b.tar", "global_step 7", "iter-3", "épreuve", "100%"]  # fmt: skip
STEPS = ["5", "+5", " 5", "1_000", "1__0", "0x1F", "0b11", "2.5", "-2.5", "1.5e1", "1e-1", "9223372036854775808",
         "9223372036854775807.4", "x"]  # fmt: skip
LOSSES = ["0.5", ".5", "5.", "1e-3", "inf", "-inf", "Infinity", "NaN", "1.5d", "1_0.5", "1,5", "+0.5", "1e"]


def _objects(rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    """Objects per bucket: random paths from the segments, and every {step} x some {loss} values."""
    by_bucket: dict[str, set[str]] = {}
    for _ in range(500):
        parts = [rng.choice(SEGMENTS) for _ in range(rng.randint(1, 5))]
        by_bucket.setdefault(rng.choice(["ck", "ck2", "data", "other"]), set()).add("/".join(parts))
    for step in STEPS:
        for loss in rng.sample(LOSSES, 4):
            by_bucket["ck2"].add(f"r{rng.randint(1, 3)}/step{step}/loss{loss}.pt")
        by_bucket["other"].add(f"exp/r1/ckpt-{step}/")
    out = {}
    for bucket, keys in sorted(by_bucket.items()):
        out[bucket] = [
            {
                "key": key,
                "size": rng.choice([0, 1, 2**20, 2**33]),
                "etag": rng.choice(["", f"{i:032x}", f"{i:032x}-{rng.randint(1, 9)}"]),
                "storage_class": rng.choice(["STANDARD", "GLACIER_IR"]),
            }
            for i, key in enumerate(sorted(keys))
        ]
    return out


def test_spark_storage_objects_equal_duckdb_on_generated_paths(spark: Any, tmp_path: Path) -> None:
    """Paths at the patterns' edges, placeholder values at the casts' edges, keys with spaces, `%` and
    accents, and the committed versioned report (versions, delete markers, encryption, checksum algorithm):
    the same rows on both engines."""
    for bucket, objects in _objects(random.Random(11)).items():
        write_report(tmp_path / "inventory", bucket, "2026-11-28T01-00Z", objects)
    copy_fixture_report(tmp_path / "inventory")
    body = "checkpoints:\n" + "".join(
        f'  - "{p}"\n' for p in PATTERNS + ["s3://acme-ckpt/{project}/{run_id}/**"]
    )
    body += "datasets:\n" + "".join(f'  - "{r}"\n' for r in ROOTS)
    config = project(tmp_path, "  - {name: inv, kind: s3_inventory, uri: inventory/}\n", body)
    con = connect(config.warehouse_path)
    try:
        report = run_ingest(con, config)
        assert con.execute("select count(*) from storage_snapshots").fetchone()[0] == 5, report
        n = build_mart(con, MART, config)
        con.execute(f"create table expected as from {MART}")
        for name in ("resources", "storage_prices", "storage_dataset_matches"):
            build_mart(con, name, config)
        con.execute("create table expected_matches as from storage_dataset_matches")
        on_spark = config.model_copy(
            update={"engine": "spark", "spark": spark_helper.settings(tmp_path / "marts")}
        )
        assert build_mart(con, MART, on_spark) == n
        assert _same_rows(con, MART, "expected") == n
        build_mart(con, "storage_prices", on_spark)
        build_mart(con, "storage_dataset_matches", on_spark)
        assert spark_helper.mart_kind(con, "storage_dataset_matches") == "view"
        # the duplicate candidates: random sizes and ETags make ETag matches and ambiguous ones
        assert _same_rows(con, "storage_dataset_matches", "expected_matches") > 3
        assert con.execute(
            "select sum(bytes_etag) > 0 and sum(bytes_ambiguous) > 0 from storage_dataset_matches"
        ).fetchall() == [(True,)]
        # the cases the test is for are in the rows
        seen = con.execute(
            f"select count(*) filter (where role = 'checkpoint'), count(*) filter (where role = 'dataset'), "
            f"count(distinct step), count(distinct metric), count(version_id), count(encryption_status) from {MART}"
        ).fetchone()
        assert all(v > 3 for v in seen), seen
        # 0x1F, 1_000, -2.5 and 1.5e1 as DuckDB casts them; inf and nan as metrics
        steps, metrics = con.execute(
            f"select list(distinct step), list(distinct metric::varchar) from {MART}"
        ).fetchall()[0]
        assert {31, 1000, -3, 15} <= set(steps) and {"inf", "nan"} <= set(metrics), (steps, metrics)
    finally:
        con.close()


def _parquet_reports(root: Path) -> None:
    """Parquet reports as S3 writes them, with the quirks the reader types away: a versioned bucket in two
    data files whose columns differ (one lacks the encryption and checksum columns and orders its columns
    otherwise), keys as written (spaces, `+`, `%`, accents: Parquet keys are not URL-encoded), an empty
    version id, a quoted ETag, lower-case classes and delete markers without a size; a second bucket whose
    times are a local TIMESTAMP (not UTC-adjusted) and whose sizes are INT32; a CSV report beside them."""
    utc = datetime(2026, 9, 1, 12, 30, 15, 250000, tzinfo=UTC)
    first = [
        {
            "bucket": "pq-ckpt",
            "key": f"llm/run-{r}/step_{s}/model {s}+final%.pt",
            "version_id": f"v{r}{s}",
            "is_latest": s != 100,
            "is_delete_marker": False,
            "size": 2**30 + s,
            "last_modified_date": utc,
            "e_tag": f"{r:08x}{s:024x}",
            "storage_class": "STANDARD",
            "is_multipart_uploaded": True,
            "encryption_status": "SSE-S3",
            "checksum_algorithm": "CRC64NVME",
        }
        for r in (1, 2)
        for s in (100, 200, 300)
    ]
    second = [
        {
            "key": key,
            "bucket": "pq-ckpt",
            "size": size,
            "is_latest": True,
            "is_delete_marker": size is None,
            "version_id": version,
            "last_modified_date": utc,
            "e_tag": etag,
            "storage_class": klass,
            "is_multipart_uploaded": False,
        }
        for key, size, version, etag, klass in [
            ("llm/run-3/step_10/état.pt", 5, "", '"0123456789abcdef0123456789abcdef"', "glacier_ir"),
            ("llm/run-3/step_20/x.pt", None, "null", "", "standard"),
            ("datasets/web/shard 0.bin", 7, None, "abc-2", "INTELLIGENT_TIERING"),
        ]
    ]
    write_parquet_report(root, "pq-ckpt", "2026-11-28T01-00Z", [first, second])
    local = [
        {
            "bucket": "pq-data",
            "key": f"web/shard-{i}.bin",
            "size": (100 + i, "integer"),
            "last_modified_date": (datetime(2026, 10, 1, 8, i), "timestamp"),
            "e_tag": hashlib.md5(f"web/shard-{i}.bin".encode()).hexdigest(),  # noqa: S324 - write_report's
            "storage_class": "STANDARD_IA",
            "is_multipart_uploaded": False,
        }
        for i in range(5)
    ]
    write_parquet_report(root, "pq-data", "2026-11-28T01-00Z", [local])
    write_report(
        root,
        "csv-data",
        "2026-11-28T01-00Z",
        [{"key": f"web/shard-{i}.bin", "size": 100 + i} for i in range(5)],
    )


def test_spark_storage_objects_equal_duckdb_on_parquet_reports(spark: Any, tmp_path: Path) -> None:
    """Parquet inventory reports are read where they lie and typed as the reader types them: the mart and
    the duplicate candidates are the same on both engines."""
    _parquet_reports(tmp_path / "inventory")
    body = 'checkpoints:\n  - "s3://pq-ckpt/{project}/{run_id}/**"\n'
    body += 'datasets:\n  - "s3://pq-data/"\n  - "s3://csv-data/"\n  - "s3://pq-ckpt/datasets/"\n'
    config = project(tmp_path, "  - {name: inv, kind: s3_inventory, uri: inventory/}\n", body)
    con = connect(config.warehouse_path)
    try:
        _ingest_and_compare(con, config, tmp_path / "marts")
        # the quirks are in the rows, typed as the reader types them
        got = con.execute(
            f"select key, version_id, etag, storage_class, size_bytes, last_modified from {MART} "
            "where key in ('llm/run-3/step_10/état.pt', 'web/shard-2.bin') and bucket <> 'csv-data' order by key"
        ).fetchall()
        assert got == [
            ("llm/run-3/step_10/état.pt", None, "0123456789abcdef0123456789abcdef", "GLACIER_IR", 5,
             datetime(2026, 9, 1, 12, 30, 15, 250000)),
            ("web/shard-2.bin", None, hashlib.md5(b"web/shard-2.bin").hexdigest(), "STANDARD_IA", 102,
             datetime(2026, 10, 1, 8, 2)),
        ]  # fmt: skip
        assert (
            con.execute(f"select count(*) from {MART} where key like '%+final\\%.pt' escape '\\'").fetchone()[
                0
            ]
            > 0
        )
        assert con.execute("select sum(bytes_etag) > 0 from storage_dataset_matches").fetchall() == [(True,)]
    finally:
        con.close()


def _ingest_and_compare(con: duckdb.DuckDBPyConnection, config: Config, marts: Path) -> None:
    """Ingest, build the storage marts on DuckDB, then on Spark (its marts under `marts`): the same rows,
    and some of them."""
    report = run_ingest(con, config)
    assert not report.rejected, report.summary()
    expected = {}
    for name in (MART, "resources", "storage_prices", "storage_dataset_matches"):
        build_mart(con, name, config)
        con.execute(f"create table expected_{name} as from {name}")
        expected[name] = con.execute(f"select count(*) from {name}").fetchall()[0][0]
    on_spark = config.model_copy(update={"engine": "spark", "spark": spark_helper.settings(marts)})
    for name in (MART, "storage_prices", "storage_dataset_matches"):
        assert build_mart(con, name, on_spark) == expected[name] > 0, name
        assert _same_rows(con, name, f"expected_{name}") == expected[name], name


def _scanned_tree(root: Path) -> None:
    """Checkpoints and two dataset folders sharing files (small ones hashed in full, large ones sampled)."""
    files = {
        "ckpt/run-1/step_100/model.pt": b"a" * 3000,
        "ckpt/run-1/step_200/model.pt": b"b" * 3000,
        "ckpt/run-2/notes.txt": b"hello",
        "datasets/web/shard-0.bin": b"s" * 5000,
        "datasets/web/readme.txt": b"web text",
        "datasets/web-copy/shard-0.bin": b"s" * 5000,
        "datasets/web-copy/readme.txt": b"web text",
        "datasets/web-copy/extra.txt": b"only here",
        "loose file.bin": b"z",
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (1_790_000_000, 1_790_000_000))


def test_spark_storage_objects_equal_duckdb_with_a_file_system_scan(spark: Any, tmp_path: Path) -> None:
    """A scan lists its files itself (no report for Spark to read): the warehouse hands its rows over, and
    with an inventory report beside it the mart and the duplicate candidates (by full and sampled
    checksums) are the same on both engines."""
    root = (tmp_path / "lustre").resolve()
    _scanned_tree(root)
    write_report(tmp_path / "inventory", "data", "2026-11-28T01-00Z", [{"key": "web/x.bin", "size": 9}])
    sources = (
        "  - {name: lustre, kind: fs_scan, uri: lustre, options: {fingerprint: true, full_hash_max_bytes: 1024, "
        "sample_blocks: 4, sample_block_bytes: 100}}\n"
        "  - {name: inv, kind: s3_inventory, uri: inventory/}\n"
    )
    body = f'checkpoints:\n  - "{root}/ckpt/{{run_id}}/**"\ndatasets:\n  - "{root}/datasets/"\n  - "s3://data/"\n'
    config = project(tmp_path, sources, body)
    con = connect(config.warehouse_path)
    try:
        _ingest_and_compare(con, config, tmp_path / "marts")
        assert spark_helper.mart_kind(con, "storage_dataset_matches") == "view"
        stores = dict(con.execute(f"select store, count(*) from {MART} group by 1").fetchall())
        assert stores == {"fs": 9, "s3": 1}, stores
        assert con.execute(
            "select sum(bytes_checksum) > 0 and sum(bytes_sampled) > 0 from storage_dataset_matches"
        ).fetchall() == [(True,)]
    finally:
        con.close()


def test_spark_refuses_an_inventory_changed_since_it_was_ingested(
    spark: Any, demo_dir: tuple[Path, str], tmp_path: Path
) -> None:
    """Spark reads the reports where they lie: a data file rewritten there after the ingest (one object fewer)
    fails the mart naming the report, and the warehouse keeps the mart it had."""
    config = spark_helper.demo_copy(demo_dir[0], tmp_path)
    con = connect(config.warehouse_path)
    try:
        (uri,) = con.execute("select uri from storage_snapshots where bucket = 'acme-scratch'").fetchone()
        landing = tmp_path / "landing"
        shutil.copytree(Path(uri).parents[2], landing / "acme-scratch")
        moved = landing / Path(uri).relative_to(Path(uri).parents[2].parent)
        data = next((landing / "acme-scratch" / "daily" / "data").glob("*.csv.gz"))

        lines = gzip.decompress(data.read_bytes()).decode().splitlines(keepends=True)
        data.write_bytes(gzip.compress("".join(lines[:-1]).encode()))
        con.execute("update storage_snapshots set uri = $u where uri = $old", {"u": str(moved), "old": uri})
        with pytest.raises(WarehouseError) as failed:
            build_mart(con, MART, config)
        message = str(failed.value)
        assert message.startswith(f"{moved}: Spark read {len(lines) - 1:,} objects"), message
        assert f"landed {len(lines):,} from them" in message and "run `wastewatch ingest`" in message
        assert spark_helper.mart_kind(con, MART) == "table"
    finally:
        con.close()


def test_spark_refuses_snapshots_it_cannot_read(demo_dir: tuple[Path, str], tmp_path: Path) -> None:
    """A bucket's newest snapshot of a kind Spark neither reads nor is handed fails the mart naming the
    source, before Spark starts."""
    config = spark_helper.demo_copy(demo_dir[0], tmp_path)
    con = connect(config.warehouse_path)
    try:
        con.execute("update storage_snapshots set kind = 'gcs_inventory' where bucket = 'acme-scratch'")
        with pytest.raises(ConfigError, match=r"scratch-inventory \(kind gcs_inventory\).*DuckDB builds it"):
            build_mart(con, MART, config)
        assert spark_helper.mart_kind(con, MART) == "table"
    finally:
        con.close()


def test_spark_storage_objects_without_snapshots_is_an_empty_view(tmp_path: Path) -> None:
    """A warehouse that holds no storage snapshot: the mart is an empty view with the DuckDB mart's columns
    and types (Spark is not started: there is nothing to read)."""
    config = project(tmp_path, "  []\n")
    con = connect(config.warehouse_path)
    try:
        assert build_mart(con, MART, config) == 0
        con.execute(f"create table expected as from {MART}")
        on_spark = config.model_copy(
            update={"engine": "spark", "spark": spark_helper.settings(tmp_path / "marts")}
        )
        assert build_mart(con, MART, on_spark) == 0
        assert spark_helper.mart_kind(con, MART) == "view"
        assert _same_rows(con, MART, "expected") == 0
        build_mart(con, "resources", config)  # storage_prices reads the bill's resources
        for name in DOWNSTREAM:  # what reads it builds on the empty view
            assert build_mart(con, name, on_spark) == 0, name
    finally:
        con.close()


def test_dataset_matches_on_spark_need_the_objects_there(tmp_path: Path) -> None:
    """Spark matches the duplicate candidates over the Parquet it wrote for the objects: naming the one
    without the other is a config error."""
    (tmp_path / "wastewatch.yaml").write_text(
        'engine: spark\nspark: {url: "local[2]", marts: [cost_hourly, storage_dataset_matches]}\n'
    )
    with pytest.raises(
        ConfigError, match=r"storage_dataset_matches runs on Spark over storage_objects_current"
    ):
        load_config(tmp_path / "wastewatch.yaml")
