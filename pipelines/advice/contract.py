"""The advice contract: an advisor's identity and typed params, and the columns every advice row carries."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

import duckdb
from pydantic import BaseModel, ConfigDict

from rules import Window

# name -> DuckDB type, in the order of the `advice` table (sql/raw/advice.sql)
ADVICE_COLUMNS: dict[str, str] = {
    "advice_id": "VARCHAR",
    "advisor_id": "VARCHAR",
    "advisor_name": "VARCHAR",
    "kind": "VARCHAR",
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
    "estimated_saving": "DECIMAL(18,6)",
    "currency": "VARCHAR",
    "basis": "VARCHAR",
    "risk": "VARCHAR",
    "params": "JSON",
    "detected_at": "TIMESTAMP",
}
# what an advisor returns per item; the contract adds identity, window, params and timestamps
ITEM_KEYS = (
    "resource_id", "resource_type", "provider", "account_id", "region_id", "team", "project", "owner",
    "job_id", "status", "reason", "evidence", "estimated_saving", "currency", "basis", "risk",
)  # fmt: skip
STATUSES = ("recommended", "not_recommended", "insufficient_data")
Kind = Literal["commitment", "spot", "checkpoint"]


class AdviceParams(BaseModel):
    """Base of every advisor's settings: typed, defaults documented, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def advice_id(advisor_id: str, resource_id: str | None, week: str) -> str:
    """Stable across re-runs of the same week: sha1(advisor, subject, ISO week)."""
    return hashlib.sha1(f"{advisor_id}|{resource_id or ''}|{week}".encode()).hexdigest()  # noqa: S324 - an id


@dataclass(frozen=True)
class Advisor:
    """One kind of advice; `advise` reads marts only and returns ITEM_KEYS dicts."""

    id: str
    name: str
    kind: Kind
    summary: str
    params: type[AdviceParams]
    requires: tuple[str, ...]
    advise: Callable[[duckdb.DuckDBPyConnection, Window, Any], list[dict[str, Any]]]

    @property
    def key(self) -> str:
        """The advisor's name in `wastewatch.yaml` (`advice: {commitment: {...}}`) and its asset key."""
        return self.kind

    def make_params(self, overrides: dict[str, Any] | None = None) -> AdviceParams:
        return self.params.model_validate(overrides or {})

    def rows(
        self, con: duckdb.DuckDBPyConnection, window: Window, params: AdviceParams, detected_at: datetime
    ) -> list[dict[str, Any]]:
        """The advisor's items for `window`, completed to ADVICE_COLUMNS."""
        params_json = json.dumps(params.model_dump(mode="json"), sort_keys=True)
        out = []
        for item in self.advise(con, window, params):
            missing = [k for k in ITEM_KEYS if k not in item]
            if missing:
                raise ValueError(f"{self.id}: advice item without {missing}")
            if item["status"] not in STATUSES:
                raise ValueError(f"{self.id}: unknown status {item['status']!r}; expected one of {STATUSES}")
            out.append(
                {
                    "advice_id": advice_id(self.id, item["resource_id"], window.label),
                    "advisor_id": self.id,
                    "advisor_name": self.name,
                    "kind": self.kind,
                    "week_start": window.start.date(),
                    "week_end": window.end.date(),
                    **{k: item[k] for k in ITEM_KEYS if k != "evidence"},
                    "evidence": json.dumps(item["evidence"], sort_keys=True, default=str),
                    "params": params_json,
                    "detected_at": detected_at,
                }
            )
        return out


def amount(x: float) -> Decimal:
    """An amount as the advice table stores it: a Decimal rounded to 6 places."""
    return Decimal(str(round(x, 6)))


def job_type_item(
    job_type: str,
    where: tuple[str, str | None, str],
    *,
    team: str | None,
    project: str | None,
    status: str,
    reason: str,
    evidence: dict[str, Any],
    saving: Decimal,
    currency: str,
    basis: str,
    risk: str,
) -> dict[str, Any]:
    """One advice item about a recurring job type where it ran (`where`: provider, region, instance family),
    named `<job type>@<provider>/<region>/<family>` as ADV002 and ADV003 name their subject."""
    provider, region, family = where
    return {
        "resource_id": f"{job_type}@{provider}/{region or 'no-region'}/{family}",
        "resource_type": "job type",
        "provider": provider,
        "account_id": None,
        "region_id": region,
        "team": team,
        "project": project,
        "owner": None,
        "job_id": None,
        "status": status,
        "reason": reason,
        "evidence": evidence,
        "estimated_saving": saving,
        "currency": currency,
        "basis": basis,
        "risk": risk,
    }
