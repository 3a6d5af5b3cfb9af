"""FOCUS ingestion on the real FOCUS sample, its quirks, idempotency and bad files."""

from __future__ import annotations

import csv
import gzip
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.config import Config
from pipelines.ingest import ingest
from tests.helpers.paths import FIXTURES, FOCUS_SAMPLE, copy_into


def _file_totals(path: Path) -> tuple[int, Decimal]:
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return len(rows), sum((Decimal(r["BilledCost"]) for r in rows), Decimal(0))


def test_real_sample_loads_to_the_cent_and_a_second_ingest_adds_nothing(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    copy_into(FOCUS_SAMPLE, project / "landing" / "billing")
    expected_rows, expected_billed = _file_totals(FOCUS_SAMPLE)

    first = ingest(con, config)
    assert [o.status for o in first.outcomes] == ["loaded"]
    n, billed = con.execute("select count(*), sum(billed_cost) from billing_line_items").fetchall()[0]
    assert n == expected_rows == 1000
    assert round(billed, 2) == round(expected_billed, 2)

    second = ingest(con, config)
    assert [o.status for o in second.outcomes] == ["unchanged"]
    assert con.execute("select count(*) from billing_line_items").fetchall()[0][0] == 1000
    ledger = con.execute("select status, rows, billed_cost_sum, billing_period from ingest_files").fetchall()
    # the sample spans two billing periods (one OCI line is in 2024-10), so the file names no single one
    assert ledger == [("loaded", 1000, billed, None)]


def test_sample_quirks_are_normalised(config: Config, project: Path, con: duckdb.DuckDBPyConnection) -> None:
    copy_into(FOCUS_SAMPLE, project / "landing" / "billing")
    ingest(con, config)
    # literal NULL is NULL, not the string
    assert (
        con.execute("select count(*) from billing_line_items where availability_zone = 'NULL'").fetchall()[0][
            0
        ]
        == 0
    )
    # timestamps without zone are read as UTC
    first = con.execute(
        "select min(charge_period_start), max(charge_period_end) from billing_line_items"
    ).fetchall()[0]
    assert str(first[0]).startswith("2024-09-01") and str(first[1]).startswith("2024-10-01")
    # mixed-case enumerations get FOCUS's spelling (OCI writes "Usage-based")
    freqs = {r[0] for r in con.execute("select distinct charge_frequency from billing_line_items").fetchall()}
    assert "Usage-based" not in freqs and "Usage-Based" in freqs
    # " org" (leading space) and "org" normalise to one key; the raw keys are kept
    row = con.execute(
        """select tags['org'], x_tags_raw from billing_line_items
           where x_tags_raw::varchar like '%" org"%' and x_tags_raw::varchar like '%"org"%' limit 1"""
    ).fetchall()[0]
    assert row[0] == "trey" and '" org"' in str(row[1])
    # the non-FOCUS column `Id` is kept in x_extra
    assert (
        con.execute("select count(*) from billing_line_items where x_extra ->> 'Id' is not null").fetchall()[
            0
        ][0]
        == 1000
    )
    assert con.execute("select distinct x_focus_version from billing_line_items").fetchall() == [("1.0",)]


def test_gzip_and_parquet_give_the_same_rows(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    landing = project / "landing" / "billing"
    (landing / "sample.csv.gz").write_bytes(gzip.compress(FOCUS_SAMPLE.read_bytes()))
    pl.read_csv(FOCUS_SAMPLE, infer_schema=False).write_parquet(landing / "sample.parquet")
    report = ingest(con, config)
    assert sorted(o.status for o in report.outcomes) == ["loaded", "loaded"]
    by_file = con.execute(
        "select x_source_file, count(*), sum(billed_cost), sum(effective_cost) from billing_line_items group by 1 order by 1"
    ).fetchall()
    assert [r[1:] for r in by_file][0] == [r[1:] for r in by_file][1]


def test_changed_file_replaces_its_rows(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    path = copy_into(FOCUS_SAMPLE, project / "landing" / "billing")
    ingest(con, config)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:501]), encoding="utf-8")  # header + 500 rows: a restated, shorter file
    report = ingest(con, config)
    assert [o.status for o in report.outcomes] == ["loaded"]
    assert con.execute("select count(*) from billing_line_items").fetchall()[0][0] == 500


