"""A report test fleet at scale: 200 teams in three billing currencies, 2,000 findings, long Azure and GCP
resource ids, written into a small warehouse (marts filled row by row, findings as the rules write them)
and reported for 2026-W48 without a Dagster run.

Each team has one GPU instance (an Azure VM, a GCP instance or an AWS one, by team number) billed all of
W47 and W48 and a storage line; its findings in W48 are one GPU001 idle instance (3-30 % of the instance's
spend) and nine STO001 orphaned checkpoints of a few cents to a few units each, the many small findings
the report rolls up. A third of the GPU001 findings were also there in W47 (persisting), and 20 W47
findings are gone in W48 (resolved). Budgets for 20 teams, and rates to USD for EUR and GBP.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from pipelines.config import load_config
from pipelines.report import WeeklyReport, write_report
from rules import Window
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.report import W48, Marts, evaluate_attention, put_findings

W47 = Window.iso_week("2026-W47")
TEAMS = 200
FINDINGS_PER_TEAM = 10  # 1 GPU001 + 9 STO001: 2,000 findings
CURRENCIES = ("USD", "EUR", "GBP")  # team n bills in CURRENCIES[n % 3]
WORDS = ("vision", "speech", "llm", "recsys", "search", "ads", "robotics", "forecast", "nlp", "platform")


@dataclass
class Fleet:
    report: WeeklyReport
    directory: Path  # the week's report folder


def team_name(n: int) -> str:
    """Short and long names, as real tag sets have them: `vision-07`, `ml-platform-inference-serving-...`."""
    word = WORDS[n % len(WORDS)]
    if n % 17 == 0:
        return f"ml-{word}-inference-serving-europe-west4-production-{n:03d}"
    return f"{word}-{n:03d}" if n % 3 else f"{word} research group {n:03d}"


def instance_id(n: int) -> str:
    """An Azure VM path, a GCP instance name or an AWS instance id, by team."""
    if n % 3 == 0:
        return (
            f"/subscriptions/0b1f6471-1bf0-4dda-aec3-cb9272f0{n:04d}/resourceGroups/rg-ml-training-{n:03d}"
            f"/providers/Microsoft.Compute/virtualMachines/nd96amsr-a100-v4-{n:03d}"
        )
    if n % 3 == 1:
        return f"//compute.googleapis.com/projects/acme-ml-{n:03d}/zones/europe-west4-a/instances/a3-highgpu-8g-{n:03d}"
    return f"i-{n:017x}"


def checkpoint_id(n: int, k: int) -> str:
    if n % 2:
        return f"gs://acme-ml-checkpoints-europe-west4/team-{n:03d}/runs/2026-11-{k + 1:02d}/step-{k * 1000:06d}/"
    return f"https://acmemlckpt{n:03d}.blob.core.windows.net/checkpoints/team-{n:03d}/run-{k:02d}/global_step{k * 500}/"


def build_fleet(directory: Path, empty_marts: Path) -> Fleet:
    """The fleet's warehouse under `directory` and its W48 report written there."""
    budgets = ", ".join(f"'{team_name(n)}': {1000 + 50 * n}" for n in range(0, 200, 10))
    write_config(
        directory,
        f"""
        budgets:
          team: {{{budgets}}}
        reporting_currency: USD
        exchange_rates:
          - {{from: EUR, to: USD, rate: 1.08, valid_from: 2026-11-01}}
          - {{from: GBP, to: USD, rate: 1.27, valid_from: 2026-11-01}}
        """,
    )
    config = load_config(directory / "wastewatch.yaml")
    con = open_copy(empty_marts, config.warehouse_path)
    rng = random.Random(43)
    try:
        m = Marts(con)
        week47: dict[str, list[dict]] = {"GPU001": [], "STO001": []}
        week48: dict[str, list[dict]] = {"GPU001": [], "STO001": []}
        for n in range(TEAMS):
            team, currency, rid = team_name(n), CURRENCIES[n % 3], instance_id(n)
            project = f"{WORDS[(n // 3) % len(WORDS)]}-{'pretraining' if n % 4 else 'eval'}"
            hourly = round(rng.uniform(2, 40), 2)
            m.resource(rid, team=team, project=project, currency=currency, instance_type="nd96amsr_a100_v4")
            m.bill(rid, W47.start, W48.end, hourly)
            bucket = f"ckpt-{n:03d}"
            m.resource(
                bucket, gpus=0, model=None, instance_type=None, resource_type="Bucket", currency=currency
            )
            m.bill(bucket, W47.start, W48.end, 0.25, "Storage", "Object storage", team, project)
            gpu = {"resource_id": rid, "team": team, "project": project, "currency": currency}
            idle = round(hourly * 168 * rng.uniform(0.03, 0.3), 2)
            week48["GPU001"].append(
                {**gpu, "estimated_waste": idle, "evidence": {"idle_hours": round(idle / hourly)}}
            )
            if n % 3 == 0 or n < 20:
                week47["GPU001"].append({**gpu, "estimated_waste": round(idle * rng.uniform(0.5, 1.2), 2)})
            for k in range(FINDINGS_PER_TEAM - 1):
                week48["STO001"].append(
                    {"resource_id": checkpoint_id(n, k), "team": team, "project": project, "currency": currency,
                     "resource_type": "checkpoint prefix", "estimated_waste": round(rng.uniform(0.01, 3), 2),
                     "reason": f"{checkpoint_id(n, k)} holds checkpoints of a run that ended 40 days ago."}
                )  # fmt: skip
        for n in range(20):  # gone in W48: resolved
            week47["STO001"].append(
                {"resource_id": f"gs://acme-ml-scratch/team-{n:03d}/old/", "team": team_name(n),
                 "currency": CURRENCIES[n % 3], "estimated_waste": 5 + n}
            )  # fmt: skip
        m.flush()
        for window, found in ((W47, week47), (W48, week48)):
            for rule_id, items in found.items():
                put_findings(con, window, rule_id, items)
        evaluate_attention(con, config, W48)
        report = write_report(con, config, W48)
    finally:
        con.close()
    assert (
        sum(1 for f in report.findings if f["rule_id"] in ("GPU001", "STO001")) == TEAMS * FINDINGS_PER_TEAM
    )
    return Fleet(report, config.reports_path / W48.label)
