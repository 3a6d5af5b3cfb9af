"""The storage rules end to end, from real inventories, listings (moto's S3 server) and FOCUS bills:
the same bucket read two ways gives the same findings, copies uploaded with different part sizes are proven by
checksums or only suspected, prices come from the bill before the config, and no byte is priced twice."""

from __future__ import annotations

import csv
import json
import os
import time
import urllib.parse
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import polars as pl
import pytest

from rules import Window, get_rule
from tests.helpers.billing_exports import Cur2Export, line
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.storage import GIB, build_storage_marts, project, run_ingest, table, write_report

MIB = 1024 * 1024
STORAGE_RULES = ("STO001", "STO002", "STO003", "STO004", "STO005")
DETECTED = datetime(2026, 12, 7, 6, 0)


def _jobs(con, jobs: list[tuple[str, str, str, str]]) -> None:
    """Scheduler records (job_id, job_name, state, ended_at): the jobs readers are tested elsewhere."""
    for job_id, name, state, ended in jobs:
        con.execute(
            "insert into jobs (job_id, scheduler, job_name, user, team, state, started_at, ended_at, source, "
            "x_source_file, x_file_id) values ($id, 'slurm', $name, 'ana', 'nlp', $state, "
            "$ended::timestamp - interval 10 hour, $ended, 'test', 'test', 'test')",
            {"id": job_id, "name": name, "state": state, "ended": ended},
        )


def _evaluate(con, window: Window, overrides: dict[str, dict] | None = None) -> dict[str, pl.DataFrame]:
    overrides = overrides or {}
    return {
        rid: get_rule(rid).evaluate(con, window, get_rule(rid).make_params(overrides.get(rid)), DETECTED)
        for rid in STORAGE_RULES
    }


# ---------------------------------------------------------------------------- inventory == listing


def _upload(
    s3, bucket: str, key: str, data: bytes, part_mib: int | None = None, checksum: str | None = None
) -> None:
    extra = {"ChecksumAlgorithm": checksum} if checksum else {}
    if part_mib is None:
        s3.put_object(Bucket=bucket, Key=key, Body=data, **extra)
        return
    up = s3.create_multipart_upload(
        Bucket=bucket, Key=key, **extra, **({"ChecksumType": "FULL_OBJECT"} if checksum else {})
    )
    parts = []
    size = part_mib * MIB
    for n, off in enumerate(range(0, len(data), size), start=1):
        r = s3.upload_part(
            Bucket=bucket,
            Key=key,
            UploadId=up["UploadId"],
            PartNumber=n,
            Body=data[off : off + size],
            **extra,
        )
        parts.append(
            {"PartNumber": n, "ETag": r["ETag"], **{k: v for k, v in r.items() if k == f"Checksum{checksum}"}}
        )
    s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=up["UploadId"], MultipartUpload={"Parts": parts}
    )


