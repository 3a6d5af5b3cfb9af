"""The rule contract: identity, typed parameters, the time window and the finding schema.

A rule reads marts only (never raw files or staging), takes `(con, window, params)` and returns findings
with exactly the columns of FINDING_COLUMNS. Nothing here imports Dagster, and polars is imported by the
functions that make frames: the definitions import the rules (an ingest's too), which runs none.
"""

from __future__ import annotations

import hashlib
import json
import re
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import duckdb
from pydantic import BaseModel, ConfigDict, PrivateAttr

if TYPE_CHECKING:
    import polars as pl

Category = Literal[
    "idle", "overprovisioned", "orphaned", "duplicate", "placement", "retention", "failed", "unattributed",
    "anomaly", "budget",
]  # fmt: skip
# Attention rules (spend with no owner, budgets, anomalies) point at money that needs a person, not at money
# burnt for nothing: their findings are reported apart and never added to a waste total. For them
# `estimated_waste` is the amount at stake (untagged spend, forecast overrun, excess over the baseline),
# so every waste total is `status = 'waste' and category not in ATTENTION_CATEGORIES`.
ATTENTION_CATEGORIES = ("unattributed", "anomaly", "budget")
Severity = Literal["low", "medium", "high"]
Lifecycle = Literal["preview", "stable", "deprecated"]
STATUSES = ("waste", "suspect", "insufficient_data")

DOC_HEADINGS = (
    "What it detects",
    "Why it is waste",
    "How it is computed",
    "Thresholds",
    "Known false positives",
    "Example finding",
    "Remediation",
    "References",
)

# name -> DuckDB type, in the order every findings table and file carries them
FINDING_COLUMNS: dict[str, str] = {
    "finding_id": "VARCHAR",
    "rule_id": "VARCHAR",
    "rule_name": "VARCHAR",
    "category": "VARCHAR",
    "severity": "VARCHAR",
    "week_start": "DATE",
    "week_end": "DATE",
    "resource_id": "VARCHAR",
    "resource_type": "VARCHAR",
    "provider": "VARCHAR",
    "account_id": "VARCHAR",
    "region_id": "VARCHAR",
    "team": "VARCHAR",
    "project": "VARCHAR",
    "owner": "VARCHAR",
    "job_id": "VARCHAR",
    "status": "VARCHAR",
    "reason": "VARCHAR",
    "evidence": "JSON",
    "estimated_waste": "DECIMAL(18,6)",
    "currency": "VARCHAR",
    "waste_basis": "VARCHAR",
    "params": "JSON",
    "detected_at": "TIMESTAMP",
}

# what a rule's query must return; the contract adds identity, window, params and timestamps
QUERY_COLUMNS = (
    "resource_id", "resource_type", "provider", "account_id", "region_id", "team", "project", "owner",
    "job_id", "status", "reason", "evidence", "estimated_waste", "currency", "waste_basis",
)  # fmt: skip


