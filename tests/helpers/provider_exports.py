"""Billing exports as providers really write them, quirks included, for the tests of docs/billing.md's
"Variants read" section.

- `athena_cur_parquet`: legacy CUR delivered for Athena / Glue (`<report>/year=2026/month=11/
  <report>-00001.snappy.parquet`): snake_case names, timestamps and costs typed, but the rate, pricing
  and reservation columns are Parquet strings with `''` for "no value" (the CUR data dictionary's
  string-typed columns; a Glue crawler types the rest of the reservation figures as strings too).
- `azure_localised_csv`: an Azure portal download whose headers are localised and bilingual
  (`Abonnement-GUID (SubscriptionGuid)`), in a semicolon-separated file as a German Excel writes it.
- `ea_usage_extract`: the old EA portal "usage data extract" (`Usage Data Extract`, `Provisioning Status`
  preamble lines before the header; `Consumed Quantity`, `ExtendedCost`, `Instance ID` columns).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

# column -> Parquet type, in the order CUR for Athena writes them (a subset: what the reader maps, and a
# few string-typed columns it does not). VARCHAR columns carry '' for no value, never NULL.
ATHENA_CUR_COLUMNS = {
    "identity_line_item_id": "VARCHAR",
    "identity_time_interval": "VARCHAR",
    "bill_bill_type": "VARCHAR",
    "bill_billing_period_start_date": "TIMESTAMP",
    "bill_billing_period_end_date": "TIMESTAMP",
    "bill_payer_account_id": "VARCHAR",
    "line_item_usage_account_id": "VARCHAR",
    "line_item_line_item_type": "VARCHAR",
    "line_item_usage_start_date": "TIMESTAMP",
    "line_item_usage_end_date": "TIMESTAMP",
    "line_item_product_code": "VARCHAR",
    "line_item_usage_type": "VARCHAR",
    "line_item_operation": "VARCHAR",
    "line_item_resource_id": "VARCHAR",
    "line_item_usage_amount": "DOUBLE",
    "line_item_currency_code": "VARCHAR",
    "line_item_unblended_rate": "VARCHAR",
    "line_item_unblended_cost": "DOUBLE",
    "line_item_blended_rate": "VARCHAR",
    "line_item_blended_cost": "DOUBLE",
    "line_item_net_unblended_rate": "VARCHAR",
    "line_item_net_unblended_cost": "VARCHAR",
    "pricing_public_on_demand_cost": "DOUBLE",
    "pricing_public_on_demand_rate": "VARCHAR",
    "pricing_term": "VARCHAR",
    "pricing_unit": "VARCHAR",
    "product_instance_type": "VARCHAR",
    "product_region": "VARCHAR",
    "reservation_reservation_a_r_n": "VARCHAR",
    "reservation_effective_cost": "VARCHAR",
    "reservation_unused_amortized_upfront_fee_for_billing_period": "VARCHAR",
    "reservation_unused_recurring_fee": "VARCHAR",
    "reservation_start_time": "VARCHAR",
    "savings_plan_savings_plan_a_r_n": "VARCHAR",
    "savings_plan_savings_plan_effective_cost": "DOUBLE",
    "split_line_item_parent_resource_id": "VARCHAR",
    "resource_tags_user_team": "VARCHAR",
}


def athena_line(
    n: int,
    start: str,
    cost: str,
    *,
    kind: str = "Usage",
    resource: str = "i-0athena",
    team: str = "",
    ri: str = "",
    ri_effective: str = "",
    period: str = "2026-11",
) -> dict[str, str | None]:
    """One hour of one resource; `start` is `YYYY-MM-DD HH:MM:SS` (UTC). Strings not given are ''."""
    y, m = (int(x) for x in period.split("-"))
    end_y, end_m = (y + 1, 1) if m == 12 else (y, m + 1)
    hour = int(start[11:13])
    end = f"{start[:11]}{hour + 1:02d}{start[13:]}"
    return {
        "identity_line_item_id": f"li-{n:04d}",
        "identity_time_interval": f"{start}/{end}",
        "bill_bill_type": "Anniversary",
        "bill_billing_period_start_date": f"{y:04d}-{m:02d}-01 00:00:00",
        "bill_billing_period_end_date": f"{end_y:04d}-{end_m:02d}-01 00:00:00",
        "bill_payer_account_id": "111122223333",
        "line_item_usage_account_id": "444455556666",
        "line_item_line_item_type": kind,
        "line_item_usage_start_date": start,
        "line_item_usage_end_date": end,
        "line_item_product_code": "AmazonEC2",
        "line_item_usage_type": "USE1-BoxUsage:p4d.24xlarge" if kind != "Tax" else "",
        "line_item_operation": "RunInstances" if kind != "Tax" else "",
        "line_item_resource_id": resource if kind != "Tax" else "",
        "line_item_usage_amount": "1",
        "line_item_currency_code": "USD",
        "line_item_unblended_rate": cost if kind != "Tax" else "",
        "line_item_unblended_cost": cost,
        "line_item_blended_rate": cost if kind != "Tax" else "",
        "line_item_blended_cost": cost,
        "line_item_net_unblended_cost": "",
        "pricing_public_on_demand_cost": cost,
        "pricing_public_on_demand_rate": "" if kind == "Tax" else cost,
        "pricing_term": "OnDemand" if kind == "Usage" else "",
        "pricing_unit": "Hrs" if kind != "Tax" else "",
        "product_instance_type": "p4d.24xlarge" if kind != "Tax" else "",
        "product_region": "us-east-1",
        "reservation_reservation_a_r_n": ri,
        "reservation_effective_cost": ri_effective,
        "reservation_unused_amortized_upfront_fee_for_billing_period": "",
        "reservation_unused_recurring_fee": "",
        "reservation_start_time": "",
        "savings_plan_savings_plan_a_r_n": "",
        "savings_plan_savings_plan_effective_cost": None,
        "resource_tags_user_team": team,
    }


def athena_cur_parquet(path: Path, lines: list[dict[str, str | None]]) -> None:
    """Write the lines as CUR for Athena does: typed timestamps and DOUBLE costs, '' in string columns."""
    import duckdb

    names = list(ATHENA_CUR_COLUMNS)
    con = duckdb.connect()
    try:
        con.execute("create table t (" + ", ".join(f'"{c}" VARCHAR' for c in names) + ")")
        con.executemany(
            "insert into t values (" + ", ".join("?" for _ in names) + ")",
            [[r.get(c) for c in names] for r in lines],
        )
        cols = []
        for c, kind in ATHENA_CUR_COLUMNS.items():
            if kind == "VARCHAR":
                cols.append(f'coalesce("{c}", \'\') as "{c}"')  # never NULL: '' is what AWS writes
            else:
                cols.append(f'cast(nullif("{c}", \'\') as {kind}) as "{c}"')
        path.parent.mkdir(parents=True, exist_ok=True)
        con.execute(
            f"copy (select {', '.join(cols)} from t) to '{path}' (format parquet, compression snappy)"
        )  # noqa: S608 - test data
    finally:
        con.close()


# the German portal's bilingual headers: the localised name, then the English one in parentheses
AZURE_LOCALISED = {
    "SubscriptionGuid": "Abonnement-GUID",
    "ResourceGroup": "Ressourcengruppe",
    "ResourceLocation": "Ressourcenstandort",
    "UsageDateTime": "Nutzungsdatum/-uhrzeit",
    "MeterCategory": "Kategorie der Verbrauchseinheit",
    "MeterName": "Name der Verbrauchseinheit",
    "UsageQuantity": "Nutzungsmenge",
    "ResourceRate": "Ressourcensatz",
    "PreTaxCost": "Kosten vor Steuern",
    "ConsumedService": "Verbrauchter Dienst",
    "InstanceId": "Instanz-ID",
    "Tags": "Tags",
    "Currency": "Währung",
    "UnitOfMeasure": "Maßeinheit",
}


def azure_localised_csv(rows: list[dict[str, str]], delimiter: str = ";") -> bytes:
    """Legacy usage-details rows (English column names as keys) under bilingual headers, UTF-8 with a BOM."""
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\r\n")
    w.writerow([f"{german} ({english})" for english, german in AZURE_LOCALISED.items()])
    for r in rows:
        w.writerow([r.get(english, "") for english in AZURE_LOCALISED])
    return ("\ufeff" + buf.getvalue()).encode("utf-8")


# the EA portal's usage data extract: columns as the EA portal's CSV download names them
EA_EXTRACT_HEADER = [
    "AccountOwnerId", "Account Name", "ServiceAdministratorId", "SubscriptionId", "SubscriptionGuid",
    "Subscription Name", "Date", "Month", "Day", "Year", "Product", "Meter ID", "Meter Category",
    "Meter Sub-Category", "Meter Region", "Meter Name", "Consumed Quantity", "ResourceRate", "ExtendedCost",
    "Resource Location", "Consumed Service", "Instance ID", "ServiceInfo1", "ServiceInfo2", "AdditionalInfo",
    "Tags", "Store Service Identifier", "Department Name", "Cost Center", "Unit Of Measure", "Resource Group",
]  # fmt: skip
EA_EXTRACT_PREAMBLE = [
    "Usage Data Extract",
    "Provisioning Status,Enrollment Number,Start Date,End Date",
    "Active,12345678,09/01/2024,09/30/2024",
    "",
]


def ea_usage_extract(rows: list[dict[str, str]]) -> bytes:
    """An EA usage data extract: the preamble lines, then the header and the rows (keys: header names)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    for line in EA_EXTRACT_PREAMBLE:
        buf.write(line + "\r\n")
    w.writerow(EA_EXTRACT_HEADER)
    for r in rows:
        w.writerow([r.get(c, "") for c in EA_EXTRACT_HEADER])
    return buf.getvalue().encode("utf-8")
