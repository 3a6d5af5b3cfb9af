"""The column-mapped kinds' `columns:` and `states:` (jobs_csv, hosts_csv, metrics_csv), metrics_csv's `metrics:`
and `metric:`, and every kind's `timezone:` are checked when the config loads: one line naming the file:line, the
key, what was given and what is allowed; nothing is read (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import ConfigError, load_config
from pipelines.ingest.readers.metrics_csv import metric_map
from pipelines.sources.mapped_csv import JOB_STATES, JOBS_CSV, SAMPLE_COLUMNS
from pipelines.sources.options import JobsCsvOptions, MetricsCsvOptions
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
        ("{name: j, kind: jobs_csv, uri: j/, options: {timezone: Europe/Berln}}", 2,
         "sources[0].options.timezone: unknown timezone 'Europe/Berln': give an IANA zone name such as UTC or "
         "Europe/Berlin"),
        ("{name: s, kind: slurm_sacct, uri: s/, options: {timezone: '../etc'}}", 2,
         "sources[0].options.timezone: unknown timezone '../etc': give an IANA zone name such as UTC or "
         "Europe/Berlin"),
        ("{name: g, kind: gcp, uri: g/, options: {invoice_timezone: PST8}}", 2,
         "sources[0].options.invoice_timezone: unknown timezone 'PST8': give an IANA zone name such as UTC or "
         "Europe/Berlin"),
        ("{name: m, kind: metrics_csv, uri: m/, options: {metrics: {gpu_busy: busy_pct}}}", 2,
         "sources[0].options.metrics.gpu_busy.column: got 'busy_pct', expected one of "
         + ", ".join(repr(c) for c in SAMPLE_COLUMNS[:-1]) + f" or {SAMPLE_COLUMNS[-1]!r}"),
        ("{name: m, kind: metrics_csv, uri: m/, options: {metrics: {fb: {column: mem_used_mib, scale: lots}}}}", 2,
         "sources[0].options.metrics.fb.scale: Input should be a valid number, unable to parse string as a number"),
        ("{name: m, kind: metrics_csv, uri: m/, options: {metric: util_pct, columns: {metric: name}}}", 2,
         "sources[0].options: give either metric (one metric per file) or columns.metric (a metric column), "
         "not both"),
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
          - {name: m, kind: metrics_csv, uri: m/, options: {columns: {ts: time, metric: name}, timezone: Asia/Tokyo, metrics: {gpu_busy: util_pct, fb: {column: mem_used_mib, scale: 0.5}}}}
        """,
    )
    config = load_config(path)
    metrics = config.sources[2].options_as(MetricsCsvOptions)
    assert metrics.timezone == "Asia/Tokyo"
    assert metric_map(metrics.metrics)[-2:] == [
        {"metric": "gpu_busy", "column_name": "util_pct", "scale": 1.0},
        {"metric": "fb", "column_name": "mem_used_mib", "scale": 0.5},
    ]
    jobs = config.sources[0].options_as(JobsCsvOptions)
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
