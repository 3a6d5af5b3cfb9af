"""How billing lines are stored (sql/raw/billing_lines.sql): `billing_lines` keeps only the columns a
warehouse's sources fill, and the view `billing_line_items` shows every column of `billing_columns`, in
order, with the file lineage from the ledger. A rejected load takes the columns it added back with it.
`billing_ts` takes Parquet timestamps as they are and converts text and zoned values to UTC.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import string
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipelines.config import Config, load_config
from pipelines.ingest import ingest
from pipelines.ingest.billing.lines import insert_lines, store_columns
from pipelines.ingest.billing.tag_sets import tag_normalizer
from pipelines.warehouse import rows
from tests.helpers import billing_exports
from tests.helpers.billing_exports import Cur2Export, hours
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FOCUS_SAMPLE

NOV = datetime(2026, 11, 3, 10)
CONFIG = """
sources:
  - {name: cur2, kind: aws_cur2, uri: cur/}
  - {name: focus, kind: focus, uri: focus/}
"""


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            f"select column_name from duckdb_columns() where table_name = '{table}'"
        ).fetchall()
    ]  # noqa: S608 - test constant


def _open(tmp_path: Path) -> tuple[Config, duckdb.DuckDBPyConnection]:
    """The test's config (CONFIG: its `cur/` export and an empty `focus/` folder) and warehouse."""
    (tmp_path / "focus").mkdir()
    write_config(tmp_path, CONFIG)
    config = load_config(tmp_path / "wastewatch.yaml")
    return config, new_warehouse(config.warehouse_path)


def _focus_csv(bad_cost_on_row: int | None = None) -> bytes:
    """The first 5 lines of the FOCUS sample; `bad_cost_on_row` (1-based data row) gets BilledCost 'n/a'."""
    with FOCUS_SAMPLE.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        lines = [row for _, row in zip(range(5), reader, strict=False)]
        fields = reader.fieldnames
    assert fields is not None
    if bad_cost_on_row is not None:
        lines[bad_cost_on_row - 1]["BilledCost"] = "n/a"
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(lines)
    return out.getvalue().encode()


def test_a_warehouse_stores_only_the_columns_its_sources_fill(tmp_path: Path) -> None:
    Cur2Export(tmp_path / "cur", parquet=True).deliver("2026-11", [hours("i-a", NOV, 3, "2.5")], "e1")
    config, con = _open(tmp_path)
    try:
        report = ingest(con, config)
        assert not report.rejected, report.summary()
        stored = _columns(con, "billing_lines")
        # AWS fills resources and commitments, never FOCUS-only columns; a line stores its tag set's id, not
        # the tags (billing_tag_sets holds each set once), and never the lineage
        assert {"resource_id", "x_tag_set", "commitment_discount_id", "x_line_item_id"} <= set(stored)
        assert not {"tags", "x_tags_raw", "team", "project", "owner", "job_id", "x_host"} & set(stored)
        assert not {"capacity_reservation_id", "pricing_currency", "sku_meter", "x_focus_version"} & set(
            stored
        )
        assert not {"x_source_name", "x_source_format", "x_source_file", "x_loaded_at"} & set(stored)
        # the view: every column of billing_columns, in order; lineage from the ledger
        assert _columns(con, "billing_line_items") == _columns(con, "billing_columns")
        ledger = rows(con, "select file_id, uri, loaded_at from ingest_files where uri like '%.parquet'")
        assert len(ledger) == 1
        got = rows(
            con,
            "select x_source_name, x_source_format, x_source_file, x_loaded_at, x_file_id, x_focus_version, "
            "capacity_reservation_id, billed_cost from billing_line_items order by x_source_row",
        )
        assert [
            (g["x_source_name"], g["x_source_format"], g["x_source_file"], g["x_file_id"]) for g in got
        ] == [("cur2", "aws_cur2", ledger[0]["uri"], ledger[0]["file_id"])] * 3
        assert {g["x_loaded_at"] for g in got} == {ledger[0]["loaded_at"]}
        assert {(g["x_focus_version"], g["capacity_reservation_id"], g["billed_cost"]) for g in got} == {
            (None, None, Decimal("2.5"))
        }

        # a FOCUS file that is rejected (row 3's BilledCost) adds nothing, not even its columns
        (tmp_path / "focus" / "bill.csv").write_bytes(_focus_csv(bad_cost_on_row=3))
        report = ingest(con, config)
        [rejected] = report.rejected
        assert "bill.csv" in rejected.uri and "BilledCost" in (rejected.error or "")
        assert _columns(con, "billing_lines") == stored

        # the same file, repaired: FOCUS fills columns AWS cannot, and the AWS lines read NULL there
        (tmp_path / "focus" / "bill.csv").write_bytes(_focus_csv())
        report = ingest(con, config)
        assert not report.rejected, report.summary()
        grown = _columns(con, "billing_lines")
        assert grown[: len(stored)] == stored and "x_focus_version" in grown
        # a FOCUS 1.0 file has no FOCUS 1.1/1.2 columns: they are not stored either (service_subcategory is:
        # every reader fills it, a FOCUS 1.0 file with `Other (<ServiceCategory>)`)
        assert not {"capacity_reservation_id", "sku_meter"} & set(grown)
        assert {"service_subcategory", "contracted_cost"} <= set(stored)
        by_source = rows(
            con,
            "select x_source_name as s, count(*) as n, count(x_focus_version) as focus_version "
            "from billing_line_items group by 1 order by 1",
        )
        assert by_source == [
            {"s": "cur2", "n": 3, "focus_version": 0},
            {"s": "focus", "n": 5, "focus_version": 5},
        ]
    finally:
        con.close()


