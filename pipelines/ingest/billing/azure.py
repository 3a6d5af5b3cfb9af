"""Azure Cost Management exports (cost and usage details) -> billing_line_items.

Column sets, matched by name ignoring case: EA (`CostInBillingCurrency`, `BillingCurrencyCode`, or the
older `Cost`, `BillingCurrency`), MCA camelCase (`costInBillingCurrency`, `InstanceName` as the resource
id) and legacy "usage details" v1 (`PreTaxCost`, `UsageDateTime`, `InstanceId`, UTF-8 BOM). Dates are
`MM/DD/YYYY`, `M/D/YYYY` or ISO; each row is one day. Tags are JSON members without their braces
(`"env": "prod","team": "nlp"`) in EA/MCA exports and a JSON object in legacy ones; both are read.

Actual and amortized exports are never mixed for one source: `options.dataset` (default `amortized`)
picks one. Files of the other dataset are skipped with a note when their path says so
(`..._ActualCost_...`, `.../actual/...`) or their run's `manifest.json` does (`exportConfig.type`
`ActualCost` / `AmortizedCost`). Every other file is checked by its rows before it is loaded: only an
actual export has reservation / savings plan purchases (`ChargeType` `Purchase` with `PricingModel`
`Reservation` / `SavingsPlan` or a reservation id), only an amortized one has `UnusedReservation` /
`UnusedSavingsPlan` rows or commitment-covered usage with a cost; a file of the other dataset is rejected
with the row that shows it (the warehouse is unchanged). Export folders
(`<YYYYMMDD-YYYYMMDD>/<run>/.../part_*.csv` with `manifest.json`) are followed: the newest run replaces
the month.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import duckdb

from pipelines.catalog.mappings import catalog_bind
from pipelines.errors import RejectedFile
from pipelines.ingest.billing.decompress import open_text
from pipelines.ingest.billing.deliveries import Delivery, is_manifest, plan_deliveries
from pipelines.ingest.billing.foreign import reject_foreign
from pipelines.ingest.billing.lines import Check, Spec
from pipelines.ingest.billing.reader import BillingReader
from pipelines.ingest.billing.relation import Relation, open_relation
from pipelines.ingest.billing.sql_expr import json_nonnull, src_cte
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, quote_ident
from pipelines.ingest.sniff import csv_fields
from pipelines.sources.aws_cur import squash
from pipelines.sources.options import AzureOptions, BillingOptions

# canonical `_src` column -> the squashed spellings of EA, MCA and legacy exports, in preference order
COLUMNS: dict[str, tuple[str, ...]] = {
    "usage_date": ("date", "usagedatetime", "usagedate"),
    "billing_period_start": ("billingperiodstartdate",),
    "billing_period_end": ("billingperiodenddate",),
    "cost": ("costinbillingcurrency", "cost", "pretaxcost", "costinbillingcurrencyamount", "extendedcost"),
    "quantity": ("quantity", "usagequantity", "consumedquantity"),
    "unit_price": ("unitprice", "resourcerate"),
    "payg_price": ("paygprice",),
    "currency": ("billingcurrencycode", "billingcurrency", "currency"),
    "charge_type": ("chargetype",),
    "pricing_model": ("pricingmodel",),
    "frequency": ("frequency",),
    "billing_account_id": ("billingaccountid",),
    "billing_account_name": ("billingaccountname",),
    "invoice_id": ("invoiceid",),
    "subscription_id": ("subscriptionid", "subscriptionguid"),
    "subscription_name": ("subscriptionname",),
    "resource_id": ("resourceid", "instancename", "instanceid"),
    "resource_name": ("resourcename",),
    "resource_type": ("resourcetype",),
    "resource_location": ("resourcelocationnormalized", "resourcelocation", "location"),
    "meter_region": ("meterregion",),
    "availability_zone": ("availabilityzone",),
    "meter_category": ("metercategory",),
    "meter_subcategory": ("metersubcategory",),
    "meter_name": ("metername",),
    "meter_id": ("meterid",),
    "product_name": ("productname", "product"),
    "unit_of_measure": ("unitofmeasure",),
    "consumed_service": ("consumedservice",),
    "publisher_name": ("publishername",),
    "reservation_id": ("reservationid",),
    "reservation_name": ("reservationname",),
    "benefit_id": ("benefitid",),
    "benefit_name": ("benefitname",),
    "additional_info": ("additionalinfo",),
}
REQUIRED = ("usage_date", "cost")
# the word starting a path token ("EA_ActualCost_...", ".../actual/..."), not inside one ("contractual")
_ACTUAL = re.compile(r"(?<![a-z])actual", re.IGNORECASE)
_AMORTIZED = re.compile(r"(?<![a-z])amorti[sz]ed", re.IGNORECASE)


# exportConfig.type of a Cost Management export manifest -> dataset (FocusCost and others: no verdict)
_MANIFEST_TYPES = {"actualcost": "actual", "usage": "actual", "amortizedcost": "amortized"}


def dataset_of_manifest(text: str) -> str | None:
    """'actual' / 'amortized' from a run's manifest.json (`exportConfig.type`), else None."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    config = doc.get("exportConfig") if isinstance(doc, dict) else None
    kind = config.get("type") if isinstance(config, dict) else None
    return _MANIFEST_TYPES.get(str(kind or "").lower())


