"""The column-mapped kinds' `columns:` and `states:` (jobs_csv, hosts_csv, metrics_csv) are checked when the config
loads: one line naming the file:line, the key, what was given and what is allowed; nothing is read (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import ConfigError, load_config
from pipelines.sources.mapped_csv import JOB_STATES, JOBS_CSV
from pipelines.sources.options import JobsCsvOptions
from tests.helpers.config import write_config

JOBS_ALLOWED = ", ".join((*JOBS_CSV.names(), "gpus"))


@pytest.mark.parametrize(
    ("source", "line", "message"),
    [
        ("{name: j, kind: jobs_csv, uri: j/, options: {columns: {started: start_ts}}}", 2,
         f"sources[0].options.columns.started: 'started' is not a column of jobs_csv; map one of {JOBS_ALLOWED}"),
        ("{name: j, kind: jobs_csv, uri: j/, options: {states: {exit 0: DONE}}}", 2,
         "sources[0].options.states.exit 0: 'DONE' is not a job state; map the word to one of "
         + ", ".join(JOB_STATES)),
        ("{name: h, kind: hosts_csv, uri: h/, options: {columns: {hostname: node}}}", 2,
         "sources[0].options.columns.hostname: 'hostname' is not a column of hosts_csv; map one of host, "
         "instance_id, resource_id, private_dns, private_ip, instance_type, provider, region_id, launched_at, "
         "terminated_at, tags"),
        ("{name: m, kind: metrics_csv, uri: m/, options: {columns: {timestamp: time}}}", 2,
         "sources[0].options.columns.timestamp: 'timestamp' is not a column of metrics_csv; map one of ts, metric, "
         "value, host, instance_id, gpu_uuid, gpu_index, gpu_model, pod, namespace, container, mig_profile, "
         "mig_instance_id, job_id"),
        ("{name: m, kind: metrics_csv, uri: m/, options: {columns: {ts: ' '}}}", 2,
         "sources[0].options.columns.ts: an empty column name: give the file's own header name, or leave the "
         "column out"),
        ("{name: j, kind: jobs_csv, uri: j/, options: {gpus: many}}", 2,
         "sources[0].options.gpus: expected a whole number of GPUs, found 'many'"),
    ],
)  # fmt: skip
def test_a_bad_mapping_is_one_config_error_naming_line_key_value_and_what_is_allowed(
    tmp_path: Path, source: str, line: int, message: str
) -> None:
    path = write_config(tmp_path, f"sources:\n  - {source}\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == f"{path}:{line}: {message}"


def test_each_bad_entry_of_a_block_mapping_is_named_on_its_own_line(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
        sources:
          - name: jobs
            kind: jobs_csv
            uri: j/
            options:
              columns:
                job_id: id
                ended: end_ts
              states:
                exit 0: COMPLETED
                exit 1: failed
        """,
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    lines = str(err.value).splitlines()
    assert [ln.split(": ", 2)[:2] for ln in lines] == [
        [f"{path}:8", "sources[0].options.columns.ended"],
        [f"{path}:11", "sources[0].options.states.exit 1"],
    ]
    assert "'failed' is not a job state" in lines[1]


def test_good_mappings_load(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
        sources:
          - {name: j, kind: jobs_csv, uri: j/, options: {columns: {gpus: n_gpu, state: rc}, states: {"0": COMPLETED}, gpus: 1}}
          - {name: h, kind: hosts_csv, uri: h/, options: {columns: {host: Node}}}
          - {name: m, kind: metrics_csv, uri: m/, options: {columns: {ts: time, metric: name}}}
        """,
    )
    jobs = load_config(path).sources[0].options_as(JobsCsvOptions)
    assert (jobs.columns, jobs.states, jobs.gpus) == (
        {"gpus": "n_gpu", "state": "rc"},
        {"0": "COMPLETED"},
        "1",
    )


def test_the_cli_exits_2_before_reading_anything(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        "warehouse: w.duckdb\nsources:\n  - {name: j, kind: jobs_csv, uri: j/, options: {states: {ok: FINE}}}\n",
    )
    result = CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(main, ["--config", str(path), "ingest"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {path}:3: sources[0].options.states.ok: 'FINE' is not a job state; map the word to one of "
        + ", ".join(JOB_STATES)
    ]
    assert result.stdout == "" and not (tmp_path / "w.duckdb").exists()