def test_lines_written_by_hand_get_their_columns_and_never_lineage(tmp_path: Path) -> None:
    con = new_warehouse(tmp_path / "w.duckdb")
    try:
        insert_lines(
            con,
            "select 1.5 as billed_cost, 1.5 as effective_cost, 'EUR' as billing_currency, "
            "timestamp '2026-11-01 00:00' as charge_period_start, timestamp '2026-11-01 01:00' as charge_period_end, "
            "'g6.xlarge' as x_instance_type, 'ml' as team, 'f-hand' as x_file_id",
        )
        assert {"x_instance_type", "team"} <= set(_columns(con, "billing_lines"))
        # no ledger row for the file: the view's lineage is NULL, the line is there; a line with its own
        # team (and no tag set) keeps it, as lines stored before schema version 5 do
        assert rows(
            con, "select x_instance_type, x_source_file, team, billed_cost from billing_line_items"
        ) == [
            {
                "x_instance_type": "g6.xlarge",
                "x_source_file": None,
                "team": "ml",
                "billed_cost": Decimal("1.5"),
            }
        ]
        with pytest.raises(ValueError, match="x_source_file") as err:
            store_columns(con, ["x_source_file"])
        assert "lineage comes from the ledger" in str(err.value)
        with pytest.raises(ValueError, match="no_such_column"):
            store_columns(con, ["resource_id", "no_such_column"])
        assert "resource_id" not in _columns(con, "billing_lines")  # nothing added when refused
    finally:
        con.close()


