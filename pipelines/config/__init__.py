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
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from typing_extensions import TypedDict

from pipelines.config.sections import (  # noqa: F401 - re-exported: callers import them from pipelines.config
    _CURRENCY,
    DEFAULT_HOST_OVERHEAD,
    SPARK_MARTS,
    SPARK_MARTS_LATER,
    AlertConfig,
    ContractPricing,
    DuckDBSettings,
    ExchangeRate,
    NotifyConfig,
    OwnedPricing,
    Prices,
    PricingEntry,
    PricingMatch,
    RemediationConfig,
    Retention,
    ShowbackMatch,
    ShowbackRule,
    SpareMatch,
    Spares,
    SparkSettings,
    _Strict,
)
from pipelines.config.starter import STARTER_CONFIG  # noqa: F401 - re-exported for `wastewatch init`
from pipelines.config.urls import EndpointUrl, check_endpoint, check_source_uri
from pipelines.errors import ConfigError
from pipelines.sources.registry import EXPECTED_EVERY, HOST_SILENCE, kind_names, options_of, source_kind
from pipelines.units import parse_duration

M = TypeVar("M", bound=BaseModel)

DEFAULT_CONFIG_NAME = "wastewatch.yaml"

# the kinds whose uri is an HTTP API's base URL rather than files
HTTP_KINDS = ("prometheus",)

CanonicalTag = Literal["team", "project", "owner", "job_id", "host"]
BudgetDimension = Literal["team", "project"]

DEFAULT_TAGS: dict[str, list[str]] = {
    "team": ["team", "Team", "user:team", "user_team"],
    "project": ["project", "Project", "user:project"],
    "owner": ["owner", "Owner", "created_by"],
    "job_id": ["job_id", "run_id", "slurm_job_id"],
    "host": ["hostname", "Name", "host"],
}


class Source(_Strict):
    """One place wastewatch reads files from."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", description="Unique name, used in the ledger.")
    kind: str = Field(description="One of the registered kinds (pipelines/sources/registry.py).")
    uri: str = Field(description="File, folder, glob, s3://bucket/prefix/, or an API's http(s):// URL.")
    endpoint_url: EndpointUrl | None = Field(None, description="S3-compatible endpoint (MinIO, Ceph, ...).")
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

    @field_validator("uri")
    @classmethod
    def _uri(cls, value: str, info: ValidationInfo) -> str:
        check_source_uri(value, str(info.data.get("kind", "")), HTTP_KINDS)
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


# a storage-growth budget's amount: "10%" of the scope's bytes a month, or "500 GiB" / "2 TiB" a month
_GROWTH = re.compile(
    r"(?P<amount>\d+(?:\.\d+)?)\s*(?P<unit>%|GiB|TiB)\s*(?:(?:/|a |per )\s*month)?", flags=re.IGNORECASE
)
# how deep a bucket prefix a budget may name: the folders sql/marts/storage_prefix_days.sql keeps
STORAGE_PREFIX_DEPTH = 3


def _growth_limit(value: Any) -> dict[str, float]:
    """`10%` -> {"percent": 10.0}; `500 GiB`, `2 TiB` -> {"gib": ...}: the shape COST004's params take."""
    if isinstance(value, dict):  # already in that shape: one of percent or gib, not below 0
        amounts = [v for k, v in value.items() if k in ("percent", "gib")]
        if len(value) != 1 or len(amounts) != 1 or not isinstance(amounts[0], int | float) or amounts[0] < 0:
            raise ValueError(
                f"{value!r}: give one of {{percent: P}} or {{gib: G}}, not below 0, or '10%' / '500 GiB'"
            )
        return value
    text = str(value).strip()
    m = _GROWTH.fullmatch(text)
    if isinstance(value, bool) or m is None:
        raise ValueError(
            f"{text!r} is not a monthly growth: write a share of the stored bytes like '10%' or an amount "
            "like '500 GiB' or '2 TiB' (a month)"
        )
    amount, unit = float(m.group("amount")), m.group("unit").lower()
    if unit == "%":
        return {"percent": amount}
    return {"gib": amount * (1024 if unit == "tib" else 1)}


