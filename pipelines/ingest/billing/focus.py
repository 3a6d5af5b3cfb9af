"""FOCUS 1.0 / 1.1 / 1.2 billing files (CSV, CSV.gz, Parquet) -> billing_line_items.

Columns are matched by name, ignoring case (`SkuPriceid`), so column order and extra columns do not
matter; 1.3's renamed columns are accepted under either name. Provider FOCUS exports work as they come:
AWS Data Exports "FOCUS with AWS columns" (Parquet or CSV.gz in `BILLING_PERIOD=` folders with a
manifest, followed like CUR 2.0), Azure "FocusCost" (`x_BilledCostInUsd`, `x_ResourceGroupName`, ...),
OCI's and GCP's FOCUS reports. OCI's *native* cost reports (`lineItem/referenceNo`, `cost/myCost`, ...)
are not FOCUS and are not supported: every billing reader rejects them with a message pointing at OCI's
FOCUS export. Non-FOCUS columns (`x_*`, or stray ones like the sample's `Id`) are kept in `x_extra`.
A file without `BillingCurrency` (the spec's worked examples) is read in the config's `currency`.
Values are cast strictly in one pass: a non-numeric cost or an impossible timestamp rejects the file
with its data row and column.
"""

from __future__ import annotations

import re

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.billing.foreign import reject_foreign
from pipelines.ingest.billing.lines import Check, Spec
from pipelines.ingest.billing.lookups import prepare_lookups
from pipelines.ingest.billing.reader import BillingReader
from pipelines.ingest.billing.relation import Relation
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, quote_ident

# FOCUS 1.2 columns (PascalCase) in spec order; the snake_case form is the warehouse column.
FOCUS_COLUMNS = (
    "AvailabilityZone", "BilledCost", "BillingAccountId", "BillingAccountName", "BillingAccountType",
    "BillingCurrency", "BillingPeriodEnd", "BillingPeriodStart", "CapacityReservationId",
    "CapacityReservationStatus", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargeFrequency",
    "ChargePeriodEnd", "ChargePeriodStart", "CommitmentDiscountCategory", "CommitmentDiscountId",
    "CommitmentDiscountName", "CommitmentDiscountQuantity", "CommitmentDiscountStatus",
    "CommitmentDiscountType", "CommitmentDiscountUnit", "ConsumedQuantity", "ConsumedUnit",
    "ContractedCost", "ContractedUnitPrice", "EffectiveCost", "InvoiceId", "InvoiceIssuerName", "ListCost",
    "ListUnitPrice", "PricingCategory", "PricingCurrency", "PricingCurrencyContractedUnitPrice",
    "PricingCurrencyEffectiveCost", "PricingCurrencyListUnitPrice", "PricingQuantity", "PricingUnit",
    "ProviderName", "PublisherName", "RegionId", "RegionName", "ResourceId", "ResourceName", "ResourceType",
    "ServiceCategory", "ServiceName", "ServiceSubcategory", "SkuId", "SkuMeter", "SkuPriceDetails",
    "SkuPriceId", "SubAccountId", "SubAccountName", "SubAccountType", "Tags",
)  # fmt: skip
REQUIRED = ("BilledCost", "EffectiveCost", "ChargePeriodStart", "ChargePeriodEnd")
# FOCUS 1.3 renames; either spelling is read into the 1.2 column
ALIASES = {"ProviderName": ("ServiceProviderName",), "PublisherName": ("HostProviderName",)}
ADDED_IN_1_1 = {"ServiceSubcategory", "SkuMeter", "SkuPriceDetails", "CapacityReservationId",
                "CapacityReservationStatus", "CommitmentDiscountQuantity", "CommitmentDiscountUnit"}  # fmt: skip
ADDED_IN_1_2 = {"BillingAccountType", "SubAccountType", "InvoiceId", "PricingCurrency",
                "PricingCurrencyContractedUnitPrice", "PricingCurrencyEffectiveCost",
                "PricingCurrencyListUnitPrice"}  # fmt: skip
