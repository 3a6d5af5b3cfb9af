"""The s3_inventory reader: real S3 Inventory reports (manifest.json + CSV.gz or Parquet), from a folder or from
moto's S3 server, into storage_objects; newer reports supersede older ones; bad reports are refused, named,
and leave the previous inventory in place."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from datetime import datetime
from pathlib import Path

import boto3
import duckdb
import pytest

from pipelines.config import ConfigError
from pipelines.warehouse import scalar
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.storage import (
    GIB,
    OBJECTS,
    build_storage_marts,
    copy_fixture_report,
    project,
    run_ingest,
    table,
    write_report,
)

CKPT_PATTERN = 'checkpoints:\n  - "s3://acme-ckpt/{project}/{run_id}/**"\n'


def _open(tmp_path: Path, sources: str, extra: str = "") -> tuple[duckdb.DuckDBPyConnection, object]:
    config = project(tmp_path, sources, extra)
    return new_warehouse(config.warehouse_path), config


# ------------------------------------------------------------------------------------------- loading


def test_the_newest_report_loads_with_decoded_keys_versions_and_delete_markers(tmp_path: Path) -> None:
    copy_fixture_report(tmp_path / "landing" / "inventory")
    con, config = _open(
        tmp_path, "  - {name: ckpt, kind: s3_inventory, uri: landing/inventory/, region: us-east-1}\n"
    )
    report = run_ingest(con, config)
    assert not report.rejected, report.summary()
    got = table(con, f"select * from {OBJECTS} order by key, is_latest desc")
    assert {r["inventory_date"].isoformat() for r in got} == {"2026-11-28"}  # only the newest report
    assert [r["key"] for r in got] == [
        "llm-pretrain/run-040/checkpoints/step 00009000/model.safetensors",
        "llm-pretrain/run-041/checkpoints/step 00001000/model.safetensors",
        "llm-pretrain/run-041/checkpoints/step 00002000/model.safetensors",
        "llm-pretrain/run-041/checkpoints/step 00002000/model.safetensors",
        "llm-pretrain/run-041/config.json",
        "llm-pretrain/run-041/notes/café menu.txt",
        "llm-pretrain/run-042/ckpt/epoch=3-step=1500.ckpt",
        "vision/vit+large/run-007/best_model.pt",
    ]
    marker, first, current, noncurrent = got[0], got[1], got[2], got[3]
    assert marker["is_delete_marker"] and marker["size_bytes"] is None and marker["etag"] is None
    assert (current["is_latest"], noncurrent["is_latest"]) == (True, False)
    assert current["version_id"] == "x7QeLkq0p2bM1c6tZ3RbN"
    assert first["size_bytes"] == 26 * GIB
    assert first["last_modified"] == datetime(2026, 9, 1, 4, 10, 11)
    assert first["etag"] == "d41d8cd98f00b204e9800998ecf8427e-3328" and first["is_multipart"]
    assert (
        first["checksum_algorithm"] == "CRC64NVME" and first["checksum"] is None
    )  # inventories hold no values
    assert first["storage_class"] == "STANDARD" and first["encryption_status"] == "SSE-S3"
    assert (first["store"], first["bucket"], first["resource_id"], first["region_id"]) == (
        "s3",
        "acme-ckpt",
        "acme-ckpt",
        "us-east-1",
    )
    assert first["inventory_at"] == datetime(2026, 11, 28, 1, 0)
    kms = next(r for r in got if r["key"].endswith(".ckpt"))
    assert kms["encryption_status"] == "SSE-KMS"
    manifest = next(r for r in table(con, "select * from ingest_files") if r["uri"].endswith("manifest.json"))
    assert manifest["uri"].endswith("ckpt-daily/2026-11-28T01-00Z/manifest.json")
    assert (manifest["status"], manifest["rows"]) == ("loaded", 8)
    con.close()


def test_checkpoint_lineage_steps_and_milestones_in_the_marts(tmp_path: Path) -> None:
    copy_fixture_report(tmp_path / "landing" / "inventory")
    con, config = _open(
        tmp_path,
        "  - {name: ckpt, kind: s3_inventory, uri: landing/inventory/}\n",
        CKPT_PATTERN + 'datasets:\n  - "s3://acme-ckpt/vision/"\n',
    )
    run_ingest(con, config)
    build_storage_marts(con)
    objs = {(r["key"], r["is_latest"]): r for r in table(con, "select * from storage_objects_current")}
    assert len(objs) == 7  # the delete marker is not an object
    step = {k: r["step"] for (k, _), r in objs.items()}
    assert step["llm-pretrain/run-041/checkpoints/step 00002000/model.safetensors"] == 2000
    assert step["llm-pretrain/run-042/ckpt/epoch=3-step=1500.ckpt"] == 1500  # step= wins over epoch=
    assert step["llm-pretrain/run-041/config.json"] is None
    r = objs[("vision/vit+large/run-007/best_model.pt", True)]
    # a checkpoint pattern wins over a dataset root: never both
    assert (r["role"], r["ckpt_project"], r["run_id"], r["dataset"]) == (
        "checkpoint",
        "vision",
        "vit+large",
        None,
    )
    assert r["run_prefix"] == "s3://acme-ckpt/vision/vit+large/"
    ck = table(
        con,
        "select run_id, step, storage_class, objects, size_bytes, step_rank, is_milestone from storage_checkpoints "
        "order by run_id, step nulls first",
    )
    assert [(c["run_id"], c["step"], c["objects"], c["step_rank"]) for c in ck] == [
        ("run-041", None, 2, None),  # config.json and the notes: files outside any step
        ("run-041", 1000, 1, 2),
        ("run-041", 2000, 2, 1),  # the current and the noncurrent version: both are stored, both bill
        ("run-042", 1500, 1, 1),
        ("vit+large", None, 1, None),
    ]
    assert [c["is_milestone"] for c in ck][-1] is True  # best_model.pt
    con.close()


def test_a_parquet_report_reads_its_own_column_names_and_raw_keys(tmp_path: Path) -> None:
    base = tmp_path / "landing" / "inv" / "acme-data" / "pq"
    (base / "data").mkdir(parents=True)
    (base / "2026-11-28T01-00Z").mkdir()
    data = base / "data" / "part-0.parquet"
    c = duckdb.connect()
    c.execute(
        "copy (select * from (values ('acme-data', 'datasets/a b+c/x.bin', null::varchar, true, false, "
        "5368709120::bigint, timestamptz '2026-09-01 00:00:00+00', 'abc-2', 'STANDARD', true)) "
        "t(bucket, key, version_id, is_latest, is_delete_marker, size, last_modified_date, e_tag, "
        "storage_class, is_multipart_uploaded)) to $p (format parquet)",
        {"p": str(data)},
    )
    c.close()
    blob = data.read_bytes()
    manifest = {
        "sourceBucket": "acme-data",
        "destinationBucket": "arn:aws:s3:::acme-inventory",
        "fileFormat": "Parquet",
        "fileSchema": "message s3.inventory { required binary bucket (STRING); required binary key (STRING); "
        "optional int64 size; optional int64 last_modified_date (TIMESTAMP(MILLIS,true)); optional binary "
        "e_tag (STRING); optional binary storage_class (STRING); optional boolean is_multipart_uploaded;}",
        "creationTimestamp": "1795827600000",
        "files": [
            {
                "key": "acme-data/pq/data/part-0.parquet",
                "size": len(blob),
                "MD5checksum": hashlib.md5(blob).hexdigest(),
            }
        ],  # noqa: S324
    }
    (base / "2026-11-28T01-00Z" / "manifest.json").write_text(json.dumps(manifest))
    con, config = _open(tmp_path, "  - {name: data, kind: s3_inventory, uri: landing/inv/}\n")
    report = run_ingest(con, config)
    assert not report.rejected, report.summary()
    got = table(con, "select key, size_bytes, etag, is_latest, last_modified from storage_objects")
    assert got == [
        {
            "key": "datasets/a b+c/x.bin",  # Parquet keys are not URL-encoded: '+' stays a plus
            "size_bytes": 5 * GIB,
            "etag": "abc-2",
            "is_latest": True,
            "last_modified": datetime(2026, 9, 1),
        }
    ]
    con.close()


def test_a_newer_report_supersedes_the_older_one_and_old_snapshots_are_pruned(tmp_path: Path) -> None:
    inv = tmp_path / "landing" / "inventory"
    objs = [{"key": "a/run-1/step_1/x.pt", "size": GIB}]
    write_report(inv, "acme-ckpt", "2026-11-26T01-00Z", objs)
    con, config = _open(
        tmp_path, "  - {name: ckpt, kind: s3_inventory, uri: landing/inventory/}\n", CKPT_PATTERN
    )
    assert run_ingest(con, config).rows_into("storage_objects") == 1
    assert run_ingest(con, config).rows_into("storage_objects") == 0  # the ledger has seen it
    write_report(inv, "acme-ckpt", "2026-11-27T01-00Z", [*objs, {"key": "a/run-1/step_2/x.pt", "size": GIB}])
    assert run_ingest(con, config).rows_into("storage_objects") == 2
    write_report(inv, "acme-ckpt", "2026-11-28T01-00Z", [{"key": "a/run-1/step_3/x.pt", "size": GIB}])
    assert run_ingest(con, config).rows_into("storage_objects") == 1
    # two snapshots kept (keep_inventories default 2); the marts see the newest only
    dates = table(con, "select distinct inventory_date::varchar as d from storage_objects order by 1")
    assert [d["d"] for d in dates] == ["2026-11-27", "2026-11-28"]
    build_storage_marts(con)
    assert [r["key"] for r in table(con, "select key from storage_objects_current")] == [
        "a/run-1/step_3/x.pt"
    ]
    con.close()


def test_the_inventory_of_each_bucket_and_configuration_is_chosen_separately(tmp_path: Path) -> None:
    inv = tmp_path / "landing" / "inventory"
    write_report(inv, "acme-a", "2026-11-27T01-00Z", [{"key": "x/1", "size": 10}])
    write_report(inv, "acme-b", "2026-11-20T01-00Z", [{"key": "y/1", "size": 20}, {"key": "y/2", "size": 5}])
    con, config = _open(tmp_path, "  - {name: all, kind: s3_inventory, uri: landing/inventory/}\n")
    run_ingest(con, config)
    got = table(
        con, "select bucket, count(*) as n, sum(size_bytes) as b from storage_objects group by 1 order by 1"
    )
    assert [(g["bucket"], g["n"], g["b"]) for g in got] == [("acme-a", 1, 10), ("acme-b", 2, 25)]
    con.close()


# ------------------------------------------------------------------------------------------- bad input


def _good_then(tmp_path: Path) -> tuple[duckdb.DuckDBPyConnection, object, Path]:
    """A good acme-ckpt report loaded, plus a second source's good report in the same landing zone."""
    inv = tmp_path / "landing" / "inventory"
    write_report(inv, "acme-ckpt", "2026-11-27T01-00Z", [{"key": "p/run-1/step_1/x.pt", "size": GIB}])
    write_report(tmp_path / "landing" / "other", "acme-other", "2026-11-27T01-00Z", [{"key": "k", "size": 7}])
    con, config = _open(
        tmp_path,
        "  - {name: ckpt, kind: s3_inventory, uri: landing/inventory/}\n"
        "  - {name: other, kind: s3_inventory, uri: landing/other/}\n",
    )
    assert not run_ingest(con, config).rejected
    return con, config, inv


