"""The typed rows of the weekly report: one frozen dataclass per kind of row a section shows (a finding, a
team's totals, a GPU model's fleet figures, an action, an advice item, ...).

collect.py builds them from the `sql/reports/rpt_*.sql` rows with `Row.of`, which takes the columns a row
type names and refuses a row that lacks one; model.py (WeeklyReport, TeamPage) holds them and sections.py
names their fields in the report's tables. A row also reads like the mapping it was built from
(`finding["rule_id"]`, `.get("job")`), so code written against the query rows keeps working.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Self

Number = Decimal | float


class Row:
    """A report row: built from a query row by its field names, read by attribute or by key."""

    __slots__ = ()

    @classmethod
    def of(cls, row: Any, **extra: Any) -> Self:
        """The row of type `cls` from a mapping (a query row), `extra` set over it; columns it does not name
        are left out, and a field without a default that the row lacks is an error naming the field."""
        values = {**row, **extra}
        names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        return cls(**{n: values[n] for n in names if n in values})

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in {f.name for f in fields(self)}  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Headline(Row):
    """The week's totals in one currency (rpt_weekly_spend), with last week's beside them."""

    currency: str
    spend: Decimal
    waste: Decimal
    waste_pct: Number | None
    waste_findings: int
    findings: int
    acknowledged_waste: Decimal
    acknowledged_findings: int
    attention_findings: int
    prev_spend: Decimal | None
    prev_waste: Decimal | None
    spend_change_pct: Number | None
    prev_waste_pct: Number | None
    billed: Decimal = Decimal(0)
    billed_spend: Decimal = Decimal(0)
    owned_spend: Decimal = Decimal(0)
    contract_spend: Decimal = Decimal(0)
    modelled_spend: Decimal = Decimal(0)


@dataclass(frozen=True, slots=True)
class TeamHeadline(Row):
    """A team's totals in one currency (its team page's headline): no week-over-week figures."""

    currency: str
    spend: Decimal
    waste: Decimal
    waste_pct: Number | None
    waste_findings: int


@dataclass(frozen=True, slots=True)
class RuleWaste(Row):
    """One rule's findings and waste in one currency (rpt_weekly_waste_by_rule)."""

    rule_id: str
    rule_name: str
    category: str
    currency: str
    waste_findings: int
    suspect_findings: int
    insufficient_data_findings: int
    acknowledged_findings: int
    waste: Decimal
    monthly_run_rate: Decimal
    suspect_amount: Decimal
    acknowledged_waste: Decimal


@dataclass(frozen=True, slots=True)
class ProjectWaste(Row):
    """One team's project's spend and waste in one currency (rpt_weekly_waste_by_project)."""

    team: str
    project: str
    currency: str
    spend: Decimal
    waste: Decimal
    waste_pct: Number | None
    waste_findings: int


@dataclass(frozen=True, slots=True)
class CategorySpend(Row):
    """A project's spend by FOCUS service category and pricing basis (rpt_weekly_spend_by_category)."""

    team: str
    project: str
    currency: str
    pricing_basis: str
    compute: Decimal
    storage: Decimal
    network: Decimal
    ai_ml: Decimal
    other: Decimal
    total: Decimal


@dataclass(frozen=True, slots=True)
class Finding(Row):
    """A finding of the week with its lifecycle and acknowledgement (rpt_weekly_findings), its evidence
    parsed and its rule's summary."""

    finding_id: str
    finding_key: str
    rule_id: str
    rule_name: str
    category: str
    severity: str
    status: str
    resource_id: str
    resource_type: str
    provider: str | None
    account_id: str | None
    region_id: str | None
    team: str
    project: str | None
    owner: str | None
    job_id: str | None
    estimated_waste: Decimal
    currency: str
    reason: str
    waste_basis: str
    evidence: dict[str, Any]
    params: str | None
    detected_at: datetime | None
    attention: bool
    acknowledged: bool
    acked_until: date | None
    ack_reason: str | None
    acked_by: str | None
    counted: bool
    first_seen: date | str | None
    weeks_open: int
    cumulative_waste: Decimal
    lifecycle: str
    previous_waste: Decimal | None
    pricing_basis: str | None
    rule_summary: str = ""
    amount_at_stake: Number | None = None


