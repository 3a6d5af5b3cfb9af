"""COST002 budget-overrun: Teams and projects whose month-to-date spend or its forecast exceeds their budget.

What it detects
    Every monthly budget under `budgets:` in wastewatch.yaml (per team or per project, in the billing
    currency) whose month-to-date effective spend is already over the budget, or whose forecast to month
    end is: a straight-line forecast (month-to-date scaled to the whole month) and a trailing-weeks
    forecast (month-to-date plus the mean daily spend of the last `trailing_weeks` weeks for each
    remaining day). A budget whose forecast reaches `warn_pct` of it is `suspect`.

Why it is waste
    It is not waste by itself, so it is an attention rule: reported apart and never added to the waste
    total. An overrun found at month end is too late to act on; found in the second week, a team can
    stop the idle instances and the forgotten experiments behind it. The amount at stake is the larger
    of month-to-date spend and its forecast, minus the budget.

How it is computed
    From `cost_hourly` only, for the calendar month holding the last day of the evaluated window, up to
    the window's end (the as-of time). month_to_date = sum of effective_cost of the team's (project's)
    hours in the budget currency (spend in other currencies is shown, never added).
    straight_line = month_to_date x days in month / elapsed days;
    trailing = month_to_date + (spend of the last `trailing_weeks` weeks / days of billing data in them)
    x remaining days. `waste` when month_to_date > budget or both forecasts > budget; `suspect` when the
    larger forecast >= `warn_pct` % of the budget; `insufficient_data` when the warehouse has no billing
    data before the as-of time. estimated_waste = the amount at stake = max(month_to_date, larger
    forecast) - budget (0 for insufficient_data). The budgets come from the config's `budgets:` (or this
    rule's own `budgets` parameter, which wins); the weekly report shows the burn of every budget.

Thresholds
    budgets (none unless configured): {team: {name: amount}, project: {name: amount}}, taken from
    the config's `budgets:`.
    budget_currency (the config's `currency`, else USD): the currency budgets are in.
    trailing_weeks (default 2, weeks): the span of the trailing-rate forecast.
    warn_pct (default 90, percent of the budget): a forecast at or above it is `suspect`.

Known false positives
    Budgets that are meant to be exceeded in one month and made up in another (quarterly budgets);
    one-off monthly charges (support, commitment purchases) that make early-month straight-line
    forecasts run high; spend of a team reorganised mid-month. Acknowledge the finding with a reason.

Example finding
    rule_id: COST002
    resource_id: "budget:team:vision"
    resource_type: team budget
    status: waste
    team: vision
    reason: "Team vision spent USD 142,808.39 in November to 2026-11-30 (29 of 30 days), 129.8 % of its USD 110,000.00 monthly budget (over budget); forecast to month end USD 147,732.82 straight-line and USD 147,908.69 at the last 2 weeks' rate."
    estimated_waste: 37908.69
    currency: USD
    waste_basis: "amount at stake, not waste: the larger of month-to-date spend and its forecast to month end, minus the monthly budget"

Remediation
    Look at the team's waste findings first (idle GPUs and forgotten storage are the cheapest cuts);
    then decide with the budget owner whether to cut, defer runs to next month, or raise the budget.

References
    FinOps Foundation, "Budgeting" and "Forecasting" capabilities (straight-line and trend forecasts);
    AWS Budgets forecasted-spend alerts; Azure Cost Management budget alerts.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

from pydantic import Field

from rules._contract import Rule, RuleParams
from rules.cost002_budget_overrun.evaluate import evaluate


class Params(RuleParams):
    budgets: dict[Literal["team", "project"], dict[str, Decimal]] = Field(
        default_factory=dict,
        description="Monthly budgets {team: {name: amount}, project: {...}}; default: the config's `budgets:`.",
    )
    budget_currency: str = Field(
        "USD", min_length=3, max_length=3, description="Currency of the budgets (the config's `currency`)."
    )
    trailing_weeks: int = Field(2, ge=1, le=8, description="Weeks of spend behind the trailing forecast.")
    warn_pct: float = Field(
        90.0, gt=0, le=100, description="A forecast at or above this % of the budget is `suspect`."
    )


def _from_config(config: Any) -> dict[str, Any]:
    # spend budgets only: `budgets: storage_growth:` is COST004's
    spend = {k: v for k, v in config.budgets.items() if k in ("team", "project")}
    return {"budgets": spend, "budget_currency": config.currency}


RULE = Rule(
    id="COST002",
    name="budget-overrun",
    category="budget",
    severity="medium",
    status="preview",
    summary="Teams and projects whose month-to-date spend or its forecast exceeds their budget.",
    doc=__doc__ or "",
    params=Params,
    requires=("cost_hourly",),
    evaluate_fn=evaluate,
    config_params=_from_config,
)
