"""`wastewatch export focus`: FOCUS 1.2 names and types, one partition per billing period, the round trip
through the focus reader, restated periods replacing their partition whole (locally and on S3), the leftovers
of killed runs, and the CLI's exit codes."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner, Result

from pipelines.cli import main
from pipelines.config import load_config
from pipelines.export.focus import MANIFEST, export_focus, read_manifest
from pipelines.ingest import ingest
from pipelines.lock import writer_lock
from pipelines.warehouse import connect
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FIXTURES

SAMPLE = FIXTURES / "billing" / "focus_sample_1.0.csv"
# columns that say where a line was read from, not what it says: they differ after a round trip by design
LINEAGE = (
    "x_source_name", "x_source_format", "x_source_file", "x_loaded_at", "x_file_id", "x_line_key",
    "x_source_row", "x_focus_version", "x_extra",
)  # fmt: skip
OWN_X = ("x_SourceName", "x_SourceFormat", "x_SourceFile", "x_SourceRow", "x_InstanceType", "x_GpuCount")


def _project(root: Path, landing: str = "landing/") -> Path:
    (root / "landing").mkdir(parents=True, exist_ok=True)
    write_config(root, f"sources:\n  - {{name: bill, kind: focus, uri: {landing}}}\n")
    return root


def _ingest(root: Path) -> duckdb.DuckDBPyConnection:
    config = load_config(root / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    return con


def _cli(root: Path, *args: str) -> Result:
    return CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(
        main, ["--config", str(root / "wastewatch.yaml"), *args], catch_exceptions=False
    )


def _sample_rows() -> tuple[list[str], list[list[str]]]:
    with SAMPLE.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        return header, list(reader)


def _write_csv(path: Path, header: list[str], data: list[list[str]]) -> None:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([header, *data])
    path.write_text(buf.getvalue(), encoding="utf-8")


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_the_focus_sample_round_trips_to_identical_billing_line_items(tmp_path: Path, fmt: str) -> None:
    """FOCUS sample in -> export focus -> the export ingested as a `focus` source -> the same lines, every
    column alike but lineage; the source's own column (`Id`) comes back as `x_Id` beside wastewatch's x_."""
    first = _project(tmp_path / "first")
    shutil.copyfile(SAMPLE, first / "landing" / SAMPLE.name)
    con = _ingest(first)
    out = tmp_path / "export"
    result = export_focus(con, str(out), fmt=fmt)
    con.close()
    assert [(p.period, p.lines) for p in result.periods] == [("2024-09", 999), ("2024-10", 1)]

    second = _project(tmp_path / "second", landing=str(out) + "/")
    _ingest(second).close()

    both = duckdb.connect()
    both.execute("attach $p as a (read_only)", {"p": str(first / "warehouse" / "wastewatch.duckdb")})
    both.execute("attach $p as b (read_only)", {"p": str(second / "warehouse" / "wastewatch.duckdb")})
    assert both.execute("select count(*) from b.billing_line_items").fetchone() == (1000,)
    kept = ", ".join(LINEAGE)
    differ = both.execute(
        f"select count(*) from ((select * exclude ({kept}) from a.billing_line_items "
        f"except all select * exclude ({kept}) from b.billing_line_items) union all "
        f"(select * exclude ({kept}) from b.billing_line_items "
        f"except all select * exclude ({kept}) from a.billing_line_items))"
    ).fetchone()
    assert differ == (0,)
    # money exact, not merely equal after rounding: the sums to the 12th decimal
    sums = "select sum(billed_cost)::varchar, sum(effective_cost)::varchar, sum(list_cost)::varchar from "
    assert (
        both.execute(sums + "a.billing_line_items").fetchone()
        == both.execute(sums + "b.billing_line_items").fetchone()
    )
    # each line's own extra columns come back, under their x_ names, with the row they were read from
    pairs = both.execute(
        "select a.x_extra, b.x_extra from a.billing_line_items as a join b.billing_line_items as b "
        "on (b.x_extra ->> 'x_SourceRow')::bigint = a.x_source_row"
    ).fetchall()
    assert len(pairs) == 1000
    for original, back in pairs:
        want = {("x_" + k if not k.startswith("x_") else k): v for k, v in json.loads(original).items()}
        got = {k: v for k, v in json.loads(back).items() if k not in OWN_X}
        assert got == want
    both.close()


def test_the_export_has_focus_names_and_types(tmp_path: Path) -> None:
    root = _project(tmp_path)
    shutil.copyfile(SAMPLE, root / "landing" / SAMPLE.name)
    con = _ingest(root)
    export_focus(con, str(tmp_path / "pq"), fmt="parquet", periods=["2024-09"])
    export_focus(con, str(tmp_path / "csv"), fmt="csv", periods=["2024-09"])
    # the view reads the same instants whatever the session's time zone
    con.execute("set TimeZone = 'America/Los_Angeles'")
    first = con.execute(
        "select min(ChargePeriodStart) = timestamptz '2024-09-01 00:00:00+00' from focus"
    ).fetchone()
    con.close()
    assert first == (True,)

    check = duckdb.connect()
    types = dict(
        check.execute(
            "select column_name, column_type from (describe select * from read_parquet($p))",
            {"p": str(tmp_path / "pq" / "billing_period=2024-09" / "part-0.parquet")},
        ).fetchall()
    )
    assert list(types)[:3] == ["AvailabilityZone", "BilledCost", "BillingAccountId"]
    assert list(types)[56] == "Tags"
    assert types["BilledCost"] == "DECIMAL(38,12)" and types["ListUnitPrice"] == "DECIMAL(28,12)"
    assert types["ChargePeriodStart"] == "TIMESTAMP WITH TIME ZONE"
    assert types["Tags"] == "JSON" and types["x_Id"] == "VARCHAR"
    assert "x_BillingPeriod" not in types and "x_Extra" not in types
    with (tmp_path / "csv" / "billing_period=2024-09" / "part-0.csv").open(newline="") as f:
        lines = list(csv.DictReader(f))
    line = lines[0]
    assert line["ChargePeriodStart"] == "2024-09-18T22:00:00Z"
    assert line["BillingPeriodStart"] == "2024-09-01T00:00:00Z"
    assert line["BilledCost"] == "0.000000800000"
    assert line["Tags"] == ""  # no tags: NULL, which CSV writes as an empty field
    tagged = next(x for x in lines if x["Tags"])
    assert set(json.loads(tagged["Tags"])) >= {"application", "environment"}


def _two_periods(root: Path) -> duckdb.DuckDBPyConnection:
    """The sample split into a September and an October file, ingested."""
    header, data = _sample_rows()
    start = header.index("BillingPeriodStart")
    _write_csv(root / "landing" / "sep.csv", header, [r for r in data if r[start].startswith("2024-09")])
    _write_csv(root / "landing" / "oct.csv", header, [r for r in data if r[start].startswith("2024-10")])
    return _ingest(root)


def _restate_october(root: Path) -> list[Decimal]:
    """Rewrite October's file with two lines of new costs; the costs."""
    header, data = _sample_rows()
    start, cost = header.index("BillingPeriodStart"), header.index("BilledCost")
    october = next(r for r in data if r[start].startswith("2024-10"))
    restated = []
    for amount in ("1.500000000001", "2.25"):
        line = list(october)
        line[cost] = amount
        restated.append(line)
    _write_csv(root / "landing" / "oct.csv", header, restated)
    return [Decimal("1.500000000001"), Decimal("2.25")]


