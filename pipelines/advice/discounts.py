"""Which discount off on-demand an advice item uses: a config override, the bill's own, or the catalogue's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from pipelines.warehouse import rows, sql_text


@dataclass(frozen=True)
class Discount:
    """A discount off on-demand (0-1) and where it comes from, in words, for the item's basis."""

    value: float
    source: str  # config | bill | catalogue
    detail: str
    url: str | None = None
    as_of: str | None = None


def catalogue(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The dated, cited discounts of pipelines/catalog/gpu_purchase_discounts.csv."""
    return rows(con, sql_text("advice", "purchase_discounts"))


def from_config(overrides: dict[str, float], family: str, region: str | None) -> Discount | None:
    """`<family>/<region>` first, then `<family>`: the config's own figure for the family."""
    for key in (f"{family}/{region}", family):
        if key in overrides:
            return Discount(overrides[key], "config", f"the config's figure for {key}")
    return None


def from_catalogue(
    table: list[dict[str, Any]], provider: str | None, family: str, region: str | None, option: str
) -> Discount | None:
    """The catalogue's row for the family in the region, else for the family in any region ('*')."""
    for want in (region, "*"):
        for r in table:
            if (r["provider"], r["instance_family"], r["region_id"], r["option"]) == (
                provider,
                family,
                want,
                option,
            ):
                return Discount(
                    float(r["discount"]),
                    "catalogue",
                    f"{r['source']} (as of {r['as_of']})",
                    r["source_url"],
                    r["as_of"],
                )
    return None
