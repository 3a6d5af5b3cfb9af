"""The bill's per-file partial aggregates (pipelines/transform/partials.py): `resources` (through
int_billed_resources) and `storage_prices` built night by night from what each file says equal, column for
column, what one build from the whole bill holds, through several files, a month delivered again (restated,
retagged), a late line that ties with another file's latest and a file gone from the bill."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import Config, load_config
from pipelines.ingest import ingest
from pipelines.transform import partials
from tests.helpers.billing_exports import csv_bytes, hours, line
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.marts import build_only
from tests.helpers.storage import GIB, write_report

BUCKET = "acme-ckpt"
# each resource's latest value of every attribute straight from the bill's lines, ties going to the largest
# value: what int_billed_resources held when it was built from every line in one statement
WHOLE_BILL = """
select
    resource_id,
    arg_max(provider_name, {'t': charge_period_start, 'v': provider_name}) as provider,
    arg_max(sub_account_id, {'t': charge_period_start, 'v': sub_account_id}) as account_id,
    arg_max(region_id, {'t': charge_period_start, 'v': region_id}) as region_id,
    arg_max(resource_name, {'t': charge_period_start, 'v': resource_name}) as resource_name,
    arg_max(resource_type, {'t': charge_period_start, 'v': resource_type}) as resource_type,
    arg_max(service_name, {'t': charge_period_start, 'v': service_name}) as service_name,
    arg_max(x_instance_type, {'t': charge_period_start, 'v': x_instance_type}) as instance_type,
    arg_max(x_gpu_count, {'t': charge_period_start, 'v': x_gpu_count}) as billed_gpu_count,
    arg_max(x_host, {'t': charge_period_start, 'v': x_host}) as host_tag,
    arg_max(team, {'t': charge_period_start, 'v': team}) as team,
    arg_max(project, {'t': charge_period_start, 'v': project}) as project,
    arg_max(owner, {'t': charge_period_start, 'v': owner}) as owner,
    arg_max(tags, {'t': charge_period_start, 'v': tags}) as tags,
    arg_max(billing_currency, {'t': charge_period_start, 'v': billing_currency}) as currency,
    min(charge_period_start) as first_seen,
    max(charge_period_end) as last_seen
from billing_line_items
where resource_id is not null and resource_id is distinct from commitment_discount_id
group by resource_id
"""
COMPARED = ("int_billed_resources", "resources", "storage_prices", *partials.PARTIALS)


def _storage(hour: datetime, cost: str, gb: str, usage_type: str, **kw: Any) -> dict[str, str]:
    row = line(BUCKET, hour, cost, instance_type="", line_id=f"{BUCKET}-{usage_type}-{hour:%Y%m%d%H}", **kw)
    row.update(
        line_item_usage_type=usage_type,
        line_item_product_code="AmazonS3",
        line_item_usage_amount=gb,
        pricing_unit="GB-Mo",
        product=json.dumps({"product_name": "Amazon Simple Storage Service", "region_code": "us-east-1"}),
    )
    return row


def _month(first: datetime, team: str, cost: str = "1.00") -> list[dict[str, str]]:
    """A month: a GPU instance's hours, two lines of one hour tagged differently (a tie inside the file), a
    bucket's storage in two classes."""
    return [
        *hours("i-gpu", first, 3, cost, tags={"team": team, "project": "llm"}),
        line("i-tie", first, "2.00", tags={"team": "b-" + team}, line_id=f"tie-b-{first:%m}"),
        line("i-tie", first, "2.00", tags={"team": "a-" + team}, line_id=f"tie-a-{first:%m}"),
        _storage(first, "2.30", "100", "USE1-TimedStorage-ByteHrs", tags={"team": team}),
        _storage(first, "1.25", "100", "USE1-TimedStorage-SIA-ByteHrs"),
    ]


def _project(tmp_path: Path) -> Config:
    (tmp_path / "landing" / "bill").mkdir(parents=True, exist_ok=True)
    write_report(
        tmp_path / "landing" / "inventory",
        BUCKET,
        "2026-11-20T01-00Z",
        [
            {"key": "a/1", "size": 10 * GIB, "storage_class": "STANDARD"},
            {"key": "a/2", "size": 5 * GIB, "storage_class": "STANDARD_IA"},
        ],
    )
    write_config(
        tmp_path,
        "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/bill/}\n"
        "  - {name: inv, kind: s3_inventory, uri: landing/inventory/}\n",
    )
    return load_config(tmp_path / "wastewatch.yaml")


def _deliver(tmp_path: Path, name: str, rows: list[dict[str, str]]) -> None:
    (tmp_path / "landing" / "bill" / name).write_bytes(csv_bytes(rows))