@dataclass(frozen=True, slots=True)
class Resolved(Row):
    """A finding of last week with none this week (rpt_weekly_resolved): `now` says what became of it."""

    finding_id: str
    finding_key: str
    rule_id: str
    rule_name: str
    category: str
    resource_id: str
    resource_type: str
    team: str
    project: str | None
    currency: str
    last_reason: str
    last_week_waste: Decimal
    counted_last_week: bool
    now: str
    job: bool


@dataclass(frozen=True, slots=True)
class FleetRow(Row):
    """GPU-hours, idle share and cost per GPU-hour of one GPU model, pricing basis and currency."""

    gpu_model: str
    pricing_basis: str
    currency: str
    instances: int
    gpu_hours: int
    idle_gpu_hours: int
    busy_gpu_hours: int
    unobserved_gpu_hours: int
    idle_pct: Number | None
    unobserved_pct: Number | None
    cost: Decimal
    cost_per_gpu_hour: Decimal | None
    cost_per_busy_gpu_hour: Decimal | None


@dataclass(frozen=True, slots=True)
class SpareCapacity(Row):
    """The week's hot-spare capacity priced in one currency against the `spares:` policy
    (rpt_weekly_spare_capacity): the spare GPU-hours beyond the policy share are attention, never waste."""

    currency: str
    spare_hosts: int
    spare_gpu_hours: float
    spare_cost: Decimal
    fleet_gpu_hours: float
    spare_share: float | None
    policy_share: float
    excess_gpu_hours: float
    excess_cost: Decimal | None

    @property
    def over_policy(self) -> bool:
        return self.excess_gpu_hours > 1e-9

    @property
    def summary(self) -> str:
        """The report's spare-capacity line: "2 hot spare(s) held 336.0 GPU-hours (USD 1,234.56), 4.2 % of
        the fleet's 8,000 GPU-hours against a policy of 5.0 %: within it" (or "...: 96.0 GPU-hours beyond it,
        USD 352.80")."""
        head = (
            f"{self.spare_hosts} hot spare(s) held {self.spare_gpu_hours:,.1f} GPU-hours ({self.currency} "
            f"{Decimal(self.spare_cost):,.2f}), {100 * (self.spare_share or 0):.1f} % of the fleet's "
            f"{self.fleet_gpu_hours:,.0f} GPU-hours against a policy of {100 * self.policy_share:.1f} %"
        )
        if not self.over_policy:
            return head + ": within it"
        return (
            f"{head}: {self.excess_gpu_hours:,.1f} GPU-hours beyond it, "
            f"{self.currency} {Decimal(self.excess_cost or 0):,.2f}"
        )


# what each measure of rpt_weekly_peaks is called in the report (no-break spaces: a narrow table wraps the
# figures, never the name), and its unit
PEAK_LABELS = {
    "concurrent_gpus": ("GPUs\u00a0in\u00a0use", "GPUs"),
    "hourly_spend": ("Spend\u00a0per\u00a0hour", ""),
    "stored_gib": ("Stored\u00a0data", "GiB"),
}


@dataclass(frozen=True, slots=True)
class Peak(Row):
    """A measure's peak of the week beside its average, and the first hour (or day) it was reached
    (rpt_weekly_peaks): concurrent GPUs, spend per hour in one currency, stored GiB."""

    measure: str
    currency: str | None
    average: float
    peak: float
    peak_at: datetime
    per: str
    periods: int

    @property
    def label(self) -> str:
        return PEAK_LABELS.get(self.measure, (self.measure, ""))[0]

    @property
    def unit(self) -> str:
        return self.currency or PEAK_LABELS.get(self.measure, ("", ""))[1]

    @property
    def when(self) -> str:
        """ "Tue 2026-11-24 14:00 UTC" (an hour) or "Tue 2026-11-24" (a day)."""
        fmt = "%a %Y-%m-%d %H:%M UTC" if self.per == "hour" else "%a %Y-%m-%d"
        return self.peak_at.strftime(fmt)


@dataclass(frozen=True, slots=True)
class TrendWeek(Row):
    """One week of a currency's trend chart (rpt_weekly_trend): waste is None for a week not evaluated;
    `after_partial` names the partial week left out before the first one drawn."""

    week_start: date
    currency: str
    spend: Decimal | int
    waste: Decimal | None
    label: str
    after_partial: str | None = None


@dataclass(frozen=True, slots=True)
class DataQuality(Row):
    """One currency's tag coverage and the share of its GPU spend that telemetry covers."""

    currency: str
    spend: Decimal
    tagged_spend: Decimal
    tagged_pct: Number | None
    gpu_spend: Decimal
    gpu_spend_with_telemetry: Decimal
    gpu_telemetry_pct: Number | None
    project_tagged_spend: Decimal | None = None
    project_pct: Number | None = None
    owner_pct: Number | None = None
    top_untagged_service: str | None = None
    top_untagged_spend: Decimal | None = None