def _growth_scope(value: str) -> str:
    """A storage-growth budget's scope: `s3://bucket/[prefix/]`, a file-system path, `team:NAME` or
    `project:NAME`; folders get their trailing '/' (a scope is a folder, never part of a name)."""
    text = value.strip()
    kind, _, name = text.partition(":")
    if kind in ("team", "project") and name.strip() and not text.startswith(("team://", "project://")):
        return f"{kind}:{name.strip()}"
    if text.startswith("s3://"):
        bucket, _, prefix = text[5:].partition("/")
        if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", bucket):
            raise ValueError(f"{bucket!r} is not an S3 bucket name (3-63 characters: a-z, 0-9, '.', '-')")
        folders = [f for f in prefix.split("/") if f]
        if len(folders) > STORAGE_PREFIX_DEPTH:
            raise ValueError(
                f"a prefix {len(folders)} folders deep; storage growth is measured at most "
                f"{STORAGE_PREFIX_DEPTH} folders below the bucket: name a shorter prefix"
            )
        return "s3://" + "/".join([bucket, *folders]) + "/"
    if text.startswith("/"):
        return text.rstrip("/") + "/"
    raise ValueError(
        "not a storage scope: write s3://bucket/ or s3://bucket/prefix/, a file-system path "
        "(/data/ckpt/), team:NAME or project:NAME"
    )


def _distinct_scopes(value: Any) -> Any:
    """Two keys naming the same folder (`s3://b` and `s3://b/`) would keep one budget silently."""
    if not isinstance(value, dict):
        return value
    seen: dict[str, str] = {}
    for key in value:
        try:
            scope = _growth_scope(str(key))
        except ValueError:
            continue  # the key's own check names it
        if scope in seen:
            raise ValueError(f"{seen[scope]!r} and {key!r} are the same scope ({scope}): keep one")
        seen[scope] = str(key)
    return value


GrowthScope = Annotated[str, AfterValidator(_growth_scope)]
GrowthLimit = Annotated[dict[Literal["percent", "gib"], float], BeforeValidator(_growth_limit)]
GrowthBudgets = Annotated[dict[GrowthScope, GrowthLimit], BeforeValidator(_distinct_scopes)]


class Budgets(TypedDict, total=False):
    """`budgets:`: monthly spend per team or project (billing currency), and storage-growth limits."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    team: dict[str, Decimal]
    project: dict[str, Decimal]
    # scope -> the most its stored bytes may grow in a month (COST004)
    storage_growth: GrowthBudgets


# the advisors `advice:` configures (pipelines/advice/): their settings are checked when they run
AdvisorKey = Literal["commitment", "spot", "checkpoint"]


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
        description="Settings of the commitment, spot and checkpoint-cadence advice (docs/advice.md), checked "
        "when they run.",
    )
    budgets: Budgets = Field(
        default_factory=lambda: Budgets(),
        description="Monthly spend budgets per 'team' or 'project', and `storage_growth` limits per bucket, "
        "prefix, team or project ('10%' or '500 GiB' a month).",
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
    showback: list[ShowbackRule] = Field(
        default_factory=list,
        description="Showback rules, in order: pools of shared cost and how each is split among teams "
        "(docs/showback.md); what no rule takes stays unallocated.",
    )
    spares: Spares | None = Field(
        None,
        description="Hot-spare hosts kept idle on purpose and the share of the fleet's GPU-hours the policy "
        "allows them, e.g. {match: {tag: {role: hot-spare}}, policy_share: 0.05}.",
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

    @field_validator("showback")
    @classmethod
    def _unique_showback(cls, value: list[ShowbackRule]) -> list[ShowbackRule]:
        seen: set[str] = set()
        for rule in value:
            if rule.name in seen:
                raise ValueError(f"two showback rules are named {rule.name!r}; names must be unique")
            seen.add(rule.name)
        return value

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

    def source_root(self, source: Source) -> Path:
        """The folder a local source's files are named relative to (what `host_pattern` reads): a glob's
        fixed part, a file's folder, or the folder the uri names."""
        location = self.source_location(source)
        if any(ch in location for ch in "*?["):
            return Path(location.split("*")[0].rsplit("/", 1)[0] or "/")
        return Path(location).parent if Path(location).is_file() else Path(location)

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


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, noting every key a mapping gives twice (YAML keeps the last one silently: two
    `sources:` blocks would drop the first block's sources)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.key_paths: dict[int, str] = {}  # id of a mapping node -> its place (`notify`, `sources[0]`)
        self.duplicates: list[tuple[int, str, int]] = []  # (line given again, key path, first line)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *defaults`: keys given beside it override
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                earlier = first.setdefault(key, key_node)
            except TypeError:  # an unhashable key: the base class says so
                continue
            if earlier is not key_node:
                where = self.key_paths.get(id(node), "")
                line, first_line = key_node.start_mark.line + 1, earlier.start_mark.line + 1
                self.duplicates.append((line, f"{where}.{key}" if where else str(key), first_line))
        return super().construct_mapping(node, deep)


def _key_paths(root: yaml.Node | None) -> dict[int, str]:
    """Each mapping node's place in the file, as `_format_loc` writes it."""
    out: dict[int, str] = {}
    stack: list[tuple[yaml.Node | None, str]] = [(root, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, yaml.MappingNode):
            out[id(node)] = where
            for key_node, value_node in node.value:
                key = str(key_node.value)
                stack.append((value_node, f"{where}.{key}" if where else key))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(node.value))
    return out


def _read_yaml(text: str, path: Path) -> tuple[yaml.Node | None, Any]:
    """The YAML's node tree (for line numbers) and its data; ConfigError for bad YAML and duplicate keys."""
    loader = _UniqueKeyLoader(text)
    root = None
    try:
        root = loader.get_single_node()
        loader.key_paths = _key_paths(root)
        data = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where}: not valid YAML: {problem}") from None
    except ValueError as exc:  # YAML reads 2020-13-01 as a date and fails building it
        raise ConfigError(f"{_bad_timestamp(root, path)}: not a valid date: {exc}") from None
    finally:
        loader.dispose()
    if loader.duplicates:
        raise ConfigError(
            "\n".join(
                f"{path}:{second}: {key}: given twice "
                + (f"(lines {first} and {second})" if first != second else f"on line {second}")
                + "; YAML would keep only the second silently: keep one"
                for second, key, first in sorted(loader.duplicates)
            )
        )
    return root, data


