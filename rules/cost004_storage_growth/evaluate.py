"""COST004's computation: each budgeted scope's monthly growth of stored bytes against its limit."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from rules._contract import QUERY_COLUMNS, RuleParams, Window

if TYPE_CHECKING:
    import polars as pl

GROWTH_SQL = Path(__file__).with_name("growth.sql")
DAYS_PER_MONTH = 30.44  # the average month, as every monthly storage price in wastewatch is scaled
GIB = 1024**3
# how deep the measured prefixes go (sql/marts/storage_prefix_days.sql cuts keys to three folders)
MART_DEPTH = 3
TOP_PREFIXES = 5
WASTE_BASIS = (
    "amount at stake, not waste: the monthly growth of stored bytes (bytes at the last inventory date minus "
    "bytes at the first, scaled to 30.44 days) x the storage price per GB-month of its bucket and class: what "
    "the growth adds to the storage bill each month"
)


@dataclass
class Bucket:
    """One bucket's part of a scope: its measured span and its prefixes x classes at both ends."""

    store: str
    bucket: str
    first_date: date
    last_date: date
    inventory_dates: int
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def span_days(self) -> int:
        return (self.last_date - self.first_date).days

    def per_month(self, delta: float) -> float:
        return delta * DAYS_PER_MONTH / self.span_days


def _scope_depth(scope: str) -> int:
    """Folders below the bucket a location scope names (0 for a bucket, a team, a project, a path)."""
    if scope.startswith("s3://"):
        return len([f for f in scope[5:].split("/")[1:] if f])
    return 0


def _sub_prefix(row: dict[str, Any], levels: int) -> str:
    """The row's location cut to `levels` folders below its bucket."""
    folders = [f for f in row["prefix"].split("/") if f][:levels]
    root = f"s3://{row['bucket']}/" if row["store"] == "s3" else f"{row['bucket']}/"
    return root + "".join(f"{f}/" for f in folders)


def _gib(n: float) -> str:
    return f"{n / GIB:,.1f} GiB"


def _limit_text(limit: dict[str, float]) -> str:
    if limit.get("percent") is not None:
        return f"{limit['percent']:g} % a month"
    return f"{limit['gib']:,.6g} GiB a month"


def _measurements(
    con: duckdb.DuckDBPyConnection, window: Window, scopes: list[str], lookback_days: int
) -> dict[str, list[dict[str, Any]]]:
    since = (window.end - timedelta(days=lookback_days)).date()
    rel = con.execute(
        GROWTH_SQL.read_text(encoding="utf-8"), {"scopes": scopes, "since": since, "until": window.end}
    )
    names = [d[0] for d in rel.description]
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for values in rel.fetchall():
        row = dict(zip(names, values, strict=True))
        out[row["scope"]].append(row)
    return out


def _one(values: set[Any]) -> Any:
    """The value every bucket of a scope shares, else None."""
    known = {v for v in values if v is not None}
    return next(iter(known)) if len(known) == 1 else None


