"""The pricing tests' fleet: owned and contract GPU hosts without a bill, and one billed host (`pricing:`).

Telemetry goes through the real nvidia_smi reader (files in its real format, written here); jobs and the
bill are inserted into their landed tables the way their readers write them. `owned_hour` is the owned
entry's cost of one hour by hand (docs/gpu.md "Cost models").
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb

from pipelines.config import Config, load_config
from pipelines.ingest import ingest
from pipelines.ingest.billing.lines import insert_lines
from pipelines.transform.build import build_marts
from pipelines.units import DAYS_PER_MONTH
from rules._contract import Window
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

HEADER = (
    "timestamp, name, pci.bus_id, uuid, index, utilization.gpu [%], utilization.memory [%], "
    "memory.total [MiB], memory.used [MiB], memory.free [MiB], power.draw [W], power.limit [W]"
)
T0 = datetime(2026, 11, 23)  # Monday of 2026-W48
WEEK = Window.iso_week("2026-W48")
CENT = Decimal("0.01")

PRICING = """
sources:
  - {name: focus, kind: focus, uri: landing/billing/}
  - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
pricing:
  - match: {host: "dgx-*"}
    owned: {purchase_price: 90000, residual_value: 10000, currency: USD, life_years: 3, gpus: 2,
            pue: 1.4, kwh_price: 0.12, facility_per_month: 600, nameplate_watts: 500}
  - match: {host: "rent-01"}
    contract: {per_gpu_hour: 2.10, currency: USD, valid_from: 2026-11-23, valid_to: 2026-11-23}
  - match: {host: "rent-02"}
    contract: {per_node_hour: 9.50, currency: USD, valid_to: 2026-11-22}
  - match: {host: "*"}
    contract: {per_gpu_hour: 99, currency: USD}
"""


def smi_file(
    path: Path, start: datetime, minutes: int, util: Callable[[int, int], float] = lambda m, g: 50.0
) -> None:
    """An nvidia-smi --query-gpu CSV with 2 GPUs sampled every minute; power = 70 W + 5 W per util %."""
    lines = [HEADER]
    host = path.stem.split("_")[0]
    for i in range(minutes):
        ts = start + timedelta(minutes=i)
        for g in range(2):
            u = util(i, g)
            lines.append(
                f"{ts:%Y/%m/%d %H:%M:%S}.310, NVIDIA H100 80GB HBM3, 00000000:1{g}:00.0, GPU-{host}-{g}, {g}, "
                f"{u:.0f} %, {u / 2:.0f} %, 81559 MiB, 40000 MiB, 41559 MiB, {70 + 5 * u:.2f} W, 700.00 W"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def add_job(con: duckdb.DuckDBPyConnection, job_id: str, host: str, start: datetime, end: datetime,
            state: str) -> None:  # fmt: skip
    con.execute(
        "insert into jobs (job_id, scheduler, state, started_at, ended_at, hosts, source, x_source_file, "
        "x_file_id) values ($id, 'slurm', $state, $s, $e, [$host], 'test', 'x', 'jobs-file')",
        {"id": job_id, "state": state, "s": start, "e": end, "host": host},
    )


def owned_hour(gpu_watts: float) -> Decimal:
    """The owned entry's cost of one hour, by hand: depreciation + facility + power at the meter."""
    hours_per_month = DAYS_PER_MONTH * 24
    depreciation = (Decimal(90000) - Decimal(10000)) / (Decimal(3) * 12 * hours_per_month)
    facility = Decimal(600) / hours_per_month
    power = Decimal(str(gpu_watts)) * Decimal("1.5") * Decimal("1.4") / 1000 * Decimal("0.12")
    return depreciation + facility + power


# GPU watts of each hour 00:00-09:00: dgx-01 idle (2 x 70 W) for 6 h, no telemetry for 2 h (nameplate
# 2 x 500 W), busy (2 x 470 W) for 2 h; dgx-02 busy for 2 h, then no telemetry at all
DGX01_WATTS = [140.0] * 6 + [1000.0] * 2 + [940.0] * 2
DGX02_WATTS = [940.0] * 2 + [1000.0] * 8


def build_fleet(tmp_path: Path) -> tuple[Config, duckdb.DuckDBPyConnection]:
    """Two owned hosts, two contract hosts (one outside its contract), one billed host matched by `*`:
    landed, ingested and built into the marts with the `pricing:` config; the caller closes `con`."""
    write_config(tmp_path, PRICING)
    (tmp_path / "landing" / "billing").mkdir(parents=True)
    telemetry = tmp_path / "landing" / "telemetry"
    smi_file(telemetry / "dgx-01_a.csv", T0, 6 * 60, util=lambda m, g: 0.0)
    smi_file(telemetry / "dgx-01_b.csv", T0 + timedelta(hours=8), 2 * 60, util=lambda m, g: 80.0)
    smi_file(telemetry / "dgx-02_a.csv", T0, 2 * 60, util=lambda m, g: 80.0)
    # rent-01: a job that fails after 4 h on both GPUs, then a 6 h job that leaves GPU 1 unused
    smi_file(telemetry / "rent-01_a.csv", T0, 10 * 60, util=lambda m, g: 50.0 if m < 240 else (90.0, 0.0)[g])
    smi_file(telemetry / "rent-02_a.csv", T0, 10 * 60)
    smi_file(telemetry / "gpu-a_a.csv", T0, 60)
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    add_job(con, "crash", "rent-01", T0, T0 + timedelta(hours=4), "FAILED")
    add_job(con, "train", "rent-01", T0 + timedelta(hours=4), T0 + timedelta(hours=10), "COMPLETED")
    insert_lines(
        con,
        "select 20 as billed_cost, 20 as effective_cost, 'USD' as billing_currency, "
        "$t + to_hours(h) as charge_period_start, $t + to_hours(h + 1) as charge_period_end, "
        "'i-a' as resource_id, 'Instance' as resource_type, 'AWS' as provider_name, 'gpu-a' as x_host, "
        "2 as x_gpu_count, 'test' as x_file_id from range(10) as t(h)",
        {"t": T0},
    )
    ingest(con, config)
    build_marts(con, config)
    return config, con
