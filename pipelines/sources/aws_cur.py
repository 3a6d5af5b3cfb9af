"""The AWS Cost and Usage Report's columns as wastewatch reads them: the CUR 2.0 snake_case names, the other
spellings that mean the same column, which columns are figures and times, and how a name is matched
(ignoring case and separators, so `lineItem/UnblendedCost` is `line_item_unblended_cost`). Shared by the
DuckDB readers (pipelines/ingest/billing/aws_cur.py, aws_cur2.py) and Spark's (pipelines/transform/spark/
bill_cur.py), so the two name a file's columns alike.
"""

from __future__ import annotations

import re

# the CUR 2.0 snake_case names the staging SQL reads (legacy names map onto them)
CUR_COLUMNS = (
    "bill_billing_period_start_date", "bill_billing_period_end_date", "bill_payer_account_id",
    "bill_payer_account_name", "bill_invoice_id", "bill_invoicing_entity", "bill_bill_type",
    "identity_line_item_id", "line_item_line_item_type", "line_item_usage_start_date",
    "line_item_usage_end_date", "line_item_usage_account_id", "line_item_usage_account_name",
    "line_item_product_code", "line_item_usage_type", "line_item_availability_zone", "line_item_resource_id",
    "line_item_usage_amount", "line_item_currency_code", "line_item_unblended_rate", "line_item_net_unblended_rate",
    "line_item_unblended_cost", "line_item_net_unblended_cost", "line_item_line_item_description",
    "line_item_legal_entity", "pricing_public_on_demand_cost", "pricing_public_on_demand_rate", "pricing_unit",
    "pricing_purchase_option", "pricing_rate_code", "pricing_rate_id", "product_sku", "product_region_code",
    "product_location", "product_product_name", "product_instance_type", "reservation_reservation_a_r_n",
    "reservation_effective_cost", "reservation_unused_amortized_upfront_fee_for_billing_period",
    "reservation_unused_recurring_fee", "savings_plan_savings_plan_a_r_n",
    "savings_plan_savings_plan_effective_cost", "savings_plan_total_commitment_to_date",
    "savings_plan_used_commitment", "split_line_item_parent_resource_id",
)  # fmt: skip
# other spellings of a column (squashed: lower case, letters and digits only)
ALIASES = {
    "product_region_code": ("productregion",),
    "product_product_name": ("productservicename",),
    "product_instance_type": ("productinstancetypefamily",),
}
# non-FOCUS fields kept in x_extra (besides split cost allocation and cost categories): the line item type
# (how the costs were derived), the usage type (instance type, region, spot) and the operation. Few and
# low-cardinality on purpose: x_extra is built once per distinct combination, and every byte of it is
# stored on each of a bill's millions of lines (the rest of the CUR maps onto FOCUS columns).
EXTRA_COLUMNS = ("line_item_line_item_type", "line_item_usage_type", "line_item_operation")
SPLIT_PREFIX = "splitlineitem"
MONEY = (
    "line_item_unblended_cost", "line_item_net_unblended_cost", "pricing_public_on_demand_cost",
    "reservation_effective_cost", "reservation_unused_amortized_upfront_fee_for_billing_period",
    "reservation_unused_recurring_fee", "savings_plan_savings_plan_effective_cost",
    "savings_plan_total_commitment_to_date", "savings_plan_used_commitment",
)  # fmt: skip
PRICES = ("line_item_unblended_rate", "line_item_net_unblended_rate", "pricing_public_on_demand_rate")
TIMES = (
    "line_item_usage_start_date", "line_item_usage_end_date", "bill_billing_period_start_date",
    "bill_billing_period_end_date",
)  # fmt: skip
REQUIRED = ("line_item_usage_start_date", "line_item_usage_end_date", "line_item_unblended_cost")
# numbers and times that may be empty: '' in a Parquet string column is no value (NULL), as in a CSV
OPTIONAL_NUMBERS = frozenset((*MONEY, *PRICES, *TIMES, "line_item_usage_amount"))
# text that is '' on most lines of CUR for Athena, where '' is no value: every line that is not a split
# cost allocation row (read as text, it would make every line a split row, at no cost)
EMPTY_IS_NULL = frozenset(("split_line_item_parent_resource_id",))
# promoted product_* column -> key in the `product` map
PRODUCT_KEYS = {
    "product_product_name": ("product_name", "servicename"),
    "product_region_code": ("region_code", "region"),
    "product_location": ("location",),
    "product_instance_type": ("instance_type",),
    "product_sku": ("sku",),
}


def squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_CATEGORIES = r"(?:identity|bill|lineItem|product|pricing|reservation|savingsPlan|discount|resourceTags|costCategory|splitLineItem)"
_GLUED = re.compile(rf"^({_CATEGORIES}/[A-Za-z0-9:]+?)({_CATEGORIES}/[A-Za-z0-9:]+)$")


def split_glued_header(header: list[str], first_row: list[str]) -> tuple[list[str], str] | None:
    """The koku typo: one header field is two CUR columns without their comma (data has one field more)."""
    if len(first_row) != len(header) + 1:
        return None
    for i, name in enumerate(header):
        if name.count("/") == 2:
            m = _GLUED.match(name)
            if m:
                fixed = header[:i] + [m.group(1), m.group(2)] + header[i + 1 :]
                return (
                    fixed,
                    f"header field {name!r} split into {m.group(1)!r} and {m.group(2)!r} (a missing comma)",
                )
    return None