BAD_FILES = {
    "truncated.csv.gz": (
        lambda: gzip.compress(FOCUS_SAMPLE.read_bytes())[:20_000],
        "truncated.csv.gz: cannot read",
    ),
    "no_billed_cost.csv": (
        lambda: _drop_column(FOCUS_SAMPLE.read_text(encoding="utf-8"), "BilledCost").encode(),
        "missing required FOCUS column(s) BilledCost",
    ),
    "empty.csv": (lambda: b"", "file is empty"),
    "bad_cost.csv": (
        lambda: FOCUS_SAMPLE.read_text(encoding="utf-8").replace("0.00001605990", "twelve", 1).encode(),
        "bad_cost.csv:3: column 'BilledCost': expected a decimal number, found 'twelve' (data row 2)",
    ),
    "impossible_time.csv": (
        lambda: (
            FOCUS_SAMPLE.read_text(encoding="utf-8")
            .replace("2024-09-18 22:00:00", "2023-02-01T30:00:00Z", 1)
            .encode()
        ),
        "column 'ChargePeriodStart': expected an ISO 8601 date/time (UTC: 2024-09-01T00:00:00Z, 2024-09-01T00:00:00.000Z or 2024-09-01 00:00:00), found '2023-02-01T30:00:00Z' (data row 1)",
    ),
}


