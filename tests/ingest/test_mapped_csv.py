"""The one mapped-CSV reader (pipelines/ingest/readers/mapped_csv.py) at reader level: a file -> its rows, or the
rejection naming file, line, column and value. The kinds' own layouts are proved by tests/ingest/jobs,
tests/ingest/resources and tests/ingest/telemetry through whole ingests; these prove what the kinds share."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import Config, load_config
from pipelines.errors import RejectedFile
from pipelines.ingest.files import list_local
from pipelines.ingest.readers import get_reader
from pipelines.ingest.readers.base import LoadContext
from pipelines.ingest.readers.mapped_csv import record_lines
from pipelines.sources.mapped_csv import HOSTS_CSV, JOBS_CSV, METRICS_CSV
from pipelines.sources.registry import KINDS
from pipelines.warehouse import connect, rows
from tests.helpers.config import write_config


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    c = connect(tmp_path_factory.mktemp("wh") / "w.duckdb")
    yield c
    c.close()


def _load(
    con: duckdb.DuckDBPyConnection,
    tmp_path: Path,
    kind: str,
    text: str,
    options: str = "{}",
    name: str = "a.csv",
) -> tuple[int, list[dict[str, Any]]]:
    """Load one file of a `kind` source through its reader, inside a transaction rolled back after; the rows
    loaded and what the kind's table holds then."""
    path = tmp_path / "in" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    write_config(tmp_path, f"sources:\n  - {{name: s, kind: {kind}, uri: in/, options: {options}}}\n")
    config: Config = load_config(tmp_path / "wastewatch.yaml")
    (f,) = list_local(config, config.sources[0])
    table = {"jobs_csv": "jobs", "hosts_csv": "inventory_hosts", "metrics_csv": "gpu_samples"}[kind]
    con.execute("begin")
    try:
        result = get_reader(kind).load(con, f, LoadContext(config.sources[0], config, "fid", None))
        return result.rows, rows(con, f"select * from {table}")  # noqa: S608 - a table name of this test
    finally:
        con.execute("rollback")


def _rejected(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, kind: str, text: str, options: str = "{}"
) -> str:
    with pytest.raises(RejectedFile) as err:
        _load(con, tmp_path, kind, text, options)
    return str(err.value).split("/in/", 1)[1]


# -- the line a record starts on ------------------------------------------------------------------------


def test_record_lines_skip_blank_lines_and_follow_quoted_line_breaks(tmp_path: Path) -> None:
    from pipelines.ingest.files import SourceFile

    text = '\nh1,h2\n\na,1\n"two\n\nlines",2\r\n\r\n"say ""hi""",3\nlast,4\n'
    path = tmp_path / "f.csv.gz"
    path.write_bytes(gzip.compress(text.encode()))
    f = SourceFile(str(path), path, "f.csv.gz", path.stat().st_size, datetime(2026, 1, 1))
    assert record_lines(f, 99) == [2, 4, 5, 9, 10]  # the header, then each data record
    assert record_lines(f, 0) == [2, 4]  # stops once the wanted record is found


# -- per-line errors name the line the value is on, blank lines and quoted line breaks included ---------------


@pytest.mark.parametrize(
    ("kind", "text", "where"),
    [
        ("jobs_csv", "job_id,started_at\n\nj1,2026-11-30T01:00:00\n\n\nj2,yesterday\n", "a.csv:6: column 'started_at'"),
        ("metrics_csv", 'ts,host,metric,value,note\n1796002920,h,util_pct,1,"a\n\nb"\n\n1796002920,h,util_pct,x,\n',
         "a.csv:6: column 'value'"),
        ("hosts_csv", "host,launched_at\n\nn1,\n\n,2026-11-01\n", "a.csv:5: column 'host'"),
        ("metrics_csv", "ts,host,metric,value\n\n2026-11-30T01:00:00Z,h,util_pct,1\n\n2026-11-30T01:01:00Z,h,util_pct,high\n",
         "a.csv:5: column 'value'"),
    ],
)  # fmt: skip
def test_a_bad_value_after_blank_lines_names_its_own_line(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, kind: str, text: str, where: str
) -> None:
    assert _rejected(con, tmp_path, kind, text).startswith(where)


