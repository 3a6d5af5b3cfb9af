"""`wastewatch estimate`: what a training run will cost before it runs (the method every training budget starts from).

compute FLOPs      = 6 × parameters × tokens               (forward + backward of a dense transformer)
GPU-hours          = FLOPs / (peak dense FLOP/s per GPU × MFU) / 3600
wall time          = GPU-hours / GPUs
compute cost       = GPU-hours × price per GPU-hour        (given, or measured from the warehouse)
job MTBF           = MTBF per GPU (GPU-hours per failure, measured: sql/advice/job_failures.sql) / GPUs
checkpoint size    = parameters × bytes per parameter       (14: BF16 weights, FP32 master copy, Adam m and v)
write time δ       = checkpoint size / write bandwidth
save interval τ    = √(2 × δ × job MTBF)                    (Young/Daly: minimises expected lost work)
failure reserve    = expected failures × (τ / 2 lost work + restart time) × GPUs   (GPU-hours)
checkpoint overhead= saves × δ × GPUs                       (GPU-hours the training waits for synchronous saves)
storage            = retained checkpoints × size, priced per GB-month for the run's duration

Peak FLOP/s come from `pipelines/catalog/gpu_peak_flops.csv` (dense BF16/FP16 tensor FLOP/s per GPU model,
with the datasheet each figure comes from; vendors print "with sparsity" figures that are twice these).
"""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from functools import cache
from typing import Any

import duckdb

from pipelines.advice.cadence import young_daly_hours
from pipelines.warehouse import CATALOG_DIR, rows, sql_text

CATALOG = CATALOG_DIR / "gpu_peak_flops.csv"
FLOPS_PER_PARAM_TOKEN = 6
CKPT_BYTES_PER_PARAM = 14.0
# Llama 3 405B pre-training (Meta, "The Llama 3 Herd of Models", 2024, §3.3.4): 419 unexpected job
# interruptions in a 54-day snapshot on 16,384 H100 GPUs -> one failure per this many GPU-hours
DEFAULT_MTBF_GPU_HOURS = 54 * 24 * 16384 / 419
DEFAULT_MTBF_SOURCE = (
    "default: Llama 3 405B pre-training, 419 unexpected interruptions in 54 days on 16,384 GPUs "
    "(Meta, The Llama 3 Herd of Models, 2024)"
)
MIN_JOB_GPU_HOURS = 1000.0  # fewer measured GPU-hours than this: the default MTBF is used
HOURS_PER_MONTH = 730.0
DEFAULT_STORAGE_PRICE = 0.023  # USD per GB-month (S3 Standard) unless the config's prices say otherwise


class EstimateError(ValueError):
    """Inputs that cannot give an estimate; the message says which and why."""


@dataclass(frozen=True)
class GpuSpec:
    model: str
    aliases: tuple[str, ...]
    vendor: str
    peak_dense_tflops: float
    precision: str
    memory_gib: float
    source: str
    source_url: str


@cache
def gpu_catalog() -> tuple[GpuSpec, ...]:
    with CATALOG.open(newline="", encoding="utf-8") as f:
        return tuple(
            GpuSpec(
                model=r["gpu_model"],
                aliases=tuple(a.strip().lower() for a in r["aliases"].split(";") if a.strip()),
                vendor=r["vendor"],
                peak_dense_tflops=float(r["peak_dense_tflops"]),
                precision=r["precision"],
                memory_gib=float(r["memory_gib"]),
                source=r["source"],
                source_url=r["source_url"],
            )
            for r in csv.DictReader(f)
        )


def find_gpu(name: str) -> GpuSpec:
    wanted = name.strip().lower().replace("_", "-").replace(" ", "-").removeprefix("nvidia-")
    for spec in gpu_catalog():
        if wanted in {spec.model.lower().replace(" ", "-"), *spec.aliases}:
            return spec
    known = ", ".join(s.model for s in gpu_catalog())
    raise EstimateError(f"unknown GPU {name!r}; known: {known} (or add a row to {CATALOG.name})")


