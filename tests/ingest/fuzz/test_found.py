"""What the property tests found, each as a plain regression test (these run in every `make test`).

- A .csv.gz billing part with a damaged deflate block raised zlib.error out of the ingest (a traceback):
  the probe caught OSError and EOFError, but zlib's error is neither.
- A damaged .gz of nvidia-smi, kubectl or sacct output raised zlib.error out of the ingest too (the
  readers and the batch and one-file modes caught only OSError and EOFError); a damaged Prometheus
  query_range .json.gz was explained as "Expecting value at line 1, column 1" (its compressed bytes
  were parsed as JSON text).
- A DCGM scrape cut inside its last line loaded that line when what was left still parsed: a timestamp
  cut from 1796002920.5 to 17960 made a second sample on 1970-01-01. The text format ends every line
  with a newline (Prometheus refuses a scrape without one), so a last line without it is a cut file.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from pipelines.config import load_config
from pipelines.ingest import IngestReport, ingest
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FIXTURES, H200

FOCUS = FIXTURES / "billing" / "focus-spec" / "commitment_discount_usage_scenario_3.csv"
DCGM = FIXTURES / "telemetry" / "dcgm" / "gpu-node-d_v1-names.txt"


def _damaged_gz(path: Path) -> bytes:
    data = bytearray(gzip.compress(path.read_bytes(), mtime=0))
    data[10] ^= 1  # the first byte of the deflate stream: its block header
    return bytes(data)


def _run(tmp_path: Path, kind: str, files: dict[str, bytes]) -> tuple[IngestReport, list[tuple]]:
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    write_config(tmp_path, f"sources:\n  - {{name: src, kind: {kind}, uri: in/}}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        report = ingest(con, config)
        landed = con.execute(
            "select f.uri, count(*) from ingest_files f join "
            "(select x_file_id from billing_line_items union all select x_file_id from gpu_samples) t "
            "on t.x_file_id = f.file_id group by 1 order by 1"
        ).fetchall()
    finally:
        con.close()
    return report, landed


def test_a_damaged_deflate_block_in_a_billing_part_is_a_rejection_not_a_traceback(tmp_path: Path) -> None:
    report, landed = _run(
        tmp_path, "focus", {"good.csv": FOCUS.read_bytes(), "bad.csv.gz": _damaged_gz(FOCUS)}
    )
    by_name = {Path(o.uri).name: o for o in report.outcomes}
    assert by_name["good.csv"].status == "loaded"
    bad = by_name["bad.csv.gz"]
    assert bad.status == "rejected"
    assert (bad.error or "").startswith(f"{tmp_path / 'in' / 'bad.csv.gz'}: cannot read: "), bad.error
    assert [Path(uri).name for uri, _ in landed] == ["good.csv"]  # nothing of the damaged part landed


def test_a_dcgm_scrape_cut_inside_its_last_line_is_rejected_naming_it(tmp_path: Path) -> None:
    text = DCGM.read_bytes()
    cut = text[: text.rindex(b" 1796002920.5") + len(b" 17960")]  # the last sample's timestamp cut short
    lines = cut.count(b"\n") + 1
    report, landed = _run(tmp_path, "dcgm", {"cut_20261130T014200Z.prom": cut})
    (outcome,) = report.outcomes
    assert outcome.status == "rejected", report.summary()
    assert outcome.error == (
        f"{tmp_path / 'in' / 'cut_20261130T014200Z.prom'}:{lines}: the last line does not end with a newline: "
        "the file was cut short (the text format ends every line with one, and a cut value or timestamp can "
        "still read as a sample)"
    )
    assert landed == []


def test_a_dcgm_scrape_ending_in_a_newline_still_loads(tmp_path: Path) -> None:
    shutil.copyfile(DCGM, tmp_path / "whole.prom")
    report, landed = _run(tmp_path, "dcgm", {"whole.prom": (tmp_path / "whole.prom").read_bytes()})
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    assert [n for _, n in landed] == [1]


@pytest.mark.parametrize(
    ("kind", "src", "name", "flip", "problem"),
    [
        ("nvidia_smi", H200 / "nvidia_smi_query_gpu.csv", "smi.csv.gz", (10, 1), "cannot read: the gzip stream is damaged ("),
        ("k8s_pods", FIXTURES / "jobs" / "k8s_pods.json", "pods.json.gz", (10, 1), "cannot read: the gzip stream is damaged ("),
        ("slurm_sacct", FIXTURES / "jobs" / "sacct_cluster_a.txt", "sacct.txt.gz", (12, 0x40), "cannot read: the gzip stream is damaged ("),
        (
            "prometheus_json",
            FIXTURES / "telemetry" / "prometheus" / "query_range_2026-11-30T0142.json",
            "query.json.gz",
            (10, 1),
            "not a Prometheus query response: the gzip stream is damaged or cut short (",
        ),
    ],
)  # fmt: skip
def test_a_damaged_gz_of_telemetry_or_jobs_is_a_rejection_naming_the_gzip_stream(
    tmp_path: Path, kind: str, src: Path, name: str, flip: tuple[int, int], problem: str
) -> None:
    text = (
        b"".join(src.read_bytes().splitlines(keepends=True)[:13])
        if kind == "nvidia_smi"
        else src.read_bytes()
    )
    data = bytearray(gzip.compress(text, mtime=0))
    data[flip[0]] ^= flip[1]  # inside the first deflate block
    report, landed = _run(tmp_path, kind, {name: bytes(data)})
    (outcome,) = report.outcomes
    assert outcome.status == "rejected", report.summary()
    assert (outcome.error or "").startswith(f"{tmp_path / 'in' / name}: {problem}"), outcome.error
    assert landed == []
