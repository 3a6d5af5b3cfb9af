"""The showback mart's SQL on a small warehouse: hand-made rows of what it reads (cost_hourly, resources, the
jobs' GPU-hours, the buckets' bytes, findings) and the config's `showback:` rules written as a run writes
them. Each split method, the order of the rules, what stays unallocated, currencies kept apart, and every
cent of the bill on a team or on "unallocated"."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import parse_config
from pipelines.transform.showback import write_showback
from pipelines.warehouse import connect, rows, sql_text

NOV = date(2026, 11, 1)
HOUR = datetime(2026, 11, 10, 12)

MART_TABLES = """
create table cost_hourly (
    hour timestamp, resource_id varchar, billing_currency varchar, provider varchar, account_id varchar,
    service_name varchar, charge_category varchar, team varchar, project varchar, owner varchar,
    effective_cost decimal(38, 12));
create table resources (resource_id varchar, team varchar, tags map(varchar, varchar));
create table jobs_enriched (
    job_key varchar, cluster varchar, team varchar, gpus_requested integer, gpus_observed integer,
    started_at timestamp, ended_at timestamp, resource_ids varchar[]);
create table storage_prefix_days (inventory_date date, bucket varchar, bytes bigint);
"""


def _cost(
    con: duckdb.DuckDBPyConnection,
    cost: str,
    *,
    resource: str | None = None,
    service: str = "Amazon Elastic Compute Cloud",
    team: str | None = None,
    project: str | None = None,
    currency: str = "USD",
    charge: str = "Usage",
    account: str = "111122223333",
    hour: datetime = HOUR,
) -> None:
    con.execute(
        "insert into cost_hourly values ($hour, $resource, $currency, 'AWS', $account, $service, $charge, "
        "$team, $project, null, $cost)",
        {
            "hour": hour,
            "resource": resource,
            "currency": currency,
            "account": account,
            "service": service,
            "charge": charge,
            "team": team,
            "project": project,
            "cost": Decimal(cost),
        },
    )


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "w.duckdb")
    con.execute(MART_TABLES)
    return con


def _job(
    con: duckdb.DuckDBPyConnection,
    team: str,
    hours: float,
    *,
    gpus: int = 1,
    cluster: str | None = None,
    resources: list[str] | None = None,
    start: datetime = HOUR,
) -> None:
    """A scheduler job of `team` holding `gpus` GPUs for `hours`."""
    con.execute(
        "insert into jobs_enriched values ($key, $cluster, $team, $gpus, null, $start, $end, $resources)",
        {
            "key": f"slurm/{team}/{hours}/{gpus}/{cluster}",
            "cluster": cluster,
            "team": team,
            "gpus": gpus,
            "start": start,
            "end": start + timedelta(hours=hours),
            "resources": resources or [],
        },
    )


def _rules(con: duckdb.DuckDBPyConnection, tmp_path: Path, yaml: str) -> None:
    config = parse_config(f"warehouse: {tmp_path / 'w.duckdb'}\nshowback:\n{yaml}", tmp_path / "w.yaml")
    write_showback(con, config)


def _showback(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    # the mart's one intermediate input, over the findings the test wrote
    con.execute(
        f"create or replace view int_counted_waste as\n{sql_text('intermediate', 'int_counted_waste')}"
    )
    con.execute(f"create or replace table showback as\n{sql_text('marts', 'showback')}")
    return rows(con, "select * from showback")


def _by(found: list[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], Decimal]:
    out: dict[tuple[Any, ...], Decimal] = {}
    for r in found:
        if r["kind"] == "waste":
            continue
        k = tuple(r[key] for key in keys)
        out[k] = out.get(k, Decimal(0)) + r["cost"]
    return {k: round(v, 2) for k, v in out.items()}


def test_even_split_and_direct_cost(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    _cost(con, "100", resource="i-a", team="ml", project="llm")
    _cost(con, "50", resource="i-b", team="infra")
    _cost(con, "10", service="AWS Support (Business)")  # no resource, no team
    _rules(
        con,
        tmp_path,
        "  - {name: support, match: {service: 'AWS Support*'}, split: even}\n",
    )
    found = _showback(con)
    assert _by(found, "team", "kind", "rule") == {
        ("ml", "direct", None): Decimal("100"),
        ("infra", "direct", None): Decimal("50"),
        ("infra", "allocated", "support"): Decimal("5"),
        ("ml", "allocated", "support"): Decimal("5"),
    }
    support = [r for r in found if r["rule"] == "support"]
    assert {r["service"] for r in support} == {"AWS Support (Business)"}
    assert {r["method"] for r in support} == {"even"}
    direct = next(r for r in found if r["team"] == "ml" and r["kind"] == "direct")
    assert (direct["project"], direct["month"], direct["week"]) == ("llm", NOV, date(2026, 11, 9))


def test_fixed_percentages_add_up_to_the_cent(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    # thirds of an odd amount: the parts telescope, so they add up to the pool exactly
    _cost(con, "100.01", charge="Tax", service="Tax")
    _rules(
        con,
        tmp_path,
        "  - name: tax\n    match: {charge_category: tax}\n    split: fixed\n"
        "    shares: {a: 33.333333, b: 33.333333, c: 33.333334}\n",
    )
    found = _showback(con)
    assert sum(r["cost"] for r in found) == Decimal("100.01")
    parts = _by(found, "team")
    assert round(parts[("a",)], 2) == Decimal("33.34")  # 100.01 x 33.333333 %
    assert round(parts[("c",)], 2) == Decimal("33.34")
    assert sorted(r["share"] for r in found) == pytest.approx([0.33333333, 0.33333333, 0.33333334])


def test_proportional_to_spend_and_teams_list(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    _cost(con, "300", resource="i-a", team="ml")
    _cost(con, "100", resource="i-b", team="infra")
    _cost(con, "600", resource="i-c", team="research")
    _cost(con, "40", resource="monitoring-1", service="Amazon CloudWatch")
    _rules(
        con,
        tmp_path,
        "  - name: monitoring\n    match: {resource: 'monitoring-*'}\n    split: proportional\n    by: spend\n"
        "    teams: [ml, infra]\n",
    )
    parts = _by(_showback(con), "team", "rule")
    assert parts[("ml", "monitoring")] == Decimal("30")
    assert parts[("infra", "monitoring")] == Decimal("10")
    assert ("research", "monitoring") not in parts


def test_shared_cluster_with_idle_capacity_follows_busy_gpu_hours(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    # the cluster's two nodes cost 80 whether busy or idle: ml's jobs held 3 GPU-hours there (one job named
    # by the scheduler's cluster, one by its node's `cluster` tag), infra's 1; research's 6 GPU-hours on
    # another cluster do not count
    _cost(con, "50", resource="i-node1", team="platform")
    _cost(con, "30", resource="i-node2", team="platform")
    con.execute("insert into resources values ('i-node1', 'platform', map {'cluster': 'shared-a100'})")
    con.execute("insert into resources values ('i-node2', 'platform', map {'cluster': 'shared-a100'})")
    _job(con, "ml", 1, gpus=2, cluster="Shared-A100")
    _job(con, "ml", 1, resources=["i-node2"])
    _job(con, "infra", 0.5, gpus=2, resources=["i-node1"])
    _job(con, "research", 6, cluster="other")
    _rules(
        con,
        tmp_path,
        "  - name: gpu-cluster\n    match: {tag_present: cluster}\n    split: proportional\n"
        "    by: busy_gpu_hours\n    cluster: shared-*\n",
    )
    found = _showback(con)
    assert _by(found, "team", "rule") == {
        ("ml", "gpu-cluster"): Decimal("60"),
        ("infra", "gpu-cluster"): Decimal("20"),
    }
    assert {r["measure"] for r in found} == {"busy_gpu_hours"}


def test_gpu_hours_and_storage_bytes(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    _cost(con, "10", service="Shared GPU Support")
    _cost(con, "9", service="Backup")
    _job(con, "ml", 3)
    _job(con, "infra", 1, gpus=2)
    con.execute("insert into resources values ('ml-data', 'ml', null), ('infra-logs', 'infra', null)")
    # each bucket's mean over the dates it was inventoried: ml 200, infra 100 (one date only)
    con.execute(
        "insert into storage_prefix_days values ('2026-11-02', 'ml-data', 200), ('2026-11-03', 'ml-data', 200),"
        " ('2026-11-02', 'infra-logs', 100)"
    )
    _rules(
        con,
        tmp_path,
        "  - {name: gpu-support, match: {service: shared gpu*}, split: proportional, by: gpu_hours}\n"
        "  - {name: backup, match: {service: backup}, split: proportional, by: storage_bytes}\n",
    )
    parts = _by(_showback(con), "team", "rule")
    assert parts[("ml", "gpu-support")] == Decimal("6")
    assert parts[("infra", "gpu-support")] == Decimal("4")
    assert parts[("ml", "backup")] == Decimal("6")  # 200 / (200 + 100)
    assert parts[("infra", "backup")] == Decimal("3")


def test_rules_apply_in_order_and_the_rest_stays_unallocated(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    _cost(con, "100", resource="i-a", team="ml")
    _cost(con, "7", resource="vpc-1", service="Amazon VPC")  # no team, and no rule takes it
    _cost(con, "20", resource="shared-db", service="Amazon RDS")  # both rules match: the first takes it
    _cost(con, "4", resource="shared-cache", service="Amazon ElastiCache", team="infra")  # tagged, yet pooled
    _rules(
        con,
        tmp_path,
        "  - {name: first, match: {resource: shared-db}, split: fixed, shares: {ml: 100}}\n"
        "  - {name: second, match: {resource: 'shared-*'}, split: fixed, shares: {infra: 100}}\n",
    )
    parts = _by(_showback(con), "team", "kind", "rule")
    assert parts == {
        ("ml", "direct", None): Decimal("100"),
        ("ml", "allocated", "first"): Decimal("20"),
        ("infra", "allocated", "second"): Decimal("4"),
        (None, "unallocated", None): Decimal("7"),
    }


def test_a_pool_with_nothing_to_split_by_stays_unallocated_naming_its_rule(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    _cost(con, "100", resource="i-a", team="ml")
    _cost(con, "12", service="Shared GPU Support")  # no job ran: nobody has GPU-hours
    _rules(con, tmp_path, "  - {name: gpu, match: {service: shared*}, split: proportional, by: gpu_hours}\n")
    parts = _by(_showback(con), "team", "kind", "rule")
    assert parts[(None, "unallocated", "gpu")] == Decimal("12")


def test_currencies_stay_apart(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    _cost(con, "100", resource="i-a", team="ml")
    _cost(con, "300", resource="vm-b", team="infra", currency="EUR")
    _cost(con, "100", resource="vm-c", team="ml", currency="EUR")
    _cost(con, "8", service="Support", currency="USD")
    _cost(con, "20", service="Support", currency="EUR")
    _rules(con, tmp_path, "  - {name: support, match: {service: support}, split: proportional, by: spend}\n")
    parts = _by(_showback(con), "currency", "team", "rule")
    # the USD pool goes to the only team with USD spend; the EUR pool 3:1
    assert parts[("USD", "ml", "support")] == Decimal("8")
    assert parts[("EUR", "infra", "support")] == Decimal("15")
    assert parts[("EUR", "ml", "support")] == Decimal("5")
    assert ("USD", "infra", "support") not in parts


def test_tag_filters_and_credits(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    _cost(con, "90", resource="i-a", team="ml")
    _cost(con, "10", resource="i-b", team="infra")
    _cost(con, "-5", charge="Credit", service="Credits")  # a credit follows the spend it covers
    _cost(con, "6", resource="i-c")  # no team tag: the untagged rule takes it
    _rules(
        con,
        tmp_path,
        "  - {name: credits, match: {charge_category: credit}, split: proportional, by: spend}\n"
        "  - {name: untagged, match: {tag_absent: team, resource: '*'}, split: even}\n",
    )
    parts = _by(_showback(con), "team", "rule")
    assert parts[("ml", "credits")] == Decimal("-4.5")
    assert parts[("infra", "credits")] == Decimal("-0.5")
    assert parts[("ml", "untagged")] == parts[("infra", "untagged")] == Decimal("3")


def test_waste_beside_cost_never_moved_or_counted_twice(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    _cost(con, "100", resource="i-a", team="ml", project="llm")
    _cost(con, "10", service="Support")
    for rule, waste, counted in (("GPU001", "40", True), ("GPU002", "5", False)):
        con.execute(
            "insert into findings (finding_id, rule_id, rule_name, category, severity, week_start, week_end, "
            "resource_id, team, project, status, reason, estimated_waste, currency, detected_at, counted) "
            "values ($id, $rule, $rule, 'gpu', 'high', '2026-11-09', '2026-11-15', 'i-a', 'ml', 'llm', "
            "'waste', 'idle', $waste, 'USD', now(), $counted)",
            {"id": rule, "rule": rule, "waste": Decimal(waste), "counted": counted},
        )
    _rules(con, tmp_path, "  - {name: support, match: {service: support}, split: even}\n")
    found = _showback(con)
    waste = [r for r in found if r["kind"] == "waste"]
    assert [(r["team"], r["project"], r["waste"], r["findings"], r["cost"]) for r in waste] == [
        ("ml", "llm", Decimal("40"), 1, Decimal(0))
    ]
    assert sum(r["waste"] for r in found) == Decimal("40")
    assert sum(r["cost"] for r in found) == Decimal("110")


def test_reconciliation_check_passes_and_catches_a_lost_cent(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    _cost(con, "100.005", resource="i-a", team="ml")
    _cost(con, "33.33", service="Support", currency="EUR")
    _cost(con, "7", service="Support")
    _rules(con, tmp_path, "  - {name: support, match: {service: support}, split: even, teams: [a, b, c]}\n")
    _showback(con)
    check = (
        Path(__file__).parents[2] / "sql" / "checks" / "assert_showback_reconciles_with_billing.sql"
    ).read_text()
    assert all(r["passed"] for r in rows(con, check))
    con.execute("update showback set cost = cost - 0.01 where team = 'b' and currency = 'EUR'")
    failed = {r["label"]: r for r in rows(con, check) if not r["passed"]}
    assert list(failed) == ["EUR"]
    assert "33.33" in failed["EUR"]["detail"]


def test_months_split_jobs_and_weeks_at_the_month_end(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    # ml's job runs 2 h in October and 2 h in November; infra's 2 h in November only
    _job(con, "ml", 4, start=datetime(2026, 10, 31, 22))
    _job(con, "infra", 2, start=datetime(2026, 11, 3))
    _cost(con, "10", service="GPU Support", hour=datetime(2026, 10, 31, 12))
    _cost(con, "10", service="GPU Support", hour=datetime(2026, 11, 3, 12))
    # Monday 30 November and Tuesday 1 December: one ISO week, two months
    _cost(con, "6", resource="i-a", team="ml", hour=datetime(2026, 11, 30, 12))
    _cost(con, "4", resource="i-a", team="ml", hour=datetime(2026, 12, 1, 12))
    _rules(con, tmp_path, "  - {name: gpu, match: {service: gpu*}, split: proportional, by: gpu_hours}\n")
    found = _showback(con)
    parts = _by(found, "month", "team", "rule")
    assert parts[(date(2026, 10, 1), "ml", "gpu")] == Decimal("10")
    assert parts[(date(2026, 11, 1), "ml", "gpu")] == Decimal("5")
    assert parts[(date(2026, 11, 1), "infra", "gpu")] == Decimal("5")
    weeks = _by(found, "month", "week", "kind")
    assert weeks[(date(2026, 11, 1), date(2026, 11, 30), "direct")] == Decimal("6")
    assert weeks[(date(2026, 12, 1), date(2026, 11, 30), "direct")] == Decimal("4")


def test_a_run_writes_the_config_rules_before_the_marts(tmp_path: Path) -> None:
    from pipelines.transform.build import prepare_marts

    con = connect(tmp_path / "w.duckdb")
    config = parse_config(
        f"warehouse: {tmp_path / 'w.duckdb'}\nshowback:\n"
        "  - {name: Support, match: {service: ' AWS Support* ', tag_absent: Team}, split: even, teams: [a]}\n"
        "  - {name: tax, match: {charge_category: Tax}, split: fixed, shares: {a: 60, b: 40}}\n",
        tmp_path / "w.yaml",
    )
    prepare_marts(con, config)
    found = rows(con, "select * from showback_rules order by position")
    assert [(r["position"], r["name"], r["split"]) for r in found] == [
        (1, "Support", "even"),
        (2, "tax", "fixed"),
    ]
    assert found[0]["services"] == ["aws support*"] and found[0]["tag_absent"] == ["team"]
    assert found[0]["teams"] == ["a"] and found[1]["shares"] == {"a": Decimal("60"), "b": Decimal("40")}
    assert found[1]["source"].endswith("w.yaml: showback[1]")
    # the next run's config replaces them
    prepare_marts(con, parse_config(f"warehouse: {tmp_path / 'w.duckdb'}\n", tmp_path / "w.yaml"))
    assert rows(con, "select count(*) as n from showback_rules") == [{"n": 0}]
