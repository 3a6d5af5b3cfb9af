"""The billing mapping tables (the billing readers' and Spark's), kept as data in pipelines/catalog/ (its README says where each
row comes from): a provider's service -> FOCUS ServiceCategory and ServiceSubcategory
(`service_categories.csv`) and a provider's unit -> FOCUS Unit Format (`pricing_units.csv`). The staging
SQL gets each table as parallel lists (bound values) and joins them as a small relation. FOCUS 1.2's
allowed (ServiceCategory, ServiceSubcategory) pairs (`focus_service_subcategories.csv`) are read by the
conformance check's SQL itself (sql/checks/billing_focus_conformance.sql).
"""

from __future__ import annotations

import csv
from functools import cache
from typing import Any

from pipelines.warehouse import CATALOG_DIR


@cache
def _rows(name: str) -> tuple[dict[str, str], ...]:
    with (CATALOG_DIR / name).open(newline="", encoding="utf-8") as f:
        return tuple(csv.DictReader(f))


def service_catalog(provider: str) -> dict[str, list[str]]:
    """The provider's services with their FOCUS category and subcategory, as the staging SQL binds them
    (`$category_services`, `$category_names`, `$category_subcategories`)."""
    rows = [r for r in _rows("service_categories.csv") if r["provider"] == provider]
    return {
        "category_services": [r["service"] for r in rows],
        "category_names": [r["service_category"] for r in rows],
        "category_subcategories": [r["service_subcategory"] for r in rows],
    }


def unit_catalog(provider: str) -> dict[str, list[str]]:
    """The provider's units and their FOCUS Unit Format spelling (`$unit_from`, `$unit_to`)."""
    rows = [r for r in _rows("pricing_units.csv") if r["provider"] == provider]
    return {"unit_from": [r["unit"] for r in rows], "unit_to": [r["focus_unit"] for r in rows]}


def catalog_bind(provider: str) -> dict[str, Any]:
    """Everything a provider's staging SQL binds from the mapping tables."""
    return {**service_catalog(provider), **unit_catalog(provider)}