def _assert_previous_kept(con: duckdb.DuckDBPyConnection) -> None:
    got = table(con, "select bucket, key, inventory_date::varchar as d from storage_objects order by bucket")
    assert got == [
        {"bucket": "acme-ckpt", "key": "p/run-1/step_1/x.pt", "d": "2026-11-27"},
        {"bucket": "acme-other", "key": "k", "d": "2026-11-27"},
    ]


def _rejected(report: object) -> str:
    rejected = report.rejected  # type: ignore[attr-defined]
    assert len(rejected) == 1, report.summary()  # type: ignore[attr-defined]
    assert rejected[0].source == "ckpt"  # the other source still loaded
    return rejected[0].error or ""


def test_a_manifest_naming_a_missing_data_file_is_refused_and_the_previous_inventory_stays(
    tmp_path: Path,
) -> None:
    con, config, inv = _good_then(tmp_path)
    manifest = write_report(
        inv, "acme-ckpt", "2026-11-28T01-00Z", [{"key": "p/run-1/step_2/x.pt", "size": GIB}]
    )
    doc = json.loads(manifest.read_text())
    (inv / doc["files"][0]["key"]).unlink()
    error = _rejected(run_ingest(con, config))
    assert str(manifest) in error
    assert "files[0]: data file 'acme-ckpt/daily/data/" in error and "not found" in error
    _assert_previous_kept(con)
    row = table(con, "select status, error from ingest_files where uri = $u", {"u": str(inv.resolve())})[0]
    assert row["status"] == "rejected" and "not found" in row["error"]
    con.close()


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("p/run-1/step_2/bad%zzkey.pt", "bad%zzkey.pt"),  # a % that starts no %XX escape
        ("p/run-1/step_2/caf%E9.pt", "caf%E9.pt"),  # Latin-1 bytes: not UTF-8 once decoded
    ],
)
def test_a_mis_encoded_key_is_refused_with_its_line_and_column(
    tmp_path: Path, key: str, problem: str
) -> None:
    con, config, inv = _good_then(tmp_path)
    lines = [
        '"acme-ckpt","p/run-1/step_2/ok.pt","10","2026-09-01T00:00:00.000Z","abc","STANDARD","false"',
        f'"acme-ckpt","{key}","10","2026-09-01T00:00:00.000Z","abc","STANDARD","false"',
    ]
    manifest = write_report(inv, "acme-ckpt", "2026-11-28T01-00Z", [], raw_lines=lines)
    data_key = json.loads(manifest.read_text())["files"][0]["key"]
    error = _rejected(run_ingest(con, config))
    assert error.startswith(f"{data_key}:2: column 'Key': expected a URL-encoded key")
    assert problem in error and str(manifest) in error
    _assert_previous_kept(con)
    con.close()


