"""The demo's FOCUS 1.2 bill: hourly GPU-instance lines, daily EBS, S3 and data-transfer lines, the Savings
Plan's monthly purchase and a monthly support fee, written as one CSV.gz per billing period."""

from __future__ import annotations

import csv
import gzip
import io
import json
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from pipelines.demo.scenario import (
    CLOUDWATCH_LOGS_GB_MONTH,
    EBS_GP3,
    LOG_GROUPS,
    P5,
    PROJECTS,
    S3_STANDARD,
    Host,
    quantize,
)
from pipelines.units import GIB

FOCUS_HEADER = [
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
    "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargeFrequency",
    "ChargePeriodEnd", "ChargePeriodStart", "CommitmentDiscountCategory", "CommitmentDiscountId",
    "CommitmentDiscountName", "CommitmentDiscountStatus", "CommitmentDiscountType", "ConsumedQuantity",
    "ConsumedUnit", "ContractedCost", "ContractedUnitPrice", "EffectiveCost", "InvoiceId", "InvoiceIssuerName",
    "ListCost", "ListUnitPrice", "PricingCategory", "PricingQuantity", "PricingUnit", "ProviderName",
    "PublisherName", "RegionId", "RegionName", "ResourceId", "ResourceName", "ResourceType",
    "ServiceCategory", "ServiceName", "ServiceSubcategory", "SkuId", "SkuPriceDetails", "SkuPriceId",
    "SubAccountId", "SubAccountName", "Tags", "x_UsageType",
]  # fmt: skip
ACCOUNT = ("417263541977", "acme-ml-prod")
PAYER = ("902341578806", "Acme AI")
SP_ARN = "arn:aws:savingsplans::902341578806:savingsplan/6f1a9c3e-2b7d-4d1e-9a55-0c3f8e2d7b41"
# a one-year p4de Reserved Instance bought for a training programme that moved to H100s: nothing runs on it
RI_ARN = "arn:aws:ec2:us-west-2:417263541977:reserved-instances/3c6a9b1e-7d42-4f0e-b8a1-52e9d0c4f7a3"
RI_HOURLY = Decimal("24.965")
# the jobs in us-east-1 read laion from the Ireland copy every day, although acme-datasets in us-east-1
# holds the same bytes: NET001's planted inter-region transfer (GB a day at the inter-region rate)
EU_READS_GB = Decimal(800)
INTER_REGION_PER_GB = Decimal("0.02")
EU_READS_USAGE_TYPE = "EU-USE1-AWS-Out-Bytes"


