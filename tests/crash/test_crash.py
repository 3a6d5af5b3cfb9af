"""SIGKILL `wastewatch ingest` at every named failpoint, re-run it, and compare with a clean ingest.

The landing zone holds every ingestion mode: a CUR 2.0 delivery that is restated (deliveries), nvidia-smi
captures with one bad file, so a batch falls back to file-by-file loading (batched and per file), a hosts
CSV, a Slurm sacct log and S3 Inventory reports (whole-source snapshots). The warehouse first ingests
version 1 of the landing zone; version 2 is then ingested cleanly once (both in this
process: nothing kills them), and, for each failpoint, from the same version-1 state in a process killed at
that point and run again (that run in this process too: what it must recover is what the killed process
left in the files, not in a process). Every table's row count and the sum of each of its numeric columns,
and the ledger, must equal the clean run's; no lock or temp copy may be left. `make test` runs one point;
CI (`WASTEWATCH_FULL_TESTS=1`, or `WASTEWATCH_CRASH_POINTS=all`) runs every one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import load_config
from pipelines.failpoints import ENV, POINTS
from pipelines.transform.publish import publish
from tests.helpers.billing_exports import Cur2Export, hours
from tests.helpers.config import write_config
from tests.helpers.full import full_run
from tests.helpers.paths import FIXTURES, REPO
from tests.helpers.storage import write_report

NOV = datetime(2026, 11, 2)
DEC = datetime(2026, 12, 1)
# the point `make test` kills at (a billing delivery's transaction, the one that replaces a period); CI runs
# all of POINTS, which covers transform and publish too
SHORT = ("ingest.delivery.before_commit",)
CONFIG = """\
duckdb: {publish_update_above_mb: 0}  # this warehouse is small: published by what changed all the same
sources:
  - {name: cur2, kind: aws_cur2, uri: landing/billing/}
  - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
  - {name: hosts, kind: hosts_csv, uri: landing/hosts/}
  - {name: slurm, kind: slurm_sacct, uri: landing/jobs/}
  - {name: ckpt, kind: s3_inventory, uri: landing/inventory/}
