"""`wastewatch.yaml`: typed configuration with errors that name the file, the line and the key.

Relative paths in the file resolve against the folder the file is in, so a config can be used from any
working directory (cron, Dagster, a shell).
"""

from __future__ import annotations

import os
import re
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from pipelines.errors import ConfigError
from pipelines.sources.registry import EXPECTED_EVERY, HOST_SILENCE, kind_names, options_of, source_kind
from pipelines.units import parse_duration

M = TypeVar("M", bound=BaseModel)

DEFAULT_CONFIG_NAME = "wastewatch.yaml"

CanonicalTag = Literal["team", "project", "owner", "job_id", "host"]
BudgetDimension = Literal["team", "project"]

DEFAULT_TAGS: dict[str, list[str]] = {
    "team": ["team", "Team", "user:team", "user_team"],
    "project": ["project", "Project", "user:project"],
    "owner": ["owner", "Owner", "created_by"],
    "job_id": ["job_id", "run_id", "slurm_job_id"],
    "host": ["hostname", "Name", "host"],
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Strict):
    """One place wastewatch reads files from."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", description="Unique name, used in the ledger.")
    kind: str = Field(description="One of the registered kinds (pipelines/sources/registry.py).")
    uri: str = Field(description="File, folder, glob, s3://bucket/prefix/, or an API's http(s):// URL.")
    endpoint_url: str | None = Field(None, description="S3-compatible endpoint (MinIO, Ceph, ...).")
    region: str | None = None
    enabled: bool = True
    options: dict[str, Any] = Field(default_factory=dict, description="Reader-specific options.")
    expected_every: str | None = Field(
        None,
        description="How often new data should arrive (90m, 36h, 3d, 1w; `off` never checks); "
        "default by family in pipelines/sources/registry.py.",
    )
    host_silence: str | None = Field(
        None, description="Telemetry: a host this far behind the source's newest sample stopped reporting."
    )

    @property
    def is_s3(self) -> bool:
        return self.uri.startswith("s3://")

    @property
    def is_http(self) -> bool:
        """An HTTP API (the `prometheus` kind's server), not files."""
        return self.uri.startswith(("http://", "https://"))

    @field_validator("kind")
    @classmethod
    def _registered_kind(cls, value: str) -> str:
        names = kind_names()
        if value not in names:
            expected = ", ".join(repr(n) for n in names)
            raise PydanticCustomError(
                "literal_error", "Input should be one of {expected}", {"expected": expected}
            )
        return value

    @field_validator("expected_every", "host_silence")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is None or value.strip() == "off":
            return value
        parse_duration(value)  # ValueError names the value
        return value

    @model_validator(mode="after")
    def _host_silence_is_telemetry(self) -> Source:
        if self.host_silence is not None and source_kind(self.kind).family != "telemetry":
            raise ValueError(f"host_silence applies to telemetry sources, not to kind {self.kind!r}")
        return self

    def expected_interval(self) -> timedelta | None:
        """How often this source should deliver (None: never checked)."""
        text = self.expected_every or EXPECTED_EVERY[source_kind(self.kind).family]
        return None if text.strip() == "off" else parse_duration(text)

    def host_silence_interval(self) -> timedelta | None:
        text = self.host_silence or HOST_SILENCE
        return None if text.strip() == "off" else parse_duration(text)

    def options_as(self, model: type[M]) -> M:
        """This source's `options:` validated against its kind's model (pipelines/sources/options.py)."""
        return options_of(self.kind, self.options, model)


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


class NotifyConfig(_Strict):
    """The optional `notify:` section: where the weekly report is announced (see pipelines/report/notify.py)."""

    webhook_url: str | None = Field(None, description="Slack-compatible incoming webhook URL.")
    email_html: bool = Field(False, description="Write an e-mail-ready email.html beside the report.")
    teams: bool = Field(True, description="Add one line per team to the post.")
    report_url: str | None = Field(None, description="Base URL where the reports folder is served.")
    timeout_s: float = Field(10.0, gt=0, le=120, description="Webhook timeout in seconds.")


class RemediationConfig(_Strict):
    """The optional `remediation:` section: how `wastewatch remediate apply` reaches targets and what it never touches."""

    protect_tag: str = Field(
        "wastewatch:protect",
        min_length=1,
        description="A target (instance, bucket or object) carrying this tag key is never touched "
        "(unless its value is false, no or 0).",
    )
    s3_endpoint_url: str | None = Field(
        None,
        description="S3-compatible endpoint for the buckets acted on (default: the endpoint of a source "
        "in the same bucket, else AWS).",
    )
    s3_region: str | None = None
    ec2_endpoint_url: str | None = Field(None, description="EC2 endpoint (default: AWS).")
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
    webhook_url: str | None = Field(
        None, description="Slack-compatible webhook (default: notify.webhook_url)."
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


# the marts `engine: spark` can build (pipelines/engines/spark/), and those it cannot build yet
SPARK_MARTS = ("cost_hourly",)
SPARK_MARTS_LATER = (
    "gpu_hours", "gpu_job_hours", "storage_objects_current", "storage_prices", "storage_checkpoints",
    "storage_datasets", "storage_dataset_matches", "storage_incomplete_uploads",
)  # fmt: skip


class SparkSettings(_Strict):
    """Where the heavy marts run when `engine: spark` (docs/scaling.md, "Spark engine")."""

    url: str = Field(
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
        description="The marts Spark builds (default: all it can: cost_hourly); the others stay in DuckDB.",
    )

    @field_validator("marts")
    @classmethod
    def _marts_on_spark(cls, value: list[str]) -> list[str]:
        for name in value:
            if name in SPARK_MARTS_LATER:
                raise ValueError(
                    f"{name} does not run on Spark yet (only {', '.join(SPARK_MARTS)}): remove it from "
                    "spark.marts and DuckDB builds it"
                )
            if name not in SPARK_MARTS:
                raise ValueError(f"{name!r} is not a mart Spark builds (it builds {', '.join(SPARK_MARTS)})")
        return value


# the advisors `advice:` configures (pipelines/advice/): their settings are checked when they run
AdvisorKey = Literal["commitment", "spot"]


class Config(_Strict):
    """The whole `wastewatch.yaml`."""

    warehouse: Path = Path("warehouse/wastewatch.duckdb")
    reports_dir: Path = Path("reports")
    currency: str = Field("USD", description="Reporting currency when the bill names none.")
    history_start: date | None = Field(
        None,
        description="First day whose week can be evaluated and reported (default: the earliest data in "
        "the warehouse), e.g. 2020-01-06 for a historical trace.",
    )
    sources: list[Source] = Field(default_factory=list)
    tags: dict[CanonicalTag, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_TAGS.items()}
    )
    checkpoints: list[str] = Field(default_factory=list)
    datasets: list[str] = Field(default_factory=list)
    rules: dict[str, dict[str, Any]] = Field(default_factory=dict)
    advice: dict[AdvisorKey, dict[str, Any]] = Field(
        default_factory=dict,
        description="Settings of the commitment and spot advice (docs/advice.md), checked when they run.",
    )
    budgets: dict[BudgetDimension, dict[str, Decimal]] = Field(
        default_factory=dict, description="Monthly budgets per 'team' or 'project'."
    )
    prices: Prices = Field(default_factory=Prices)
    duckdb: DuckDBSettings = Field(default_factory=DuckDBSettings)
    engine: Literal["duckdb", "spark"] = Field(
        "duckdb", description="Where the heavy marts run: embedded DuckDB, or Spark (the `spark:` settings)."
    )
    spark: SparkSettings | None = None
    retention: Retention = Field(default_factory=Retention)
    notify: NotifyConfig | None = None
    alert: AlertConfig | None = None
    remediation: RemediationConfig = Field(default_factory=RemediationConfig)
    pricing: list[PricingEntry] = Field(
        default_factory=list, description="Cost models for GPU hosts without a bill; first match wins."
    )
    reporting_currency: str | None = Field(
        None,
        pattern=_CURRENCY,
        description="Currency of the report's consolidated view, converted at `exchange_rates` (none: no "
        "consolidated view; every currency is reported on its own).",
    )
    exchange_rates: list[ExchangeRate] = Field(
        default_factory=list,
        description="Dated rates into reporting_currency, e.g. {from: EUR, to: USD, rate: 1.08, "
        "valid_from: 2026-11-01}; given here, never fetched.",
    )
    # where this config was read from; set by load_config, not by the file
    path: Path | None = Field(None, exclude=True)

    @field_validator("tags")
    @classmethod
    def _tags_merged(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        """Canonical keys the file leaves out keep their default aliases."""
        merged = {k: list(v) for k, v in DEFAULT_TAGS.items()}
        merged.update(value)
        return merged

    @model_validator(mode="after")
    def _unique_sources(self) -> Config:
        seen: set[str] = set()
        for source in self.sources:
            if source.name in seen:
                raise ValueError(f"two sources are named {source.name!r}; names must be unique")
            seen.add(source.name)
        return self

    @model_validator(mode="after")
    def _spark_settings(self) -> Config:
        if self.engine == "spark" and self.spark is None:
            raise ValueError("engine: spark needs a `spark:` section with its url (sc://... or local[2])")
        return self

    @model_validator(mode="after")
    def _rates_into_reporting_currency(self) -> Config:
        if self.exchange_rates and self.reporting_currency is None:
            raise ValueError("exchange_rates needs reporting_currency (the currency they convert to)")
        seen: set[tuple[str, date]] = set()
        for i, r in enumerate(self.exchange_rates):
            if r.to != self.reporting_currency:
                raise ValueError(
                    f"exchange_rates[{i}]: converts to {r.to}, but reporting_currency is {self.reporting_currency}"
                )
            if (r.from_, r.valid_from) in seen:
                raise ValueError(f"exchange_rates[{i}]: a second {r.from_} rate valid from {r.valid_from}")
            seen.add((r.from_, r.valid_from))
        return self

    @property
    def alert_webhook_url(self) -> str | None:
        """Where `wastewatch alert` posts: `alert.webhook_url`, else `notify.webhook_url`."""
        if self.alert is not None and self.alert.webhook_url:
            return self.alert.webhook_url
        return self.notify.webhook_url if self.notify is not None else None

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else Path.cwd()

    def resolve(self, p: Path | str) -> Path:
        """A path from the config, made absolute against the config file's folder."""
        path = Path(p).expanduser()
        return path if path.is_absolute() else (self.base_dir / path)

    @property
    def warehouse_path(self) -> Path:
        return self.resolve(self.warehouse)

    @property
    def published_path(self) -> Path:
        w = self.warehouse_path
        return w.with_name(w.stem + ".published" + w.suffix)

    @property
    def cache_path(self) -> Path:
        """Local cache for objects downloaded from s3:// sources (emptied after each source's run)."""
        w = self.warehouse_path
        return w.with_name(w.stem + ".cache")

    @property
    def spark_marts_dir(self) -> str:
        """Where Spark writes the marts: an s3:// prefix as given, a folder made absolute."""
        where = self.spark.marts_dir if self.spark else "marts"
        return where.rstrip("/") if where.startswith("s3://") else str(self.resolve(where))

    @property
    def duckdb_settings(self) -> dict[str, object]:
        """The settings `warehouse.connect` applies, with paths made absolute."""
        out: dict[str, object] = {}
        if self.duckdb.memory_limit:
            out["memory_limit"] = self.duckdb.memory_limit.replace(" ", "")
        if self.duckdb.threads:
            out["threads"] = self.duckdb.threads
        if self.duckdb.temp_directory:
            out["temp_directory"] = str(self.resolve(self.duckdb.temp_directory))
        return out

    @property
    def reports_path(self) -> Path:
        return self.resolve(self.reports_dir)

    def source_location(self, source: Source) -> str:
        """The source's uri with local paths made absolute (an http(s) URL without its user:password@,
        which the ledger and messages must never hold)."""
        if source.is_http:
            return re.sub(r"^(https?://)[^/@?#]*@", r"\1", source.uri)
        return source.uri if source.is_s3 else str(self.resolve(source.uri))

    def sources_of(self, kinds: tuple[str, ...]) -> list[Source]:
        return [s for s in self.sources if s.kind in kinds and s.enabled]

    def rule_overrides(self, rule_id: str) -> dict[str, Any]:
        return dict(self.rules.get(rule_id, {}))


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line in the YAML file of the value at `loc` (a pydantic error location)."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == str(part):
                    node, line = value_node, key_node.start_mark.line + 1
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if part == "[key]":  # pydantic's marker for an invalid mapping key: the key itself is the path
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _explain(err: dict[str, Any]) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return f"got {err.get('input')!r}, expected one of {expected}"
    msg = err["msg"]
    return re.sub(r"^Value error, ", "", msg)


def parse_config(text: str, path: Path) -> Config:
    """Parse and validate YAML text; errors name `path`, the line and the key."""
    try:
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where}: not valid YAML: {problem}") from None
    except ValueError as exc:  # YAML reads 2020-13-01 as a date and fails building it
        raise ConfigError(f"{_bad_timestamp(root, path)}: not a valid date: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: the top level must be a mapping of keys, got {type(data).__name__}")
    duplicates = _duplicate_sources(data, root, path)
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        lines = list(duplicates)
        for err in exc.errors():
            loc = tuple(err["loc"])
            if not loc and duplicates:  # the model-level duplicate-name check, reported above with its line
                continue
            line = _line_of(root, loc)
            where = f"{path}:{line}" if line else str(path)
            lines.append(f"{where}: {_format_loc(loc)}: {_explain(err)}")
        raise ConfigError("\n".join(lines)) from None
    config = config.model_copy(update={"path": path.resolve()})
    _check_source_options(config, root, path)
    _check_alert(config, root, path)
    return _check_rule_overrides(config, root, path)


def _check_alert(config: Config, root: yaml.Node | None, path: Path) -> None:
    """An `alert:` section needs somewhere to post: its own webhook_url or notify's."""
    if config.alert is not None and config.alert_webhook_url is None:
        line = _line_of(root, ("alert",))
        raise ConfigError(
            f"{path}:{line}: alert.webhook_url: required key is missing (the alert posts to "
            "alert.webhook_url, else to notify.webhook_url; neither is set)"
        )


def _bad_timestamp(root: yaml.Node | None, path: Path) -> str:
    """`path:line` of the first date-like scalar that is not a real date (or just `path`)."""
    stack = [root]
    while stack:
        node = stack.pop(0)
        if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:timestamp":
            try:
                yaml.safe_load(node.value)
            except ValueError:
                return f"{path}:{node.start_mark.line + 1} ({node.value!r})"
        elif isinstance(node, yaml.MappingNode):
            stack.extend(v for pair in node.value for v in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return str(path)


def _check_source_options(config: Config, root: yaml.Node | None, path: Path) -> None:
    """Each source's `options:` are validated against its kind's options model."""
    problems = []
    for i, source in enumerate(config.sources):
        try:
            source_kind(source.kind).options.model_validate(source.options)
        except ValidationError as exc:
            for err in exc.errors():
                loc = ("sources", i, "options", *err["loc"])
                line = _line_of(root, loc)
                problems.append(f"{path}:{line}: {_format_loc(loc)}: {_explain(err)}")
    if problems:
        raise ConfigError("\n".join(problems))


def _duplicate_sources(data: dict[str, Any], root: yaml.Node | None, path: Path) -> list[str]:
    """`sources[i].name: ...` for every source whose name an earlier source already has."""
    sources = data.get("sources")
    if not isinstance(sources, list):
        return []
    first: dict[str, int] = {}
    problems = []
    for i, source in enumerate(sources):
        name = source.get("name") if isinstance(source, dict) else None
        if not isinstance(name, str):
            continue
        if name in first:
            loc = ("sources", i, "name")
            problems.append(
                f"{path}:{_line_of(root, loc)}: {_format_loc(loc)}: "
                f"two sources are named {name!r} (sources[{first[name]}] too); names must be unique"
            )
        else:
            first[name] = i
    return problems


def _check_rule_overrides(config: Config, root: yaml.Node | None, path: Path) -> Config:
    """Rule parameter overrides are validated against each rule's Params model.

    A rule may be named by id, name or alias in any case (as `get_rule` accepts); the overrides are
    stored under the rule's id, which is what `rule_overrides(rule.id)` looks up.
    """
    if not config.rules:
        return config  # nothing to validate: importing the rules (and Polars) costs 0.15-0.2 s a run
    from rules import get_rule  # rules never import pipelines; the reverse is fine

    problems = []
    by_id: dict[str, dict[str, Any]] = {}
    key_of: dict[str, str] = {}
    for rule_id, overrides in config.rules.items():
        try:
            rule = get_rule(rule_id)
        except KeyError as exc:
            line = _line_of(root, ("rules", rule_id))
            problems.append(f"{path}:{line}: rules.{rule_id}: {exc.args[0]}")
            continue
        if rule.id in key_of:
            line = _line_of(root, ("rules", rule_id))
            problems.append(
                f"{path}:{line}: rules.{rule_id}: {rule.id} is already configured as rules.{key_of[rule.id]}"
            )
            continue
        key_of[rule.id] = rule_id
        by_id[rule.id] = overrides
        try:
            rule.params.model_validate(overrides)
        except ValidationError as exc:
            for err in exc.errors():
                loc = ("rules", rule_id, *err["loc"])
                line = _line_of(root, loc)
                problems.append(f"{path}:{line}: {_format_loc(loc)}: {_explain(err)}")
    if problems:
        raise ConfigError("\n".join(problems))
    return config.model_copy(update={"rules": by_id})


CONFIG_ENV = "WASTEWATCH_CONFIG"
ORIGIN_OPTION, ORIGIN_ENV, ORIGIN_DEFAULT = "--config", CONFIG_ENV, f"./{DEFAULT_CONFIG_NAME}"


def find_config(given: Path | str | None = None) -> tuple[Path, str]:
    """Which configuration file to read, and where that choice came from: `given` (--config), else
    $WASTEWATCH_CONFIG (when set and not empty), else ./wastewatch.yaml."""
    if given:
        return Path(given), ORIGIN_OPTION
    env = os.environ.get(CONFIG_ENV, "").strip()
    if env:
        return Path(env), ORIGIN_ENV
    return Path(DEFAULT_CONFIG_NAME), ORIGIN_DEFAULT


def load_config(path: Path | str | None = None, origin: str | None = None) -> Config:
    """Read `path` (default ./wastewatch.yaml); `origin` (how it was found) goes into a not-found error."""
    p = Path(path) if path else Path(DEFAULT_CONFIG_NAME)
    if not p.exists():
        if origin in (None, ORIGIN_DEFAULT) and p == Path(DEFAULT_CONFIG_NAME):
            raise ConfigError(
                f"{p}: configuration file not found: no --config given, {CONFIG_ENV} not set and no "
                f"{DEFAULT_CONFIG_NAME} in {Path.cwd()}. Try the demo (`make demo`, then "
                f"`wastewatch --config demo/{DEFAULT_CONFIG_NAME} ...`) or write a starter file with "
                "`wastewatch init`"
            )
        raise ConfigError(
            f"{p}: configuration file not found (from {origin or ORIGIN_OPTION}; create one with "
            "`wastewatch init PATH`, or try `make demo`)"
        )
    if p.is_dir():
        raise ConfigError(f"{p}: is a folder, expected a wastewatch.yaml file")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read configuration: {exc}") from None
    return parse_config(text, p)


STARTER_CONFIG = """\
# wastewatch configuration. Paths are relative to this file's folder.
# Reference: README.md, section "Configuration".

# The embedded DuckDB warehouse (written by ingest/evaluate; a read-only copy is published beside it
# as <name>.published.duckdb after every run, for ad-hoc queries).
warehouse: warehouse/wastewatch.duckdb

# Weekly reports land in <reports_dir>/<ISO week>/ (report.html, report.md, findings.csv, ...).
reports_dir: reports

# Billing currency used when a bill names none.
currency: USD

# The first week that can be evaluated and reported: the week of this day (default: the week of the
# earliest data in the warehouse). Set it to report on a historical trace, or to hide older weeks.
# history_start: 2020-01-06

# Resource limits of the warehouse connection (unset: DuckDB's defaults, i.e. 80% of RAM and every core).
# Beyond memory_limit DuckDB spills to temp_directory (default: <warehouse>.tmp beside the warehouse).
duckdb: {}
# e.g. duckdb: {memory_limit: 1GB, threads: 2, temp_directory: warehouse/spill}

# Raw GPU samples older than this many days are dropped once rolled up to the hour; the hourly roll-up and
# the marts keep them (unset: every sample is kept). A large fleet grows gpu_samples by millions a day.
# retention: {gpu_samples_days: 35}

# Where to read from. Each source: name (unique), kind (one reader each), uri (a file, a folder, a glob,
# or s3://bucket/prefix/), optional endpoint_url/region for S3-compatible stores, and reader options.
sources:
  - name: focus-main
    kind: focus                # FOCUS 1.0, 1.1, 1.2 (and 1.3's renamed columns); CSV, CSV.gz or Parquet
    uri: landing/billing/focus/
  - name: gpu-nodes
    kind: nvidia_smi           # nvidia-smi --query-gpu=... --format=csv output, one file per host
    uri: landing/telemetry/nvidia-smi/
    options:
      timezone: UTC            # zone of nvidia-smi's local timestamps
      # host: gpu-node-01      # fixed host for every file; default: the file name up to its first '_' or '.csv'
      # host_pattern: '(?P<host>[^/]+)/[^/]+$'   # or a regex over the path relative to uri
#  - name: cur2-prod
#    kind: aws_cur2           # CUR 2.0 / Data Exports: Parquet or CSV.gz, BILLING_PERIOD= folders + manifests
#    uri: s3://acme-billing/cur2/
#    endpoint_url: http://127.0.0.1:9000   # S3-compatible stores only; AWS needs none
# Other billing kinds (docs/billing.md lists every option):
# - {name: cur-legacy, kind: aws_cur, uri: landing/billing/cur/}     # legacy CUR, manifests followed
# - {name: azure-ea, kind: azure, uri: landing/billing/azure/, options: {dataset: amortized}}  # or actual
# - {name: gcp-billing, kind: gcp, uri: landing/billing/gcp/}        # BigQuery export, CSV or NDJSON
# Telemetry kept in a metrics store: hourly statistics asked by PromQL, not raw samples (docs/telemetry.md):
# - {name: prom, kind: prometheus, uri: "https://prometheus:9090", options: {match: 'job="dcgm-exporter"', bearer_token_env: PROM_TOKEN}}

# Canonical tag keys and the billing tag keys they come from (first match wins; matching ignores case,
# surrounding spaces and the prefixes user:, resourceTags/user:, user_). `host` maps telemetry host
# names to billed resources.
tags:
  team: [team, Team, "user:team", user_team]
  project: [project, "user:project"]
  owner: [owner, created_by]
  job_id: [job_id, run_id, slurm_job_id]
  host: [hostname, Name, host]

# Where checkpoints live and how a path names its run (used by the storage rules).
checkpoints: []
#  - "s3://acme-ckpt/{project}/{run_id}/**"

# Roots whose sub-folders are datasets (used by the duplicate-dataset rule).
datasets: []
#  - "s3://acme-data/datasets/"

# Per-rule parameter overrides; `wastewatch rules show GPU001` lists each rule's parameters.
rules: {}
#  GPU001: {max_util_pct: 5, min_idle_hours: 2}

# Settings of the commitment and spot advice (docs/advice.md); advice is never added to waste or spend.
advice: {}
#  commitment: {lookback_weeks: 4, percentile: 0.1, discounts: {p4d: 0.3}}
#  spot: {interruption_rate: 0.005, restart_minutes: 15, spot_discounts: {p5: 0.5}}

# Monthly budgets in the billing currency.
budgets: {}
#  team: {nlp: 40000, vision: 15000}

# A consolidated view in one currency beside the per-currency figures (leave out for none). Rates are given
# here, dated, and never fetched; a currency without a rate is named in the report as not converted.
# reporting_currency: USD
# exchange_rates: [{from: EUR, to: USD, rate: 1.08, valid_from: 2026-11-01}]

# Fallback prices where the bill gives no unit price.
prices:
  storage_gb_month: {STANDARD: 0.023, STANDARD_IA: 0.0125, GLACIER_IR: 0.004}

# Cost models for GPU hosts no bill lists (owned or rented clusters); first match wins, a billed host
# keeps its bill. docs/gpu.md "Cost models" gives the formulas.
pricing: []
#  - match: {host: "dgx-*"}              # glob on host; or gpu_model, cluster, tag: {team: nlp}
#    owned: {purchase_price: 320000, currency: USD, life_years: 4, gpus: 8,
#            pue: 1.3, kwh_price: 0.11, facility_per_month: 900}
#  - match: {host: "*"}
#    contract: {per_gpu_hour: 2.10, currency: USD}

# The daily alert for live, expensive waste (`wastewatch alert`, docs/alerts.md): idle GPU instances
# (GPU001) and failed jobs and zombies (GPU004) still running and costing at least min_daily_waste over the
# last 24 hours of data, posted once per finding until it changes (to notify.webhook_url unless it names its own).
# alert: {min_daily_waste: 100, live_hours: 3, change_pct: 25}

# `wastewatch remediate apply` (docs/remediation.md): targets tagged protect_tag are never touched.
# remediation: {protect_tag: "wastewatch:protect", s3_endpoint_url: http://127.0.0.1:9000}
"""