# provider extras we read for GPU detection, by lower-case name
INSTANCE_TYPE_COLUMNS = ("x_instancetype", "x_instance_type", "x_skuinstancetype")
USAGE_TYPE_COLUMNS = ("x_usagetype", "x_usage_type")
GPU_COUNT_COLUMNS = ("x_gpucount", "x_gpu_count")

MONEY = ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "PricingCurrencyEffectiveCost")
UNIT_PRICES = ("ListUnitPrice", "ContractedUnitPrice", "PricingCurrencyListUnitPrice",
               "PricingCurrencyContractedUnitPrice")  # fmt: skip
QUANTITIES = ("ConsumedQuantity", "PricingQuantity", "CommitmentDiscountQuantity")
TIMESTAMPS = ("ChargePeriodStart", "ChargePeriodEnd", "BillingPeriodStart", "BillingPeriodEnd")
JSON_COLUMNS = ("Tags", "SkuPriceDetails")
# text columns that lines are matched on: trimmed in text files (CSV), where padding is seen
TRIMMED = ("availability_zone", "billing_currency", "resource_id")


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def focus_version(present: set[str]) -> str:
    if present & ADDED_IN_1_2:
        return "1.2"
    if present & ADDED_IN_1_1:
        return "1.1"
    return "1.0"


