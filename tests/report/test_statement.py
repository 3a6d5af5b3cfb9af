"""Each team's monthly statement from the showback mart (pipelines/report/statement.py): direct cost, each
pool with its rule in words and the team's share, the total this month and last, by service, and the counted
waste beside the total, never in it (read from the findings as they are when the report is written); the
unallocated rest has a statement of its own."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from html import unescape
from pathlib import Path
from types import SimpleNamespace

from pipelines.report.render import environment
from pipelines.report.statement import collect_statements, statement_html
from pipelines.transform.build import build_intermediate
from rules import Window
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.report import put_findings

NOV, OCT = date(2026, 11, 1), date(2026, 10, 1)
ROWS = [
    # month, team, kind, rule, method, measure, share, service, cost, waste, findings
    (NOV, "nlp", "direct", None, None, None, None, "Amazon EC2", "1000.50", "0", 0),
    (NOV, "nlp", "direct", None, None, None, None, "Amazon S3", "20.25", "0", 0),
    (NOV, "nlp", "allocated", "support-plan", "fixed", None, 0.3, "AWS Support", "300.00", "0", 0),
    (
        NOV,
        "nlp",
        "allocated",
        "a100-pool",
        "proportional",
        "busy_gpu_hours",
        0.625,
        "Amazon EC2",
        "125.00",
        "0",
        0,
    ),
    (OCT, "nlp", "direct", None, None, None, None, "Amazon EC2", "900.00", "0", 0),
    (OCT, "nlp", "allocated", "support-plan", "fixed", None, 0.3, "AWS Support", "300.00", "0", 0),
    (NOV, None, "unallocated", None, None, None, None, "Tax", "42.00", "0", 0),
    (NOV, None, "unallocated", "monitoring", "even", None, None, "Amazon CloudWatch", "7.00", "0", 0),
]


def _warehouse(tmp_path: Path):  # noqa: ANN202 - a DuckDB connection
    con = new_warehouse(tmp_path / "w.duckdb")
    con.execute(
        "create or replace table showback (month date, week date, currency varchar, team varchar, project "
        "varchar, kind varchar, rule varchar, method varchar, measure varchar, share double, service varchar, "
        "cost decimal(38, 12), waste decimal(38, 12), findings bigint)"
    )
    build_intermediate(con)  # int_counted_waste: the findings' waste as they are now
    # three counted findings of nlp in a November week: the waste its statement shows beside its total
    put_findings(con, Window.iso_week("2026-W46"), "GPU001", [
        {"resource_id": f"i-{n}", "estimated_waste": w, "team": "nlp"} for n, w in enumerate((30, 30, 28.10))
    ])  # fmt: skip
    for m, team, kind, rule, method, measure, share, service, cost, waste, n in ROWS:
        con.execute(
            "insert into showback values ($m, $m, 'USD', $team, null, $kind, $rule, $method, $measure, $share, "
            "$service, $cost, $waste, $n)",
            {"m": m, "team": team, "kind": kind, "rule": rule, "method": method, "measure": measure,
             "share": share, "service": service, "cost": cost, "waste": waste, "n": n},
        )  # fmt: skip
    return con


def test_a_teams_statement_adds_its_direct_cost_and_pools_and_shows_its_waste_beside(tmp_path: Path) -> None:
    con = _warehouse(tmp_path)
    try:
        statements = {s.team: s for s in collect_statements(con, NOV, {"nlp": "nlp-1a2b3c4d"})}
    finally:
        con.close()
    nlp = statements["nlp"]
    assert nlp.direct == (Decimal("1020.75"), Decimal("900.00"))
    assert [(p.rule, p.this_month, p.last_month) for p in nlp.pools] == [
        ("a100-pool", Decimal("125.00"), Decimal(0)),
        ("support-plan", Decimal("300.00"), Decimal("300.00")),
    ]
    assert nlp.total == (Decimal("1445.75"), Decimal("1200.00"))  # waste not in it
    assert (nlp.waste, nlp.findings) == (Decimal("88.10"), 3)
    assert nlp.services[0] == ("Amazon EC2", Decimal("1125.50"), Decimal("900.00"))
    rest = statements["unallocated"]
    assert rest.unallocated == rest.total == (Decimal("49.00"), Decimal(0))
    html = unescape(
        statement_html(
            nlp, SimpleNamespace(week="2026-W46", generated_at=datetime(2026, 11, 17)), environment()
        )
    )
    assert 'href="../teams/nlp-1a2b3c4d.html"' in html
    assert "in proportion to each team's busy GPU-hours on the cluster: 62.5 % to this team" in html
    assert "a fixed share: 30.0 % to this team" in html
    assert 'id="statement-total"><b>USD 1,445.75</b>' in html
    assert 'Counted waste this month: <b class="waste">USD 88.10</b> in 3 finding(s)' in html
    assert "wastewatch export showback --month 2026-11" in html


def test_without_a_showback_mart_there_is_no_statement(tmp_path: Path) -> None:
    con = new_warehouse(tmp_path / "w.duckdb")
    try:
        con.execute("drop table if exists showback")
        assert collect_statements(con, NOV, {}) == []
    finally:
        con.close()


def test_a_rewrite_removes_only_the_statements_it_wrote(tmp_path: Path) -> None:
    """A team gone since the week's last write loses its page; a file wastewatch did not write there stays."""
    from pipelines.report.write import _write_pages

    folder = tmp_path / "statements"
    _write_pages(folder, {"a-USD.html": "a", "b-USD.html": "b"}, lambda page: f"<p>{page}</p>")  # type: ignore[arg-type]
    (folder / "mine.html").write_text("a note a person left here", encoding="utf-8")
    _write_pages(folder, {"a-USD.html": "a2"}, lambda page: f"<p>{page}</p>")  # type: ignore[arg-type]
    assert sorted(p.name for p in folder.glob("*.html")) == ["a-USD.html", "mine.html"]
    assert (folder / "a-USD.html").read_text() == "<p>a2</p>"
    assert (folder / "mine.html").read_text() == "a note a person left here"
