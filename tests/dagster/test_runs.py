"""Real runs of the code location's jobs: they materialise real DuckDB files from the real H200 capture
and a FOCUS bill written here, report what they did as metadata, and guard it with their asset checks.
"""

from __future__ import annotations

import csv
import json
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from pipelines.config import load_config
from pipelines.definitions import defs
from pipelines.defs.resources import WastewatchResource
from pipelines.runner import RunOutcome, run_ingest, run_weekly
from rules import Window
from tests.helpers.asset_graph import snapshot_job
from tests.helpers.config import write_config
from tests.helpers.paths import H200, copy_into

H200_CAPTURE = H200 / "nvidia_smi_query_gpu.csv"
FINDINGS_GPU001 = "findings/gpu001_idle_gpu_instance"

FOCUS_COLUMNS = [
    "BillingAccountId", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart",
    "ChargePeriodEnd", "ChargeCategory", "ChargeFrequency", "BilledCost", "EffectiveCost", "ListCost",
    "ConsumedQuantity", "ConsumedUnit", "ProviderName", "ResourceId", "ResourceName", "ResourceType",
    "ServiceCategory", "ServiceName", "RegionId", "SubAccountId", "SkuPriceDetails", "Tags",
]  # fmt: skip


@dataclass(frozen=True)
class Instance:
    resource_id: str
    host: str
    instance_type: str
    billed: Decimal  # per hour
    effective: Decimal  # per hour (a savings plan: less than billed)


# the same real capture stands for both hosts: an 8-GPU p5e reports 1 GPU, a 1-GPU p5 reports its one
P5E = Instance("i-0e200000000000001", "h200-node", "p5e.48xlarge", Decimal("40.00"), Decimal("32.00"))
P5 = Instance("i-0e200000000000002", "h200-solo", "p5.4xlarge", Decimal("6.00"), Decimal("5.00"))
BILLED_FROM = datetime(2026, 11, 29, 22)  # Sunday 22:00 UTC: 2 hours in 2026-W48, 3 hours in 2026-W49
BILLED_HOURS = 5


def write_focus_csv(path: Path, instances: list[Instance], start: datetime, hours: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, FOCUS_COLUMNS)
        w.writeheader()
        for inst in instances:
            for h in range(hours):
                s = start + timedelta(hours=h)
                w.writerow(
                    {
                        "BillingAccountId": "111122223333",
                        "BillingCurrency": "USD",
                        "BillingPeriodStart": "2026-11-01 00:00:00",
                        "BillingPeriodEnd": "2026-12-01 00:00:00",
                        "ChargePeriodStart": f"{s:%Y-%m-%d %H:%M:%S}",
                        "ChargePeriodEnd": f"{s + timedelta(hours=1):%Y-%m-%d %H:%M:%S}",
                        "ChargeCategory": "Usage",
                        "ChargeFrequency": "Usage-Based",
                        "BilledCost": f"{inst.billed:.6f}",
                        "EffectiveCost": f"{inst.effective:.6f}",
                        "ListCost": f"{inst.billed * Decimal('1.1'):.6f}",
                        "ConsumedQuantity": "1",
                        "ConsumedUnit": "Hours",
                        "ProviderName": "AWS",
                        "ResourceId": inst.resource_id,
                        "ResourceName": "",
                        "ResourceType": "Instance",
                        "ServiceCategory": "Compute",
                        "ServiceName": "Amazon Elastic Compute Cloud",
                        "RegionId": "us-east-1",
                        "SubAccountId": "444455556666",
                        "SkuPriceDetails": json.dumps({"InstanceType": inst.instance_type}),
                        "Tags": json.dumps({"hostname": inst.host, "team": "nlp"}),
                    }
                )


def _capture_stats() -> tuple[int, float, float]:
    """Samples, mean utilisation (%) and covered span (s) of the real capture, read independently."""
    with H200_CAPTURE.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, skipinitialspace=True))
    utils = [float(r["utilization.gpu [%]"].split()[0]) for r in rows]
    ts = [datetime.strptime(r["timestamp"], "%Y/%m/%d %H:%M:%S.%f") for r in rows]
    assert {t.strftime("%Y-%m-%d %H") for t in ts} == {"2026-11-30 01"}  # one clock hour of 2026-W49
    return len(rows), sum(utils) / len(utils), (ts[-1] - ts[0]).total_seconds()


