"""Every real billing sample loads through its reader, rows and costs reconciled to the cent.

The expected figures are computed here, independently of the readers, with Python's csv module and
Decimal from the documented cost rules (AWS CUR cost views, Azure actual/amortized, GCP cost + credits,
FOCUS BilledCost/EffectiveCost); the spec's worked examples with impossible timestamps are precise
rejections.
"""

from __future__ import annotations

import ast
import csv
import gzip
import io
import re
from decimal import Decimal
from functools import cache
from pathlib import Path

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.ingest import ingest
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FIXTURES

BILLING = FIXTURES / "billing"
D6 = Decimal("0.000001")


def _d(v: str | None) -> Decimal:
    return Decimal(v).quantize(D6) if v not in (None, "", "NULL", "null") else Decimal(0)


def _rows(path: Path) -> list[dict[str, str]]:
    raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    return list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"), newline="")))


@cache
def _squashed(key: str) -> str:
    """A header's name lower-cased with only its letters and digits (worked out once per name, not per row)."""
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _squash(row: dict[str, str]) -> dict[str, str]:
    return {_squashed(k): v for k, v in row.items() if k}


def aws_expected(path: Path) -> tuple[int, Decimal, Decimal]:
    """Rows, billed and effective cost of a legacy CUR file by the CUR cost views (formats §2.4)."""
    billed = effective = Decimal(0)
    rows = _rows(path)
    for raw in rows:
        r = _squash(raw)
        lt = r.get("lineitemlineitemtype", "")
        net = r.get("lineitemnetunblendedcost") or None
        cost = _d(net) if net else _d(r.get("lineitemunblendedcost"))
        if r.get("splitlineitemparentresourceid"):
            continue
        billed += cost
        if lt == "SavingsPlanCoveredUsage":
            effective += _d(r.get("savingsplansavingsplaneffectivecost"))
        elif lt == "SavingsPlanRecurringFee":
            effective += _d(r.get("savingsplantotalcommitmenttodate")) - _d(
                r.get("savingsplanusedcommitment")
            )
        elif lt in ("SavingsPlanNegation", "SavingsPlanUpfrontFee"):
            pass
        elif lt == "DiscountedUsage":
            effective += _d(r.get("reservationeffectivecost"))
        elif lt == "RIFee":
            effective += _d(r.get("reservationunusedamortizedupfrontfeeforbillingperiod")) + _d(
                r.get("reservationunusedrecurringfee")
            )
        elif lt == "Fee" and r.get("reservationreservationarn"):
            pass
        else:
            effective += cost
    return len(rows), billed, effective


AZURE_COST = ("costinbillingcurrency", "cost", "pretaxcost")


def azure_expected(path: Path, dataset: str = "amortized") -> tuple[int, Decimal, Decimal]:
    billed = effective = Decimal(0)
    rows = _rows(path)
    for raw in rows:
        r = _squash(raw)
        cost = _d(next(r[k] for k in AZURE_COST if k in r))
        model = (r.get("pricingmodel") or "").lower().replace(" ", "")
        charge = (r.get("chargetype") or "").lower()
        committed = model in ("reservation", "savingsplan") or charge in (
            "unusedreservation",
            "unusedsavingsplan",
        )
        effective += cost
        billed += cost if dataset == "actual" or not committed else Decimal(0)
    return len(rows), billed, effective


def gcp_expected(path: Path) -> tuple[int, Decimal, Decimal]:
    total = Decimal(0)
    rows = _rows(path)
    for r in rows:
        credits = ast.literal_eval(r["credits"]) if r.get("credits") else []
        total += _d(r["cost"]) + sum((_d(repr(c["amount"])) for c in credits), Decimal(0))
    return len(rows), total, total


def focus_expected(path: Path) -> tuple[int, Decimal, Decimal]:
    rows = [r for r in _rows(path) if any((v or "").strip() for v in r.values())]
    lower = [{k.lower(): v for k, v in r.items()} for r in rows]
    return (
        len(rows),
        sum((_d(r["billedcost"]) for r in lower), Decimal(0)),
        sum((_d(r["effectivecost"]) for r in lower), Decimal(0)),
    )