def _ts(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def _month_bounds(d: datetime) -> tuple[datetime, datetime]:
    start = d.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (start + timedelta(days=32)).replace(day=1)
    return start, end


def _line(**kw: Any) -> dict[str, Any]:
    row = dict.fromkeys(FOCUS_HEADER, "")
    start: datetime = kw.pop("start")
    end: datetime = kw.pop("end")
    bp_start, bp_end = _month_bounds(start)
    row.update(
        BillingAccountId=PAYER[0], BillingAccountName=PAYER[1], BillingCurrency="USD",
        BillingPeriodStart=_ts(bp_start), BillingPeriodEnd=_ts(bp_end), ChargePeriodStart=_ts(start),
        ChargePeriodEnd=_ts(end), InvoiceId=f"EUINUS26-{bp_start:%Y%m}", InvoiceIssuerName="Amazon Web Services, Inc.",
        ProviderName="AWS", PublisherName="Amazon Web Services, Inc.", RegionId="us-east-1",
        RegionName="US East (N. Virginia)", SubAccountId=ACCOUNT[0], SubAccountName=ACCOUNT[1],
        ChargeCategory="Usage", ChargeFrequency="Usage-Based", PricingCategory="Standard",
    )  # fmt: skip
    row.update({k: ("" if v is None else str(v)) for k, v in kw.items()})
    return row


def _tags(**kw: str | None) -> str:
    return json.dumps({k: v for k, v in kw.items() if v is not None})


def billing_lines(
    hosts: list[Host],
    start: datetime,
    hours: int,
    storage: dict[str, dict[str, Any]],
    spike: tuple[int, str, Decimal],
) -> list[dict[str, Any]]:
    """The FOCUS rows of the whole span; `spike` is (day index, team, factor) of the planted egress spike."""
    lines: list[dict[str, Any]] = []
    for h in hosts:
        it = h.itype
        tags = _tags(
            Name=h.name,
            team=h.team,
            project=h.project if h.team else None,
            environment="prod",
            cluster=cluster_tag(h),
        )
        details = json.dumps(
            {
                "InstanceType": it.name,
                "GpuCount": 8,
                "CoreCount": 192 if it is P5 else 96,
                "OperatingSystem": "Linux",
            }
        )
        for t, state in enumerate(h.states):
            if state == "off":
                continue
            s = start + timedelta(hours=t)
            common = dict(
                start=s, end=s + timedelta(hours=1), ResourceId=h.instance_id, ResourceType="Instance",
                ServiceCategory="Compute", ServiceSubcategory="Virtual Machines", ServiceName="Amazon Elastic Compute Cloud",
                SkuId="P5HQXEQ4" if it is P5 else "P4DQ2X6M", SkuPriceDetails=details, Tags=tags,
                ConsumedQuantity=1, ConsumedUnit="Hrs", PricingQuantity=1, PricingUnit="Hrs",
                ListUnitPrice=it.on_demand, ListCost=it.on_demand, ContractedUnitPrice=it.on_demand,
                ContractedCost=it.on_demand, x_UsageType=f"USE1-BoxUsage:{it.name}",
            )  # fmt: skip
            if it.savings_plan:
                lines.append(_line(
                    **common, BilledCost="0", EffectiveCost=it.effective, PricingCategory="Committed",
                    CommitmentDiscountId=SP_ARN, CommitmentDiscountName="ml-compute-sp-2026", CommitmentDiscountType="Compute Savings Plan",
                    CommitmentDiscountCategory="Spend", CommitmentDiscountStatus="Used",
                    ChargeDescription=f"{it.name} covered by Compute Savings Plan",
                ))  # fmt: skip
            else:
                lines.append(_line(
                    **common, BilledCost=it.on_demand, EffectiveCost=it.on_demand,
                    ChargeDescription=f"${it.on_demand} per On Demand Linux {it.name} Instance Hour",
                ))  # fmt: skip
    days = hours // 24
    end = start + timedelta(hours=hours)
    for d in range(days):
        s = start + timedelta(days=d)
        month_days = (_month_bounds(s)[1] - _month_bounds(s)[0]).days
        for h in hosts:
            if h.states[d * 24] == "off":
                continue
            cost = EBS_GP3 * 2048 / month_days
            lines.append(_line(
                start=s, end=s + timedelta(days=1), ResourceId=h.volume_id, ResourceType="Volume", ServiceCategory="Storage",
                ServiceSubcategory="Block Storage", ServiceName="Amazon Elastic Compute Cloud", SkuId="EBSGP3USE1",
                BilledCost=quantize(cost, "0.000001"), EffectiveCost=quantize(cost, "0.000001"), ListCost=quantize(cost, "0.000001"),
                ConsumedQuantity=quantize(Decimal(2048) / month_days, "0.000001"), ConsumedUnit="GB-Mo", PricingUnit="GB-Mo",
                PricingQuantity=quantize(Decimal(2048) / month_days, "0.000001"), ListUnitPrice=EBS_GP3,
                Tags=_tags(Name=f"{h.name}-scratch", team=h.team, project=h.project if h.team else None),
                ChargeDescription="$0.08 per GB-month of General Purpose (gp3) provisioned storage - US East (N. Virginia)",
                x_UsageType="USE1-EBS:VolumeUsage.gp3",
            ))  # fmt: skip
        for bucket, b in storage.items():
            gib = Decimal(b["bytes"]) / GIB
            cost = gib * S3_STANDARD / month_days
            lines.append(_line(
                start=s, end=s + timedelta(days=1), ResourceId=bucket, ResourceType="Bucket", ServiceCategory="Storage",
                ServiceSubcategory="Object Storage", ServiceName="Amazon Simple Storage Service", SkuId="S3STDSTORE",
                RegionId=b["region"], RegionName=b["region_name"],
                BilledCost=quantize(cost, "0.000001"), EffectiveCost=quantize(cost, "0.000001"), ListCost=quantize(cost, "0.000001"),
                ConsumedQuantity=quantize(gib / month_days, "0.000001"), ConsumedUnit="GB-Mo", PricingUnit="GB-Mo",
                PricingQuantity=quantize(gib / month_days, "0.000001"), ListUnitPrice=S3_STANDARD,
                SkuPriceDetails=json.dumps({"StorageClass": "STANDARD"}),
                Tags=_tags(team=b["team"], project=b.get("project")),
                ChargeDescription="$0.023 per GB - first 50 TB / month of storage used", x_UsageType="TimedStorage-ByteHrs",
            ))  # fmt: skip
        for team in ("nlp", "vision", "speech"):
            gb = Decimal({"nlp": 900, "vision": 450, "speech": 300}[team])
            if (d, team) == spike[:2]:
                gb *= spike[2]
            cost = gb * Decimal("0.09")
            lines.append(_line(
                start=s, end=s + timedelta(days=1), ResourceId=f"arn:aws:ec2:us-east-1:{ACCOUNT[0]}:natgateway/nat-0{team}7f3e",
                ResourceType="NAT Gateway", ServiceCategory="Networking", ServiceSubcategory="Network Infrastructure",
                ServiceName="Amazon Virtual Private Cloud", SkuId="DTOUTUSE1", BilledCost=quantize(cost, "0.000001"),
                EffectiveCost=quantize(cost, "0.000001"), ListCost=quantize(cost, "0.000001"), ConsumedQuantity=gb, ConsumedUnit="GB",
                PricingQuantity=gb, PricingUnit="GB", ListUnitPrice="0.09", Tags=_tags(team=team, project=PROJECTS[team]),
                ChargeDescription="$0.09 per GB - first 10 TB / month data transfer out beyond the global free tier",
                x_UsageType="USE1-DataTransfer-Out-Bytes",
            ))  # fmt: skip
        for g in LOG_GROUPS:  # CloudWatch Logs storage: the day's stored GB (at noon) for a month's share
            gib = Decimal(g.stored_bytes(s + timedelta(hours=12), end)) / GIB
            cost = gib * CLOUDWATCH_LOGS_GB_MONTH / month_days
            lines.append(_line(
                start=s, end=s + timedelta(days=1), ResourceId=g.arn, ResourceType="Log Group",
                ServiceCategory="Management and Governance", ServiceSubcategory="Observability",
                ServiceName="Amazon CloudWatch", SkuId="CWLOGSTOREUSE1", BilledCost=quantize(cost, "0.000001"),
                EffectiveCost=quantize(cost, "0.000001"), ListCost=quantize(cost, "0.000001"),
                ConsumedQuantity=quantize(gib / month_days, "0.000001"), ConsumedUnit="GB-Mo", PricingUnit="GB-Mo",
                PricingQuantity=quantize(gib / month_days, "0.000001"), ListUnitPrice=CLOUDWATCH_LOGS_GB_MONTH,
                Tags=_tags(team=g.team, project=PROJECTS[g.team]),
                ChargeDescription="$0.03 per GB-mo of log storage - US East (N. Virginia)",
                x_UsageType="USE1-TimedStorage-ByteHrs",
            ))  # fmt: skip
        eu = storage.get("acme-datasets-eu")
        if eu is not None:
            cost = EU_READS_GB * INTER_REGION_PER_GB
            lines.append(_line(
                start=s, end=s + timedelta(days=1), ResourceId="acme-datasets-eu", ResourceType="Bucket",
                ServiceCategory="Networking", ServiceSubcategory="Network Traffic", ServiceName="Amazon Simple Storage Service",
                SkuId="S3DTEUUSE1", RegionId=eu["region"], RegionName=eu["region_name"], BilledCost=quantize(cost, "0.000001"),
                EffectiveCost=quantize(cost, "0.000001"), ListCost=quantize(cost, "0.000001"), ConsumedQuantity=EU_READS_GB,
                ConsumedUnit="GB", PricingQuantity=EU_READS_GB, PricingUnit="GB", ListUnitPrice=INTER_REGION_PER_GB,
                Tags=_tags(team=eu["team"], project=eu.get("project")),
                ChargeDescription="$0.02 per GB - Europe (Ireland) data transfer to US East (N. Virginia)",
                x_UsageType=EU_READS_USAGE_TYPE,
            ))  # fmt: skip
    lines += _unused_reservation(start, hours)
    lines += monitoring_lines(start, hours)
    # monthly recurring lines for every billing period the span touches
    months = sorted({_month_bounds(start + timedelta(hours=t))[0] for t in range(0, hours, 24)})
    sp_hourly = sum((h.itype.effective for h in hosts if h.itype.savings_plan), Decimal(0))
    for m in months:
        _, end = _month_bounds(m)
        month_hours = int((end - m).total_seconds() // 3600)
        fee = quantize(sp_hourly * month_hours, "0.000001")
        lines.append(_line(
            start=m, end=end, ResourceId=SP_ARN, ResourceType="Savings Plan", ServiceCategory="Compute",
            ServiceName="Savings Plans for AWS Compute usage", ChargeCategory="Purchase", ChargeFrequency="Recurring",
            BilledCost=fee, EffectiveCost="0", ListCost=fee, CommitmentDiscountId=SP_ARN, CommitmentDiscountName="ml-compute-sp-2026",
            CommitmentDiscountType="Compute Savings Plan", CommitmentDiscountCategory="Spend", PricingCategory="",
            ChargeDescription=f"Savings Plan recurring fee ${sp_hourly}/hour", x_UsageType="ComputeSP:1yrNoUpfront",
        ))  # fmt: skip
        lines.append(_line(
            start=m, end=end, ServiceCategory="Management and Governance", ServiceName="AWS Support (Business)",
            ChargeCategory="Purchase", ChargeFrequency="Recurring", BilledCost="1850.00", EffectiveCost="1850.00",
            ListCost="1850.00", SkuId="SUPBUSINESS", ChargeDescription="AWS Support (Business) monthly fee", PricingCategory="",
        ))  # fmt: skip
    return lines


# showback (docs/showback.md): the A100 nodes are one Slurm partition that vision and speech both submit to;
# their bill lines carry this `cluster` tag, and the demo config's rule splits their cost (idle hours
# included) by each team's busy GPU-hours there
SHARED_CLUSTER = "a100-pool"
# the monitoring stack every team's dashboards and alerts run on, billed daily and tagged to no team (shared
# platform cost, as a support plan is): (resource, service, cost a day)
MONITORING = (
    (
        f"arn:aws:aps:us-east-1:{ACCOUNT[0]}:workspace/ws-acme-monitoring",
        "Amazon Managed Service for Prometheus",
        Decimal("41.28"),
    ),
    (
        f"arn:aws:grafana:us-east-1:{ACCOUNT[0]}:/workspaces/g-acme-monitoring",
        "Amazon Managed Grafana",
        Decimal("2.70"),
    ),
)


def cluster_tag(h: Host) -> str | None:
    """The shared cluster a host's bill lines name in their `cluster` tag (the A100 nodes), else None."""
    return None if h.itype is P5 else SHARED_CLUSTER


def monitoring_lines(start: datetime, hours: int) -> list[dict[str, Any]]:
    """The monitoring stack's daily lines: shared, so no team tag (COST001 names them; showback splits them)."""
    lines = []
    for d in range(hours // 24):
        s = start + timedelta(days=d)
        for resource, service, cost in MONITORING:
            lines.append(_line(
                start=s, end=s + timedelta(days=1), ResourceId=resource, ResourceType="Workspace",
                ServiceCategory="Management and Governance", ServiceSubcategory="Observability", ServiceName=service,
                SkuId="MONITORUSE1", BilledCost=cost, EffectiveCost=cost, ListCost=cost, ConsumedQuantity=1,
                ConsumedUnit="Workspace-Day", PricingQuantity=1, PricingUnit="Workspace-Day", ListUnitPrice=cost,
                Tags=_tags(stack="monitoring"), ChargeDescription=f"{service} workspace, a day",
                x_UsageType="USE1-Monitoring",
            ))  # fmt: skip
    return lines


def _unused_reservation(start: datetime, hours: int) -> list[dict[str, Any]]:
    """The Reserved Instance's hours, every one unused (FOCUS: Usage, CommitmentDiscountStatus Unused, the
    amortised fee as EffectiveCost), and its monthly fee (billed, amortised into those hours)."""
    ri = dict(
        ResourceId=RI_ARN, ResourceType="Reserved Instance", ServiceCategory="Compute",
        ServiceSubcategory="Virtual Machines", ServiceName="Amazon Elastic Compute Cloud", RegionId="us-west-2",
        RegionName="US West (Oregon)", CommitmentDiscountId=RI_ARN, CommitmentDiscountName="p4de-1yr-vision-pretrain",
        CommitmentDiscountType="Reserved Instance", CommitmentDiscountCategory="Usage",
    )  # fmt: skip
    lines = [
        _line(
            **ri,
            start=start + timedelta(hours=t),
            end=start + timedelta(hours=t + 1),
            BilledCost="0",
            EffectiveCost=RI_HOURLY,
            ListCost="0",
            ContractedCost="0",
            PricingCategory="Committed",
            CommitmentDiscountStatus="Unused",
            ChargeDescription="Unused Reservation hours of p4de.24xlarge Linux",
            x_UsageType="USW2-HeavyUsage:p4de.24xlarge",
        )  # fmt: skip
        for t in range(hours)
    ]
    months = sorted({_month_bounds(start + timedelta(hours=t))[0] for t in range(0, hours, 24)})
    for m in months:
        _, end = _month_bounds(m)
        fee = quantize(RI_HOURLY * int((end - m).total_seconds() // 3600), "0.000001")
        lines.append(_line(
            **ri, start=m, end=end, ChargeCategory="Purchase", ChargeFrequency="Recurring", BilledCost=fee,
            EffectiveCost="0", ListCost=fee, PricingCategory="", ChargeDescription=f"p4de.24xlarge Reserved Instance fee ${RI_HOURLY}/hour",
            x_UsageType="USW2-HeavyUsage:p4de.24xlarge",
        ))  # fmt: skip
    return lines


def write_billing(root: Path, lines: list[dict[str, Any]]) -> list[Path]:
    """One gzipped FOCUS CSV per billing period (mtime 0, so a seed always gives the same bytes)."""
    by_period: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by_period.setdefault(line["BillingPeriodStart"][:7], []).append(line)
    paths = []
    for period, rows in sorted(by_period.items()):
        folder = root / "landing" / "billing" / "focus" / f"billing_period={period}"
        folder.mkdir(parents=True, exist_ok=True)
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=FOCUS_HEADER, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        path = folder / f"acme-focus-{period}-00001.csv.gz"
        path.write_bytes(gzip.compress(buf.getvalue().encode("utf-8"), mtime=0))
        paths.append(path)
    return paths