def make_gpu_project(root: Path) -> Path:
    landing = root / "landing"
    copy_into(H200_CAPTURE, landing / "telemetry", f"{P5E.host}_2026-11-30.csv")
    copy_into(H200_CAPTURE, landing / "telemetry", f"{P5.host}_2026-11-30.csv")
    write_focus_csv(landing / "billing" / "focus_2026-11.csv", [P5E, P5], BILLED_FROM, BILLED_HOURS)
    # the capture covers ~6 minutes of one hour: observe an hour from 5 % coverage on
    return write_config(
        root,
        """
        sources:
          - {name: focus, kind: focus, uri: landing/billing/}
          - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
        rules:
          GPU001: {min_coverage: 0.05}
        """,
    )


@dataclass
class Materialised:
    config_path: Path
    ingest: RunOutcome
    w48: RunOutcome
    w49: RunOutcome


@pytest.fixture(scope="module")
def materialised(tmp_path_factory: pytest.TempPathFactory) -> Materialised:
    config_path = make_gpu_project(tmp_path_factory.mktemp("gpu_project"))
    ingest = run_ingest(config_path)
    w48 = run_weekly(config_path, "2026-W48")
    w49 = run_weekly(config_path, "2026-W49")
    return Materialised(config_path, ingest, w48, w49)


def _picked(metadata: dict[str, object], expected: dict[str, object]) -> dict[str, object]:
    """The entries of `metadata` that `expected` names (assets may add more metadata over time)."""
    return {k: metadata.get(k, "<missing>") for k in expected}


def test_ingest_run_reports_what_it_loaded(materialised: Materialised) -> None:
    out = materialised.ingest
    assert out.success and out.failures == []
    # every asset of the job but the landed tables neither source writes (nothing to load in them)
    unfed = {"gpu_hourly_stats", "jobs", "inventory_hosts", "log_groups", "storage_objects", "train_steps"}
    assert sorted(out.metadata) == [key for key in snapshot_job("nightly_ingest") if key not in unfed]
    lines = 2 * BILLED_HOURS
    billed = float(BILLED_HOURS * (P5E.billed + P5.billed))
    effective = float(BILLED_HOURS * (P5E.effective + P5.effective))
    expected_billing = {
        "files_loaded": 1,
        "files_unchanged": 0,
        "files_rejected": 0,
        "rows_loaded": lines,
        "dagster/row_count": lines,
        "billed_cost_USD": billed,
        "effective_cost_USD": effective,
    }
    assert _picked(out.metadata["billing_line_items"], expected_billing) == expected_billing
    samples, mean_util, span_s = _capture_stats()
    expected_samples = {
        "files_loaded": 2,
        "files_unchanged": 0,
        "files_rejected": 0,
        "rows_loaded": 2 * samples,
        "dagster/row_count": 2 * samples,
    }
    assert _picked(out.metadata["gpu_samples"], expected_samples) == expected_samples
    # hourly lines stay one row per resource-hour; the money is all there
    expected_hourly = {"dagster/row_count": lines, "effective_cost_USD": effective}
    assert _picked(out.metadata["cost_hourly"], expected_hourly) == expected_hourly
    # both hosts matched their bill through the `hostname` tag; the catalogue says 8 + 1 GPUs
    expected_resources = {
        "dagster/row_count": 2,
        "gpu_resources": 2,
        "gpus": 9,
        "telemetry_hosts_without_bill": 0,
    }
    assert _picked(out.metadata["resources"], expected_resources) == expected_resources
    gpu_hours = out.metadata["gpu_hours"]
    assert gpu_hours["dagster/row_count"] == 2  # one GPU x one hour per host
    assert gpu_hours["gpu_hours_without_billed_resource"] == 0
    assert gpu_hours["mean_util_pct"] == pytest.approx(mean_util, abs=0.01)
    assert gpu_hours["mean_coverage"] == pytest.approx(span_s / 3600, abs=0.002)


def test_ingest_publishes_a_read_only_copy(materialised: Materialised) -> None:
    config = load_config(materialised.config_path)
    meta = materialised.ingest.metadata["published_warehouse"]
    assert meta["path"] == str(config.published_path)
    assert config.published_path != config.warehouse_path
    # the weekly run published again afterwards, so the file now holds the findings too
    with duckdb.connect(str(config.published_path), read_only=True) as con:
        assert con.execute("select count(*) from billing_line_items").fetchone() == (2 * BILLED_HOURS,)
        assert con.execute("select count(*) from resources where gpu_count > 0").fetchone() == (2,)
        weeks = con.execute(
            "select week_start::varchar, count(*) from findings where rule_id = 'GPU001' group by 1 order by 1"
        ).fetchall()
        assert weeks == [("2026-11-23", 2), ("2026-11-30", 2)]
        with pytest.raises(duckdb.Error):
            con.execute("create table t (x int)")


