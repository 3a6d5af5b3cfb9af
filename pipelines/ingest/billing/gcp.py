"""Google Cloud billing export (BigQuery standard or resource-level table) -> billing_line_items.

Reads the table exported as CSV (`service.description`, `usage_start_time`, ...; repeated records such
as `labels` and `credits` flattened to Python-repr text, as in extracts) or as newline-delimited JSON
(BigQuery `EXPORT DATA ... FORMAT = JSON`: nested records and arrays). `cost` is before credits; credits
(negative) are added for the billed and effective cost. `invoice.month` is in US Pacific time
(`options.invoice_timezone`). Labels are the tags; `project.labels` are added where a resource label with
the same key is absent (`options.project_labels: false` turns that off).
"""

from __future__ import annotations

import duckdb

from pipelines.catalog.mappings import catalog_bind
from pipelines.errors import RejectedFile
from pipelines.ingest.billing.foreign import reject_foreign
from pipelines.ingest.billing.lines import Check, Spec
from pipelines.ingest.billing.reader import BillingReader
from pipelines.ingest.billing.relation import Relation
from pipelines.ingest.billing.sql_expr import json_nonnull
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, quote_ident
from pipelines.sources.options import GcpOptions

# canonical `_src` column -> dotted path in the export
COLUMNS = {
    "billing_account_id": "billing_account_id",
    "service_description": "service.description",
    "sku_id": "sku.id",
    "sku_description": "sku.description",
    "usage_start_time": "usage_start_time",
    "usage_end_time": "usage_end_time",
    "project_id": "project.id",
    "project_name": "project.name",
    "location_location": "location.location",
    "location_region": "location.region",
    "location_zone": "location.zone",
    "cost": "cost",
    "cost_at_list": "cost_at_list",
    "currency": "currency",
    "usage_amount": "usage.amount",
    "usage_unit": "usage.unit",
    "usage_amount_in_pricing_units": "usage.amount_in_pricing_units",
    "usage_pricing_unit": "usage.pricing_unit",
    "invoice_month": "invoice.month",
    "cost_type": "cost_type",
    "resource_name": "resource.name",
    "resource_global_name": "resource.global_name",
}
EXTRA = ("service.id", "export_time", "currency_conversion_rate", "project.number", "project.ancestry_numbers",
         "location.country", "partition_date", "transaction_type", "seller_name", "invoice.publisher_type")  # fmt: skip
REQUIRED = ("usage_start_time", "usage_end_time", "cost")


def path_expr(con: duckdb.DuckDBPyConnection, rel: Relation, dotted: str) -> str | None:
    """SQL for a dotted export path: a flat CSV column `a.b`, or a nested JSON record `"a"."b"`.

    None when the file has no such path, at any depth: older exports lack fields newer ones carry
    (`invoice.publisher_type`, `project.number`), and DuckDB types a JSON record by the fields its lines
    have, so a missing nested field reads as NULL instead of failing the whole file.
    """
    flat = rel.column(dotted)
    if flat is not None:
        return quote_ident(flat)
    head, _, rest = dotted.partition(".")
    top = rel.column(head)
    if top is None or not rest:
        return None
    expr = quote_ident(top)
    kind = rel.types[top]
    parts = rest.split(".")
    for i, part in enumerate(parts):
        if not kind.startswith("STRUCT"):
            return None
        try:
            fields = dict(con.dtype(kind).children)
        except duckdb.Error:  # a type DuckDB cannot parse back: name the path as it is; the read will tell
            return expr + "".join(f".{quote_ident(p)}" for p in parts[i:])
        name = part if part in fields else next((f for f in fields if f.lower() == part.lower()), None)
        if name is None:
            return None
        expr += f".{quote_ident(name)}"
        kind = str(fields[name])
    return expr