def parse_config(text: str, path: Path) -> Config:
    """Parse and validate YAML text; errors name `path`, the line and the key."""
    root, data = _read_yaml(text, path)
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
    problem = warehouse_problem(config.warehouse_path)
    if problem:
        line = _line_of(root, ("warehouse",)) if "warehouse" in data else None  # else the default path
        raise ConfigError(f"{path}:{line}: warehouse: {problem}" if line else f"{path}: warehouse: {problem}")
    _check_source_options(config, root, path)
    _check_alert(config, root, path)
    return _check_rule_overrides(config, root, path)


# bytes 8-11 of every DuckDB database file (after its header's checksum)
_DUCKDB_MAGIC = b"DUCK"


def warehouse_problem(p: Path) -> str | None:
    """Why `p` cannot be a warehouse (a folder, a device, a file of something else), or None: a DuckDB file
    or nothing yet."""
    try:
        if not p.exists():
            return None
        if p.is_dir():
            return f"{p} is a folder, not a DuckDB file: name the file in it, e.g. {p / 'wastewatch.duckdb'}"
        if not p.is_file():
            return f"{p} is not a DuckDB file (a device, pipe or socket): name a DuckDB file, or where to create one"
        with p.open("rb") as f:
            head = f.read(12)
    except OSError:
        return None  # unreadable: DuckDB's own error says why
    if head and head[8:12] != _DUCKDB_MAGIC:
        return (
            f"{p} is not a DuckDB file (it holds something else): name a DuckDB file, or where to create one"
        )
    return None


def _check_alert(config: Config, root: yaml.Node | None, path: Path) -> None:
    """An `alert:` section needs somewhere to post: its own webhook_url or notify's."""
    if config.alert is not None and config.alert_webhook_url is None and config.alert.file is None:
        line = _line_of(root, ("alert",))
        raise ConfigError(
            f"{path}:{line}: alert.webhook_url: required key is missing (the alert posts to "
            "alert.webhook_url, else to notify.webhook_url, or writes to alert.file; none is set)"
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
            continue
        # the options models (pipelines/sources/options.py) keep an endpoint as a plain string
        endpoint = source.options.get("endpoint_url")
        if isinstance(endpoint, str):
            try:
                check_endpoint(endpoint)
            except ValueError as exc:
                loc = ("sources", i, "options", "endpoint_url")
                problems.append(f"{path}:{_line_of(root, loc)}: {_format_loc(loc)}: {exc}")
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