def _findings(config_path: Path, week_start: str) -> dict[str, dict[str, object]]:
    config = load_config(config_path)
    with duckdb.connect(str(config.published_path), read_only=True) as con:
        rows = con.execute(
            "select resource_id, status, reason, evidence, estimated_waste, team, params "
            "from findings where rule_id = 'GPU001' and week_start = $w::date",
            {"w": week_start},
        ).fetchall()
    return {
        r[0]: {
            "status": r[1],
            "reason": r[2],
            "evidence": json.loads(r[3]),
            "estimated_waste": r[4],
            "team": r[5],
            "params": json.loads(r[6]),
        }
        for r in rows
    }


def test_weekly_run_of_a_week_without_telemetry_reports_insufficient_data(materialised: Materialised) -> None:
    out = materialised.w48
    assert out.success and out.failures == []
    assert sorted(out.metadata) == snapshot_job("weekly_report")
    findings = out.metadata[FINDINGS_GPU001]
    assert findings["week"] == "2026-W48"
    assert (findings["findings"], findings["waste_findings"]) == (2, 0)
    # the override from wastewatch.yaml reached the rule; the rest are the defaults
    assert findings["params"] == {
        "max_util_pct": 5.0,
        "min_idle_hours": 2,
        "min_coverage": 0.05,
        "max_power_pct": 35.0,
        "max_mem_util_pct": 10.0,
    }
    assert "insufficient_data" in findings["preview"]

    # only Sunday 22:00 and 23:00 are in 2026-W48 (the other 3 billed hours are the next week's)
    found = _findings(materialised.config_path, "2026-11-23")
    assert sorted(found) == [P5E.resource_id, P5.resource_id]
    for inst in (P5E, P5):
        f = found[inst.resource_id]
        assert f["status"] == "insufficient_data" and f["estimated_waste"] == 0 and f["team"] == "nlp"
        assert f["evidence"]["billed_hours"] == 2 and f["evidence"]["hours_without_telemetry"] == 2
        assert f["reason"].startswith(f"2 of 2 billed hours of {inst.instance_type} {inst.resource_id}")
        assert f"USD {2 * inst.effective:.2f}" in f["reason"]  # priced at the effective cost

    report = out.metadata["reports/weekly_report"]
    assert report["week"] == "2026-W48" and report["findings"] >= 2  # GPU001's two, plus attention findings
    assert report["spend_USD"] == float(2 * (P5E.effective + P5.effective))
    assert report["waste_USD"] == 0.0
    week_dir = load_config(materialised.config_path).reports_path / "2026-W48"
    assert report["report_html"] == str(week_dir / "report.html")
    assert report["report_md"] == str(week_dir / "report.md")
    for name in ("report.html", "report.md", "findings.csv", "findings.parquet"):
        assert (week_dir / name).stat().st_size > 0, name
    with (week_dir / "findings.csv").open(newline="", encoding="utf-8") as f:
        gpu001 = [r["resource_id"] for r in csv.DictReader(f) if r["rule_id"] == "GPU001"]
        assert sorted(gpu001) == [P5E.resource_id, P5.resource_id]


def test_an_eight_gpu_instance_reporting_one_gpu_is_insufficient_data_not_busy(
    materialised: Materialised,
) -> None:
    out = materialised.w49
    assert out.success and out.failures == []
    assert out.metadata[FINDINGS_GPU001]["week"] == "2026-W49"
    assert out.metadata["reports/weekly_report"]["spend_USD"] == float(3 * (P5E.effective + P5.effective))
    found = _findings(materialised.config_path, "2026-11-30")

    # p5e.48xlarge: 8 GPUs billed, the capture shows 1, so even the observed hour is not observed enough
    p5e = found[P5E.resource_id]
    assert p5e["status"] == "insufficient_data" and p5e["estimated_waste"] == 0
    assert p5e["evidence"]["gpu_count"] == 8
    assert (p5e["evidence"]["billed_hours"], p5e["evidence"]["hours_without_telemetry"]) == (3, 3)
    assert p5e["reason"].startswith(
        f"3 of 3 billed hours of p5e.48xlarge {P5E.resource_id} (h200-node, 8×H200)"
    )

    # p5.4xlarge: its one GPU is observed at 01:00 and busy (~29 % mean), the 2 other hours have no data
    p5 = found[P5.resource_id]
    assert p5["status"] == "insufficient_data" and p5["estimated_waste"] == 0
    assert p5["evidence"]["gpu_count"] == 1 and p5["evidence"]["idle_hours"] == 0
    assert (p5["evidence"]["billed_hours"], p5["evidence"]["hours_without_telemetry"]) == (3, 2)
    assert p5["reason"].startswith(f"2 of 3 billed hours of p5.4xlarge {P5.resource_id}")
    assert f"USD {2 * P5.effective:.2f}" in p5["reason"]