def _record(scope: str, status: str, reason: str, evidence: dict[str, Any], money: Decimal, currency: str,
            attrs: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    return {
        "resource_id": f"storage-growth:{scope}",
        "resource_type": "storage growth budget",
        "provider": attrs.get("provider"),
        "account_id": attrs.get("account_id"),
        "region_id": attrs.get("region_id"),
        "team": attrs.get("team"),
        "project": attrs.get("project"),
        "owner": None,
        "job_id": None,
        "status": status,
        "reason": reason,
        "evidence": json.dumps({**evidence, "amount_at_stake": float(money)}),
        "estimated_waste": money.quantize(Decimal("0.000001")),
        "currency": currency,
        "waste_basis": WASTE_BASIS,
    }


def evaluate(con: duckdb.DuckDBPyConnection, window: Window, params: RuleParams) -> pl.DataFrame:
    import polars as pl

    p: Any = params
    budgets: dict[str, Any] = {k: v.model_dump(exclude_none=True) for k, v in p.budgets.items()}
    schema = {c: pl.String for c in QUERY_COLUMNS} | {"estimated_waste": pl.Decimal(18, 6)}
    if not budgets:
        return pl.DataFrame([], schema=schema)
    measured = _measurements(con, window, sorted(budgets), p.lookback_days)
    until = (window.end - timedelta(days=1)).date()
    since = (window.end - timedelta(days=p.lookback_days)).date()
    records = []
    for scope in sorted(budgets):
        limit = budgets[scope]
        rows = measured.get(scope, [])
        buckets: dict[tuple[str, str], Bucket] = {}
        for r in rows:
            key = (r["store"], r["bucket"])
            if key not in buckets:
                buckets[key] = Bucket(
                    r["store"], r["bucket"], r["first_date"], r["last_date"], r["inventory_dates"]
                )
            buckets[key].rows.append(r)
        attrs = {
            a: _one({r[a] for r in rows}) for a in ("provider", "account_id", "region_id", "team", "project")
        }
        kind, _, name = scope.partition(":")
        if kind in ("team", "project") and not scope.startswith(("s3:", "/")):
            attrs[kind] = name
        evidence: dict[str, Any] = {
            "scope": scope,
            "limit": limit,
            "lookback_from": since.isoformat(),
            "lookback_to": until.isoformat(),
            "min_span_days": p.min_span_days,
        }
        measurable = [b for b in buckets.values() if b.span_days >= p.min_span_days]
        unmeasured = [b for b in buckets.values() if b.span_days < p.min_span_days]
        evidence["unmeasured_buckets"] = [
            {"bucket": b.bucket, "inventory_dates": b.inventory_dates, "first_date": b.first_date.isoformat(),
             "last_date": b.last_date.isoformat()}
            for b in sorted(unmeasured, key=lambda b: b.bucket)
        ]  # fmt: skip
        if not measurable:
            if not buckets:
                owned = kind in ("team", "project") and not scope.startswith(("s3:", "/"))
                lacks = (
                    f"no inventory of a bucket billed to {kind} {name}"
                    if owned
                    else f"no inventory holding {scope}"
                ) + f" in the {p.lookback_days} days to {until}"
                if owned:
                    lacks += f" (a bucket's {kind} is its bill's tag)"
            else:
                dates = sorted({d for b in unmeasured for d in (b.first_date, b.last_date)})
                lacks = (
                    f"inventories on {', '.join(d.isoformat() for d in dates)} only in the {p.lookback_days} "
                    f"days to {until}"
                )
            reason = (
                f"{scope} has a storage-growth budget of {_limit_text(limit)} but {lacks}; measuring growth "
                f"needs two inventory dates at least {p.min_span_days} days apart (an s3_inventory source keeps "
                "`keep_inventories` of them, 2 unless set: keep a month's)."
            )
            evidence["lacking"] = lacks
            records.append(
                _record(scope, "insufficient_data", reason, evidence, Decimal(0), p.currency, attrs)
            )
            continue

        first = sum(r["bytes_first"] for b in measurable for r in b.rows)
        last = sum(r["bytes_last"] for b in measurable for r in b.rows)
        monthly = sum(b.per_month(r["bytes_last"] - r["bytes_first"]) for b in measurable for r in b.rows)
        pct = 100 * monthly / first if first > 0 else None
        if limit.get("percent") is not None:
            over = monthly > 0 and (pct is None or pct > limit["percent"])
            allowed = first * limit["percent"] / 100
        else:
            over = monthly > limit["gib"] * GIB
            allowed = limit["gib"] * GIB
        if not over:
            continue

        # the monthly cost of the growth, per currency; bytes of a class with no price are named apart
        cost: dict[str, float] = defaultdict(float)
        unpriced = 0.0
        for b in measurable:
            for r in b.rows:
                grown = b.per_month(r["bytes_last"] - r["bytes_first"])
                if r["price_per_gb_month"] is None or r["currency"] is None:
                    unpriced += max(grown, 0)
                else:
                    cost[r["currency"]] += grown / GIB * r["price_per_gb_month"]
        currency = max(cost, key=lambda c: abs(cost[c])) if cost else p.currency
        added = Decimal(str(round(cost.get(currency, 0.0), 6)))
        over_cost = Decimal(str(round(cost.get(currency, 0.0) * max(monthly - allowed, 0) / monthly, 6)))

        levels = min(_scope_depth(scope) + p.prefix_levels, MART_DEPTH)
        by_prefix: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
        for b in measurable:
            for r in b.rows:
                agg = by_prefix[_sub_prefix(r, levels)]
                agg[0] += b.per_month(r["bytes_last"] - r["bytes_first"])
                agg[1] += r["bytes_first"]
                agg[2] += r["bytes_last"]
        top = sorted(((v[0], k, v) for k, v in by_prefix.items() if v[0] > 0), key=lambda t: (-t[0], t[1]))
        grew_most = [
            {
                "prefix": k,
                "monthly_growth_gib": round(v[0] / GIB, 3),
                "growth_pct_per_month": round(100 * v[0] / v[1], 1) if v[1] > 0 else None,
                "bytes_first": int(v[1]),
                "bytes_last": int(v[2]),
            }
            for _, k, v in top[:TOP_PREFIXES]
        ]
        spans = sorted({(b.first_date, b.last_date) for b in measurable})
        evidence |= {
            "first_date": min(s[0] for s in spans).isoformat(),
            "last_date": max(s[1] for s in spans).isoformat(),
            "span_days": max(b.span_days for b in measurable),
            "buckets": sorted(f"{b.store}:{b.bucket}" for b in measurable),
            "bytes_first": int(first),
            "bytes_last": int(last),
            "monthly_growth_bytes": int(monthly),
            "monthly_growth_gib": round(monthly / GIB, 3),
            "growth_pct_per_month": None if pct is None else round(pct, 2),
            "allowed_monthly_growth_gib": round(allowed / GIB, 3),
            "monthly_cost_added": float(added),
            "over_budget_monthly_cost": float(over_cost),
            "other_currency_cost": {c: round(v, 2) for c, v in sorted(cost.items()) if c != currency},
            "unpriced_monthly_growth_gib": round(unpriced / GIB, 3),
            "grew_most": grew_most,
        }
        rate = f"{pct:.1f} % a month" if pct is not None else "from nothing"
        b0 = min(s[0] for s in spans)
        b1 = max(s[1] for s in spans)
        top_text = ", ".join(
            f"{g['prefix']} (+{g['monthly_growth_gib']:,.1f} GiB a month)" for g in grew_most[:3]
        )
        if added > 0:
            status = "waste"
            money_text = f"the growth adds {currency} {added:,.2f} to the monthly storage bill each month"
        else:
            status = "suspect"
            money_text = (
                "no storage price is known for the grown bytes (set prices: storage_gb_month:)"
                if not cost
                else f"the growth does not raise the storage bill ({currency} {added:,.2f} a month: it moved "
                "to cheaper classes)"
            )
        if unpriced > 0 and cost:
            money_text += (
                f" ({unpriced / GIB:,.1f} GiB a month of it has no price: set prices: storage_gb_month:)"
            )
        reason = (
            f"{scope} grew {rate} ({_gib(first)} on {b0} to {_gib(last)} on {b1}, "
            f"+{monthly / GIB:,.1f} GiB a month) against a budget of {_limit_text(limit)}; {money_text}"
            + (f"; grew most: {top_text}" if top_text else "")
            + (
                "; not measured (fewer than two inventory dates "
                f"{p.min_span_days} days apart): {', '.join(sorted(b.bucket for b in unmeasured))}"
                if unmeasured
                else ""
            )
            + "."
        )
        money = added if status == "waste" else Decimal(0)
        records.append(_record(scope, status, reason, evidence, money, currency, attrs))
    return pl.DataFrame(records, schema=schema)