@dataclass
class Estimate:
    params: float
    tokens: float
    gpu: str
    gpus: int
    mfu: float
    mfu_source: str
    mfu_jobs: int
    flops: float
    peak_tflops_per_gpu: float
    peak_source: str
    effective_tflops_per_gpu: float
    gpu_hours: float
    wall_hours: float
    price_per_gpu_hour: float | None
    price_source: str
    currency: str
    compute_cost: float | None
    mtbf_gpu_hours: float
    mtbf_source: str
    job_mtbf_hours: float
    expected_failures: float
    checkpoint_bytes: float
    checkpoint_write_seconds: float
    young_daly_interval_hours: float
    save_interval_hours: float
    saves: int
    failure_reserve_gpu_hours: float
    checkpoint_overhead_gpu_hours: float
    failure_reserve_cost: float | None
    checkpoint_overhead_cost: float | None
    checkpoints_kept: int | None
    checkpoint_bytes_written: float
    checkpoint_bytes_retained: float
    storage_price_gb_month: float
    storage_cost: float | None
    total_cost: float | None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Measured:
    value: float
    source: str
    currency: str = "USD"


def measured_price(con: duckdb.DuckDBPyConnection, spec: GpuSpec, days: int = 28) -> Measured | None:
    """Effective cost per billed GPU-hour of this GPU model over the warehouse's last `days` days."""
    try:
        found = _price_rows(con, spec, days)
    except duckdb.CatalogException:  # a warehouse without the marts yet
        return None
    if not found or found[0][1] is None:
        return None
    currency, per_hour, gpu_hours, instances = found[0]
    return Measured(
        float(per_hour),
        f"measured: effective cost of {int(gpu_hours):,} billed {spec.model} GPU-hours on {instances} "
        f"instance(s) over the warehouse's last {days} days",
        currency,
    )


def _price_rows(con: duckdb.DuckDBPyConnection, spec: GpuSpec, days: int) -> list[tuple[Any, ...]]:
    names = [spec.model.lower(), *spec.aliases]
    return con.execute(
        sql_text("reports", "rpt_estimate_gpu_hour_price"),
        {"names": [n.replace(" ", "-") for n in names], "days": days},
    ).fetchall()


def measured_mtbf(con: duckdb.DuckDBPyConnection, like: str | None = None) -> Measured | None:
    """GPU-hours per interrupting failure over all finished GPU jobs, or those of the job type `like`
    (sql/advice/job_failures.sql, the one measurement checkpoint cadence advice ADV003 reads per job type);
    None when too few."""
    try:
        found = rows(con, sql_text("advice", "job_failures"), {"since": None, "until": None})
    except duckdb.CatalogException:  # a warehouse whose jobs were never transformed (no int_jobs yet)
        return None
    row = next((r for r in found if (r["job_type"] == like if like else r["all_types"])), None)
    if row is None or not row["gpu_hours"] or row["gpu_hours"] < MIN_JOB_GPU_HOURS or not row["failures"]:
        return None
    of = f"{like} jobs" if like else "GPU jobs"
    return Measured(
        row["gpu_hours"] / row["failures"],
        f"measured: {row['failures']} failed job(s) ({', '.join(row['failure_states'])}) in "
        f"{row['gpu_hours']:,.0f} GPU-hours of {row['runs']} finished {of}",
    )


def measured_write_seconds(con: duckdb.DuckDBPyConnection, like: str) -> Measured | None:
    """The checkpoint write time of the job type `like` (sql/advice/checkpoint_write_time.sql, the one
    measurement ADV003 reads): its train logs' save durations, else the GPU utilisation dip at its checkpoint
    writes; None when neither measures it."""
    try:
        found = rows(
            con,
            sql_text("advice", "checkpoint_write_time"),
            {"since": None, "until": None, "dip_window_s": None, "dip_util_pct": None},
        )
    except duckdb.CatalogException:  # no marts yet
        return None
    row = next((r for r in found if r["job_type"] == like and r["write_s"] is not None), None)
    if row is None:
        return None
    how = (
        f"the median of {row['log_saves']} save(s) its training logs timed"
        if row["write_from"] == "log"
        else f"the median GPU utilisation dip at {row['dip_writes']} checkpoint write(s)"
    )
    return Measured(float(row["write_s"]), f"measured for {like}: {how}")