@dataclass(frozen=True, slots=True)
class Budget(Row):
    """A budget's month to date and forecasts (COST002's budget_status)."""

    dimension: str
    name: str
    team: str | None
    project: str | None
    currency: str
    budget: Decimal
    month: str
    as_of: datetime
    month_days: int
    elapsed_days: float
    month_to_date: Decimal
    burn_pct: Decimal | None
    forecast_straight_line: Decimal | None
    forecast_trailing: Decimal | None
    forecast_max: Decimal | None = None
    trailing_weeks: int | None = None
    trailing_daily_rate: Decimal | None = None
    other_currency_spend: Decimal | None = None
    has_data: bool = True


@dataclass(frozen=True, slots=True)
class RejectedFile(Row):
    """An input file the ingestion ledger rejected (rpt_rejected_files), its error redacted."""

    source: str
    kind: str
    uri: str
    error: str | None
    checked_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class StaleSource(Row):
    """A source that stopped delivering within its expected cadence (pipelines/health/freshness.py)."""

    source: str
    kind: str
    problem: str


@dataclass(frozen=True, slots=True)
class UnpricedHost(Row):
    """A host's GPU-hours with telemetry that no bill or price covers (rpt_weekly_unpriced_gpu_hours)."""

    host: str
    gpu_hours: int
    idle_gpu_hours: int
    gpus: int
    first_hour: datetime | None = None
    last_hour: datetime | None = None


@dataclass(frozen=True, slots=True)
class NoTelemetry(Row):
    """Per cost basis, priced GPU-hours and those without telemetry (rpt_weekly_gpu_hours_without_telemetry)."""

    pricing_basis: str
    gpu_hours: int
    without_telemetry: int
    resources: int = 0


@dataclass(frozen=True, slots=True)
class ExchangeRate(Row):
    """A dated rate of the config's `exchange_rates:` (`from_` is the currency converted from)."""

    from_: str
    to: str
    rate: Decimal
    valid_from: date


@dataclass(frozen=True, slots=True)
class TrainingJob(Row):
    """A job with a measured training log and GPU time in the week (rpt_weekly_training)."""

    job_key: str
    job_id: str
    job_name: str | None
    team: str
    project: str | None
    gpu_model: str | None
    gpus: int | None
    params: float | None
    mfu: float | None
    tokens: float | None
    gpu_hours: float | None
    tokens_per_gpu_hour: float | None
    cost: Decimal | None
    currency: str | None
    cost_per_million_tokens: Number | None
    pricing_basis: str | None


@dataclass(frozen=True, slots=True)
class UnmatchedTrainLines(Row):
    """The week's training-log lines that matched no job (rpt_weekly_train_log_unmatched)."""

    lines: int = 0
    files: int = 0
    hosts: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class FocusBreak(Row):
    """A FOCUS 1.2 rule broken by a billing source's lines of the week, and the spend they carry."""

    source: str
    currency: str
    source_lines: int
    source_spend: Decimal
    rule: str
    requirement: str
    lines: int
    spend: Decimal
    spend_pct: Number | None = None


@dataclass(frozen=True, slots=True)
class Advice(Row):
    """A commitment or spot advice item of the week (rpt_weekly_advice), its evidence parsed."""

    advice_id: str
    advisor_id: str
    advisor_name: str
    kind: str
    resource_id: str
    resource_type: str | None
    provider: str | None
    region_id: str | None
    team: str | None
    project: str | None
    status: str
    reason: str
    evidence: dict[str, Any]
    estimated_saving: Decimal | None
    currency: str | None
    basis: str | None
    risk: str | None


@dataclass(frozen=True, slots=True)
class Action(Row):
    """A remediation action of the week's waste findings (rpt_weekly_actions)."""

    action_id: str
    kind: str
    rule_id: str
    target: str
    team: str | None
    owner: str | None
    estimated_waste: Decimal
    currency: str | None
    state: str
    executable: bool
    approved_by: str | None


@dataclass(frozen=True, slots=True)
class Realised(Row):
    """An action applied before the week and the waste it stopped in it (rpt_remediation_realised)."""

    action_id: str
    kind: str
    target: str
    rule_id: str
    team: str | None
    owner: str | None
    applied_at: datetime
    applied_by: str
    baseline_waste: Decimal
    currency: str | None
    week_waste: Decimal
    realised_saving: Decimal
    finding_key: str | None = None
    baseline_week: date | None = None


