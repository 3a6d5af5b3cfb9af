"""The nightly check before Dagster (pipelines/transform/nothing_new.py): after a full ingest that recorded its state,
nothing changed means nothing to do; each kind of change (a new, touched, rewritten or removed file, a new
inventory report, the config, the ledger, the retention, the published copy, a source read whole) means a
full run, and says why."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipelines.config import Config, load_config
from pipelines.ingest import ingest
from pipelines.transform import nothing_new
from pipelines.transform.publish import publish
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FOCUS_SAMPLE, copy_into, put_back
from tests.helpers.storage import copy_fixture_report, write_report

SOURCES = """
sources:
  - {name: focus, kind: focus, uri: landing/billing/}
  - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
  - {name: ckpt, kind: s3_inventory, uri: landing/inventory/}
"""
SMI = "timestamp, hostname, index, utilization.gpu [%]\n2026/11/24 12:00:00.000, gpu-{n}, 0, 42 %\n"


def _full_run(config: Config) -> None:
    """What a full nightly run leaves: everything ingested, the state recorded, the warehouse published."""
    con = new_warehouse(config.warehouse_path)
    try:
        report = ingest(con, config)
        assert not report.rejected and not report.failures, report.summary()
        nothing_new.record_state(con, config)
    finally:
        con.close()
    publish(config)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The project after its full run, made once: a pristine copy, and the place every test's project is.

    The config's digest covers its folder, so each test restores the project to the same place (mtimes
    kept) rather than to a folder of its own."""
    base = tmp_path_factory.mktemp("nothing_new")
    root = base / "project"
    copy_into(FOCUS_SAMPLE, root / "landing" / "billing")
    lines = FOCUS_SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    (root / "landing" / "billing" / "extra.csv").write_text(lines[0] + lines[-1], encoding="utf-8")
    for n in (1, 2):
        (root / "landing" / "telemetry").mkdir(parents=True, exist_ok=True)
        (root / "landing" / "telemetry" / f"gpu-{n}.csv").write_text(SMI.format(n=n), encoding="utf-8")
    copy_fixture_report(root / "landing" / "inventory")
    write_config(root, SOURCES)
    _full_run(load_config(root / "wastewatch.yaml"))
    pristine = base / "pristine"
    shutil.copytree(root, pristine, symlinks=True)
    return pristine, root


@pytest.fixture
def project(built: tuple[Path, Path]) -> Config:
    """A project whose full run recorded its state: the module's, restored as its run left it."""
    pristine, root = built
    put_back(pristine, root)
    return load_config(root / "wastewatch.yaml")


def _root(config: Config) -> Path:
    assert config.path is not None
    return config.path.parent


def test_after_a_full_run_with_nothing_changed_there_is_nothing_to_do(project: Config) -> None:
    found = nothing_new.check(project)
    assert found.nothing_new, found.why
    # every listed file counted once, per table: two bill files, two telemetry files, the inventory source
    by_table: dict[str, int] = {}
    for c in found.sources:
        by_table[c.target] = by_table.get(c.target, 0) + c.unchanged
    assert by_table == {"billing_line_items": 2, "gpu_samples": 2, "storage_objects": 1}
    # and a full run again would have loaded nothing (what the check promises)
    con = new_warehouse(project.warehouse_path)
    try:
        report = ingest(con, project)
    finally:
        con.close()
    assert {o.status for o in report.outcomes} == {"unchanged"}


def _touch(config: Config) -> None:
    path = config.warehouse_path.parent.parent / "landing" / "telemetry" / "gpu-1.csv"
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def _rewrite(config: Config) -> None:
    path = config.warehouse_path.parent.parent / "landing" / "telemetry" / "gpu-1.csv"
    path.write_text(SMI.format(n=1).replace("42 %", "100 %"), encoding="utf-8")


def _new_file(config: Config) -> None:
    path = config.warehouse_path.parent.parent / "landing" / "telemetry" / "gpu-3.csv"
    path.write_text(SMI.format(n=3), encoding="utf-8")


def _remove(config: Config) -> None:
    """A billing file gone: its lines are deleted (telemetry and jobs keep the rows of a file gone)."""
    (config.warehouse_path.parent.parent / "landing" / "billing" / "extra.csv").unlink()


def _new_report(config: Config) -> None:
    root = config.warehouse_path.parent.parent / "landing" / "inventory"
    write_report(
        root, "acme-ckpt", "2026-11-29T01-00Z", [{"key": "run-9/step-1.pt", "size": 10}], "ckpt-daily"
    )


def _config(config: Config) -> None:
    assert config.path is not None
    write_config(config.path.parent, SOURCES + "tags:\n  team: [team, squad]\n")