def measured_mfu(con: duckdb.DuckDBPyConnection, spec: GpuSpec, params: float) -> tuple[Measured | None, int]:
    """Median measured MFU of finished jobs on this GPU model with a parameter count within 2x; and the
    number of such jobs (0: none, or a warehouse without the job_mfu mart yet)."""
    try:
        found = con.execute(
            sql_text("reports", "rpt_estimate_measured_mfu"), {"gpu_model": spec.model, "params": params}
        ).fetchall()
    except duckdb.CatalogException:
        return None, 0
    jobs, median, low, high = found[0] if found else (0, None, None, None)
    if not jobs or median is None:
        return None, 0
    return (
        Measured(
            float(median),
            f"measured: median MFU of {jobs} finished {spec.model} job(s) with {params / 2:.3g} to "
            f"{params * 2:.3g} parameters (range {low:.2f} to {high:.2f}; job_mfu)",
        ),
        int(jobs),
    )


def estimate(
    params: float,
    tokens: float,
    gpu: str,
    gpus: int,
    mfu: float | str,
    price: float | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    currency: str = "USD",
    mtbf_gpu_hours: float | None = None,
    ckpt_bytes_per_param: float = CKPT_BYTES_PER_PARAM,
    ckpt_write_gbps: float = 10.0,
    ckpt_write_seconds: float | None = None,
    save_every_hours: float | None = None,
    keep: int | None = 5,
    restart_minutes: float = 10.0,
    storage_price_gb_month: float = DEFAULT_STORAGE_PRICE,
    mfu_default: float = 0.4,
    like: str | None = None,
) -> Estimate:
    """The estimate; `con` (a warehouse connection) supplies the measured price and failure rate, and the
    measured MFU when `mfu` is "measured" (`mfu_default` when no comparable job was measured). With `like`
    (a recurring job type, as ADV003 names it), the failure rate and checkpoint write time are that type's."""
    if params <= 0 or tokens <= 0:
        raise EstimateError("--params and --tokens must be positive")
    if gpus < 1:
        raise EstimateError("--gpus must be at least 1")
    spec = find_gpu(gpu)
    notes: list[str] = []
    mfu_source, mfu_jobs = "given", 0
    if mfu == "measured":
        m, mfu_jobs = measured_mfu(con, spec, params) if con is not None else (None, 0)
        if m is not None:
            mfu, mfu_source = m.value, m.source
        else:
            mfu = mfu_default
            mfu_source = f"default {mfu_default:g}: no measured MFU to use"
            notes.append(
                f"no finished {spec.model} job with a parameter count within 2x of {params:.3g} has a measured "
                f"MFU (a train_log source feeds job_mfu): --mfu-default {mfu_default:g} is used"
            )
    if not isinstance(mfu, int | float) or not 0 < mfu <= 1:
        raise EstimateError(f"--mfu {mfu} must be a share of the peak in (0, 1], e.g. 0.4, or 'measured'")
    flops = FLOPS_PER_PARAM_TOKEN * params * tokens
    peak = spec.peak_dense_tflops * 1e12
    gpu_hours = flops / (peak * mfu) / 3600
    wall_hours = gpu_hours / gpus

    price_source = "given"
    if price is None and con is not None:
        m = measured_price(con, spec)
        if m is not None:
            price, price_source, currency = m.value, m.source, m.currency
    if price is None:
        price_source = f"unknown: give --price, or ingest billing for {spec.model} instances"
        notes.append(f"no price per GPU-hour: costs are left out (no billed {spec.model} hours measured)")

    mtbf_source = "given"
    if mtbf_gpu_hours is None:
        m = measured_mtbf(con, like) if con is not None else None
        if m is not None:
            mtbf_gpu_hours, mtbf_source = m.value, m.source
        else:
            mtbf_gpu_hours, mtbf_source = DEFAULT_MTBF_GPU_HOURS, DEFAULT_MTBF_SOURCE
            if con is not None:
                notes.append(
                    f"the warehouse's jobs hold fewer than {MIN_JOB_GPU_HOURS:,.0f} GPU-hours or no failure: "
                    "the published failure rate is used"
                )
    if mtbf_gpu_hours <= 0:
        raise EstimateError("--mtbf-gpu-hours must be positive")
    job_mtbf = mtbf_gpu_hours / gpus
    failures = wall_hours / job_mtbf

    ckpt_bytes = params * ckpt_bytes_per_param
    write_s = ckpt_write_seconds if ckpt_write_seconds is not None else ckpt_bytes / (ckpt_write_gbps * 1e9)
    if ckpt_write_seconds is None and like and con is not None:
        w = measured_write_seconds(con, like)
        if w is not None:
            write_s = w.value
            notes.append(f"checkpoint write time {w.value:,.1f} s, {w.source}")
        else:
            notes.append(
                f"no measured checkpoint write time for {like}: checkpoint size / write bandwidth is used"
            )
    young_daly_h = young_daly_hours(write_s / 3600, job_mtbf)
    interval_h = save_every_hours if save_every_hours is not None else young_daly_h
    if interval_h <= 0:
        raise EstimateError("--save-every must be positive")
    saves = max(math.ceil(wall_hours / interval_h), 1)
    reserve_gpu_h = failures * (interval_h / 2 + restart_minutes / 60) * gpus
    overhead_gpu_h = saves * (write_s / 3600) * gpus
    written = saves * ckpt_bytes
    kept = saves if keep is None or keep <= 0 else min(keep, saves)
    retained = kept * ckpt_bytes
    # retention fills up as the run saves: the average held over the run is about half the peak when
    # everything is kept, and close to the peak when only the last few are
    average_gb = (retained / 2 if keep is None or keep <= 0 else retained) / 1e9
    storage = average_gb * storage_price_gb_month * (wall_hours / HOURS_PER_MONTH)

    def cost(hours: float) -> float | None:
        return None if price is None else hours * price

    compute_cost = cost(gpu_hours)
    total = None
    if price is not None:
        total = gpu_hours * price + reserve_gpu_h * price + overhead_gpu_h * price + storage
    return Estimate(
        params=params,
        tokens=tokens,
        gpu=spec.model,
        gpus=gpus,
        mfu=mfu,
        mfu_source=mfu_source,
        mfu_jobs=mfu_jobs,
        flops=flops,
        peak_tflops_per_gpu=spec.peak_dense_tflops,
        peak_source=f"{spec.source} ({spec.source_url})",
        effective_tflops_per_gpu=spec.peak_dense_tflops * mfu,
        gpu_hours=gpu_hours,
        wall_hours=wall_hours,
        price_per_gpu_hour=price,
        price_source=price_source,
        currency=currency,
        compute_cost=compute_cost,
        mtbf_gpu_hours=mtbf_gpu_hours,
        mtbf_source=mtbf_source,
        job_mtbf_hours=job_mtbf,
        expected_failures=failures,
        checkpoint_bytes=ckpt_bytes,
        checkpoint_write_seconds=write_s,
        young_daly_interval_hours=young_daly_h,
        save_interval_hours=interval_h,
        saves=saves,
        failure_reserve_gpu_hours=reserve_gpu_h,
        checkpoint_overhead_gpu_hours=overhead_gpu_h,
        failure_reserve_cost=cost(reserve_gpu_h),
        checkpoint_overhead_cost=cost(overhead_gpu_h),
        checkpoints_kept=None if keep is None or keep <= 0 else kept,
        checkpoint_bytes_written=written,
        checkpoint_bytes_retained=retained,
        storage_price_gb_month=storage_price_gb_month,
        storage_cost=storage,
        total_cost=total,
        notes=notes,
    )


