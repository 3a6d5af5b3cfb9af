"""The config's `showback:` rules written to the warehouse, where the showback mart reads them from."""

from __future__ import annotations

import duckdb

from pipelines.config import Config
from pipelines.warehouse import utcnow


def _globs(values: list[str] | None) -> list[str] | None:
    """Filter globs as the mart compares them: trimmed and lower-cased (NULL: the filter is not given)."""
    return [v.strip().lower() for v in values] if values else None


def write_showback(con: duckdb.DuckDBPyConnection, config: Config) -> int:
    """Replace `showback_rules` with the config's `showback:` rules (inside the caller's transaction).

    The showback mart reads the rules from the warehouse, so a run allocates with the config it was
    started with.
    """
    con.execute("delete from showback_rules")
    now = utcnow()
    where = config.path or "wastewatch.yaml"
    for position, rule in enumerate(config.showback, start=1):
        m = rule.match
        shares = rule.shares or {}
        con.execute(
            "insert into showback_rules values ($position, $name, $providers, $services, $charge_categories, "
            "$accounts, $resources, "
            "list_transform($tag_present, lambda k: normalize_tag_key(k)), "
            "list_transform($tag_absent, lambda k: normalize_tag_key(k)), "
            "$split, $measure, $cluster, $teams, "
            "case when $fixed then map($share_teams, $share_percents) end, $source, $now)",
            {
                "position": position,
                "name": rule.name,
                "providers": _globs(m.provider),
                "services": _globs(m.service),
                "charge_categories": _globs(m.charge_category),
                "accounts": _globs(m.account),
                "resources": _globs(m.resource),
                "tag_present": m.tag_present,
                "tag_absent": m.tag_absent,
                "split": rule.split,
                "measure": rule.by,
                "cluster": rule.cluster.strip().lower() if rule.cluster else None,
                "teams": rule.teams,
                "fixed": rule.split == "fixed",
                "share_teams": list(shares),
                "share_percents": [str(v) for v in shares.values()],
                "source": f"{where}: showback[{position - 1}]",
                "now": now,
            },
        )
    return len(config.showback)
