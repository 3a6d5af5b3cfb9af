"""`wastewatch export showback`: one month of the showback mart as a chargeback file (CSV or Parquet), one row
per currency x team x pool x service adding up to the month's bill, then each team's counted waste; only a
file whose manifest names its content is replaced, anything else at the path is refused and left alone."""

from __future__ import annotations

import csv
import json
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.export.focus import UsageError
from pipelines.export.showback import export_showback, manifest_path
from pipelines.warehouse import connect
from tests.helpers.config import write_config

SHOWBACK = """
create table showback (
    month date, week date, currency varchar, team varchar, project varchar, kind varchar, rule varchar,
    method varchar, measure varchar, share double, service varchar, cost decimal(38, 12),
    waste decimal(18, 6), findings integer)
"""
NOV, DEC = date(2026, 11, 1), date(2026, 12, 1)
ROWS = [
    # month, week, currency, team, project, kind, rule, method, share, service, cost
    (NOV, date(2026, 11, 2), "USD", "ml", "llm", "direct", None, None, None, "EC2", "100.000000000001"),
    (NOV, date(2026, 11, 9), "USD", "ml", "llm", "direct", None, None, None, "EC2", "50"),
    (NOV, date(2026, 11, 9), "USD", "ml", None, "allocated", "support", "even", 0.5, "Support", "5.005"),
    (NOV, date(2026, 11, 9), "USD", "infra", None, "allocated", "support", "even", 0.5, "Support", "5.005"),
    (NOV, date(2026, 11, 9), "USD", None, None, "unallocated", None, None, None, "VPC", "7"),
    (NOV, date(2026, 11, 9), "EUR", "infra", None, "direct", None, None, None, "VM", "30"),
    (DEC, date(2026, 11, 30), "USD", "ml", "llm", "direct", None, None, None, "EC2", "9"),
]


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "warehouse" / "w.duckdb")
    con.execute(SHOWBACK)
    for r in ROWS:
        con.execute(
            "insert into showback values ($m, $w, $c, $t, $p, $k, $r, $me, null, $s, $sv, $cost, 0, 0)",
            dict(zip(["m", "w", "c", "t", "p", "k", "r", "me", "s", "sv", "cost"], r, strict=True)),
        )
    con.execute(
        "insert into findings (finding_id, rule_id, rule_name, category, severity, week_start, week_end, "
        "team, status, reason, estimated_waste, currency, detected_at, counted) values "
        "('f1', 'GPU001', 'idle', 'gpu', 'high', '2026-11-09', '2026-11-15', 'ml', 'waste', 'idle', 12.5, "
        "'USD', now(), true), "
        "('f2', 'GPU001', 'idle', 'gpu', 'high', '2026-11-16', '2026-11-22', 'ml', 'waste', 'idle', 2.5, "
        "'USD', now(), true), "
        "('f3', 'GPU002', 'over', 'gpu', 'high', '2026-11-16', '2026-11-22', 'ml', 'waste', 'x', 99, "
        "'USD', now(), false)"
    )
    return con


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_one_row_per_team_pool_and_service_adding_up_to_the_month(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    out = tmp_path / "nov.csv"
    result = export_showback(con, "2026-11", "csv", out)
    found = _csv(out)
    cost = [
        (r["currency"], r["team"], r["pool"], r["service"], Decimal(r["cost"]))
        for r in found
        if r["kind"] != "waste"
    ]
    assert cost == [
        ("EUR", "infra", "direct", "VM", Decimal("30")),
        ("USD", "infra", "support", "Support", Decimal("5.005")),
        ("USD", "ml", "support", "Support", Decimal("5.005")),
        ("USD", "ml", "direct", "EC2", Decimal("150.000000000001")),  # two weeks, one row
        ("USD", "unallocated", "unallocated", "VPC", Decimal("7")),
    ]
    assert result.totals == {"EUR": "30.000000000000", "USD": "167.010000000001"}
    assert {r["month"] for r in found} == {"2026-11"}
    # the counted waste of the findings of the month's weeks, beside the cost and never in it
    waste = [(r["team"], Decimal(r["waste"]), r["findings"]) for r in found if r["kind"] == "waste"]
    assert waste == [("ml", Decimal("15"), "2")]
    assert result.rows == len(found) == 6


def test_parquet_keeps_exact_decimals(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    out = tmp_path / "nov.parquet"
    export_showback(con, "2026-11", "parquet", out)
    total = con.execute(
        "select sum(cost), typeof(any_value(cost)) from read_parquet($p) where currency = 'USD'",
        {"p": str(out)},
    ).fetchone()
    assert total == (Decimal("167.010000000001"), "DECIMAL(38,12)")


def test_only_a_file_of_ours_is_replaced(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    foreign = tmp_path / "finance.csv"
    foreign.write_text("their,numbers\n")
    with pytest.raises(UsageError, match=r"finance.csv: a file wastewatch did not write"):
        export_showback(con, "2026-11", "csv", foreign)
    assert foreign.read_text() == "their,numbers\n" and not manifest_path(foreign).exists()
    ours = tmp_path / "nov.csv"
    export_showback(con, "2026-11", "csv", ours)
    first = json.loads(manifest_path(ours).read_text())
    again = export_showback(con, "2026-11", "csv", ours)  # ours: replaced
    assert again.replaced and len(json.loads(manifest_path(ours).read_text())["sha256"]) == 1
    assert first["kind"] == "wastewatch-showback-export" and first["month"] == "2026-11"
    # a file of ours someone changed since is no longer ours to replace
    ours.write_text(ours.read_text() + "edited by hand\n")
    with pytest.raises(UsageError, match="changed since"):
        export_showback(con, "2026-12", "csv", ours)
    assert ours.read_text().endswith("edited by hand\n")
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith("wastewatch-tmp")]


def test_a_month_without_showback_names_those_held(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    with pytest.raises(
        UsageError, match=r"no showback for 2026-10 in the warehouse \(it holds 2026-12, 2026-11\)"
    ):
        export_showback(con, "2026-10", "csv", tmp_path / "oct.csv")
    assert not (tmp_path / "oct.csv").exists()


def test_the_cli_writes_the_file_and_refuses_a_foreign_one_with_exit_2(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    con.close()
    config = write_config(tmp_path, "warehouse: warehouse/w.duckdb\n")
    out = tmp_path / "nov.csv"
    result = CliRunner().invoke(
        main, ["--config", str(config), "export", "showback", "--month", "2026-11", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "exported showback for 2026-11: 6 row(s) (EUR 30.00, USD 167.01) as csv" in result.output
    (tmp_path / "other.csv").write_text("x\n")
    result = CliRunner().invoke(
        main,
        [
            "--config",
            str(config),
            "export",
            "showback",
            "--month",
            "2026-11",
            "--out",
            str(tmp_path / "other.csv"),
        ],
    )
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "other.csv: a file wastewatch did not write" in errors[0]
    assert "Traceback" not in result.output
    bad = CliRunner().invoke(
        main, ["--config", str(config), "export", "showback", "--month", "2026-13", "--out", str(out)]
    )
    assert bad.exit_code == 2 and "not a month: '2026-13'" in bad.output


def test_a_killed_exports_leftover_is_cleared_and_a_live_ones_kept(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    import os

    dead = tmp_path / ".nov.csv.999999999.wastewatch-tmp"
    live = tmp_path / f".nov.csv.{os.getppid()}.wastewatch-tmp"  # a running process: not ours to clear
    other = tmp_path / ".notes.csv.999999999.wastewatch-tmp"  # another file's: left alone
    for p in (dead, live, other):
        p.write_text("partial")
    result = export_showback(con, "2026-11", "csv", tmp_path / "nov.csv")
    assert result.cleaned == [dead.name]
    assert not dead.exists() and live.exists() and other.exists()
