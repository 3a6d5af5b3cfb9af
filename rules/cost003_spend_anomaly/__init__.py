"""COST003 spend-anomaly: Daily spend of a team on a service far above its robust, weekday-aware baseline.

What it detects
    Days on which a team's effective spend on one service (FOCUS ServiceName, per billing currency) rose far
    above what that team usually spends on it on that kind of day: a data-transfer spike, a runaway
    autoscaler, a forgotten load test, a training run launched on the wrong instance type. Untagged spend
    forms its own `(untagged)` team.

Why it is waste
    It is not waste by itself, so it is an attention rule: reported apart and never added to the waste
    total. An anomaly is money that nobody planned; a person must look at it within days, before a month
    of it reaches the invoice. The excess over the baseline is the amount at stake.

How it is computed
    From `cost_hourly` only. Daily effective spend per (team, service, currency) from the series' first day
    with spend (days the bill covers without spend for the series count as 0; a series is never compared
    with days before it existed). For each day of the window the baseline is the median, and the spread
    the median absolute deviation (MAD), of the same kind of day over the trailing `lookback_days`:
    weekdays against weekdays and weekends against weekends, or the same day of the week when
    `by_day_of_week` is set. Robust z = (spend - median) / (1.4826 x MAD). A day is anomalous when
    robust z > `max_robust_z` (or MAD is 0), the excess spend - median is at least `min_excess` and spend
    is at least `min_increase_pct` above the median. One finding per series and week:
    estimated_waste = the amount at stake = sum of the excess over the anomalous days. A series with
    days of at least `min_excess` spend but fewer than `min_baseline_days` comparable earlier days (a new
    spend stream) is `insufficient_data` (estimated_waste 0, its spend in the evidence).

Thresholds
    lookback_days (default 28, days): the trailing window of the baseline.
    by_day_of_week (off unless set): compare with the same day of the week instead of weekdays/weekends.
    min_baseline_days (default 3, days): comparable earlier days needed before a day is judged.
    max_robust_z (default 4.0): robust z-score above which a day is anomalous.
    min_excess (default 50.0, billing currency per day): smallest excess over the median that counts.
    min_increase_pct (default 50.0, percent): smallest rise over the median that counts.

Known false positives
    Planned launches (a new training run), month-start charges that a provider bills as daily lines,
    restated bills that move spend between days, commitment purchases billed on one day. Acknowledge the
    finding (`wastewatch ack`) when the spend was planned.

Example finding
    rule_id: COST003
    resource_id: speech / Amazon Virtual Private Cloud (USD)
    resource_type: spend series (team × service)
    status: waste
    team: speech
    reason: "Networking spend of team speech on Amazon Virtual Private Cloud was USD 378.00 on Wed 2026-11-25 against a usual USD 27.00 for that kind of day (median of the trailing 28 days); 1 anomalous day(s) this week, USD 351.00 above the baseline."
    estimated_waste: 351.00
    currency: USD
    waste_basis: "amount at stake, not waste: the spend above the baseline on the anomalous days"

Remediation
    Open the evidence's top resources for the anomalous day; for data transfer, look for a job reading a
    dataset across regions or out of the cloud; for compute, for instances launched outside the usual
    scheduler. Put a budget alert on the service, or fix the pipeline that caused the spike.

References
    Iglewicz and Hoaglin, "How to Detect and Handle Outliers" (1993): the MAD-based modified z-score;
    AWS Cost Anomaly Detection and Azure cost anomaly alerts (per-service daily anomaly detection);
    FinOps Foundation, "Managing anomalies" capability.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._contract import Rule, RuleParams


class Params(RuleParams):
    lookback_days: int = Field(28, ge=7, le=120, description="Trailing days the baseline is taken from.")
    by_day_of_week: bool = Field(
        False, description="Compare with the same day of the week instead of weekdays vs weekends."
    )
    min_baseline_days: int = Field(
        3, ge=1, le=60, description="Comparable earlier days needed before a day is judged."
    )
    max_robust_z: float = Field(
        4.0, gt=0, le=100, description="Robust z-score (excess / 1.4826 MAD) above which a day is anomalous."
    )
    min_excess: float = Field(
        50.0, ge=0, description="Smallest excess over the median (billing currency per day) that counts."
    )
    min_increase_pct: float = Field(
        50.0, ge=0, description="Smallest rise over the median (percent) that counts."
    )


RULE = Rule(
    id="COST003",
    name="spend-anomaly",
    category="anomaly",
    severity="medium",
    status="preview",
    summary="Daily spend of a team on a service far above its robust, weekday-aware baseline.",
    doc=__doc__ or "",
    params=Params,
    requires=("cost_hourly",),
    query=Path(__file__).with_name("query.sql"),
)
