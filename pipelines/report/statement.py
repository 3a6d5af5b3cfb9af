"""Each team's monthly statement: its whole bill as the `showback` mart allocates it (docs/showback.md).

For the month the report week starts in and the month before: the team's direct cost by service, each pool a
`showback:` rule gave it (the rule, its split in words, the team's share), the total, and its counted waste
beside them, never inside them. Written as statements/<team>.html beside the weekly report and linked from
the team's page; `wastewatch export showback` writes the same figures for finance tools.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import duckdb
from jinja2 import Environment

from pipelines.report.rows import Row
from pipelines.warehouse import rows, sql_text, table_exists

UNALLOCATED = "unallocated"


@dataclass(frozen=True, slots=True)
class StatementLine(Row):
    """One row of rpt_showback_statement: a team's cost (or waste) of one kind, rule and service in a month."""

    team: str
    month: date
    currency: str
    kind: str
    rule: str | None
    method: str | None
    measure: str | None
    share: float | None
    service: str | None
    cost: Decimal
    waste: Decimal
    findings: int


@dataclass(frozen=True, slots=True)
class Pool:
    """What one rule gave the team in each of the two months."""

    rule: str
    how: str
    this_month: Decimal
    last_month: Decimal


@dataclass(frozen=True, slots=True)
class Statement:
    """One team's statement in one currency."""

    team: str
    slug: str
    currency: str
    month: date
    previous: date
    direct: tuple[Decimal, Decimal]
    pools: list[Pool]
    unallocated: tuple[Decimal, Decimal]
    total: tuple[Decimal, Decimal]
    services: list[tuple[str, Decimal, Decimal]]
    waste: Decimal
    findings: int


def split_in_words(method: str | None, measure: str | None, share: float | None) -> str:
    """How a rule split its pool, and the team's part, as the statement says it."""
    part = f"{100 * share:.1f} % to this team" if share is not None else "this team's part"
    if method == "fixed":
        return f"a fixed share: {part}"
    if method == "even":
        return f"split evenly among the teams: {part}"
    if method == "proportional":
        basis = {
            "spend": "each team's own spend",
            "gpu_hours": "each team's GPU-hours",
            "storage_bytes": "each team's stored bytes",
            "busy_gpu_hours": "each team's busy GPU-hours on the cluster",
        }.get(measure or "", f"each team's {measure}")
        return f"in proportion to {basis}: {part}"
    return "kept unallocated: the rule found nobody to split it among"


def collect_statements(con: duckdb.DuckDBPyConnection, month: date, slugs: dict[str, str]) -> list[Statement]:
    """The statements of every team (and the unallocated rest) the showback mart holds for `month` and the
    month before; `slugs` names each team's file (the team pages' slugs, so both link to each other)."""
    if not table_exists(con, "showback"):
        return []
    lines = [
        StatementLine.of(r)
        for r in rows(con, sql_text("reports", "rpt_showback_statement"), {"month": month})
    ]
    previous = (month.replace(day=1) - date.resolution).replace(day=1)
    groups: dict[tuple[str, str], list[StatementLine]] = defaultdict(list)
    for line in lines:
        groups[(line.team, line.currency)].append(line)
    out = []
    for (team, currency), group in sorted(groups.items()):
        out.append(_statement(team, currency, month, previous, group, slugs))
    return [s for s in out if any(s.total) or s.waste]


def _statement(
    team: str,
    currency: str,
    month: date,
    previous: date,
    lines: list[StatementLine],
    slugs: dict[str, str],
) -> Statement:
    def both(kind: str, rule: str | None = None) -> tuple[Decimal, Decimal]:
        pick = [x for x in lines if x.kind == kind and (rule is None or x.rule == rule)]
        return (
            sum((x.cost for x in pick if x.month == month), Decimal(0)),
            sum((x.cost for x in pick if x.month == previous), Decimal(0)),
        )

    pools = []
    for rule in sorted({x.rule for x in lines if x.kind == "allocated" and x.rule}):
        latest = max((x for x in lines if x.rule == rule), key=lambda x: x.month)
        now, before = both("allocated", rule)
        pools.append(Pool(rule, split_in_words(latest.method, latest.measure, latest.share), now, before))
    services: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0)])
    for x in lines:
        if x.kind != "waste":
            services[x.service or "(no service)"][0 if x.month == month else 1] += x.cost
    costs = [x for x in lines if x.kind != "waste"]
    total = (
        sum((x.cost for x in costs if x.month == month), Decimal(0)),
        sum((x.cost for x in costs if x.month == previous), Decimal(0)),
    )
    waste = [x for x in lines if x.kind == "waste" and x.month == month]
    return Statement(
        team=team,
        slug=slugs.get(team, team),
        currency=currency,
        month=month,
        previous=previous,
        direct=both("direct"),
        pools=pools,
        unallocated=both("unallocated"),
        total=total,
        services=sorted(((k, v[0], v[1]) for k, v in services.items()), key=lambda s: (-s[1], s[0])),
        waste=sum((x.waste for x in waste), Decimal(0)),
        findings=sum(x.findings for x in waste),
    )


def statement_html(statement: Statement, report: Any, env: Environment) -> str:
    """The statement's page; `report` is the weekly report it is written with (its week, its footer)."""
    return env.get_template("statement.html.j2").render(s=statement, r=report, week=report.week)