def _load(tmp_path: Path, kind: str, files: list[Path], options: str = "") -> duckdb.DuckDBPyConnection:
    landing = tmp_path / "landing"
    landing.mkdir()
    for f in files:
        (landing / f.name).write_bytes(f.read_bytes())
    write_config(tmp_path, f"sources:\n  - {{name: s, kind: {kind}, uri: landing/{options}}}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    return con


def _landed(con: duckdb.DuckDBPyConnection, name: str) -> tuple[int, Decimal, Decimal]:
    got = con.execute(
        "select count(*), sum(billed_cost), sum(effective_cost) from billing_line_items "
        "where x_source_file like $f",
        {"f": f"%/{name}"},
    ).fetchall()[0]
    return got[0], got[1] or Decimal(0), got[2] or Decimal(0)


def _cents(v: Decimal) -> Decimal:
    return v.quantize(Decimal("0.01"))


def _assert_reconciled(
    con: duckdb.DuckDBPyConnection, path: Path, expected: tuple[int, Decimal, Decimal]
) -> None:
    rows, billed, effective = _landed(con, path.name)
    assert rows == expected[0], path.name
    assert _cents(billed) == _cents(expected[1]), path.name
    assert _cents(effective) == _cents(expected[2]), path.name
    ledger = con.execute(
        "select rows, file_rows, billed_cost_sum, file_billed_cost_sum, effective_cost_sum, "
        "file_effective_cost_sum from ingest_files where uri like $f",
        {"f": f"%/{path.name}"},
    ).fetchall()[0]
    assert ledger[0] == ledger[1] == rows
    assert ledger[2] == ledger[3] and ledger[4] == ledger[5]


AWS_SAMPLES = sorted((BILLING / "aws").glob("*.csv"))


@pytest.mark.parametrize("path", AWS_SAMPLES, ids=lambda p: p.name)
def test_aws_legacy_cur_samples_reconcile_to_the_cent(path: Path, tmp_path: Path) -> None:
    con = _load(tmp_path, "aws_cur", [path])
    _assert_reconciled(con, path, aws_expected(path))
    assert con.execute(
        "select distinct provider_name, x_source_format from billing_line_items"
    ).fetchall() == [("AWS", "aws_cur")]
    con.close()


def test_koku_header_typo_is_repaired_and_documented(tmp_path: Path) -> None:
    """test_cur.csv's header has one field more than its rows (the glued `pricing/OfferingClasspricing/
    PurchaseOption` and a trailing cost category): the missing last field is read as empty."""
    path = BILLING / "aws" / "test_cur.csv"
    con = _load(tmp_path, "aws_cur", [path])
    n, billed, _ = _landed(con, path.name)
    assert n == 19 and _cents(billed) == _cents(aws_expected(path)[1])
    # the resource ids sit in the right column (nothing shifted)
    ids = {r[0] for r in con.execute("select resource_id from billing_line_items").fetchall()}
    assert ids and all(i is None or i.startswith("i-") for i in ids)
    con.close()


def test_athena_snake_case_flavour_maps_the_same_columns(tmp_path: Path) -> None:
    path = BILLING / "aws" / "2022-07-01-alt-columns.csv"
    con = _load(tmp_path, "aws_cur", [path])
    rows = con.execute(
        "select sub_account_id, charge_period_start, tags, x_extra ->> 'line_item_line_item_type' "
        "from billing_line_items order by x_source_row"
    ).fetchall()
    assert len(rows) == 2
    assert all(r[0] and r[1] is not None for r in rows)
    # resource_tags_aws_created_by -> a tag; raw key kept in x_tags_raw
    assert rows[0][2] == {"aws_created_by": "IAMUser:fake:and"}
    con.close()


def test_legacy_cur_month_folder_follows_its_manifest(tmp_path: Path) -> None:
    layout = BILLING / "aws" / "legacy_cur_bucket_layout"
    landing = tmp_path / "landing"
    import shutil

    shutil.copytree(layout, landing)
    write_config(tmp_path, "sources:\n  - {name: cur, kind: aws_cur, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    data = next(landing.rglob("*.csv.gz"))
    _assert_reconciled(con, data, aws_expected(data))
    ledger = dict(
        con.execute("select uri[-24:], delivery_id from ingest_files where status = 'loaded'").fetchall()
    )
    assert set(ledger.values()) == {"16e57707-f9e3-49be-8be6-b84e684b5194"}
    # the ledger files the delivery under the folder's period (generated data: lines of earlier months too)
    periods = con.execute(
        "select distinct billing_period from ingest_files where status = 'loaded'"
    ).fetchall()
    assert periods == [("2018-08",)]
    con.close()


AZURE_AMORTIZED = [p for p in sorted((BILLING / "azure").glob("*.csv")) if "Actual" not in p.name]


@pytest.mark.parametrize("path", AZURE_AMORTIZED, ids=lambda p: p.name)
def test_azure_samples_reconcile_to_the_cent(path: Path, tmp_path: Path) -> None:
    con = _load(tmp_path, "azure", [path])
    _assert_reconciled(con, path, azure_expected(path))
    # one day per row, exclusive ends
    bad = con.execute(
        "select count(*) from billing_line_items where charge_period_end <> charge_period_start + interval 1 day"
    ).fetchall()[0][0]
    assert bad == 0
    con.close()


def test_azure_actual_export_loads_with_dataset_actual(tmp_path: Path) -> None:
    path = BILLING / "azure" / "EA_ActualCost_Small.csv"
    con = _load(tmp_path, "azure", [path], ", options: {dataset: actual}")
    _assert_reconciled(con, path, azure_expected(path, "actual"))
    con.close()


def test_azure_amortized_and_actual_are_never_mixed(tmp_path: Path) -> None:
    files = [BILLING / "azure" / "EA_ActualCost_Small.csv", BILLING / "azure" / "EA_AmortizedCost_Small.csv"]
    landing = tmp_path / "landing"
    landing.mkdir()
    for f in files:
        (landing / f.name).write_bytes(f.read_bytes())
    for dataset, keep in (("amortized", "EA_AmortizedCost_Small.csv"), ("actual", "EA_ActualCost_Small.csv")):
        write_config(
            tmp_path,
            f"warehouse: {dataset}.duckdb\nsources:\n  - {{name: az, kind: azure, uri: landing/, options: {{dataset: {dataset}}}}}\n",
        )
        config = load_config(tmp_path / "wastewatch.yaml")
        con = new_warehouse(config.warehouse_path)
        report = ingest(con, config)
        assert [o.uri.rsplit("/", 1)[-1] for o in report.of("loaded")] == [keep]
        assert any("never mixed" in n for n in report.notes)
        files_landed = con.execute("select distinct x_source_file from billing_line_items").fetchall()
        assert [f[0].rsplit("/", 1)[-1] for f in files_landed] == [keep]
        con.close()


def test_azure_default_dataset_is_amortized_and_the_actual_export_is_skipped(tmp_path: Path) -> None:
    """No options: the amortized export loads; the actual one (its name says so) is skipped with a note."""
    files = [BILLING / "azure" / "EA_ActualCost_Small.csv", BILLING / "azure" / "EA_AmortizedCost_Small.csv"]
    landing = tmp_path / "landing"
    landing.mkdir()
    for f in files:
        (landing / f.name).write_bytes(f.read_bytes())
    write_config(tmp_path, "sources:\n  - {name: az, kind: azure, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    assert [Path(o.uri).name for o in report.outcomes] == ["EA_AmortizedCost_Small.csv"]
    [note] = [n for n in report.notes if "never mixed" in n]
    assert "1 file(s) of the actual export skipped (options.dataset: amortized" in note
    assert note.endswith("EA_ActualCost_Small.csv")
    _assert_reconciled(con, files[1], azure_expected(files[1], "amortized"))
    # the amortized view: the reservation- and savings-plan-covered usage lines bill 0 (the purchase
    # billed them) and carry their amortised cost as effective cost
    covered = con.execute(
        "select billed_cost, effective_cost from billing_line_items "
        "where commitment_discount_id is not null order by effective_cost desc"
    ).fetchall()
    assert covered == [
        (Decimal(0), Decimal("0.493152")),
        (Decimal(0), Decimal("0.006000000468")),  # as the file states it, not rounded to 6 decimals
    ]
    con.close()


def _azure_unnamed(tmp_path: Path) -> Path:
    """The two EA exports in folders and under names that do not say which is which."""
    landing = tmp_path / "landing"
    for folder, f in (("export-a", "EA_ActualCost_Small.csv"), ("export-b", "EA_AmortizedCost_Small.csv")):
        (landing / folder).mkdir(parents=True)
        (landing / folder / "part_0_0001.csv").write_bytes((BILLING / "azure" / f).read_bytes())
    return landing


@pytest.mark.parametrize("dataset", ["", "amortized", "actual"])
def test_azure_dataset_is_told_by_the_rows_when_names_do_not_say(dataset: str, tmp_path: Path) -> None:
    """Only an actual export has commitment purchases; only an amortized one has commitment-covered usage
    with a cost. A file of the other dataset is rejected with the row that shows it; nothing of it lands."""
    _azure_unnamed(tmp_path)
    options = f", options: {{dataset: {dataset}}}" if dataset else ""
    write_config(tmp_path, f"sources:\n  - {{name: az, kind: azure, uri: landing/{options}}}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    wanted = dataset or "amortized"
    keep, other = ("export-b", "export-a") if wanted == "amortized" else ("export-a", "export-b")
    [loaded] = report.of("loaded")
    assert f"/{keep}/" in loaded.uri
    [bad] = report.rejected
    assert f"/{other}/" in bad.uri
    why = (
        "this is the actual export: 1 reservation / savings plan purchase row(s) (data row 1)"
        if wanted == "amortized"
        else "this is the amortized export: 2 unused-commitment or amortised commitment-usage row(s) (data row 1)"
    )
    assert (bad.error or "").endswith(
        f"part_0_0001.csv:2: {why}; the source loads the {wanted} export (options.dataset: {wanted}), and the "
        f"two describe the same spend, so mixing them would count it twice: move the "
        f"{'actual' if wanted == 'amortized' else 'amortized'} export to a source of its own "
        f"(options.dataset: {'actual' if wanted == 'amortized' else 'amortized'})"
    )
    files = {r[0] for r in con.execute("select distinct x_source_file from billing_line_items").fetchall()}
    assert files == {loaded.uri}
    expected = azure_expected(
        BILLING
        / "azure"
        / ("EA_AmortizedCost_Small.csv" if wanted == "amortized" else "EA_ActualCost_Small.csv"),
        wanted,
    )
    got = con.execute(
        "select count(*), sum(billed_cost), sum(effective_cost) from billing_line_items"
    ).fetchall()[0]
    assert (got[0], _cents(got[1]), _cents(got[2])) == (expected[0], _cents(expected[1]), _cents(expected[2]))
    con.close()


def test_azure_export_manifest_type_tells_the_dataset(tmp_path: Path) -> None:
    """Newer Cost Management exports write `exportConfig.type` into each run's manifest.json: a run of the
    other dataset is skipped (with its manifest) before anything is read."""
    landing = tmp_path / "landing"
    for export, kind, f in (
        ("daily-a", "ActualCost", "EA_ActualCost_Small.csv"),
        ("daily-b", "AmortizedCost", "EA_AmortizedCost_Small.csv"),
    ):
        run = landing / export / "20230901-20230930" / "202309220416"
        run.mkdir(parents=True)
        (run / "part_0_0001.csv").write_bytes((BILLING / "azure" / f).read_bytes())
        manifest = {
            "manifestVersion": "2024-04-01",
            "exportConfig": {"exportName": export, "type": kind, "dataVersion": "2021-10-01"},
            "runInfo": {"runId": f"run-{export}"},
            "blobs": [{"blobName": f"{export}/20230901-20230930/202309220416/part_0_0001.csv"}],
        }
        (run / "manifest.json").write_text(__import__("json").dumps(manifest), encoding="utf-8")
    write_config(tmp_path, "sources:\n  - {name: az, kind: azure, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    assert sorted(o.uri.split("/landing/")[1] for o in report.of("loaded")) == [
        "daily-b/20230901-20230930/202309220416/manifest.json",
        "daily-b/20230901-20230930/202309220416/part_0_0001.csv",
    ]
    [note] = [n for n in report.notes if "never mixed" in n]
    assert "2 file(s) of the actual export skipped" in note
    assert con.execute("select count(*) from billing_line_items").fetchall() == [(28,)]
    con.close()


def test_azure_quirks_bom_braceless_tags_inclusive_period_end(tmp_path: Path) -> None:
    path = BILLING / "azure" / "EA_AmortizedCost_Small.csv"
    con = _load(tmp_path, "azure", [path])
    row = con.execute(
        "select billing_period_start, billing_period_end, tags['env'], billing_account_id "
        "from billing_line_items where tags['env'] is not null limit 1"
    ).fetchall()[0]
    assert str(row[0]) == "2023-09-01 00:00:00" and str(row[1]) == "2023-10-01 00:00:00"  # 09/30 inclusive
    assert row[2] and row[3] == "8611537"  # the BOM is not part of the first column's name
    con.close()


@pytest.mark.parametrize("path", sorted((BILLING / "gcp").glob("*.csv")), ids=lambda p: p.name)
def test_gcp_samples_reconcile_to_the_cent_with_credits(path: Path, tmp_path: Path) -> None:
    con = _load(tmp_path, "gcp", [path])
    _assert_reconciled(con, path, gcp_expected(path))
    # invoice month in Pacific time: the period starts at 07:00 or 08:00 UTC on the 1st
    starts = {
        r[0].hour
        for r in con.execute("select distinct billing_period_start from billing_line_items").fetchall()
    }
    assert starts <= {7, 8}
    con.close()


FOCUS_SPEC = sorted((BILLING / "focus-spec").glob("*.csv"))
INVALID_SPEC = {
    "commitment_discount_purchase_scenario_2.csv": (4, "ChargePeriodEnd", "2023-02-01T30:00:00Z"),
    "commitment_discount_purchase_scenario_3.csv": (5, "ChargePeriodEnd", "2023-02-01T30:00:00Z"),
}


@pytest.mark.parametrize("path", FOCUS_SPEC, ids=lambda p: p.name)
def test_focus_spec_examples_reconcile_or_are_rejected_precisely(path: Path, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / path.name).write_bytes(path.read_bytes())
    write_config(tmp_path, "currency: USD\nsources:\n  - {name: f, kind: focus, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    if path.name in INVALID_SPEC:
        line, column, value = INVALID_SPEC[path.name]
        [bad] = report.rejected
        assert (
            f"{path.name}:{line}: column {column!r}: expected an ISO 8601 date/time (UTC: 2024-09-01T00:00:00Z, 2024-09-01T00:00:00.000Z or 2024-09-01 00:00:00), found {value!r}"
            in (bad.error or "")
        )
        assert con.execute("select count(*) from billing_line_items").fetchall() == [(0,)]
    else:
        assert not report.rejected, report.summary()
        _assert_reconciled(con, path, focus_expected(path))
    con.close()


OCI_NATIVE = BILLING / "oci" / "oci_reports_cost-csv_0000000030000269.csv"


@pytest.mark.parametrize("kind", ["focus", "aws_cur", "aws_cur2", "azure", "gcp"])
def test_oci_native_cost_report_is_rejected_precisely_by_every_billing_kind(
    kind: str, tmp_path: Path
) -> None:
    """OCI's native cost report is not supported (docs/billing.md): the message says so and points at
    OCI's FOCUS export, whichever billing kind the file was given to; nothing lands."""
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / OCI_NATIVE.name).write_bytes(OCI_NATIVE.read_bytes())
    write_config(tmp_path, f"sources:\n  - {{name: s, kind: {kind}, uri: landing/}}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    [bad] = report.rejected
    assert bad.error == (
        f"{landing / OCI_NATIVE.name}:1: not supported: an OCI native cost report (lineItem/referenceNo, "
        "lineItem/intervalUsageStart, cost/myCost, ...); use OCI's FOCUS export instead (the FOCUS reports "
        "OCI writes next to its cost reports), loaded with kind: focus"
    )
    assert report.exit_code == 1
    assert con.execute("select count(*) from billing_line_items").fetchall() == [(0,)]
    assert con.execute("select status from ingest_files").fetchall() == [("rejected",)]
    con.close()


def test_azure_dataset_words_are_matched_as_path_tokens_and_a_root_manifest_counts() -> None:
    from pipelines.ingest.billing.azure import _manifest_dataset, dataset_of_path

    assert dataset_of_path("contractual-costs/2026/part_0.csv") is None  # not the actual export
    assert dataset_of_path("EA_ActualCost_Small.csv") == "actual"
    assert dataset_of_path("exports/actual/part_0.csv") == "actual"
    assert dataset_of_path("costs/Amortised/part_0.csv") == "amortized"
    # the source uri points at a run folder: its manifest.json sits at the root
    assert _manifest_dataset({".": "actual"}, "part_0_0001.csv") == "actual"
    assert _manifest_dataset({"a/b": "amortized"}, "a/b/c/part_0.csv") == "amortized"
    assert _manifest_dataset({}, "part_0.csv") is None
