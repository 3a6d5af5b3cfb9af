"""The weekly report's data: WeeklyReport (the week's figures and findings, and the views the
templates and the notification read from them) and one TeamPage per team, both holding the typed rows of
rows.py.

No SQL and no files here: collect.py fills these from the warehouse, render.py and write.py turn them
into the report files (the tables as sections.py defines them).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from pipelines.report.rows import (
    Action,
    ActionGroup,
    Advice,
    AttentionGroup,
    AttentionNote,
    Budget,
    CategorySpend,
    CategoryWaste,
    ChangeCounts,
    DataQuality,
    ExchangeRate,
    Finding,
    FindingGroup,
    FleetRow,
    FocusBreak,
    Headline,
    NoTelemetry,
    Peak,
    ProjectWaste,
    Realised,
    RejectedFile,
    Resolved,
    Rollup,
    RuleTotal,
    RuleWaste,
    SpareCapacity,
    StaleSource,
    TeamHeadline,
    TeamLine,
    TeamWaste,
    TrainingGroup,
    TrainingJob,
    TrendWeek,
    UnmatchedTrainLines,
    UnpricedHost,
)
from pipelines.warehouse import utcnow
from rules import Window

TOP_N = 20
TOP_ACTIONS = 15  # remediation actions the report lists, biggest first (`remediate plan` lists all)
TREND_WEEKS = 8  # the trend chart spans at most this many weeks, the report's week last
# "All findings" rolls up a rule's small findings (each under ROLLUP_SHARE of the week's waste in their
# currency) into one line when there are at least ROLLUP_MIN of them of one status: 213 orphaned
# checkpoints of a few cents each read as one line, each still one click away
ROLLUP_MIN = 10
ROLLUP_SHARE = Decimal("0.01")
MAIN_TOP = 10  # lines of "Top findings" on the main page (a rolled-up rule is one line)
MAIN_TEAMS = 15  # teams on the main page, most waste first; teams.html lists every team
MAIN_LINES = 5  # actions and advice items on the main page, one line each; actions.html lists them all
# the pages written beside report.html: (file stem, title); the main page links to each
PAGES = (
    ("findings", "All findings"),
    ("changes", "Changes"),
    ("attention", "Needs attention"),
    ("actions", "Actions and advice"),
    ("rules", "Waste by rule"),
    ("teams", "Teams"),
    ("fleet", "GPU fleet"),
    ("quality", "Data quality"),
)


@dataclass
class TeamPage:
    """One team's slice of the report (teams/<slug>.html)."""

    name: str
    slug: str
    headline: list[TeamHeadline]
    projects: list[ProjectWaste]
    spend_by_category: list[CategorySpend]
    findings: list[Finding]
    attention: list[Finding]
    resolved: list[Resolved]
    budgets: list[Budget]
    training: list[TrainingJob] = field(default_factory=list)
    # the week's advice about the team's own job types (spot advice names a team; commitments do not)
    advice: list[Advice] = field(default_factory=list)

    @property
    def counted(self) -> list[Finding]:
        return [f for f in self.findings if f.counted]

    @property
    def training_summary(self) -> list[TrainingGroup]:
        return training_summary(self.training)

    @property
    def acknowledged(self) -> list[Finding]:
        return [f for f in self.findings if f.acknowledged]