def _night(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    build_only(con, "resources", "storage_prices")


def _tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    return {t: con.execute(f"select * from {t} order by all").fetchall() for t in COMPARED}  # noqa: S608


def _rebuilt_whole(config: Config, tmp_path: Path, step: str) -> dict[str, list[tuple]]:
    """The same warehouse with its partial tables dropped, so every one is built from every file in one
    statement and the marts from those."""
    copy = tmp_path / f"whole-{step}.duckdb"
    shutil.copyfile(config.warehouse_path, copy)
    con = new_warehouse(copy)
    try:
        for name in partials.PARTIALS:
            con.execute(f"drop table {name}")
        con.execute("delete from int_mart_inputs")
        build_only(con, "resources", "storage_prices")
        return _tables(con)
    finally:
        con.close()


def _assert_same_as_whole(con: duckdb.DuckDBPyConnection, config: Config, tmp_path: Path, step: str) -> None:
    kept = _tables(con)
    assert (
        con.execute(f"select * from ({WHOLE_BILL}) order by all").fetchall() == kept["int_billed_resources"]
    )
    con.close()
    whole = _rebuilt_whole(config, tmp_path, step)
    for name in COMPARED:
        assert kept[name] == whole[name], (step, name)
        assert kept[name], (step, name)


def _value(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    return con.execute(sql).fetchall()[0][0]


def test_by_file_equals_a_build_from_the_whole_bill_through_redelivery_ties_and_removal(
    tmp_path: Path,
) -> None:
    config = _project(tmp_path)
    _deliver(tmp_path, "sep.csv.gz", _month(datetime(2026, 9, 1), "vision"))
    _deliver(tmp_path, "oct.csv.gz", _month(datetime(2026, 10, 1), "vision"))
    con = new_warehouse(config.warehouse_path)
    _night(con, config)
    files = dict(con.execute("select parse_filename(uri), file_id from ingest_files").fetchall())
    assert _value(con, "select team from resources where resource_id = 'i-tie'") == "b-vision"
    _assert_same_as_whole(con, config, tmp_path, "first")

    # nothing new: every partial kept
    con = new_warehouse(config.warehouse_path)
    assert all(s.kept for s in partials.refresh(con).values())

    # October delivered again, restated and retagged, with i-old's last hour; November new, with a late
    # charge of that same hour (billed in November) under another team: the two files' latest lines of
    # i-old tie, and the tie goes to the larger value whichever file is built first
    old = datetime(2026, 10, 1, 5)
    _deliver(
        tmp_path,
        "oct.csv.gz",
        [
            *_month(datetime(2026, 10, 1), "speech", cost="3.00"),
            line("i-old", old, "1.00", tags={"team": "alpha"}),
        ],
    )
    late = line(
        "i-old", old, "0.50", tags={"team": "zeta"}, period_start=datetime(2026, 11, 1), line_id="late"
    )
    _deliver(tmp_path, "nov.csv.gz", [*_month(datetime(2026, 11, 1), "vision"), late])
    ingest(con, config)
    stats = partials.refresh(con)
    files = dict(con.execute("select parse_filename(uri), file_id from ingest_files").fetchall())
    for st in stats.values():
        assert not st.full and st.files_rebuilt == sorted([files["oct.csv.gz"], files["nov.csv.gz"]])
        assert st.files_removed == []
    build_only(con, "resources", "storage_prices")
    assert _value(con, "select team from resources where resource_id = 'i-gpu'") == "vision"  # November's
    assert _value(con, "select team from resources where resource_id = 'i-old'") == "zeta"
    assert _value(
        con, "select price_per_gb_month from storage_prices where storage_class = 'STANDARD'"
    ) == Decimal("0.023")
    _assert_same_as_whole(con, config, tmp_path, "redelivered")

    # November gone from the bill: i-gpu's latest is October's again, and i-old's tie is gone with the late line
    (tmp_path / "landing" / "bill" / "nov.csv.gz").unlink()
    con = new_warehouse(config.warehouse_path)
    ingest(con, config)
    stats = partials.refresh(con)
    for st in stats.values():
        assert st.files_rebuilt == [] and st.files_removed == [files["nov.csv.gz"]]
    build_only(con, "resources", "storage_prices")
    assert _value(con, "select team from resources where resource_id = 'i-gpu'") == "speech"
    assert _value(con, "select team from resources where resource_id = 'i-old'") == "alpha"
    assert _value(con, "select last_seen from resources where resource_id = 'i-gpu'") == datetime(
        2026, 10, 1, 3
    )
    _assert_same_as_whole(con, config, tmp_path, "removed")
