"""wastewatch rules: pure Python + SQL modules that turn marts into priced findings (no Dagster here)."""

from rules._contract import (
    DOC_HEADINGS,
    FINDING_COLUMNS,
    QUERY_COLUMNS,
    STATUSES,
    Rule,
    RuleParams,
    Window,
    finding_id,
)
from rules._registry import ALL_RULES, get_rule

__all__ = [
    "ALL_RULES",
    "DOC_HEADINGS",
    "FINDING_COLUMNS",
    "QUERY_COLUMNS",
    "STATUSES",
    "Rule",
    "RuleParams",
    "Window",
    "finding_id",
    "get_rule",
]