def test_the_message_names_value_and_remedy(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    text = "id,status\nj1,ok\nj2,exploded\n"
    assert _rejected(con, tmp_path, "jobs_csv", text, "{columns: {job_id: id}}") == (
        "a.csv:3: column 'status': unknown job state 'exploded'; map it with options.states (to one of "
        "COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, PREEMPTED, RUNNING, PENDING, REQUEUED, "
        "BOOT_FAIL, DEADLINE)"
    )
    assert _rejected(con, tmp_path, "hosts_csv", "host,tags\nn1,{oops\n") == (
        "a.csv:2: column 'tags': tags is not a JSON object: Expecting property name enclosed in double quotes"
    )


def test_a_header_problem_names_the_header_line(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    text = "\n\nid,start\nj1,2026-11-30T01:00:00\n"
    assert _rejected(con, tmp_path, "jobs_csv", text, "{columns: {job_id: ident}}") == (
        "a.csv:3: column 'ident' (options.columns.job_id) is not in the header ['id', 'start']"
    )
    assert _rejected(con, tmp_path, "hosts_csv", text) == (
        "a.csv:3: no host column in the header ['id', 'start'] (see options.columns)"
    )


# -- header matching, typing, defaults ----------------------------------------------------------------------


def test_jobs_rows_are_typed_and_empty_values_take_the_options(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    text = (
        "JobID,Status,Nodes,GPUs,gpu_indices,instance_id,phase\n"
        'a,done,"gpu[1-2]",0,"0;1",i-1 i-2,warmup\n'
        "b,FAILED: oom,,,,,\n"
    )
    options = "{columns: {job_id: jobid, hosts: nodes}, host: h0, gpus: 4, cluster: c1, instance_id: i-9, timezone: UTC}"
    n, jobs = _load(con, tmp_path, "jobs_csv", text, options, name="a.csv.gz")
    assert n == 2
    by_id = {j["job_id"]: j for j in sorted(jobs, key=lambda j: j["job_id"])}
    a, b = by_id["a"], by_id["b"]
    assert (a["state"], a["hosts"], a["nodes"], a["gpus_requested"], a["gpu_indices"], a["instance_ids"]) == (
        "COMPLETED", ["gpu1", "gpu2"], 2, 0, [0, 1], ["i-1", "i-2"],
    )  # fmt: skip  # a column `nodes` mapped to hosts is not also read as the node count; 0 GPUs stays 0
    assert (b["state"], b["state_raw"], b["hosts"], b["gpus_requested"], b["instance_ids"], b["cluster"]) == (
        "FAILED", "FAILED: oom", ["h0"], 4, ["i-9"], "c1",
    )  # fmt: skip
    assert a["tags"] == {"phase": "warmup"} and b["tags"] is None


def test_hosts_rows_and_metrics_labels(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    n, hosts = _load(con, tmp_path, "hosts_csv", "name,instance,rack\nn1,i-1,r7\n", "{provider: AWS}")
    assert n == 1
    assert [(h["host"], h["instance_id"], h["resource_id"], h["provider"], h["tags"]) for h in hosts] == [
        ("n1", "i-1", "i-1", "AWS", {"rack": "r7"})
    ]
    text = "time,node,name,value,Cluster\n2026-11-30T01:00:00Z,h1,util_pct,50,eu\n"
    n, samples = _load(con, tmp_path, "metrics_csv", text, "{columns: {host: node}}")
    assert n == 1
    assert [(s["ts"], s["host"], s["util_pct"], s["labels"]) for s in samples] == [
        (datetime(2026, 11, 30, 1), "h1", 50.0, {"cluster": "eu"})
    ]


def test_each_layout_is_named_by_its_registry_line() -> None:
    """Declared once: each mapped kind's registry line names its layout, whose kind is the line's."""
    mapped = {k.name: k.layout for k in KINDS if k.layout is not None}
    assert mapped == {"metrics_csv": METRICS_CSV, "jobs_csv": JOBS_CSV, "hosts_csv": HOSTS_CSV}
    assert all(layout.kind == name for name, layout in mapped.items())
