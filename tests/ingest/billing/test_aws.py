"""AWS CUR values line by line: billed and effective cost per line item type (legacy CUR columns), CUR 2.0
Parquet with MAP columns, `resourceTags/user:` columns resolved through the `tags:` config, and the
Athena `year=/month=` folders.

Every expected figure is worked out by hand in the test from the CUR cost views (formats.md §2.4):
billed = NetUnblendedCost else UnblendedCost; effective = the amortised view per line item type.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb

from pipelines.config import load_config
from pipelines.ingest import IngestReport, ingest
from tests.helpers.billing_exports import Cur2Export, hours, line
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

LEGACY_HEADER = [
    "identity/LineItemId", "identity/TimeInterval", "bill/BillType", "bill/BillingPeriodStartDate",
    "bill/BillingPeriodEndDate", "bill/PayerAccountId", "lineItem/LineItemType", "lineItem/UsageStartDate",
    "lineItem/UsageEndDate", "lineItem/UsageAccountId", "lineItem/ProductCode", "lineItem/UsageType",
    "lineItem/Operation", "lineItem/ResourceId", "lineItem/UsageAmount", "lineItem/CurrencyCode",
    "lineItem/UnblendedRate", "lineItem/UnblendedCost", "lineItem/NetUnblendedCost",
    "pricing/publicOnDemandCost", "product/instanceType", "product/region",
    "reservation/ReservationARN", "reservation/EffectiveCost",
    "reservation/UnusedAmortizedUpfrontFeeForBillingPeriod", "reservation/UnusedRecurringFee",
    "savingsPlan/SavingsPlanARN", "savingsPlan/SavingsPlanEffectiveCost",
    "savingsPlan/TotalCommitmentToDate", "savingsPlan/UsedCommitment", "resourceTags/user:Team",
    "resourceTags/user:CostOwner",
]  # fmt: skip
RI = "arn:aws:ec2:us-east-1:111122223333:reserved-instances/ri-0123"
SP = "arn:aws:savingsplans::111122223333:savingsplan/sp-0456"


def legacy(
    n: int,
    kind: str,
    unblended: str,
    *,
    net: str = "",
    resource: str = "i-0a",
    ri: str = "",
    ri_effective: str = "",
    ri_unused_upfront: str = "",
    ri_unused_recurring: str = "",
    sp: str = "",
    sp_effective: str = "",
    sp_commitment: str = "",
    sp_used: str = "",
    team: str = "",
    cost_owner: str = "",
    start: str = "2024-11-02T10:00:00Z",
    end: str = "2024-11-02T11:00:00Z",
    period: tuple[str, str] = ("2024-11-01T00:00:00Z", "2024-12-01T00:00:00Z"),
) -> dict[str, str]:
    return {
        "identity/LineItemId": f"li-{n:03d}",
        "identity/TimeInterval": f"{start}/{end}",
        "bill/BillType": "Anniversary",
        "bill/BillingPeriodStartDate": period[0],
        "bill/BillingPeriodEndDate": period[1],
        "bill/PayerAccountId": "111122223333",
        "lineItem/LineItemType": kind,
        "lineItem/UsageStartDate": start,
        "lineItem/UsageEndDate": end,
        "lineItem/UsageAccountId": "444455556666",
        "lineItem/ProductCode": "AmazonEC2",
        "lineItem/UsageType": "USE1-BoxUsage:p4d.24xlarge",
        "lineItem/Operation": "RunInstances",
        "lineItem/ResourceId": resource,
        "lineItem/UsageAmount": "1",
        "lineItem/CurrencyCode": "USD",
        "lineItem/UnblendedRate": unblended,
        "lineItem/UnblendedCost": unblended,
        "lineItem/NetUnblendedCost": net,
        "pricing/publicOnDemandCost": unblended,
        "product/instanceType": "p4d.24xlarge",
        "product/region": "us-east-1",
        "reservation/ReservationARN": ri,
        "reservation/EffectiveCost": ri_effective,
        "reservation/UnusedAmortizedUpfrontFeeForBillingPeriod": ri_unused_upfront,
        "reservation/UnusedRecurringFee": ri_unused_recurring,
        "savingsPlan/SavingsPlanARN": sp,
        "savingsPlan/SavingsPlanEffectiveCost": sp_effective,
        "savingsPlan/TotalCommitmentToDate": sp_commitment,
        "savingsPlan/UsedCommitment": sp_used,
        "resourceTags/user:Team": team,
        "resourceTags/user:CostOwner": cost_owner,
    }


def legacy_csv(rows: list[dict[str, str]]) -> bytes:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=LEGACY_HEADER, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().encode()


def _run(tmp_path: Path, body: str) -> tuple[IngestReport, duckdb.DuckDBPyConnection]:
    write_config(tmp_path, body)
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    return ingest(con, config), con


# (line, expected billed, expected effective, expected charge category), each worked out by hand
LINE_TYPES = [
    # on-demand usage: as billed
    (legacy(1, "Usage", "3.06"), "3.06", "3.06", "Usage"),
    # usage with a private-rate discount: NetUnblendedCost (9.25) is the bill, and the effective cost
    (legacy(2, "Usage", "10.00", net="9.25"), "9.25", "9.25", "Usage"),
    # RI-covered hour: billed 0 (the RI fee bills it), effective = the RI's effective cost for the hour
    (legacy(3, "DiscountedUsage", "0", ri=RI, ri_effective="1.84"), "0", "1.84", "Usage"),
    # the RI's monthly fee: billed in full; effective only its unused part, 10.40 upfront + 7.36 recurring
    (
        legacy(4, "RIFee", "1324.80", ri=RI, ri_unused_upfront="10.40", ri_unused_recurring="7.36"),
        "1324.80",
        "17.76",
        "Purchase",
    ),
    # the RI's upfront payment: billed once; effective 0 (amortised into the covered hours)
    (legacy(5, "Fee", "8760.00", ri=RI, resource=""), "8760.00", "0", "Purchase"),
    # the SP's recurring fee: billed in full; effective = the unused commitment, 720.00 - 698.55
    (
        legacy(6, "SavingsPlanRecurringFee", "720.00", sp=SP, sp_commitment="720.00", sp_used="698.55"),
        "720.00",
        "21.45",
        "Purchase",
    ),
    # the SP's upfront fee: billed once; effective 0
    (legacy(7, "SavingsPlanUpfrontFee", "5000.00", sp=SP, resource=""), "5000.00", "0", "Purchase"),
    # SP-covered hour: billed at on-demand 4.10 (negated below); effective = the SP effective cost
    (legacy(8, "SavingsPlanCoveredUsage", "4.10", sp=SP, sp_effective="2.87"), "4.10", "2.87", "Usage"),
    (legacy(9, "SavingsPlanNegation", "-4.10", sp=SP), "-4.10", "0", "Usage"),
    # credits and refunds: as billed, in both views
    (legacy(10, "Credit", "-25.00", resource=""), "-25.00", "-25.00", "Credit"),
    (legacy(11, "Refund", "-12.34", resource=""), "-12.34", "-12.34", "Adjustment"),
    (legacy(12, "Tax", "3.21", resource=""), "3.21", "3.21", "Tax"),
]


def test_legacy_cur_billed_and_effective_cost_per_line_item_type(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "cur.csv").write_bytes(legacy_csv([case[0] for case in LINE_TYPES]))
    report, con = _run(tmp_path, "sources:\n  - {name: cur, kind: aws_cur, uri: landing/}\n")
    assert not report.rejected, report.summary()
    got = con.execute(
        # x_extra keeps the provider's fields under the file's own column names
        "select x_line_item_id, x_extra ->> 'lineItem/LineItemType', billed_cost, effective_cost, "
        "charge_category from billing_line_items order by x_line_item_id"
    ).fetchall()
    expected = [
        (c[0]["identity/LineItemId"], c[0]["lineItem/LineItemType"], Decimal(c[1]), Decimal(c[2]), c[3])
        for c in LINE_TYPES
    ]
    assert got == expected
    # totals by hand: billed 3.06 + 9.25 + 0 + 1324.80 + 8760.00 + 720.00 + 5000.00 + 4.10 - 4.10 - 25.00
    # - 12.34 + 3.21 = 15782.98; effective 3.06 + 9.25 + 1.84 + 17.76 + 0 + 21.45 + 0 + 2.87 + 0 - 25.00
    # - 12.34 + 3.21 = 22.10
    totals = con.execute("select sum(billed_cost), sum(effective_cost) from billing_line_items").fetchall()
    assert totals == [(Decimal("15782.980000"), Decimal("22.100000"))]
    ledger = con.execute(
        "select rows, billed_cost_sum, file_billed_cost_sum, effective_cost_sum, file_effective_cost_sum "
        "from ingest_files"
    ).fetchall()
    assert ledger == [
        (12, Decimal("15782.980000"), Decimal("15782.980000"), Decimal("22.100000"), Decimal("22.100000"))
    ]
    # the commitment columns name the RI / SP they came from
    commitments = dict(
        con.execute(
            "select x_line_item_id, commitment_discount_type from billing_line_items "
            "where commitment_discount_id is not null"
        ).fetchall()
    )
    assert {k for k, v in commitments.items() if v == "Reserved Instance"} == {"li-003", "li-004", "li-005"}
    assert {k for k, v in commitments.items() if v == "Savings Plan"} == {
        "li-006",
        "li-007",
        "li-008",
        "li-009",
    }
    con.close()


NOV = datetime(2026, 11, 2)


def _cur2_rows() -> list[dict[str, str]]:
    rows = hours(
        "i-a", NOV, 3, "3.25", tags={"user_team": "nlp", "user_project": "llm", "aws_created_by": "x"}
    )
    rows += hours("i-b", NOV, 2, "1.5", tags={"user:Team": "vision"}, instance_type="g5.xlarge")
    rows += [line("vol-1", NOV, "0.1", tags={})]
    for r in rows[:3]:
        r["product"] = json.dumps(
            {
                "product_name": "Amazon Elastic Compute Cloud",
                "region_code": "us-east-1",
                "location": "US East (N. Virginia)",
            }
        )
    rows[-1]["product"] = json.dumps({"servicename": "Amazon Elastic Block Store", "region": "eu-west-1"})
    rows[-1]["product_instance_type"] = ""
    return rows


LANDED = (
    "select resource_id, billed_cost, effective_cost, tags, team, project, json(x_tags_raw)::varchar, service_name, "
    "region_id, region_name, x_instance_type, charge_period_start from billing_line_items order by all"
)


def test_cur2_parquet_map_columns_land_tags_and_product_fields(tmp_path: Path) -> None:
    """CUR 2.0 Parquet carries `resource_tags` and `product` as MAP(VARCHAR, VARCHAR): the tags are
    normalised and resolved, the product map fills service, region and location; and the Parquet gives
    the same rows as the CSV.gz export of the same lines (where the maps are JSON text)."""
    tables = {}
    for fmt in ("parquet", "csv"):
        root = tmp_path / fmt
        export = Cur2Export(root / "landing", parquet=fmt == "parquet")
        [part] = export.deliver("2026-11", [_cur2_rows()], "e1")
        assert part.name.endswith(".snappy.parquet" if fmt == "parquet" else ".csv.gz")
        report, con = _run(root, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
        assert not report.rejected, report.summary()
        tables[fmt] = con.execute(LANDED).fetchall()
        if fmt == "parquet":
            described = con.execute("describe select * from read_parquet($p)", {"p": str(part)}).fetchall()
            types = {r[0]: r[1] for r in described}
            assert types["resource_tags"] == types["product"] == "MAP(VARCHAR, VARCHAR)"
        con.close()
    rows = tables["parquet"]
    assert rows == tables["csv"]
    by_resource = {r[0]: r for r in rows}
    a, b, vol = by_resource["i-a"], by_resource["i-b"], by_resource["vol-1"]
    assert len(rows) == 6
    # tags: normalised keys (user_ / user: prefixes, case), canonical columns resolved, raw keys kept
    assert a[3] == {"team": "nlp", "project": "llm", "aws_created_by": "x"}
    assert (a[4], a[5]) == ("nlp", "llm")
    assert json.loads(a[6]) == {"user_team": "nlp", "user_project": "llm", "aws_created_by": "x"}
    assert (b[3], b[4], b[5]) == ({"team": "vision"}, "vision", None)
    assert vol[3] is None and vol[4] is None
    # product map: product_name / region_code / location; the other spelling (servicename / region)
    assert a[7:10] == ("Amazon Elastic Compute Cloud", "us-east-1", "US East (N. Virginia)")
    assert vol[7:10] == ("Amazon Elastic Block Store", "eu-west-1", None)
    # the promoted product_instance_type column; none for the volume, nor a usage type naming one
    assert (a[10], b[10]) == ("p4d.24xlarge", "g5.xlarge")
    # money: 3 x 3.25 + 2 x 1.50 + 0.10 = 12.85 billed and effective (all on-demand usage)
    assert sum(r[1] for r in rows) == sum(r[2] for r in rows) == Decimal("12.850000")


def test_legacy_cur_resource_tag_columns_and_a_custom_alias_resolve_team(tmp_path: Path) -> None:
    """`resourceTags/user:Team` and `resourceTags/user:CostOwner` columns become the tags `team` and
    `costowner`; the config's alias `user:CostOwner` (normalised the same way) is tried first for team."""
    landing = tmp_path / "landing"
    landing.mkdir()
    rows = [
        legacy(1, "Usage", "1.00", team="nlp"),  # Team only: the second alias
        legacy(2, "Usage", "2.00", team="nlp", cost_owner="vision"),  # both: the first alias wins
        legacy(3, "Usage", "3.00", cost_owner="speech"),  # CostOwner only
        legacy(4, "Usage", "4.00"),  # untagged
    ]
    (landing / "cur.csv").write_bytes(legacy_csv(rows))
    report, con = _run(
        tmp_path,
        'tags:\n  team: ["user:CostOwner", Team]\nsources:\n  - {name: cur, kind: aws_cur, uri: landing/}\n',
    )
    assert not report.rejected, report.summary()
    got = con.execute(
        "select x_line_item_id, tags, team, owner, json(x_tags_raw)::varchar from billing_line_items "
        "order by x_line_item_id"
    ).fetchall()
    assert got == [
        ("li-001", {"team": "nlp"}, "nlp", None, '{"user:Team":"nlp"}'),
        ("li-002", {"team": "nlp", "costowner": "vision"}, "vision", None,
         '{"user:Team":"nlp","user:CostOwner":"vision"}'),
        ("li-003", {"costowner": "speech"}, "speech", None, '{"user:CostOwner":"speech"}'),
        ("li-004", None, None, None, None),
    ]  # fmt: skip
    # each distinct set of raw tags is stored once; a line keeps only its set's id
    assert con.execute("select count(*) from billing_tag_sets").fetchall() == [(3,)]
    assert con.execute(
        "select count(*), count(x_tag_set), count(distinct x_tag_set) from billing_lines"
    ).fetchall() == [(4, 3, 3)]
    con.close()

    # the config changes: CostOwner is the owner now, not a team. Nothing is loaded again, yet every line
    # already in the warehouse reads the new resolution
    report, con = _run(
        tmp_path,
        'tags:\n  owner: ["user:CostOwner"]\nsources:\n  - {name: cur, kind: aws_cur, uri: landing/}\n',
    )
    assert [o.status for o in report.outcomes] == ["unchanged"]
    assert "source 'cur': 2 tag set(s) resolved again through the tags: config" in report.notes
    got = con.execute("select x_line_item_id, team, owner from billing_line_items order by 1").fetchall()
    assert got == [
        ("li-001", "nlp", None),
        ("li-002", "nlp", "vision"),
        ("li-003", None, "speech"),
        ("li-004", None, None),
    ]
    con.close()


