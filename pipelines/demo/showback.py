"""The demo's showback, worked out from the generated bill and jobs without the mart's SQL: each team's
total for each month, with the three rules of the demo config (writers._showback_text) applied by hand.

- `support-plan`: the AWS Support line, 50 / 30 / 20 % to nlp, vision and speech;
- `monitoring`: the shared monitoring stack (no team tag), evenly among the teams with direct cost that month
  (nlp, vision, speech, and research through its modelled clusters);
- `a100-pool`: every line of the A100 nodes (tag `cluster: a100-pool`), idle hours included, by the GPU-hours
  each team's jobs held there by their sacct records (8 GPUs a node x Start to End).

Everything else is the team its `team` tag names (direct), or unallocated (the unused reservation's hours, the
untagged bucket, the Savings Plan fee whose effective cost is 0: it is amortised onto the usage it covered).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from pipelines.demo.billing import MONITORING, SHARED_CLUSTER, cluster_tag
from pipelines.demo.modelled import OWNED_HOSTS, TEAM, contract_hour, owned_hour
from pipelines.demo.scenario import Host, Job, job_times, quantize

FIXED_SUPPORT = {"nlp": Decimal(50), "vision": Decimal(30), "speech": Decimal(20)}
MONITORING_IDS = {resource for resource, _, _ in MONITORING}


def _ts(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")


def _month_of(d: datetime) -> datetime:
    return d.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _next_month(m: datetime) -> datetime:
    return (m + timedelta(days=32)).replace(day=1)


def _overlap(a0: datetime, a1: datetime, b0: datetime, b1: datetime) -> Decimal:
    return Decimal(max((min(a1, b1) - max(a0, b0)).total_seconds(), 0))


def _split(pool: Decimal, weights: dict[str, Decimal]) -> dict[str, Decimal]:
    total = sum(weights.values(), Decimal(0))
    return {team: pool * w / total for team, w in weights.items() if w > 0}


def expected_showback(
    lines: list[dict[str, Any]],
    hosts: list[Host],
    jobs: list[Job],
    research: list[Host],
    research_costs: dict[str, list[Decimal]],
    start: datetime,
    rented: dict[str, dict[datetime, Decimal]] | None = None,
) -> dict[str, Any]:
    """expected.json `showback`: per month, each team's total (direct + every pool it got) and what stays
    unallocated, in USD to the cent, and the bill they add up to. `rented`: the research team's hosts priced
    only for some hours (the scaling-test pool's rental day), each hour's cost."""
    months: dict[datetime, dict[str, Any]] = {}

    def month(m: datetime) -> dict[str, Any]:
        return months.setdefault(
            m, {"direct": {}, "pools": {"support-plan": Decimal(0), "monitoring": Decimal(0), "a100-pool": Decimal(0)},
                "unallocated": Decimal(0), "busy": {}},
        )  # fmt: skip

    def add(d: dict[str, Decimal], key: str, amount: Decimal) -> None:
        d[key] = d.get(key, Decimal(0)) + amount

    for line in lines:
        s, e = _ts(line["ChargePeriodStart"]), _ts(line["ChargePeriodEnd"])
        eff = Decimal(line["EffectiveCost"] or 0)
        tags = json.loads(line["Tags"]) if line["Tags"] else {}
        m = _month_of(s)
        while m < e:  # a line's cost lands in each month by its share of the charge period
            part = eff * _overlap(s, e, m, _next_month(m)) / Decimal((e - s).total_seconds())
            mo = month(m)
            if line["ServiceName"].startswith("AWS Support"):
                mo["pools"]["support-plan"] += part
            elif line["ResourceId"] in MONITORING_IDS:
                mo["pools"]["monitoring"] += part
            elif tags.get("cluster"):
                mo["pools"]["a100-pool"] += part
            elif tags.get("team"):
                add(mo["direct"], tags["team"], part)
            else:
                mo["unallocated"] += part
            m = _next_month(m)
    # the research team's hosts no bill lists: their modelled cost is its direct cost, every hour from the
    # first to the last hour of data (the bill's monthly lines reach the whole month): the hours of the
    # span at their measured watts, the others at the GPUs' power limit
    first = min(_ts(line["ChargePeriodStart"]) for line in lines)
    last = max(_ts(line["ChargePeriodEnd"]) for line in lines)
    for h in research:
        nameplate = (
            owned_hour(Decimal(8 * h.itype.power_limit_w)) if h.name in OWNED_HOSTS else contract_hour()
        )
        hour = first
        while hour < last:
            t = int((hour - start).total_seconds() // 3600)
            cost = research_costs[h.name][t] if 0 <= t < len(research_costs[h.name]) else nameplate
            add(month(_month_of(hour))["direct"], str(h.team), cost)
            hour += timedelta(hours=1)
    for by_hour in (rented or {}).values():
        for hour, cost in by_hour.items():
            add(month(_month_of(hour))["direct"], TEAM, cost)
    # busy GPU-hours on the shared cluster, by the jobs' records
    pool_hosts = {h.name for h in hosts if cluster_tag(h) is not None}
    for j in jobs:
        if not set(j.hosts) & pool_hosts:
            continue
        a, b = job_times(j, start)
        m = _month_of(a)
        while m < b:
            gpu_s = 8 * len(j.hosts) * _overlap(a, b, m, _next_month(m))
            add(month(m)["busy"], j.team, gpu_s / 3600)
            m = _next_month(m)

    out = {}
    for m, mo in sorted(months.items()):
        teams: dict[str, Decimal] = dict(mo["direct"])
        allocated = {
            "support-plan": _split(mo["pools"]["support-plan"], FIXED_SUPPORT),
            "monitoring": _split(mo["pools"]["monitoring"], {t: Decimal(1) for t in mo["direct"]}),
            "a100-pool": _split(mo["pools"]["a100-pool"], mo["busy"]),
        }
        for shares in allocated.values():
            for team, amount in shares.items():
                add(teams, team, amount)
        bill = sum(teams.values(), Decimal(0)) + mo["unallocated"]
        out[f"{m:%Y-%m}"] = {
            "currency": "USD",
            "teams": {t: float(quantize(v)) for t, v in sorted(teams.items())},
            "unallocated": float(quantize(mo["unallocated"])),
            "bill": float(quantize(bill)),
            "pools": {
                name: {t: float(quantize(v)) for t, v in sorted(shares.items())}
                for name, shares in allocated.items()
            },
            "busy_gpu_hours": {t: float(quantize(v)) for t, v in sorted(mo["busy"].items())},
        }
    return {
        "basis": "each month's bill (effective cost, amortised) and the research clusters' modelled cost, on a "
        "team or unallocated by the demo config's showback rules: support-plan fixed 50/30/20, monitoring "
        f"even among the teams with direct cost, {SHARED_CLUSTER} by busy GPU-hours (sacct records)",
        "by_month": out,
    }
