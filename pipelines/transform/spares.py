"""The config's `spares:` section written to the warehouse, where gpu_claims and the report read it."""

from __future__ import annotations

import duckdb

from pipelines.config import Config
from pipelines.warehouse import utcnow


def write_spares(con: duckdb.DuckDBPyConnection, config: Config) -> int:
    """Replace `spare_pools` with the config's `spares:` section (inside the caller's transaction); the
    number of rows written (0 or 1). The marts read it from the warehouse, so a run claims spare hours with
    the config it was started with."""
    con.execute("delete from spare_pools")
    spares = config.spares
    if spares is None:
        return 0
    tags = spares.match.tag or {}
    con.execute(
        "insert into spare_pools values (1, $hosts, "
        "map(list_transform($tag_keys, lambda k: normalize_tag_key(k)), $tag_values), $share, $source, $now)",
        {
            "hosts": [h.strip().lower() for h in spares.match.host] if spares.match.host else None,
            "tag_keys": list(tags),
            "tag_values": list(tags.values()),
            "share": spares.policy_share,
            "source": f"{config.path or 'wastewatch.yaml'}: spares",
            "now": utcnow(),
        },
    )
    return 1