def _athena(name: str) -> str:
    """A legacy CUR column in the Athena / Parquet spelling: `lineItem/UnblendedCost` ->
    `line_item_unblended_cost`, `reservation/ReservationARN` -> `reservation_reservation_a_r_n`,
    `resourceTags/user:Team` -> `resource_tags_user_team`."""
    import re

    category, _, field = name.partition("/")
    if category == "resourceTags":
        return "resource_tags_" + re.sub(r"[^a-z0-9]", "_", field.lower())

    def snake(s: str) -> str:
        return re.sub(r"(?<!^)(?=[A-Z])", "_", s).lower()

    return f"{snake(category)}_{snake(field)}"


def _athena_parquet(path: Path, rows: list[dict[str, str]]) -> None:
    mem = duckdb.connect()
    names = [_athena(c) for c in LEGACY_HEADER]
    mem.execute("create table t (" + ", ".join(f'"{n}" VARCHAR' for n in names) + ")")
    mem.executemany(
        "insert into t values (" + ", ".join("?" for _ in names) + ")",
        [[r[c] or None for c in LEGACY_HEADER] for r in rows],
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    mem.execute(f"copy t to '{path}' (format parquet)")
    mem.close()


def test_legacy_cur_athena_year_month_folders_are_billing_periods(tmp_path: Path) -> None:
    """The CUR-for-Athena layout `year=YYYY/month=M/` (Parquet, snake_case names): each folder is one
    billing period; a rewritten folder replaces that month only."""
    root = tmp_path / "landing" / "cur"
    dec = ("2024-12-01T00:00:00Z", "2025-01-01T00:00:00Z")
    jan = ("2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z")
    _athena_parquet(
        root / "year=2024" / "month=12" / "cur-00001.snappy.parquet",
        [legacy(1, "Usage", "10.00", team="nlp", start="2024-12-02T10:00:00Z", end="2024-12-02T11:00:00Z",
                period=dec)],
    )  # fmt: skip
    _athena_parquet(
        root / "year=2025" / "month=1" / "cur-00001.snappy.parquet",
        [legacy(2, "Usage", "20.00", start="2025-01-02T10:00:00Z", end="2025-01-02T11:00:00Z", period=jan)],
    )
    _athena_parquet(
        root / "year=2025" / "month=1" / "cur-00002.snappy.parquet",
        [legacy(3, "Credit", "-5.00", resource="", start="2025-01-03T00:00:00Z", end="2025-01-04T00:00:00Z",
                period=jan)],
    )  # fmt: skip
    body = "sources:\n  - {name: cur, kind: aws_cur, uri: landing/}\n"
    report, con = _run(tmp_path, body)
    assert not report.rejected, report.summary()
    periods = con.execute(
        "select billing_period, count(*), sum(rows) from ingest_files where status = 'loaded' group by 1 order by 1"
    ).fetchall()
    assert periods == [("2024-12", 1, 1), ("2025-01", 2, 2)]
    totals = con.execute(
        "select x_billing_period, sum(billed_cost), min(team) from billing_line_items group by 1 order by 1"
    ).fetchall()
    assert totals == [("2024-12", Decimal("10.000000"), "nlp"), ("2025-01", Decimal("15.000000"), None)]
    con.close()

    # January is rewritten (one file, a new total): January is replaced, December is untouched
    (root / "year=2025" / "month=1" / "cur-00002.snappy.parquet").unlink()
    _athena_parquet(
        root / "year=2025" / "month=1" / "cur-00001.snappy.parquet",
        [legacy(2, "Usage", "18.00", start="2025-01-02T10:00:00Z", end="2025-01-02T11:00:00Z", period=jan)],
    )
    report, con = _run(tmp_path, body)
    assert not report.rejected, report.summary()
    totals = con.execute(
        "select x_billing_period, count(*), sum(billed_cost) from billing_line_items group by 1 order by 1"
    ).fetchall()
    assert totals == [("2024-12", 1, Decimal("10.000000")), ("2025-01", 1, Decimal("18.000000"))]
    con.close()