@dataclass
class WeeklyReport:
    week: str
    window: Window
    directory: Path
    headline: list[Headline]
    by_rule: list[RuleWaste]
    by_project: list[ProjectWaste]
    spend_by_category: list[CategorySpend]
    findings: list[Finding]
    resolved: list[Resolved]
    gpu_fleet: list[FleetRow]
    idle_cells: dict[tuple[int, int], float]
    util_bands: dict[int, float]
    unobserved_gpu_hours: float
    trend: dict[str, list[TrendWeek]]
    data_quality: list[DataQuality]
    budgets: list[Budget]
    rejected_files: list[RejectedFile]
    idle_util_pct: float
    stale_sources: list[StaleSource] = field(default_factory=list)  # sources that stopped delivering
    previous_evaluated: bool = False  # any finding stored for last week: new/resolved are meaningful
    # per host: GPU-hours observed in the week that no bill or price covers (rpt_weekly_unpriced_gpu_hours)
    unpriced: list[UnpricedHost] = field(default_factory=list)
    # per cost basis: priced GPU-hours and those of them no GPU reported telemetry in
    # (rpt_weekly_gpu_hours_without_telemetry): priced all the same, never free (docs/gpu.md "Which hours")
    no_telemetry: list[NoTelemetry] = field(default_factory=list)
    generated_at: datetime = field(default_factory=utcnow)
    # the config's consolidated view: the currency and its dated rates
    reporting_currency: str | None = None
    exchange_rates: list[ExchangeRate] = field(default_factory=list)
    teams: list[TeamPage] = field(default_factory=list)
    # per job with a measured training log and GPU time in the week (rpt_weekly_training)
    training: list[TrainingJob] = field(default_factory=list)
    # the week's training-log lines that matched no job
    unmatched_train_lines: UnmatchedTrainLines = field(default_factory=UnmatchedTrainLines)
    # per billing source, currency and broken FOCUS 1.2 rule: the week's lines and spend it touches
    # (sql/checks/billing_focus_conformance.sql)
    focus_conformance: list[FocusBreak] = field(default_factory=list)
    # commitment and spot advice of the week (rpt_weekly_advice): never added to waste or spend
    advice: list[Advice] = field(default_factory=list)
    # the week's remediation actions, biggest first (rpt_weekly_actions), and the waste that actions applied
    # before the week stopped in it (rpt_remediation_realised); docs/remediation.md
    actions: list[Action] = field(default_factory=list)
    realised: list[Realised] = field(default_factory=list)
    # per currency, the first hour of cost data in the warehouse (rpt_cost_data_start): a week before it has
    # no data, the week it falls in part of a week
    data_start: dict[str, datetime] = field(default_factory=dict)
    # per currency, the hot spares' GPU-hours and cost against the `spares:` policy
    # (rpt_weekly_spare_capacity): beyond the policy share they are attention, never waste
    spares: list[SpareCapacity] = field(default_factory=list)
    # the week's peaks beside its averages: concurrent GPUs, spend per hour, stored GiB (rpt_weekly_peaks)
    peaks: list[Peak] = field(default_factory=list)

    @property
    def spare_message(self) -> str | None:
        """The attention line for spares beyond the policy share, or None within it (or without `spares:`):
        "hot spares held 12.0 % of the fleet's GPU-hours against a policy of 5.0 %: 336 GPU-hours beyond it,
        USD 1,234.56"."""
        over = [s for s in self.spares if s.over_policy]
        if not over:
            return None
        first = over[0]
        costs = ", ".join(f"{s.currency} {Decimal(s.excess_cost or 0):,.2f}" for s in over)
        return (
            f"hot spares held {100 * (first.spare_share or 0):.1f} % of the fleet's GPU-hours against a policy "
            f"of {100 * first.policy_share:.1f} %: {first.excess_gpu_hours:,.0f} GPU-hours beyond it, {costs}"
        )

    @property
    def training_summary(self) -> list[TrainingGroup]:
        return training_summary(self.training)

    def advice_savings(self) -> dict[str, Decimal]:
        """Per currency, the recommended advice's expected saving a week: shown on its own, never added to
        waste or spend (two items on the same instances are alternatives, so this is an upper bound)."""
        out: dict[str, Decimal] = {}
        for a in self.advice:
            if a["status"] == "recommended":
                out[a["currency"]] = out.get(a["currency"], Decimal(0)) + a["estimated_saving"]
        return out

    @property
    def files(self) -> dict[str, Path]:
        names = ("report.md", "report-full.md", "report.html", "findings.csv", "findings.parquet")
        pages = tuple(f"{stem}.html" for stem, _ in PAGES)
        return {n: self.directory / n for n in (*names, *pages)}

    def previous_data(self, currency: str) -> str:
        """What last week's data is for a week-over-week change in `currency`: "full", "partial" (the
        currency's data starts inside last week) or "none" (it starts this week or later, or never)."""
        start = self.data_start.get(currency)
        if start is None or start >= self.window.start:
            return "none"
        return "partial" if start > self.window.previous().start else "full"

    @property
    def previous_week(self) -> str:
        return self.window.previous().label

    @property
    def unpriced_gpu_hours(self) -> int:
        return sum(int(u["gpu_hours"]) for u in self.unpriced)

    @property
    def unpriced_idle_gpu_hours(self) -> int:
        return sum(int(u["idle_gpu_hours"]) for u in self.unpriced)

    @property
    def unpriced_message(self) -> str | None:
        """The attention line for GPU-hours nothing prices, or None when every observed GPU-hour is priced."""
        if not self.unpriced:
            return None
        n, m = self.unpriced_gpu_hours, len(self.unpriced)
        return (
            f"{n:,} GPU-hour{'s' if n != 1 else ''} from {m:,} host{'s' if m != 1 else ''} have no price; "
            "add a `pricing:` entry"
        )

    @property
    def attention_notes(self) -> list[AttentionNote]:
        """The attention lines no rule's item holds, shown above the attention table in every form."""
        notes = []
        if self.unpriced_message:
            notes.append(
                AttentionNote(
                    "unpriced", "unpriced", "Unpriced GPU telemetry", self.unpriced_message,
                    " (or a bill that names these hosts): no rule can put a figure on their waste, "
                    f"{self.unpriced_idle_gpu_hours:,} of them idle",
                    "quality", "unpriced-hosts", "Hosts",
                )
            )  # fmt: skip
        if self.spare_message:
            notes.append(
                AttentionNote(
                    "spare", "spares", "Spares beyond policy", self.spare_message, ": a policy cost, never waste",
                    "fleet", "spare-capacity", "Spare capacity",
                )
            )  # fmt: skip
        return notes

    @property
    def no_telemetry_note(self) -> str | None:
        """The fleet's line on priced GPU-hours without telemetry: how many, and why they stay priced."""
        if not self.no_telemetry_message:
            return None
        return (
            f"{self.no_telemetry_message}: they are priced all the same (an owned or contract host costs every "
            "hour of its service window, a bill charges whether a GPU reported or not), and no GPU rule can judge "
            'them (docs/gpu.md "Which hours")'
        )

    @property
    def no_telemetry_gpu_hours(self) -> int:
        return sum(int(x["without_telemetry"]) for x in self.no_telemetry)

    @property
    def no_telemetry_message(self) -> str | None:
        """How many priced GPU-hours had no telemetry, per cost basis, or None when every one had some:
        "20 of 80 priced GPU-hours had no telemetry (owned 20 of 40)"."""
        n = self.no_telemetry_gpu_hours
        if not n:
            return None
        total = sum(int(x["gpu_hours"]) for x in self.no_telemetry)
        parts = ", ".join(
            f"{x['pricing_basis']} {int(x['without_telemetry']):,} of {int(x['gpu_hours']):,}"
            for x in self.no_telemetry
            if x["without_telemetry"]
        )
        return f"{n:,} of {total:,} priced GPU-hours had no telemetry ({parts})"

    def totals(self) -> dict[str, dict[str, Decimal]]:
        return {h["currency"]: {"spend": h["spend"], "waste": h["waste"]} for h in self.headline}

    # the findings, by the section they appear in
    @property
    def counted(self) -> list[Finding]:
        return [f for f in self.findings if f["counted"]]

    @property
    def top(self) -> list[Finding]:
        return sorted(
            self.counted, key=lambda f: (-f["estimated_waste"], f["rule_id"], f["resource_id"] or "")
        )[:TOP_N]

    @property
    def attention(self) -> list[Finding]:
        return [f for f in self.findings if f["attention"] and not f["acknowledged"]]

    @property
    def acknowledged(self) -> list[Finding]:
        return [f for f in self.findings if f["acknowledged"]]

    @property
    def new(self) -> list[Finding]:
        return [f for f in self.counted if f["lifecycle"] == "new"]

    @property
    def persisting(self) -> list[Finding]:
        return [f for f in self.counted if f["lifecycle"] != "new"]

    def savings(self) -> dict[str, Decimal]:
        """Waste that stopped since last week, per currency: last week's counted waste of findings resolved
        since, about a standing resource (an instance, bucket, checkpoint, upload).

        Only a finding that is gone counts: one that turned `suspect` or `insufficient_data` (telemetry
        stopped) is listed as no longer waste, but nothing proves its money stopped burning; one about a job
        run or job name (a failed job, an over-provisioned run) is listed as ended: the job stopped by
        itself or did not recur, which is not a fix.
        """
        out: dict[str, Decimal] = {}
        for r in self.resolved:
            if r["counted_last_week"] and r["now"] == "gone" and not r.get("job"):
                out[r["currency"]] = out.get(r["currency"], Decimal(0)) + r["last_week_waste"]
        return out

    def stopped(self, currency: str) -> dict[str, Any]:
        """The waste that stopped in `currency` beside the findings resolved in it, said so that the two
        never seem to disagree: `amount` (savings()), `resolved` (how many), `stopped` (how many of them
        count as stopped) and `note`, what the others are ("4 resolved, none of them priced waste that
        stopped: 3 now insufficient data, 1 job ended or did not recur")."""
        rows = [x for x in self.resolved if (x["currency"] or "") == (currency or "")]
        why: dict[str, int] = {}
        stopped = 0
        for x in rows:
            if not x["counted_last_week"]:
                reason = "acknowledged last week"
            elif x["now"] != "gone":
                reason = "now " + str(x["now"]).replace("_", " ")
            elif x.get("job"):
                reason = "job ended or did not recur"
            else:
                stopped += 1
                continue
            why[reason] = why.get(reason, 0) + 1
        others = ", ".join(f"{n} {reason}" for reason, n in sorted(why.items(), key=lambda kv: -kv[1]))
        n = len(rows)
        if not n:
            note = "nothing resolved since last week"
        elif not stopped:
            note = f"{n} resolved, none of them priced waste that stopped: {others}"
        else:
            note = f"last week's waste of the {stopped} resolved finding(s) that are gone"
            if others:
                note += f"; {n - stopped} more resolved but not counted as stopped: {others}"
        return {
            "amount": self.savings().get(currency, Decimal(0)),
            "resolved": n,
            "stopped": stopped,
            "note": note,
        }

    def top_groups(self, n: int = MAIN_TOP) -> list[FindingGroup]:
        """The main page's top findings: the counted findings of finding_groups(), a rule's many small
        ones as one roll-up line, largest amount first, at most `n` lines."""
        lines = []
        for g in self.finding_groups():
            if g.rollup is not None:
                u = g.rollup
                if u.status == "waste" and not u.attention and not u.acknowledged:
                    lines.append(replace(g, amount=u.amount))
            elif g.finding is not None and g.finding.counted:
                lines.append(replace(g, amount=Decimal(g.finding.estimated_waste or 0)))
        lines.sort(key=lambda g: -(g.amount or 0))
        return lines[:n]

    def finding_count(self, currency: str) -> str:
        """The counted findings of a currency, saying what they count: "25 findings + 213 orphaned
        checkpoints (USD 198.00)", a rule's rolled-up small findings named apart."""
        single, rolled = 0, []
        for g in self.finding_groups():
            u = g.get("rollup")
            if u and u["currency"] == currency and u["status"] == "waste" and not u["attention"]:
                if not u["acknowledged"]:
                    rolled.append(u)
            elif not u and g["finding"]["counted"] and g["finding"]["currency"] == currency:
                single += 1
        parts = [f"{single} finding{'s' if single != 1 else ''}"] if single or not rolled else []
        for u in rolled:
            noun = u["rule_name"].replace("-", " ")
            parts.append(
                f"{u['count']} {noun}{'s' if not noun.endswith('s') else ''} ({currency} {u['amount']:,.2f})"
            )
        return " + ".join(parts)

    def advice_by_saving(self) -> list[Advice]:
        """The week's advice, the largest expected saving first (an item without one last)."""
        return sorted(self.advice, key=lambda a: -Decimal(a["estimated_saving"] or 0))

    def listed_teams(self) -> list[TeamWaste]:
        """by_team() without the teams that had neither spend nor waste this week."""
        return [t for t in self.by_team() if t["spend"] or t["waste"]]

    def changes(self) -> list[ChangeCounts]:
        """The "what changed" line's figures (one row), or none when last week was not evaluated."""
        if not self.previous_evaluated:
            return []
        stopped = tuple({"currency": h.currency, **self.stopped(h.currency)} for h in self.headline)
        return [ChangeCounts(len(self.new), len(self.persisting), len(self.resolved), stopped)]

    def top_teams(self, n: int = MAIN_TEAMS) -> list[TeamWaste]:
        """The `n` teams with the most waste (listed_teams()): the main page's, report.md's."""
        return self.listed_teams()[:n]

    def team_lines(self) -> list[TeamLine]:
        """Waste by team and project: each listed team's total, then its projects in the same currency."""
        out = []
        for t in self.listed_teams():
            out.append(
                TeamLine(team=t.team, project=None, currency=t.currency, spend=t.spend, waste=t.waste,
                         waste_pct=t.waste_pct, budget=t.budget, slug=t.slug)
            )  # fmt: skip
            for p in self.by_project:
                if p.team == t.team and p.currency == t.currency:
                    out.append(
                        TeamLine(team=p.team, project=p.project, currency=p.currency, spend=p.spend,
                                 waste=p.waste, waste_pct=p.waste_pct, budget=self.project_budget(p.project),
                                 slug=t.slug)
                    )  # fmt: skip
        return out

    def action_summary(self) -> list[ActionGroup]:
        """The week's actions per rule, kind and currency: how many, their waste, how many executable."""
        out: dict[tuple[str, str, str], dict[str, Any]] = {}
        for a in self.actions:
            key = (a["rule_id"], a["kind"], a["currency"] or "")
            g = out.setdefault(
                key,
                {"rule_id": a["rule_id"], "kind": a["kind"], "currency": a["currency"], "count": 0,
                 "amount": Decimal(0), "executable": 0},
            )  # fmt: skip
            g["count"] += 1
            g["amount"] += Decimal(a["estimated_waste"] or 0)
            g["executable"] += 1 if a.get("executable") else 0
        groups = sorted(out.values(), key=lambda g: (-g["amount"], g["rule_id"], g["kind"]))
        return [ActionGroup.of(g) for g in groups]

    def finding_groups(self) -> list[FindingGroup]:
        """The findings as "All findings" lists them, in their order: single findings (`finding`) and
        roll-ups (`rollup`) of at least ROLLUP_MIN small findings of one rule, status and currency, placed
        where their largest member would be."""
        waste = {h["currency"]: Decimal(h["waste"]) for h in self.headline}

        def key(f: Finding) -> tuple[Any, ...] | None:
            limit = waste.get(f["currency"], Decimal(0)) * ROLLUP_SHARE
            if Decimal(f["estimated_waste"] or 0) > limit and Decimal(f["estimated_waste"] or 0) > 0:
                return None
            return (f["rule_id"], f["status"], f["currency"], f["attention"], f["acknowledged"])

        members: dict[tuple[Any, ...], list[Finding]] = {}
        for f in self.findings:
            k = key(f)
            if k is not None:
                members.setdefault(k, []).append(f)
        out: list[FindingGroup] = []
        placed: set[tuple[Any, ...]] = set()
        for f in self.findings:
            k = key(f)
            if k is None or len(members[k]) < ROLLUP_MIN:
                out.append(FindingGroup(finding=f))
            elif k not in placed:
                placed.add(k)
                items = members[k]
                amounts = [Decimal(x["estimated_waste"] or 0) for x in items]
                rollup = Rollup(
                    id="rollup-" + "-".join(re.sub(r"[^A-Za-z0-9]+", "_", str(p)) for p in k),
                    rule_id=f.rule_id,
                    rule_name=f.rule_name,
                    resource_type=f.resource_type,
                    status=f.status,
                    attention=f.attention,
                    acknowledged=f.acknowledged,
                    currency=f.currency,
                    count=len(items),
                    amount=sum(amounts, Decimal(0)),
                    smallest=min(amounts),
                    largest=max(amounts),
                    findings=items,
                )
                out.append(FindingGroup(rollup=rollup))
        return out

    def attention_by_rule(self) -> list[AttentionGroup]:
        """One row per attention rule and currency: findings and the amount at stake (never waste)."""
        groups: dict[tuple[str, str], dict[str, Any]] = {}
        for f in self.findings:
            if not f["attention"]:
                continue
            key = (f["rule_id"], f["currency"] or "")
            g = groups.setdefault(
                key,
                {
                    "rule_id": f["rule_id"],
                    "rule_name": f["rule_name"],
                    "category": f["category"],
                    "currency": f["currency"],
                    "findings": 0,
                    "at_stake": Decimal(0),
                    "insufficient_data": 0,
                },
            )
            if f["status"] == "insufficient_data":
                g["insufficient_data"] += 1
            elif not f["acknowledged"]:
                g["findings"] += 1
                g["at_stake"] += f["estimated_waste"]
        return [
            AttentionGroup.of(g)
            for g in sorted(groups.values(), key=lambda g: (g["rule_id"], g["currency"] or ""))
        ]

    def consolidated(self) -> dict[str, Any] | None:
        """The week's spend and waste in the reporting currency, converted at the config's dated rates, or
        None when no rates are configured or every figure is already in the reporting currency.

        Each currency is converted at the latest rate valid on the week's first day; a currency without
        one is named in `not_converted` and left out of the totals (never added unconverted).
        """
        to = self.reporting_currency
        if not to or not self.exchange_rates or all(h["currency"] == to for h in self.headline):
            return None
        day = self.window.start.date()
        spend, waste, prev_spend, prev_waste = Decimal(0), Decimal(0), Decimal(0), Decimal(0)
        prev_known = True
        converted, not_converted = [], []
        kinds: set[str] = set()  # what last week's data is in each currency added
        for h in self.headline:
            cur = h["currency"]
            if cur == to:
                k, valid_from = Decimal(1), None
            else:
                valid = [r for r in self.exchange_rates if r.from_ == cur and r.valid_from <= day]
                if not valid:
                    not_converted.append(cur)
                    continue
                rate = max(valid, key=lambda r: r.valid_from)
                k, valid_from = Decimal(rate.rate), rate.valid_from
            spend += Decimal(h["spend"]) * k
            waste += Decimal(h["waste"]) * k
            prev_spend += Decimal(h.get("prev_spend") or 0) * k
            if h.get("prev_waste") is None:
                prev_known = False
            else:
                prev_waste += Decimal(h["prev_waste"]) * k
            if cur != to:
                converted.append({"currency": cur, "rate": k, "valid_from": valid_from})
            kinds.add(self.previous_data(cur))
        cent = Decimal("0.01")
        return {
            "currency": to,
            "spend": spend.quantize(cent),
            "waste": waste.quantize(cent),
            "waste_pct": (100 * waste / spend).quantize(Decimal("0.1")) if spend > 0 else None,
            "prev_spend": prev_spend.quantize(cent),
            "prev_waste": prev_waste.quantize(cent) if prev_known else None,
            "converted": converted,
            "not_converted": not_converted,
            # a change of the total is a percentage only when every currency in it had a whole week
            "previous": "full" if kinds == {"full"} else "none" if kinds == {"none"} else "partial",
        }

    def rule_totals(self) -> list[RuleTotal]:
        """Per currency: the headline waste beside the sum of the by-rule rows as shown (each rounded to the
        cent), and their difference: rounding can make the rows add up to a cent or two off the headline,
        which is the exact sum of the findings rounded once."""
        out = []
        for h in self.headline:
            rows = [r for r in self.by_rule if r["currency"] == h["currency"]]
            if not rows:
                continue
            shown = sum((Decimal(r["waste"]).quantize(Decimal("0.01")) for r in rows), Decimal(0))
            waste = Decimal(h["waste"]).quantize(Decimal("0.01"))
            out.append(
                RuleTotal(currency=h["currency"], waste=waste, rows_sum=shown, difference=shown - waste)
            )
        return out

    def by_category(self) -> list[CategoryWaste]:
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for r in self.by_rule:
            g = out.setdefault(
                (r["category"], r["currency"]),
                {"category": r["category"], "currency": r["currency"], "waste": Decimal(0), "findings": 0},
            )
            g["waste"] += r["waste"]
            g["findings"] += r["waste_findings"]
        return [CategoryWaste.of(g) for g in sorted(out.values(), key=lambda g: (-g["waste"], g["category"]))]

    def by_team(self) -> list[TeamWaste]:
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for r in self.by_project:
            g = out.setdefault(
                (r["team"], r["currency"]),
                {
                    "team": r["team"],
                    "currency": r["currency"],
                    "spend": Decimal(0),
                    "waste": Decimal(0),
                    "waste_findings": 0,
                },
            )
            g["spend"] += r["spend"]
            g["waste"] += r["waste"]
            g["waste_findings"] += r["waste_findings"]
        for g in out.values():
            g["waste_pct"] = round(100 * g["waste"] / g["spend"], 1) if g["spend"] > 0 else None
            g["budget"] = next(
                (b for b in self.budgets if b["dimension"] == "team" and b["name"] == g["team"]), None
            )
            g["slug"] = self.team_slug(g["team"])
        teams = sorted(out.values(), key=lambda g: (-g["waste"], -g["spend"], g["team"]))
        return [TeamWaste.of(g) for g in teams]

    def project_budget(self, project: str) -> Budget | None:
        return next((b for b in self.budgets if b["dimension"] == "project" and b["name"] == project), None)

    def team_slug(self, team: str) -> str | None:
        return next((t.slug for t in self.teams if t.name == team), None)

    def max_rule_waste(self) -> Decimal:
        return max((Decimal(x["waste"]) for x in self.by_rule), default=Decimal(0))


