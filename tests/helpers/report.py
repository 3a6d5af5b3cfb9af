"""The report tests' week and fleet: marts filled row by row, findings written as a rule writes them.

Week 2026-W48 and the hand-worked fleet of tests/report/test_figures.py (its docstring gives every
figure); `Marts` inserts rows into the marts by column name, `put_findings` writes findings with the
contract's columns, `evaluate_attention` runs COST001-COST003 as the weekly run does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines.config import Config
from pipelines.evaluate import write_findings
from pipelines.report import WeeklyReport
from rules import FINDING_COLUMNS, Window, finding_id, get_rule

W48 = Window.iso_week("2026-W48")
MON = W48.start


def hours(start: datetime, end: datetime) -> list[datetime]:
    out, t = [], start
    while t < end:
        out.append(t)
        t += timedelta(hours=1)
    return out


class Marts:
    """Rows for the marts, inserted by column name (columns a row leaves out are NULL)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.rows: dict[str, list[dict[str, Any]]] = {"resources": [], "cost_hourly": [], "gpu_hours": []}
        self.meta: dict[str, dict[str, Any]] = {}

    def resource(
        self,
        resource_id: str,
        gpus: int = 8,
        model: str | None = "H100",
        team: str | None = None,
        project: str | None = None,
        instance_type: str | None = "p5.48xlarge",
        resource_type: str = "Instance",
        currency: str = "USD",
    ) -> None:
        row = {
            "resource_id": resource_id,
            "resource_name": resource_id,
            "resource_type": resource_type,
            "provider": "AWS",
            "account_id": "111122223333",
            "region_id": "us-east-1",
            "instance_type": instance_type,
            "host": resource_id,
            "gpu_model": model,
            "gpu_count": gpus,
            "team": team,
            "project": project,
            "currency": currency,
        }
        self.meta[resource_id] = row
        self.rows["resources"].append(row)

    def bill(
        self,
        resource_id: str | None,
        start: datetime,
        end: datetime,
        hourly: float,
        category: str = "Compute",
        service: str = "Amazon Elastic Compute Cloud",
        team: str | None = None,
        project: str | None = None,
    ) -> None:
        meta = self.meta.get(resource_id or "", {})
        for h in hours(start, end):
            self.rows["cost_hourly"].append(
                {
                    "hour": h,
                    "resource_id": resource_id,
                    "billing_currency": meta.get("currency", "USD"),
                    "provider": "AWS",
                    "account_id": "111122223333",
                    "region_id": "us-east-1",
                    "service_category": category,
                    "service_name": service,
                    "charge_category": "Usage",
                    "instance_type": meta.get("instance_type"),
                    "team": meta.get("team") or team,
                    "project": meta.get("project") or project,
                    "billed_cost": hourly,
                    "effective_cost": hourly,
                    "list_cost": hourly,
                }
            )

    def util(self, resource_id: str, start: datetime, end: datetime, util: float, gpus: int = 8) -> None:
        meta = self.meta[resource_id]
        for h in hours(start, end):
            for g in range(gpus):
                self.rows["gpu_hours"].append(
                    {
                        "hour": h,
                        "host": resource_id,
                        "resource_id": resource_id,
                        "gpu_id": f"{resource_id}/gpu{g}",
                        "gpu_uuid": f"GPU-{resource_id}-{g}",
                        "gpu_index": g,
                        "gpu_model": f"NVIDIA {meta['gpu_model']}",
                        "samples": 60,
                        "coverage": 1.0,
                        "util_mean": util,
                        "util_p95": util,
                        "util_max": util,
                        "mem_used_mean_mib": 1000.0,
                        "mem_used_max_mib": 1000.0,
                        "mem_total_mib": 81559.0,
                        "power_mean_w": 300.0 if util > 5 else 70.0,
                        "power_max_w": 300.0 if util > 5 else 70.0,
                    }
                )

    def flush(self) -> None:
        for table, items in self.rows.items():
            if not items:
                continue
            frame = pl.DataFrame(items, infer_schema_length=None)
            self.con.register("_rows", frame.to_arrow())
            try:
                self.con.execute(f"insert into {table} by name select * from _rows")
            finally:
                self.con.unregister("_rows")
            items.clear()