def test_billing_ts_keeps_timestamps_and_converts_text_and_zones_to_utc(tmp_path: Path) -> None:
    con = new_warehouse(tmp_path / "w.duckdb")
    try:
        got = con.execute(
            "select billing_ts(timestamp '2026-11-01 05:00'), billing_ts(timestamptz '2026-11-01 05:00:00+02:00'), "
            "billing_ts('2026-11-01T05:00:00+02:00'), billing_ts('2026-11-01T05:00:00Z'), "
            "billing_ts('2026-11-01 05:00:00'), billing_ts(date '2026-11-01'), billing_ts(null::varchar), "
            "billing_ts('2026-11-01T05:00+0200'), billing_ts('2026-11-01T05:00:00.000-01:00')"
        ).fetchall()
        assert got == [
            (
                datetime(2026, 11, 1, 5),
                datetime(2026, 11, 1, 3),
                datetime(2026, 11, 1, 3),
                datetime(2026, 11, 1, 5),
                datetime(2026, 11, 1, 5),
                datetime(2026, 11, 1),
                None,
                datetime(2026, 11, 1, 3),
                datetime(2026, 11, 1, 6),
            )
        ]
        with pytest.raises(duckdb.ConversionException, match="out of range"):
            con.execute("select billing_ts('2023-02-01 30:00:00')").fetchall()
        # zoneless text strptime reads, or refuses and leaves to TIMESTAMPTZ: the same values either way
        assert con.execute(
            "select billing_ts('2024-02-29 05:00:00'), billing_ts('2026-11-01 24:00:00'), "
            "billing_ts('2026-11-01 05:7:30 '), billing_ts('2026/11/01 05:00:00')"
        ).fetchall() == [
            (
                datetime(2024, 2, 29, 5),
                datetime(2026, 11, 2),
                datetime(2026, 11, 1, 5, 7, 30),
                datetime(2026, 11, 1, 5),
            )
        ]
        for impossible in (
            "2026-02-29 05:00:00",
            "2026-13-01 05:00:00",
            "2026-11-01 23:59:60",
            "2024-11-01 05:07:3\t",
        ):
            with pytest.raises(duckdb.ConversionException):
                con.execute("select billing_ts($s)", {"s": impossible}).fetchall()
        for partial in ("2026-11-01 05:00: 7", "2026-11-01 05: 7:30"):  # never read in part
            with pytest.raises(duckdb.Error):
                con.execute("select billing_ts($s)", {"s": partial}).fetchall()
        # the 19-character shape the fast path tests; strptime would read the year ` 026` as 26
        with pytest.raises(duckdb.InvalidInputException, match="not an ISO 8601 date/time"):
            con.execute("select billing_ts(' 026-11-01 05:00:00')").fetchall()
        assert con.execute("select billing_ts('2026-11-01  5:00:00')").fetchall() == [
            (datetime(2026, 11, 1, 5),)
        ]
        with pytest.raises(duckdb.ConversionException, match="out of range"):
            con.execute("select billing_ts('2023-02-01T30:00:00Z')").fetchall()
        # a session in another zone changes nothing: naive timestamps are UTC already
        con.execute("set TimeZone = 'America/New_York'")
        assert con.execute("select billing_ts(timestamp '2026-11-01 05:00')").fetchall() == [
            (datetime(2026, 11, 1, 5),)
        ]
    finally:
        con.close()


def test_trim_text_equals_trim_for_every_code_point_at_either_end(tmp_path: Path) -> None:
    # trim_text skips trim() when the value neither starts nor ends with a space or a non-ASCII
    # character: it must give trim()'s answer for every character trim() could remove, and any other
    con = new_warehouse(tmp_path / "w.duckdb")
    try:
        differ = con.execute(
            """
            with chars as (
                select chr(i::integer) as ch from range(1, 1114112) as t(i) where i < 55296 or i > 57343
            ),
            vals as (
                select ch as v from chars
                union all select ch || 'x' from chars
                union all select 'x' || ch from chars
                union all select ch || 'ab' || ch from chars
                union all select ' ' || ch || ' ' from chars
            )
            select count(*), count(*) filter (where trim(v) <> v),
                list(v) filter (where trim_text(v) is distinct from trim(v))[:5]
            from vals
            """
        ).fetchall()
        count, trimmed, wrong = differ[0]
        assert count == 5 * (1114111 - 2048)
        assert trimmed > 1114111 - 2048  # every ' ' || ch || ' ', and values trim() shortens at one end
        assert wrong is None  # list() over no value is NULL: none differs
        assert con.execute(
            "select trim_text(null::varchar), trim_text(''), trim_text('   '), trim_text(' a b '), "
            "trim_text('\u3000a\u00a0'), trim_text('\ta\n'), trim_text('{\"team\":\"x\"}')"
        ).fetchall() == [(None, "", "", "a b", "a", "\ta\n", '{"team":"x"}')]
        # JSON is trimmed as its text, as trim() casts it (on JSON, s[-1] would index an array)
        assert con.execute(
            "select trim_text('[1, 2] '::json), typeof(trim_text('[1, 2] '::json)), trim_text(' {\"a\": 1}'::json)"
        ).fetchall() == [("[1, 2]", "VARCHAR", '{"a": 1}')]
    finally:
        con.close()


