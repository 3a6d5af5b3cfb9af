"""A telemetry-only fleet end to end through the CLI: a per-pod trace from 2020 (duty cycle and memory, no
GPU index, no bill, no price; tests/helpers/pod_trace.py) is ingested, evaluated and reported on. The
weeks come from the data (no history_start set), the report counts the unpriced GPU-hours in its data
quality and as an attention item, its empty findings list says why, and weeks without data say so. With a
contract price for every host, the same week gets priced findings and nothing is left unpriced.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from click.testing import CliRunner, Result

from pipelines.cli import main
from pipelines.definitions import defs
from pipelines.defs.partitions import definitions_for
from tests.helpers.config import write_config
from tests.helpers.pod_trace import HOURS, PODS, sources, write_trace

WEEK = "2020-W10"
GPU_HOURS = len(PODS) * HOURS  # one GPU per pod, every hour of the trace
IDLE_GPU_HOURS = sum(not p.busy for p in PODS) * HOURS
HOSTS = len({p.machine for p in PODS})
UNPRICED = f"{GPU_HOURS} GPU-hours from {HOSTS} hosts have no price; add a `pricing:` entry"


def cli(*args: str) -> Result:
    return CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(main, list(args), catch_exceptions=False)


@dataclass
class Ran:
    config: Path
    result: Result
    reports: Path


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    root = tmp_path_factory.mktemp("trace")
    write_trace(root / "trace")
    config = write_config(root, "sources:\n" + sources("trace"))
    result = cli("--config", str(config), "run", "--week", WEEK)
    return Ran(config, result, root / "reports" / WEEK)


def test_a_historical_week_runs_and_says_its_gpu_hours_are_unpriced(ran: Ran) -> None:
    assert ran.result.exit_code == 0, ran.result.output
    assert f"unpriced: {UNPRICED}" in ran.result.output
    assert (ran.reports / "report.html").is_file()


def test_the_report_counts_the_unpriced_hours_as_attention_and_in_data_quality(ran: Ran) -> None:
    md = (ran.reports / "report-full.md").read_text(encoding="utf-8")
    attention = md.split("## Needs attention (not waste)")[1].split("\n## ")[0]
    assert f"**Unpriced GPU telemetry:** {UNPRICED}" in attention
    assert f"{IDLE_GPU_HOURS} of them idle" in attention
    quality = md.split("## Data quality")[1]
    assert f"{GPU_HOURS} GPU-hours ({IDLE_GPU_HOURS} idle) from {HOSTS} host(s)" in quality
    # per host: m-0981 runs three pods (three GPUs), all idle
    assert f"| `m-0981` | 3 | {3 * HOURS} | {3 * HOURS} |" in quality  # host, GPUs, GPU-hours, idle
    assert f"| `m-0012` | 2 | {2 * HOURS} | {HOURS} |" in quality
    html = (ran.reports / "report.html").read_text(encoding="utf-8")
    assert UNPRICED.replace("`", "") in html.replace("<code>", "").replace("</code>", "") or UNPRICED in html
    assert 'id="unpriced-hosts"' in (ran.reports / "quality.html").read_text(encoding="utf-8")


def test_the_findings_list_is_empty_and_says_why(ran: Ran) -> None:
    assert pl.read_csv(ran.reports / "findings.csv").height == 0
    md = (ran.reports / "report-full.md").read_text(encoding="utf-8")
    findings = md.split("## All findings")[1].split("\n## ")[0]
    assert (
        f"No findings this week: {GPU_HOURS} GPU-hours of telemetry have no price, so no rule could price "
        "their waste (see Needs attention)." in findings
    )


# the same message from three commands; `make test` asks `report` and `evaluate` (they answer at once),
# CI `run` too (it ingests the trace again before it answers)
@pytest.mark.parametrize("command", [pytest.param("run", marks=pytest.mark.full), "report", "evaluate"])
def test_a_week_without_data_says_so_names_the_weeks_with_data_and_exits_0(ran: Ran, command: str) -> None:
    result = cli("--config", str(ran.config), command, "--week", "2019-W40")
    assert result.exit_code == 0, result.output
    assert (
        "2019-W40: no data in this week (no billing, GPU telemetry, jobs or storage inventory falls in it), "
        "so nothing was evaluated and no report was written; this is not an all-clear. "
        f"The warehouse holds: GPU telemetry {WEEK}." in result.output
    )
    assert not (ran.reports.parent / "2019-W40").exists()


def test_a_week_yet_to_start_is_a_usage_error(ran: Ran) -> None:
    result = cli("--config", str(ran.config), "report", "--week", "2099-W01")
    assert result.exit_code == 2 and "2099-W01 has not started yet" in result.output


def test_dagster_weeks_start_at_the_earliest_data_without_history_start(ran: Ran) -> None:
    with definitions_for(ran.config):
        d = defs()
    specs = {s.key.to_user_string(): s for s in d.resolve_all_asset_specs()}
    weekly = specs["reports/weekly_report"].partitions_def
    assert isinstance(weekly, dg.TimeWindowPartitionsDefinition)
    keys = weekly.get_partition_keys(current_time=datetime(2026, 12, 2, tzinfo=UTC))
    assert keys[0] == "2020-03-02"  # the Monday of the trace's first sample (2020-03-03)


def test_a_week_before_history_start_is_refused_naming_it(ran: Ran, tmp_path: Path) -> None:
    text = ran.config.read_text(encoding="utf-8")
    later = ran.config.with_name("later.yaml")
    later.write_text("history_start: 2020-03-09\n" + text, encoding="utf-8")
    result = cli("--config", str(later), "evaluate", "--week", WEEK)
    assert result.exit_code == 2, result.output
    assert (
        f"{WEEK} is not a week wastewatch can evaluate: weeks run from 2020-W11 (history_start"
        in result.output
    )


# the same week with a contract price for every host (issue 18's acceptance: priced findings, nothing unpriced)
RATE = Decimal("2.10")
PRICING = """\
pricing:
  - match: {host: "*"}
    contract: {per_gpu_hour: 2.10, currency: USD}