def test_a_size_that_is_not_a_number_is_refused_with_its_line(tmp_path: Path) -> None:
    con, config, inv = _good_then(tmp_path)
    lines = [
        '"acme-ckpt","a","10","2026-09-01T00:00:00.000Z","abc","STANDARD","false"',
        '"acme-ckpt","b","11","2026-09-01T00:00:00.000Z","abc","STANDARD","false"',
        '"acme-ckpt","c","12 KB","2026-09-01T00:00:00.000Z","abc","STANDARD","false"',
    ]
    write_report(inv, "acme-ckpt", "2026-11-28T01-00Z", [], raw_lines=lines)
    error = _rejected(run_ingest(con, config))
    assert ":3: column 'Size': expected a size in bytes, found '12 KB'" in error
    _assert_previous_kept(con)
    con.close()


def test_a_manifest_that_is_not_json_is_refused_with_its_line(tmp_path: Path) -> None:
    con, config, inv = _good_then(tmp_path)
    manifest = write_report(inv, "acme-ckpt", "2026-11-28T01-00Z", [{"key": "z", "size": 1}])
    manifest.write_text('{\n  "sourceBucket": "acme-ckpt",\n  "files": [\n')
    error = _rejected(run_ingest(con, config))
    assert error.startswith(f"{manifest}:4: manifest is not valid JSON")
    _assert_previous_kept(con)
    con.close()