def test_cur2_parquet_tags_of_parquets_json_type_load_like_a_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """resource_tags written as a JSON column instead of a MAP: the same tags (it was rejected as
    "Malformed JSON" while trim_text did not cast its argument)."""
    monkeypatch.setitem(billing_exports.CUR2_PARQUET_TYPES, "resource_tags", "JSON")
    export = Cur2Export(tmp_path / "cur", parquet=True)
    export.deliver("2026-11", [hours("i-a", NOV, 2, "1.0", tags={"user:Team": "nlp"})], "e1")
    part = next((tmp_path / "cur").rglob("*.parquet"))
    assert duckdb.sql(f"select typeof(resource_tags) from read_parquet('{part}') limit 1").fetchall() == [
        ("JSON",)
    ]
    config, con = _open(tmp_path)
    try:
        assert not ingest(con, config).rejected
        assert rows(con, "select tags, team from billing_tag_sets") == [
            {"tags": {"team": "nlp"}, "team": "nlp"}
        ]
        assert rows(con, "select team, sum(billed_cost) as b from billing_line_items group by 1") == [
            {"team": "nlp", "b": Decimal("2.000000")}
        ]
    finally:
        con.close()


def test_the_focus_sample_through_the_view_equals_the_sample(tmp_path: Path) -> None:
    """The whole FOCUS sample (1,000 lines, billed 20.52): the view's totals and lineage per file."""
    (tmp_path / "focus").mkdir()
    (tmp_path / "cur").mkdir()
    shutil.copy(FOCUS_SAMPLE, tmp_path / "focus" / FOCUS_SAMPLE.name)
    write_config(tmp_path, CONFIG)
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        assert not ingest(con, config).rejected
        got = rows(
            con,
            "select x_source_file as f, count(*) as n, round(sum(billed_cost), 2) as billed "
            "from billing_line_items group by 1",
        )
        assert got == [
            {"f": str(tmp_path / "focus" / FOCUS_SAMPLE.name), "n": 1000, "billed": Decimal("20.52")}
        ]
    finally:
        con.close()


def test_a_known_tag_set_normalised_by_other_sql_is_normalised_again(tmp_path: Path) -> None:
    """A set stored by an older normalisation (simulated by rewriting it, with another x_normalizer) is
    corrected when a file with the same raw tags loads again; a set this code normalised is not read or
    normalised again for every file that has it."""
    export = Cur2Export(tmp_path / "cur", parquet=True)
    lines = hours("i-a", NOV, 2, "1.0", tags={"user:Team": "nlp"})
    export.deliver("2026-11", [lines], "e1")
    config, con = _open(tmp_path)
    try:
        assert not ingest(con, config).rejected
        assert rows(con, "select tags, team, x_normalizer from billing_tag_sets") == [
            {"tags": {"team": "nlp"}, "team": "nlp", "x_normalizer": tag_normalizer()}
        ]
        con.execute("update billing_tag_sets set tags = map {'Team ': 'nlp'}, team = null")
        export.deliver("2026-11", [lines], "e2")  # the month restated with the same tags
        assert not ingest(con, config).rejected
        assert rows(con, "select tags, team from billing_tag_sets") == [
            {"tags": {"Team ": "nlp"}, "team": None}
        ]
        con.execute("update billing_tag_sets set x_normalizer = 'an older one'")  # an older normaliser
        export.deliver("2026-11", [lines], "e3")
        assert not ingest(con, config).rejected
        assert rows(con, "select tags, team, x_normalizer from billing_tag_sets") == [
            {"tags": {"team": "nlp"}, "team": "nlp", "x_normalizer": tag_normalizer()}
        ]
        assert {r["team"] for r in rows(con, "select team from billing_line_items")} == {"nlp"}
    finally:
        con.close()