def training_summary(jobs: list[TrainingJob]) -> list[TrainingGroup]:
    """The measured training jobs added up per GPU model, cost basis and currency: tokens per GPU-hour =
    their tokens / their GPU-hours, cost per million tokens = their cost / their tokens x 10^6, and the
    median of their jobs' measured MFU. A basis is never mixed into another: a modelled cost per token is
    never shown as a billed one."""
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for j in jobs:
        key = (j["gpu_model"] or "(unknown GPU)", j["pricing_basis"] or "unpriced", j["currency"] or "")
        g = groups.setdefault(
            key,
            {
                "gpu_model": key[0],
                "pricing_basis": key[1],
                "currency": j["currency"],
                "jobs": 0,
                "tokens": 0.0,
                "gpu_hours": 0.0,
                "cost": Decimal(0),
                "mfus": [],
            },
        )
        g["jobs"] += 1
        g["tokens"] += float(j["tokens"] or 0)
        g["gpu_hours"] += float(j["gpu_hours"] or 0)
        g["cost"] += Decimal(str(j["cost"] or 0))
        if j["mfu"] is not None:
            g["mfus"].append(float(j["mfu"]))
    out = []
    for g in groups.values():
        mfus = sorted(g.pop("mfus"))
        mid = len(mfus) // 2
        g["mfu_median"] = (mfus[mid] if len(mfus) % 2 else (mfus[mid - 1] + mfus[mid]) / 2) if mfus else None
        g["tokens_per_gpu_hour"] = g["tokens"] / g["gpu_hours"] if g["gpu_hours"] else None
        g["cost_per_million_tokens"] = (
            g["cost"] / Decimal(str(g["tokens"])) * 1_000_000 if g["tokens"] else None
        )
        out.append(g)
    out.sort(key=lambda g: (g["gpu_model"], g["pricing_basis"], g["currency"] or ""))
    return [TrainingGroup.of(g) for g in out]


