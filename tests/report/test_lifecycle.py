"""Findings across weeks: stable keys, new / persisting / resolved, realised savings, acknowledgements.

The finding contract's `finding_id` is a hash of rule, resource and week (a new id every week); the
cross-week key is `finding_key` = sha1(rule_id|resource_id)[:16], derived from two stored columns (so it
is not stored) and written to findings.csv/.parquet and the report. Acks are stored against that key.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import Config, load_config
from pipelines.evaluate import evaluate_week
from pipelines.ingest import ingest
from pipelines.report import WeeklyReport, write_report
from pipelines.report.acks import AckError, in_force, resolve
from pipelines.transform.build import build_marts
from pipelines.warehouse import connect, rows
from rules import Window, finding_id
from rules._contract import finding_key
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.report import Marts, put_findings

W45, W46, W47, W48, W49 = (Window.iso_week(f"2026-W{n}") for n in (45, 46, 47, 48, 49))


def _spend(con: duckdb.DuckDBPyConnection, *weeks: Window) -> None:
    m = Marts(con)
    m.resource("i-spend", team="nlp", project="llm")
    for w in weeks:
        m.bill("i-spend", w.start, w.end, 100.0)  # 16,800 a week: every waste below fits in it
    m.flush()


def _history(con: duckdb.DuckDBPyConnection) -> None:
    """i-dev: 600, 500, 450 in W46-W48; i-zombie: 800 in W47, gone in W48; i-new: 300 in W48 only;
    i-gap: W45, then W47 and W48; i-maybe: suspect in W47 only (never counted, never resolved)."""
    _spend(con, W45, W46, W47, W48, W49)
    put_findings(con, W45, "GPU001", [{"resource_id": "i-gap", "estimated_waste": 10}])
    put_findings(con, W46, "GPU001", [{"resource_id": "i-dev", "estimated_waste": 600, "team": "nlp"}])
    put_findings(
        con, W47, "GPU001",
        [
            {"resource_id": "i-dev", "estimated_waste": 500, "team": "nlp"},
            {"resource_id": "i-zombie", "estimated_waste": 800, "team": "vision"},
            {"resource_id": "i-gap", "estimated_waste": 20},
            {"resource_id": "i-maybe", "estimated_waste": 70, "status": "suspect"},
        ],
    )  # fmt: skip
    put_findings(
        con, W48, "GPU001",
        [
            {"resource_id": "i-dev", "estimated_waste": 450, "team": "nlp"},
            {"resource_id": "i-new", "estimated_waste": 300, "team": "speech"},
            {"resource_id": "i-gap", "estimated_waste": 30},
        ],
    )  # fmt: skip


@pytest.fixture
def warehouse(tmp_path: Path, empty_marts: Path) -> Iterator[tuple[Config, duckdb.DuckDBPyConnection]]:
    config = load_config(write_config(tmp_path, "{}\n"))
    con = open_copy(empty_marts, config.warehouse_path)
    _history(con)
    yield config, con
    con.close()


def _by_resource(report: WeeklyReport) -> dict[str, dict]:
    return {f["resource_id"]: f for f in report.findings if f["rule_id"] == "GPU001"}


def test_new_persisting_resolved_and_savings_realised(
    warehouse: tuple[Config, duckdb.DuckDBPyConnection],
) -> None:
    config, con = warehouse
    report = write_report(con, config, W48)
    found = _by_resource(report)
    assert [f["resource_id"] for f in report.new] == ["i-new"]
    assert sorted(f["resource_id"] for f in report.persisting) == ["i-dev", "i-gap"]
    assert found["i-dev"]["lifecycle"] == "shrinking" and found["i-dev"]["previous_waste"] == Decimal("500")
    assert found["i-gap"]["lifecycle"] == "growing"
    [resolved] = report.resolved
    assert (resolved["resource_id"], resolved["last_week_waste"], resolved["now"]) == (
        "i-zombie",
        800,
        "gone",
    )
    assert report.savings() == {"USD": Decimal("800.00")}
    [h] = report.headline
    assert h["waste"] == Decimal("780.00") and h["prev_waste"] == Decimal("1320.00")  # suspects never count


def test_first_seen_weeks_open_and_cumulative_waste(
    warehouse: tuple[Config, duckdb.DuckDBPyConnection],
) -> None:
    config, con = warehouse
    found = _by_resource(write_report(con, config, W48))
    dev, gap = found["i-dev"], found["i-gap"]
    assert (dev["first_seen"], dev["weeks_open"], dev["cumulative_waste"]) == (date(2026, 11, 9), 3, 1550)
    # a week without the finding (W46) ends a run: open 2 weeks, but first seen in W45
    assert (gap["first_seen"], gap["weeks_open"], gap["cumulative_waste"]) == (date(2026, 11, 2), 2, 60)


def test_finding_key_is_stable_across_weeks_and_ids_are_not(
    warehouse: tuple[Config, duckdb.DuckDBPyConnection],
) -> None:
    config, con = warehouse
    keys = rows(
        con,
        "select week_start, finding_id, substr(sha1(rule_id || '|' || coalesce(resource_id, '')), 1, 16) as k "
        "from findings where resource_id = 'i-dev' order by week_start",
    )
    assert len({r["k"] for r in keys}) == 1 and len({r["finding_id"] for r in keys}) == 3
    assert keys[0]["k"] == finding_key("GPU001", "i-dev")  # the SQL and the Python agree
    report = write_report(con, config, W48)
    with (config.reports_path / "2026-W48" / "findings.csv").open(newline="", encoding="utf-8") as f:
        by_resource = {r["resource_id"]: r for r in csv.DictReader(f)}
    assert by_resource["i-dev"]["finding_key"] == finding_key("GPU001", "i-dev")
    assert by_resource["i-dev"]["finding_id"] == finding_id("GPU001", "i-dev", "2026-W48")
    assert report.week == "2026-W48"


def _cli(config: Config, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--config", str(config.path), *args])
    return result.exit_code, result.output


def test_ack_leaves_the_total_until_its_date_then_counts_again(tmp_path: Path, empty_marts: Path) -> None:
    config = load_config(write_config(tmp_path, "{}\n"))
    con = open_copy(empty_marts, config.warehouse_path)
    _history(con)
    put_findings(con, W49, "GPU001", [{"resource_id": "i-dev", "estimated_waste": 400, "team": "nlp"}])
    con.close()  # the CLI opens the warehouse itself (one writer at a time)

    code, out = _cli(
        config, "ack", finding_id("GPU001", "i-dev", "2026-W48"), "--until", "2026-11-29",
        "--reason", "warm pool for the launch", "--by", "ana",
    )  # fmt: skip
    assert code == 0, out
    assert (
        "GPU001:i-dev" in out
        and "acknowledged until 2026-11-29" in out
        and "4 week(s), latest 2026-11-30" in out
    )

    con = connect(config.warehouse_path)
    try:
        w48 = write_report(con, config, W48)
        w49 = write_report(con, config, W49)
        [acked] = w48.acknowledged
        assert (acked["resource_id"], acked["ack_reason"], acked["acked_by"]) == (
            "i-dev",
            "warm pool for the launch",
            "ana",
        )
        assert acked["acked_until"] == date(2026, 11, 29) and not acked["counted"]
        [h] = w48.headline
        assert h["waste"] == Decimal("330.00")  # 300 + 30: i-dev's 450 left out ...
        assert (h["acknowledged_waste"], h["acknowledged_findings"]) == (
            Decimal("450.00"),
            1,
        )  # ... and shown
        # 2026-W49 starts on 2026-11-30, after the ack's date: i-dev counts again
        assert _by_resource(w49)["i-dev"]["counted"] and w49.acknowledged == []
        # the ack also covers last week, so last week's total (and this week's comparison) drop it too
        assert h["prev_waste"] == Decimal("820.00")
        assert [a["resource_id"] for a in in_force(con, date(2026, 11, 23))] == ["i-dev"]
        assert in_force(con, date(2026, 11, 30)) == []
    finally:
        con.close()
    html = (config.reports_path / "2026-W48" / "findings.html").read_text(encoding="utf-8")
    assert "warm pool for the launch" in html  # the acknowledged findings are listed with every finding

    code, out = _cli(config, "ack", "--list")
    assert code == 0 and "GPU001:i-dev  until 2026-11-29  warm pool for the launch (ana" in out
    code, out = _cli(config, "ack", "GPU001:i-dev", "--revoke", "--reason", "launch is over")
    assert code == 0 and "ack revoked" in out
    con = connect(config.warehouse_path)
    try:
        assert write_report(con, config, W48).headline[0]["waste"] == Decimal("780.00")
        assert in_force(con) == []
    finally:
        con.close()


def test_ack_names_a_finding_by_key_or_rule_and_resource(
    warehouse: tuple[Config, duckdb.DuckDBPyConnection],
) -> None:
    _, con = warehouse
    key = finding_key("GPU001", "i-zombie")
    by_key = resolve(con, key)
    by_name = resolve(con, "gpu001:i-zombie")  # rule ids and names in any case
    by_rule_name = resolve(con, "idle-gpu-instance:i-zombie")
    assert by_key.finding_key == by_name.finding_key == by_rule_name.finding_key == key
    assert by_key.finding_id is None  # a key names no single week
    assert resolve(con, finding_id("GPU001", "i-zombie", "2026-W47")).finding_id == finding_id(
        "GPU001", "i-zombie", "2026-W47"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ack", "0123456789abcdef", "--until", "2026-12-31", "--reason", "x"], "0123456789abcdef: no such finding"),
        (["ack", "GPU001:i-nothing", "--until", "2026-12-31", "--reason", "x"], "no GPU001 finding for resource 'i-nothing'"),
        (["ack", "NOPE001:i-dev", "--until", "2026-12-31", "--reason", "x"], "unknown rule 'NOPE001'"),
        (["ack", "GPU001:i-dev", "--until", "2026-12-31"], "--reason is required"),
        (["ack", "GPU001:i-dev", "--reason", "x"], "give --until DATE to acknowledge, or --revoke"),
        (["ack", "GPU001:i-dev", "--until", "31/12/2026", "--reason", "x"], "'31/12/2026' does not match the format"),
        (["ack", "--until", "2026-12-31", "--reason", "x"], "name a FINDING"),
    ],
)  # fmt: skip
def test_ack_errors_name_the_problem_and_change_nothing(
    tmp_path: Path, args: list[str], message: str, empty_marts: Path
) -> None:
    config = load_config(write_config(tmp_path, "{}\n"))
    con = open_copy(empty_marts, config.warehouse_path)
    _history(con)
    con.close()
    code, out = _cli(config, *args)
    assert code == 2 and message in out, out
    con = connect(config.warehouse_path, read_only=True)
    try:
        assert rows(con, "select count(*) as n from finding_acks")[0]["n"] == 0
    finally:
        con.close()


def test_resolve_refuses_an_empty_name(warehouse: tuple[Config, duckdb.DuckDBPyConnection]) -> None:
    with pytest.raises(AckError, match="name a finding"):
        resolve(warehouse[1], "  ")


# --------------------------------------------------------------------------------------------- end to end

SMI_HEADER = (
    "timestamp, name, pci.bus_id, uuid, index, utilization.gpu [%], utilization.memory [%], memory.total [MiB], "
    "memory.used [MiB], memory.free [MiB], power.draw [W], power.limit [W], temperature.gpu, "
    "clocks.current.sm [MHz], clocks.current.memory [MHz], pstate"
)
FOCUS_COLUMNS = (
    "BilledCost", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd", "ChargeCategory",
    "ChargePeriodStart", "ChargePeriodEnd", "EffectiveCost", "ListCost", "ProviderName", "RegionId",
    "ResourceId", "ResourceType", "ServiceCategory", "ServiceName", "SkuPriceDetails", "SubAccountId", "Tags",
)  # fmt: skip
PRICE = 98.32  # an hour of a p5.48xlarge


def _focus_rows(
    resource_id: str, host: str, team: str, start: datetime, end: datetime
) -> list[dict[str, str]]:
    out, t = [], start
    while t < end:
        out.append(
            {
                "BilledCost": f"{PRICE:.2f}", "BillingCurrency": "USD", "BillingPeriodStart": "2026-11-01T00:00:00Z",
                "BillingPeriodEnd": "2026-12-01T00:00:00Z", "ChargeCategory": "Usage",
                "ChargePeriodStart": f"{t:%Y-%m-%dT%H:%M:%SZ}",
                "ChargePeriodEnd": f"{t + timedelta(hours=1):%Y-%m-%dT%H:%M:%SZ}",
                "EffectiveCost": f"{PRICE:.2f}", "ListCost": f"{PRICE:.2f}", "ProviderName": "AWS",
                "RegionId": "us-east-1", "ResourceId": resource_id, "ResourceType": "Instance",
                "ServiceCategory": "Compute", "ServiceName": "Amazon Elastic Compute Cloud",
                "SkuPriceDetails": json.dumps({"InstanceType": "p5.48xlarge", "GpuCount": 8}),
                "SubAccountId": "111122223333", "Tags": json.dumps({"team": team, "Name": host}),
            }
        )  # fmt: skip
        t += timedelta(hours=1)
    return out


def _smi(path: Path, start: datetime, end: datetime, busy: tuple[int, int] | None) -> None:
    """nvidia-smi --query-gpu CSV for 8 H100s every 5 minutes; busy between the given UTC hours."""
    lines = [SMI_HEADER]
    t = start
    while t < end:
        util = 85 if busy and busy[0] <= t.hour < busy[1] else 0
        for g in range(8):
            lines.append(
                f"{t:%Y/%m/%d %H:%M:%S}.000, NVIDIA H100 80GB HBM3, 00000000:{g + 10:02X}:00.0, "
                f"GPU-{path.stem[:8]}-{g:04d}-0000-0000-000000000000, {g}, {util} %, 0 %, 81559 MiB, "
                f"{20000 if util else 0} MiB, {61559 if util else 81559} MiB, {600 if util else 70}.00 W, 700.00 W, "
                f"40, 1980 MHz, 2619 MHz, P0"
            )
        t += timedelta(minutes=5)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.e2e
def test_two_weeks_from_raw_files_a_fixed_zombie_is_resolved_with_its_savings(tmp_path: Path) -> None:
    """The issue's acceptance: week 1 has a dev box idle at night and a zombie idle all week; the zombie is
    terminated before week 2. Real readers, marts and rules; the week-2 report lists it as resolved and
    counts its week-1 waste as realised savings."""
    billing = tmp_path / "landing" / "billing"
    telemetry = tmp_path / "landing" / "telemetry"
    billing.mkdir(parents=True)
    telemetry.mkdir(parents=True)
    lines = _focus_rows("i-dev", "gpu-dev", "nlp", W47.start, W48.end)
    lines += _focus_rows("i-zombie", "gpu-zombie", "vision", W47.start, W47.end)  # terminated Monday of W48
    with (billing / "focus-2026-11.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=FOCUS_COLUMNS)
        w.writeheader()
        w.writerows(lines)
    for week in (W47, W48):
        _smi(telemetry / f"gpu-dev_{week.label}.csv", week.start, week.end, busy=(9, 18))
    _smi(telemetry / f"gpu-zombie_{W47.label}.csv", W47.start, W47.end, busy=None)
    config = load_config(
        write_config(
            tmp_path,
            """
            sources:
              - {name: focus, kind: focus, uri: landing/billing/}
              - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
            tags:
              team: [team]
              host: [Name]
            """,
        )
    )
    con = connect(config.warehouse_path)
    try:
        outcome = ingest(con, config)
        assert not outcome.rejected
        build_marts(con)
        for week in (W47, W48):
            evaluate_week(con, config, week)
        gpu001 = {
            (r["week_start"], r["resource_id"]): r["estimated_waste"]
            for r in rows(con, "select * from findings where rule_id = 'GPU001' and status = 'waste'")
        }
        zombie_w47 = gpu001[(W47.start.date(), "i-zombie")]
        assert zombie_w47 == Decimal("16517.76")  # 168 idle hours x 98.32
        assert (W48.start.date(), "i-zombie") not in gpu001 and (W48.start.date(), "i-dev") in gpu001
        report = write_report(con, config, W48)
    finally:
        con.close()
    [resolved] = report.resolved
    assert (resolved["resource_id"], resolved["last_week_waste"], resolved["now"]) == (
        "i-zombie",
        zombie_w47.quantize(Decimal("0.01")),
        "gone",
    )
    assert report.savings() == {"USD": zombie_w47.quantize(Decimal("0.01"))}
    dev = next(f for f in report.findings if f["resource_id"] == "i-dev" and f["rule_id"] == "GPU001")
    assert dev["lifecycle"] in {"persisting", "growing", "shrinking"} and dev["weeks_open"] == 2
    html = (config.reports_path / "2026-W48" / "report.html").read_text(encoding="utf-8")
    assert f'id="savings-USD">USD {zombie_w47:,.2f}' in html
    assert 'id="count-resolved">1<' in html


def test_a_finding_that_lost_its_telemetry_is_not_savings(tmp_path: Path, empty_marts: Path) -> None:
    config = load_config(write_config(tmp_path, "{}\n"))
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        _spend(con, W47, W48)
        put_findings(con, W47, "GPU001", [{"resource_id": "i-dark", "estimated_waste": 900}])
        put_findings(
            con,
            W48,
            "GPU001",
            [{"resource_id": "i-dark", "estimated_waste": 0, "status": "insufficient_data"}],
        )
        report = write_report(con, config, W48)
    finally:
        con.close()
    [resolved] = report.resolved
    assert (resolved["resource_id"], resolved["now"]) == ("i-dark", "insufficient_data")
    assert report.savings() == {}  # missing data never reads as "fixed"