def _colliding_teams(parquet: bool) -> tuple[str, str]:
    """Two team names whose tag sets DuckDB's hash() cannot tell apart, as the aws_cur2 reader read
    them: the JSON text of a CSV part, or the Parquet MAP. DuckDB 2.0 hashes text 8 bytes at a time and
    a difference in a word's last byte stays in the top byte, so two differences 8 apart can cancel."""
    con = duckdb.connect()
    # CSV: '{"user:Team": "' is 15 characters, so the value's characters 0 and 8 are text positions 15
    # and 23 (a word's last byte each). MAP: the value is hashed on its own, so characters 7 and 15.
    if parquet:
        names = [f"ml-team{a}-infra-{b}" for a in string.ascii_lowercase for b in string.ascii_lowercase]
        keys = con.execute(
            "select hash(map(['user:Team'], [n])) from unnest($n::varchar[]) as t(n)", {"n": names}
        ).fetchall()
    else:
        names = [f"{a}-infra-{b}" for a in string.ascii_lowercase for b in string.ascii_lowercase]
        texts = [json.dumps({"user:Team": n}) for n in names]
        keys = con.execute("select hash(t) from unnest($t::varchar[]) as u(t)", {"t": texts}).fetchall()
    con.close()
    return _first_collision(names, keys)


def _first_collision(names: list[str], keys: list[tuple[int]]) -> tuple[str, str]:
    """The first two names with the same DuckDB hash() (`keys`, one row per name)."""
    seen: dict[int, str] = {}
    for name, (key,) in zip(names, keys, strict=True):
        if key in seen:
            return seen[key], name
        seen[key] = name
    raise AssertionError("no two names collide: DuckDB's hash() changed (the tests then prove little)")


@pytest.mark.parametrize("parquet", [False, True], ids=["csv", "parquet"])
def test_tag_sets_that_share_duckdbs_hash_keep_their_own_tags(tmp_path: Path, parquet: bool) -> None:
    """Lines keep the id of their raw tags: with DuckDB's hash() as the id, these two sets shared one,
    and one file's lines read one set's tags (a later file's were rejected). tag_set_id is MD5-based."""
    first, second = _colliding_teams(parquet)
    export = Cur2Export(tmp_path / "cur", parquet=parquet)
    export.deliver(
        "2026-11",
        [
            hours("i-a", NOV, 2, "1.0", tags={"user:Team": first})
            + hours("i-b", NOV, 2, "5.0", tags={"user:Team": second})
        ],
        "e1",
    )
    export.deliver(
        "2026-12", [hours("i-b", datetime(2026, 12, 3, 10), 1, "3.0", tags={"user:Team": second})], "e2"
    )
    config, con = _open(tmp_path)
    try:
        assert not ingest(con, config).rejected
        got = rows(
            con,
            "select x_billing_period as p, team, sum(billed_cost) as b from billing_line_items group by all order by all",
        )
        assert got == [
            {"p": "2026-11", "team": first, "b": Decimal("2.000000")},
            {"p": "2026-11", "team": second, "b": Decimal("10.000000")},
            {"p": "2026-12", "team": second, "b": Decimal("3.000000")},
        ]
        assert rows(con, "select count(*) as n from billing_tag_sets") == [{"n": 2}]
    finally:
        con.close()


