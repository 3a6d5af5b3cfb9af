"""AWS Cost and Usage Report, legacy (CUR 1) -> billing_line_items.

Reads the CSV(.gz) flavour (`lineItem/UnblendedCost`, `resourceTags/user:team`, ...) and the Athena /
Parquet snake_case flavour (`line_item_unblended_cost`, `resource_tags_user_team`,
`savings_plan_savings_plan_a_r_n`). Columns are matched by name ignoring case and separators, so column
order, the dynamic `product/*` / `resourceTags/*` / `costCategory/*` sets and `SavingsPlanARN` vs
`SavingsPlanArn` do not matter. Month folders with a manifest (`<report>-Manifest.json`: assemblyId,
reportKeys) are followed by the ingest loop: the newest assembly replaces the month.

Documented repair: a header whose field glues two CUR columns together because a comma is missing
(`pricing/OfferingClasspricing/PurchaseOption`, seen in real koku test data) is split back into the two
columns when the data rows have exactly one field more than the header.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipelines.catalog.mappings import catalog_bind
from pipelines.errors import RejectedFile
from pipelines.ingest.billing.decompress import open_text
from pipelines.ingest.billing.foreign import reject_foreign
from pipelines.ingest.billing.lines import Check, Spec
from pipelines.ingest.billing.reader import BillingReader
from pipelines.ingest.billing.relation import Relation, open_relation, read_header
from pipelines.ingest.billing.sql_expr import json_nonnull
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, quote_ident
from pipelines.ingest.sniff import csv_fields
from pipelines.sources.aws_cur import (
    ALIASES,
    CUR_COLUMNS,
    EMPTY_IS_NULL,
    EXTRA_COLUMNS,
    MONEY,
    OPTIONAL_NUMBERS,
    PRICES,
    REQUIRED,
    SPLIT_PREFIX,
    TIMES,
    split_glued_header,
    squash,
)


class AwsCurReader(BillingReader):
    presets = True
    dedupe_extra = True
    staging = "stg_aws__cur2"
    source_format = "aws_cur"

    def relation(
        self, con: duckdb.DuckDBPyConnection, file: SourceFile, path: Path, ctx: LoadContext
    ) -> Relation:
        options = self.options(ctx)
        if not path.name.lower().endswith(".parquet"):
            names, repair = self._header_repair(path, options.delimiter)
            if names is not None:
                rel = open_relation(con, file, path, options, names=names)
                rel.repairs.append(repair)
                return rel
        return open_relation(con, file, path, options)

    def _header_repair(self, path: Path, delimiter: str | None) -> tuple[list[str] | None, str]:
        import csv

        if path.name.lower().endswith(".parquet"):
            return None, ""
        header_line = read_header(path)
        delim = delimiter or ","
        try:
            with open_text(path) as f, csv_fields():
                reader = csv.reader(f, delimiter=delim)
                header = next(reader, [])
                first = next(reader, [])
        except csv.Error:  # a field past FIELD_LIMIT: no repair; reading the file says what is wrong
            return None, ""
        if not header_line or not first:
            return None, ""
        fixed = split_glued_header(header, first)
        if fixed is None:
            return None, ""
        return fixed

    def spec(self, con: duckdb.DuckDBPyConnection, rel: Relation, file: SourceFile, ctx: LoadContext) -> Spec:
        by_key: dict[str, str] = {}
        tag_cols: list[tuple[str, str]] = []  # (file column, raw tag key)
        extra_cols: list[str] = []
        for name in rel.types:
            low = name.lower()
            if low.startswith("resourcetags/"):
                tag_cols.append((name, name.split("/", 1)[1]))
                continue
            if low.startswith("resource_tags_") and rel.types[name].startswith("VARCHAR"):
                tag_cols.append((name, name[len("resource_tags_") :]))
                continue
            if low in ("resource_tags", "product", "cost_category", "discount"):
                continue  # CUR 2.0 maps: handled by AwsCur2Reader
            if low.startswith(("costcategory/", "cost_category_", "notags/")):
                extra_cols.append(name)
                continue
            by_key.setdefault(squash(name), name)
        if (
            squash("line_item_unblended_cost") not in by_key
            or squash("line_item_usage_start_date") not in by_key
        ):
            reject_foreign(rel, file)  # its lineItem/ columns look like a CUR's
            shown = ", ".join(list(rel.types)[:6]) + (", ..." if len(rel.types) > 6 else "")
            raise RejectedFile(
                file.uri,
                "not an AWS Cost and Usage Report: no lineItem/UnblendedCost or lineItem/UsageStartDate column "
                f"(header: {shown})",
                line=1,
            )
        used: set[str] = set()
        columns: dict[str, str] = {}
        spelled: dict[str, str] = {}  # canonical -> the file's spelling, for messages
        for canonical in CUR_COLUMNS:
            found = None
            for key in (squash(canonical), *ALIASES.get(canonical, ())):
                if key in by_key:
                    found = by_key[key]
                    break
            spelled[canonical] = found or canonical
            if found is None:
                columns[canonical] = "null::varchar"
            else:
                used.add(found)
                columns[canonical] = quote_ident(found)
                if (
                    (canonical in OPTIONAL_NUMBERS or canonical in EMPTY_IS_NULL)
                    and rel.fmt != "csv"
                    and rel.types[found].startswith("VARCHAR")
                ):
                    # CUR for Athena writes rates, reservation and pricing figures as Parquet strings, '' for
                    # no value (a CSV's empty cell is NULL already: relation.NULL_STRINGS)
                    columns[canonical] = f"nullif({quote_ident(found)}, '')"
        for key, name in by_key.items():
            if key.startswith(SPLIT_PREFIX) or key in {squash(c) for c in EXTRA_COLUMNS}:
                extra_cols.append(name)
        columns.update(self.maps(rel, columns))
        if "_tags_raw" not in columns:
            columns["_tags_raw"] = json_nonnull([(key, quote_ident(col)) for col, key in tag_cols])
        if "_x_extra" not in columns:
            # a STRUCT per line; the staging SQL writes it as JSON once per distinct value (few per bill)
            columns["_x_extra"] = _struct_of(list(dict.fromkeys(extra_cols)))
        checks = [Check(c, spelled[c], "required") for c in REQUIRED]
        checks += [Check(c, spelled[c], "money") for c in MONEY if c in used or columns[c] != "null::varchar"]
        checks += [Check(c, spelled[c], "price") for c in PRICES]
        checks += [Check(c, spelled[c], "number") for c in ("line_item_usage_amount",)]
        checks += [Check(c, spelled[c], "timestamp") for c in TIMES]
        checks = [c for c in checks if columns[c.column] != "null::varchar" or c.kind == "required"]
        split = "split_line_item_parent_resource_id"
        net, unblended = "line_item_net_unblended_cost", "line_item_unblended_cost"
        billed = f"case when {split} is not null then 0 else coalesce({net}::decimal(38, 12), {unblended}::decimal(38, 12), 0) end"
        effective = f"""case
            when {split} is not null then 0
            when line_item_line_item_type = 'SavingsPlanCoveredUsage'
                then coalesce(savings_plan_savings_plan_effective_cost::decimal(38, 12), 0)
            when line_item_line_item_type = 'SavingsPlanRecurringFee'
                then coalesce(savings_plan_total_commitment_to_date::decimal(38, 12), 0)
                    - coalesce(savings_plan_used_commitment::decimal(38, 12), 0)
            when line_item_line_item_type in ('SavingsPlanNegation', 'SavingsPlanUpfrontFee') then 0
            when line_item_line_item_type = 'DiscountedUsage' then coalesce(reservation_effective_cost::decimal(38, 12), 0)
            when line_item_line_item_type = 'RIFee'
                then coalesce(reservation_unused_amortized_upfront_fee_for_billing_period::decimal(38, 12), 0)
                    + coalesce(reservation_unused_recurring_fee::decimal(38, 12), 0)
            when line_item_line_item_type = 'Fee' and nullif(trim_text(reservation_reservation_a_r_n::varchar), '') is not null then 0
            else coalesce({net}::decimal(38, 12), {unblended}::decimal(38, 12), 0)
        end"""
        return Spec(
            columns=columns,
            checks=checks,
            file_billed=billed,
            file_effective=effective,
            bind=catalog_bind("aws"),
            line_item_key="x_line_item_id, charge_period_start, resource_id",
        )

    def maps(self, rel: Relation, columns: dict[str, str]) -> dict[str, str]:
        """CUR 2.0's map columns (overridden there); legacy CUR has none."""
        return {}


def _struct_of(cols: list[str]) -> str:
    """A STRUCT of the given file columns as VARCHAR (NULL when there are none)."""
    if not cols:
        return "null::struct(none varchar)"
    return "struct_pack(" + ", ".join(f"{quote_ident(c)} := {quote_ident(c)}::varchar" for c in cols) + ")"