def dataset_of_path(relative: str) -> str | None:
    """'actual' / 'amortized' when the path says which export it is, else None."""
    text = str(PurePosixPath(relative))
    if _AMORTIZED.search(text):
        return "amortized"
    if _ACTUAL.search(text):
        return "actual"
    return None


def column_key(name: str) -> str:
    """A column's squashed name; a localised portal download's bilingual header (`Abonnement-GUID
    (SubscriptionGuid)`, `Kosten vor Steuern (PreTaxCost)`) is known by the English name in parentheses."""
    m = _BILINGUAL.match(name)
    return squash(m.group(1)) if m else squash(name)


_BILINGUAL = re.compile(r"^[^()]*\(\s*([A-Za-z][A-Za-z0-9 _-]*?)\s*\)\s*$")
# the squashed names that mark a line as an Azure cost export's header (a date and a cost column)
_HEADER_DATES = set(COLUMNS["usage_date"])
_HEADER_COSTS = set(COLUMNS["cost"])
# how far into a file its header is looked for, past an EA usage data extract's preamble lines
PREAMBLE_LINES = 30
EA_EXTRACT = (
    "an Azure EA portal usage data extract ('Usage Data Extract' and 'Provisioning Status' lines before "
    "the header)"
)


def header_index(lines: list[str]) -> int | None:
    """The index of the first line that is an Azure cost export's header (it names a date and a cost
    column), in a file's first lines; None when there is none."""
    import csv

    for i, line in enumerate(lines):
        if not line.strip():
            continue
        delim = max((",", ";", "\t", "|"), key=line.count)
        try:
            with csv_fields():
                fields = {column_key(c) for c in next(csv.reader([line], delimiter=delim), [])}
        except csv.Error:  # not a header: a header's fields are short
            continue
        if fields & _HEADER_DATES and fields & _HEADER_COSTS:
            return i
    return None