@pytest.mark.parametrize("parquet", [True, False], ids=["parquet", "csv"])
def test_a_file_is_read_for_its_tags_only_when_it_has_sets_the_warehouse_lacks(
    tmp_path: Path, parquet: bool
) -> None:
    """A file whose tag sets are all known takes them by id from billing_tag_sets; a file with a new set
    is read for its tags again, stores the new set and has its known sets checked against the stored
    raw text. (Stored raw text that no longer matches its id stands in for a collision.)"""
    export = Cur2Export(tmp_path / "cur", parquet=parquet)
    nlp = hours("i-a", NOV, 2, "1.0", tags={"user:Team": "nlp"})
    cv = hours("i-b", NOV, 2, "3.0", tags={"user:Team": "cv"})
    export.deliver("2026-11", [nlp], "e1")
    config, con = _open(tmp_path)
    try:
        assert not ingest(con, config).rejected
        raw = rows(con, "select x_tags_raw::varchar as raw from billing_tag_sets")[0]["raw"]
        # stored by an older normaliser: normalised again, from the stored raw text (the file is not re-read)
        con.execute(
            "update billing_tag_sets set x_tags_raw = replace($raw, 'nlp', 'ml'), x_normalizer = null",
            {"raw": raw},
        )
        export.deliver("2026-11", [nlp], "e2")  # known sets only: taken by id, the file is not re-read
        assert not ingest(con, config).rejected
        assert rows(con, "select tags, team from billing_tag_sets") == [
            {"tags": {"team": "ml"}, "team": "ml"}
        ]

        export.deliver("2026-11", [nlp + cv], "e3")  # a new set: the file's tags are read and checked
        report = ingest(con, config)
        errors = [r.error or "" for r in report.rejected if r.uri.endswith((".parquet", ".csv.gz"))]
        assert len(errors) == 1
        assert "two different tag sets (this file's and a stored one) hash to" in errors[0]
        assert rows(con, "select count(*) as n, sum(billed_cost) as b from billing_line_items") == [
            {"n": 2, "b": Decimal("2.000000")}
        ]  # the restatement e2 still stands

        con.execute("update billing_tag_sets set x_tags_raw = $raw", {"raw": raw})
        export.deliver("2026-11", [nlp + cv], "e4")
        assert not ingest(con, config).rejected
        got = rows(con, "select team, sum(billed_cost) as b from billing_line_items group by 1 order by 1")
        assert got == [{"team": "cv", "b": Decimal("6.000000")}, {"team": "nlp", "b": Decimal("2.000000")}]
        assert rows(con, "select count(*) as n from billing_tag_sets") == [{"n": 2}]
    finally:
        con.close()


@pytest.mark.parametrize("parquet", [False, True], ids=["csv", "parquet"])
def test_x_extra_combinations_that_share_duckdbs_hash_keep_their_own_fields(
    tmp_path: Path, parquet: bool
) -> None:
    """CUR's x_extra is written once per distinct combination and joined back to the lines by value: by
    DuckDB's hash(), two usage types that differ in the last byte of two consecutive 8-byte words shared
    one combination, and one line read the other's usage type (storage_prices reads it)."""
    con = duckdb.connect()
    # 'USE1-BoxUsage:' is 14 characters: the instance type's characters 1 and 9 are positions 15 and 23
    types = [f"x{a}abcdefg{b}yz" for a in string.ascii_lowercase for b in string.ascii_lowercase]
    keys = con.execute(
        "select hash(u) from unnest($u::varchar[]) as t(u)", {"u": [f"USE1-BoxUsage:{t}" for t in types]}
    ).fetchall()
    con.close()
    pair = _first_collision(types, keys)
    export = Cur2Export(tmp_path / "cur", parquet=parquet)
    lines = hours("i-a", NOV, 1, "1.0", instance_type=pair[0]) + hours(
        "i-b", NOV, 1, "2.0", instance_type=pair[1]
    )
    export.deliver("2026-11", [lines], "e1")
    config, con = _open(tmp_path)
    try:
        assert not ingest(con, config).rejected
        got = rows(
            con,
            "select resource_id as r, x_extra ->> 'line_item_usage_type' as u from billing_line_items order by 1",
        )
        assert got == [
            {"r": "i-a", "u": f"USE1-BoxUsage:{pair[0]}"},
            {"r": "i-b", "u": f"USE1-BoxUsage:{pair[1]}"},
        ]
    finally:
        con.close()