class RuleParams(BaseModel):
    """Base of every rule's thresholds: typed, defaults documented, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # what the rule's SQL takes from other rules' params (`Rule.shared_params`: the GPU rules' claim
    # thresholds), set by `Rule.make_params` from the config; not the rule's own params, so never validated
    # against its model nor written into its findings
    _shared: dict[str, Any] | None = PrivateAttr(default=None)


@dataclass(frozen=True)
class Window:
    """A half-open UTC time window [start, end); reports use ISO weeks (Monday 00:00 UTC)."""

    start: datetime
    end: datetime

    @classmethod
    def iso_week(cls, week: str) -> Window:
        m = re.fullmatch(r"(\d{4})-W(\d{2})", week.strip())
        if not m:
            raise ValueError(f"{week!r} is not an ISO week like 2026-W48")
        year, num = int(m.group(1)), int(m.group(2))
        try:
            monday = date.fromisocalendar(year, num, 1)
        except ValueError:
            raise ValueError(f"{week!r}: week {num} does not exist in {year}") from None
        start = datetime(monday.year, monday.month, monday.day)
        return cls(start, start + timedelta(days=7))

    @classmethod
    def containing(cls, day: date) -> Window:
        y, w, _ = day.isocalendar()
        return cls.iso_week(f"{y}-W{w:02d}")

    @property
    def label(self) -> str:
        y, w, _ = self.start.date().isocalendar()
        return f"{y}-W{w:02d}"

    @property
    def hours(self) -> float:
        return (self.end - self.start).total_seconds() / 3600

    def previous(self) -> Window:
        return Window(self.start - timedelta(days=7), self.start)


@dataclass(frozen=True)
class Rule:
    """One waste rule. `query` is a SQL file returning QUERY_COLUMNS; `evaluate_fn` replaces it."""

    id: str
    name: str
    category: Category
    severity: Severity
    status: Lifecycle
    summary: str
    doc: str
    params: type[RuleParams]
    requires: tuple[str, ...]
    query: Path | None = None
    evaluate_fn: Callable[[duckdb.DuckDBPyConnection, Window, RuleParams], pl.DataFrame] | None = None
    aliases: tuple[str, ...] = field(default_factory=tuple)
    # parameters a rule takes from other parts of wastewatch.yaml (COST002: `budgets:`); called with the
    # Config, its result sits under the rule's own `rules:` overrides
    config_params: Callable[[Any], dict[str, Any]] | None = None
    # SQL parameters a rule takes from other rules' effective params (the GPU rules: `$claim_thresholds`,
    # every claiming rule's thresholds, rules/_claims.py); called with the rule, its own params and the Config
    # (None: the other rules' defaults)
    shared_params: Callable[[Rule, RuleParams, Any], dict[str, Any]] | None = None

    @property
    def folder(self) -> str:
        return f"{self.id.lower()}_{self.name.replace('-', '_')}"

    @property
    def attention(self) -> bool:
        """Reported apart from waste, never added to a waste total (see ATTENTION_CATEGORIES)."""
        return self.category in ATTENTION_CATEGORIES

    def make_params(self, overrides: dict[str, Any] | None = None, config: Any = None) -> RuleParams:
        """The effective params: defaults, then what `config_params` takes from `config`, then overrides."""
        base = self.config_params(config) if config is not None and self.config_params is not None else {}
        params = self.params.model_validate({**base, **(overrides or {})})
        if config is not None and self.shared_params is not None:
            params._shared = self.shared_params(self, params, config)
        return params

    def sql_params(self, window: Window, params: RuleParams, sql: str) -> dict[str, Any]:
        """The named parameters `sql` (the rule's query) takes: the window, the rule's params and what it
        shares with other rules (from the config `make_params` was given, else the other rules' defaults)."""
        shared = params._shared
        if shared is None and self.shared_params is not None:
            shared = self.shared_params(self, params, None)
        bind = {
            "window_start": window.start,
            "window_end": window.end,
            **params.model_dump(),
            **(shared or {}),
        }
        needed = set(re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", _strip_sql_comments(sql)))
        return {k: v for k, v in bind.items() if k in needed}

    def doc_sections(self) -> dict[str, str]:
        return parse_doc_sections(self.doc)

    def evaluate(
        self,
        con: duckdb.DuckDBPyConnection,
        window: Window,
        params: RuleParams | None = None,
        detected_at: datetime | None = None,
        run_on_empty: bool = False,
    ) -> pl.DataFrame:
        """Run the rule for `window`; returns FINDING_COLUMNS, one row per (rule, resource, week).

        A query rule whose marts (`requires`) are all empty finds nothing, and its query is not run (planning
        it is most of a rule's time on a small warehouse) unless `run_on_empty`: the query reads only those
        marts and the built-in catalogues, and finds nothing on an empty warehouse (both checked for every
        rule by tests/rules/test_catalogue.py; tests/rules/test_small_empty_marts.py compares the two)."""
        params = params or self.make_params()
        if self.evaluate_fn is not None:
            raw = self.evaluate_fn(con, window, params)
        elif not run_on_empty and all_empty(con, self.requires):
            return no_findings()
        else:
            assert self.query is not None, f"{self.id} has neither a query nor an evaluate function"
            sql = self.query.read_text(encoding="utf-8")
            raw = _run_query(con, sql, self.sql_params(window, params, sql))
        return self._complete(raw, window, params, detected_at or datetime.now(UTC).replace(tzinfo=None))

    def _complete(
        self, raw: pl.DataFrame, window: Window, params: RuleParams, detected_at: datetime
    ) -> pl.DataFrame:
        import polars as pl

        missing = [c for c in QUERY_COLUMNS if c not in raw.columns]
        if missing:
            raise ValueError(f"{self.id}: the rule returned no column(s) {missing}")
        bad = set(raw.get_column("status").unique().to_list()) - set(STATUSES)
        if bad:
            raise ValueError(f"{self.id}: unknown status {sorted(bad)}; expected one of {STATUSES}")
        week = window.label
        params_json = json.dumps(params.model_dump(mode="json"), sort_keys=True)
        out = raw.select(QUERY_COLUMNS).with_columns(
            pl.col("resource_id")
            .map_elements(lambda r: finding_id(self.id, r, week), return_dtype=pl.String)
            .alias("finding_id"),
            pl.lit(self.id).alias("rule_id"),
            pl.lit(self.name).alias("rule_name"),
            pl.lit(self.category).alias("category"),
            pl.lit(self.severity).alias("severity"),
            pl.lit(window.start.date()).alias("week_start"),
            pl.lit((window.end - timedelta(days=1)).date()).alias("week_end"),
            pl.lit(params_json).alias("params"),
            pl.lit(detected_at).alias("detected_at"),
            pl.col("evidence").cast(pl.String),
        )
        if out.get_column("finding_id").n_unique() != out.height:
            raise ValueError(f"{self.id}: more than one finding for the same resource and week")
        return out.select(list(FINDING_COLUMNS))


def polars_types() -> dict[str, Any]:
    """The polars type of each FINDING_COLUMNS type, as a rule's findings frame holds it."""
    import polars as pl

    return {
        "VARCHAR": pl.String,
        "JSON": pl.String,
        "DATE": pl.Date,
        "TIMESTAMP": pl.Datetime("us"),
        "DECIMAL(18,6)": pl.Decimal(18, 6),
    }


def no_findings() -> pl.DataFrame:
    """A findings frame without rows: FINDING_COLUMNS with their types."""
    import polars as pl

    types = polars_types()
    return pl.DataFrame(schema={name: types[kind] for name, kind in FINDING_COLUMNS.items()})


def all_empty(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...]) -> bool:
    """Whether none of `tables` (a rule's `requires`: mart names) holds a row, in one query; False for no
    tables (a rule that names no mart is run)."""
    if not tables:
        return False
    bad = [t for t in tables if not re.fullmatch(r"[a-z_][a-z0-9_]*", t)]
    if bad:
        raise ValueError(f"not a table name: {bad}")
    probes = " union all ".join(f"(select 1 from {t} limit 1)" for t in tables)  # noqa: S608 - names checked above
    (found,) = con.execute(f"select count(*) from ({probes})").fetchone() or (0,)  # noqa: S608 - the same
    return found == 0


def _run_query(con: duckdb.DuckDBPyConnection, sql: str, bind: dict[str, Any]) -> pl.DataFrame:
    """A rule's query run once, its rows as a polars frame (through Arrow, so the columns keep their types).

    `execute`, not `con.sql(...).pl()`: DuckDB's relation layer tokenises the query's text in Python to find
    its parameters and binds it apart before running it, about a third of a rule's time on a small warehouse.
    Its Arrow fetch warns that it copies the rows (a rule's findings: a few hundred at most)."""
    import polars as pl

    con.execute(sql, bind)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Arrow output on a DB-API result", UserWarning)
        table = con.to_arrow_table()
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def finding_id(rule_id: str, resource_id: str | None, week: str) -> str:
    """Stable across re-runs and weeks' re-evaluation: sha1 of rule, resource and ISO week."""
    key = f"{rule_id}|{resource_id or ''}|{week}".encode()
    return hashlib.sha1(key).hexdigest()[:16]


def finding_key(rule_id: str, resource_id: str | None) -> str:
    """The same finding from week to week: sha1 of rule and resource (no week).

    A pure function of two stored columns, so it is not stored; in SQL it is
    `substr(sha1(rule_id || '|' || coalesce(resource_id, '')), 1, 16)` (FINDING_KEY_SQL).
    """
    return hashlib.sha1(f"{rule_id}|{resource_id or ''}".encode()).hexdigest()[:16]


FINDING_KEY_SQL = "substr(sha1(rule_id || '|' || coalesce(resource_id, '')), 1, 16)"


def _strip_sql_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", "", sql)


def parse_doc_sections(doc: str) -> dict[str, str]:
    """Split a rule docstring into its fixed headings (a heading is a line equal to one of DOC_HEADINGS)."""
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in DOC_HEADINGS:
            current = stripped
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    # dedent the whole body (not only its first line), so indented YAML and lists keep their shape
    return {k: textwrap.dedent("\n".join(v)).strip() for k, v in sections.items()}