def _inventory_from_listing(s3, bucket: str, dest: str, stamp: str) -> None:
    """What S3 Inventory would deliver for `bucket` (CSV.gz, URL-encoded keys), built from its listing."""
    import gzip
    import hashlib
    import io

    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            etag = o["ETag"].strip('"')
            w.writerow([
                bucket, urllib.parse.quote_plus(o["Key"], safe="/"), o["Size"],
                o["LastModified"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z"), etag,
                o.get("StorageClass", "STANDARD"), "true" if "-" in etag else "false",
            ])  # fmt: skip
    blob = gzip.compress(buf.getvalue().encode(), mtime=0)
    s3.put_object(Bucket=dest, Key=f"{bucket}/daily/data/part-0.csv.gz", Body=blob)
    manifest = {
        "sourceBucket": bucket,
        "destinationBucket": f"arn:aws:s3:::{dest}",
        "fileFormat": "CSV",
        "fileSchema": "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass, IsMultipartUploaded",
        "creationTimestamp": str(int(datetime.now(UTC).timestamp() * 1000)),
        "files": [
            {
                "key": f"{bucket}/daily/data/part-0.csv.gz",
                "size": len(blob),
                "MD5checksum": hashlib.md5(blob).hexdigest(),
            }
        ],  # noqa: S324
    }
    s3.put_object(
        Bucket=dest, Key=f"{bucket}/daily/{stamp}/manifest.json", Body=json.dumps(manifest).encode()
    )


def test_the_same_bucket_read_by_inventory_and_by_listing_gives_the_same_findings(
    tmp_path: Path, s3_server: str
) -> None:
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    for b in ("same-ckpt-1", "same-data-1", "same-inv-1"):
        s3.create_bucket(Bucket=b)
    blob = os.urandom(64 * 1024)
    for step in range(1, 6):  # a completed run with 5 checkpoints, a failed one with 2
        _upload(s3, "same-ckpt-1", f"llm/run-ok/step {step * 100}/model.pt", blob + bytes([step]))
    for step in (1, 2):
        _upload(s3, "same-ckpt-1", f"llm/run-bad/step_{step}/model+opt.pt", blob + bytes([9, step]))
    for name in ("a", "b"):  # one dataset copied to a second folder with the same ETags
        for i in range(3):
            _upload(s3, "same-data-1", f"datasets/{name}/shard-{i}.tar", blob + bytes([i]))
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%MZ")
    for b in ("same-ckpt-1", "same-data-1"):
        _inventory_from_listing(s3, b, "same-inv-1", stamp)
    common = (
        'checkpoints:\n  - "s3://same-ckpt-1/{project}/{run_id}/**"\n'
        'datasets:\n  - "s3://same-data-1/datasets/"\n'
        "prices:\n  storage_gb_month: {STANDARD: 0.023, GLACIER_IR: 0.004}\n"
    )
    # the jobs ended after their checkpoints were written (just now, by this test)
    # the week evaluated is the one they ended in (on a Sunday evening that is already next week)
    ended_at = datetime.now(UTC) + timedelta(hours=1)
    ended = ended_at.strftime("%Y-%m-%d %H:%M:%S")
    by_way = {}
    for way, sources in {
        "inventory": (
            f"  - {{name: ckpt, kind: s3_inventory, uri: 's3://same-inv-1/same-ckpt-1/', endpoint_url: '{s3_server}', region: us-east-1}}\n"
            f"  - {{name: data, kind: s3_inventory, uri: 's3://same-inv-1/same-data-1/', endpoint_url: '{s3_server}', region: us-east-1}}\n"
        ),
        "listing": (
            f"  - {{name: ckpt, kind: s3_listing, uri: 's3://same-ckpt-1/', endpoint_url: '{s3_server}'}}\n"
            f"  - {{name: data, kind: s3_listing, uri: 's3://same-data-1/', endpoint_url: '{s3_server}'}}\n"
        ),
    }.items():
        folder = tmp_path / way
        folder.mkdir()
        config = project(folder, sources, common)
        con = new_warehouse(config.warehouse_path)
        report = run_ingest(con, config)
        assert not report.rejected, report.summary()
        _jobs(con, [("11", "run-ok", "COMPLETED", ended), ("12", "run-bad", "FAILED", ended)])
        build_storage_marts(con)
        window = Window.containing(ended_at.date())
        by_way[way] = _evaluate(con, window, {"STO002": {"min_dataset_gib": 0}})
        con.close()
    for rid in STORAGE_RULES:
        inv, lst = (by_way[w][rid].sort("resource_id") for w in ("inventory", "listing"))
        assert inv.drop("evidence").to_dicts() == lst.drop("evidence").to_dicts(), rid
        assert [json.loads(e) for e in inv["evidence"]] == [json.loads(e) for e in lst["evidence"]], rid
    found = {
        (rid, r["resource_id"], r["status"])
        for rid, f in by_way["listing"].items()
        for r in f.iter_rows(named=True)
    }
    assert found == {
        ("STO001", "s3://same-ckpt-1/llm/run-bad/", "waste"),
        ("STO001", "s3://same-ckpt-1/llm/run-ok/", "waste"),  # steps 100 and 200: older than the last 3
        ("STO002", "s3://same-data-1/datasets/b/", "waste"),
    }
    superseded = (
        by_way["listing"]["STO001"].filter(pl.col("resource_id").str.contains("run-ok")).row(0, named=True)
    )
    assert json.loads(superseded["evidence"])["steps_flagged"] == [100, 200]


# ---------------------------------------------------------------------------- part sizes and checksums


def test_copies_with_different_part_sizes_are_proven_by_checksums_or_only_suspected(
    tmp_path: Path, s3_server: str
) -> None:
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.create_bucket(Bucket="parts-data-1")
    shards = [os.urandom(12 * MIB + i) for i in range(2)]
    # the same bytes with 5 MiB and 8 MiB parts: ETags ...-3 and ...-2 (never equal), CRC32s equal
    for i, data in enumerate(shards):
        _upload(s3, "parts-data-1", f"datasets/orig/shard-{i}.tar", data, part_mib=5, checksum="CRC32")
    time.sleep(1.1)  # S3 times have second precision: the copy is strictly newer than the original
    for i, data in enumerate(shards):
        _upload(s3, "parts-data-1", f"datasets/copy/shard-{i}.tar", data, part_mib=8, checksum="CRC32")
    etags = {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket="parts-data-1")["Contents"]}
    assert etags["datasets/orig/shard-0.tar"].endswith('-3"') and etags["datasets/copy/shard-0.tar"].endswith(
        '-2"'
    )
    results = {}
    for checksums in (True, False):
        folder = tmp_path / f"checksums-{checksums}"
        folder.mkdir()
        config = project(
            folder,
            f"  - {{name: data, kind: s3_listing, uri: 's3://parts-data-1/', endpoint_url: '{s3_server}', "
            f"options: {{checksums: {str(checksums).lower()}}}}}\n",
            'datasets:\n  - "s3://parts-data-1/datasets/"\nprices:\n  storage_gb_month: {STANDARD: 0.023}\n',
        )
        con = new_warehouse(config.warehouse_path)
        assert not run_ingest(con, config).rejected
        build_storage_marts(con)
        window = Window.containing(datetime.now(UTC).date())
        frame = get_rule("STO002").evaluate(
            con, window, get_rule("STO002").make_params({"min_dataset_gib": 0})
        )
        results[checksums] = frame.to_dicts()
        con.close()
    proven, unproven = results[True], results[False]
    assert [(f["resource_id"], f["status"]) for f in proven] == [
        ("s3://parts-data-1/datasets/copy/", "waste")
    ]
    assert "match by checksum" in proven[0]["reason"]
    assert json.loads(proven[0]["evidence"])["matched_bytes"]["checksum"] == sum(len(s) for s in shards)
    expected = sum(len(s) for s in shards) / GIB * 0.023 * 7 / 30.44
    assert float(proven[0]["estimated_waste"]) == pytest.approx(expected, abs=1e-6)
    assert [(f["resource_id"], f["status"], float(f["estimated_waste"])) for f in unproven] == [
        ("s3://parts-data-1/datasets/copy/", "suspect", 0.0)
    ]
    assert json.loads(unproven[0]["evidence"])["matched_bytes"]["ambiguous"] == sum(len(s) for s in shards)


