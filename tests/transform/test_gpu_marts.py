"""The GPU marts on real DuckDB files: slices at job boundaries, job attribution, the incremental
roll-up, host <-> instance <-> billed resource through the inventory, and jobs_enriched.

Telemetry goes through the real nvidia_smi reader (small files in its real format, written here); jobs,
inventory and billing rows are inserted into their landed tables the way their readers write them. Only the
GPU marts and the marts they read are built (tests/helpers/marts.py).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from pipelines.config import Config
from pipelines.ingest import ingest
from pipelines.ingest.billing.lines import insert_lines
from pipelines.marts.registry import MARTS
from pipelines.transform.build import (
    STATE,
    build_intermediate,
    build_mart_with_rollup,
    needs_rollup,
)
from pipelines.transform.days import refresh_day_mart, refresh_rollups
from pipelines.warehouse import rows, transaction
from tests.helpers.marts import build_only

HEADER = (
    "timestamp, name, pci.bus_id, uuid, index, utilization.gpu [%], utilization.memory [%], "
    "memory.total [MiB], memory.used [MiB], memory.free [MiB], power.draw [W], power.limit [W]"
)
T0 = datetime(2026, 11, 23)
# the marts these tests read, with the marts they read in turn (resources, cost_hourly, gpu_job_hours)
GPU_MARTS = ("gpu_hours", "jobs_enriched")


def smi_file(
    path: Path,
    start: datetime,
    minutes: int,
    gpus: int = 2,
    util: Callable[[int, int], float] = lambda m, g: 50.0,
    every_s: int = 60,
) -> Path:
    """An nvidia-smi --query-gpu CSV (the real header, units and `, ` separators), one sample per GPU."""
    lines = [HEADER]
    for i in range(minutes * 60 // every_s):
        ts = start + timedelta(seconds=i * every_s)
        for g in range(gpus):
            u = util(i * every_s // 60, g)
            lines.append(
                f"{ts:%Y/%m/%d %H:%M:%S}.310, NVIDIA H100 80GB HBM3, 00000000:1{g}:00.0, "
                f"GPU-{path.stem.split('_')[0]}-{g}, {g}, {u:.0f} %, {u / 2:.0f} %, 81559 MiB, 40000 MiB, "
                f"41559 MiB, {70 + 5 * u:.2f} W, 700.00 W"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def add_job(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    host: str,
    start: datetime | None,
    end: datetime | None,
    state: str = "COMPLETED",
    gpu_indices: list[int] | None = None,
    team: str | None = None,
    file_id: str = "jobs-file",
) -> None:
    con.execute(
        "insert into jobs (job_id, scheduler, state, started_at, ended_at, hosts, gpu_indices, team, source, "
        "x_source_file, x_file_id) values ($id, 'slurm', $state, $s, $e, [$host], $gi, $team, 'test', 'x', $f)",
        {"id": job_id, "state": state, "s": start, "e": end, "host": host, "gi": gpu_indices, "team": team,
         "f": file_id},
    )  # fmt: skip


def bill(con: duckdb.DuckDBPyConnection, resource_id: str, hours: int, host_tag: str | None = None,
         team: str | None = None, start: datetime = T0, gpus: int | None = 2) -> None:  # fmt: skip
    insert_lines(
        con,
        "select 20 as billed_cost, 20 as effective_cost, 'USD' as billing_currency, "
        "$t + to_hours(h) as charge_period_start, $t + to_hours(h + 1) as charge_period_end, $r as resource_id, "
        "'Instance' as resource_type, 'AWS' as provider_name, $tag as x_host, $g as x_gpu_count, $team as team, "
        "'test' as x_file_id from range($n) as t(h)",
        {"t": start, "r": resource_id, "tag": host_tag, "team": team, "n": hours, "g": gpus},
    )


def slices(con: duckdb.DuckDBPyConnection, where: str = "true") -> list[dict[str, object]]:
    return rows(
        con,
        "select host, gpu_index, hour, slice_start, slice_end, job_id, samples, coverage, util_mean, "
        f"resource_id, cost from gpu_job_hours where {where} order by host, gpu_index, slice_start",  # noqa: S608
    )


# --- slices and attribution ---------------------------------------------------------------------------


def test_an_hour_is_split_where_a_job_starts_and_ends(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    smi_file(
        project / "landing" / "telemetry" / "gpu-a_1.csv",
        T0,
        180,
        util=lambda m, g: 80.0 if 70 <= m < 130 else 0.0,
    )
    add_job(con, "1", "gpu-a", T0 + timedelta(minutes=70), T0 + timedelta(minutes=130))
    bill(con, "i-a", 3, host_tag="gpu-a")
    ingest(con, config)
    build_only(con, *GPU_MARTS)
    got = [(r["hour"].hour, r["slice_start"].strftime("%H:%M"), r["slice_end"].strftime("%H:%M"), r["job_id"],
            r["samples"], r["util_mean"]) for r in slices(con, "gpu_index = 0")]  # fmt: skip
    assert got == [
        (0, "00:00", "01:00", None, 60, 0.0),
        (1, "01:00", "01:10", None, 10, 0.0),
        (1, "01:10", "02:00", "1", 50, 80.0),
        (2, "02:00", "02:10", "1", 10, 80.0),
        (2, "02:10", "03:00", None, 50, 0.0),
    ]
    assert all(r["coverage"] == pytest.approx(1.0) for r in slices(con))
    # cost: the resource-hour's 20 USD / 2 GPUs, by each slice's share of its hour
    costs = [
        (r["slice_start"].minute, float(r["cost"])) for r in slices(con, "gpu_index = 0 and hour(hour) = 1")
    ]
    assert costs == [(0, pytest.approx(10 / 6, abs=1e-6)), (10, pytest.approx(10 * 5 / 6, abs=1e-6))]
    # gpu_hours adds the slices up per GPU-hour: hour 01:00 is 10 minutes idle, 50 at 80 %
    hour = rows(
        con, "select * from gpu_hours where gpu_index = 0 and hour = $h", {"h": T0 + timedelta(hours=1)}
    )[0]
    assert hour["samples"] == 60 and hour["coverage"] == pytest.approx(1.0)
    assert hour["util_mean"] == pytest.approx(80 * 50 / 60)
    assert hour["util_stddev"] == pytest.approx((80 * 80 * 50 / 60 - (80 * 50 / 60) ** 2) ** 0.5)
    assert hour["job_id"] == "1" and hour["jobs"] == 1
    assert hour["resource_id"] == "i-a" and float(hour["cost_per_gpu_hour"]) == 10.0


def test_jobs_sharing_a_node_own_their_gpus(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    smi_file(project / "landing" / "telemetry" / "gpu-a_1.csv", T0, 60, gpus=4)
    add_job(con, "a", "gpu-a", T0, T0 + timedelta(hours=1), gpu_indices=[0, 1])
    add_job(con, "b", "gpu-a", T0, T0 + timedelta(hours=1), gpu_indices=[2, 3])
    add_job(con, "c", "gpu-a.cluster.local", T0 - timedelta(days=1), T0 + timedelta(days=1))  # no indices
    ingest(con, config)
    build_only(con, *GPU_MARTS)
    got = {r["gpu_index"]: r["job_id"] for r in slices(con)}
    assert got == {0: "a", 1: "a", 2: "b", 3: "b"}  # a job naming its GPUs beats one naming none
    running = {r["jobs_running"] for r in rows(con, "select jobs_running from gpu_job_hours")}
    assert running == {2}


def test_the_job_the_telemetry_names_wins(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    """DCGM's hpc_job label (gpu_samples.job_id) or its pod/namespace labels attribute a GPU even when
    the scheduler's host records say otherwise."""
    smi_file(project / "landing" / "telemetry" / "gpu-a_1.csv", T0, 60, gpus=2)
    add_job(con, "sched", "gpu-a", T0, T0 + timedelta(hours=1))
    add_job(con, "named", "elsewhere", T0, T0 + timedelta(hours=1))
    for uid, namespace in (("uid-1", "team-a"), ("uid-2", "team-b")):  # the same pod name in two namespaces
        con.execute(
            "insert into jobs (job_id, scheduler, job_name, account, state, started_at, hosts, source, "
            "x_source_file, x_file_id) values ($u, 'kubernetes', 'trainer-0', $ns, 'RUNNING', $s, "
            "['node-k8s'], 'pods', 'x', 'x')",
            {"u": uid, "ns": namespace, "s": T0},
        )
    ingest(con, config)
    con.execute("update gpu_samples set job_id = 'named' where gpu_index = 0")
    con.execute("update gpu_samples set pod = 'trainer-0', namespace = 'team-a' where gpu_index = 1")
    build_only(con, *GPU_MARTS)
    got = {
        r["gpu_index"]: r
        for r in rows(con, "select gpu_index, job_id, job_source, job_key from gpu_job_hours")
    }
    assert got[0] == {
        "gpu_index": 0,
        "job_id": "named",
        "job_source": "telemetry",
        "job_key": "slurm/named",
    }
    assert got[1] == {
        "gpu_index": 1, "job_id": "uid-1", "job_source": "telemetry", "job_key": "kubernetes/uid-1"
    }  # fmt: skip