class AzureReader(BillingReader):
    staging = "stg_azure__cost"
    tag_sets = "stg_azure__tag_sets"
    source_format = "azure"

    def plan(
        self, files: list[SourceFile], read_text: Callable[[SourceFile], str], options: BillingOptions
    ) -> tuple[list[Delivery], list[str]]:
        dataset = options.dataset if isinstance(options, AzureOptions) else "amortized"
        # a run folder's manifest says which export it is (newer exports: exportConfig.type)
        folders: dict[str, str] = {}
        for f in files:
            if is_manifest(f):
                try:
                    found = dataset_of_manifest(read_text(f))
                except Exception:  # noqa: BLE001 - unreadable manifests are reported by plan_deliveries
                    found = None
                if found is not None:
                    folders[str(PurePosixPath(f.relative).parent)] = found
        keep, skipped = [], []
        for f in files:
            other = _manifest_dataset(folders, f.relative) or dataset_of_path(f.relative)
            (skipped if other is not None and other != dataset else keep).append(f)
        deliveries, notes = plan_deliveries(keep, read_text, options)
        if skipped:
            notes.append(
                f"{len(skipped)} file(s) of the {'actual' if dataset == 'amortized' else 'amortized'} export "
                f"skipped (options.dataset: {dataset}; the two are never mixed; told by the file path or the "
                "manifest's exportConfig.type): "
                + ", ".join(PurePosixPath(f.relative).name for f in skipped[:3])
                + (", ..." if len(skipped) > 3 else "")
            )
        return deliveries, notes

    def relation(
        self, con: duckdb.DuckDBPyConnection, file: SourceFile, path: Path, ctx: LoadContext
    ) -> Relation:
        """The file as DuckDB reads it; an EA usage data extract is read from its header on, past the
        preamble lines the EA portal writes before it (or rejected, saying what to export instead, when
        no header follows them)."""
        options = self.options(ctx)
        if path.name.lower().endswith((".parquet", ".parquet.gz", ".json", ".json.gz")):
            return open_relation(con, file, path, options)
        with open_text(path) as f:
            first = [line.rstrip("\r\n") for _, line in zip(range(PREAMBLE_LINES), f, strict=False)]
        found = header_index(first)
        if found is None and first and first[0].strip(" ,;\t").lower() == "usage data extract":
            raise RejectedFile(
                file.uri,
                f"not supported: {EA_EXTRACT} whose header was not found in its first {PREAMBLE_LINES} lines; "
                "export cost details from Cost Management instead (Exports, or Cost analysis > Download > "
                "'Cost and usage details'), which the azure reader loads as they come",
                line=1,
            )
        if not found:
            return open_relation(con, file, path, options)
        rel = open_relation(con, file, path, options, skip=found)
        what = EA_EXTRACT if first[0].strip(" ,;\t").lower() == "usage data extract" else "a preamble"
        rel.repairs.append(f"{found} line(s) before the header skipped: {what}")
        return rel

    def probe(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> Relation:
        """Open the file, then check by its rows that it is the configured dataset (names may not say)."""
        rel = super().probe(con, file, ctx)
        options = self.options(ctx)
        dataset = options.dataset if isinstance(options, AzureOptions) else "amortized"
        spec = self.spec(con, rel, file, ctx)
        found = _dataset_of_rows(con, rel, spec)
        if found is None:
            return rel
        (actual, actual_row), (amortized, amortized_row) = found
        if not actual and not amortized:
            return rel  # no commitments: the two exports are the same
        if actual and amortized:
            # one file holding rows only the actual export has and rows only the amortized one has: either
            # way a commitment's cost would be counted twice (its purchase and its spread over usage)
            row = actual_row if dataset == "amortized" else amortized_row
            raise RejectedFile(
                file.uri,
                f"rows of both Azure exports: {actual} reservation / savings plan purchase row(s) with a cost, "
                f"which only the actual export has (first: data row {actual_row}), and {amortized} "
                "unused-commitment or amortised commitment-usage row(s), which only the amortized export has "
                f"(first: data row {amortized_row}); the two describe the same spend, so this file would count "
                f"a commitment twice: export the {dataset} dataset alone (options.dataset: {dataset})",
                line=_line(rel, row),
            )
        other, row, why = (
            ("actual", actual_row, f"{actual} reservation / savings plan purchase row(s)")
            if actual
            else (
                "amortized",
                amortized_row,
                f"{amortized} unused-commitment or amortised commitment-usage row(s)",
            )
        )
        if other != dataset:
            where = f" (data row {row})" if row else ""
            raise RejectedFile(
                file.uri,
                f"this is the {other} export: {why}{where}; the source loads the {dataset} export "
                f"(options.dataset: {dataset}), and the two describe the same spend, so mixing them would "
                f"count it twice: move the {other} export to a source of its own (options.dataset: {other})",
                line=_line(rel, row),
            )
        return rel

    def spec(self, con: duckdb.DuckDBPyConnection, rel: Relation, file: SourceFile, ctx: LoadContext) -> Spec:
        options = self.options(ctx)
        dataset = options.dataset if isinstance(options, AzureOptions) else "amortized"
        by_key: dict[str, str] = {}
        for name in rel.types:
            by_key.setdefault(column_key(name), name)
        columns: dict[str, str] = {}
        used: set[str] = set()
        for canonical, spellings in COLUMNS.items():
            found = next((by_key[s] for s in spellings if s in by_key), None)
            if found is None:
                columns[canonical] = "null::varchar"
            else:
                used.add(found)
                columns[canonical] = f"{quote_ident(found)}::varchar"
        missing = [c for c in REQUIRED if columns[c] == "null::varchar"]
        if missing:
            reject_foreign(rel, file)
            shown = ", ".join(list(rel.types)[:6]) + (", ..." if len(rel.types) > 6 else "")
            raise RejectedFile(
                file.uri,
                "not an Azure cost export: no "
                + " or ".join(f"{c} column ({'/'.join(COLUMNS[c][:3])})" for c in missing)
                + f" (header: {shown})",
                line=1,
            )
        tags = next((by_key[s] for s in ("tags",) if s in by_key), None)
        if tags is not None:
            used.add(tags)
            t = f"trim_text({quote_ident(tags)}::varchar)"
            # EA/MCA write the members without their braces; legacy and FOCUS exports include them
            columns["_tags_raw"] = (
                f"case when {t} is null or {t} in ('', '{{}}') then null "
                f"when starts_with({t}, '{{') then {t} else '{{' || {t} || '}}' end"
            )
        else:
            columns["_tags_raw"] = "null::varchar"
        extras = [n for n in rel.types if n not in used]
        columns["_x_extra"] = json_nonnull([(n, quote_ident(n)) for n in extras])
        shown = {c: columns[c].split("::")[0].strip('"') for c in COLUMNS}
        checks = [Check(c, shown[c], "required") for c in REQUIRED]
        checks += [Check("usage_date", shown["usage_date"], "date")]
        checks += [Check(c, shown[c], "date") for c in ("billing_period_start", "billing_period_end")]
        checks += [Check("cost", shown["cost"], "money"), Check("quantity", shown["quantity"], "number")]
        checks += [Check(c, shown[c], "price") for c in ("unit_price", "payg_price")]
        checks += [Check("_tags_raw", shown.get("tags", "Tags") if tags is None else tags, "json")]
        checks = [c for c in checks if c.kind == "required" or columns[c.column] != "null::varchar"]
        cost = "cost::decimal(38, 12)"
        commitment = (
            "(coalesce(lower(replace(pricing_model, ' ', '')) in ('reservation', 'savingsplan'), false) "
            "or coalesce(lower(charge_type) in ('unusedreservation', 'unusedsavingsplan'), false))"
        )
        billed = cost if dataset == "actual" else f"case when {commitment} then 0 else {cost} end"
        return Spec(
            columns=columns,
            checks=checks,
            file_billed=billed,
            file_effective=cost,
            bind={**catalog_bind("azure"), "dataset": dataset},
        )


def _manifest_dataset(folders: dict[str, str], relative: str) -> str | None:
    parts = PurePosixPath(relative).parts
    for i in range(len(parts) - 1, -1, -1):  # down to the source root ('.')
        found = folders.get(str(PurePosixPath(*parts[:i])))
        if found is not None:
            return found
    return None


# rows only one of the two datasets has (Microsoft Learn, "Get EA and MCA reservation costs and usage";
# formats.md 5.2): the actual export bills commitment purchases and bills covered usage at 0; the amortized
# export has no commitment purchase with a cost, prices covered usage at the amortised rate and adds unused
# commitment
_COMMITMENT = "lower(replace(coalesce(pricing_model, ''), ' ', '')) in ('reservation', 'savingsplan')"
_ACTUAL_ROW = (
    "lower(charge_type) = 'purchase' and "
    f"({_COMMITMENT} or nullif(trim(reservation_id), '') is not null or nullif(trim(benefit_id), '') is not null) "
    "and try_cast(cost as decimal(38, 12)) <> 0"
)
_AMORTIZED_ROW = (
    "lower(charge_type) in ('unusedreservation', 'unusedsavingsplan') or "
    f"(lower(charge_type) = 'usage' and {_COMMITMENT} and try_cast(cost as decimal(38, 12)) <> 0)"
)


def _line(rel: Relation, row: int | None) -> int | None:
    """The file line of a data row (a CSV's; None for other formats or no row)."""
    return row + rel.header_line if row and rel.fmt == "csv" else None


def _dataset_of_rows(
    con: duckdb.DuckDBPyConnection, rel: Relation, spec: Spec
) -> tuple[tuple[int, int | None], tuple[int, int | None]] | None:
    """((rows only the actual export has, the first's data row), (the same for the amortized export)), or
    None when the file has no charge type column (nothing tells). Neither kind: no commitments, the two
    exports are then the same."""
    if spec.columns.get("charge_type", "null::varchar") == "null::varchar":
        return None
    cte = src_cte(rel.from_clause, rel.row_expr, spec.columns)
    sql = (
        f"{cte}select count(*) filter (where {_ACTUAL_ROW}), min(_row) filter (where {_ACTUAL_ROW}), "  # noqa: S608 - our constants
        f"count(*) filter (where {_AMORTIZED_ROW}), min(_row) filter (where {_AMORTIZED_ROW}) from _src"
    )
    got = con.execute(sql, {k: v for k, v in rel.params.items() if f"${k}" in sql}).fetchall()[0]
    actual, actual_row, amortized, amortized_row = got
    return (actual, actual_row), (amortized, amortized_row)
