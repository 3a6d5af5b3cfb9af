"""Small CUR 2.0 / legacy CUR exports in their real delivery layouts, for the billing tests.

`Cur2Export` writes `data/BILLING_PERIOD=YYYY-MM/<export>-0000N.csv.gz|.parquet` and the
`metadata/BILLING_PERIOD=YYYY-MM/<export>-Manifest.json` AWS Data Exports writes after the data; every
line is one hour of one resource, so totals are easy to state. With `parquet=True` the parts are Parquet
typed as Data Exports writes them: timestamps, DOUBLE money and quantities, and `product` /
`resource_tags` as MAP(VARCHAR, VARCHAR) columns (CSV carries those maps as JSON text).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

CUR2_HEADER = [
    "identity_line_item_id", "identity_time_interval", "bill_bill_type", "bill_billing_period_start_date",
    "bill_billing_period_end_date", "bill_payer_account_id", "line_item_line_item_type",
    "line_item_usage_start_date", "line_item_usage_end_date", "line_item_usage_account_id",
    "line_item_product_code", "line_item_usage_type", "line_item_resource_id", "line_item_usage_amount",
    "line_item_currency_code", "line_item_unblended_rate", "line_item_unblended_cost",
    "pricing_public_on_demand_cost", "pricing_unit", "product", "product_instance_type", "resource_tags",
    "savings_plan_savings_plan_a_r_n", "savings_plan_savings_plan_effective_cost",
    "split_line_item_parent_resource_id", "split_line_item_split_cost",
]  # fmt: skip


def line(
    resource: str,
    hour: datetime,
    cost: str,
    *,
    kind: str = "Usage",
    tags: dict[str, str] | None = None,
    currency: str = "USD",
    line_id: str | None = None,
    sp_effective: str = "",
    split_parent: str = "",
    period_start: datetime | None = None,
    instance_type: str = "p4d.24xlarge",
) -> dict[str, str]:
    start = period_start or hour.replace(day=1, hour=0)
    end = (start + timedelta(days=32)).replace(day=1)
    iso = "%Y-%m-%dT%H:%M:%SZ"
    return {
        "identity_line_item_id": line_id or f"{resource}-{hour:%Y%m%d%H}-{kind}",
        "identity_time_interval": f"{hour.strftime(iso)}/{(hour + timedelta(hours=1)).strftime(iso)}",
        "bill_bill_type": "Anniversary",
        "bill_billing_period_start_date": start.strftime(iso),
        "bill_billing_period_end_date": end.strftime(iso),
        "bill_payer_account_id": "111122223333",
        "line_item_line_item_type": kind,
        "line_item_usage_start_date": hour.strftime(iso),
        "line_item_usage_end_date": (hour + timedelta(hours=1)).strftime(iso),
        "line_item_usage_account_id": "444455556666",
        "line_item_product_code": "AmazonEC2",
        "line_item_usage_type": f"USE1-BoxUsage:{instance_type}",
        "line_item_resource_id": resource,
        "line_item_usage_amount": "1",
        "line_item_currency_code": currency,
        "line_item_unblended_rate": cost,
        "line_item_unblended_cost": cost,
        "pricing_public_on_demand_cost": cost,
        "pricing_unit": "Hrs",
        "product": json.dumps({"product_name": "Amazon Elastic Compute Cloud", "region_code": "us-east-1"}),
        "product_instance_type": instance_type,
        "resource_tags": json.dumps(tags or {}),
        "savings_plan_savings_plan_a_r_n": "arn:aws:savingsplans::111122223333:savingsplan/sp-1"
        if sp_effective
        else "",
        "savings_plan_savings_plan_effective_cost": sp_effective,
        "split_line_item_parent_resource_id": split_parent,
        "split_line_item_split_cost": cost if split_parent else "",
    }


def csv_bytes(rows: list[dict[str, str]], header: list[str] = CUR2_HEADER, gz: bool = True) -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=header, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    data = buf.getvalue().encode("utf-8")
    return gzip.compress(data, mtime=0) if gz else data


# CUR 2.0 Parquet column types (the rest are VARCHAR); empty CSV fields are NULL in Parquet
CUR2_PARQUET_TYPES = {
    "bill_billing_period_start_date": "TIMESTAMP", "bill_billing_period_end_date": "TIMESTAMP",
    "line_item_usage_start_date": "TIMESTAMP", "line_item_usage_end_date": "TIMESTAMP",
    "line_item_usage_amount": "DOUBLE",
    "line_item_unblended_cost": "DOUBLE", "pricing_public_on_demand_cost": "DOUBLE",
    "savings_plan_savings_plan_effective_cost": "DOUBLE", "split_line_item_split_cost": "DOUBLE",
    "product": "MAP(VARCHAR, VARCHAR)", "resource_tags": "MAP(VARCHAR, VARCHAR)",
}  # fmt: skip


def parquet_file(rows: list[dict[str, str]], path: Path, header: list[str] = CUR2_HEADER) -> None:
    """Write the rows as a CUR 2.0 Parquet file (typed columns, MAPs for product and resource_tags)."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(
            "create table t (" + ", ".join(f'"{c}" VARCHAR' for c in header) + ")"  # noqa: S608 - test data
        )
        con.executemany(
            "insert into t values (" + ", ".join("?" for _ in header) + ")",
            [[r.get(c) or None for c in header] for r in rows],
        )
        cols = []
        for c in header:
            kind = CUR2_PARQUET_TYPES.get(c, "VARCHAR")
            if kind.startswith("MAP"):
                cols.append(f'json_transform("{c}", \'"{kind}"\') as "{c}"')
            elif kind == "TIMESTAMP":
                cols.append(f'cast(cast("{c}" as timestamptz) at time zone \'UTC\' as timestamp) as "{c}"')
            else:
                cols.append(f'cast("{c}" as {kind}) as "{c}"')
        con.execute(f"copy (select {', '.join(cols)} from t) to '{path}' (format parquet)")  # noqa: S608
    finally:
        con.close()


