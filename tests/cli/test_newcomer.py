"""What a newcomer meets first: which config the CLI reads (and says so), progress on long steps, and the
one Dagster instance that CLI runs and `make dev` share, freed of runs a killed process left behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner, Result

from pipelines.cli import main
from pipelines.defs.ingest.assets import INGEST_TABLES
from pipelines.instance import HISTORY_ENV, HOST_TAG, PID_TAG, dagster_home
from pipelines.lock import pid_alive
from tests.helpers.asset_graph import snapshot_job
from tests.helpers.config import write_config
from tests.helpers.paths import FOCUS_SAMPLE, REPO, copy_into

UNFED_BY_FOCUS_ONLY = {t for t in INGEST_TABLES if t != "billing_line_items"}

FOCUS_ONLY = """
sources:
  - {name: focus, kind: focus, uri: landing/billing/}
"""


def cli(*args: str, env: dict[str, str | None] | None = None) -> Result:
    runner = CliRunner(env={"WASTEWATCH_CONFIG": None, "DAGSTER_HOME": None, **(env or {})})
    return runner.invoke(main, list(args), catch_exceptions=False)


def _config_with(folder: Path, max_util_pct: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return write_config(folder, f"rules:\n  GPU001: {{max_util_pct: {max_util_pct}}}\n")


def test_config_is_found_by_option_then_environment_then_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    option, env, local = (_config_with(tmp_path / d, n) for d, n in (("opt", 3), ("env", 4), ("cwd", 6)))
    monkeypatch.chdir(local.parent)

    chosen = cli("--config", str(option), "rules", "show", "GPU001", env={"WASTEWATCH_CONFIG": str(env)})
    assert chosen.exit_code == 0, chosen.output
    assert "max_util_pct: 5.0 -> 3.0" in chosen.stdout
    assert chosen.stderr.splitlines() == [f"config: {option} (from --config)"]

    chosen = cli("rules", "show", "GPU001", env={"WASTEWATCH_CONFIG": str(env)})
    assert "max_util_pct: 5.0 -> 4.0" in chosen.stdout
    assert chosen.stderr.splitlines() == [f"config: {env} (from WASTEWATCH_CONFIG)"]

    chosen = cli("rules", "show", "GPU001", env={"WASTEWATCH_CONFIG": ""})  # set but empty: not a choice
    assert "max_util_pct: 5.0 -> 6.0" in chosen.stdout
    assert chosen.stderr.splitlines() == ["config: wastewatch.yaml (from ./wastewatch.yaml)"]

    quiet = cli("--quiet", "rules", "show", "GPU001")
    assert "max_util_pct: 5.0 -> 6.0" in quiet.stdout and quiet.stderr == ""


def test_no_config_anywhere_names_the_three_places_and_the_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("ingest")
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("error: wastewatch.yaml: configuration file not found")
    for place in ("--config", "WASTEWATCH_CONFIG", f"wastewatch.yaml in {tmp_path}"):
        assert place in line, line
    assert "make demo" in line and "wastewatch --config demo/wastewatch.yaml" in line
    assert "wastewatch init" in line
    assert list(tmp_path.iterdir()) == []

    missing = tmp_path / "elsewhere.yaml"
    named = cli("ingest", env={"WASTEWATCH_CONFIG": str(missing)})
    assert named.exit_code == 2
    assert f"error: {missing}: configuration file not found (from WASTEWATCH_CONFIG" in named.stderr


def _focus_project(tmp_path: Path) -> Path:
    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "billing")
    return write_config(tmp_path, FOCUS_ONLY)


@dataclass
class Ingested:
    """A FOCUS-sample project after one plain `wastewatch ingest` in this process, and that ingest's result."""

    config: Path
    plain: Result


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Ingested:
    """One plain CLI ingest shared by the module's tests; a test that writes works on a copy (`_copy`)."""
    config = _focus_project(tmp_path_factory.mktemp("ingested"))
    # as a newcomer runs it: the run recorded in the instance the UI opens
    return Ingested(config, cli("--config", str(config), "ingest", env={HISTORY_ENV: "sqlite"}))


def _copy(ingested: Ingested, tmp_path: Path) -> Path:
    """This test's own copy of the ingested project (warehouse and Dagster instance); its config."""
    shutil.copytree(ingested.config.parent, tmp_path / "project")
    return tmp_path / "project" / ingested.config.name