def test_a_truncated_data_file_fails_its_manifest_checksum(tmp_path: Path) -> None:
    con, config, inv = _good_then(tmp_path)
    manifest = write_report(
        inv, "acme-ckpt", "2026-11-28T01-00Z", [{"key": f"k{i}", "size": i} for i in range(500)]
    )
    data = inv / json.loads(manifest.read_text())["files"][0]["key"]
    blob = data.read_bytes()
    data.write_bytes(blob[: len(blob) // 2])
    error = _rejected(run_ingest(con, config))
    assert str(manifest) in error and "(truncated or replaced)" in error
    # the same bytes with the manifest's size but other content: the MD5 says so
    data.write_bytes(
        gzip.compress(b'"acme-ckpt","x","1","2026-09-01T00:00:00.000Z","e","STANDARD","false"\n')
    )
    doc = json.loads(manifest.read_text())
    doc["files"][0]["size"] = data.stat().st_size
    manifest.write_text(json.dumps(doc))
    error = _rejected(run_ingest(con, config))
    assert "differs from the manifest's" in error
    _assert_previous_kept(con)
    con.close()


def test_orc_reports_and_schemas_without_size_are_refused_clearly(tmp_path: Path) -> None:
    con, config, inv = _good_then(tmp_path)
    manifest = write_report(inv, "acme-ckpt", "2026-11-28T01-00Z", [], schema="Bucket, Key, ETag")
    assert "fileSchema lacks Size" in _rejected(run_ingest(con, config))
    doc = json.loads(manifest.read_text())
    doc["fileFormat"] = "ORC"
    manifest.write_text(json.dumps(doc))
    assert "ORC inventory reports are not supported" in _rejected(run_ingest(con, config))
    _assert_previous_kept(con)
    con.close()


def test_a_folder_without_manifests_is_refused(tmp_path: Path) -> None:
    (tmp_path / "landing" / "empty").mkdir(parents=True)
    con, config = _open(tmp_path, "  - {name: ckpt, kind: s3_inventory, uri: landing/empty/}\n")
    report = run_ingest(con, config)
    assert (
        report.rejected[0].error
        == f"{(tmp_path / 'landing' / 'empty').resolve()}: no inventory manifest.json found here"
    )
    con.close()


def test_unknown_options_and_bad_patterns_are_refused(tmp_path: Path) -> None:
    write_report(
        tmp_path / "landing" / "inventory", "acme-ckpt", "2026-11-28T01-00Z", [{"key": "k", "size": 1}]
    )
    with pytest.raises(ConfigError, match=r"sources\[0\]\.options\.keep: unknown key"):
        project(
            tmp_path, "  - {name: ckpt, kind: s3_inventory, uri: landing/inventory/, options: {keep: 3}}\n"
        )
    with pytest.raises(
        ConfigError, match=r"options\.keep_inventories: Input should be greater than or equal to 1"
    ):
        project(
            tmp_path,
            "  - {name: ckpt, kind: s3_inventory, uri: landing/inventory/, options: {keep_inventories: 0}}\n",
        )
    con, config = _open(
        tmp_path,
        "  - {name: ckpt, kind: s3_inventory, uri: landing/inventory/}\n",
        'checkpoints:\n  - "s3://acme-ckpt/{project}/**"\n',
    )
    error = run_ingest(con, config).rejected[0].error or ""
    assert "checkpoints[0]: 's3://acme-ckpt/{project}/**': a checkpoint pattern needs {run_id}" in error
    assert scalar(con, "select count(*) from storage_objects") == 0
    con.close()


# ------------------------------------------------------------------------------------------- from S3


def _upload_tree(s3: object, bucket: str, folder: Path, prefix: str = "") -> None:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            s3.upload_file(str(path), bucket, prefix + path.relative_to(folder).as_posix())  # type: ignore[attr-defined]


def test_a_report_delivered_to_s3_is_read_through_the_endpoint(tmp_path: Path, s3_server: str) -> None:
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.create_bucket(Bucket="acme-inventory-t1")
    local = tmp_path / "upload"
    copy_fixture_report(local)
    # S3 Inventory keys data files by the destination bucket's prefix: here, none
    for manifest in local.rglob("manifest.json"):
        doc = json.loads(manifest.read_text())
        assert doc["files"][0]["key"].startswith("acme-ckpt/ckpt-daily/data/")
    _upload_tree(s3, "acme-inventory-t1", local)
    for manifest in local.rglob("manifest.json"):  # the manifests name their destination bucket
        doc = json.loads(manifest.read_text())
        doc["destinationBucket"] = "arn:aws:s3:::acme-inventory-t1"
        key = manifest.relative_to(local).as_posix()
        s3.put_object(Bucket="acme-inventory-t1", Key=key, Body=json.dumps(doc).encode())
    con, config = _open(
        tmp_path,
        f"  - {{name: ckpt, kind: s3_inventory, uri: 's3://acme-inventory-t1/acme-ckpt/ckpt-daily/', "
        f"endpoint_url: '{s3_server}'}}\n",
    )
    report = run_ingest(con, config)
    assert not report.rejected, report.summary()
    assert scalar(con, "select count(*) from storage_objects") == 8
    assert (
        scalar(
            con, "select count(*) from storage_objects where key = 'vision/vit+large/run-007/best_model.pt'"
        )
        == 1
    )
    uri = "s3://acme-inventory-t1/acme-ckpt/ckpt-daily/2026-11-28T01-00Z/manifest.json"
    assert table(con, "select rows from ingest_files where uri = $u", {"u": uri}) == [{"rows": 8}]
    # the data file disappears from the destination bucket: the next report is refused, the inventory stays
    s3.delete_object(
        Bucket="acme-inventory-t1",
        Key="acme-ckpt/ckpt-daily/data/5b2e9d41-7f60-4c1a-a3d8-91e4c0b7f2a6.csv.gz",
    )
    doc = json.loads((local / "acme-ckpt/ckpt-daily/2026-11-28T01-00Z/manifest.json").read_text())
    doc["destinationBucket"] = "arn:aws:s3:::acme-inventory-t1"
    doc["creationTimestamp"] = "1795914000000"
    s3.put_object(
        Bucket="acme-inventory-t1",
        Key="acme-ckpt/ckpt-daily/2026-11-29T01-00Z/manifest.json",
        Body=json.dumps(doc).encode(),
    )
    error = run_ingest(con, config).rejected[0].error or ""
    assert error.startswith(
        "s3://acme-inventory-t1/acme-ckpt/ckpt-daily/2026-11-29T01-00Z/manifest.json: files[0]"
    )
    assert "cannot be read" in error
    assert scalar(con, "select count(*) from storage_objects") == 8
    con.close()


def test_a_copied_report_finds_its_data_folder(tmp_path: Path) -> None:
    """A report copied out of its bucket keeps `<config>/data/` beside the dated folders; keys still resolve."""
    dst = tmp_path / "landing" / "ckpt"
    shutil.copytree(copy_fixture_report(tmp_path / "tree"), dst)
    con, config = _open(
        tmp_path, "  - {name: ckpt, kind: s3_inventory, uri: landing/ckpt/2026-11-28T01-00Z/manifest.json}\n"
    )
    report = run_ingest(con, config)
    assert not report.rejected, report.summary()
    assert scalar(con, "select count(*) from storage_objects") == 8
    con.close()


def test_an_unchanged_rerun_reports_the_inventory_unchanged_and_keeps_its_ledger_rows(tmp_path: Path) -> None:
    inv = tmp_path / "landing" / "inventory"
    write_report(
        inv, "acme-ckpt", "2026-11-26T01-00Z", [{"key": "a/x.pt", "size": GIB}, {"key": "b", "size": 1}]
    )
    con, config = _open(tmp_path, "  - {name: ckpt, kind: s3_inventory, uri: landing/inventory/}\n")
    first = run_ingest(con, config)
    assert [(o.status, o.rows) for o in first.outcomes] == [("loaded", 2)]
    ledger = "select uri, status, rows, loaded_at from ingest_files order by uri"
    before = table(con, ledger)
    assert [(r["status"], r["rows"]) for r in before] == [
        ("loaded", 2),
        ("loaded", 2),
    ]  # the source, the report
    again = run_ingest(con, config)
    assert [(o.status, o.rows) for o in again.outcomes] == [("unchanged", 0)]
    assert "0 file(s) loaded (0 rows), 1 unchanged" in again.summary()
    assert table(con, ledger) == before
    assert scalar(con, f"select count(*) from {OBJECTS}") == 2
    con.close()