SLUG_MAX = 60  # characters of a team page's file name before `.html`: far below any file system's limit


def slugify(name: str, taken: set[str]) -> str:
    """A file-name-safe slug of `name`, bounded, stable and unique; added to `taken`.

    A team's slug is its name's readable part (at most SLUG_MAX - 9 characters) and the first 8 hex digits
    of the name's sha256, so the same team always has the same file, two names that read alike never share
    one, and no team (not even one called `untagged`) takes the file of a bucket like "(untagged)", whose
    slug is its bare name.
    """
    base = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-.") or "team"
    if name.startswith("(") and name.endswith(")"):
        slug = base[:SLUG_MAX]  # the report's own buckets: "(untagged)" -> untagged
    else:
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
        slug = f"{base[: SLUG_MAX - 9].rstrip('-.')}-{digest}"
    unique, n = slug, 2
    while unique in taken:
        unique, n = f"{slug[: SLUG_MAX - 4]}-{n}", n + 1
    taken.add(unique)
    return unique


def _across_bases(spend: list[CategorySpend]) -> list[CategorySpend]:
    """Spend-by-category rows of one project and currency added up over their pricing bases (bill, owned,
    contract), the bases kept as `pricing_basis` joined by '+': a team page shows one row per project."""
    out: dict[tuple[str, str], CategorySpend] = {}
    for r in spend:
        key = (r.project, r.currency)
        row = out.get(key)
        if row is None:
            out[key] = r
            continue
        out[key] = replace(
            row,
            compute=row.compute + r.compute,
            storage=row.storage + r.storage,
            network=row.network + r.network,
            ai_ml=row.ai_ml + r.ai_ml,
            other=row.other + r.other,
            total=row.total + r.total,
            pricing_basis="+".join(sorted({*row.pricing_basis.split("+"), r.pricing_basis})),
        )
    return list(out.values())


