"""Writing the demo's landing files other than the bill: nvidia-smi telemetry, Slurm sacct records, S3
Inventory reports, and the demo's wastewatch.yaml."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import shutil
import time
import urllib.parse
import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb

from pipelines import progress
from pipelines.demo.modelled import CONTRACT, OWNED
from pipelines.demo.scenario import LOG_GROUPS, P5, Host, Job, job_times
from pipelines.units import HOURS_PER_WEEK
from pipelines.warehouse import sql_text
from rules import Window

# ---------------------------------------------------------------------------------------------------
# telemetry

SMI_HEADER = (
    "timestamp, name, pci.bus_id, uuid, index, utilization.gpu [%], utilization.memory [%], memory.total [MiB], "
    "memory.used [MiB], memory.free [MiB], power.draw [W], power.limit [W], temperature.gpu, "
    "clocks.current.sm [MHz], clocks.current.memory [MHz], pstate"
)


def write_telemetry(
    root: Path,
    hosts: list[Host],
    start: datetime,
    weeks: int,
    seed: int,
    watts_of: frozenset[str] = frozenset(),
) -> tuple[int, dict[tuple[str, int, int], list[tuple[int, int]]], dict[tuple[str, int], Decimal]]:
    """Write one nvidia-smi file per host and week; return the sample count, for the input-starved
    job's hours every sample's utilisation: (host, hour index, GPU) -> [(minute, util %), ...], and for
    the hosts in `watts_of` the watts their GPUs drew per hour (each GPU's mean, added up):
    (host, hour index) -> W."""
    starved: dict[tuple[str, int, int], list[tuple[int, int]]] = {}
    watts: dict[tuple[str, int], Decimal] = {}
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute(
        "create temp table _demo_schedule (host varchar, hour_idx integer, week_idx integer, ts timestamp, state varchar, "
        "gpu_name varchar, mem_total integer, power_limit double, idle_power double, mem_clock integer)"
    )
    rows = []
    for h in hosts:
        it = h.itype
        for t, state in enumerate(h.states):
            rows.append((h.name, t, t // HOURS_PER_WEEK, start + timedelta(hours=t), state, it.gpu_name, it.mem_total_mib,
                         float(it.power_limit_w), it.idle_power_w, 2619 if it is P5 else 1215))  # fmt: skip
    con.executemany("insert into _demo_schedule values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    folder = root / "landing" / "telemetry" / "nvidia-smi"
    folder.mkdir(parents=True, exist_ok=True)
    total, started = 0, time.monotonic()
    for i, h in enumerate(hosts):
        progress.count(
            f"  telemetry: host {i + 1}/{len(hosts)}, {total:,} samples, {progress.rate(total, started, 'samples')}"
        )
        con.execute(sql_text("demo", "demo_host_samples"), {"host": h.name, "seed": seed})
        for hour_idx, minute, gpu, util in con.execute(
            "select hour_idx, minute, gpu, util from _host_samples where state = 'starved'"
        ).fetchall():
            starved.setdefault((h.name, hour_idx, gpu), []).append((minute, util))
        if h.name in watts_of:
            for hour_idx, _gpu, watts_sum, samples in con.execute(
                sql_text("demo", "demo_host_watts")
            ).fetchall():
                key = (h.name, hour_idx)
                watts[key] = watts.get(key, Decimal(0)) + Decimal(watts_sum) / samples
        for w in range(weeks):
            label = Window.containing((start + timedelta(weeks=w)).date()).label
            path = folder / f"{h.name}_{label}.csv"
            n = con.execute("select count(*) from _host_samples where week_idx = $w", {"w": w}).fetchall()[0][
                0
            ]
            if n == 0:
                continue
            path.write_text(SMI_HEADER + "\n", encoding="utf-8")
            body = path.with_suffix(".body")
            con.execute(
                "copy (select line from _host_samples where week_idx = $w order by hour_idx, minute, gpu) "
                "to $p (header false, quote '', escape '', delimiter '\t')",
                {"w": w, "p": str(body)},
            )
            with path.open("ab") as out, body.open("rb") as src:
                shutil.copyfileobj(src, out)
            body.unlink()
            total += n
    con.close()
    return total, starved, watts


# ---------------------------------------------------------------------------------------------------
# jobs (Slurm sacct -P)

SACCT_FIELDS = "JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|ElapsedRaw|AllocNodes|AllocTRES|NodeList"


def _hostlist(names: list[str]) -> str:
    if len(names) == 1:
        return names[0]
    prefix = names[0].rsplit("-", 1)[0]
    nums = sorted(int(n.rsplit("-", 1)[1]) for n in names)
    return (
        f"{prefix}-[{nums[0]:02d}-{nums[-1]:02d}]"
        if nums == list(range(nums[0], nums[-1] + 1))
        else f"{prefix}-[{','.join(f'{n:02d}' for n in nums)}]"
    )


def _elapsed(seconds: int) -> str:
    d, rem = divmod(seconds, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def write_sacct(
    root: Path, jobs: list[Job], start: datetime, hosts: dict[str, Host], prefix: str = "sacct"
) -> Path:
    """One `sacct -P` file of every job, each with its .batch and .extern steps."""
    folder = root / "landing" / "jobs" / "sacct"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [SACCT_FIELDS]
    fmt = "%Y-%m-%dT%H:%M:%S"
    for j in sorted(jobs, key=lambda j: (j.start, j.job_id)):
        s, e = job_times(j, start)
        secs = int((e - s).total_seconds())
        nodes = len(j.hosts)
        gpu_type = "h100" if hosts[j.hosts[0]].itype is P5 else "a100"
        tres = f"billing={96 * nodes},cpu={96 * nodes},gres/gpu:{gpu_type}={8 * nodes},gres/gpu={8 * nodes},mem={1000 * nodes}G,node={nodes}"
        exit_code = "1:0" if j.state == "FAILED" else "0:0"
        submit = (s - timedelta(minutes=3)).strftime(fmt)
        part = "h100" if gpu_type == "h100" else "a100"
        lines.append("|".join([str(j.job_id), str(j.job_id), j.name, j.user, j.team, part, j.state, exit_code, submit,
                               s.strftime(fmt), e.strftime(fmt), _elapsed(secs), str(secs), str(nodes), tres, _hostlist(j.hosts)]))  # fmt: skip
        for step in ("batch", "extern"):
            lines.append("|".join([f"{j.job_id}.{step}", f"{j.job_id}.{step}", step, "", j.team, "", j.state if step == "batch" else "COMPLETED",
                                   exit_code if step == "batch" else "0:0", submit, s.strftime(fmt), e.strftime(fmt), _elapsed(secs), str(secs),
                                   "1" if step == "batch" else str(nodes), f"cpu=96,gres/gpu={8 if step == 'batch' else 8 * nodes},mem=1000G,node=1",
                                   j.hosts[0] if step == "batch" else _hostlist(j.hosts)]))  # fmt: skip
    path = folder / f"{prefix}_{start:%Y%m%d}.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------------
# storage (S3 Inventory)

INVENTORY_SCHEMA = "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass, IsMultipartUploaded"


def write_inventory(
    root: Path,
    objects: dict[str, list[tuple[str, int, datetime, str]]],
    when: datetime,
    config_id: str = "daily",
) -> None:
    """One S3 Inventory report per bucket, dated `when`: a CSV.gz data file, manifest.json and its checksum,
    under the inventory configuration `config_id`."""
    for bucket, objs in objects.items():
        base = root / "landing" / "inventory" / bucket / config_id
        data = base / "data"
        data.mkdir(parents=True, exist_ok=True)
        buf = io.StringIO()
        w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
        for key, size, modified, etag in objs:
            w.writerow(
                [
                    bucket,
                    urllib.parse.quote_plus(key, safe="/"),
                    size,
                    modified.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                    etag,
                    "STANDARD",
                    "true" if "-" in etag else "false",
                ]
            )
        blob = gzip.compress(buf.getvalue().encode(), mtime=0)
        name = f"{uuid.UUID(hashlib.md5(bucket.encode()).hexdigest())}.csv.gz"  # noqa: S324 - a file name
        (data / name).write_bytes(blob)
        stamp = when.strftime("%Y-%m-%dT%H-%MZ")
        folder = base / stamp
        folder.mkdir(parents=True, exist_ok=True)
        manifest = {
            "sourceBucket": bucket,
            "destinationBucket": "arn:aws:s3:::acme-inventory",
            "version": "2016-11-30",
            "creationTimestamp": str(int(when.timestamp() * 1000)),
            "fileFormat": "CSV",
            "fileSchema": INVENTORY_SCHEMA,
            "files": [
                {
                    "key": f"{bucket}/{config_id}/data/{name}",
                    "size": len(blob),
                    "MD5checksum": hashlib.md5(blob).hexdigest(),
                }
            ],  # noqa: S324
        }
        text = json.dumps(manifest, indent=2)
        (folder / "manifest.json").write_text(text, encoding="utf-8")
        (folder / "manifest.checksum").write_text(hashlib.md5(text.encode()).hexdigest(), encoding="utf-8")  # noqa: S324


# ---------------------------------------------------------------------------------------------------
# configuration


def write_log_groups(root: Path, end: datetime) -> list[datetime]:
    """Two saved `aws logs describe-log-groups` outputs a week apart (the last at 00:00 of the report week's
    Sunday), named by their date as the cloudwatch_logs reader dates them; returns their times."""
    folder = root / "landing" / "cloudwatch-logs"
    folder.mkdir(parents=True, exist_ok=True)
    times = [end - timedelta(days=8), end - timedelta(days=1)]
    for at in times:
        groups = []
        for g in LOG_GROUPS:
            entry: dict[str, object] = {
                "logGroupName": g.name,
                "creationTime": int(g.created(end).timestamp() * 1000),
                "metricFilterCount": 0,
                "arn": g.arn + ":*",
                "storedBytes": g.stored_bytes(at, end),
                "logGroupClass": "STANDARD",
                "logGroupArn": g.arn,
            }
            if g.retention_days is not None:
                entry["retentionInDays"] = g.retention_days
            groups.append(entry)
        text = json.dumps({"logGroups": groups}, indent=4) + "\n"
        (folder / f"describe-log-groups-{at:%Y-%m-%d}.json").write_text(text, encoding="utf-8")
    return times


def config_text(extra_pricing: str = "") -> str:
    """The demo's wastewatch.yaml: its sources, tag keys, checkpoint and dataset roots, budgets and prices
    (the research cluster's `pricing:` entries from modelled.py's figures, then `extra_pricing`'s)."""
    return (
        """\
# wastewatch demo configuration (generated by `wastewatch demo`); paths are relative to this file.
warehouse: warehouse/wastewatch.duckdb
reports_dir: reports
sources:
  - {name: focus-acme, kind: focus, uri: landing/billing/focus/}
  - {name: gpu-nodes, kind: nvidia_smi, uri: landing/telemetry/nvidia-smi/}
  - {name: slurm, kind: slurm_sacct, uri: landing/jobs/sacct/}
  - {name: ckpt-inventory, kind: s3_inventory, uri: landing/inventory/acme-ckpt/}
  - {name: datasets-inventory, kind: s3_inventory, uri: landing/inventory/acme-datasets/}
  - {name: datasets-eu-inventory, kind: s3_inventory, uri: landing/inventory/acme-datasets-eu/}
  - {name: scratch-inventory, kind: s3_inventory, uri: landing/inventory/acme-scratch/}
  # the vision team's checkpoint bucket, growing 40 % a month (COST004 measures growth between inventories):
  # its newest inventory, and one from 28 days earlier as a nightly ingest keeping a month of them holds it
  - {name: ckpt-vision-inventory, kind: s3_inventory, uri: landing/inventory/acme-ckpt-vision/daily/,
     options: {keep_inventories: 31}}
  - {name: ckpt-vision-month-ago, kind: s3_inventory, uri: landing/inventory/acme-ckpt-vision/month-ago/,
     expected_every: "off"}
  - {name: cloudwatch-logs, kind: cloudwatch_logs, uri: landing/cloudwatch-logs/}
  # the research team's clusters no bill lists (priced below) and the training logs of some jobs
  - {name: research-hosts, kind: hosts_csv, uri: landing/inventory/hosts/}
  - {name: train-logs, kind: train_log, uri: landing/train_logs/}
tags:
  team: [team]
  project: [project]
  host: [Name, hostname]
checkpoints:
  - "s3://acme-ckpt/{project}/{run_id}/**"
datasets:
  - "s3://acme-datasets/datasets/"
  - "s3://acme-datasets-eu/datasets/"
  - "s3://acme-scratch/datasets/"
rules:
  GPU001: {max_util_pct: 5, min_idle_hours: 2}
budgets:
  team: {nlp: 260000, vision: 110000, speech: 60000}
  storage_growth:                 # the most stored bytes may grow in a month
    "s3://acme-ckpt-vision/": 10%
prices:
  storage_gb_month: {STANDARD: 0.023, STANDARD_IA: 0.0125, GLACIER_IR: 0.004}
# the daily alert (`wastewatch alert`): here written to a file; a real config posts to a webhook_url
alert:
  min_daily_waste: 100
  file: reports/alerts.jsonl
"""
        + _pricing_text()
        + extra_pricing
        + _showback_text()
    )


def _pricing_text() -> str:
    """The `pricing:` section: the self-built DGX cluster (owned) and the rented one (contract)."""
    o, c = OWNED, CONTRACT
    return f"""\
# GPU hosts no bill lists: the self-built DGX cluster (owned) and the rented one (contract); a billed host
# always keeps its bill
pricing:
  - match: {{host: "dgx-*"}}
    owned: {{purchase_price: {o["purchase_price"]}, currency: USD, life_years: {o["life_years"]}, gpus: {o["gpus"]},
            in_service: {o["in_service"]}, pue: {o["pue"]}, kwh_price: {o["kwh_price"]},
            facility_per_month: {o["facility_per_month"]}}}
  - match: {{cluster: "lambda-*"}}
    contract: {{per_gpu_hour: {c["per_gpu_hour"]}, currency: USD, valid_from: {c["valid_from"]}}}
"""


def _showback_text() -> str:
    """The `showback:` rules (docs/showback.md): the support plan, the monitoring stack, the A100 cluster."""
    return """\
# showback: every dollar to a team. The support plan by fixed shares, the shared monitoring stack
# evenly among the teams with spend, and the shared A100 cluster (idle hours included) by busy GPU-hours
showback:
  - name: support-plan
    match: {service: "AWS Support*"}
    split: fixed
    shares: {nlp: 50, vision: 30, speech: 20}
  - name: monitoring
    match: {resource: "*acme-monitoring*"}
    split: even
  - name: a100-pool
    match: {tag_present: cluster}
    split: proportional
    by: busy_gpu_hours
    cluster: a100-pool
"""