def _costs(path: Path) -> list[Decimal]:
    got = duckdb.connect().execute("select BilledCost from read_parquet($p) order by 1", {"p": str(path)})
    return [r[0] for r in got.fetchall()]


def test_a_restated_period_replaces_its_partition_exactly_and_leaves_the_others(tmp_path: Path) -> None:
    root = _project(tmp_path)
    con = _two_periods(root)
    out = tmp_path / "out"
    export_focus(con, str(out))
    con.close()
    september = out / "billing_period=2024-09" / "part-0.parquet"
    before = (september.read_bytes(), september.stat().st_ino)
    old_october = _costs(out / "billing_period=2024-10" / "part-0.parquet")

    want = _restate_october(root)
    con = _ingest(root)
    result = export_focus(con, str(out), periods=["2024-10"])
    con.close()
    assert [(p.period, p.lines, p.replaced) for p in result.periods] == [("2024-10", 2, True)]
    assert sorted(p.name for p in (out / "billing_period=2024-10").iterdir()) == ["part-0.parquet"]
    assert _costs(out / "billing_period=2024-10" / "part-0.parquet") == want != old_october
    assert (september.read_bytes(), september.stat().st_ino) == before
    assert sorted(p.name for p in out.iterdir()) == [
        MANIFEST,
        "billing_period=2024-09",
        "billing_period=2024-10",
    ]
    manifest = read_manifest(str(out))
    assert manifest["periods"]["2024-10"]["lines"] == 2
    assert manifest["periods"]["2024-10"]["totals"] == [
        {"currency": "USD", "lines": 2, "billed_cost": "3.750000000001", "effective_cost": "0"}
    ]
    assert manifest["periods"]["2024-09"]["lines"] == 999