def test_progress_lines_only_when_asked_or_on_a_terminal(ingested: Ingested, tmp_path: Path) -> None:
    plain = ingested.plain  # stderr is not a terminal here: no progress
    assert plain.exit_code == 0, plain.output
    assert not [line for line in plain.stderr.splitlines() if line.startswith("  ")], plain.stderr

    config = _copy(ingested, tmp_path)
    project = config.parent
    (project / "warehouse").rename(project / "old")  # load again from scratch
    shown = cli("--progress", "--config", str(config), "ingest")
    assert shown.exit_code == 0, shown.output
    lines = shown.stderr.splitlines()
    [source] = [line for line in lines if line.startswith("  focus (focus): ")]
    rows = plain.stdout.split("file(s) loaded (")[1].split(" rows")[0]
    assert f"1 file(s) loaded, {rows} rows in " in source and source.endswith(" s")
    assert any(line.startswith("  mart cost_hourly: ") for line in lines), lines
    assert shown.stdout == plain.stdout  # progress never reaches stdout

    # --quiet wins over --progress: an ingest of every step (`--full`) over what is loaded, which without
    # --quiet prints a progress line for the source and for each mart, here prints none
    quiet = cli("--quiet", "--progress", "--config", str(config), "ingest", "--full")
    assert quiet.exit_code == 0
    assert not [line for line in quiet.stderr.splitlines() if line.startswith(("  ", "config:"))]


def test_weekly_progress_names_each_rule_as_it_finishes(tmp_path: Path) -> None:
    config = _focus_project(tmp_path)
    result = cli("--progress", "--config", str(config), "run", "--week", "2024-W38")
    assert result.exit_code == 0, result.output
    from rules import ALL_RULES

    lines = result.stderr.splitlines()
    rule_lines = [line for line in lines if " 2024-W38: " in line and line.split()[0] != "report"]
    assert sorted(line.split()[0] for line in rule_lines) == sorted(r.id for r in ALL_RULES)
    assert all(line.endswith(" s") and "finding(s)" in line for line in rule_lines)
    [report] = [line for line in lines if line.startswith("  report 2024-W38: ")]
    assert "warehouse published" in report


def test_a_cli_run_is_in_the_instance_the_ui_opens(
    ingested: Ingested, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, result = ingested.config, ingested.plain
    assert result.exit_code == 0, result.output
    loaded = int(result.stdout.split("file(s) loaded (")[1].split(" rows")[0].replace(",", ""))

    home = config.parent / ".dagster"
    assert dagster_home(config) == home and (home / "dagster.yaml").is_file()
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # what `make dev` gives the UI for this config
    with dg.DagsterInstance.get() as instance:
        [run] = instance.get_runs()
        assert run.status == dg.DagsterRunStatus.SUCCESS
        assert run.job_name == "nightly_ingest"  # the job the schedule runs, not `__ephemeral_asset_job__`
        assert run.tags[PID_TAG] == str(os.getpid())
        event = instance.get_latest_materialization_event(dg.AssetKey("billing_line_items"))
        assert event is not None and event.run_id == run.run_id
        assert event.asset_materialization is not None
        assert event.asset_materialization.metadata["rows_loaded"].value == loaded
        check = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [dg.AssetCheckKey(dg.AssetKey("billing_line_items"), "billing_reconciled")]
        )
        [execution] = check.values()
        assert execution.run_id == run.run_id and execution.status.value == "SUCCEEDED"


def test_cli_runs_are_listed_under_the_jobs_they_ran_with_each_asset_materialised(
    ingested: Ingested, tmp_path: Path
) -> None:
    """`ingest` is a run of `nightly_ingest`; `evaluate` and `report` are runs of `weekly_report` for the
    week's partition, each over the part of the job it asked for; every asset (each landed table, mart,
    rule) is materialised on its own by the run that built it, though one step builds several."""
    config = _copy(ingested, tmp_path)
    env: dict[str, str | None] = {HISTORY_ENV: "sqlite"}
    for command in ("evaluate", "report"):
        result = cli("--config", str(config), command, "--week", "2024-W38", env=env)
        assert result.exit_code == 0, result.output
    with dg.DagsterInstance.from_config(str(dagster_home(config))) as instance:
        ingest, evaluate, report = reversed(instance.get_runs())  # newest first
        assert [r.job_name for r in (ingest, evaluate, report)] == [
            "nightly_ingest",
            "weekly_report",
            "weekly_report",
        ]
        assert {r.status for r in (ingest, evaluate, report)} == {dg.DagsterRunStatus.SUCCESS}
        assert evaluate.tags["dagster/partition"] == report.tags["dagster/partition"] == "2024-09-16"
        # the whole job but the landed tables no source writes (the project has a FOCUS source only)
        nightly = [k for k in snapshot_job("nightly_ingest") if k not in UNFED_BY_FOCUS_ONLY]
        assert sorted(k.to_user_string() for k in ingest.asset_selection or ()) == nightly
        weekly = snapshot_job("weekly_report")
        assert sorted(k.to_user_string() for k in evaluate.asset_selection or ()) == [
            k for k in weekly if k != "reports/weekly_report"
        ]
        assert [k.to_user_string() for k in report.asset_selection or ()] == ["reports/weekly_report"]
        by_run = {
            key: instance.get_latest_materialization_event(dg.AssetKey.from_user_string(key))
            for key in [*snapshot_job("nightly_ingest"), *weekly]
        }  # the tables left out were never materialised
        ran = {ingest.run_id: "ingest", evaluate.run_id: "evaluate", report.run_id: "report"}
        assert {k: ran[e.run_id] for k, e in by_run.items() if e is not None} == {
            **{k: "ingest" for k in nightly},
            **{k: "evaluate" for k in weekly if k != "reports/weekly_report"},
            "reports/weekly_report": "report",
        }