"""
SMI_HEADER = "timestamp, name, pci.bus_id, uuid, index, utilization.gpu [%], memory.total [MiB], memory.used [MiB], power.draw [W]"


def _points() -> tuple[str, ...]:
    return POINTS if full_run() or os.environ.get("WASTEWATCH_CRASH_POINTS") == "all" else SHORT


def _smi(path: Path, start: datetime, n: int, util: int) -> None:
    lines = [SMI_HEADER]
    for i in range(n):
        t = start + timedelta(minutes=i)
        lines.append(
            f"{t:%Y/%m/%d %H:%M:%S}.000, NVIDIA H100, 00000000:00:06.0, GPU-1, 0, {util} %, 81559 MiB, 10 MiB, 300 W"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _objects(day: int, n: int) -> list[dict[str, Any]]:
    return [
        {
            "key": f"runs/r{i}/step-{day:03d}.pt",
            "size": 1_000_000 + i,
            "modified": datetime(2026, 11, day),
            "storage_class": "STANDARD",
        }
        for i in range(n)
    ]


def _version_1(root: Path) -> None:
    landing = root / "landing"
    root.mkdir(parents=True)
    write_config(root, CONFIG)
    Cur2Export(landing / "billing").deliver(
        "2026-11", [hours("i-a", NOV, 24, "3.00"), hours("i-b", NOV, 24, "5.00")], "exec-1"
    )
    _smi(landing / "telemetry" / "gpu-01_2026-11-02.csv", NOV, 120, 0)
    _smi(landing / "telemetry" / "gpu-02_2026-11-02.csv", NOV, 120, 90)
    (landing / "hosts").mkdir(parents=True)
    (landing / "hosts" / "hosts.csv").write_text(
        "host,instance_id\ngpu-01,i-a\ngpu-02,i-b\n", encoding="utf-8"
    )
    (landing / "jobs").mkdir(parents=True)
    shutil.copy(FIXTURES / "jobs" / "sacct_cluster_a.txt", landing / "jobs" / "sacct_2026-11-30.txt")
    write_report(landing / "inventory", "ckpt", "2026-11-02T00-00Z", _objects(2, 40))


def _version_2(root: Path) -> None:
    """A restated November, a new December, new and bad telemetry, a changed hosts file, a new inventory."""
    landing = root / "landing"
    bill = Cur2Export(landing / "billing")
    bill.deliver("2026-11", [hours("i-a", NOV, 24, "3.25"), hours("i-b", NOV, 30, "5.00")], "exec-2")
    bill.deliver("2026-12", [hours("i-a", DEC, 10, "3.25")], "exec-3")
    _smi(landing / "telemetry" / "gpu-01_2026-11-03.csv", NOV + timedelta(days=1), 120, 5)
    _smi(landing / "telemetry" / "gpu-02_2026-11-03.csv", NOV + timedelta(days=1), 120, 95)
    (landing / "telemetry" / "gpu-03_2026-11-03.csv").write_text(
        "timestamp, name\nnot a time, x\n", encoding="utf-8"
    )
    (landing / "hosts" / "hosts.csv").write_text(
        "host,instance_id\ngpu-01,i-a\ngpu-02,i-b\ngpu-03,i-c\n", encoding="utf-8"
    )
    write_report(landing / "inventory", "ckpt", "2026-11-03T00-00Z", _objects(3, 50))


def _ingest(root: Path, failpoint: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if failpoint:
        env[ENV] = failpoint
    script = Path(sys.executable).with_name("wastewatch")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "pipelines.cli"]
    return subprocess.run(
        [*cmd, "--config", str(root / "wastewatch.yaml"), "ingest", "--wait", "5"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _ingest_here(root: Path) -> tuple[int, str]:
    """A clean `wastewatch ingest` in this process (the reference runs, which nothing kills): exit code, stderr."""
    result = CliRunner(env={"WASTEWATCH_CONFIG": None, ENV: None}).invoke(
        main, ["--config", str(root / "wastewatch.yaml"), "ingest", "--wait", "5"]
    )
    return result.exit_code, result.stderr


def _state(root: Path) -> dict[str, Any]:
    """Row counts and the sums of every numeric column of every table, and the ledger without times."""
    warehouse = root / "warehouse" / "wastewatch.duckdb"
    out: dict[str, Any] = {}
    with duckdb.connect(str(warehouse), read_only=True) as con:
        tables = [r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_schema = 'main' "
            "and table_type = 'BASE TABLE' order by 1"
        ).fetchall()]  # fmt: skip
        for table in tables:
            cols = con.execute(
                "select column_name, data_type from information_schema.columns "
                "where table_schema = 'main' and table_name = $t order by ordinal_position",
                {"t": table},
            ).fetchall()
            sums = [
                f'round(sum("{c}"), 6)' if t in ("DOUBLE", "FLOAT", "REAL") else f'sum("{c}")'
                for c, t in cols
                if t.startswith("DECIMAL")
                or t in ("BIGINT", "INTEGER", "SMALLINT", "HUGEINT", "DOUBLE", "FLOAT", "REAL")
                and c not in ("fingerprint",)
            ]
            row = con.execute(f'select count(*) {"".join(", " + s for s in sums)} from "{table}"').fetchone()  # noqa: S608 - our identifiers
            out[table] = row
        out["ledger"] = [
            tuple(str(v).replace(str(root), "<root>") if isinstance(v, str) else v for v in r)
            for r in con.execute(
                "select source, uri, status, rows, billing_period, billed_cost_sum, effective_cost_sum, "
                "file_rows, file_billed_cost_sum, error from ingest_files order by source, uri"
            ).fetchall()
        ]
    return out


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any], int]:
    """(project root, saved version-1 state, the clean version-2 state, the clean run's exit code)."""
    base = tmp_path_factory.mktemp("crash")
    root, saved = base / "project", base / "v1"
    _version_1(root)
    code, stderr = _ingest_here(root)
    assert code == 0, stderr
    # published once more: both private copies exist, so version 2's publish updates one by what changed
    # (publish.updated) rather than copying the warehouse whole (publish.copied)
    publish(load_config(root / "wastewatch.yaml"))
    shutil.copytree(root, saved, symlinks=True)
    _version_2(root)
    code, stderr = _ingest_here(root)
    assert code == 1 and "gpu-03_2026-11-03.csv" in stderr, stderr
    return root, saved, _state(root), code


@pytest.mark.e2e
@pytest.mark.parametrize("point", _points())
def test_a_kill_at_any_point_recovers_to_what_a_clean_ingest_holds(
    clean: tuple[Path, Path, dict[str, Any], int], point: str
) -> None:
    root, saved, expected, code = clean
    shutil.rmtree(root)
    shutil.copytree(saved, root, symlinks=True)
    _version_2(root)
    killed = _ingest(root, point)
    assert killed.returncode == -9, f"{point} was never reached: {killed.returncode}\n{killed.stderr}"
    # the next ingest after the kill, in this process as the clean ones (a new process would only import the
    # CLI again): it finds the killed process's lock, transaction and temp copies as a new one would
    again_code, again_stderr = _ingest_here(root)
    assert again_code == code, again_stderr
    assert _state(root) == expected
    leftovers = sorted(
        p.name for p in (root / "warehouse").iterdir() if p.name.endswith((".lock", ".publishing"))
    )
    assert leftovers == []
    assert (root / "warehouse" / "wastewatch.published.duckdb").is_file()


def test_every_failpoint_is_named_once_and_reached_by_the_full_crash_run() -> None:
    assert len(POINTS) == len(set(POINTS)) >= 10
    assert set(SHORT) <= set(POINTS)
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "pipelines").rglob("*.py"))
    for point in POINTS:
        assert sources.count(f'failpoint("{point}")') == 1, point