def test_a_file_system_copy_matches_an_s3_copy_by_sha256(tmp_path: Path, s3_server: str) -> None:
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.create_bucket(Bucket="fs-s3-data-1")
    data = [os.urandom(200_000 + i) for i in range(3)]
    root = tmp_path / "nfs" / "datasets" / "imagenet"
    root.mkdir(parents=True)
    for i, d in enumerate(data):
        _upload(s3, "fs-s3-data-1", f"datasets/imagenet/part-{i}.bin", d, checksum="SHA256")
        (root / f"part-{i}.bin").write_bytes(d)
        old = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
        os.utime(root / f"part-{i}.bin", (old, old))  # the NFS copy is older: it is the canonical one
    config = project(
        tmp_path,
        f"  - {{name: s3, kind: s3_listing, uri: 's3://fs-s3-data-1/', endpoint_url: '{s3_server}', options: {{checksums: true}}}}\n"
        "  - {name: nfs, kind: fs_scan, uri: nfs, options: {fingerprint: true, storage_class: NFS}}\n",
        f'datasets:\n  - "s3://fs-s3-data-1/datasets/"\n  - "{(tmp_path / "nfs" / "datasets").resolve()}/"\n'
        "prices:\n  storage_gb_month: {STANDARD: 0.023, NFS: 0.30}\n",
    )
    con = new_warehouse(config.warehouse_path)
    assert not run_ingest(con, config).rejected
    build_storage_marts(con)
    frame = get_rule("STO002").evaluate(
        con,
        Window.containing(datetime.now(UTC).date()),
        get_rule("STO002").make_params({"min_dataset_gib": 0}),
    )
    assert [(f["resource_id"], f["status"]) for f in frame.to_dicts()] == [
        ("s3://fs-s3-data-1/datasets/imagenet/", "waste")
    ]
    evidence = json.loads(frame["evidence"][0])
    assert evidence["canonical"] == f"{root.resolve()}/" and evidence["matched_bytes"]["checksum"] == sum(
        map(len, data)
    )
    con.close()