def test_duplicate_samples_and_a_job_ending_before_it_started(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    """Bad input: the same capture landed twice (two files), and a job record whose end precedes its start.
    Samples count once in samples and coverage; the broken job attributes nothing and breaks nothing."""
    path = smi_file(project / "landing" / "telemetry" / "gpu-a_1.csv", T0, 60, gpus=1)
    (project / "landing" / "telemetry" / "gpu-a_copy.csv").write_bytes(path.read_bytes())
    add_job(con, "backwards", "gpu-a", T0 + timedelta(minutes=40), T0 + timedelta(minutes=20))
    report = ingest(con, config)
    assert [o.status for o in report.outcomes] == ["loaded", "loaded"]
    build_only(con, *GPU_MARTS)
    got = slices(con)
    assert sum(r["samples"] for r in got) == 60
    assert sum(r["coverage"] * 0 + 1 for r in got) == len(got)
    assert all(r["job_id"] is None for r in got)
    assert rows(con, "select sum(observed_seconds) as s from gpu_job_hours")[0]["s"] == pytest.approx(3600)
    (job,) = rows(con, "select runtime_s, gpus_observed from jobs_enriched")
    assert job == {"runtime_s": 0, "gpus_observed": None}


def test_a_gap_in_the_samples_is_missing_coverage(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    folder = project / "landing" / "telemetry"
    smi_file(folder / "gpu-a_1.csv", T0, 15, gpus=1)
    smi_file(folder / "gpu-a_2.csv", T0 + timedelta(minutes=45), 15, gpus=1)
    ingest(con, config)
    build_only(con, *GPU_MARTS)
    (r,) = slices(con)
    # 14 gaps of 60 s, one gap of 31 minutes counted as 300 s, 14 more of 60 s, the last sample for the
    # median interval (60 s)
    assert r["samples"] == 30
    assert r["coverage"] == pytest.approx((28 * 60 + 300 + 60) / 3600)


# --- the incremental roll-up ---------------------------------------------------------------------------


def _rolled(con: duckdb.DuckDBPyConnection, full: bool = False) -> list[date]:
    with transaction(con):
        build_intermediate(con)
        return refresh_rollups(con, full=full).days_rolled_up


def _snapshot(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return con.execute("select * exclude (day) from int_gpu_slices order by all").fetchall()


def test_only_changed_days_are_rolled_up_again(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    folder = project / "landing" / "telemetry"
    for d in range(3):
        smi_file(folder / f"gpu-a_{d}.csv", T0 + timedelta(days=d), 120, gpus=1)
    ingest(con, config)
    days = [date(2026, 11, 23), date(2026, 11, 24), date(2026, 11, 25)]
    assert _rolled(con) == days
    assert _rolled(con) == []  # nothing changed
    # a file rewritten (the ledger reloads it): only its day
    smi_file(folder / "gpu-a_1.csv", T0 + timedelta(days=1), 120, gpus=1, util=lambda m, g: 10.0)
    ingest(con, config)
    assert _rolled(con) == [date(2026, 11, 24)]
    # a job starting on the 25th: only the 25th is sliced again
    add_job(con, "late", "gpu-a", T0 + timedelta(days=2, minutes=30), T0 + timedelta(days=2, minutes=90))
    assert _rolled(con) == [date(2026, 11, 25)]
    # the job's record changes (it ends a day later): the day its old end fell on (the 26th, where the
    # new end falls, has no samples to slice)
    con.execute("update jobs set ended_at = ended_at + interval 1 day")
    assert _rolled(con) == [date(2026, 11, 25)]
    # samples of a day disappear: that day's slices go too
    con.execute("delete from gpu_samples where x_sample_date = '2026-11-23'")
    with transaction(con):
        build_intermediate(con)
        stats = refresh_rollups(con)
    assert stats.days_removed == [date(2026, 11, 23)] and stats.days_rolled_up == []
    assert [r["day"] for r in rows(con, "select distinct day from int_gpu_slices order by 1")] == days[1:]  # noqa: S608
    assert [
        r["day"] for r in rows(con, f"select day from {STATE} where object = 'int_gpu_slices' order by 1")
    ] == days[1:]  # noqa: S608
    # and the incremental result is exactly a full roll-up's
    incremental = _snapshot(con)
    assert _rolled(con, full=True) == days[1:]
    assert _snapshot(con) == incremental


def test_a_changed_rollup_shape_rebuilds_from_scratch(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    smi_file(project / "landing" / "telemetry" / "gpu-a_1.csv", T0, 60, gpus=1)
    ingest(con, config)
    build_only(con, *GPU_MARTS)
    # an older wastewatch's roll-up, created from other SQL than today's
    con.execute("alter table int_gpu_slices drop column pod")
    con.execute("update int_layer_digest set digest = 'older'")
    assert _rolled(con) == [date(2026, 11, 23)]
    assert "pod" in {r["column_name"] for r in rows(con, "describe int_gpu_slices")}


def test_the_intermediate_objects_are_created_once_while_their_sql_is_unchanged(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    smi_file(project / "landing" / "telemetry" / "gpu-a_1.csv", T0, 60, gpus=1)
    ingest(con, config)
    build_only(con, *GPU_MARTS)
    [(built, digest)] = con.execute("select built_at, digest from int_layer_digest").fetchall()
    assert len(digest) == 64
    con.execute("create or replace view int_jobs as select 1 as marker")  # not recreated while current
    build_intermediate(con)
    assert con.execute("select built_at from int_layer_digest").fetchall() == [(built,)]
    assert con.execute("select * from int_jobs").fetchall() == [(1,)]
    con.execute("drop view int_job_hosts")  # a missing object makes the layer be created again
    build_intermediate(con)
    assert con.execute("select built_at from int_layer_digest").fetchall()[0][0] > built
    assert "marker" not in {r["column_name"] for r in rows(con, "describe int_jobs")}
    assert con.execute("select count(*) from int_job_hosts").fetchall()[0][0] >= 0


def test_only_the_telemetry_marts_wait_for_the_rollup() -> None:
    assert needs_rollup("gpu_job_hours") and needs_rollup("gpu_hours") and needs_rollup("resources")
    assert needs_rollup("jobs_enriched")
    # cost_hourly prices GPU hosts without a bill from their telemetry's power (`pricing:`)
    assert needs_rollup("cost_hourly")
    assert not needs_rollup("storage_objects_current")
    assert [
        m for m in ("resources", "cost_hourly", "gpu_job_hours", "gpu_hours", "jobs_enriched") if m in MARTS
    ]


# --- resources: host <-> instance id <-> billed resource --------------------------------------------------


def _inventory(con: duckdb.DuckDBPyConnection, host: str, instance_id: str, private_dns: str | None = None,
               instance_type: str | None = None, resource_id: str | None = None) -> None:  # fmt: skip
    con.execute(
        "insert into inventory_hosts (host, instance_id, resource_id, private_dns, instance_type, provider, "
        "source, x_source_file, x_file_id) values ($h, $i, $r, $d, $t, 'AWS', 'inv', 'x', 'x')",
        {"h": host, "i": instance_id, "r": resource_id, "d": private_dns, "t": instance_type},
    )


def test_hosts_reach_their_billed_instance_through_the_inventory(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    folder = project / "landing" / "telemetry"
    smi_file(folder / "ip-10-0-1-17.ec2.internal_1.csv", T0, 60, gpus=1)  # telemetry names the private DNS
    smi_file(folder / "gpu-b_1.csv", T0, 60, gpus=1)  # a hosts.csv name
    smi_file(folder / "gpu-c_1.csv", T0, 60, gpus=1)  # only the bill's host tag knows it
    smi_file(folder / "gpu-d_1.csv", T0, 60, gpus=1)  # nobody bills it
    ingest(con, config)
    _inventory(
        con, "ip-10-0-1-17", "i-0aaa", private_dns="ip-10-0-1-17.ec2.internal", instance_type="p5.48xlarge"
    )
    _inventory(con, "gpu-b", "i-0bbb", instance_type="g6e.xlarge")
    bill(con, "i-0aaa", 1, gpus=None)  # no GPU count on the bill: the inventory's instance type says 8
    bill(con, "arn:aws:ec2:us-east-1:111122223333:instance/i-0bbb", 1, gpus=None)  # an ARN
    bill(con, "i-0ccc", 1, host_tag="GPU-C")
    build_only(con, *GPU_MARTS)
    hosts = {
        r["host"]: (r["resource_id"], r["match_method"])
        for r in rows(con, "select * from int_host_resources")
    }
    assert hosts["ip-10-0-1-17.ec2.internal"] == ("i-0aaa", "inventory")
    assert hosts["gpu-b"] == ("arn:aws:ec2:us-east-1:111122223333:instance/i-0bbb", "inventory")
    assert hosts["gpu-c"] == ("i-0ccc", "host tag")
    assert hosts["gpu-d"] == (None, None)
    res = {r["resource_id"]: r for r in rows(con, "select * from resources")}
    assert res["i-0aaa"]["instance_type"] == "p5.48xlarge" and res["i-0aaa"]["gpu_count"] == 8
    assert res["i-0aaa"]["host"] == "ip-10-0-1-17.ec2.internal"
    assert res["i-0aaa"]["private_dns"] == "ip-10-0-1-17.ec2.internal"
    assert res["i-0aaa"]["instance_id"] == "i-0aaa"
    arn = res["arn:aws:ec2:us-east-1:111122223333:instance/i-0bbb"]
    assert arn["gpu_model"] == "L40S" and arn["gpu_count"] == 1 and arn["instance_id"] == "i-0bbb"
    by_host = {
        r["host"]: r["resource_id"] for r in rows(con, "select distinct host, resource_id from gpu_job_hours")
    }
    assert by_host == {
        "ip-10-0-1-17.ec2.internal": "i-0aaa",
        "gpu-b": "arn:aws:ec2:us-east-1:111122223333:instance/i-0bbb",
        "gpu-c": "i-0ccc",
        "gpu-d": None,
    }


def test_a_job_host_without_telemetry_still_maps_to_its_instance(con: duckdb.DuckDBPyConnection) -> None:
    _inventory(con, "gpu-e", "i-0eee")
    bill(con, "i-0eee", 2, team="vision")
    add_job(con, "7", "gpu-e", T0, T0 + timedelta(hours=2))
    add_job(con, "8", "gpu-e", T0, T0 + timedelta(hours=2), team="nlp")
    build_only(con, *GPU_MARTS)
    jobs = {r["job_id"]: r for r in rows(con, "select * from jobs_enriched")}
    assert jobs["7"]["resource_ids"] == ["i-0eee"]
    assert (jobs["7"]["team"], jobs["7"]["team_source"]) == ("vision", "host billing tags")
    assert (jobs["8"]["team"], jobs["8"]["team_source"]) == ("nlp", "record")
    assert jobs["7"]["runtime_s"] == 7200 and jobs["7"]["gpu_hours"] is None  # no telemetry, no usage


def _mart_days(con: duckdb.DuckDBPyConnection) -> dict[str, list[date]]:
    out = {}
    for name in ("gpu_job_hours", "gpu_hours"):
        _, stats = build_mart_with_rollup(con, name)
        out[name] = stats[-1].days_rebuilt
        out["int_gpu_slices"] = stats[0].days_rebuilt
    return out


def test_gpu_marts_rebuild_only_the_days_whose_inputs_changed(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    folder = project / "landing" / "telemetry"
    for d in range(3):
        smi_file(folder / f"gpu-a_{d}.csv", T0 + timedelta(days=d), 120, gpus=1)
    add_job(con, "j", "gpu-a", T0 + timedelta(days=1), T0 + timedelta(days=1, minutes=50))
    bill(con, "i-a", 72, host_tag="gpu-a", gpus=1)
    ingest(con, config)
    build_only(con, *GPU_MARTS)
    days = [date(2026, 11, 23), date(2026, 11, 24), date(2026, 11, 25)]
    full = {
        t: con.execute(f"select * from {t} order by all").fetchall() for t in ("gpu_job_hours", "gpu_hours")
    }  # noqa: S608
    build_mart_with_rollup(con, "cost_hourly")
    assert _mart_days(con) == {"int_gpu_slices": [], "gpu_job_hours": [], "gpu_hours": []}
    # the bill of one day is restated (by a new delivery, as every change to a landed table comes): that
    # day's slices are priced again, the roll-up is untouched
    con.execute(
        "update billing_lines set effective_cost = 30, x_file_id = 'restated' "
        "where charge_period_start::date = '2026-11-25'"
    )
    build_mart_with_rollup(con, "cost_hourly")
    assert _mart_days(con) == {"int_gpu_slices": [], "gpu_job_hours": [days[2]], "gpu_hours": [days[2]]}
    assert rows(
        con, "select distinct cost_per_gpu_hour as c from gpu_hours where hour::date = '2026-11-25'"
    ) == [{"c": 30}]
    # the job's state changes (the scheduler's final record): the day it ran
    con.execute("update jobs set state = 'FAILED'")
    assert _mart_days(con) == {"int_gpu_slices": [], "gpu_job_hours": [days[1]], "gpu_hours": [days[1]]}
    assert {r["job_state"] for r in rows(con, "select job_state from gpu_job_hours where job_id = 'j'")} == {
        "FAILED"
    }
    # the inventory maps the host to another billed instance: every day the host has samples
    _inventory(con, "gpu-a", "i-b")
    bill(con, "i-b", 72, gpus=1)
    build_mart_with_rollup(con, "resources")
    assert _mart_days(con) == {"int_gpu_slices": [], "gpu_job_hours": days, "gpu_hours": days}
    assert {r["resource_id"] for r in rows(con, "select resource_id from gpu_hours")} == {"i-b"}
    # and what the days hold is what a full rebuild makes
    kept = {
        t: con.execute(f"select * from {t} order by all").fetchall() for t in ("gpu_job_hours", "gpu_hours")
    }  # noqa: S608
    with transaction(con):
        build_intermediate(con)
        refresh_rollups(con, full=True)
        for t in ("gpu_job_hours", "gpu_hours"):
            refresh_day_mart(con, t, full=True)
    for t in ("gpu_job_hours", "gpu_hours"):
        assert con.execute(f"select * from {t} order by all").fetchall() == kept[t]  # noqa: S608
        assert kept[t] != full[t]


def test_running_and_never_started_jobs(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    """A job still running (no end) owns every slice after its start; one that never started owns none and
    is still listed in jobs_enriched."""
    smi_file(project / "landing" / "telemetry" / "gpu-a_1.csv", T0, 120, gpus=1)
    add_job(con, "running", "gpu-a", T0 + timedelta(minutes=30), None, state="RUNNING")
    add_job(con, "pending", "gpu-a", None, None, state="PENDING")
    ingest(con, config)
    build_only(con, *GPU_MARTS)
    got = [(r["slice_start"].strftime("%H:%M"), r["job_id"]) for r in slices(con)]
    assert got == [("00:00", None), ("00:30", "running"), ("01:00", "running")]
    jobs = {r["job_id"]: r for r in rows(con, "select job_id, runtime_s, gpus_observed from jobs_enriched")}
    assert jobs["pending"] == {"job_id": "pending", "runtime_s": None, "gpus_observed": None}
    assert jobs["running"]["gpus_observed"] == 1
