"""`wastewatch demo`: a realistic landing zone for a small AI company, with known waste planted.

Acme AI: three teams (nlp, vision, speech), 20 GPU hosts of two instance types (12 x p5.48xlarge with
8 x H100 under a Compute Savings Plan, 8 x p4d.24xlarge with 8 x A100 on demand), `weeks` ISO weeks of:

- FOCUS 1.2 billing (CSV.gz, one file per billing period): hourly GPU-instance lines, the Savings Plan's
  monthly purchase, daily EBS, S3 and data-transfer lines, a monthly support fee;
- nvidia-smi `--query-gpu --format=csv` telemetry, one file per host and week, one sample per GPU per
  minute (the same header, units and `, ` separators as the real H200 capture);
- Slurm `sacct -P` job records (with .batch/.extern steps, a failed job, a 2-node job);
- S3 Inventory reports (manifest.json + CSV.gz, URL-encoded keys) of a checkpoint bucket and three
  dataset buckets.

Planted waste (computed in expected.py from the generated data, by each rule family's definition, and
written to `expected.json`): dev boxes idle overnight and at weekends, a failed job whose machine kept billing, a
weekend-idle host, a parked notebook holding GPU memory, a job using 2 of its 8 GPUs, an input-starved
job, a telemetry outage (insufficient data), checkpoints of failed runs, a dataset copied into three
buckets, an untagged host and bucket, a spend spike, a team over budget, a CloudWatch Logs group kept forever
(two saved `describe-log-groups` listings a week apart and its storage lines in the bill) and old TensorBoard
event files and profiler traces and Prometheus TSDB blocks a Thanos sidecar uploaded and nobody expired, in the
scratch bucket (STO005), and a 64-GPU run on the research team's one-day scaling-test pool at half the per-GPU
throughput of nlp's 8-GPU run of the same model configuration, both with training logs (GPU006, scaling.py).
Besides the planted crash,
about 6 % of the training jobs longer than 8 h fail at random (scenario.Planner.fill); expected.json lists each
of them under GPU004 with the GPU time it lost since its run's last checkpoint.

Advice (never waste or spend; expected.json `advice`, docs/advice.md): the eight on-demand p4d hosts are the
steady floor a 1-year commitment is sized from (the p5s run under the Savings Plan already), nlp's
pre-training job type checkpoints every 6 hours (spot-safe) and the nlp dev box's working days never do
(spot-unsafe). They come from the plan as it is, drawing nothing more from the random stream. On the contract
cluster, ADV003's two checkpoint-cadence plants (modelled.CADENCE): a pre-training job type whose training
logs report a save every 10 minutes, preempted once (save less often), and a fine-tuning type saving every
12 hours with every other run preempted (save more often).

Acme's research team also runs two GPU clusters no bill lists (modelled.py): a self-built one (dgx-01/02,
priced `owned` by the config's `pricing:` entry: depreciation, measured power, facility) and one rented on a
per-GPU-hour contract (rent-h100-01/02). Planted on them: dgx-02 idle overnight (GPU001), a failed job on the
contract cluster (GPU004) and a busy job with a low measured MFU (GPU005, from its training log). Training
logs are written for the research jobs and two cloud hosts' jobs of the report week (tokens per GPU-hour and
cost per million tokens on each cost basis), plus a workstation log that matches no job. They are planned
from no draw of the cloud plan's random stream, so the cloud hosts' planted amounts are unchanged; their
amounts join the rules' totals in expected.json, and their spend is `modelled_spend`, never the bill's.

expected.json states amounts for the time the generated records show, not the planned whole hours: a
job runs from its sacct Start (4 s after its first hour begins) to its End (9 s before its last hour
ends), so the job using 2 of 8 GPUs ran 71 h 59 min 47 s, not 72 h (USD 0.10 less at 6 × 38.528 / 8 an
hour); the input-starved job's idle share is that of the utilisation samples written (22.866 % mean in
the one-week demo with seed 7), not the duty cycle's nominal 22.875 %. Every rule's amount is computed
from what was written, independently of the rule SQL, and rounded to the cent once, at the end.

The package: scenario.py plans the fleet, its jobs and its bucket objects; billing.py and writers.py
write the landing files; expected.py prices the planted waste; `generate` here runs them in order.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from pipelines import progress
from pipelines.demo.billing import billing_lines, write_billing
from pipelines.demo.expected import build_expected
from pipelines.demo.modelled import (
    LOGGED_CLOUD_HOSTS,
    OWNED_HOSTS,
    expected_modelled,
    hourly_costs,
    modelled_fleet,
    plan_modelled,
    write_hosts_csv,
    write_train_logs,
)
from pipelines.demo.scaling import (
    expected_pool_day,
    expected_scaling,
    plan_scaling,
    pool_costs,
    pricing_entry,
    write_pool_hosts_csv,
    write_scaling_logs,
)
from pipelines.demo.scenario import (
    GROWTH_BUCKET,
    P5,
    Host,
    fleet,
    plan,
    plan_log_files,
    plan_metric_blocks,
    plan_storage,
    plan_storage_growth,
)
from pipelines.demo.showback import expected_showback
from pipelines.demo.spares import expected_spares, spare_fleet, spares_config, write_spare_hosts_csv
from pipelines.demo.writers import (
    config_text,
    write_inventory,
    write_log_groups,
    write_sacct,
    write_telemetry,
)
from pipelines.units import HOURS_PER_WEEK
from rules import Window

__all__ = ["generate"]


def generate(directory: Path, last_week: str, weeks: int = 4, seed: int = 7) -> dict[str, Any]:
    """Write the landing zone, wastewatch.yaml and expected.json under `directory`; return expected."""
    directory = Path(directory)
    for sub in ("landing", "warehouse", "reports"):
        if (directory / sub).exists():
            shutil.rmtree(directory / sub)
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    end = Window.iso_week(last_week).end
    start = end - timedelta(weeks=weeks)
    hours = weeks * HOURS_PER_WEEK
    hosts = fleet(rng)
    planner, notes = plan(rng, hosts, weeks, start)
    by_name = {h.name: h for h in hosts}
    objects, facts = plan_storage(rng, planner.jobs, start, end)
    # STO005's old event files and traces, planned from no draw of `rng`: every other plant stays as it was
    objects["acme-scratch"].extend(plan_log_files(end))
    # and the Thanos blocks nobody expired, planned from no draw either
    objects["acme-scratch"].extend(plan_metric_blocks(end))
    region = {"acme-datasets-eu": ("eu-west-1", "Europe (Ireland)")}
    storage = {
        b: {
            "bytes": sum(o[1] for o in objs),
            "region": region.get(b, ("us-east-1",))[0],
            "region_name": region.get(b, ("", "US East (N. Virginia)"))[1],
            "team": {"acme-ckpt": "nlp", "acme-datasets": "vision", "acme-datasets-eu": "vision"}.get(b),
            "project": None,
        }
        for b, objs in objects.items()
    }
    rw_day0 = (weeks - 1) * 7
    # Thursday of the report week: 14x the usual egress (Thursday, so even a one-week demo has three
    # earlier weekdays for COST003's baseline)
    spike = (rw_day0 + 3, "speech", Decimal(14))
    t = time.monotonic()
    lines = billing_lines(hosts, start, hours, storage, spike)
    files = write_billing(directory, lines)
    progress.done(f"  billing: {len(lines):,} FOCUS lines in {len(files)} file(s), {progress.seconds(t)}")
    # the research team's clusters without a bill: planned apart, from no draw of `rng`, so the cloud
    # hosts' plan and planted amounts stay what they were
    research = modelled_fleet()
    research_planner, research_notes = plan_modelled(research, weeks, start, seed)
    # the hot spares (spares.py): idle hosts of their own, from no draw of `rng` either
    spares = spare_fleet(hours)
    # GPU006's plant (scaling.py): a one-day scaling-test pool of its own and its 64-GPU run, from no draw of
    # `rng` either, against one of the cloud plan's single-node runs
    scaling = plan_scaling(planner, start, weeks)
    pool = list(scaling.pool)
    t = time.monotonic()
    samples, starved_samples, watts = write_telemetry(
        directory, hosts + research + spares + pool, start, weeks, seed, watts_of=frozenset(OWNED_HOSTS)
    )
    progress.done(
        f"  telemetry: {samples:,} nvidia-smi samples from {len(hosts) + len(research) + len(spares) + len(pool)} hosts, "
        f"{progress.seconds(t)} ({progress.rate(samples, t, 'samples')})"
    )
    t = time.monotonic()
    write_sacct(directory, planner.jobs, start, by_name)
    write_sacct(
        directory, research_planner.jobs, start, {h.name: h for h in research}, prefix="sacct_research"
    )
    write_hosts_csv(directory, research)
    write_spare_hosts_csv(directory, spares)
    write_sacct(directory, [scaling.big], start, {h.name: h for h in pool}, prefix="sacct_scale")
    write_pool_hosts_csv(directory, scaling)
    logged = [(j, "h100") for j in research_planner.jobs] + [
        (j, "h100" if by_name[j.hosts[0]].itype is P5 else "a100")
        for j in planner.jobs
        if j.hosts[0] in LOGGED_CLOUD_HOSTS and "-train-" in j.name
    ]
    logs = write_train_logs(
        directory, logged, start, end - timedelta(weeks=1), end, research_notes["low_job"]
    )
    # GPU006's plant: the pool's run and the cloud baseline get training logs
    logs.update(write_scaling_logs(directory, scaling, start, end - timedelta(weeks=1), end))
    modelled = expected_modelled(
        research, research_planner, research_notes, hourly_costs(research, watts), logs, start, weeks
    )
    # the spares cost the contract's rate every hour, beside the research hosts' modelled spend
    modelled["hours_by_host"] = {h.name: HOURS_PER_WEEK for h in research + spares}
    for host, cost in expected_spares(_fleet_gpu_hours(hosts + research + spares, pool))[
        "cost_by_host"
    ].items():
        modelled["spend"]["contract"] += cost
        modelled["spend_by_host"][host] = cost
    # and the pool its rental day, at its own contract's rate
    for host, by_hour in pool_costs(scaling).items():
        in_week = [c for hour, c in by_hour.items() if end - timedelta(weeks=1) <= hour < end]
        modelled["spend"]["contract"] += sum(in_week, Decimal(0))
        modelled["spend_by_host"][host] = sum(in_week, Decimal(0))
        modelled["hours_by_host"][host] = len(in_week)
    write_inventory(directory, objects, end - timedelta(hours=23))
    # COST004's growing bucket: planned from no draw of `rng`, its two inventories 28 days apart
    growth = plan_storage_growth(end)
    write_inventory(directory, {GROWTH_BUCKET: growth["first"]}, growth["first_at"], config_id="month-ago")
    write_inventory(directory, {GROWTH_BUCKET: growth["newest"]}, growth["newest_at"])
    listings = write_log_groups(directory, end)
    n_objects = sum(len(objs) for objs in objects.values()) + len(growth["first"]) + len(growth["newest"])
    progress.done(
        f"  jobs and storage: {len(planner.jobs)} Slurm jobs, {n_objects:,} objects in {len(objects) + 2} "
        f"bucket inventories, {progress.seconds(t)}"
    )
    (directory / "wastewatch.yaml").write_text(
        config_text(extra_pricing=pricing_entry(scaling)) + spares_config(), encoding="utf-8"
    )

    t = time.monotonic()
    expected = build_expected(
        hosts,
        planner,
        notes,
        facts,
        objects,
        lines,
        start,
        weeks,
        spike,
        samples,
        starved_samples,
        seed,
        last_week,
        modelled,
        logs,
        len(research_planner.jobs) + 1,  # and the pool's run
        listings,
        growth,
    )
    # showback: each team's total per month by the demo config's rules (the bill, the modelled clusters)
    # (the hot spares are contract hosts of the research team too: their every hour is its direct cost)
    research_costs = hourly_costs(research + spares, watts)
    expected["showback"] = expected_showback(
        lines, hosts, planner.jobs, research + spares, research_costs, start, rented=pool_costs(scaling)
    )
    expected["report_week"]["rules"]["GPU006"] = expected_scaling(
        scaling, start, end - timedelta(weeks=1), end
    )
    # the pool's rental day is also a real spike in the research team's contract spend (COST003, attention)
    expected["report_week"]["rules"]["COST003"]["scaling_pool_day"] = expected_pool_day(scaling)
    _add_spares(expected, _fleet_gpu_hours(hosts + research + spares, pool))
    (directory / "expected.json").write_text(
        json.dumps(expected, indent=2, default=str) + "\n", encoding="utf-8"
    )
    progress.done(f"  expected.json: the planted waste, priced, {progress.seconds(t)}")
    return expected


def _fleet_gpu_hours(all_week: list[Host], pool: list[Host]) -> tuple[Decimal, str]:
    """The report week's fleet GPU-hours the spares are measured against, and its formula: every GPU host
    billed or priced all week, and the scaling-test pool's hosts for their rental day."""
    pool_hours = sum(h.states[-HOURS_PER_WEEK:].count("busy") for h in pool)
    gpu_hours = Decimal(8 * HOURS_PER_WEEK * len(all_week) + 8 * pool_hours)
    return gpu_hours, (
        f"{len(all_week)} GPU hosts x 8 GPUs x 168 h (every host billed or priced all week) + {len(pool)} "
        f"scaling-test pool hosts x 8 GPUs x {pool_hours // len(pool)} h (its rental day)"
    )


def _add_spares(expected: dict[str, Any], fleet: tuple[Decimal, str]) -> None:
    """expected.json's spare capacity (report_week.spare_capacity, money to the cent); the spares' contract
    hours are already in modelled_spend (generate adds them to the research cluster's)."""
    spare = expected_spares(fleet)
    cent = Decimal("0.01")
    expected["report_week"]["spare_capacity"] = {
        "planted": "three hot spares (rent-spare-01..03) idle all week: two within the 8 % policy, the third beyond",
        "hosts": spare["hosts"],
        "currency": spare["currency"],
        "spare_gpu_hours": float(spare["spare_gpu_hours"]),
        "spare_cost": float(spare["spare_cost"].quantize(cent)),
        "fleet_gpu_hours": float(spare["fleet_gpu_hours"]),
        "spare_share": float(round(spare["spare_share"], 6)),
        "policy_share": float(spare["policy_share"]),
        "excess_gpu_hours": float(spare["excess_gpu_hours"]),
        "excess_cost": float(spare["excess_cost"].quantize(cent)),
        "formulas": spare["formulas"],
        "note": "attention, never waste: GPU001 prices none of the spares' idle hours",
    }