def hours(resource: str, start: datetime, n: int, cost: str, **kw: object) -> list[dict[str, str]]:
    return [line(resource, start + timedelta(hours=i), cost, **kw) for i in range(n)]  # type: ignore[arg-type]


def total(rows: list[dict[str, str]]) -> Decimal:
    return sum((Decimal(r["line_item_unblended_cost"]) for r in rows), Decimal(0))


@dataclass
class Cur2Export:
    root: Path  # the source's uri (s3 prefix or folder)
    name: str = "cur2"
    parquet: bool = False  # Parquet parts (MAP columns) instead of CSV.gz

    def data_dir(self, period: str) -> Path:
        return self.root / self.name / "data" / f"BILLING_PERIOD={period}"

    def manifest_path(self, period: str) -> Path:
        return self.root / self.name / "metadata" / f"BILLING_PERIOD={period}" / f"{self.name}-Manifest.json"

    def deliver(
        self,
        period: str,
        parts: list[list[dict[str, str]]],
        execution: str,
        *,
        subfolder: str | None = None,
        manifest: bool = True,
        extra_listed: list[str] | None = None,
    ) -> list[Path]:
        """Write the parts (overwrite mode, or into `subfolder` for create-new mode), then the manifest."""
        folder = self.data_dir(period) / subfolder if subfolder else self.data_dir(period)
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for i, rows in enumerate(parts, 1):
            if self.parquet:
                p = folder / f"{self.name}-{i:05d}.snappy.parquet"
                parquet_file(rows, p)
            else:
                p = folder / f"{self.name}-{i:05d}.csv.gz"
                p.write_bytes(csv_bytes(rows))
            paths.append(p)
        if manifest:
            keys = [f"s3://bucket/exports/{p.relative_to(self.root).as_posix()}" for p in paths]
            keys += [
                f"s3://bucket/exports/{self.name}/data/BILLING_PERIOD={period}/{x}"
                for x in extra_listed or []
            ]
            y, m = period.split("-")
            doc = {
                "executionId": execution,
                "billingPeriod": {"start": f"{y}-{m}-01T00:00:00.000Z"},
                "dataFiles": keys,
            }
            mp = self.manifest_path(period)
            mp.parent.mkdir(parents=True, exist_ok=True)
            mp.write_text(json.dumps(doc), encoding="utf-8")
        return paths