def busy_weekdays(m: Marts, resource_id: str, monday: datetime) -> None:
    """Busy (60 %) Mon–Fri 08:00–20:00, idle (0.5 %) the rest of the week starting `monday`."""
    t = monday
    for day in range(7):
        d = monday + timedelta(days=day)
        if day < 5:
            m.util(resource_id, t, d + timedelta(hours=8), 0.5)
            m.util(resource_id, d + timedelta(hours=8), d + timedelta(hours=20), 60.0)
            t = d + timedelta(hours=20)
    m.util(resource_id, t, monday + timedelta(days=7), 0.5)


def evaluate_attention(con: duckdb.DuckDBPyConnection, config: Config, window: Window) -> None:
    """COST001-COST003 as the weekly run evaluates them, with the config's budgets for COST002."""
    for rule_id in ("COST001", "COST002", "COST003"):
        rule = get_rule(rule_id)
        params = rule.make_params(config.rule_overrides(rule.id), config)
        write_findings(con, rule.id, window, rule.evaluate(con, window, params))


def put_findings(
    con: duckdb.DuckDBPyConnection, window: Window, rule_id: str, items: list[dict[str, Any]]
) -> None:
    """Findings of `rule_id` for `window`, as the rule's own evaluation writes them (contract columns)."""
    rule = get_rule(rule_id)
    records = []
    for item in items:
        f = {c: None for c in FINDING_COLUMNS}
        f.update(
            rule_id=rule.id, rule_name=rule.name, category=rule.category, severity=rule.severity,
            week_start=window.start.date(), week_end=(window.end - timedelta(days=1)).date(),
            resource_type="GPU instance", currency="USD", reason=f"{item['resource_id']} was idle.",
            evidence=json.dumps(item.pop("evidence", {})), waste_basis="effective cost of idle hours",
            params="{}", detected_at=window.end, status="waste",
        )  # fmt: skip
        f.update(item)
        f["finding_id"] = finding_id(rule.id, f["resource_id"], window.label)
        f["estimated_waste"] = Decimal(str(f["estimated_waste"]))
        records.append(f)
    schema = {c: pl.String for c in FINDING_COLUMNS} | {
        "week_start": pl.Date, "week_end": pl.Date, "estimated_waste": pl.Decimal(18, 6),
        "detected_at": pl.Datetime("us"),
    }  # fmt: skip
    write_findings(con, rule.id, window, pl.DataFrame(records, schema=schema))


@dataclass
class Built:
    config: Config
    report: WeeklyReport
    directory: Path


def fleet(con: duckdb.DuckDBPyConnection) -> None:
    m = Marts(con)
    m.resource("i-h100", team="nlp", project="llm")
    m.resource("i-a100", model="A100", team="vision", project="vit", instance_type="p4d.24xlarge")
    m.resource("i-untagged", model="A100", instance_type="p4d.24xlarge")
    for rid, kind in (("bucket-ckpt", "Bucket"), ("nat-speech", "NAT Gateway"), ("sagemaker", "Endpoint")):
        m.resource(rid, gpus=0, model=None, instance_type=None, resource_type=kind)
    end = MON + timedelta(days=7)
    m.bill("i-h100", MON, end, 80.0)
    m.bill("i-a100", MON, end, 30.0)
    m.bill("i-untagged", MON, MON + timedelta(days=3), 30.0)
    m.bill("bucket-ckpt", MON, end, 0.5, "Storage", "Amazon Simple Storage Service", "nlp", "llm")
    m.bill("nat-speech", MON, end, 1.0, "Networking", "Amazon Virtual Private Cloud", "speech", "asr")
    m.bill("sagemaker", MON, end, 2.0, "AI and Machine Learning", "Amazon SageMaker", "vision", "vit")
    m.bill(None, MON, end, 2.0, "Management and Governance", "AWS Support (Business)")
    busy_weekdays(m, "i-h100", MON)
    m.util("i-a100", MON, end, 85.0)
    m.flush()