"""


@pytest.fixture(scope="module")
def priced(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    root = tmp_path_factory.mktemp("priced")
    write_trace(root / "trace")
    config = write_config(root, "sources:\n" + sources("trace") + PRICING)
    result = cli("--config", str(config), "run", "--week", WEEK)
    return Ran(config, result, root / "reports" / WEEK)


def test_with_a_contract_price_the_same_week_gets_priced_findings(ran: Ran, priced: Ran) -> None:
    """Unpriced without `pricing:` (above); with a contract rate, the same trace's idle hosts are GPU001
    waste at the rate x the GPUs telemetry reported x the idle hours, and no GPU-hour is left unpriced."""
    assert ran.result.exit_code == 0 and priced.result.exit_code == 0, priced.result.output
    assert "unpriced:" not in priced.result.output
    findings = pl.read_csv(priced.reports / "findings.csv", infer_schema_length=0)
    gpu001 = {
        r["resource_id"]: r
        for r in findings.filter(pl.col("rule_id") == "GPU001").iter_rows(named=True)
        if r["status"] == "waste"
    }
    gpus = {m: sum(p.machine == m and not p.busy for p in PODS) for m in ("m-0347", "m-0981")}
    # m-0012 has a busy GPU: not every GPU idled, so GPU001 leaves it alone
    assert sorted(gpu001) == ["host:m-0347", "host:m-0981"]
    for machine, n in gpus.items():
        f = gpu001[f"host:{machine}"]
        assert Decimal(f["estimated_waste"]) == (RATE * n * HOURS).quantize(Decimal("0.000001")), machine
        assert f["pricing_basis"] == "contract" and f["currency"] == "USD"
    md = (priced.reports / "report.md").read_text(encoding="utf-8")
    assert "Unpriced GPU telemetry" not in md and "Unpriced GPU-hours" not in md
    waste = RATE * sum(gpus.values()) * HOURS
    spend = RATE * len(PODS) * HOURS  # every GPU of every host, every hour of the trace
    assert f"**Waste:** USD {waste:,.2f}" in md
    assert f"contract USD {spend:,.2f}" in md and "billed USD 0.00" in md
    assert "(contract model)" in md  # each finding states that its cost is a model, not a bill
