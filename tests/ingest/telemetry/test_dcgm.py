"""dcgm-exporter scrapes: exposition, federation, promtool dump and 1.x names; labels, MIG, sentinels, bad lines."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pipelines.ingest import IngestReport
from pipelines.ingest.readers.dcgm import metric_catalog, time_from_name
from tests.helpers.ingest_run import ingest_project
from tests.helpers.paths import FIXTURES

DCGM = FIXTURES / "telemetry" / "dcgm"
EXPORTER_LISTS = FIXTURES / "telemetry" / "dcgm-exporter"
SCRAPE = DCGM / "gpu-node-a_20261130T014200Z.prom"


def _run(
    tmp_path: Path, files: dict[str, str | Path], options: str = ""
) -> tuple[IngestReport, list[dict[str, Any]]]:
    sources = f"  - {{name: k8s-gpus, kind: dcgm, uri: 'dcgm/*'{options}}}\n"
    query = "select * from gpu_samples order by host, ts, gpu_index"
    return ingest_project(tmp_path, sources, {f"dcgm/{n}": c for n, c in files.items()}, query)


def test_exporter_scrape_federation_promtool_and_1x_names(tmp_path: Path) -> None:
    report, got = _run(tmp_path, {p.name: p for p in sorted(DCGM.iterdir())})
    assert [o.status for o in report.outcomes] == ["loaded"] * 4, report.summary()
    by_host: dict[str, list[dict[str, Any]]] = {}
    for r in got:
        by_host.setdefault(r["host"], []).append(r)
    assert {h: len(v) for h, v in by_host.items()} == {
        "gpu-node-a": 2, "gpu-node-c": 3, "gpu-node-d": 1, "ip-10-0-12-34.ec2.internal": 6,
    }  # fmt: skip

    # one dcgm-exporter scrape without timestamps: the time is in the file name
    busy, idle = by_host["gpu-node-a"]
    assert (
        busy["ts"] == datetime(2026, 11, 30, 1, 42)
        and busy["gpu_uuid"] == "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"
    )
    assert (busy["gpu_index"], busy["gpu_model"], busy["pci_bus_id"]) == (
        0,
        "NVIDIA H100 80GB HBM3",
        "00000000:07:00.0",
    )
    assert (busy["util_pct"], busy["mem_util_pct"], busy["mem_used_mib"]) == (97.0, 41.0, 69973.0)
    assert busy["mem_total_mib"] == 69973 + 11032 + 554  # used + free + reserved
    assert (busy["power_w"], busy["temperature_c"], busy["sm_clock_mhz"], busy["mem_clock_mhz"]) == (
        612.337,
        61.0,
        1980.0,
        2619.0,
    )
    assert (busy["gr_engine_active"], busy["tensor_active"], busy["dram_active"]) == (
        0.912345,
        0.412003,
        0.533117,
    )
    assert busy["sm_active"] is None  # not in the default counters
    assert (busy["pod"], busy["namespace"], busy["container"]) == ("llm-pretrain-0", "nlp", "trainer")
    assert busy["labels"] == {"device": "nvidia0", "dcgm_fi_driver_version": "550.54.15"}
    assert (idle["pod"], idle["namespace"], idle["util_pct"], idle["power_w"]) == (None, None, 0.0, 71.052)

    # federation: sample timestamps in ms, the node label names the host (Hostname is the exporter pod),
    # exported_* are the workload's labels, a MIG instance, a sentinel power value
    fed = by_host["ip-10-0-12-34.ec2.internal"]
    assert [r["ts"] for r in fed[::2]] == [
        datetime(2026, 11, 30, 1, 42, 0, 123000), datetime(2026, 11, 30, 1, 42, 30, 121000),
        datetime(2026, 11, 30, 1, 43, 0, 125000),
    ]  # fmt: skip
    notebook, mig = fed[0], fed[1]
    assert (notebook["pod"], notebook["namespace"], notebook["container"]) == (
        "jupyter-erin-0",
        "research",
        "notebook",
    )
    assert (notebook["util_pct"], notebook["mem_used_mib"], notebook["power_w"]) == (0.0, 70211.0, 88.153)
    assert (mig["mig_profile"], mig["mig_instance_id"], mig["gpu_index"]) == ("1g.10gb", "1", 1)
    assert (mig["util_pct"], mig["sm_active"], mig["power_w"]) == (
        35.0,
        0.3125,
        None,
    )  # 9223372036854775794 -> NULL
    assert mig["labels"]["service"] == "nvidia-dcgm-exporter" and "pod" not in mig["labels"]

    # promtool tsdb dump: the name is a label, `, ` separators; hpc_job names the Slurm job
    c = by_host["gpu-node-c"]
    assert [(r["util_pct"], r["mem_used_mib"], r["power_w"], r["job_id"]) for r in c] == [
        (99.0, 30994.0, 592.74, "48213"), (98.0, 30994.0, 590.11, "48213"), (97.0, 31002.0, 601.37, "48213"),
    ]  # fmt: skip

    # dcgm-exporter 1.x names: old label names, profiling in percent, seconds timestamps, NaN
    (d,) = by_host["gpu-node-d"]
    assert d["ts"] == datetime(2026, 11, 30, 1, 42, 0, 500000)
    assert (d["util_pct"], d["sm_active"], d["power_w"], d["mem_total_mib"]) == (55.0, 0.375, None, 16160.0)
    assert (d["pod"], d["namespace"], d["container"], d["gpu_uuid"]) == (
        "resnet-train-0", "vision", "train", "GPU-5e6f7a8b-9c0d-1e2f-3a4b-5c6d7e8f9a0b",
    )  # fmt: skip
    assert {r["source"] for r in got} == {"k8s-gpus"}


def test_catalogue_names_are_dcgm_exporters_own() -> None:
    """Every metric the reader maps is spelled as in dcgm-exporter's shipped counter lists."""
    shipped: dict[str, str] = {}
    for path in EXPORTER_LISTS.glob("*.csv"):
        for line in path.read_text(encoding="utf-8").splitlines():
            text = line.lstrip("# ").strip()
            if text.count(",") >= 2 and not text.lower().startswith("dcgm field"):
                name, kind = (p.strip() for p in text.split(",")[:2])
                shipped[name] = kind
    mapped = {m["metric"]: m for m in metric_catalog()}
    extra = {"DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"}
    assert set(mapped) - set(shipped) == extra  # documented in the catalogue as not in the default lists
    assert all(shipped[name] == "gauge" for name in mapped if name in shipped)
    # every enabled gauge of the default list that gpu_samples has a column for is read
    for name in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE",
                 "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
                 "DCGM_FI_PROF_SM_ACTIVE", "dcgm_gpu_utilization"):  # fmt: skip
        assert name in mapped
    assert (
        mapped["dcgm_fi_prof_sm_active"]["scale"] == 0.01 and mapped["DCGM_FI_PROF_SM_ACTIVE"]["scale"] == 1
    )


