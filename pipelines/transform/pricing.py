"""The config's `pricing:` section written to the warehouse, where the marts read the cost models from."""

from __future__ import annotations

import duckdb

from pipelines.config import Config
from pipelines.warehouse import utcnow


def _glob(pattern: str | None, contains: bool = False) -> str | None:
    """A match glob as the marts compare it: lower-case; with `contains`, a plain word matches anywhere."""
    if pattern is None:
        return None
    text = pattern.strip().lower()
    return f"*{text}*" if contains and not any(ch in text for ch in "*?[") else text


def write_pricing(con: duckdb.DuckDBPyConnection, config: Config) -> int:
    """Replace `pricing_entries` with the config's `pricing:` section (inside the caller's transaction).

    The marts read the cost models from the warehouse, so a run prices with the config it was started with.
    """
    con.execute("delete from pricing_entries")
    now = utcnow()
    where = config.path or "wastewatch.yaml"
    for position, entry in enumerate(config.pricing, start=1):
        m, c, o = entry.match, entry.contract, entry.owned
        tags = m.tag or {}
        con.execute(
            "insert into pricing_entries values ($position, $basis, $host, $gpu_model, $cluster, "
            "map(list_transform($tag_keys, lambda k: normalize_tag_key(k)), $tag_values), $currency, "
            "$per_gpu_hour, $per_node_hour, $valid_from, $valid_to, $gpus, $purchase_price, $residual_value, "
            "$life_years, $in_service, $pue, $kwh_price, $facility_per_month, $nameplate_watts, "
            "$host_overhead, $source, $now)",
            {
                "position": position,
                "basis": entry.basis,
                "host": _glob(m.host),
                "gpu_model": _glob(m.gpu_model, contains=True),
                "cluster": _glob(m.cluster),
                "tag_keys": list(tags),
                "tag_values": list(tags.values()),
                "currency": c.currency if c else o.currency if o else None,
                "per_gpu_hour": c.per_gpu_hour if c else None,
                "per_node_hour": c.per_node_hour if c else None,
                "valid_from": c.valid_from if c else None,
                "valid_to": c.valid_to if c else o.retired if o else None,  # the last day either model prices
                "gpus": c.gpus if c else o.gpus if o else None,
                "purchase_price": o.purchase_price if o else None,
                "residual_value": o.residual_value if o else None,
                "life_years": o.life_years if o else None,
                "in_service": o.in_service if o else None,
                "pue": o.pue if o else None,
                "kwh_price": o.kwh_price if o else None,
                "facility_per_month": o.facility_per_month if o else None,
                "nameplate_watts": o.nameplate_watts if o else None,
                "host_overhead": o.host_overhead if o else None,
                "source": f"{where}: pricing[{position - 1}]",
                "now": now,
            },
        )
    return len(config.pricing)
