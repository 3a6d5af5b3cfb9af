"""The demo's hot spares: three 8 x H100 hosts the research team rents on its per-GPU-hour contract
(rent-spare-01..03 in cluster lambda-1cc, priced by the config's contract `pricing:` entry like rent-h100-01/02)
and keeps idle on purpose (no job is ever scheduled on them), named by the config's `spares:` section (host
glob `rent-spare-*`) with a policy share of SPARE_POLICY_SHARE of the fleet's GPU-hours. Two of them fit within
the policy; the third takes the pool beyond it, so the report lists the excess as an attention item (never
waste), and GPU001 prices none of their idle hours.

Planned from no draw of the main generator's random stream and written to files of their own (their own
telemetry files and hosts CSV), so every planted amount stays as it was; the contract spend grows by their
hours (expected.json's modelled_spend).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from pipelines.demo.modelled import CONTRACT, TEAM
from pipelines.demo.scenario import P5, PROJECTS, Host
from pipelines.units import HOURS_PER_WEEK

SPARE_HOSTS = ("rent-spare-01", "rent-spare-02", "rent-spare-03")
SPARE_CLUSTER = "lambda-1cc"  # the contract cluster: its `pricing:` entry prices them
SPARE_GLOB = "rent-spare-*"
# of the fleet's GPU-hours (27 GPU hosts, 20 billed, 4 research, 3 spares, 8 GPUs each, every hour of the week;
# and the scaling-test pool's 8 hosts for their rental day, scaling.py), two spares are 7.1 % and three 10.7 %
SPARE_POLICY_SHARE = Decimal("0.08")
GPUS = 8


def spare_fleet(hours: int) -> list[Host]:
    """The three spares, idle every hour of the span (telemetry and cost, never a job)."""
    return [Host(name, P5, TEAM, PROJECTS[TEAM], "", "", states=["idle"] * hours) for name in SPARE_HOSTS]


def write_spare_hosts_csv(root: Path, spares: list[Host]) -> None:
    """The spares' inventory records (team, project, cluster), beside the research cluster's hosts CSV."""
    folder = root / "landing" / "inventory" / "hosts"
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["host,team,project,cluster"] + [f"{h.name},{h.team},{h.project},{SPARE_CLUSTER}" for h in spares]
    (folder / "spare_hosts.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def spares_config() -> str:
    """The demo config's `spares:` section."""
    return f"""\
# hot spares kept idle on purpose: a policy cost, never GPU001's waste; beyond the policy share of the fleet's
# GPU-hours, an attention item
spares:
  match: {{host: "{SPARE_GLOB}"}}
  policy_share: {SPARE_POLICY_SHARE}
"""


def expected_spares(fleet_gpu_hours: tuple[Decimal, str]) -> dict[str, Any]:
    """The report week's spare capacity, with its formulas (exact decimals; build_expected's rounding: to the
    cent once). Every hour of the week of each spare is spare (no job on it), at the contract rate; the fleet
    is every GPU-hour the demo bills or prices in the week, given with its formula."""
    hour_cost = CONTRACT["per_gpu_hour"] * GPUS
    gpu_hours = Decimal(GPUS * HOURS_PER_WEEK * len(SPARE_HOSTS))
    fleet, fleet_formula = fleet_gpu_hours
    cost = hour_cost * HOURS_PER_WEEK * len(SPARE_HOSTS)
    excess = max(gpu_hours - SPARE_POLICY_SHARE * fleet, Decimal(0))
    return {
        "hosts": list(SPARE_HOSTS),
        "currency": "USD",
        "cost_by_host": {h: hour_cost * HOURS_PER_WEEK for h in SPARE_HOSTS},
        "spare_gpu_hours": gpu_hours,
        "spare_cost": cost,
        "fleet_gpu_hours": fleet,
        "spare_share": gpu_hours / fleet,
        "policy_share": SPARE_POLICY_SHARE,
        "excess_gpu_hours": excess,
        "excess_cost": cost * excess / gpu_hours,
        "formulas": {
            "spare_gpu_hours": "3 spares x 8 GPUs x 168 h (no job ever ran on them)",
            "spare_cost": f"spare_gpu_hours x {CONTRACT['per_gpu_hour']} USD per GPU-hour (the contract)",
            "fleet_gpu_hours": fleet_formula,
            "spare_share": "spare_gpu_hours / fleet_gpu_hours",
            "excess_gpu_hours": "spare_gpu_hours - policy_share x fleet_gpu_hours",
            "excess_cost": "spare_cost x excess_gpu_hours / spare_gpu_hours (the spares' own cost per GPU-hour)",
        },
    }
