"""The ten example questions: listed with their SQL in docs/schema.md; each runs as shipped through
`wastewatch sql --file ... --week` (on an empty built warehouse, and on the demo's published copy, where its
answer is compared with the report's figure for the same week)."""

from __future__ import annotations

import csv
import json
import re
import shlex
from collections import defaultdict
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import load_config
from pipelines.report.adhoc import run_script, week_params
from pipelines.report.collect import collect_report
from pipelines.report.model import WeeklyReport
from pipelines.report.questions import questions, render_markdown
from pipelines.warehouse import connect, header, sql_root
from rules import Window
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.paths import REPO

SCHEMA_DOC = REPO / "docs" / "schema.md"
WEEK = "2026-W48"  # the demo's week (tests/conftest.py's demo_dir)
CENT = Decimal("0.01")

pytestmark = pytest.mark.e2e


def test_there_are_ten_documented_questions() -> None:
    qs = questions()
    assert len(qs) == 10
    for path in sorted((sql_root() / "reports" / "questions").glob("q*.sql")):
        meta = header(path.read_text(encoding="utf-8"))
        assert {"question", "grain", "depends_on"} <= set(meta), path.name
    md = render_markdown()
    assert md.count("```sql") == 10 and all(q.question in md for q in qs)


def _documented_questions() -> list[tuple[str, str]]:
    """(question, SQL) pairs of docs/schema.md's "Example questions" section, in order."""
    text = SCHEMA_DOC.read_text(encoding="utf-8")
    assert "\n## Example questions\n" in text
    section = text.split("\n## Example questions\n", 1)[1]
    return re.findall(r"^\d+\. \*\*(.+?)\*\*\n\n```sql\n(.*?)\n```$", section, re.MULTILINE | re.DOTALL)


def test_the_schema_reference_lists_the_ten_questions_with_their_sql() -> None:
    documented = _documented_questions()
    assert len(documented) == 10
    assert documented == [(q.question, q.sql) for q in questions()]
    assert all(sql.lstrip().lower().startswith(("select", "with")) for _, sql in documented)


def test_the_documented_sql_runs_on_a_freshly_built_warehouse(tmp_path: Path, empty_marts: Path) -> None:
    con = open_copy(empty_marts, tmp_path / "wastewatch.duckdb")
    try:
        for question, sql in _documented_questions():
            results = run_script(con, sql, week_params(WEEK))
            assert len(results) == 1 and results[0].columns, question
    finally:
        con.close()


# --- every shipped question, run as a user would, against the demo's report for the same week ---------


@dataclass
class Demo:
    directory: Path
    report: WeeklyReport
    csv: list[dict[str, str]]  # the week's findings.csv

    @property
    def counted(self) -> list[dict[str, str]]:
        return [f for f in self.csv if f["counted"] == "true"]


