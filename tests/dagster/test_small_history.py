"""The run history a CLI run leaves with Dagster's SQLite storages made lighter (pipelines/instance.py,
`_lighter_storages`): the patch applies to the Dagster installed, falls back to Dagster as it is when its
storages change, and the history the UI reads stays complete (runs, events, materialisations, check
results, runs of dead processes released)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy
from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory

from pipelines import instance as inst
from tests.helpers.paths import REPO


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "wastewatch.yaml"
    path.write_text("sources: []\n", encoding="utf-8")
    return path


@dg.asset(pool="warehouse")
def counted() -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"rows": 3})


@dg.asset_check(asset=counted)
def counted_has_rows() -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=True)


@dg.asset(deps=[counted])
def downstream() -> None:
    """Reads `counted`: its materialisation records `counted`'s data version (provenance)."""


def _run(config: Path) -> str:
    with inst.open_instance(config, history="sqlite") as instance:
        first = dg.materialize([counted, downstream], instance=instance, tags=inst.run_tags())
        assert first.success
        checked = dg.materialize([counted, counted_has_rows], instance=instance, tags=inst.run_tags())
        assert checked.success
        return checked.run_id


def test_the_patch_applies_to_the_dagster_installed(config: Path) -> None:
    """If this fails, Dagster changed its SQLite storages: the patch has fallen back to Dagster as it is
    (runs still work and are recorded); see `_lighter_storages` and bench/README.md."""
    inst.open_instance(config, history="sqlite").dispose()
    probes = {f"{path.rsplit('.', 1)[1]}.{name}" for path, names in inst._PROBES.items() for name in names}
    assert set(inst._LIGHTER) == {*inst._STORAGE_MODULES, "alembic", *probes}
    for name in inst._STORAGE_MODULES:
        assert importlib.import_module(name).create_engine is inst._kept_engine


def test_run_history_is_complete_with_one_engine_per_file(config: Path) -> None:
    last = _run(config)
    home = inst.dagster_home(config)
    with dg.DagsterInstance.from_config(str(home)) as ui:  # what `make dev` opens, unpatched or not
        runs = ui.get_runs()
        assert len(runs) == 2 and {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}
        assert all(r.tags[inst.PID_TAG] for r in runs)
        kinds = {e.dagster_event_type for e in ui.all_logs(last) if e.dagster_event_type}
        assert {
            dg.DagsterEventType.RUN_START,
            dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
            dg.DagsterEventType.ASSET_MATERIALIZATION,
            dg.DagsterEventType.ASSET_CHECK_EVALUATION,
            dg.DagsterEventType.RUN_SUCCESS,
        } <= kinds
        event = ui.get_latest_materialization_event(counted.key)
        assert event is not None and event.run_id == last
        assert event.asset_materialization is not None
        assert event.asset_materialization.metadata["rows"].value == 3
        down = ui.get_latest_materialization_event(downstream.key)
        assert down is not None and down.asset_materialization is not None
        assert "dagster/input_data_version/counted" in down.asset_materialization.tags  # provenance kept
        [execution] = ui.event_log_storage.get_latest_asset_check_execution_by_key(
            [dg.AssetCheckKey(counted.key, "counted_has_rows")]
        ).values()
        assert execution.run_id == last and execution.status.value == "SUCCEEDED"
        assert ui.event_log_storage.get_concurrency_info("warehouse").claimed_slots == []
    # the storages of this home took one engine per SQLite file, whatever the number of connections, and
    # kept its connections open for the next use (closed when the process ends)
    files = {str(p) for p in home.rglob("*.db")}
    kept = {k[0].removeprefix("sqlite:///"): e for k, e in inst._ENGINES.items() if str(home) in k[0]}
    assert set(kept) == files and len(files) >= 5  # runs, schedules, the event index, one per run
    assert all(engine.pool.checkedin() >= 1 for engine in kept.values())


KILLED = """
import os, signal, sys
from pathlib import Path
import dagster as dg
from pipelines.instance import open_instance, run_tags

@dg.asset(pool="warehouse")
def killed() -> None:
    os.kill(os.getpid(), signal.SIGKILL)

with open_instance(Path(sys.argv[1]), history="sqlite") as instance:
    dg.materialize([killed], instance=instance, tags=run_tags())
"""


def test_a_killed_run_is_released_by_the_next_instance(config: Path) -> None:
    killed = subprocess.run(
        [sys.executable, "-c", KILLED, str(config)], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert killed.returncode < 0, killed.stderr
    with inst.open_instance(config, history="sqlite") as instance:  # releases the dead process's run
        [run] = instance.get_runs()
        assert run.status == dg.DagsterRunStatus.FAILURE
        info = instance.event_log_storage.get_concurrency_info("warehouse")
        assert info.claimed_slots == [] and info.pending_steps == []
        assert inst.release_dead_runs(instance) == []


def test_a_storage_module_not_as_expected_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module(inst._STORAGE_MODULES[0])

    def stand_in(*args: object, **kwargs: object) -> object:
        return sqlalchemy.create_engine(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "create_engine", stand_in)
    assert module.__name__ not in inst._lighter_storages()
    assert module.create_engine is stand_in


def test_a_schema_probe_remembers_only_what_it_found(config: Path) -> None:
    with inst.open_instance(config, history="sqlite") as instance:
        storage = instance.event_log_storage
        assert storage.has_table("asset_event_tags") and not storage.has_table("no_such_table")
        found = storage._wastewatch_found  # type: ignore[attr-defined]
        assert ("has_table", "asset_event_tags") in found and ("has_table", "no_such_table") not in found


def test_only_dagsters_alembic_scripts_are_read_once(config: Path) -> None:
    inst.open_instance(config, history="sqlite").dispose()
    dagster_scripts = AlembicConfig()
    dagster_scripts.set_main_option("script_location", inst._DAGSTER_SCRIPTS)
    assert ScriptDirectory.from_config(dagster_scripts) is ScriptDirectory.from_config(dagster_scripts)
    other = AlembicConfig()
    other.set_main_option("script_location", str(REPO / "no-such-scripts"))
    with pytest.raises(Exception, match="no-such-scripts"):
        ScriptDirectory.from_config(other)  # read (and refused) as Alembic does, not from the memo
