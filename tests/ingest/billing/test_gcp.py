"""Google Cloud billing export as newline-delimited JSON (BigQuery `EXPORT DATA ... FORMAT = JSON`) and CSV:
nested records that older exports lack, resource vs project labels, credits.

The lines are written here in the export's layout (formats.md §4.1: nested `service`, `project`,
`invoice`, `usage` records; `labels`, `project.labels`, `system_labels` and `credits` as arrays of
records); no public JSON export exists to copy (../shared/data/billing/SOURCES.md). Expected values are
worked out by hand in each test.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.ingest import IngestReport, ingest
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse


def gcp_line(hour: int = 0, **over: Any) -> dict[str, Any]:
    """One line of an OLDER export: `invoice` has only `month`, `project` has no `number`."""
    line: dict[str, Any] = {
        "billing_account_id": "01A2B3-C4D5E6-F7A8B9",
        "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
        "sku": {"id": "A1B2-C3D4-E5F6", "description": "Nvidia Tesla A100 GPU running in Americas"},
        "usage_start_time": f"2024-11-02 {hour:02d}:00:00+00:00",
        "usage_end_time": f"2024-11-02 {hour + 1:02d}:00:00+00:00",
        "project": {
            "id": "ml-prod",
            "name": "ML Prod",
            "labels": [{"key": "team", "value": "proj-team"}, {"key": "cost-center", "value": "cc-7"}],
        },
        "labels": [{"key": "Team", "value": "nlp"}, {"key": "job_id", "value": "run-42"}],
        "system_labels": [{"key": "compute.googleapis.com/machine_spec", "value": "a2-highgpu-1g"}],
        "location": {"location": "us-central1", "region": "us-central1", "zone": "us-central1-a"},
        "resource": {
            "name": "trainer-1",
            "global_name": "//compute.googleapis.com/projects/ml-prod/zones/us-central1-a/instances/123",
        },
        "export_time": "2024-11-02 05:00:00+00:00",
        "cost": 12.5,
        "currency": "USD",
        "usage": {"amount": 3600, "unit": "seconds", "amount_in_pricing_units": 1, "pricing_unit": "hour"},
        "credits": [
            {"name": "Sustained use discount", "amount": -2.25, "type": "SUSTAINED_USAGE_DISCOUNT"},
            {"name": "Free trial", "amount": -0.13, "type": "PROMOTION"},
        ],
        "invoice": {"month": "202411"},
        "cost_type": "regular",
    }
    line.update(over)
    return line


def ndjson(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _run(
    tmp_path: Path, files: dict[str, bytes], options: str = ""
) -> tuple[IngestReport, duckdb.DuckDBPyConnection]:
    landing = tmp_path / "landing"
    landing.mkdir(exist_ok=True)
    for name, data in files.items():
        (landing / name).write_bytes(data)
    write_config(tmp_path, f"sources:\n  - {{name: gcp, kind: gcp, uri: landing/{options}}}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    return ingest(con, config), con


@pytest.mark.parametrize("name", ["older-export.json", "older-export.ndjson.gz"])
def test_ndjson_older_export_without_newer_nested_fields_loads(name: str, tmp_path: Path) -> None:
    """`invoice.publisher_type` and `project.number` are absent from every line: they read as NULL
    (before the fix: "Could not find key "number" in struct", and the whole file was rejected)."""
    data = ndjson([gcp_line(0), gcp_line(1, cost=8.0, credits=[])])
    report, con = _run(tmp_path, {name: gzip.compress(data) if name.endswith(".gz") else data})
    assert not report.rejected, report.summary()
    rows = con.execute(
        """select billed_cost, effective_cost, list_cost, tags, team, job_id, sub_account_id, sub_account_name,
                  service_name, sku_id, region_id, availability_zone, resource_id, resource_name,
                  consumed_quantity, consumed_unit, pricing_quantity, pricing_unit, x_instance_type,
                  billing_period_start, billing_period_end, x_billing_period, x_extra
           from billing_line_items order by charge_period_start"""
    ).fetchall()
    assert len(rows) == 2
    first = rows[0]
    # 12.50 - 2.25 - 0.13 = 10.12; the list cost is before credits (no cost_at_list in this export)
    assert first[0:3] == (Decimal("10.120000"), Decimal("10.120000"), Decimal("12.500000"))
    # nested resource labels and project labels both land as tags (resource `Team` beats project `team`)
    assert first[3] == {"team": "nlp", "cost-center": "cc-7", "job_id": "run-42"}
    assert first[4:6] == ("nlp", "run-42")
    assert first[6:12] == (
        "ml-prod",
        "ML Prod",
        "Compute Engine",
        "A1B2-C3D4-E5F6",
        "us-central1",
        "us-central1-a",
    )
    assert first[12] == "//compute.googleapis.com/projects/ml-prod/zones/us-central1-a/instances/123"
    # units in FOCUS's unit format (`seconds` -> `Seconds`, `hour` -> `Hours`: pipelines/catalog/pricing_units.csv)
    assert first[13:19] == ("trainer-1", 3600.0, "Seconds", 1.0, "Hours", "a2-highgpu-1g")
    # invoice month 202411 in Pacific time: 2024-11-01 00:00 PDT = 07:00 UTC; 2024-12-01 00:00 PST = 08:00 UTC
    assert (str(first[19]), str(first[20]), first[21]) == (
        "2024-11-01 07:00:00",
        "2024-12-01 08:00:00",
        "2024-11",
    )
    extra = json.loads(first[22])
    assert extra["service.id"] == "6F81-5844-456A"
    assert "project.number" not in extra and "invoice.publisher_type" not in extra
    # a line with an empty credits array: cost as it is
    assert rows[1][0:2] == (Decimal("8.000000"), Decimal("8.000000"))
    con.close()


def test_ndjson_newer_fields_are_kept_in_x_extra(tmp_path: Path) -> None:
    newer = gcp_line(
        0,
        invoice={"month": "202411", "publisher_type": "GOOGLE"},
        project={"id": "ml-prod", "number": "123456789012", "name": "ML Prod", "labels": []},
        cost_at_list=13.0,
    )
    report, con = _run(tmp_path, {"newer.json": ndjson([newer, gcp_line(1)])})
    assert not report.rejected, report.summary()
    rows = con.execute(
        "select list_cost, x_extra ->> 'project.number', x_extra ->> 'invoice.publisher_type', tags "
        "from billing_line_items order by charge_period_start"
    ).fetchall()
    # the first line has no project labels: only its resource labels
    assert rows[0] == (Decimal("13.000000"), "123456789012", "GOOGLE", {"team": "nlp", "job_id": "run-42"})
    # the second line lacks the newer fields (NULL within the file's merged record type)
    assert rows[1][1:3] == (None, None) and rows[1][0] == Decimal("12.500000")
    con.close()


def test_resource_label_wins_over_project_label_after_normalisation(tmp_path: Path) -> None:
    """Resource `Team=nlp` vs project `team=proj-team`: different raw keys, one normalised key `team`.
    The resource's value wins; a project label the resource has not got still fills in; both raw keys
    stay in x_tags_raw. The same in NDJSON and in a CSV extract (Python-repr arrays)."""
    line = gcp_line(
        0,
        labels=[{"key": " Team ", "value": "nlp"}, {"key": "user_owner", "value": "ana"}],
        project={
            "id": "ml-prod",
            "name": "ML Prod",
            "labels": [
                {"key": "team", "value": "proj-team"},
                {"key": "owner", "value": "proj-owner"},
                {"key": "project", "value": "llm"},
            ],
        },
    )
    csv_text = _csv_extract([line])
    report, con = _run(tmp_path, {"labels.json": ndjson([line]), "labels.csv": csv_text.encode()})
    assert not report.rejected, report.summary()
    got = con.execute(
        "select x_source_format, tags, team, owner, project, x_tags_raw::varchar from billing_line_items "
        "order by x_source_file"
    ).fetchall()
    assert len(got) == 2
    for _, tags, team, owner, project, raw in got:
        assert tags == {"team": "nlp", "owner": "ana", "project": "llm"}
        assert (team, owner, project) == ("nlp", "ana", "llm")
        assert json.loads(raw) == {
            "team": "proj-team",
            "owner": "proj-owner",
            "project": "llm",
            " Team ": "nlp",
            "user_owner": "ana",
        }
    con.close()


def test_project_labels_can_be_turned_off(tmp_path: Path) -> None:
    report, con = _run(tmp_path, {"l.json": ndjson([gcp_line(0)])}, ", options: {project_labels: false}")
    assert not report.rejected, report.summary()
    assert con.execute("select tags, team from billing_line_items").fetchall() == [
        ({"team": "nlp", "job_id": "run-42"}, "nlp")
    ]
    con.close()


def _csv_extract(lines: list[dict[str, Any]]) -> str:
    """The lines as a flattened CSV extract: dotted column names, repeated records as Python repr."""
    flat: list[dict[str, str]] = []
    for line in lines:
        row: dict[str, str] = {}
        for key, value in line.items():
            if isinstance(value, dict):
                for sub, v in value.items():
                    row[f"{key}.{sub}"] = repr(v) if isinstance(v, list) else str(v)
            elif isinstance(value, list):
                row[key] = repr(value)
            else:
                row[key] = str(value)
        flat.append(row)
    header = list(dict.fromkeys(k for row in flat for k in row))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(flat)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_credits_are_added_to_cost_to_the_cent(fmt: str, tmp_path: Path) -> None:
    """Effective (and billed) cost = cost + credits, credits negative, per line and in total."""
    lines = [
        gcp_line(0, cost=12.5),  # credits -2.25 and -0.13 -> 10.12
        gcp_line(
            1, cost=3.1, credits=[{"name": "CUD", "amount": -3.1, "type": "COMMITTED_USAGE_DISCOUNT"}]
        ),  # 0.00
        gcp_line(2, cost=0.07, credits=[]),  # 0.07
        gcp_line(3, cost=1.0, credits=[{"name": "Promo", "amount": -1.75, "type": "PROMOTION"}]),  # -0.75
    ]
    data = ndjson(lines) if fmt == "json" else _csv_extract(lines).encode()
    report, con = _run(tmp_path, {f"credits.{fmt}": data})
    assert not report.rejected, report.summary()
    per_line = con.execute(
        "select billed_cost, effective_cost from billing_line_items order by charge_period_start"
    ).fetchall()
    assert per_line == [
        (Decimal("10.120000"), Decimal("10.120000")),
        (Decimal("0.000000"), Decimal("0.000000")),
        (Decimal("0.070000"), Decimal("0.070000")),
        (Decimal("-0.750000"), Decimal("-0.750000")),
    ]
    # 12.50 + 3.10 + 0.07 + 1.00 = 16.67 before credits; credits -2.25 - 0.13 - 3.10 - 1.75 = -7.23
    ledger = con.execute(
        "select rows, billed_cost_sum, effective_cost_sum, file_billed_cost_sum from ingest_files"
    ).fetchall()
    assert ledger == [(4, Decimal("9.440000"), Decimal("9.440000"), Decimal("9.440000"))]
    con.close()
