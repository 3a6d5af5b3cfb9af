"""The registry of the warehouse's built objects: one line per intermediate object and per mart.

Each line says which `sql/` layer the object's SQL file is in, how it is kept up to date (`view`: an
intermediate view, recreated when its SQL changes; `full`: rebuilt whole when what it reads changed; `day`,
`month`, `file`: only the days, billing months or bill files whose inputs changed), which engines can build it
and what it holds. What it reads comes from its SQL file's `-- depends_on:` header, not from here. The
transform's build order, the Dagster assets and their descriptions, the Spark engine's dispatch, the
`spark.marts` validation and the schema docs all derive from this table: adding a mart is its SQL file and
one line here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

Layer = Literal["intermediate", "marts"]
Rebuild = Literal["view", "full", "day", "month", "file"]
Engine = Literal["duckdb", "spark"]


@dataclass(frozen=True)
class Mart:
    name: str
    layer: Layer
    rebuild: Rebuild
    engines: tuple[Engine, ...]
    description: str
    # built from other marts only (what several rules or advisors share): tests that give the marts' rows
    # build these from them
    shared: bool = False
    # the module that builds it on Spark when `engine: spark` names it (pipelines/transform/spark/): its
    # `build(con, config)` runs the heavy part, `attach(con, built)` points the warehouse at it
    spark: str | None = None
    # the Spark engine could build it one day: `spark.marts` naming it is told so, not "unknown"
    spark_later: bool = False


_D: tuple[Engine, ...] = ("duckdb",)
_DS: tuple[Engine, ...] = ("duckdb", "spark")
_S = "pipelines.transform.spark."

# fmt: off
REGISTRY: tuple[Mart, ...] = (
    # intermediate objects (sql/intermediate/): views over the landed tables, and the GPU samples' roll-up
    Mart("int_billing_extras", "intermediate", "view", _D, "The bill's distinct provider-specific extras, parsed once."),
    Mart("int_billed_resources", "intermediate", "view", _D, "One row per billed resource id: what the bill says it is."),
    Mart("int_jobs", "intermediate", "view", _D, "The latest record of each scheduler job."),
    Mart("int_job_hosts", "intermediate", "view", _D, "Each started job x the hosts it ran on."),
    Mart("int_job_boundaries", "intermediate", "view", _D, "The instants jobs started or ended on each host."),
    Mart("int_gpu_slices", "intermediate", "day", _DS, "GPU samples rolled up per GPU x hour x job slice, by sample day.", spark=_S + "gpu_rollup"),
    Mart("int_host_pricing", "intermediate", "view", _D, "The first `pricing:` entry each host matches."),
    Mart("int_host_resources", "intermediate", "view", _D, "Host name -> billed resource, from telemetry, scheduler and inventory."),
    Mart("int_modelled_hours", "intermediate", "view", _D, "The hours each modelled (owned or contracted) GPU host costs."),
    Mart("int_train_intervals", "intermediate", "view", _D, "Training-log lines with the job each belongs to."),
    Mart("int_cost_modelled", "intermediate", "view", _D, "Modelled GPU hosts' hourly cost rows, as cost_hourly holds them."),
    Mart("int_counted_waste", "intermediate", "view", _D, "The counted findings' waste by team, project and month."),
    # marts (sql/marts/): what the rules, the advisors and the report read
    Mart("resources", "marts", "full", _D, "One row per billed resource: instance type, GPU model and count, host, tags."),
    Mart("cost_hourly", "marts", "month", _DS, "Effective cost of every resource-hour (lines spread evenly over their charge period).", spark=_S + "cost_hourly"),
    Mart("gpu_job_hours", "marts", "day", _D, "GPU-hours split where jobs start and end: each part's job, usage and cost; rolled up incrementally (only sample days whose files or jobs changed).", spark_later=True),
    Mart("gpu_hours", "marts", "day", _D, "One row per GPU-hour: samples, coverage, mean/p95/max util, memory, power, billed resource.", spark_later=True),
    Mart("jobs_enriched", "marts", "full", _D, "One row per scheduler job: its billed resources, team/project (record or host tags), GPU usage and cost."),
    Mart("gpu_billed_hours", "marts", "full", _D, "What each GPU resource cost in each hour it was billed (its billing currency only): the basis the GPU rules price from.", shared=True),
    Mart("gpu_job_spans", "marts", "full", _D, "How long each job that did not fail held its GPUs, over its whole run (GPU002, GPU003).", shared=True),
    Mart("job_mfu", "marts", "full", _D, "Measured MFU per job from its training log (tokens over wall-clock time), tokens per GPU-hour and cost per million tokens."),
    Mart("job_scaling", "marts", "full", _D, "Per job: its model configuration, per-GPU throughput and efficiency against the best smaller run of that configuration (GPU006)."),
    Mart("gpu_claims", "marts", "full", _D, "Which GPU rule claims each GPU-slice and why, in precedence order: the GPU rules price only their own claims.", shared=True),
    Mart("storage_objects_current", "marts", "full", _DS, "One row per object version in the newest snapshot of each bucket or file-system root.", spark=_S + "storage_objects"),
    Mart("storage_prefix_days", "marts", "full", _D, "Bytes per inventory date, bucket, prefix and storage class: how storage grows."),
    Mart("storage_prices", "marts", "full", _D, "The price per GiB-month of each bucket's storage classes, from the bill or the config.", spark_later=True),
    Mart("storage_checkpoints", "marts", "full", _D, "One row per checkpoint (run x step) x storage class.", spark_later=True),
    Mart("storage_datasets", "marts", "full", _D, "One row per dataset folder under a `datasets:` root.", spark_later=True),
    Mart("storage_dataset_matches", "marts", "full", _DS, "Pairs of dataset folders sharing content, per storage class.", spark=_S + "dataset_matches"),
    Mart("storage_incomplete_uploads", "marts", "full", _D, "Incomplete multipart uploads in the newest listing of each bucket.", spark_later=True),
    Mart("job_checkpoint_writes", "marts", "full", _D, "The checkpoints each run wrote while it ran (ADV002, ADV003).", shared=True),
    Mart("job_mfu_hourly", "marts", "full", _D, "Measured MFU per job and hour (how long a job stayed below a floor: GPU005)."),
    Mart("commitment_lines", "marts", "file", _D, "Billing lines that used a commitment discount or paid for the part of one left unused."),
    Mart("transfer_lines", "marts", "file", _D, "Billing lines of data transfer between regions or zones, or out to the internet."),
    Mart("log_storage_lines", "marts", "file", _D, "Billing lines of log storage, retention, ingestion or metric storage."),
    Mart("log_groups_current", "marts", "full", _D, "One row per log group in the newest listing of each source."),
    Mart("showback", "marts", "full", _D, "Every dollar of the bill on a team or 'unallocated': direct cost, each `showback:` rule's pool by team, and the counted waste beside it, by month and week."),
    Mart("gpu_purchase_hours", "marts", "full", _D, "GPU instance-hours per provider, region, type, hour and purchase option (on-demand, spot, commitment)."),
)
# fmt: on


@cache
def by_name() -> dict[str, Mart]:
    return {m.name: m for m in REGISTRY}


def mart(name: str) -> Mart:
    """The registry line of `name`; KeyError naming the known ones when there is none."""
    try:
        return by_name()[name]
    except KeyError:
        raise KeyError(f"unknown mart {name!r}") from None


def names(layer: Layer | None = None, rebuild: Rebuild | None = None) -> tuple[str, ...]:
    """The objects of a layer (and rebuild mode), in the registry's order."""
    return tuple(
        m.name
        for m in REGISTRY
        if (layer is None or m.layer == layer) and (rebuild is None or m.rebuild == rebuild)
    )


INTERMEDIATE = names("intermediate")
# intermediate objects that are incremental tables (refreshed by day), not views
ROLLUPS = names("intermediate", "day")
MARTS = names("marts")
# marts kept up to date by day (their SQL takes $day_from / $day_to), by billing month, by bill file
DAY_MARTS = names("marts", "day")
MONTH_MARTS = names("marts", "month")
FILE_MARTS = names("marts", "file")
# marts built from other marts only: what several rules or advisors share (billed hours, job spans, claims,
# checkpoint writes)
SHARED_GPU_MARTS = tuple(m.name for m in REGISTRY if m.shared)
# what `engine: spark` can build (the marts, then the roll-up they are built from), and what it cannot yet
SPARK_MARTS = tuple(
    m.name
    for layer in ("marts", "intermediate")
    for m in REGISTRY
    if m.layer == layer and "spark" in m.engines
)
SPARK_MARTS_LATER = tuple(m.name for m in REGISTRY if m.spark_later)
