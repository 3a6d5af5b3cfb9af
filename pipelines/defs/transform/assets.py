"""Marts rebuilt from the landed tables: resources, cost_hourly, gpu_hours."""

from decimal import Decimal

import dagster as dg

from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource
from pipelines.transform import build_mart
from pipelines.warehouse import rows


@dg.asset(
    key="resources",
    group_name="transform",
    kinds={"duckdb"},
    pool=WAREHOUSE_POOL,
    deps=["billing_line_items", "gpu_samples"],
    description="One row per billed resource: instance type, GPU model and count, host, tags.",
)
def resources_mart(wastewatch: WastewatchResource) -> dg.MaterializeResult:
    with wastewatch.warehouse() as con:
        n = build_mart(con, "resources")
        stats = rows(
            con,
            "select count(*) filter (where gpu_count > 0) as gpu_resources, "
            "coalesce(sum(gpu_count), 0) as gpus from resources",
        )[0]
        unmatched = rows(con, "select count(*) as n from int_host_resources where resource_id is null")[0][
            "n"
        ]
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": n,
            "gpu_resources": int(stats["gpu_resources"]),
            "gpus": int(stats["gpus"]),
            "telemetry_hosts_without_bill": int(unmatched),
        }
    )


@dg.asset(
    key="cost_hourly",
    group_name="transform",
    kinds={"duckdb"},
    pool=WAREHOUSE_POOL,
    deps=["billing_line_items"],
    check_specs=[
        dg.AssetCheckSpec(
            "reconciles_with_billing",
            asset="cost_hourly",
            blocking=True,
            description="Per currency, cost_hourly holds exactly the billed and effective cost of billing_line_items.",
        )
    ],
    description="Effective cost of every resource-hour (lines spread evenly over their charge period).",
)
def cost_hourly(wastewatch: WastewatchResource) -> dg.MaterializeResult:
    with wastewatch.warehouse() as con:
        n = build_mart(con, "cost_hourly")
        recon = rows(
            con,
            """
            with b as (select billing_currency as currency, sum(billed_cost) as billed, sum(effective_cost) as effective
                       from billing_line_items group by 1),
                 h as (select billing_currency as currency, sum(billed_cost) as billed, sum(effective_cost) as effective
                       from cost_hourly group by 1)
            select coalesce(b.currency, h.currency) as currency, b.billed as line_billed, h.billed as hourly_billed,
                   b.effective as line_effective, h.effective as hourly_effective
            from b full outer join h on b.currency = h.currency order by 1
            """,
        )
    tolerance = Decimal("0.01")
    passed = all(
        abs((r["line_billed"] or 0) - (r["hourly_billed"] or 0)) <= tolerance
        and abs((r["line_effective"] or 0) - (r["hourly_effective"] or 0)) <= tolerance
        for r in recon
    )
    metadata: dict[str, object] = {"dagster/row_count": n}
    for r in recon:
        metadata[f"effective_cost_{r['currency']}"] = dg.MetadataValue.float(
            float(r["hourly_effective"] or 0)
        )
    check = dg.AssetCheckResult(
        check_name="reconciles_with_billing",
        passed=passed,
        metadata={
            r["currency"]: f"lines {r['line_effective']} / hourly {r['hourly_effective']}" for r in recon
        },
    )
    return dg.MaterializeResult(metadata=metadata, check_results=[check])


@dg.asset(
    key="gpu_hours",
    group_name="transform",
    kinds={"duckdb"},
    pool=WAREHOUSE_POOL,
    deps=["gpu_samples", "billing_line_items"],
    description="One row per GPU-hour: samples, coverage, mean/p95/max util, memory, power, billed resource.",
)
def gpu_hours(wastewatch: WastewatchResource) -> dg.MaterializeResult:
    with wastewatch.warehouse() as con:
        n = build_mart(con, "gpu_hours")
        stats = rows(
            con,
            "select count(*) filter (where resource_id is null) as unbilled, "
            "coalesce(avg(coverage), 0) as coverage, coalesce(avg(util_mean), 0) as util from gpu_hours",
        )[0]
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": n,
            "gpu_hours_without_billed_resource": int(stats["unbilled"]),
            "mean_coverage": dg.MetadataValue.float(round(float(stats["coverage"]), 3)),
            "mean_util_pct": dg.MetadataValue.float(round(float(stats["util"]), 2)),
        }
    )