def team_pages(report: WeeklyReport) -> list[TeamPage]:
    """One page per team with spend or findings this week, "(untagged)"-style names last."""
    names: set[str] = {r["team"] for r in report.by_project}
    names |= {f["team"] for f in report.findings}
    taken: set[str] = set()
    pages = []
    for name in sorted(names, key=lambda n: (n.startswith("("), n)):
        findings = [f for f in report.findings if f["team"] == name and not f["attention"]]
        attention = [
            f
            for f in report.findings
            if f["attention"] and (f["team"] == name or f["evidence"].get("suggested_team") == name)
        ]
        headline = []
        for currency in sorted({r["currency"] for r in report.by_project if r["team"] == name}):
            projects = [r for r in report.by_project if r["team"] == name and r["currency"] == currency]
            spend = sum((r["spend"] for r in projects), Decimal(0))
            waste = sum((r["waste"] for r in projects), Decimal(0))
            headline.append(
                TeamHeadline(
                    currency=currency,
                    spend=spend,
                    waste=waste,
                    waste_pct=round(100 * waste / spend, 1) if spend > 0 else None,
                    waste_findings=sum(r.waste_findings for r in projects),
                )
            )
        pages.append(
            TeamPage(
                name=name,
                slug=slugify(name, taken),
                headline=headline,
                projects=[r for r in report.by_project if r["team"] == name],
                spend_by_category=_across_bases([r for r in report.spend_by_category if r["team"] == name]),
                findings=findings,
                attention=attention,
                resolved=[r for r in report.resolved if r["team"] == name],
                training=[j for j in report.training if j["team"] == name],
                advice=[a for a in report.advice if a["team"] == name],
                budgets=[
                    b
                    for b in report.budgets
                    if (b["dimension"] == "team" and b["name"] == name)
                    or (b["dimension"] == "project" and b["team"] == name)
                ],
            )
        )
    return pages


def check_totals(report: WeeklyReport) -> None:
    """The report's own arithmetic, per currency: waste = sum of counted findings; waste <= spend."""
    for h in report.headline:
        listed = sum(
            (f["estimated_waste"] for f in report.counted if f["currency"] == h["currency"]), Decimal(0)
        )
        if abs(listed - h["waste"]) > Decimal("0.01"):
            raise AssertionError(f"{report.week}: waste total {h['waste']} != sum of findings {listed}")
        if h["waste"] > h["spend"] + Decimal("0.01"):
            raise AssertionError(
                f"{report.week}: waste {h['waste']} exceeds spend {h['spend']} ({h['currency']})"
            )