def _dead_pid() -> int:
    pid = 2**22 - 7
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid -= 1


def test_leftovers_of_a_killed_export_are_cleared_or_put_back(tmp_path: Path) -> None:
    """A run killed after moving September aside but before renaming the new one in: the next run puts the
    old partition back (it does not export September) and deletes the half-written folders; a live process's
    folders (another's, or this process's own) are left alone."""
    root = _project(tmp_path)
    con = _two_periods(root)
    out = tmp_path / "out"
    export_focus(con, str(out))
    dead = _dead_pid()
    (out / "billing_period=2024-09").rename(out / f".billing_period=2024-09.old-{dead}-abcd1234")
    half = out / f".billing_period=2024-10.new-{dead}-0123abcd"
    half.mkdir()
    (half / "part-0.parquet").write_bytes(b"PAR1 half")
    scratch = out / f".focus-export-{dead}-feedbeef"
    scratch.mkdir()
    live = out / f".billing_period=2024-10.new-{os.getppid()}-00000000"  # a live process's: left alone
    live.mkdir()
    own = out / f".focus-export-{os.getpid()}-0badcafe"  # this process is live too
    own.mkdir()

    result = export_focus(con, str(out), periods=["2024-10"])
    con.close()
    assert sorted(result.cleaned) == sorted(
        [
            f"billing_period=2024-09 put back from .billing_period=2024-09.old-{dead}-abcd1234",
            f".billing_period=2024-10.new-{dead}-0123abcd removed",
            f".focus-export-{dead}-feedbeef removed",
        ]
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [MANIFEST, "billing_period=2024-09", "billing_period=2024-10", live.name, own.name]
    )
    assert len(_costs(out / "billing_period=2024-09" / "part-0.parquet")) == 999


def _s3_objects(s3: Any, bucket: str) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []))