# ---------------------------------------------------------------------------- prices from the bill


FOCUS_HEADER = [
    "BilledCost", "EffectiveCost", "BillingCurrency", "ChargePeriodStart", "ChargePeriodEnd", "ResourceId",
    "ServiceCategory", "ServiceName", "ConsumedQuantity", "ConsumedUnit", "RegionId", "SkuPriceDetails", "Tags",
    "x_UsageType",
]  # fmt: skip


def _storage_bill(path: Path, lines: list[dict]) -> None:
    """A FOCUS file of daily storage lines (GB-Mo), read by the real FOCUS reader."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FOCUS_HEADER)
        w.writeheader()
        for line in lines:
            for day in range(30):
                start = datetime(2026, 11, 1) + timedelta(days=day)
                gb_months = line["gib"] / 30
                cost = round(gb_months * line["price"], 6)
                w.writerow({
                    "BilledCost": cost, "EffectiveCost": cost, "BillingCurrency": "USD",
                    "ChargePeriodStart": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "ChargePeriodEnd": (start + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "ResourceId": line["resource"], "ServiceCategory": "Storage",
                    "ServiceName": "Amazon Simple Storage Service", "ConsumedQuantity": round(gb_months, 6),
                    "ConsumedUnit": "GB-Mo", "RegionId": line.get("region", "us-east-1"),
                    "SkuPriceDetails": json.dumps(line["details"]) if line.get("details") else "",
                    "Tags": json.dumps({"team": "data"}), "x_UsageType": line.get("usage_type", ""),
                })  # fmt: skip


def test_prices_come_from_the_bill_per_bucket_and_class_else_from_the_config(tmp_path: Path) -> None:
    inv = tmp_path / "landing" / "inventory"
    objs = [
        {"key": "runs/run-x/step_1/m.pt", "size": 10 * GIB},
        {"key": "runs/run-x/step_2/m.pt", "size": 10 * GIB},
    ]
    for bucket in ("by-class", "by-usage", "average", "unbilled"):
        write_report(inv, bucket, "2026-11-28T01-00Z", [{**o, "storage_class": "STANDARD_IA"} for o in objs])
    _storage_bill(
        tmp_path / "landing" / "billing" / "bill.csv",
        [
            {
                "resource": "by-class",
                "gib": 1000,
                "price": 0.0138,
                "details": {"StorageClass": "STANDARD_IA"},
            },
            {
                "resource": "arn:aws:s3:::by-class",
                "gib": 500,
                "price": 0.021,
                "details": {"StorageClass": "STANDARD"},
            },
            {
                "resource": "by-usage",
                "gib": 800,
                "price": 0.0131,
                "usage_type": "USE1-TimedStorage-SIA-ByteHrs",
                "region": "eu-west-1",
            },
            {"resource": "average", "gib": 900, "price": 0.017},
        ],
    )
    config = project(
        tmp_path,
        "  - {name: bill, kind: focus, uri: landing/billing/}\n  - {name: inv, kind: s3_inventory, uri: landing/inventory/}\n",
        'checkpoints:\n  - "s3://*/runs/{run_id}/**"\nprices:\n  storage_gb_month: {STANDARD_IA: 0.0125, STANDARD: 0.023}\n',
    )
    con = new_warehouse(config.warehouse_path)
    report = run_ingest(con, config)
    assert not report.rejected, report.summary()
    _jobs(con, [("1", "run-x", "FAILED", "2026-11-20")])
    build_storage_marts(con)
    prices = {(r["bucket"], r["storage_class"]): r for r in table(con, "select * from storage_prices")}
    assert float(prices[("by-class", "STANDARD_IA")]["price_per_gb_month"]) == pytest.approx(0.0138, rel=1e-4)
    assert float(prices[("by-class", "STANDARD")]["price_per_gb_month"]) == pytest.approx(
        0.021, rel=1e-4
    )  # ARN ids
    assert prices[("by-class", "STANDARD_IA")]["price_source"] == "bill"
    assert (
        "GB-months of by-class storage charged 2026-11-01..2026-12-01"
        in prices[("by-class", "STANDARD_IA")]["price_detail"]
    )
    assert float(prices[("by-usage", "STANDARD_IA")]["price_per_gb_month"]) == pytest.approx(0.0131, rel=1e-4)
    assert prices[("by-usage", "STANDARD_IA")]["region_id"] == "eu-west-1"
    assert prices[("average", "STANDARD_IA")]["price_source"].startswith("bill (bucket average")
    assert float(prices[("average", "STANDARD_IA")]["price_per_gb_month"]) == pytest.approx(0.017, rel=1e-4)
    assert prices[("unbilled", "STANDARD_IA")]["price_source"] == "config"
    assert prices[("unbilled", "STANDARD_IA")]["price_detail"].endswith(
        "wastewatch.yaml: prices.storage_gb_month.STANDARD_IA"
    )
    frame = get_rule("STO001").evaluate(con, Window.iso_week("2026-W48"))
    waste = {
        r["resource_id"]: (float(r["estimated_waste"]), json.loads(r["evidence"])["price_source"])
        for r in frame.to_dicts()
    }
    week = 20 * 7 / 30.44
    assert waste["s3://by-class/runs/run-x/"] == (pytest.approx(week * 0.0138, rel=1e-4), "bill")
    assert waste["s3://by-usage/runs/run-x/"] == (pytest.approx(week * 0.0131, rel=1e-4), "bill")
    assert waste["s3://average/runs/run-x/"][0] == pytest.approx(week * 0.017, rel=1e-4)
    assert waste["s3://unbilled/runs/run-x/"] == (pytest.approx(week * 0.0125, abs=1e-6), "config")
    team = {r["resource_id"]: r["team"] for r in frame.to_dicts()}
    assert team["s3://by-class/runs/run-x/"] == "nlp"  # the run's job's team before the bucket's tag
    con.close()


def test_a_cur2_bill_prices_a_bucket_by_the_class_its_usage_type_names(tmp_path: Path) -> None:
    """CUR 2.0 keeps the usage type as line_item_usage_type and leaves SkuPriceDetails empty: the storage
    class of an S3 storage line comes from that usage type (USE1-TimedStorage-SIA-ByteHrs: STANDARD_IA)."""
    write_report(
        tmp_path / "landing" / "inventory",
        "cur2-bucket",
        "2026-11-28T01-00Z",
        [{"key": "runs/run-x/step_1/m.pt", "size": 10 * GIB, "storage_class": "STANDARD_IA"}],
    )
    storage = line("cur2-bucket", datetime(2026, 11, 1), "10.48", instance_type="")
    storage.update(
        line_item_product_code="AmazonS3",
        line_item_usage_type="USE1-TimedStorage-SIA-ByteHrs",
        line_item_usage_amount="800",
        pricing_unit="GB-Mo",
        line_item_usage_end_date="2026-12-01T00:00:00Z",
        product=json.dumps({"product_name": "Amazon Simple Storage Service", "region_code": "us-east-1"}),
        product_instance_type="",
    )
    Cur2Export(tmp_path / "landing" / "billing").deliver("2026-11", [[storage]], "exec-1")
    config = project(
        tmp_path,
        "  - {name: bill, kind: aws_cur2, uri: landing/billing/}\n"
        "  - {name: inv, kind: s3_inventory, uri: landing/inventory/}\n",
        "prices:\n  storage_gb_month: {STANDARD_IA: 0.0125}\n",
    )
    con = new_warehouse(config.warehouse_path)
    try:
        report = run_ingest(con, config)
        assert not report.rejected, report.summary()
        build_storage_marts(con)
        [price] = table(con, "select * from storage_prices where bucket = 'cur2-bucket'")
    finally:
        con.close()
    assert (price["storage_class"], price["price_source"]) == ("STANDARD_IA", "bill")
    assert float(price["price_per_gb_month"]) == pytest.approx(10.48 / 800, rel=1e-6)


# ---------------------------------------------------------------------------- precedence


def test_no_byte_is_priced_by_two_storage_rules_whatever_their_thresholds(tmp_path: Path) -> None:
    """Overlapping situations in one warehouse: a checkpoint under a dataset root, the same bytes copied
    to another dataset, old hot checkpoints of failed, finished and running runs, an incomplete upload, and old
    event and log files beside a run's checkpoints, inside a dataset and outside both (only the last STO005's)."""
    inv = tmp_path / "landing" / "inventory"
    old = datetime(2026, 8, 1)
    ck = []
    for run, steps in (("run-done", 6), ("run-fail", 3), ("run-live", 4)):
        for s in range(1, steps + 1):
            ck.append(
                {"key": f"proj/{run}/step_{s}/model.pt", "size": s * GIB, "modified": old + timedelta(days=s)}
            )
    ck.append({"key": "proj/run-done/step_0/best/model.pt", "size": GIB, "modified": old})
    ck.append({"key": "proj/run-fail/events.out.tfevents.1754006400.gpu-a", "size": GIB, "modified": old})
    write_report(inv, "prec-ckpt", "2026-11-28T01-00Z", ck)
    # the failed run's files, byte for byte, under a dataset root of another bucket
    write_report(
        inv,
        "prec-data",
        "2026-11-28T01-00Z",
        [
            {**o, "key": o["key"].replace("proj/run-fail", "datasets/fail-copy")}
            for o in ck
            if "run-fail" in o["key"]
        ]
        + [
            {"key": "datasets/fail-copy/prepare.log", "size": GIB, "modified": old},
            {"key": "tb/run-x/events.out.tfevents.1754006400.gpu-b", "size": 3 * GIB, "modified": old},
        ],
    )
    config = project(
        tmp_path,
        "  - {name: inv, kind: s3_inventory, uri: landing/inventory/}\n",
        'checkpoints:\n  - "s3://prec-ckpt/{project}/{run_id}/**"\n'
        # the checkpoint bucket is also a dataset root: its files are checkpoints, never dataset files
        'datasets:\n  - "s3://prec-ckpt/"\n  - "s3://prec-data/datasets/"\n'
        "prices:\n  storage_gb_month: {STANDARD: 0.023, GLACIER_IR: 0.004}\n",
    )
    con = new_warehouse(config.warehouse_path)
    assert not run_ingest(con, config).rejected
    _jobs(con, [("1", "run-done", "COMPLETED", "2026-08-20"), ("2", "run-fail", "FAILED", "2026-08-20")])
    con.execute(
        "insert into jobs (job_id, scheduler, job_name, state, started_at, source, x_source_file, x_file_id) "
        "values ('3', 'slurm', 'run-live', 'RUNNING', '2026-08-01', 't', 't', 't')"
    )
    build_storage_marts(con)
    objects = table(con, "select role, count(*) as n from storage_objects_current group by 1 order by 1")
    assert objects == [{"role": "checkpoint", "n": 15}, {"role": "dataset", "n": 5}, {"role": None, "n": 1}]
    run_bytes = {
        r["run_prefix"]: r["b"]
        for r in table(con, "select run_prefix, sum(size_bytes) as b from storage_checkpoints group by 1")
    }
    window = Window.iso_week("2026-W48")
    for keep_last in (1, 2, 3, 5, 10):
        for min_age in (1, 30, 90):
            found = _evaluate(
                con,
                window,
                {
                    "STO001": {"keep_last": keep_last},
                    "STO003": {"min_age_days": min_age},
                    "STO005": {"retention_days": min_age, "min_waste": 0},
                },
            )
            # STO005: only the event file under no checkpoint pattern and no dataset root
            [logs] = found["STO005"].to_dicts()
            assert (
                logs["resource_id"] == "s3://prec-data/" and json.loads(logs["evidence"])["bytes"] == 3 * GIB
            )
            # STO002: the copy's partner is a checkpoint folder, not a dataset: no duplicate of a dataset
            assert found["STO002"].height == 0
            sto001 = {r["resource_id"]: json.loads(r["evidence"]) for r in found["STO001"].to_dicts()}
            sto003 = {r["resource_id"]: json.loads(r["evidence"]) for r in found["STO003"].to_dicts()}
            for run, total in run_bytes.items():
                a, b = sto001.get(run), sto003.get(run)
                flagged = set(a["steps_flagged"]) if a else set()
                tiered = set(b["steps"]) if b else set()
                assert not flagged & tiered, (keep_last, min_age, run, flagged, tiered)
                priced = (a["bytes"] if a else 0) + (b["bytes"] if b else 0)
                assert priced <= total
            assert "s3://prec-ckpt/proj/run-fail/" in sto001  # all of a failed run, never tiered
            assert "s3://prec-ckpt/proj/run-fail/" not in sto003
            done = sto003.get("s3://prec-ckpt/proj/run-done/")
            if min_age <= 90:
                assert done is not None and set(done["steps"]) == {0, 6}  # the best and the final
            live = sto003.get("s3://prec-ckpt/proj/run-live/")
            assert live is not None and set(live["steps"]) == {1, 2, 3, 4}
            assert "s3://prec-ckpt/proj/run-live/" not in sto001
    con.close()
