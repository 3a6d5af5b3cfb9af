"""The sections of `wastewatch.yaml` beside its sources: retention, DuckDB, prices and pricing entries,
notifications, remediation, the daily alert, exchange rates and the Spark engine."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from pipelines.config.urls import EndpointUrl, LinkUrl, WebhookUrl, check_spark_url
from pipelines.marts.registry import SPARK_MARTS, SPARK_MARTS_LATER


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Retention(_Strict):
    """How long raw data is kept once it is rolled up (unset = kept for good)."""

    gpu_samples_days: int | None = Field(
        None,
        ge=8,
        le=3660,
        description="Days of raw GPU samples to keep; older days that are rolled up to the hour are dropped, "
        "their hourly roll-up and marts kept. At least 8 (the freshness check reads the last 8 days); keep "
        "more than your latest job records arrive (a job can only cut hours whose samples are kept).",
    )


class DuckDBSettings(_Strict):
    """Resource limits of the warehouse connection (DuckDB's own settings; unset = DuckDB's default)."""

    memory_limit: str | None = Field(
        None,
        pattern=r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$",
        description="e.g. 1GB: DuckDB spills to temp_directory beyond it.",
    )
    threads: int | None = Field(None, ge=1, le=512, description="Worker threads (default: all cores).")
    temp_directory: Path | None = Field(
        None, description="Where DuckDB spills (default: <warehouse>.tmp beside the warehouse)."
    )
    publish_update_above_mb: float = Field(
        1024,
        ge=0,
        description="A warehouse file larger than this (MB) is published by what changed since the last "
        "publish; a smaller one is copied whole, which is cheaper at that size (0: always by what changed).",
    )


class Prices(_Strict):
    storage_gb_month: dict[str, Decimal] = Field(default_factory=dict)
    gpu_hour: dict[str, Decimal] = Field(default_factory=dict)


_CURRENCY = r"^[A-Z]{3}$"
# The share of a GPU server's power the GPUs do not draw (CPUs, memory, NICs, fans, power supply losses),
# as a factor on the GPUs' own draw: an 8-GPU H100 server is rated 10.2 kW at most for 8 x 700 W of
# GPUs (1.8 at full load); 1.5 sits between that and a lightly loaded host. Set `host_overhead` per entry.
DEFAULT_HOST_OVERHEAD = Decimal("1.5")


class PricingMatch(_Strict):
    """Which hosts a `pricing:` entry prices: every key given must match (globs, case-insensitive)."""

    host: str | None = Field(None, min_length=1, description="Glob on the host name (`dgx-*`).")
    gpu_model: str | None = Field(
        None,
        min_length=1,
        description="Glob on the GPU model telemetry reports; without * or ? any model containing it.",
    )
    cluster: str | None = Field(
        None,
        min_length=1,
        description="Glob on the host's cluster (inventory tag `cluster`, else its jobs').",
    )
    tag: dict[str, str] | None = Field(None, description="Inventory tags the host must carry, {key: value}.")

    @model_validator(mode="after")
    def _something(self) -> PricingMatch:
        if self.host is None and self.gpu_model is None and self.cluster is None and not self.tag:
            raise ValueError(
                'match needs at least one of host, gpu_model, cluster, tag (host: "*" matches all)'
            )
        return self


class ContractPricing(_Strict):
    """A rented cluster: a flat rate per GPU-hour or per node-hour, for every hour of the contract."""

    per_gpu_hour: Decimal | None = Field(None, gt=0, description="Rate per GPU per hour.")
    per_node_hour: Decimal | None = Field(None, gt=0, description="Rate per host per hour.")
    currency: str = Field(pattern=_CURRENCY, description="ISO 4217 code, e.g. USD.")
    valid_from: date | None = Field(
        None, description="First day of the contract (default: the host's first data)."
    )
    valid_to: date | None = Field(None, description="Last day of the contract, inclusive (default: open).")
    gpus: int | None = Field(
        None,
        ge=1,
        le=64,
        description="GPUs per host (default: the GPUs its telemetry or instance type shows).",
    )

    @model_validator(mode="after")
    def _one_rate(self) -> ContractPricing:
        if (self.per_gpu_hour is None) == (self.per_node_hour is None):
            raise ValueError("give exactly one of per_gpu_hour or per_node_hour")
        if self.valid_from and self.valid_to and self.valid_to < self.valid_from:
            raise ValueError(f"valid_to {self.valid_to} is before valid_from {self.valid_from}")
        return self


class OwnedPricing(_Strict):
    """Hardware bought: straight-line depreciation, power at the meter and a monthly facility amount."""

    purchase_price: Decimal = Field(gt=0, description="What one host cost.")
    currency: str = Field(pattern=_CURRENCY, description="ISO 4217 code, e.g. USD.")
    life_years: Decimal = Field(gt=0, le=20, description="Years the purchase is written off over.")
    gpus: int = Field(ge=1, le=64, description="GPUs per host.")
    residual_value: Decimal = Field(
        Decimal(0), ge=0, description="What the host is worth at the end of its life."
    )
    in_service: date | None = Field(None, description="First day it cost (default: its first telemetry).")
    retired: date | None = Field(
        None, description="Last day it cost, inclusive (default: still in service at the end of the data)."
    )
    pue: Decimal = Field(ge=1, le=5, description="Power usage effectiveness of the data centre.")
    kwh_price: Decimal = Field(ge=0, description="Price of one kWh.")
    facility_per_month: Decimal = Field(
        Decimal(0), ge=0, description="Rack, support and network per host and month."
    )
    nameplate_watts: Decimal | None = Field(
        None,
        gt=0,
        le=5000,
        description="Watts per GPU when telemetry has no power (default: the GPU's power limit in telemetry).",
    )
    host_overhead: Decimal = Field(
        DEFAULT_HOST_OVERHEAD, ge=1, le=5, description="Host power as a factor on its GPUs' power."
    )

    @model_validator(mode="after")
    def _residual_below_price(self) -> OwnedPricing:
        if self.residual_value >= self.purchase_price:
            raise ValueError(
                f"residual_value {self.residual_value} must be below purchase_price {self.purchase_price}"
            )
        if self.in_service and self.retired and self.retired < self.in_service:
            raise ValueError(f"retired {self.retired} is before in_service {self.in_service}")
        return self


class PricingEntry(_Strict):
    """One `pricing:` entry: which hosts, and exactly one cost model for them."""

    match: PricingMatch
    contract: ContractPricing | None = None
    owned: OwnedPricing | None = None

    @model_validator(mode="after")
    def _one_model(self) -> PricingEntry:
        if (self.contract is None) == (self.owned is None):
            raise ValueError("give exactly one of contract: or owned:")
        return self

    @property
    def basis(self) -> Literal["contract", "owned"]:
        return "contract" if self.contract is not None else "owned"


def _globs(value: object) -> object:
    """`host:` of a spare pool takes one glob or a list of them."""
    return [value] if isinstance(value, str) else value


class SpareMatch(_Strict):
    """Which hosts are hot spares: every key given must match (globs and tags, case-insensitive)."""

    host: Annotated[list[Annotated[str, Field(min_length=1)]], BeforeValidator(_globs)] | None = Field(
        None, description="Glob(s) on the host name (`gpu-spare-*`), one or a list; any of them matches."
    )
    tag: dict[str, str] | None = Field(
        None, description="Tags the host must carry on its bill or inventory record, {key: value}."
    )

    @model_validator(mode="after")
    def _something(self) -> SpareMatch:
        if not self.host and not self.tag:
            raise ValueError("match needs host (a glob or a list of globs) or tag ({role: hot-spare})")
        return self


class Spares(_Strict):
    """`spares:`: the hot-spare hosts kept idle on purpose, and the share of the fleet's GPU-hours the
    policy allows them (docs/gpu.md "Spare pools")."""

    match: SpareMatch
    policy_share: float = Field(
        ge=0, le=1, description="Share of the fleet's GPU-hours spares may hold (0..1, e.g. 0.05)."
    )


class NotifyConfig(_Strict):
    """The optional `notify:` section: where the weekly report is announced (see pipelines/report/notify.py)."""

    webhook_url: WebhookUrl | None = Field(
        None,
        description="Slack-compatible incoming webhook URL (https://; http:// only to a loopback address).",
    )
    email_html: bool = Field(False, description="Write an e-mail-ready email.html beside the report.")
    teams: bool = Field(
        True,
        description="List the 15 teams with the most waste in the post, one line each, with the way to all teams.",
    )
    report_url: LinkUrl | None = Field(None, description="Base URL where the reports folder is served.")
    timeout_s: float = Field(10.0, gt=0, le=120, description="Webhook timeout in seconds.")


class RemediationConfig(_Strict):
    """The optional `remediation:` section: how `wastewatch remediate apply` reaches targets and what it never touches."""

    protect_tag: str = Field(
        "wastewatch:protect",
        min_length=1,
        description="A target (instance, bucket or object) carrying this tag key is never touched "
        "(unless its value is false, no or 0).",
    )
    s3_endpoint_url: EndpointUrl | None = Field(
        None,
        description="S3-compatible endpoint for the buckets acted on (default: the endpoint of a source "
        "in the same bucket, else AWS).",
    )
    s3_region: str | None = None
    ec2_endpoint_url: EndpointUrl | None = Field(None, description="EC2 endpoint (default: AWS).")
    ec2_region: str | None = Field(None, description="Region of instances whose finding names none.")


# the rules whose waste `wastewatch alert` watches: the ones that burn by the hour while nobody looks
AlertRule = Literal["GPU001", "GPU004"]


class AlertConfig(_Strict):
    """The optional `alert:` section: the daily alert for live, expensive waste (`wastewatch alert`,
    docs/alerts.md). It posts to `webhook_url`, else to `notify.webhook_url`; one of them is required."""

    min_daily_waste: Decimal = Field(
        Decimal(100),
        ge=0,
        description="Alert on a finding whose waste over the last 24 hours of data is at least this much, "
        "in the finding's billing currency.",
    )
    rules: list[AlertRule] = Field(
        default_factory=lambda: ["GPU001", "GPU004"],
        min_length=1,
        description="The rules watched: GPU001 (idle GPU instance), GPU004 (failed job and zombie).",
    )
    live_hours: int = Field(
        3,
        ge=1,
        le=24,
        description="A finding is still running when its rule, evaluated over only the newest live_hours "
        "hours of billed GPU data, still prices waste on the same resource.",
    )
    change_pct: Decimal = Field(
        Decimal(25),
        gt=0,
        description="Re-send a finding already sent when its 24-hour waste moved by at least this percent "
        "of the amount last sent (up or down), or its currency changed.",
    )
    webhook_url: WebhookUrl | None = Field(
        None, description="Slack-compatible webhook (default: notify.webhook_url)."
    )
    file: Path | None = Field(
        None,
        description="Instead of a webhook, append each post (the Slack payload) as one JSON line to this file, "
        "relative to the config's folder: to try the alert without a chat, or for a log shipper.",
    )
    timeout_s: float = Field(10.0, gt=0, le=120, description="Webhook timeout in seconds, per attempt.")
    retries: int = Field(
        2, ge=0, le=10, description="Further attempts after a post failed on a connection error, 429 or 5xx."
    )
    retry_backoff_s: float = Field(
        2.0, ge=0, le=300, description="Seconds before the first retry; doubled before each next one."
    )


class ExchangeRate(_Strict):
    """One dated exchange rate from the config (never fetched): 1 `from` = `rate` `to`, from `valid_from` on."""

    from_: str = Field(alias="from", pattern=_CURRENCY, description="ISO 4217 code converted from, e.g. EUR.")
    to: str = Field(pattern=_CURRENCY, description="ISO 4217 code converted to: the reporting currency.")
    rate: Decimal = Field(gt=0, description="Units of `to` per unit of `from`.")
    valid_from: date = Field(
        description="First day the rate applies; it holds until a later one for the pair."
    )

    @model_validator(mode="after")
    def _two_currencies(self) -> ExchangeRate:
        if self.from_ == self.to:
            raise ValueError(f"from and to are both {self.to}")
        return self


class SparkSettings(_Strict):
    """Where the heavy marts run when `engine: spark` (docs/scaling.md, "Spark engine")."""

    url: Annotated[str, AfterValidator(check_spark_url)] = Field(
        min_length=1,
        description="A Spark Connect URL (sc://host:15002) or a master URL (local[4], spark://host:7077, yarn).",
    )
    marts_dir: str = Field(
        "marts",
        min_length=1,
        description="Where Spark writes the marts as Hive-partitioned Parquet: a folder (relative to the "
        "config) or s3://bucket/prefix/; the warehouse reads them there.",
    )
    conf: dict[str, str] = Field(
        default_factory=dict, description="Spark settings for the session, e.g. {spark.executor.memory: 8g}."
    )
    marts: list[str] = Field(
        default_factory=lambda: list(SPARK_MARTS),
        description=f"The marts Spark builds (default: all it can: {', '.join(SPARK_MARTS)}; int_gpu_slices "
        "is the GPU roll-up the hourly GPU marts are built from); the others stay in DuckDB.",
    )

    @field_validator("marts")
    @classmethod
    def _marts_on_spark(cls, value: list[str]) -> list[str]:
        for name in value:
            if name in SPARK_MARTS_LATER:
                raise ValueError(
                    f"{name} does not run on Spark yet (only {', '.join(SPARK_MARTS)}): remove it from "
                    "spark.marts and DuckDB builds it"
                    + (" from int_gpu_slices, the roll-up Spark builds" if name.startswith("gpu_") else "")
                )
            if name not in SPARK_MARTS:
                raise ValueError(f"{name!r} is not a mart Spark builds (it builds {', '.join(SPARK_MARTS)})")
        # Spark matches the duplicate candidates over the Parquet it wrote for the objects
        if "storage_dataset_matches" in value and "storage_objects_current" not in value:
            raise ValueError(
                "storage_dataset_matches runs on Spark over storage_objects_current's Parquet: name both in "
                "spark.marts, or neither"
            )
        return value


# a filter value: one glob or a list of them (case-insensitive); the list is what is stored
Globs = Annotated[
    list[Annotated[str, Field(min_length=1)]],
    Field(min_length=1),
]
ShowbackSplit = Literal["even", "proportional", "fixed"]
ShowbackMeasure = Literal["spend", "gpu_hours", "storage_bytes", "busy_gpu_hours"]


def _as_list(value: object) -> object:
    """A single glob given as a string is a list of one."""
    return [value] if isinstance(value, str) else value


class ShowbackMatch(_Strict):
    """Which cost a showback rule takes: every key given must match (globs, case-insensitive; a list
    matches when any of its globs does)."""

    provider: Globs | None = Field(None, description="Provider name on the bill (`AWS`, `Microsoft`).")
    service: Globs | None = Field(None, description="Service name on the bill (`AWS Support*`).")
    charge_category: Globs | None = Field(
        None, description="FOCUS charge category (`Usage`, `Purchase`, `Tax`, `Credit`, `Adjustment`)."
    )
    account: Globs | None = Field(None, description="Sub-account id (AWS account, Azure subscription).")
    resource: Globs | None = Field(None, description="Glob on the billed resource id.")
    tag_present: Globs | None = Field(None, description="Tag keys the resource must carry.")
    tag_absent: Globs | None = Field(
        None, description="Tag keys the resource must not carry (`team`: cost no team tag claims)."
    )

    _lists = field_validator(
        "provider",
        "service",
        "charge_category",
        "account",
        "resource",
        "tag_present",
        "tag_absent",
        mode="before",
    )(_as_list)

    @model_validator(mode="after")
    def _something(self) -> ShowbackMatch:
        if not any(getattr(self, k) for k in type(self).model_fields):
            raise ValueError(
                "match needs at least one of provider, service, charge_category, account, resource, "
                'tag_present, tag_absent (resource: "*" matches every billed resource)'
            )
        return self


class ShowbackRule(_Strict):
    """One `showback:` rule: a named pool of cost (`match:`) and how it is split among teams."""

    name: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
        description="The pool's name, shown beside every amount it allocates.",
    )
    match: ShowbackMatch
    split: ShowbackSplit = Field(
        description="`even` (each team the same), `proportional` (to `by:`), `fixed` (`shares:` percent)."
    )
    by: ShowbackMeasure | None = Field(
        None,
        description="proportional: each team's direct `spend` in the month and currency, `gpu_hours` of its "
        "jobs, `storage_bytes` of its buckets, or `busy_gpu_hours` of its jobs on `cluster`.",
    )
    cluster: str | None = Field(
        None, min_length=1, description="by: busy_gpu_hours: glob on the scheduler's cluster name."
    )
    teams: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None,
        min_length=1,
        description="even / proportional: the teams it splits among (default: every team with direct cost "
        "in the month, or with some of the measure).",
    )
    shares: dict[str, Decimal] | None = Field(
        None, description="fixed: percent per team, {team: percent}, summing to 100."
    )

    @field_validator("shares")
    @classmethod
    def _hundred(cls, value: dict[str, Decimal] | None) -> dict[str, Decimal] | None:
        if value is None:
            return value
        if not value:
            raise ValueError("shares needs at least one team")
        if any(v <= 0 for v in value.values()):
            raise ValueError("every share must be above 0 percent")
        total = sum(value.values(), Decimal(0))
        if total != 100:
            raise ValueError(f"shares sum to {total} percent, not 100")
        return value

    @model_validator(mode="after")
    def _complete(self) -> ShowbackRule:
        if self.split == "fixed":
            if self.shares is None:
                raise ValueError("split: fixed needs shares: {team: percent, ...} summing to 100")
            if self.by is not None or self.teams is not None:
                raise ValueError("split: fixed takes shares: only (not by: or teams:)")
        elif self.shares is not None:
            raise ValueError(f"shares: is for split: fixed, not split: {self.split}")
        if self.split == "proportional" and self.by is None:
            raise ValueError(
                "split: proportional needs by: spend, gpu_hours, storage_bytes or busy_gpu_hours"
            )
        if self.split == "even" and self.by is not None:
            raise ValueError("by: is for split: proportional, not split: even")
        if (self.by == "busy_gpu_hours") != (self.cluster is not None):
            raise ValueError("by: busy_gpu_hours needs cluster: <name>, and cluster: is only for it")
        return self
