"""FOCUS 1.0 / 1.1 / 1.2 billing files (CSV, CSV.gz, Parquet) -> billing_line_items.

Columns are matched by name, ignoring case (`SkuPriceid`), so column order and extra columns do not
matter; 1.3's renamed columns are accepted under either name. Non-FOCUS columns (`x_*`, or stray ones
like the sample's `Id`) are kept in `x_extra`. Values are validated before anything is written: a
non-numeric cost or an impossible timestamp rejects the file with its data row and column.
"""

from __future__ import annotations

import re

import duckdb

from pipelines.ingest.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import (
    LoadContext,
    LoadResult,
    duckdb_problem,
    quote_ident,
    quote_literal,
    src_cte,
)
from pipelines.warehouse import one, sql_text

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
REQUIRED = ("BilledCost", "EffectiveCost", "ChargePeriodStart", "ChargePeriodEnd", "BillingCurrency")
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
NULL_STRINGS = ("NULL", "null", "")


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def focus_version(present: set[str]) -> str:
    if present & ADDED_IN_1_2:
        return "1.2"
    if present & ADDED_IN_1_1:
        return "1.1"
    return "1.0"


class FocusReader:
    kind = "focus"
    target_table = "billing_line_items"

    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        path = str(file.local_path)
        if file.size == 0:
            raise RejectedFile(file.uri, "file is empty (0 bytes); a FOCUS file has at least a header line")
        from_clause, types = self._relation(con, file)
        is_csv = not file.local_path.name.lower().endswith(".parquet")
        by_lower = {name.lower(): name for name in types}
        mapping: dict[str, str] = {}
        present: set[str] = set()
        for col in FOCUS_COLUMNS:
            found = next(
                (by_lower[c.lower()] for c in (col, *ALIASES.get(col, ())) if c.lower() in by_lower), None
            )
            if found is None:
                mapping[snake(col)] = "null::varchar"
                continue
            present.add(col)
            kind = types[found]
            expr = quote_ident(found)
            if kind.startswith(("MAP", "STRUCT")):
                expr = f"to_json({expr})::varchar"
            mapping[snake(col)] = (
                f"{expr}::varchar" if is_csv else f"nullif(nullif(trim({expr}::varchar), 'NULL'), '')"
            )
        missing = [c for c in REQUIRED if c not in present]
        if missing:
            header = ", ".join(list(types)[:8]) + (", ..." if len(types) > 8 else "")
            raise RejectedFile(
                file.uri,
                f"missing required FOCUS column(s) {', '.join(missing)} (header: {header})",
                line=1,
            )
        used = {by_lower[c.lower()] for c in FOCUS_COLUMNS if c.lower() in by_lower}
        used |= {by_lower[a.lower()] for al in ALIASES.values() for a in al if a.lower() in by_lower}
        extras = [name for name in types if name not in used]
        mapping["_x_extra"] = (
            "json_object(" + ", ".join(f"{quote_literal(n)}, {quote_ident(n)}" for n in extras) + ")::varchar"
            if extras
            else "null::varchar"
        )
        mapping["_x_instance_type"] = _first_of(by_lower, INSTANCE_TYPE_COLUMNS)
        mapping["_x_usage_type"] = _first_of(by_lower, USAGE_TYPE_COLUMNS)
        mapping["_x_gpu_count"] = _first_of(by_lower, GPU_COUNT_COLUMNS)
        cte = src_cte(from_clause, mapping)
        params = {"path": path}
        self._validate(con, cte, params, file)

        tags = ctx.config.tags
        stg = sql_text("staging", "stg_focus__billing_line_items")
        bind = {
            **params,
            "team_keys": _norm_keys(con, tags["team"]),
            "project_keys": _norm_keys(con, tags["project"]),
            "owner_keys": _norm_keys(con, tags["owner"]),
            "job_id_keys": _norm_keys(con, tags["job_id"]),
            "host_keys": _norm_keys(con, tags["host"]),
            "focus_version": focus_version(present),
            "source_name": ctx.source.name,
            "source_file": file.uri,
            "file_id": ctx.file_id,
            "loaded_at": ctx.loaded_at,
            "default_currency": ctx.config.currency,
        }
        try:
            con.execute(f"insert into billing_line_items by name\n{cte}select * from (\n{stg}\n)", bind)  # noqa: S608 - identifiers only, values are bound
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot load: {duckdb_problem(exc)}") from None
        row = one(
            con,
            "select count(*), sum(billed_cost), sum(effective_cost), min(x_billing_period) "
            "from billing_line_items where x_file_id = $f",
            {"f": ctx.file_id},
        )
        assert row is not None
        periods = one(
            con,
            "select count(distinct x_billing_period) from billing_line_items where x_file_id = $f",
            {"f": ctx.file_id},
        )
        return LoadResult(
            rows=row[0],
            billed_cost_sum=row[1],
            effective_cost_sum=row[2],
            billing_period=row[3] if periods and periods[0] == 1 else None,
        )

    def _relation(self, con: duckdb.DuckDBPyConnection, file: SourceFile) -> tuple[str, dict[str, str]]:
        name = file.local_path.name.lower()
        if name.endswith(".parquet"):
            from_clause = "read_parquet($path)"
        else:
            nulls = ", ".join(quote_literal(s) for s in NULL_STRINGS)
            from_clause = f"read_csv($path, header = true, all_varchar = true, nullstr = [{nulls}])"
        try:
            described = con.execute(f"describe select * from {from_clause}", {"path": str(file.local_path)})  # noqa: S608 - identifiers only, values are bound
            types = {r[0]: r[1] for r in described.fetchall()}
            # read the whole file once so truncated or corrupt data is found before anything is written
            one(con, f"select count(*) from {from_clause}", {"path": str(file.local_path)})  # noqa: S608 - identifiers only, values are bound
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot read: {duckdb_problem(exc)}") from None
        return from_clause, types

    def _validate(
        self, con: duckdb.DuckDBPyConnection, cte: str, params: dict[str, str], file: SourceFile
    ) -> None:
        """Reject the file at its first value that cannot be typed (row and column named)."""
        checks: list[
            tuple[str, str, str]
        ] = []  # (FOCUS column, condition that is true when bad, expectation)
        for col in REQUIRED:
            checks.append((col, f"{quote_ident(snake(col))} is null", "a value (it is required)"))
        for col in MONEY:
            c = quote_ident(snake(col))
            checks.append(
                (col, f"{c} is not null and try_cast({c} as decimal(18, 6)) is null", "a decimal number")
            )
        for col in UNIT_PRICES:
            c = quote_ident(snake(col))
            checks.append(
                (col, f"{c} is not null and try_cast({c} as decimal(28, 12)) is null", "a decimal number")
            )
        for col in QUANTITIES:
            c = quote_ident(snake(col))
            checks.append((col, f"{c} is not null and try_cast({c} as double) is null", "a number"))
        for col in TIMESTAMPS:
            c = quote_ident(snake(col))
            checks.append(
                (col, f"{c} is not null and parse_utc({c}, 'UTC') is null", "an ISO 8601 date/time (UTC)")
            )
        for col in JSON_COLUMNS:
            c = quote_ident(snake(col))
            checks.append(
                (col, f"{c} is not null and trim({c}) <> '' and not json_valid({c})", "a JSON object")
            )
        start, end = quote_ident("charge_period_start"), quote_ident("charge_period_end")
        checks.append(
            (
                "ChargePeriodEnd",
                f"parse_utc({end}, 'UTC') < parse_utc({start}, 'UTC')",
                "not before ChargePeriodStart",
            )
        )
        selects = ", ".join(f"min(_row) filter (where {cond})" for _, cond, _ in checks)
        try:
            first_bad = one(con, f"{cte}select {selects} from _src", params)  # noqa: S608 - identifiers only, values are bound
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot read: {duckdb_problem(exc)}") from None
        assert first_bad is not None
        bad = [(row, check) for row, check in zip(first_bad, checks, strict=True) if row is not None]
        if not bad:
            return
        row, (col, _, expected) = min(bad, key=lambda b: b[0])
        value = one(
            con,
            f"{cte}select {quote_ident(snake(col))} from _src where _row = $row",  # noqa: S608 - identifiers only
            {**params, "row": row},
        )
        shown = value[0] if value else None
        problem = (
            f"expected {expected}, found {shown!r} (data row {row})"
            if shown is not None
            else f"expected {expected}, found nothing (data row {row})"
        )
        more = len(bad) - 1
        if more:
            problem += f"; {more} other column(s) also have bad values"
        raise RejectedFile(file.uri, problem, line=row + 1, column=col)


def _first_of(by_lower: dict[str, str], candidates: tuple[str, ...]) -> str:
    for c in candidates:
        if c in by_lower:
            return f"{quote_ident(by_lower[c])}::varchar"
    return "null::varchar"


def _norm_keys(con: duckdb.DuckDBPyConnection, keys: list[str]) -> list[str]:
    """Config tag aliases in the same normalised form as the stored tag keys, config order kept."""
    got = one(con, "select list_transform($k, lambda k: normalize_tag_key(k))", {"k": keys})
    return list(dict.fromkeys(got[0] if got else []))