class GcpReader(BillingReader):
    staging = "stg_gcp__billing"
    tag_sets = "stg_gcp__tag_sets"
    tag_sets_derived = True  # the raw text merges the resource and project labels the hash is of
    source_format = "gcp"
    timestamp_forms = (
        "an ISO 8601 date/time (2024-09-01 00:00:00 UTC, 2024-09-01 00:00:00+00:00 or 2024-09-01T00:00:00Z)"
    )

    def spec(self, con: duckdb.DuckDBPyConnection, rel: Relation, file: SourceFile, ctx: LoadContext) -> Spec:
        options = self.options(ctx)
        assert isinstance(options, GcpOptions)
        columns: dict[str, str] = {}
        shown: dict[str, str] = {}
        for canonical, dotted in COLUMNS.items():
            expr = path_expr(con, rel, dotted)
            columns[canonical] = f"{expr}::varchar" if expr else "null::varchar"
            shown[canonical] = dotted
        missing = [c for c in REQUIRED if columns[c] == "null::varchar"]
        if missing:
            reject_foreign(rel, file)
            header = ", ".join(list(rel.types)[:6]) + (", ..." if len(rel.types) > 6 else "")
            raise RejectedFile(
                file.uri,
                f"not a Google Cloud billing export: no {', '.join(COLUMNS[c] for c in missing)} "
                f"(columns: {header})",
                line=1 if rel.fmt == "csv" else None,
            )
        credits = path_expr(con, rel, "credits")
        if credits is None:
            columns["_credits"] = "null::varchar"
        elif rel.types[rel.column("credits") or ""].startswith("STRUCT") or "[]" in rel.types.get(
            rel.column("credits") or "", ""
        ):
            columns["_credits"] = f"list_sum(list_transform({credits}, lambda c: c.amount::decimal(38, 12)))"
        else:  # text: a JSON array or Python repr of records
            columns["_credits"] = (
                f"list_sum(list_transform(json_transform(replace(replace({credits}, '''', '\"'), ': None', ': null'), "
                '\'[{"amount": "VARCHAR"}]\'), lambda c: c.amount::decimal(38, 12)))'
            )
        columns["_labels_raw"] = self._labels(con, rel, "labels")
        columns["_project_labels_raw"] = (
            self._labels(con, rel, "project.labels") if options.project_labels else "null::varchar"
        )
        system = self._labels(con, rel, "system_labels")
        columns["_machine_spec"] = (
            f"json_extract_string(gcp_labels_json({system}), '$.\"compute.googleapis.com/machine_spec\"')"
            if system != "null::varchar"
            else "null::varchar"
        )
        extras = [(e, p) for e in EXTRA if (p := path_expr(con, rel, e)) is not None]
        columns["_x_extra"] = json_nonnull(extras)
        checks = [Check(c, shown[c], "required") for c in REQUIRED]
        checks += [Check(c, shown[c], "timestamp") for c in ("usage_start_time", "usage_end_time")]
        checks += [Check(c, shown[c], "money") for c in ("cost", "cost_at_list")]
        checks += [Check(c, shown[c], "number") for c in ("usage_amount", "usage_amount_in_pricing_units")]
        checks = [c for c in checks if c.kind == "required" or columns[c.column] != "null::varchar"]
        total = "(cost::decimal(38, 12) + coalesce(_credits::decimal(38, 12), 0))"
        return Spec(
            columns=columns,
            checks=checks,
            file_billed=total,
            file_effective=total,
            bind={**catalog_bind("gcp"), "invoice_timezone": options.invoice_timezone},
        )

    def _labels(self, con: duckdb.DuckDBPyConnection, rel: Relation, dotted: str) -> str:
        expr = path_expr(con, rel, dotted)
        if expr is None:
            return "null::varchar"
        name = rel.column(dotted) or rel.column(dotted.split(".")[0]) or ""
        if rel.types.get(name, "VARCHAR").startswith("VARCHAR"):
            return f"{expr}::varchar"
        return f"to_json({expr})::varchar"