@pytest.mark.parametrize("week", ["2099-W01", "2022-W50"])
def test_a_week_outside_the_partitions_is_a_failed_outcome_not_a_dagster_error(
    tmp_path: Path, week: str
) -> None:
    config_path = make_gpu_project(tmp_path)
    out = run_weekly(config_path, week)
    assert not out.success and out.metadata == {}
    [failure] = out.failures
    # nothing ingested yet and no history_start: the weeks are the current one only
    this_week = Window.containing(datetime.now(UTC).date()).label
    assert failure.startswith(
        f"{week} is not a week wastewatch can evaluate: weeks run from {this_week} (history_start, "
        f"default the earliest data in the warehouse) to {this_week} (this week)"
    )
    assert out.outside
    assert not (tmp_path / "reports").exists()  # nothing ran


def _ingest_job_result(config_path: Path) -> dg.ExecuteInProcessResult:
    job = defs().resolve_job_def("nightly_ingest")
    return job.execute_in_process(
        resources={"wastewatch": WastewatchResource(config_path=str(config_path))}, raise_on_error=False
    )


def test_ingest_job_again_loads_nothing_and_its_checks_pass(materialised: Materialised) -> None:
    # the `nightly_ingest` job itself (as the schedule and the sensor launch it), over the same project
    result = _ingest_job_result(materialised.config_path)
    assert result.success
    checks = {
        (e.asset_key.to_user_string(), e.check_name): (e.passed, {k: v.value for k, v in e.metadata.items()})
        for e in result.get_asset_check_evaluations()
    }
    effective = BILLED_HOURS * (P5E.effective + P5.effective)
    assert checks == {
        ("billing_line_items", "no_rejected_files"): (True, {"files_rejected": 0}),
        ("billing_line_items", "sources_fresh"): (True, {"stale": "none"}),
        ("billing_line_items", "billing_reconciled"): (
            True,
            {"files_checked": 1, "periods_checked": 1, "mismatches": 0},
        ),
        ("billing_line_items", "tag_coverage"): (True, {"USD": f"100.0% of {effective:,.2f} has a team"}),
        # the test bill is FOCUS without ListCost, ContractedCost and PricingCategory: the check warns,
        # naming the lines and spend each rule touches
        ("billing_line_items", "focus_conformance"): (
            False,
            {
                "focus (USD)": f"list_contracted: 10 of 10 lines, {effective:,.2f} of {effective:,.2f} spend "
                f"(100.0%); pricing_category: 10 of 10 lines, {effective:,.2f} of {effective:,.2f} spend (100.0%)",
                "rules_broken": 2,
            },
        ),
        ("gpu_samples", "no_rejected_files"): (True, {"files_rejected": 0}),
        ("gpu_samples", "sources_fresh"): (True, {"stale": "none"}),
        ("gpu_hourly_stats", "no_rejected_files"): (True, {"files_rejected": 0}),
        ("gpu_hourly_stats", "sources_fresh"): (True, {"stale": "none"}),
        ("jobs", "no_rejected_files"): (True, {"files_rejected": 0}),
        ("jobs", "sources_fresh"): (True, {"stale": "none"}),
        ("inventory_hosts", "no_rejected_files"): (True, {"files_rejected": 0}),
        ("inventory_hosts", "sources_fresh"): (True, {"stale": "none"}),
        ("log_groups", "no_rejected_files"): (True, {"files_rejected": 0}),
        ("log_groups", "sources_fresh"): (True, {"stale": "none"}),
        ("storage_objects", "no_rejected_files"): (True, {"files_rejected": 0}),
        ("storage_objects", "sources_fresh"): (True, {"stale": "none"}),
        ("train_steps", "no_rejected_files"): (True, {"files_rejected": 0}),
        ("train_steps", "sources_fresh"): (True, {"stale": "none"}),
        ("cost_hourly", "reconciles_with_billing"): (
            True,
            {"USD": f"lines {effective:.12f} / hourly {effective:.12f}"},
        ),
        # every dollar of the bill on a team or 'unallocated' (no showback: rules: all on team tags)
        ("showback", "reconciles_with_billing"): (
            True,
            {"USD": f"bill {effective:.12f} / showback {effective:.12f}"},
        ),
    }
    meta = {
        e.materialization.asset_key.to_user_string(): {
            k: v.value for k, v in e.materialization.metadata.items()
        }
        for e in result.get_asset_materialization_events()
        if e.materialization
    }
    assert meta["billing_line_items"]["files_unchanged"] == 1
    assert meta["billing_line_items"]["files_loaded"] == meta["billing_line_items"]["rows_loaded"] == 0
    assert meta["billing_line_items"]["dagster/row_count"] == 2 * BILLED_HOURS
    assert (meta["gpu_samples"]["files_unchanged"], meta["gpu_samples"]["rows_loaded"]) == (2, 0)


