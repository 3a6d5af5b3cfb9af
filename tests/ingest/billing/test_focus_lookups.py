"""Values a FOCUS file's lines look up instead of computing each (pipelines/ingest/billing/lookups.py): a
text timestamp's value and billing period from `_billing_calendar`, a tag text's set id from
`_billing_tag_ids`. A line's value is the same whether its text was looked up or not: text forms the
calendar lacks, hours outside it, tags first seen past the file's first 10,000 lines; and a bad value is
still refused naming its data row and column, inside or past those first lines."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.ingest.billing import tag_sets
from pipelines.ingest.billing.relation import Relation
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

HEADER = ["BilledCost", "EffectiveCost", "ChargePeriodStart", "ChargePeriodEnd", "BillingPeriodStart",
          "BillingPeriodEnd", "BillingCurrency", "ResourceId", "Tags"]  # fmt: skip
LINES = 12_000  # past the 10,000 lines the lookups are filled from

# text forms of a timestamp: those the calendar holds (on the hour, the forms it writes) and others
ODD = ["2026-11-02T05:30:00Z", "2026-11-02T05:00:00-05:00", "2026-11-03", "2026-11-02 05:00:00.000",
       "2026-11-02T07:00:00.000Z"]  # fmt: skip


def _start(n: int) -> str:
    if n % 97 == 0:
        return ODD[(n // 97) % len(ODD)]
    day, hour = divmod(n % 700, 24)
    return f"2026-11-{day + 1:02d} {hour:02d}:00:00" if n % 5 else f"2026-11-{day + 1:02d}T{hour:02d}:00:00Z"


def _row(n: int, bad: str | None = None) -> list[str]:
    tags = {"team": f"t{n % 40}"} if n < 10_000 else {"team": f"late-{n % 7}", "run": str(n % 3)}
    return [
        f"{(n % 13) / 4:.2f}",
        f"{(n % 11) / 4:.2f}",
        bad if bad is not None else _start(n),
        "2026-11-30T23:00:00Z" if n % 3 else "2026-12-01 00:00:00",
        "2026-11-01 00:00:00" if n % 1000 else "2026-11-01T00:00:00Z",
        "2026-12-01 00:00:00",
        "USD",
        f"i-{n % 50:04d}",
        "" if n % 101 == 0 else json.dumps(tags, separators=(",", ":")),
    ]


def _write_csv(path: Path, lines: int = LINES, bad_at: int | None = None, bad: str = "") -> None:
    def cell(v: str) -> str:
        return '"' + v.replace('"', '""') + '"' if any(c in v for c in ',"') else v

    body = [",".join(HEADER)]
    body += [",".join(cell(v) for v in _row(n, bad if n == bad_at else None)) for n in range(lines)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(body) + "\n", encoding="utf-8")


def _load(tmp_path: Path, folder: Path) -> tuple[duckdb.DuckDBPyConnection, object]:
    cfg = load_config(
        write_config(
            tmp_path,
            f"""
            warehouse: w.duckdb
            sources:
              - {{name: bill, kind: focus, uri: '{folder}'}}
            """,
        )
    )
    con = new_warehouse(tmp_path / "w.duckdb")
    return con, ingest(con, cfg)


def test_looked_up_values_equal_each_line_s_own(tmp_path: Path) -> None:
    path = tmp_path / "bill" / "focus.csv"
    _write_csv(path)
    con, report = _load(tmp_path, path.parent)
    assert not report.rejected, report.summary()
    # the lookups were filled and used: the calendar in the file's two forms, the first lines' tag texts
    calendar = con.execute(
        "select count(*) filter (where v <> billing_ts(k) or per <> strftime(v, '%Y-%m')), "
        "list_sort(list(k) filter (where k like '2026-11-05%03:00:00%' or k like '2026-11-05')) from _billing_calendar"
    )
    assert calendar.fetchone() == (
        0,
        ["2026-11-05", "2026-11-05 03:00:00", "2026-11-05 03:00:00.000", "2026-11-05T03:00:00.000Z",
         "2026-11-05T03:00:00Z"],
    )  # fmt: skip
    tag_ids = con.execute("select count(*), count(*) filter (where v <> tag_set_id(k)) from _billing_tag_ids")
    assert tag_ids.fetchone() == (40, 0)
    # every line as the staging SQL computes it on its own line, from the file's text
    mismatched = con.execute(
        """
        with f as (
            select row_number() over () as n, * from read_csv($p, all_varchar = true, header = true)
        )
        select count(*),
            count(*) filter (where l.charge_period_start is distinct from billing_ts(f.ChargePeriodStart)
                or l.charge_period_end is distinct from billing_ts(f.ChargePeriodEnd)
                or l.billing_period_start is distinct from billing_ts(f.BillingPeriodStart)
                or l.billing_period_end is distinct from billing_ts(f.BillingPeriodEnd)
                or l.x_billing_period is distinct from strftime(billing_ts(f.BillingPeriodStart), '%Y-%m')
                or l.x_tag_set is distinct from tag_set_id(nullif(trim_text(f.Tags), '')))
        from billing_lines as l join f on f.n = l.x_source_row
        """,
        {"p": str(path)},
    ).fetchone()
    assert mismatched == (LINES, 0)


def test_a_line_without_a_billing_period_takes_its_charge_s_from_the_calendar(tmp_path: Path) -> None:
    path = tmp_path / "bill" / "focus.csv"
    path.parent.mkdir(parents=True)
    path.write_text(
        "BilledCost,EffectiveCost,ChargePeriodStart,ChargePeriodEnd,BillingPeriodStart\n"
        "1.00,1.00,2026-11-02 05:00:00,2026-11-02 06:00:00,\n"
        "2.00,2.00,2026-10-31 23:00:00,2026-11-01 00:00:00,2026-11-01 00:00:00\n"
        "3.00,3.00,2026-12-02 05:00:00,2026-12-02 06:00:00,\n",
        encoding="utf-8",
    )
    con, report = _load(tmp_path, path.parent)
    assert not report.rejected, report.summary()
    got = con.execute("select x_source_row, x_billing_period from billing_lines order by 1").fetchall()
    assert got == [(1, "2026-11"), (2, "2026-11"), (3, "2026-12")]


@pytest.mark.parametrize("bad_at", [3, 11_000])
def test_a_bad_timestamp_is_refused_naming_row_and_column_inside_or_past_the_first_lines(
    tmp_path: Path, bad_at: int
) -> None:
    path = tmp_path / "bill" / "focus.csv"
    _write_csv(path, bad_at=bad_at, bad="2026-11-02 05:00: 7")
    _, report = _load(tmp_path, path.parent)
    (rejected,) = report.rejected
    assert f"data row {bad_at + 1}" in rejected.error, rejected.error
    assert "ChargePeriodStart" in rejected.error and "'2026-11-02 05:00: 7'" in rejected.error


def test_parquet_tags_are_looked_up_by_their_json_text(tmp_path: Path) -> None:
    n = LINES
    tags = pa.array(
        [
            None if i % 101 == 0 else [("team", f"t{i % 40}" if i < 10_000 else f"late-{i % 7}")]
            for i in range(n)
        ],
        pa.map_(pa.string(), pa.string()),
    )
    start = pa.array([f"2026-11-{1 + i % 28:02d} {i % 24:02d}:00:00" for i in range(n)])
    table = pa.table(
        {
            "BilledCost": pa.array([i % 5 / 4 for i in range(n)]),
            "EffectiveCost": pa.array([i % 5 / 4 for i in range(n)]),
            "ChargePeriodStart": start.cast(pa.timestamp("us")),
            "ChargePeriodEnd": start.cast(pa.timestamp("us")),
            "BillingPeriodStart": pa.array(["2026-11-01 00:00:00"] * n),  # text in a Parquet file
            "BillingCurrency": pa.array(["USD"] * n),
            "Tags": tags,
        }
    )
    path = tmp_path / "bill" / "focus.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(table, path)
    con, report = _load(tmp_path, path.parent)
    assert not report.rejected, report.summary()
    assert con.execute("select count(*) from _billing_tag_ids").fetchone() == (40,)
    mismatched = con.execute(
        "select count(*), count(*) filter (where l.x_tag_set is distinct from tag_set_id(f.Tags) "
        "or l.billing_period_start is distinct from billing_ts(f.BillingPeriodStart) "
        "or l.x_billing_period <> '2026-11') "
        "from billing_lines as l join read_parquet($p, file_row_number = true) as f "
        "on f.file_row_number + 1 = l.x_source_row",
        {"p": str(path)},
    ).fetchone()
    assert mismatched == (n, 0)


def test_a_first_file_whose_tags_were_all_looked_up_is_not_read_again_for_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    real = tag_sets.file_params

    def counted(rel: Relation, spec: object, sql: str) -> dict[str, object]:
        reads.append(sql)
        return real(rel, spec, sql)  # type: ignore[arg-type]

    monkeypatch.setattr(tag_sets, "file_params", counted)
    n = 3_000
    table = pa.table(
        {
            "BilledCost": pa.array([1.25] * n),
            "EffectiveCost": pa.array([1.25] * n),
            "ChargePeriodStart": pa.array([f"2026-11-02 {i % 24:02d}:00:00" for i in range(n)]),
            "ChargePeriodEnd": pa.array([f"2026-11-02 {i % 24:02d}:30:00" for i in range(n)]),
            "Tags": pa.array(
                [[("team", f"t{i % 9}"), ("x", "y")] for i in range(n)], pa.map_(pa.string(), pa.string())
            ),
        }
    )
    path = tmp_path / "bill" / "focus.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(table, path)
    con, report = _load(tmp_path, path.parent)
    assert not report.rejected, report.summary()
    assert reads == []
    stored = con.execute(
        'select count(*), count(*) filter (where x_tags_raw::varchar = (\'{"team":"\' || team || \'","x":"y"}\')) '
        "from billing_tag_sets"
    ).fetchone()
    assert stored == (9, 9)
    assert con.execute(
        "select count(distinct x_tag_set) from billing_line_items where team like 't_'"
    ).fetchone() == (9,)