def test_with_run_history_off_a_run_records_nothing_and_a_bad_value_exits_2(
    ingested: Ingested, tmp_path: Path
) -> None:
    fresh = _focus_project(tmp_path / "fresh")
    bad = cli("--config", str(fresh), "ingest", env={HISTORY_ENV: "postgres"})
    assert bad.exit_code == 2
    assert "WASTEWATCH_RUN_HISTORY='postgres' is not one of sqlite, off" in bad.stderr
    assert not (fresh.parent / "warehouse").exists()  # refused before anything was created
    # a run with history off (every step, `--full`): on a copy of the ingested project without its instance
    config = _copy(ingested, tmp_path)
    shutil.rmtree(config.parent / ".dagster")
    off = cli("--config", str(config), "ingest", "--full", env={HISTORY_ENV: "off"})
    assert off.exit_code == 0, off.output
    assert "file(s) loaded (" in off.stdout
    assert not dagster_home(config).exists()  # no instance folder, no SQLite run storage


def _wastewatch() -> list[str]:
    script = Path(sys.executable).with_name("wastewatch")
    return [str(script)] if script.exists() else [sys.executable, "-m", "pipelines.cli"]


def test_a_killed_run_leaves_no_run_or_pool_slot_claimed(tmp_path: Path) -> None:
    config = _focus_project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("WASTEWATCH_CONFIG", "DAGSTER_HOME")}
    env[HISTORY_ENV] = "sqlite"
    killed = subprocess.run(
        [*_wastewatch(), "--config", str(config), "ingest"],
        env={**env, "WASTEWATCH_FAILPOINT": "ingest.listed"},  # SIGKILL inside the ingest step
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    home = dagster_home(config)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        [run] = instance.get_runs()
        assert run.status == dg.DagsterRunStatus.STARTED  # what the kill left behind
        assert run.tags[HOST_TAG] and not pid_alive(int(run.tags[PID_TAG]))
        info = instance.event_log_storage.get_concurrency_info("warehouse")
        assert info.claimed_slots and {s.run_id for s in info.claimed_slots} == {run.run_id}

    # the next ingest (in this process: the killed one was the real process) finds the run's pid gone
    again = cli("--config", str(config), "ingest", env={HISTORY_ENV: "sqlite"})
    assert again.exit_code == 0, again.output

    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = {r.run_id: r for r in instance.get_runs()}
        assert runs.pop(run.run_id).status == dg.DagsterRunStatus.FAILURE
        [after] = runs.values()
        assert after.status == dg.DagsterRunStatus.SUCCESS
        info = instance.event_log_storage.get_concurrency_info("warehouse")
        assert info.claimed_slots == [] and info.pending_steps == []
        failure = instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.RUN_FAILURE).records
        assert "is gone" in (failure[0].event_log_entry.dagster_event.message or "")


def test_run_help_and_the_readme_cron_agree() -> None:
    text = " ".join(cli("run", "--help").stdout.split())
    assert "What the weekly cron entry runs" in text and "the nightly entry runs `ingest` alone" in text
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    cron = readme.split("```cron\n")[1].split("```")[0]
    entries = [line.split() for line in cron.splitlines() if line and not line.startswith("#")]
    assert [(e[:5], e[-1]) for e in entries] == [
        (["0", "2", "*", "*", "*"], "ingest"),
        (["0", "6", "*", "*", "1"], "run"),
        (["0", "5", "*", "*", "*"], "alert"),
    ]
    assert "duckdb -readonly" not in readme  # a shell the install does not provide


def test_the_starter_config_the_readme_and_the_focus_reader_agree_on_versions() -> None:
    from pipelines.config import STARTER_CONFIG
    from pipelines.demo.writers import config_text
    from pipelines.ingest.billing.focus import ALIASES, focus_version

    # the reader dates a file 1.0, 1.1 or 1.2 by its columns, and reads 1.3's renamed columns
    assert {focus_version(set()), focus_version({"SkuMeter"}), focus_version({"InvoiceId"})} == {
        "1.0",
        "1.1",
        "1.2",
    }
    assert "ServiceProviderName" in ALIASES["ProviderName"]
    assert "FOCUS 1.0, 1.1, 1.2 (and 1.3's renamed columns)" in STARTER_CONFIG
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "FOCUS 1.0, 1.1 and 1.2, and 1.3's renamed columns" in readme and "1.0–1.3" not in readme
    assert "once their readers exist" not in config_text()
