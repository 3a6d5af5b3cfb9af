"""A FOCUS CSV file read once (pipelines/ingest/billing/reader.py `_observation`, reconcile.py
`sample_sets` and `observed_tags`): its x_extra sets come from its first 10,000 lines, its rows and cost
sums from the insert's own scan, and the first file of a billing period hands its distinct tag texts to
the tag sets from that same scan; no pass before the insert, and no read of the file for its tags after."""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pipelines.config import Config, load_config
from pipelines.ingest import ingest
from pipelines.ingest.billing import reader as reader_module
from pipelines.ingest.billing import reconcile
from pipelines.ingest.billing.decompress import Prepared, nul_free
from pipelines.ingest.billing.lines import Spec, insert_lines
from pipelines.ingest.billing.reader import BillingReader
from pipelines.ingest.billing.reconcile import observe_end, observe_start, observed_cte, observer_function
from pipelines.ingest.billing.sql_expr import src_cte
from pipelines.ingest.files import SourceFile
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

HEADER = [
    "BilledCost", "EffectiveCost", "ChargePeriodStart", "ChargePeriodEnd", "BillingPeriodStart",
    "BillingPeriodEnd", "BillingCurrency", "ChargeCategory", "ResourceId", "ServiceCategory", "Tags",
    "x_InstanceType",
]  # fmt: skip
NOV = datetime(2026, 11, 2)


def _line(n: int, cost: str, tags: dict[str, str] | None, itype: str = "p5.48xlarge") -> dict[str, str]:
    start = NOV + timedelta(hours=n % 600)
    return {
        "BilledCost": cost,
        "EffectiveCost": cost,
        "ChargePeriodStart": f"{start:%Y-%m-%d %H:%M:%S}",
        "ChargePeriodEnd": f"{start + timedelta(hours=1):%Y-%m-%d %H:%M:%S}",
        "BillingPeriodStart": "2026-11-01 00:00:00",
        "BillingPeriodEnd": "2026-12-01 00:00:00",
        "BillingCurrency": "USD",
        "ChargeCategory": "Usage",
        "ResourceId": f"i-{n:08x}",
        "ServiceCategory": "Compute",
        "Tags": json.dumps(tags, separators=(",", ":")) if tags is not None else "",
        "x_InstanceType": itype,
    }


def _csv(rows: list[dict[str, str]]) -> str:
    def cell(v: str) -> str:
        return '"' + v.replace('"', '""') + '"' if any(c in v for c in ',"') else v

    return ",".join(HEADER) + "\n" + "".join(",".join(cell(r[h]) for h in HEADER) + "\n" for r in rows)


def _deliver(root: Path, parts: list[list[dict[str, str]]]) -> None:
    """An AWS Data Exports FOCUS delivery of November: gzip parts in BILLING_PERIOD=2026-11/ and a manifest."""
    data = root / "focus" / "data" / "BILLING_PERIOD=2026-11"
    data.mkdir(parents=True)
    keys = []
    for i, rows in enumerate(parts, 1):
        p = data / f"focus-{i:05d}.csv.gz"
        p.write_bytes(gzip.compress(_csv(rows).encode()))
        keys.append(f"s3://bucket/exports/{p.relative_to(root).as_posix()}")
    meta = root / "focus" / "metadata" / "BILLING_PERIOD=2026-11"
    meta.mkdir(parents=True)
    doc = {"executionId": "e1", "billingPeriod": {"start": "2026-11-01T00:00:00.000Z"}, "dataFiles": keys}
    (meta / "focus-Manifest.json").write_text(json.dumps(doc), encoding="utf-8")


def _spy(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, method: bool = True) -> list[Any]:
    """Record each call of owner.<name> (it still runs): a method's file name, or a function's arguments."""
    calls: list[Any] = []
    original = getattr(owner, name)

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(Path(str(args[2].params.get("path", ""))).name if method else (args, kw))
        return original(*args, **kw)

    monkeypatch.setattr(owner, name, counted)
    return calls


def _one_file_project(root: Path, rows: list[dict[str, str]]) -> Config:
    """A FOCUS source of one file, `landing/bill.csv`, holding `rows`."""
    landing = root / "landing"
    landing.mkdir()
    (landing / "bill.csv").write_text(_csv(rows), encoding="utf-8")
    write_config(root, "sources:\n  - {name: focus, kind: focus, uri: landing/}\n")
    return load_config(root / "wastewatch.yaml")


def _total(rows: list[dict[str, str]]) -> Decimal:
    return sum((Decimal(r["BilledCost"]) for r in rows), Decimal(0))


A = {"team": "ml", "project": "llm"}
B = {"team": "infra", "owner": "ana"}
C = {"team": "search", "project": "rank"}