def test_file_time_from_name_or_mtime() -> None:
    assert time_from_name("node_20261130T014200Z.prom") == datetime(2026, 11, 30, 1, 42)
    assert time_from_name("node-2026-11-30T01-42-00Z.txt") == datetime(2026, 11, 30, 1, 42)
    assert time_from_name("node_1796002920.prom") == datetime(2026, 11, 30, 1, 42)
    assert time_from_name("node-a.prom") is None


def test_scrape_without_time_in_its_name_takes_the_file_mtime(tmp_path: Path) -> None:
    text = SCRAPE.read_text(encoding="utf-8")
    folder = tmp_path / "dcgm"
    folder.mkdir()
    (folder / "gpu-node-b.prom").write_text(text.replace("gpu-node-a", "gpu-node-b"), encoding="utf-8")
    when = datetime(2026, 12, 1, 8, 30, 15).timestamp() - datetime(1970, 1, 1).timestamp()
    os.utime(folder / "gpu-node-b.prom", (when, when))
    report, got = _run(tmp_path, {})
    assert [o.status for o in report.outcomes] == ["loaded"]
    assert {r["ts"] for r in got} == {datetime(2026, 12, 1, 8, 30, 15)} and len(got) == 2


@pytest.mark.parametrize(
    ("bad", "where", "problem"),
    [
        ('DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-604ac76c-d9cf-fef3', "bad.prom:7",
         "not a sample: the label set is not closed (line cut short?)"),
        ('DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-604ac76c"} ninety-seven', "bad.prom:7", "value 'ninety-seven' is not a number"),
        ("garbage", "bad.prom:7", "not a sample: expected `name{labels} value [timestamp]`"),
    ],
)  # fmt: skip
def test_malformed_line_rejects_the_file_naming_its_line(
    tmp_path: Path, bad: str, where: str, problem: str
) -> None:
    lines = SCRAPE.read_text(encoding="utf-8").splitlines()
    broken = "\n".join([*lines[:6], bad, *lines[6:]]) + "\n"
    report, got = _run(tmp_path, {"bad.prom": broken, "gpu-node-a_20261130T014200Z.prom": SCRAPE})
    outcome = {Path(o.uri).name: o for o in report.outcomes}
    assert outcome["gpu-node-a_20261130T014200Z.prom"].status == "loaded" and len(got) == 2
    assert outcome["bad.prom"].status == "rejected"
    assert where in (outcome["bad.prom"].error or "") and problem in (outcome["bad.prom"].error or "")


def test_several_scrapes_without_timestamps_are_rejected(tmp_path: Path) -> None:
    text = SCRAPE.read_text(encoding="utf-8")
    report, got = _run(tmp_path, {"appended.prom": text + text, "gpu-node-a_20261130T014200Z.prom": SCRAPE})
    outcome = {Path(o.uri).name: o for o in report.outcomes}
    assert outcome["gpu-node-a_20261130T014200Z.prom"].status == "loaded" and len(got) == 2
    assert outcome["appended.prom"].status == "rejected"
    assert "appended.prom: several scrapes of the same series without sample timestamps" in (
        outcome["appended.prom"].error or ""
    )


def test_a_changed_file_replaces_its_rows(tmp_path: Path) -> None:
    report, got = _run(tmp_path, {"gpu-node-a_20261130T014200Z.prom": SCRAPE})
    assert len(got) == 2
    report, got = _run(tmp_path, {})
    assert [o.status for o in report.outcomes] == ["unchanged"] and len(got) == 2
    changed = SCRAPE.read_text(encoding="utf-8").replace("} 97\n", "} 12\n")
    report, got = _run(tmp_path, {"gpu-node-a_20261130T014200Z.prom": changed})
    assert [o.status for o in report.outcomes] == ["loaded"]
    assert sorted(r["util_pct"] for r in got) == [0.0, 12.0]
