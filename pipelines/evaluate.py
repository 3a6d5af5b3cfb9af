"""Run the registered rules for one ISO week and replace that week's findings (one transaction per rule).

The definitions import this module (an ingest's too): polars is imported by the function that evaluates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING

import duckdb

from pipelines import progress
from pipelines.config import Config
from pipelines.warehouse import sql_text, transaction, utcnow
from rules import ALL_RULES, FINDING_COLUMNS, Rule, Window
from rules._contract import ATTENTION_CATEGORIES

if TYPE_CHECKING:
    import polars as pl


@dataclass
class RuleOutcome:
    rule_id: str
    findings: int
    waste_findings: int
    estimated_waste: dict[str, Decimal]  # by currency
    params: dict[str, object]


def active_rules() -> tuple[Rule, ...]:
    return tuple(r for r in ALL_RULES if r.status != "deprecated")


def evaluate_rule(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    rule: Rule,
    window: Window,
    detected_at: datetime | None = None,
) -> tuple[RuleOutcome, pl.DataFrame]:
    import polars as pl

    started = time.monotonic()
    params = rule.make_params(config.rule_overrides(rule.id), config)
    frame = rule.evaluate(con, window, params, detected_at or utcnow())
    write_findings(con, rule.id, window, frame)
    waste = frame.filter(pl.col("status") == "waste")
    by_currency: dict[str, Decimal] = {}
    for row in waste.group_by("currency").agg(pl.col("estimated_waste").sum()).iter_rows():
        by_currency[row[0] or config.currency] = Decimal(str(row[1]))
    outcome = RuleOutcome(rule.id, frame.height, waste.height, by_currency, params.model_dump(mode="json"))
    amounts = ", ".join(f"{cur} {amount:,.2f}" for cur, amount in sorted(by_currency.items()))
    label = "at stake" if rule.attention else "waste"
    progress.done(
        f"  {rule.id} {rule.name} {window.label}: {frame.height} finding(s)"
        + (f", {label} {amounts}" if amounts else "")
        + f" in {progress.seconds(started)}"
    )
    return outcome, frame


_DELETE_WEEK = "delete from findings where rule_id = $r and week_start = $w"


def write_findings(con: duckdb.DuckDBPyConnection, rule_id: str, window: Window, frame: pl.DataFrame) -> None:
    """Replace the (rule, week) findings with `frame`; re-running the same week is idempotent.

    The rows get `counted`, `attention` and the ack in force (sql/raw/findings/flags.sql) in the same
    transaction, so the table never holds a finding without them. No findings: the week's old ones are
    deleted, and there is nothing to insert or flag (most rules on most weeks of a small fleet)."""
    week = {"r": rule_id, "w": window.start.date()}
    if frame.is_empty():
        con.execute(_DELETE_WEEK, week)
        return
    names = ", ".join(FINDING_COLUMNS)
    casts = ", ".join(f"cast({name} as {kind}) as {name}" for name, kind in FINDING_COLUMNS.items())
    arrow = frame.to_arrow()
    con.register("_new_findings", arrow)
    try:
        with transaction(con):
            con.execute(_DELETE_WEEK, week)
            con.execute(f"insert into findings ({names}) select {casts} from _new_findings")  # noqa: S608 - our constants
            con.execute(
                sql_text("raw/findings", "flags"),
                {
                    "attention": list(ATTENTION_CATEGORIES),
                    "rule_id": rule_id,
                    "week_start": window.start.date(),
                    "finding_key": None,
                },
            )
    finally:
        con.unregister("_new_findings")


def evaluate_week(
    con: duckdb.DuckDBPyConnection, config: Config, window: Window, detected_at: datetime | None = None
) -> list[RuleOutcome]:
    return [evaluate_rule(con, config, rule, window, detected_at)[0] for rule in active_rules()]