def _drop_column(text: str, column: str) -> str:
    rows = list(csv.reader(text.splitlines()))
    i = rows[0].index(column)
    out = [r[:i] + r[i + 1 :] for r in rows]
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(out)
    return buf.getvalue()


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file_is_rejected_with_its_name_and_the_rest_loads(
    name: str, project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    landing = project / "landing" / "billing"
    make, message = BAD_FILES[name]
    (landing / name).write_bytes(make())
    copy_into(FOCUS_SAMPLE, landing, "good.csv")
    report = ingest(con, config)
    by_name = {Path(o.uri).name: o for o in report.outcomes}
    assert by_name["good.csv"].status == "loaded"
    bad = by_name[name]
    assert bad.status == "rejected"
    assert name in (bad.error or "") and message in (bad.error or "")
    assert report.exit_code == 1
    # nothing from the bad file landed; the good file's rows all did
    assert con.execute("select count(*) from billing_line_items").fetchall()[0][0] == 1000
    assert (
        con.execute("select status, error from ingest_files where uri like $u", {"u": f"%{name}"}).fetchall()[
            0
        ][0]
        == "rejected"
    )


# --- FOCUS versions and provider FOCUS exports -------------------------------------------------------

FOCUS_1_0 = [
    "AvailabilityZone", "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency",
    "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription",
    "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart", "CommitmentDiscountCategory",
    "CommitmentDiscountId", "CommitmentDiscountName", "CommitmentDiscountStatus", "CommitmentDiscountType",
    "ConsumedQuantity", "ConsumedUnit", "ContractedCost", "ContractedUnitPrice", "EffectiveCost",
    "InvoiceIssuerName", "ListCost", "ListUnitPrice", "PricingCategory", "PricingQuantity", "PricingUnit",
    "ProviderName", "PublisherName", "RegionId", "RegionName", "ResourceId", "ResourceName", "ResourceType",
    "ServiceCategory", "ServiceName", "SkuId", "SkuPriceId", "SubAccountId", "SubAccountName", "Tags",
]  # fmt: skip
ADDED_1_1 = ["CapacityReservationId", "CapacityReservationStatus", "CommitmentDiscountQuantity",
             "CommitmentDiscountUnit", "ServiceSubcategory", "SkuMeter", "SkuPriceDetails"]  # fmt: skip
ADDED_1_2 = ["BillingAccountType", "SubAccountType", "InvoiceId", "PricingCurrency",
             "PricingCurrencyContractedUnitPrice", "PricingCurrencyEffectiveCost",
             "PricingCurrencyListUnitPrice"]  # fmt: skip


def _focus_row(**over: str) -> dict[str, str]:
    row = {
        "BilledCost": "98.32", "EffectiveCost": "61.25", "ListCost": "98.32", "ContractedCost": "98.32",
        "BillingAccountId": "111122223333", "BillingAccountName": "acme", "BillingCurrency": "USD",
        "BillingPeriodStart": "2024-11-01T00:00:00Z", "BillingPeriodEnd": "2024-12-01T00:00:00Z",
        "ChargePeriodStart": "2024-11-02T10:00:00Z", "ChargePeriodEnd": "2024-11-02T11:00:00Z",
        "ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based", "ChargeDescription": "p5.48xlarge hour",
        "ConsumedQuantity": "1", "ConsumedUnit": "Hours", "PricingQuantity": "1", "PricingUnit": "Hours",
        "ListUnitPrice": "98.32", "ContractedUnitPrice": "98.32", "PricingCategory": "Committed",
        "CommitmentDiscountId": "arn:aws:savingsplans::111122223333:savingsplan/sp-1",
        "CommitmentDiscountCategory": "Spend", "CommitmentDiscountStatus": "Used",
        "CommitmentDiscountType": "Compute Savings Plans", "InvoiceIssuerName": "AWS",
        "ProviderName": "AWS", "PublisherName": "AWS", "RegionId": "us-east-1", "RegionName": "US East",
        "ResourceId": "i-0gpu", "ResourceName": "trainer", "ResourceType": "Instance",
        "ServiceCategory": "Compute", "ServiceName": "Amazon EC2", "SkuId": "SKU1", "SkuPriceId": "SKU1.P1",
        "SubAccountId": "444455556666", "SubAccountName": "ml", "Tags": '{"user:Team": "nlp"}',
    }  # fmt: skip
    row.update(over)
    return row


def _write_focus(path: Path, columns: list[str], rows: list[dict[str, str]]) -> None:
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


def test_tag_sets_follow_a_changed_and_a_removed_file_and_stay_on_a_first_load(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    """Files without a manifest: a changed file's old tags and a removed file's tags leave billing_tag_sets
    with their lines; a first load of another file keeps every set (only replaced lines orphan sets)."""
    landing = project / "landing" / "billing"
    landing.mkdir(parents=True, exist_ok=True)
    columns = list(_focus_row())

    def teams() -> list[str]:
        return sorted(r[0] for r in con.execute("select team from billing_tag_sets").fetchall())

    _write_focus(landing / "a.csv", columns, [_focus_row(Tags='{"team": "nlp"}')])
    _write_focus(landing / "b.csv", columns, [_focus_row(Tags='{"team": "cv"}')])
    assert not ingest(con, config).rejected
    assert teams() == ["cv", "nlp"]
    _write_focus(landing / "a.csv", columns, [_focus_row(Tags='{"team": "speech"}', BilledCost="1.5")])
    assert [o.status for o in ingest(con, config).outcomes] == ["loaded", "unchanged"]
    assert teams() == ["cv", "speech"]
    (landing / "b.csv").unlink()
    assert [o.status for o in ingest(con, config).outcomes] == ["unchanged", "removed"]
    assert teams() == ["speech"]
    _write_focus(landing / "c.csv", columns, [_focus_row(Tags='{"team": "vision"}')])
    assert [o.status for o in ingest(con, config).outcomes] == ["unchanged", "loaded"]
    assert teams() == ["speech", "vision"]
    assert con.execute("select team, billed_cost from billing_line_items order by team").fetchall() == [
        ("speech", Decimal("1.500000")),
        ("vision", Decimal("98.320000")),
    ]


def test_x_extra_is_the_same_whether_the_x_columns_repeat_or_vary_per_line(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    """x_ columns that repeat (AWS's x_Operation) are written once per combination and joined back; ones
    that vary per line (Azure's x_BilledCostInUsd) make x_extra per line. Both give each line its own
    values, nulls kept."""
    landing = project / "landing" / "billing"
    landing.mkdir(parents=True, exist_ok=True)
    base = list(_focus_row())
    repeat = [
        _focus_row(
            ChargePeriodStart=f"2024-11-02T{h:02d}:00:00Z", ChargePeriodEnd=f"2024-11-02T{h + 1:02d}:00:00Z"
        )
        | {"x_Operation": "RunInstances" if h % 2 else "CreateVolume", "x_Note": ""}
        for h in range(20)
    ]
    vary = [
        _focus_row(
            ChargePeriodStart=f"2024-11-03T{h:02d}:00:00Z", ChargePeriodEnd=f"2024-11-03T{h + 1:02d}:00:00Z"
        )
        | {"x_Operation": "RunInstances", "x_BilledCostInUsd": f"{h}.25"}
        for h in range(20)
    ]
    _write_focus(landing / "repeat.csv", [*base, "x_Operation", "x_Note"], repeat)
    _write_focus(landing / "vary.csv", [*base, "x_Operation", "x_BilledCostInUsd"], vary)
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    got = con.execute(
        "select hour(charge_period_start), x_extra from billing_line_items order by charge_period_start"
    ).fetchall()
    import json

    assert [json.loads(x) for _, x in got[:3]] == [
        {"x_Operation": "CreateVolume", "x_Note": None},
        {"x_Operation": "RunInstances", "x_Note": None},
        {"x_Operation": "CreateVolume", "x_Note": None},
    ]
    assert [json.loads(x) for _, x in got[20:23]] == [
        {"x_Operation": "RunInstances", "x_BilledCostInUsd": "0.25"},
        {"x_Operation": "RunInstances", "x_BilledCostInUsd": "1.25"},
        {"x_Operation": "RunInstances", "x_BilledCostInUsd": "2.25"},
    ]
    assert len({x for _, x in got}) == 2 + 20


def test_padded_ids_in_a_csv_are_trimmed(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    """Text files get padded by hand and by tools: the resource, zone and currency lines are matched on
    lose the padding (a blank value is none); machine-written Parquet is read as it is."""
    landing = project / "landing" / "billing"
    landing.mkdir(parents=True, exist_ok=True)
    columns = [*_focus_row(), "AvailabilityZone"]
    rows = [
        _focus_row(ResourceId=" i-0gpu ", BillingCurrency=" usd") | {"AvailabilityZone": "us-east-1a "},
        _focus_row(
            ResourceId="   ", ChargePeriodStart="2024-11-02T11:00:00Z", ChargePeriodEnd="2024-11-02T12:00:00Z"
        )
        | {"AvailabilityZone": " "},
    ]
    _write_focus(landing / "padded.csv", columns, rows)
    assert not ingest(con, config).rejected
    assert con.execute(
        "select resource_id, availability_zone, billing_currency from billing_line_items order by charge_period_start"
    ).fetchall() == [("i-0gpu", "us-east-1a", "USD"), (None, None, "USD")]


def test_the_ledger_lists_each_files_currencies_and_its_one_billing_period(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    """check_landed reads currencies and periods by min and max; a file with more than one lists them all."""
    landing = project / "landing" / "billing"
    landing.mkdir(parents=True, exist_ok=True)
    columns = list(_focus_row())
    _write_focus(
        landing / "two.csv",
        columns,
        [
            _focus_row(BillingCurrency="USD"),
            _focus_row(BillingCurrency="eur"),
            _focus_row(BillingCurrency="USD"),
        ],
    )
    _write_focus(landing / "one.csv", columns, [_focus_row(), _focus_row()])
    assert not ingest(con, config).rejected
    assert con.execute(
        "select regexp_extract(uri, '[a-z]+\\.csv'), currencies, billing_period from ingest_files order by 1"
    ).fetchall() == [("one.csv", "USD", "2024-11"), ("two.csv", "EUR,USD", "2024-11")]


_COSTS = """1.5 as BilledCost, 1.0 as EffectiveCost,
    timestamp '2024-11-02 00:00:00' + to_minutes(i) as ChargePeriodStart,
    timestamp '2024-11-02 00:00:00' + to_minutes(i + 1) as ChargePeriodEnd"""


def test_repeating_x_columns_keep_each_lines_values_even_where_their_hashes_collide(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    """100 lines, 4 combinations (so x_extra is written once per combination): an empty vs a NULL MAP,
    and two LIST columns whose boundaries shift, hash alike in DuckDB; lines are matched by value."""
    import json

    landing = project / "landing" / "billing"
    landing.mkdir(parents=True, exist_ok=True)
    duckdb.connect().execute(
        f"""copy (select {_COSTS},
              case when i % 2 = 0 then map([], [])::map(varchar, double) end as x_Discounts,
              case when i % 4 < 2 then [1, 2] else [1] end as x_A,
              case when i % 4 < 2 then [3] else [2, 3] end as x_B
            from range(100) t(i)) to '{landing / "f.parquet"}' (format parquet)"""
    )
    assert not ingest(con, config).rejected
    got = con.execute("select x_extra, count(*) from billing_line_items group by all order by all").fetchall()
    assert sorted((json.dumps(json.loads(x), sort_keys=True), n) for x, n in got) == [
        ('{"x_A": [1, 2], "x_B": [3], "x_Discounts": null}', 25),
        ('{"x_A": [1, 2], "x_B": [3], "x_Discounts": {}}', 25),
        ('{"x_A": [1], "x_B": [2, 3], "x_Discounts": null}', 25),
        ('{"x_A": [1], "x_B": [2, 3], "x_Discounts": {}}', 25),
    ]


def test_struct_tags_with_other_keys_but_the_same_values_both_load(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    """Tags as a Parquet STRUCT (each file's schema lists its keys): {team: nlp} and {owner: nlp} are two
    sets (hash() of a STRUCT ignores field names, so they are keyed by their JSON text)."""
    landing = project / "landing" / "billing"
    landing.mkdir(parents=True, exist_ok=True)
    c = duckdb.connect()
    c.execute(
        f"copy (select {_COSTS}, {{'team': 'nlp'}} as Tags from range(2) t(i)) to '{landing / 'a.parquet'}'"
    )
    c.execute(
        f"copy (select {_COSTS}, {{'owner': 'nlp'}} as Tags from range(2) t(i)) to '{landing / 'b.parquet'}'"
    )
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    assert sorted(
        r[0] for r in con.execute("select x_tags_raw::varchar from billing_tag_sets").fetchall()
    ) == [
        '{"owner":"nlp"}',
        '{"team":"nlp"}',
    ]
    assert con.execute(
        "select owner, team, count(*) from billing_line_items group by all order by all"
    ).fetchall() == [
        ("nlp", None, 2),
        (None, "nlp", 2),
    ]


def test_empty_map_tags_read_like_empty_json_text(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    """An empty Tags MAP in Parquet is the tag set '{}', as the same value in a CSV."""
    landing = project / "landing" / "billing"
    landing.mkdir(parents=True, exist_ok=True)
    duckdb.connect().execute(
        f"copy (select {_COSTS}, map([], [])::map(varchar, varchar) as Tags from range(1) t(i)) "
        f"to '{landing / 'm.parquet'}'"
    )
    (landing / "t.csv").write_text(
        "BilledCost,EffectiveCost,ChargePeriodStart,ChargePeriodEnd,Tags\n"
        "1.5,1.0,2024-11-03 00:00:00,2024-11-03 01:00:00,{}\n",
        encoding="utf-8",
    )
    assert not ingest(con, config).rejected
    got = con.execute(
        "select x_tags_raw::varchar, tags from billing_line_items order by charge_period_start"
    ).fetchall()
    assert got == [("{}", None), ("{}", None)]  # the same set either way (no keys: no normalised tags)


def test_a_focus_1_1_file_is_read_as_1_1_with_its_new_columns(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    row = _focus_row(
        ServiceSubcategory="Virtual Machines",
        SkuMeter="Compute Usage",
        SkuPriceDetails='{"InstanceType": "p5.48xlarge", "GpuCount": 8}',
        CommitmentDiscountQuantity="98.32",
        CommitmentDiscountUnit="USD",
        CapacityReservationId="cr-0abc",
        CapacityReservationStatus="used",
    )
    _write_focus(project / "landing" / "billing" / "focus-1.1.csv", FOCUS_1_0 + ADDED_1_1, [row])
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    got = con.execute(
        """select x_focus_version, service_subcategory, sku_meter, x_instance_type, x_gpu_count,
                  commitment_discount_quantity, commitment_discount_unit, capacity_reservation_id,
                  capacity_reservation_status, billed_cost, effective_cost, team, invoice_id
           from billing_line_items"""
    ).fetchall()
    assert got == [
        ("1.1", "Virtual Machines", "Compute Usage", "p5.48xlarge", 8, 98.32, "USD", "cr-0abc", "Used",
         Decimal("98.320000"), Decimal("61.250000"), "nlp", None)
    ]  # fmt: skip


def test_a_focus_1_2_file_is_read_as_1_2_with_its_new_columns(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    row = _focus_row(
        BillingAccountType="Billing Account",
        SubAccountType="AWS Account",
        InvoiceId="INV-2024-11-001",
        BillingCurrency="EUR",
        PricingCurrency="USD",
        PricingCurrencyContractedUnitPrice="106.0",
        PricingCurrencyEffectiveCost="66.04",
        PricingCurrencyListUnitPrice="106.0",
    )
    _write_focus(project / "landing" / "billing" / "focus-1.2.csv", FOCUS_1_0 + ADDED_1_1 + ADDED_1_2, [row])
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    got = con.execute(
        """select x_focus_version, billing_account_type, sub_account_type, invoice_id, billing_currency,
                  pricing_currency, pricing_currency_contracted_unit_price, pricing_currency_effective_cost,
                  pricing_currency_list_unit_price, effective_cost
           from billing_line_items"""
    ).fetchall()
    assert got == [
        ("1.2", "Billing Account", "AWS Account", "INV-2024-11-001", "EUR", "USD", Decimal("106.000000000000"),
         Decimal("66.040000"), Decimal("106.000000000000"), Decimal("61.250000"))
    ]  # fmt: skip


AZURE_FOCUS_1_2 = FIXTURES / "billing" / "azure" / "FocusCost_1.2-preview.json"


def test_azure_focuscost_1_2_export_keeps_every_x_column(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    """A FocusCost export built from Microsoft's own 1.2-preview column list (106 columns, 53 `x_`): the
    FOCUS columns land in their columns, every `x_` column is kept in x_extra under its own name."""
    import json

    meta = json.loads(AZURE_FOCUS_1_2.read_text(encoding="utf-8"))
    assert meta["FocusVersion"] == "1.2"
    columns = [c["ColumnName"] for c in meta["Columns"]]
    x_columns = [c for c in columns if c.startswith("x_")]
    assert len(columns) == 106 and len(x_columns) == 53
    sub = "/subscriptions/1caaa5a3-2b66-438e-8ab4-bce37d518c5d"
    vm = f"{sub}/resourcegroups/ml/providers/microsoft.compute/virtualmachines/nd-trainer-1"
    base = {
        "BilledCost": "27.1968", "EffectiveCost": "27.1968", "ListCost": "27.1968", "ContractedCost": "27.1968",
        "BillingAccountId": "/providers/Microsoft.Billing/billingAccounts/8611537",
        "BillingAccountName": "Trey Research", "BillingAccountType": "Billing Account", "BillingCurrency": "USD",
        "BillingPeriodStart": "2024-11-01T00:00:00Z", "BillingPeriodEnd": "2024-12-01T00:00:00Z",
        "ChargePeriodStart": "2024-11-02T00:00:00Z", "ChargePeriodEnd": "2024-11-03T00:00:00Z",
        "ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based", "ConsumedQuantity": "1",
        "ConsumedUnit": "Hours", "PricingQuantity": "1", "PricingUnit": "Hours", "PricingCategory": "Standard",
        "PricingCurrency": "USD", "InvoiceIssuerName": "Microsoft", "ProviderName": "Microsoft",
        "PublisherName": "Microsoft", "RegionId": "eastus", "RegionName": "East US", "ResourceId": vm,
        "ResourceName": "nd-trainer-1", "ResourceType": "Virtual machine", "ServiceCategory": "Compute",
        "ServiceName": "Virtual Machines", "SubAccountId": sub, "SubAccountName": "ML Research",
        "SubAccountType": "Subscription", "Tags": '{"team": "vision"}',
    }  # fmt: skip
    rows = []
    for i, cost in enumerate(("27.1968", "3.5")):
        row = dict(base, BilledCost=cost, EffectiveCost=cost, ListCost=cost, ContractedCost=cost)
        for c in meta["Columns"]:
            name = c["ColumnName"]
            if name.startswith("x_"):  # every x_ column gets a value of its type
                row[name] = {
                    "Decimal": f"{i + 1}.5",
                    "DateTime": "2024-11-02T00:00:00Z",
                    "Boolean": "True",
                    "Number": "36",
                    "JSON": '{"ServiceType": "Standard_ND96asr_v4", "VCPUs": 96}',
                }.get(c["DataType"], f"{name[2:]}-{i}")
        rows.append(row)
    _write_focus(project / "landing" / "billing" / "part_0_0001.csv", columns, rows)
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    got = con.execute(
        "select x_focus_version, billed_cost, team, sub_account_type, x_extra from billing_line_items "
        "order by billed_cost desc"
    ).fetchall()
    assert [r[:4] for r in got] == [
        ("1.2", Decimal("27.196800"), "vision", "Subscription"),
        ("1.2", Decimal("3.500000"), "vision", "Subscription"),
    ]
    extra = json.loads(got[0][4])
    assert sorted(extra) == sorted(x_columns)
    assert extra["x_ResourceGroupName"] == "ResourceGroupName-0"
    assert extra["x_BilledCostInUsd"] == "1.5" and json.loads(got[1][4])["x_BilledCostInUsd"] == "2.5"
    assert extra["x_AmortizationClass"] == "AmortizationClass-0"  # a 1.2-preview addition
    assert json.loads(extra["x_SkuDetails"]) == {"ServiceType": "Standard_ND96asr_v4", "VCPUs": 96}


def _aws_focus_parquet(path: Path, rows: list[dict[str, object]]) -> None:
    """AWS Data Exports "FOCUS 1.0 with AWS columns" as Parquet: DOUBLE money and quantities, TIMESTAMP
    periods, Tags and x_CostCategories MAP(VARCHAR, VARCHAR), x_Discounts MAP(VARCHAR, DOUBLE)."""
    import json

    types = {c: "VARCHAR" for c in FOCUS_1_0}
    for c in ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "ConsumedQuantity",
              "PricingQuantity", "ListUnitPrice", "ContractedUnitPrice"):  # fmt: skip
        types[c] = "DOUBLE"
    for c in ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"):
        types[c] = "TIMESTAMP"
    types |= {"Tags": "MAP(VARCHAR, VARCHAR)", "x_CostCategories": "MAP(VARCHAR, VARCHAR)",
              "x_Discounts": "MAP(VARCHAR, DOUBLE)", "x_Operation": "VARCHAR", "x_ServiceCode": "VARCHAR",
              "x_UsageType": "VARCHAR"}  # fmt: skip
    mem = duckdb.connect()
    cols = list(types)
    mem.execute("create table t (" + ", ".join(f'"{c}" VARCHAR' for c in cols) + ")")
    mem.executemany(
        "insert into t values (" + ", ".join("?" for _ in cols) + ")",
        [[json.dumps(r[c]) if isinstance(r.get(c), dict) else r.get(c) for c in cols] for r in rows],
    )
    select = []
    for c, t in types.items():
        if t.startswith("MAP"):
            select.append(f'json_transform("{c}", \'"{t}"\') as "{c}"')
        elif t == "TIMESTAMP":
            select.append(f'cast(cast("{c}" as timestamptz) at time zone \'UTC\' as timestamp) as "{c}"')
        else:
            select.append(f'cast("{c}" as {t}) as "{c}"')
    path.parent.mkdir(parents=True, exist_ok=True)
    mem.execute(f"copy (select {', '.join(select)} from t) to '{path}' (format parquet)")
    mem.close()


def _aws_focus_delivery(root: Path, period: str, execution: str, rows: list[dict[str, object]]) -> None:
    import json

    data = root / "focus" / "data" / f"BILLING_PERIOD={period}" / "focus-00001.snappy.parquet"
    _aws_focus_parquet(data, rows)
    manifest = root / "focus" / "metadata" / f"BILLING_PERIOD={period}" / "focus-Manifest.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(
        json.dumps(
            {
                "executionId": execution,
                "billingPeriod": {"start": f"{period}-01T00:00:00.000Z"},
                "dataFiles": [
                    f"s3://bucket/exports/focus/data/BILLING_PERIOD={period}/focus-00001.snappy.parquet"
                ],
            }
        ),
        encoding="utf-8",
    )


def test_aws_focus_export_in_billing_period_folders_follows_its_manifest(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    """AWS "FOCUS 1.0 with AWS columns": Parquet under data/BILLING_PERIOD=YYYY-MM/ with a manifest, like
    CUR 2.0. MAP tags land as tags, the x_ columns in x_extra, x_UsageType gives the instance type; a new
    execution restates the month."""
    landing = project / "landing" / "billing"

    def gpu_hour(hour: int, cost: float, **over: object) -> dict[str, object]:
        row: dict[str, object] = {
            **_focus_row(ChargePeriodStart=f"2024-11-02T{hour:02d}:00:00Z",
                         ChargePeriodEnd=f"2024-11-02T{hour + 1:02d}:00:00Z",
                         BilledCost=str(cost), EffectiveCost=str(cost), ListCost=str(cost)),
            "Tags": {"user_team": "nlp", "aws:createdBy": "ops"},
            "x_CostCategories": {"env": "prod"},
            "x_Discounts": {"bundled_discount": -0.5},
            "x_Operation": "RunInstances",
            "x_ServiceCode": "AmazonEC2",
            "x_UsageType": "USE1-BoxUsage:p5.48xlarge",
        }  # fmt: skip
        row.update(over)
        return row

    _aws_focus_delivery(landing, "2024-11", "exec-1", [gpu_hour(h, 98.32) for h in range(3)])
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    assert sorted(Path(o.uri).name for o in report.of("loaded")) == [
        "focus-00001.snappy.parquet",
        "focus-Manifest.json",
    ]
    row = con.execute(
        "select x_focus_version, tags, team, x_instance_type, x_billing_period, x_extra from billing_line_items "
        "limit 1"
    ).fetchall()[0]
    assert row[:5] == ("1.0", {"team": "nlp", "aws:createdby": "ops"}, "nlp", "p5.48xlarge", "2024-11")
    import json

    extra = json.loads(row[5])
    assert (extra["x_Operation"], extra["x_ServiceCode"], extra["x_UsageType"]) == (
        "RunInstances", "AmazonEC2", "USE1-BoxUsage:p5.48xlarge",
    )  # fmt: skip
    assert extra["x_CostCategories"] == {"env": "prod"} and extra["x_Discounts"] == {"bundled_discount": -0.5}
    assert "BILLING_PERIOD" not in extra  # the folder's name is not a column of the file
    assert con.execute("select sum(billed_cost) from billing_line_items").fetchall() == [
        (Decimal("294.960000"),)
    ]

    # AWS rewrites the month: the new execution replaces it (2 hours at 90.00)
    _aws_focus_delivery(landing, "2024-11", "exec-2", [gpu_hour(h, 90.0) for h in range(2)])
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    assert con.execute("select count(*), sum(billed_cost) from billing_line_items").fetchall() == [
        (2, Decimal("180.000000"))
    ]
    assert con.execute(
        "select distinct delivery_id, billing_period from ingest_files where status = 'loaded'"
    ).fetchall() == [("exec-2", "2024-11")]