def test_on_s3_a_restated_period_goes_under_a_new_prefix_then_the_manifest_then_the_old_is_deleted(
    tmp_path: Path, s3_server: str
) -> None:
    import boto3

    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.create_bucket(Bucket="focus-out")
    root = _project(tmp_path)
    con = _two_periods(root)
    dest = "s3://focus-out/finops/focus"
    export_focus(con, dest, s3_client=lambda: s3)
    first = read_manifest(dest, s3)
    old_key = "finops/focus/" + first["periods"]["2024-10"]["files"][0]
    sep_key = "finops/focus/" + first["periods"]["2024-09"]["files"][0]
    assert old_key.startswith("finops/focus/billing_period=2024-10/") and old_key.endswith("/part-0.parquet")
    con.close()

    want = _restate_october(root)
    con = _ingest(root)
    result = export_focus(con, dest, periods=["2024-10"], s3_client=lambda: s3)
    con.close()
    manifest = read_manifest(dest, s3)
    new_key = "finops/focus/" + manifest["periods"]["2024-10"]["files"][0]
    assert result.periods[0].replaced and new_key != old_key
    assert _s3_objects(s3, "focus-out") == sorted(["finops/focus/_manifest.json", sep_key, new_key])
    assert manifest["periods"]["2024-09"] == first["periods"]["2024-09"]
    local = tmp_path / "got.parquet"
    s3.download_file("focus-out", new_key, str(local))
    assert _costs(local) == want


def test_cli_exports_and_says_what_it_wrote_and_refuses_wrong_input_with_exit_2(tmp_path: Path) -> None:
    root = _project(tmp_path)
    _two_periods(root).close()
    ok = _cli(root, "export", "focus", "--period", "2024-10", "--format", "csv")
    assert ok.exit_code == 0, ok.output
    assert "exported 1 billing period(s), 1 line(s), as csv to" in ok.output
    assert (root / "exports" / "focus" / "billing_period=2024-10" / "part-0.csv").exists()
    assert not (root / "exports" / "focus" / "billing_period=2024-09").exists()

    malformed = _cli(root, "export", "focus", "--period", "2024-9")
    assert malformed.exit_code == 2 and "not a billing period: '2024-9'" in malformed.output
    absent = _cli(root, "export", "focus", "--period", "2023-01")
    assert absent.exit_code == 2
    assert (
        "error: no billing lines for period(s) 2023-01; the warehouse holds 2024-09, 2024-10" in absent.output
    )
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "notes.txt").write_text("mine")
    foreign = _cli(root, "export", "focus", "--out", str(tmp_path / "elsewhere"))
    assert (
        foreign.exit_code == 2
        and "holds 1 file(s) no wastewatch FOCUS export wrote (notes.txt)" in foreign.output
    )
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == ["notes.txt"]


def test_cli_waits_for_the_warehouse_lock_then_exits_3(tmp_path: Path) -> None:
    root = _project(tmp_path)
    _two_periods(root).close()
    config = load_config(root / "wastewatch.yaml")
    with writer_lock(config.warehouse_path):
        # the lock is per process: another process must hold it for this one to wait
        import subprocess
        import sys

        held = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "--config", str(root / "wastewatch.yaml"),
             "export", "focus", "--wait", "0"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    assert held.returncode == 3, held.stderr
    assert "held by another writer" in held.stderr
    assert not (root / "exports").exists()


def test_an_unreachable_s3_destination_exits_1_naming_it(tmp_path: Path) -> None:
    root = _project(tmp_path)
    _two_periods(root).close()
    result = _cli(
        root, "export", "focus", "--out", "s3://nowhere/focus", "--endpoint-url", "http://127.0.0.1:9"
    )
    assert result.exit_code == 1, result.output
    assert "error: s3://nowhere/focus" in result.output


def test_a_warehouse_made_before_the_view_gets_it_on_the_next_open_keeping_its_lines(tmp_path: Path) -> None:
    """No migration: a warehouse of today's schema version without `focus` (as int2 made it) gains the view
    when next opened for writing, over the lines it already holds."""
    root = _project(tmp_path)
    shutil.copyfile(SAMPLE, root / "landing" / SAMPLE.name)
    con = _ingest(root)
    con.execute("drop view focus")
    con.close()
    config = load_config(root / "wastewatch.yaml")
    con = connect(config.warehouse_path)
    got = con.execute("select count(*), sum(BilledCost)::varchar from focus").fetchone()
    want = con.execute("select count(*), sum(billed_cost)::varchar from billing_line_items").fetchone()
    con.close()
    assert got == want and got[0] == 1000