# the views WeeklyReport derives from its rows (model.py), one row type each


@dataclass(frozen=True, slots=True)
class AttentionGroup(Row):
    """One attention rule's items in one currency: how many, the amount at stake (never waste), and how
    many it could not judge."""

    rule_id: str
    rule_name: str
    category: str
    currency: str
    findings: int
    at_stake: Decimal
    insufficient_data: int


@dataclass(frozen=True, slots=True)
class AttentionNote(Row):
    """A line above the attention table for what no rule's item holds: GPU-hours nothing prices, spares
    beyond the policy share. `kind` is its HTML id's stem, `tag` its label in HTML and `title` in Markdown,
    `message` the figures, `detail` what they mean, `page`/`anchor`/`link` where the detail is."""

    kind: str
    tag: str
    title: str
    message: str
    detail: str
    page: str
    anchor: str
    link: str


@dataclass(frozen=True, slots=True)
class RuleTotal(Row):
    """A currency's headline waste beside the sum of its by-rule rows as shown, each rounded to the cent."""

    currency: str
    waste: Decimal
    rows_sum: Decimal
    difference: Decimal


@dataclass(frozen=True, slots=True)
class CategoryWaste(Row):
    """The waste of one rule category in one currency."""

    category: str
    currency: str
    waste: Decimal
    findings: int


@dataclass(frozen=True, slots=True)
class TeamWaste(Row):
    """One team's spend and waste in one currency, with its budget and the slug of its page."""

    team: str
    currency: str
    spend: Decimal
    waste: Decimal
    waste_findings: int
    waste_pct: Number | None
    budget: Budget | None
    slug: str | None


@dataclass(frozen=True, slots=True)
class ChangeCounts(Row):
    """The week's findings against last week's: how many are new, persisting and resolved, and per currency
    the waste that stopped (WeeklyReport.stopped: currency, amount, resolved, stopped, note)."""

    new: int
    persisting: int
    resolved: int
    stopped: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class TeamLine(Row):
    """A line of "waste by team and project": a team's total in one currency (`project` None), or one of
    its projects under it, with the budget that applies to it (teams.html, report-full.md)."""

    team: str
    project: str | None
    currency: str
    spend: Decimal
    waste: Decimal
    waste_pct: Number | None
    budget: Budget | None
    slug: str | None = None


@dataclass(frozen=True, slots=True)
class ActionGroup(Row):
    """The week's actions of one rule, kind and currency: how many, their waste, how many executable."""

    rule_id: str
    kind: str
    currency: str | None
    count: int
    amount: Decimal
    executable: int


@dataclass(frozen=True, slots=True)
class TrainingGroup(Row):
    """Measured training jobs added up per GPU model, cost basis and currency."""

    gpu_model: str
    pricing_basis: str
    currency: str | None
    jobs: int
    tokens: float
    gpu_hours: float
    cost: Decimal
    mfu_median: float | None
    tokens_per_gpu_hour: float | None
    cost_per_million_tokens: Decimal | None


@dataclass(frozen=True, slots=True)
class Rollup(Row):
    """At least ROLLUP_MIN small findings of one rule, status and currency shown as one line."""

    id: str
    rule_id: str
    rule_name: str
    resource_type: str
    status: str
    attention: bool
    acknowledged: bool
    currency: str
    count: int
    amount: Decimal
    smallest: Decimal
    largest: Decimal
    findings: list[Finding]


@dataclass(frozen=True, slots=True)
class FindingGroup(Row):
    """A line of "All findings": a single finding or a roll-up (the other is None); `amount` is set on the
    main page's top lines."""

    finding: Finding | None = None
    rollup: Rollup | None = None
    amount: Decimal | None = None

    @property
    def reason(self) -> str:
        """The line's reason: the finding's, or what the roll-up holds ("213 orphaned-checkpoint findings of
        0.04–6.74 each")."""
        if self.rollup is not None:
            u = self.rollup
            return f"{u.count} {u.rule_name} findings of {u.smallest:,.2f}–{u.largest:,.2f} each"
        return self.finding.reason if self.finding is not None else ""

    def __contains__(self, key: object) -> bool:
        return key in ("finding", "rollup", "amount") and getattr(self, str(key)) is not None