@pytest.fixture(scope="module")
def demo(demo_dir: tuple[Path, str]) -> Demo:
    """The demo's week as its report states it: the report model (read from the published copy, as the
    report was) and the findings.csv the report wrote."""
    directory, _ = demo_dir
    config = load_config(directory / "wastewatch.yaml")
    con = connect(config.published_path, read_only=True)
    try:
        report = collect_report(con, config, Window.iso_week(WEEK), directory / "reports" / WEEK)
    finally:
        con.close()
    with (directory / "reports" / WEEK / "findings.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows and report.headline
    return Demo(directory, report, rows)


def ask(demo: Demo, name: str, *extra: str) -> list[dict[str, Any]]:
    """`wastewatch sql --file sql/reports/questions/<name>.sql --week 2026-W48`, as the README shows it."""
    path = sql_root() / "reports" / "questions" / f"{name}.sql"
    result = CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(
        main,
        ["--config", str(demo.directory / "wastewatch.yaml"), "sql", "--file", str(path), "--week", WEEK,
         "--format", "json", *extra],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def cents(value: Any) -> Decimal:
    return Decimal(str(value)).quantize(CENT, ROUND_HALF_UP)


def test_every_shipped_question_is_checked_here() -> None:
    tested = {name.removeprefix("test_") for name in globals() if name.startswith("test_q")}
    assert {q.name.split("_")[0] for q in questions()} == {t.split("_")[0] for t in tested}


def test_q01_waste_by_team_adds_up_to_the_reports_waste(demo: Demo) -> None:
    answer = ask(demo, "q01_waste_by_team")
    expected: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)
    for f in demo.counted:
        expected[(f["team"] or "(untagged)", f["rule_id"], f["currency"])] += Decimal(f["estimated_waste"])
    got = {(r["team"], r["rule_id"], r["currency"]): Decimal(r["waste"]) for r in answer}
    assert got == {k: cents(v) for k, v in expected.items()}
    assert len(got) > 3
    # the report's headline waste, per currency, is these rows' total to within their rounding
    for h in demo.report.headline:
        total = sum((v for (_, _, c), v in got.items() if c == h["currency"]), Decimal(0))
        assert h["waste"] > 0 and abs(total - h["waste"]) <= Decimal("0.005") * len(got)
    # attention findings (COST001's untagged spend, COST003's anomalies) never reach the waste
    assert not {r["rule_id"] for r in answer} & {"COST001", "COST002", "COST003"}


def test_q02_longest_open_findings_state_the_reports_cumulative_waste(demo: Demo) -> None:
    answer = ask(demo, "q02_longest_open_findings")
    by_key = {f["finding_key"]: f for f in demo.counted}
    assert len(answer) == min(20, len(by_key))
    for r in answer:
        f = by_key[r["finding_key"]]
        assert (r["rule_id"], r["resource_id"]) == (f["rule_id"], f["resource_id"] or None)
        assert Decimal(r["cumulative_waste"]) == cents(f["cumulative_waste"])
        assert r["weeks_counted"] == int(f["weeks_open"]) == 1  # the demo's first week
    largest = max(Decimal(f["cumulative_waste"]) for f in demo.counted)
    assert Decimal(answer[0]["cumulative_waste"]) == cents(largest)


def _fleet(demo: Demo) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The report's GPU fleet rows by GPU model, cost basis (bill, owned, contract) and currency."""
    return {(g["gpu_model"], g["pricing_basis"], g["currency"]): g for g in demo.report.gpu_fleet}


def test_q03_idle_gpu_instances_add_up_to_the_reports_idle_gpu_hours(demo: Demo) -> None:
    answer = ask(demo, "q03_idle_gpu_instances")
    assert demo.report.idle_util_pct == 5  # the question's threshold is GPU001's, as the demo configures it
    idle: dict[str, int] = defaultdict(int)
    for r in answer:
        idle[r["gpu_model"]] += r["idle_gpu_hours"]
    by_model: dict[str, int] = defaultdict(int)
    for (model, _, _), g in _fleet(demo).items():
        by_model[model] += g["idle_gpu_hours"]
    assert idle == {m: n for m, n in by_model.items() if n}
    # the instances GPU001 counted as idle are among them
    gpu001 = {f["resource_id"] for f in demo.counted if f["rule_id"] == "GPU001"}
    assert gpu001 and gpu001 <= {r["resource_id"] for r in answer}


def test_q04_cost_per_gpu_hour_is_the_reports_gpu_fleet(demo: Demo) -> None:
    answer = ask(demo, "q04_cost_per_gpu_hour_by_model")
    fleet = _fleet(demo)
    assert {(r["gpu_model"], r["pricing_basis"], r["currency"]) for r in answer} == set(fleet)
    assert {m for m, basis, _ in fleet if basis == "bill"} == {"H100", "A100"}
    assert {basis for _, basis, _ in fleet} == {"bill", "owned", "contract"}  # the research clusters
    for r in answer:
        g = fleet[(r["gpu_model"], r["pricing_basis"], r["currency"])]
        assert (r["instances"], r["gpu_hours"]) == (g["instances"], g["gpu_hours"])
        assert Decimal(r["cost"]) == cents(g["cost"])
        assert abs(Decimal(str(r["cost_per_gpu_hour"])) - g["cost_per_gpu_hour"]) < Decimal("0.0001")


def test_q05_untagged_spend_adds_up_to_the_reports_spend_without_a_team(demo: Demo) -> None:
    answer = ask(demo, "q05_untagged_spend")
    assert "acme-scratch" in {r["resource_id"] for r in answer}
    for q in demo.report.data_quality:
        rows = [Decimal(r["untagged_spend"]) for r in answer if r["currency"] == q["currency"]]
        without_team = q["spend"] - q["tagged_spend"]
        assert without_team > 0 and abs(sum(rows) - without_team) <= Decimal("0.005") * len(rows)


def test_q06_month_to_date_runs_to_the_weeks_end(demo: Demo) -> None:
    answer = ask(demo, "q06_month_to_date_by_team")
    # the report's spend of the week per team, plus what the bill put in the month before the week
    week: dict[str, Decimal] = defaultdict(Decimal)
    for r in demo.report.spend_by_category:
        week[r["team"]] += r["total"]
    con = connect(demo.directory / "warehouse" / "wastewatch.published.duckdb", read_only=True)
    try:
        before = dict(
            con.execute(
                "select coalesce(team, '(untagged)'), sum(effective_cost) from cost_hourly "
                "where hour >= '2026-11-01' and hour < '2026-11-23' group by 1"
            ).fetchall()
        )
    finally:
        con.close()
    assert sum(before.values()) > 0  # the demo's month starts before its week
    got = {r["team"]: Decimal(r["month_to_date"]) for r in answer}
    assert set(got) == set(week) | set(before)
    for team, value in got.items():
        assert abs(value - week.get(team, Decimal(0)) - cents(before.get(team, 0))) <= Decimal("0.02"), team
    assert all(Decimal(r["same_days_last_month"]) == 0 for r in answer)  # the demo bills no October


def test_q07_weekly_spend_by_category_has_the_reports_spend_for_the_week(demo: Demo) -> None:
    answer = ask(demo, "q07_weekly_spend_by_service_category")
    assert all("2026-10-05" <= r["week_start"] <= "2026-11-23" for r in answer)  # eight weeks up to it
    for h in demo.report.headline:
        rows = [
            Decimal(r["spend"])
            for r in answer
            if r["week_start"] == "2026-11-23" and r["currency"] == h["currency"]
        ]
        assert h["spend"] > 0 and abs(sum(rows) - h["spend"]) <= Decimal("0.005") * len(rows)
    # the report rounds each team x project x basis row to the cent; the question rounds the week's total
    rows = demo.report.spend_by_category
    [compute] = [
        Decimal(r["spend"])
        for r in answer
        if r["week_start"] == "2026-11-23" and r["service_category"] == "Compute"
    ]
    assert compute > 0 and abs(compute - sum(r["compute"] for r in rows)) <= Decimal("0.005") * len(rows)


def test_q08_low_utilisation_hosts_cover_the_reports_utilisation_histogram(demo: Demo) -> None:
    answer = ask(demo, "q08_low_utilisation_hosts")
    assert sum(r["gpu_hours"] for r in answer) == sum(demo.report.util_bands.values()) > 0
    under_20 = sum(v for band, v in demo.report.util_bands.items() if band < 20)
    assert sum(r["gpu_hours_under_20_pct"] for r in answer) == under_20
    means = [r["mean_util_pct"] for r in answer]
    assert means == sorted(means)


def test_q09_acks_lapsing_soon_are_the_reports_acknowledged_findings(demo: Demo) -> None:
    answer = ask(demo, "q09_acks_lapsing_soon")
    acknowledged = [f for f in demo.csv if f["acknowledged"] == "true" and f["acked_until"] < "2026-12-14"]
    assert (
        [r["finding_key"] for r in answer] == [f["finding_key"] for f in acknowledged] == []
    )  # the demo acks none


def test_q10_rejected_files_are_the_reports(demo: Demo) -> None:
    answer = ask(demo, "q10_rejected_files")
    assert [r["uri"] for r in answer] == [x["uri"] for x in demo.report.rejected_files]


def test_the_readmes_question_command_works_as_written(demo: Demo) -> None:
    """The README's ad-hoc example, with `demo/` (what `make demo` writes) standing for the test's demo."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [x for x in readme.splitlines() if x.startswith("wastewatch --config demo/") and " sql " in x]
    assert len(lines) == 1
    args = shlex.split(lines[0])[1:]
    args[args.index("--config") + 1] = str(demo.directory / "wastewatch.yaml")
    file = args.index("--file") + 1
    args[file] = str(REPO / args[file])
    result = CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].split() == ["team", "rule_id", "currency", "waste", "findings"]
    assert result.stdout.splitlines()[-1] == f"({len(ask(demo, 'q01_waste_by_team'))} rows)"


def test_the_first_query_make_demo_suggests_adds_up_to_the_reports_waste(demo: Demo) -> None:
    """README's (and `make demo`'s) first `sql` example answers for the report's week and waste rules."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [
        x.strip() for x in readme.splitlines() if x.strip().startswith(".venv/bin/wastewatch --config demo/")
    ]
    example = next(x for x in lines if ' sql "select ' in x)
    query = shlex.split(example)[-1]
    assert query.replace('"', '\\"') in (REPO / "Makefile").read_text(
        encoding="utf-8"
    )  # make demo says the same
    result = CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(
        main,
        ["--config", str(demo.directory / "wastewatch.yaml"), "sql", "--format", "json", query],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert {r["rule_id"] for r in answer} == {f["rule_id"] for f in demo.counted}
    for h in demo.report.headline:
        total = sum((Decimal(str(r["waste"])) for r in answer if r["currency"] == h["currency"]), Decimal(0))
        assert h["waste"] > 0 and cents(total) == cents(h["waste"])


def test_the_published_copy_carries_the_schema_notes(demo: Demo) -> None:
    con = connect(demo.directory / "warehouse" / "wastewatch.published.duckdb", read_only=True)
    try:
        commented = con.execute(
            "select count(*) from duckdb_columns() where comment is not null and table_name = 'billing_line_items'"
        ).fetchall()[0][0]
        mart = con.execute("select comment from duckdb_tables() where table_name = 'gpu_hours'").fetchall()
    finally:
        con.close()
    assert commented >= 60 and mart[0][0].startswith("Grain: one row per GPU x hour with telemetry samples;")