def test_a_focus_csv_month_is_read_once_per_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # part 1: sets A and B, part 2: A and a set the month has not seen (C) and another instance type, part
    # 3: untagged lines (an empty Tags cell)
    part1 = [_line(i, "1.25", A if i % 2 else B) for i in range(12)]
    part2 = [_line(100 + i, "2.50", A) for i in range(3)] + [_line(200, "0.75", C, itype="g5.xlarge")]
    part3 = [_line(300 + i, "0.40", None) for i in range(4)]
    _deliver(tmp_path / "landing", [part1, part2, part3])
    write_config(tmp_path, "sources:\n  - {name: focus, kind: focus, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        passes = _spy(monkeypatch, BillingReader, "_presets")
        afterwards = _spy(monkeypatch, BillingReader, "_file_sums")
        stored = _spy(monkeypatch, reader_module, "store_file_tag_sets", method=False)
        sampled = _spy(monkeypatch, reader_module, "sample_sets", method=False)
        report = ingest(con, config)
        assert not report.rejected, report.summary()
        # no pass before any insert, none after: every part was counted by its insert's own scan
        assert (passes, afterwards) == ([], [])
        # each part's first lines were read once: its x_extra sets come from the lookups' sample
        assert [args[6] for args, _ in sampled] == ["_billing_sample"] * 3
        # the month's first part handed its tag texts over; the later parts did not collect theirs (part
        # 2's new set C was read from the file after its insert)
        raws = [call[0][8] if len(call[0]) > 8 else call[1].get("raws") for call in stored]
        assert sorted(raws[0] or []) == sorted(json.dumps(t, separators=(",", ":")) for t in (A, B))
        assert raws[1:] == [None, None]
        ledger = con.execute(
            "select file_rows, file_billed_cost_sum, rows, billed_cost_sum from ingest_files "
            "where uri like '%.csv.gz' order by uri"
        ).fetchall()
        assert ledger == [(len(p), _total(p), len(p), _total(p)) for p in (part1, part2, part3)]
        got = con.execute(
            "select resource_id, tags['team'], tags['project'], x_extra ->> 'x_InstanceType' "
            "from billing_line_items order by resource_id"
        ).fetchall()
        want = sorted(
            (
                r["ResourceId"],
                json.loads(r["Tags"]).get("team") if r["Tags"] else None,
                json.loads(r["Tags"]).get("project") if r["Tags"] else None,
                r["x_InstanceType"],
            )
            for r in part1 + part2 + part3
        )
        assert got == want
        sets = con.execute("select x_tags_raw::varchar from billing_tag_sets order by 1").fetchall()
        assert sorted((json.loads(s[0]) for s in sets), key=json.dumps) == sorted([A, B, C], key=json.dumps)
    finally:
        con.close()


def test_a_combination_past_the_sample_gets_its_own_x_extra(tmp_path: Path) -> None:
    # the first 10,000 lines hold one instance type; the 3 lines after them another, which the sample
    # (and so the x_extra sets) lacks
    rows = [_line(i, "0.01", A) for i in range(10_000)]
    rows += [_line(10_000 + i, "3.00", B, itype="p4d.24xlarge") for i in range(3)]
    config = _one_file_project(tmp_path, rows)
    con = new_warehouse(config.warehouse_path)
    try:
        report = ingest(con, config)
        assert not report.rejected, report.summary()
        got = con.execute(
            "select x_extra ->> 'x_InstanceType', count(*), sum(billed_cost), count(distinct x_tag_set) "
            "from billing_line_items group by all order by 1"
        ).fetchall()
        assert got == [("p4d.24xlarge", 3, Decimal("9.00"), 1), ("p5.48xlarge", 10_000, Decimal("100.00"), 1)]
        ledger = con.execute("select file_rows, file_billed_cost_sum from ingest_files").fetchall()
        assert ledger == [(10_003, Decimal("109.00"))]
    finally:
        con.close()


def test_tag_texts_past_the_limit_are_read_again_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reconcile, "MAX_OBSERVED_TAGS", 2)
    tag_sets = [{"team": f"t{i}"} for i in range(5)]
    rows = [_line(i, "1.00", tag_sets[i % 5]) for i in range(20)]
    config = _one_file_project(tmp_path, rows)
    con = new_warehouse(config.warehouse_path)
    try:
        stored = _spy(monkeypatch, reader_module, "store_file_tag_sets", method=False)
        report = ingest(con, config)
        assert not report.rejected, report.summary()
        assert [call[0][8] if len(call[0]) > 8 else call[1].get("raws") for call in stored] == [None]
        got = con.execute(
            "select tags['team'], count(*) from billing_line_items group by all order by 1"
        ).fetchall()
        assert got == [(f"t{i}", 4) for i in range(5)]
    finally:
        con.close()