def _duration(hours: float) -> str:
    if hours < 1:
        return f"{hours * 60:.0f} min"
    if hours < 48:
        return f"{hours:.1f} h"
    return f"{hours:,.0f} h ({hours / 24:.1f} days)"


def _bytes(n: float) -> str:
    for unit, size in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n:,.0f} B"


def _money(value: float | None, currency: str) -> str:
    return "–" if value is None else f"{currency} {Decimal(str(round(value, 2))):,.2f}"


def render_text(e: Estimate) -> str:
    cur = e.currency
    lines = [
        f"Training estimate: {e.params:.3g} parameters x {e.tokens:.3g} tokens on {e.gpus} x {e.gpu} "
        f"at {e.mfu:.0%} MFU",
        f"  compute            {e.flops:.3e} FLOPs (6 x {e.params:.3g} x {e.tokens:.3g})",
        f"  peak               {e.peak_tflops_per_gpu:,.1f} TFLOP/s dense per GPU -> {e.effective_tflops_per_gpu:,.1f} "
        f"at {e.mfu:.0%} MFU",
        f"                     source: {e.peak_source}",
        f"  MFU                {e.mfu:.2f} ({e.mfu_source})",
        f"  GPU-hours          {e.gpu_hours:,.0f}",
        f"  wall time          {_duration(e.wall_hours)} on {e.gpus} GPUs",
        f"  price              {_money(e.price_per_gpu_hour, cur)} per GPU-hour ({e.price_source})",
        f"  compute cost       {_money(e.compute_cost, cur)}",
        f"  failures           MTBF {e.mtbf_gpu_hours:,.0f} GPU-hours per GPU ({e.mtbf_source})",
        f"                     -> job MTBF {_duration(e.job_mtbf_hours)}, {e.expected_failures:.2f} expected failure(s)",
        f"  checkpoint         {_bytes(e.checkpoint_bytes)} per save, written in {e.checkpoint_write_seconds:,.1f} s",
        f"  save interval      {_duration(e.save_interval_hours)} ({e.saves:,} saves); Young/Daly optimum "
        f"sqrt(2 x {e.checkpoint_write_seconds:,.1f} s x {_duration(e.job_mtbf_hours)}) = "
        f"{_duration(e.young_daly_interval_hours)}",
        f"  failure reserve    {e.failure_reserve_gpu_hours:,.0f} GPU-hours ({_money(e.failure_reserve_cost, cur)}): "
        "lost work since the last save + restart, per failure",
        f"  checkpoint waits   {e.checkpoint_overhead_gpu_hours:,.0f} GPU-hours ({_money(e.checkpoint_overhead_cost, cur)})",
        f"  checkpoint storage {_bytes(e.checkpoint_bytes_written)} written, {_bytes(e.checkpoint_bytes_retained)} kept "
        f"({'all' if e.checkpoints_kept is None else f'last {e.checkpoints_kept}'}); "
        f"{_money(e.storage_cost, cur)} at {e.storage_price_gb_month} per GB-month",
        f"  total              {_money(e.total_cost, cur)}",
    ]
    lines += [f"  note: {n}" for n in e.notes]
    return "\n".join(lines) + "\n"


def render_catalog() -> str:
    rows = [f"{'GPU':10} {'dense TFLOP/s':>13}  {'precision':9} {'memory':>7}  source"]
    for s in gpu_catalog():
        rows.append(
            f"{s.model:10} {s.peak_dense_tflops:13,.1f}  {s.precision:9} {s.memory_gib:5.0f} GB  {s.source_url}"
        )
    return "\n".join(rows) + "\n"