def test_a_rejected_file_fails_its_check_but_not_the_run(tmp_path: Path) -> None:
    config_path = make_gpu_project(tmp_path)
    bad = tmp_path / "landing" / "billing" / "focus_bad.csv"
    write_focus_csv(bad, [P5E], BILLED_FROM, 2)
    bad.write_text(bad.read_text().replace(",40.000000,", ",forty,", 1))

    result = _ingest_job_result(config_path)
    assert result.success  # the check warns; the other files load and the marts are built
    evaluations = {
        (e.asset_key.to_user_string(), e.check_name): e for e in result.get_asset_check_evaluations()
    }
    rejected = evaluations[("billing_line_items", "no_rejected_files")]
    assert not rejected.passed and rejected.severity == dg.AssetCheckSeverity.WARN
    assert rejected.metadata["files_rejected"].value == 1
    assert evaluations[("gpu_samples", "no_rejected_files")].passed
    assert evaluations[("cost_hourly", "reconciles_with_billing")].passed

    [billing] = [
        e.materialization
        for e in result.get_asset_materialization_events()
        if e.materialization and e.materialization.asset_key == dg.AssetKey("billing_line_items")
    ]
    assert billing.metadata["files_loaded"].value == 1
    assert billing.metadata["files_rejected"].value == 1
    assert billing.metadata["dagster/row_count"].value == 2 * BILLED_HOURS  # nothing of the bad file
    message = billing.metadata["rejected"].value
    assert "focus_bad.csv" in message and "forty" in message


def test_the_report_asset_writes_no_report_for_a_week_without_data(
    materialised: Materialised, tmp_path: Path
) -> None:
    # what the CLI says for such a week (pipelines/health/coverage.py), the scheduled report asset says too;
    # a copy of the module's ingested project, with its weeks starting earlier
    assert materialised.ingest.success
    shutil.copytree(materialised.config_path.parent, tmp_path / "project", symlinks=True)
    config_path = tmp_path / "project" / materialised.config_path.name
    config_path.write_text("history_start: 2026-11-02\n" + config_path.read_text(encoding="utf-8"))
    out = run_weekly(config_path, "2026-W46")
    assert out.success and out.failures == []
    report = out.metadata["reports/weekly_report"]
    assert report["week"] == "2026-W46" and "report_html" not in report
    assert report["no_data"].startswith("2026-W46: no data in this week")
    assert "no report was written; this is not an all-clear" in report["no_data"]
    assert "billing 2026-W48 to 2026-W49" in report["no_data"]
    assert not (load_config(config_path).reports_path / "2026-W46").exists()


def test_the_publish_works_after_a_step_of_its_run_spilled_to_the_temp_directory(tmp_path: Path) -> None:
    """A step that spills (DuckDB past `duckdb: memory_limit`) has used the temp_directory; the publish after it
    in the same run must keep to the run's connection: a second connection sets temp_directory again, which
    DuckDB refuses once it is in use (the 4,000-GPU fleet week failed so at the publish). The spilling step
    stands in for the retention, which the publish runs after."""
    from pipelines.runner import _assets
    from pipelines.transform.retention import RETENTION_ASSET

    config = write_config(
        tmp_path, "duckdb: {memory_limit: 40MB, threads: 1, temp_directory: spill}\nsources: []\n"
    )

    @dg.asset(key=RETENTION_ASSET)
    def spills(wastewatch: WastewatchResource) -> None:
        with wastewatch.warehouse() as con:
            con.execute(
                "create or replace table big as "
                "select i, md5(i::varchar) || md5((i + 1)::varchar) as s from range(1500000) t(i) order by s"
            )
            con.execute("drop table big")
            assert (tmp_path / "spill").is_dir()  # the sort spilled: DuckDB holds its temp directory

    assets = [a for a in _assets(config) if dg.AssetKey(RETENTION_ASSET) not in a.keys]
    result = dg.materialize(
        [spills, *assets],
        selection=dg.AssetSelection.assets(RETENTION_ASSET, "published_warehouse"),
        resources={"wastewatch": WastewatchResource(config_path=str(config))},
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    failures = [str(e.event_specific_data) for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert result.success, failures
    assert load_config(config).published_path.exists()