def _ledger(config: Config) -> None:
    """A run that loaded a file and failed before building the marts changed the ledger only."""
    con = new_warehouse(config.warehouse_path)
    try:
        con.execute("update ingest_files set loaded_at = loaded_at + interval 1 second where kind = 'focus'")
    finally:
        con.close()


def _published(config: Config) -> None:
    config.published_path.unlink()


def _forgotten(config: Config) -> None:
    con = new_warehouse(config.warehouse_path)
    try:
        nothing_new.forget_state(con)
    finally:
        con.close()


CHANGES: dict[str, tuple[Callable[[Config], None], str]] = {
    "a touched file": (_touch, r"gpu-1\.csv: changed \(modification time\)"),
    "a rewritten file": (_rewrite, r"gpu-1\.csv: changed \(size\)"),
    "a new file": (_new_file, r"gpu-3\.csv: new"),
    "a removed file": (_remove, r"extra\.csv: gone from the source"),
    "a new inventory report": (_new_report, r"2026-11-29T01-00Z/manifest\.json: a report not loaded yet"),
    "the config": (_config, r"^the config changed"),
    "the ledger": (_ledger, r"^the ledger changed"),
    "the published copy": (_published, r"^no published copy"),
    "a run that did not build every mart": (_forgotten, r"^no full run recorded"),
}


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_each_kind_of_change_means_a_full_run_and_says_why(project: Config, change: str) -> None:
    apply, why = CHANGES[change]
    apply(project)
    found = nothing_new.check(load_config(project.path) if project.path else project)
    assert not found.nothing_new
    assert found.why is not None and re.search(why, found.why), found.why
    # the full run takes the change in, records it, and the next night has nothing to do again
    if change not in ("the ledger", "a run that did not build every mart", "the published copy"):
        config = load_config(project.path) if project.path else project
        _full_run(config)
        assert nothing_new.check(config).nothing_new


def test_a_source_read_whole_on_every_run_always_means_a_full_run(project: Config) -> None:
    root = _root(project)
    shutil.copytree(root / "landing" / "telemetry", root / "landing" / "scan")
    write_config(root, SOURCES + "  - {name: walk, kind: fs_scan, uri: landing/scan/}\n")
    config = load_config(root / "wastewatch.yaml")
    _full_run(config)
    found = nothing_new.check(config)
    assert found.why == "source 'walk' (fs_scan) is read whole on every run"


def test_a_retention_day_due_means_a_full_run(project: Config) -> None:
    root = _root(project)
    write_config(root, SOURCES + "retention: {gpu_samples_days: 8}\n")
    config = load_config(root / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        con.execute("create table if not exists int_incremental_days (object varchar, day date)")
        con.execute("insert into int_incremental_days values ('int_gpu_slices', '2026-11-24')")
        nothing_new.record_state(con, config)
    finally:
        con.close()
    found = nothing_new.check(config)
    assert found.why == "the retention drops 1 day(s) of samples"


def test_a_telemetry_file_gone_keeps_its_rows_so_there_is_still_nothing_to_do(project: Config) -> None:
    (project.warehouse_path.parent.parent / "landing" / "telemetry" / "gpu-2.csv").unlink()
    found = nothing_new.check(project)
    assert found.nothing_new, found.why
    con = new_warehouse(project.warehouse_path)
    try:
        report = ingest(con, project)
        assert con.execute("select count(*) from gpu_samples where host = 'gpu-2'").fetchone() == (1,)
    finally:
        con.close()
    assert {o.status for o in report.outcomes} == {"unchanged"}


def test_the_config_digest_holds_no_credential_so_a_new_one_changes_nothing(tmp_path: Path) -> None:
    """The state lands in the published copy analysts read: a credential in the config is masked before
    hashing (a weak password could be guessed from a digest of a config otherwise known)."""
    base = SOURCES + "notify:\n  webhook_url: https://hooks.slack.com/services/T000/B000/SECRET\n"
    write_config(tmp_path, base.replace("SECRET", "first-secret"))
    before = nothing_new.config_digest(load_config(tmp_path / "wastewatch.yaml"))
    write_config(tmp_path, base.replace("SECRET", "other-secret"))
    assert nothing_new.config_digest(load_config(tmp_path / "wastewatch.yaml")) == before
    # a webhook URL is a secret whole (its path carries the token): a setting beside it still counts
    write_config(tmp_path, base.replace("SECRET", "other-secret") + "  teams: false\n")
    assert nothing_new.config_digest(load_config(tmp_path / "wastewatch.yaml")) != before