def test_the_observing_function_is_registered_again_after_a_rollback(tmp_path: Path) -> None:
    """A registration made in a transaction that rolled back (a rejected delivery) leaves the catalog
    without the function: the next observation registers it under another name and counts its lines."""
    con = new_warehouse(tmp_path / "w.duckdb")
    path = tmp_path / "f.csv"
    path.write_text("cost\n" + "".join(f"{i % 4}.5\n" for i in range(300)), encoding="utf-8")
    spec = Spec(columns={"cost": "cost"}, checks=[], file_billed="cost", file_effective="cost")
    try:
        con.execute("begin")
        observe_end(observe_start(con), None)
        con.execute("rollback")
        token = observe_start(con, tags=True)
        assert token is not None
        cte = src_cte("read_csv($path, header = true, all_varchar = true)", "null::bigint", spec.columns)
        query = (
            f"{observed_cte(cte, spec, False, observer_function(token))}"  # noqa: S608 - test SQL
            "select _row as x_source_row, cost::decimal(18, 6) as billed_cost, 'f1' as x_file_id, "
            "'USD' as billing_currency, timestamp '2026-11-01' as charge_period_start, "
            "timestamp '2026-11-01 01:00' as charge_period_end, cost::decimal(18, 6) as effective_cost from _src"
        )
        profile = insert_lines(con, query, {"path": str(path), "observe_token": token}, profile=True)
        assert reconcile.observed_tags(token) == []  # asked for, and the lines had none
        got = observe_end(token, profile)
        total = sum((Decimal(f"{i % 4}.5") for i in range(300)), Decimal(0))
        assert got == (300, total, total)
    finally:
        con.close()


def test_a_part_is_looked_at_for_nul_bytes_as_it_inflates(tmp_path: Path) -> None:
    """The load reads an inflated part again for NUL bytes only when its inflation saw one (or did not
    look: a part held in memory); a NUL deep inside still rejects the file (tests/ingest/test_refusals.py)."""
    parts = []
    for name, text in (
        ("clean.csv.gz", "a,b\n" + "1,2\n" * 5000),
        ("nul.csv.gz", "a,b\n" + "1,2\n" * 5000 + "3,\0\n"),
    ):
        path = tmp_path / name
        path.write_bytes(gzip.compress(text.encode()))
        parts.append(
            SourceFile(
                uri=str(path), local_path=path, relative=name, size=path.stat().st_size, modified_at=NOV
            )
        )
    prepared = Prepared(parts, tmp_path / "work", threads=2, ahead=2, in_memory=False)
    try:
        clean, nul = (prepared.get(p.uri) for p in parts)
        assert isinstance(clean, Path) and isinstance(nul, Path)
        assert (nul_free(clean), nul_free(nul)) == (True, False)
        prepared.done(parts[0].uri)  # deleted: a later file at the same path is not taken as clean
        assert not nul_free(clean)
    finally:
        prepared.close()


def test_an_observed_part_casts_its_costs_once_and_a_bad_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A later part of the month is observed (its insert's own scan counts and sums it): its billed and
    effective costs are cast once, before the observer, which sums the values the staging SQL stores; a
    bad cost still rejects the part with its data row and column."""
    part1 = [_line(i, "1.25", A) for i in range(4)]
    part2 = [_line(100 + i, "2.50", A) for i in range(3)]
    part2[1]["BilledCost"] = "1.2.3"
    _deliver(tmp_path / "landing", [part1, part2])
    write_config(tmp_path, "sources:\n  - {name: focus, kind: focus, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    inserts = _spy(monkeypatch, reader_module, "insert_lines", method=False)
    try:
        report = ingest(con, config)
        errors = [o.error or "" for o in report.outcomes if o.uri.endswith("focus-00002.csv.gz")]
        assert len(errors) == 1 and errors[0].endswith(
            "focus-00002.csv.gz:3: column 'BilledCost': expected a decimal number, found '1.2.3' (data row 2)"
        ), errors
        observed = [args[1] for args, _ in inserts if "_ww_observe" in args[1]]
        assert observed, "the second part was not observed"
        query = observed[-1]
        typed = query[query.index("_src_typed as") : query.index(", _src as")]
        assert 'cast("billed_cost" as decimal(38, 12))' in typed
        assert 'cast("effective_cost" as decimal(38, 12))' in typed
        # the staging SQL reads them typed (its own cast to the same type is DuckDB's no-op)
        path = tmp_path / "f.csv"
        path.write_text("cost\n1.5\n", encoding="utf-8")
        spec = Spec(
            columns={"cost": "cost"},
            checks=[],
            file_billed="cost::decimal(38, 12)",
            file_effective="cost::decimal(38, 12)",
            observed_types={"cost": "decimal(38, 12)"},
        )
        cte = src_cte("read_csv($path, header = true, all_varchar = true)", "null::bigint", spec.columns)
        token = observe_start(con)
        assert token is not None
        sql = f"describe {observed_cte(cte, spec, False, observer_function(token))}select cost from _src"  # noqa: S608 - test SQL
        assert con.execute(sql, {"path": str(path), "observe_token": token}).fetchall()[0][:2] == (
            "cost",
            "DECIMAL(38,12)",
        )
        observe_end(token, None)
    finally:
        con.close()