class FocusReader(BillingReader):
    presets = True
    dedupe_extra = True
    sample_extra = True  # x_ columns may vary per line (Azure FocusCost's x_BilledCostInUsd)
    staging = "stg_focus__billing_line_items"
    looks_up_tags = True
    source_format = "focus"

    def _lookups(self, con: duckdb.DuckDBPyConnection, rel: Relation, spec: Spec, cte: str) -> str | None:
        return prepare_lookups(con, rel, spec, cte)

    def spec(self, con: duckdb.DuckDBPyConnection, rel: Relation, file: SourceFile, ctx: LoadContext) -> Spec:
        types = rel.types
        by_lower = {name.lower(): name for name in types}
        columns: dict[str, str] = {}
        present: set[str] = set()
        shown: dict[str, str] = {}
        for col in FOCUS_COLUMNS:
            found = next(
                (by_lower[c.lower()] for c in (col, *ALIASES.get(col, ())) if c.lower() in by_lower), None
            )
            shown[snake(col)] = found or col
            if found is None:
                columns[snake(col)] = "null::varchar"
                continue
            present.add(col)
            kind = types[found]
            expr = quote_ident(found)
            if kind.startswith(("MAP", "STRUCT")):
                columns[snake(col)] = f"to_json({expr})::varchar"
            elif kind.startswith("VARCHAR") and rel.fmt == "parquet":
                # machine-written, as CUR's: not trimmed (a trim costs time on every line and column)
                columns[snake(col)] = f"nullif(nullif({expr}, 'NULL'), '')"
            elif kind.startswith("VARCHAR") and rel.fmt != "csv":
                columns[snake(col)] = f"nullif(nullif(trim_text({expr}), 'NULL'), '')"
            elif snake(col) in TRIMMED:
                columns[snake(col)] = f"nullif(trim_text({expr}::varchar), '')"
            else:
                columns[snake(col)] = expr
        missing = [c for c in REQUIRED if c not in present]
        if missing:
            reject_foreign(rel, file)
            header = ", ".join(list(types)[:8]) + (", ..." if len(types) > 8 else "")
            raise RejectedFile(
                file.uri,
                f"missing required FOCUS column(s) {', '.join(missing)} (header: {header})",
                line=1 if rel.fmt == "csv" else None,
            )
        used = {by_lower[c.lower()] for c in FOCUS_COLUMNS if c.lower() in by_lower}
        used |= {by_lower[a.lower()] for al in ALIASES.values() for a in al if a.lower() in by_lower}
        extras = [name for name in types if name not in used and name not in ("file_row_number",)]
        # a STRUCT of the typed values per line: the staging SQL writes it as JSON (what json_object would
        # give) once per distinct value, not once per line
        columns["_x_extra"] = (
            "struct_pack(" + ", ".join(f"{quote_ident(n)} := {quote_ident(n)}" for n in extras) + ")"
            if extras
            else "null::struct(none varchar)"
        )
        # the tags as JSON text (a Parquet MAP or STRUCT is written as JSON: an empty MAP is the set '{}', as
        # the same file's CSV gives): tag_set_id hashes it, and it is the set's raw text. JSON written by
        # to_json has nothing to trim.
        tags = columns["tags"]
        written_as_json = types.get(shown["tags"], "").startswith(("MAP", "STRUCT"))
        columns["_tags_raw"] = tags if written_as_json else f"nullif(trim_text({tags}::varchar), '')"
        # a timestamp's text, the key the staging SQL looks it up by (lookups.py); NULL when the file types it
        for col in TIMESTAMPS:
            text = col in present and (rel.fmt == "csv" or types[shown[snake(col)]].startswith("VARCHAR"))
            columns[f"_ts_{snake(col)}"] = columns[snake(col)] if text else "null::varchar"
        columns["_x_instance_type"] = _first_of(by_lower, INSTANCE_TYPE_COLUMNS)
        columns["_x_usage_type"] = _first_of(by_lower, USAGE_TYPE_COLUMNS)
        columns["_x_gpu_count"] = _first_of(by_lower, GPU_COUNT_COLUMNS)
        derived = {  # GPU fields of the staging SQL -> the _src columns they are read from
            "x_instance_type": [
                columns[c] for c in ("_x_instance_type", "sku_price_details", "_x_usage_type")
            ],
            "x_gpu_count": [columns[c] for c in ("_x_gpu_count", "sku_price_details")],
        }
        checks: list[Check] = [Check(snake(c), shown[snake(c)], "required") for c in REQUIRED]
        checks += [Check(snake(c), shown[snake(c)], "money") for c in MONEY]
        checks += [Check(snake(c), shown[snake(c)], "price") for c in UNIT_PRICES]
        checks += [Check(snake(c), shown[snake(c)], "number") for c in QUANTITIES]
        checks += [Check(snake(c), shown[snake(c)], "timestamp") for c in TIMESTAMPS]
        checks += [Check(snake(c), shown[snake(c)], "json") for c in JSON_COLUMNS]
        checks = [c for c in checks if c.kind == "required" or columns[c.column] != "null::varchar"]
        # FOCUS 1.0 has no ServiceSubcategory: derived from ServiceCategory (the staging SQL says how)
        derive_subcategory = "ServiceSubcategory" not in present and "ServiceCategory" in present
        for c in checks:  # the FOCUS spelling in messages, as the spec writes it
            c.shown = next(col for col in FOCUS_COLUMNS if snake(col) == c.column)
        return Spec(
            columns=columns,
            checks=checks,
            file_billed="billed_cost::decimal(38, 12)",
            file_effective="effective_cost::decimal(38, 12)",
            # cast as the staging SQL casts them: an observed insert casts each value once, not twice
            observed_types={"billed_cost": "decimal(38, 12)", "effective_cost": "decimal(38, 12)"},
            bind={"focus_version": focus_version(present), "derive_subcategory": derive_subcategory},
            # a FOCUS column the file lacks is NULL on every line (billing_currency gets the default; a
            # derived ServiceSubcategory is not), and so is a GPU field none of its sources feeds: such
            # columns are left out of the insert
            absent=[
                snake(c)
                for c in FOCUS_COLUMNS
                if c not in present
                and snake(c) != "billing_currency"
                and not (c == "ServiceSubcategory" and derive_subcategory)
            ]
            + [x for x, fed_by in derived.items() if all(v == "null::varchar" for v in fed_by)],
        )


def _first_of(by_lower: dict[str, str], candidates: tuple[str, ...]) -> str:
    for c in candidates:
        if c in by_lower:
            return f"{quote_ident(by_lower[c])}::varchar"
    return "null::varchar"
