"""Run the advisors for one ISO week and replace that week's advice (one transaction per advisor)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import duckdb
from pydantic import ValidationError

from pipelines import progress
from pipelines.advice import cadence, commitment, spot
from pipelines.advice.contract import ADVICE_COLUMNS, Advisor
from pipelines.config import Config
from pipelines.errors import ConfigError
from pipelines.warehouse import transaction, utcnow
from rules import Window

ADVISORS: tuple[Advisor, ...] = (commitment.ADVISOR, spot.ADVISOR, cadence.ADVISOR)


@dataclass
class AdviceOutcome:
    advisor_id: str
    items: int
    recommended: int
    estimated_saving: dict[str, Decimal]  # a week, by currency, of the recommended items
    params: dict[str, object]


def get_advisor(key: str) -> Advisor:
    for a in ADVISORS:
        if key in (a.key, a.id, a.name):
            return a
    raise KeyError(f"no advisor {key!r}; known: {', '.join(a.key for a in ADVISORS)}")


def _params(config: Config, advisor: Advisor) -> Any:
    overrides = config.advice.get(advisor.key, {})
    try:
        return advisor.make_params(overrides)
    except ValidationError as exc:
        problems = "; ".join(
            f"advice.{advisor.key}.{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"{config.path or 'wastewatch.yaml'}: {problems}") from None


def run_advisor(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    advisor: Advisor,
    window: Window,
    detected_at: datetime | None = None,
) -> tuple[AdviceOutcome, list[dict[str, Any]]]:
    started = time.monotonic()
    params = _params(config, advisor)
    items = advisor.rows(con, window, params, detected_at or utcnow())
    write_advice(con, advisor.id, window, items)
    recommended = [i for i in items if i["status"] == "recommended"]
    by_currency: dict[str, Decimal] = {}
    for i in recommended:
        cur = i["currency"] or config.currency
        by_currency[cur] = by_currency.get(cur, Decimal(0)) + Decimal(i["estimated_saving"])
    outcome = AdviceOutcome(
        advisor.id, len(items), len(recommended), by_currency, params.model_dump(mode="json")
    )
    amounts = ", ".join(f"{c} {a:,.2f}" for c, a in sorted(by_currency.items()))
    progress.done(
        f"  {advisor.id} {advisor.name} (advice, {window.label}): {len(items)} item(s), {len(recommended)} recommended"
        + (f", saving {amounts} a week" if amounts else "")
        + f" in {progress.seconds(started)}"
    )
    return outcome, items


def write_advice(
    con: duckdb.DuckDBPyConnection, advisor_id: str, window: Window, items: list[dict[str, Any]]
) -> None:
    """Replace the (advisor, week) advice with `items`; re-running the same week is idempotent."""
    names = list(ADVICE_COLUMNS)
    placeholders = ", ".join(f"cast(${n} as {ADVICE_COLUMNS[n]})" for n in names)
    with transaction(con):
        con.execute(
            "delete from advice where advisor_id = $a and week_start = $w",
            {"a": advisor_id, "w": window.start.date()},
        )
        for item in items:
            con.execute(
                f"insert into advice ({', '.join(names)}) values ({placeholders})",  # noqa: S608 - our constants
                {n: item[n] for n in names},
            )


def advise_week(
    con: duckdb.DuckDBPyConnection, config: Config, window: Window, detected_at: datetime | None = None
) -> list[AdviceOutcome]:
    return [run_advisor(con, config, a, window, detected_at)[0] for a in ADVISORS]
