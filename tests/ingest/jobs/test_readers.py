"""Job readers: Slurm sacct -P, kubectl get pods -o json, a generic job CSV (the H200 capture's phases)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pipelines.config import load_config
from pipelines.ingest import IngestReport
from pipelines.ingest.readers.hostlist import HostlistError, expand_hostlist
from pipelines.warehouse import connect
from tests.helpers.config import write_config
from tests.helpers.ingest_run import ingest_project
from tests.helpers.paths import FIXTURES, H200

SACCT = FIXTURES / "jobs" / "sacct_cluster_a.txt"
PODS = FIXTURES / "jobs" / "k8s_pods.json"


def _run(
    tmp_path: Path, sources: str, files: dict[str, str | Path]
) -> tuple[IngestReport, list[dict[str, Any]]]:
    return ingest_project(tmp_path, sources, files, "select * from jobs order by x_source_file, job_id")


def _by_id(jobs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {j["job_id"]: j for j in jobs}


# -- host lists ---------------------------------------------------------------------------------------


def test_hostlist_expansion() -> None:
    assert expand_hostlist("gpu[01-04,07]") == ["gpu01", "gpu02", "gpu03", "gpu04", "gpu07"]
    assert expand_hostlist("gpu-h100-[01-02],login1") == ["gpu-h100-01", "gpu-h100-02", "login1"]
    assert expand_hostlist("rack[1-2]-gpu[08-09]") == [
        "rack1-gpu08",
        "rack1-gpu09",
        "rack2-gpu08",
        "rack2-gpu09",
    ]
    assert expand_hostlist("node[8-11]") == ["node8", "node9", "node10", "node11"]
    assert (
        expand_hostlist("None assigned") == [] and expand_hostlist("") == [] and expand_hostlist(None) == []
    )
    for bad, why in (("gpu[04-01]", "end is lower"), ("gpu[01-", "without ']'"), ("gpu[a-b]", "bad range"),
                     ("gpu[]", "empty brackets"), ("gpu]1[", "without '['")):  # fmt: skip
        with pytest.raises(HostlistError, match=why.replace("[", r"\[").replace("]", r"\]")):
            expand_hostlist(bad)


# -- slurm sacct --------------------------------------------------------------------------------------


def test_sacct_steps_arrays_het_states_tres_and_hosts(tmp_path: Path) -> None:
    report, jobs = _run(
        tmp_path, "  - {name: slurm, kind: slurm_sacct, uri: sacct/}\n", {"sacct/a.txt": SACCT}
    )
    assert [o.status for o in report.outcomes] == ["loaded"]
    by_id = _by_id(jobs)
    # 13 lines: steps folded, het components folded, array tasks kept apart
    assert sorted(by_id) == ["7001", "7002", "7013", "7014", "7020", "7030", "7031"]
    j = by_id["7001"]
    assert j["hosts"] == ["gpu-h100-01", "gpu-h100-02", "gpu-h100-03", "gpu-h100-07"] and j["nodes"] == 4
    assert j["gpus_requested"] == 32 and j["gpu_type"] == "h100"  # typed + untyped counted once
    assert (j["team"], j["project"], j["user"], j["account"]) == ("nlp", "llm-7b", "alice", "nlp")
    assert j["state"] == "COMPLETED" and j["exit_code"] == "0:0" and j["scheduler"] == "slurm"
    assert j["started_at"] == datetime(2026, 11, 30, 9, 0) and j["ended_at"] == datetime(2026, 11, 30, 11, 30)
    assert j["submitted_at"] == datetime(2026, 11, 30, 8, 55, 12)
    assert by_id["7002"]["gpus_requested"] == 1 and by_id["7002"]["gpu_type"] == "a100"  # typed only
    assert by_id["7002"]["state"] == "FAILED" and by_id["7002"]["exit_code"] == "1:0"
    assert by_id["7002"]["project"] == "eval"  # WCKey when the comment names no project
    cancelled = by_id["7013"]
    assert (cancelled["state"], cancelled["state_raw"]) == ("CANCELLED", "CANCELLED by 132794")
    assert cancelled["hosts"] == ["rack1-gpu1", "rack2-gpu1"]
    assert cancelled["tags"]["slurm_job_id"] == "7010_3" and cancelled["tags"]["array_task_id"] == "3"
    assert by_id["7014"]["state"] == "OUT_OF_MEMORY"
    het = by_id["7020"]
    assert het["hosts"] == ["gpu-h100-04", "cpu-01", "cpu-02"] and het["gpus_requested"] == 8
    assert het["state"] == "RUNNING" and het["ended_at"] is None and het["nodes"] == 3
    pending = by_id["7030"]
    assert pending["started_at"] is None and pending["hosts"] == [] and pending["gpus_requested"] == 8
    assert by_id["7031"]["gpus_requested"] == 6 and by_id["7031"]["gpu_type"] == "h100,l4"


def test_sacct_local_time_noheader_and_parsable_trailing_bar(tmp_path: Path) -> None:
    body = "8001|8001|job|u|acct|p|COMPLETED|0:0|2026-07-01T10:00:00|2026-07-01T10:00:00|2026-07-01T12:00:00|1|billing=1,gres/gpu=2|n[1-2]|\n"
    fields = "[JobID, JobIDRaw, JobName, User, Account, Partition, State, ExitCode, Submit, Start, End, AllocNodes, AllocTRES, NodeList]"
    report, jobs = _run(
        tmp_path,
        f"  - {{name: slurm, kind: slurm_sacct, uri: s/, options: {{timezone: America/New_York, fields: {fields}}}}}\n",
        {"s/a.txt": body},
    )
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    (j,) = jobs
    # EDT is UTC-4 in July
    assert j["started_at"] == datetime(2026, 7, 1, 14, 0) and j["ended_at"] == datetime(2026, 7, 1, 16, 0)
    assert j["hosts"] == ["n1", "n2"] and j["gpus_requested"] == 2 and j["team"] == "acct"


def test_sacct_job_name_with_a_bar_and_repeated_headers(tmp_path: Path) -> None:
    header = "JobID|State|Start|End|NodeList|AllocTRES|JobName"
    text = (
        f"{header}\n9001|COMPLETED|2026-11-30T01:00:00|2026-11-30T02:00:00|g1|gres/gpu=1|a|b\n"
        f"{header}\n9002|TIMEOUT|2026-11-30T01:00:00|2026-11-30T03:00:00|g2|gres/gpu=2|plain\n"
    )
    report, jobs = _run(tmp_path, "  - {name: slurm, kind: slurm_sacct, uri: s/}\n", {"s/a.txt": text})
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    assert [(j["job_id"], j["job_name"], j["state"]) for j in jobs] == [
        ("9001", "a|b", "COMPLETED"),
        ("9002", "plain", "TIMEOUT"),
    ]


@pytest.mark.parametrize(
    ("line", "where", "problem"),
    [
        ("7999|7999|x|u|a|p|EXPLODED|0:0|2026-11-30T01:00:00|2026-11-30T01:00:00|2026-11-30T02:00:00|1|1|||g1||",
         "bad.txt:3: column 'State'", "unknown job state 'EXPLODED'"),
        ("7999|7999|x|u|a|p|COMPLETED|0:0|2026-11-30T01:00:00|2026-11-30T01:00:00|2026-11-30T02:00:00|1|1|||gpu[09-02]||",
         "bad.txt:3: column 'NodeList'", "bad host list: bad range '09-02'"),
        ("7999|7999|x|u|a|p|COMPLETED|0:0|2026-11-30T01:00:00|2026-11-30T25:00:00|2026-11-30T02:00:00|1|1|||g1||",
         "bad.txt:3: column 'Start'", "expected an ISO 8601 time"),
        ("7999|7999|x|u|a|p|COMPLETED|0:0|2026-11-30T01:00:00|2026-11-30T01:00:00|2026-11-30T02:00:00|1|1||gres/gpu=eight|g1||",
         "bad.txt:3: column 'AllocTRES'", "GPU count 'eight'"),
        ("7999|7999|x|u|a|p|COMPLETED|0:0",
         "bad.txt:3", "8 fields but the header has 18"),
    ],
)  # fmt: skip
def test_sacct_bad_values_reject_the_file_naming_line_and_column(
    tmp_path: Path, line: str, where: str, problem: str
) -> None:
    lines = SACCT.read_text(encoding="utf-8").splitlines()
    bad = "\n".join([*lines[:2], line, *lines[2:]]) + "\n"
    report, jobs = _run(
        tmp_path, "  - {name: slurm, kind: slurm_sacct, uri: s/}\n", {"s/bad.txt": bad, "s/good.txt": SACCT}
    )
    outcome = {Path(o.uri).name: o for o in report.outcomes}
    assert outcome["good.txt"].status == "loaded" and outcome["good.txt"].rows == 7
    assert outcome["bad.txt"].status == "rejected"
    assert where in (outcome["bad.txt"].error or "") and problem in (outcome["bad.txt"].error or "")
    assert {j["x_source_file"] for j in jobs} == {outcome["good.txt"].uri} and len(jobs) == 7


def test_sacct_last_line_cut_short_is_skipped_and_counted(tmp_path: Path) -> None:
    text = SACCT.read_text(encoding="utf-8") + "7999|7999|cut|u|a|p|COMPLE"  # no newline: the dump was cut
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "a.txt").write_text(text, encoding="utf-8")
    write_config(tmp_path, "sources:\n  - {name: slurm, kind: slurm_sacct, uri: s/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    from pipelines.ingest.files import list_local
    from pipelines.ingest.readers.base import LoadContext
    from pipelines.ingest.readers.slurm_sacct import SlurmSacctReader

    con = connect(config.warehouse_path)
    (f,) = list_local(config, config.sources[0])
    con.execute("begin")
    result = SlurmSacctReader().load(con, f, LoadContext(config.sources[0], config, "fid", None))
    con.execute("rollback")
    assert result.rows == 7
    assert result.warnings == ["line 15: last line cut short (7 of 18 fields); skipped"]
    con.close()
    # through the ledger: loaded, the skip in the run summary and in the ledger's note
    report, jobs = _run(tmp_path, "  - {name: slurm, kind: slurm_sacct, uri: s/}\n", {})
    assert [(o.status, o.rows, o.repairs) for o in report.outcomes] == [("loaded", 7, result.warnings)]
    assert "line 15: last line cut short (7 of 18 fields); skipped" in report.summary() and len(jobs) == 7


# -- kubernetes pods ----------------------------------------------------------------------------------


def test_k8s_pods(tmp_path: Path) -> None:
    report, jobs = _run(
        tmp_path,
        "  - {name: k8s, kind: k8s_pods, uri: pods/, options: {cluster: prod-eks}}\n",
        {"pods/p.json": PODS},
    )
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    by_name = {j["job_name"]: j for j in jobs}
    assert set(by_name) == {
        "llm-finetune-42-x7k2p",
        "dreambooth-0",
        "notebook-erin",
        "batch-infer-1",
    }  # no coredns
    assert report.outcomes[0].repairs == ["1 pod(s) without GPU requests skipped"]
    ft = by_name["llm-finetune-42-x7k2p"]
    assert ft["job_id"] == "7c9e6679-7425-40de-944b-e07fc1f90ae7" and ft["scheduler"] == "kubernetes"
    assert ft["gpus_requested"] == 4 and ft["gpu_type"] == "NVIDIA-H100-80GB-HBM3"
    assert ft["hosts"] == ["ip-10-0-12-34.ec2.internal"] and ft["account"] == "research"
    assert (ft["team"], ft["project"], ft["user"], ft["cluster"]) == ("nlp", "llm-7b", "alice", "prod-eks")
    assert ft["state"] == "COMPLETED" and ft["exit_code"] == "0"
    assert ft["started_at"] == datetime(2026, 11, 30, 9, 0) and ft["ended_at"] == datetime(
        2026, 11, 30, 11, 42, 9
    )
    assert ft["tags"]["controller_kind"] == "Job" and ft["tags"]["job-name"] == "llm-finetune-42"
    oom = by_name["dreambooth-0"]
    assert (oom["state"], oom["exit_code"], oom["gpus_requested"], oom["team"]) == (
        "OUT_OF_MEMORY",
        "137",
        8,
        "vision",
    )
    assert oom["ended_at"] == datetime(2026, 11, 30, 10, 47, 31)
    mig = by_name["notebook-erin"]
    assert (mig["gpus_requested"], mig["gpu_type"], mig["state"], mig["ended_at"]) == (
        2,
        "mig-1g.10gb",
        "RUNNING",
        None,
    )
    evicted = by_name["batch-infer-1"]
    assert (evicted["state"], evicted["state_raw"]) == ("PREEMPTED", "Failed (Evicted)")
    assert evicted["ended_at"] == datetime(2026, 11, 30, 14, 10)


def test_k8s_bad_json_is_rejected_with_its_line(tmp_path: Path) -> None:
    broken = PODS.read_text(encoding="utf-8").replace('"phase": "Running",', '"phase": "Running"', 1)
    report, jobs = _run(
        tmp_path,
        "  - {name: k8s, kind: k8s_pods, uri: pods/}\n",
        {"pods/bad.json": broken, "pods/good.json": PODS},
    )
    outcome = {Path(o.uri).name: o for o in report.outcomes}
    assert outcome["good.json"].status == "loaded" and len(jobs) == 4
    line = (
        next(
            i for i, t in enumerate(broken.splitlines(), 1) if '"phase": "Running"' in t and "," not in t[-1:]
        )
        + 1
    )
    assert outcome["bad.json"].status == "rejected"
    assert f"bad.json:{line}: not JSON: Expecting ',' delimiter" in (outcome["bad.json"].error or "")


# -- generic job CSV ----------------------------------------------------------------------------------

PHASES_OPTIONS = (
    "{columns: {started_at: start_ts, ended_at: end_ts, state: exit_status}, host: h200-node, gpus: 1}"
)


def test_jobs_csv_reads_the_h200_phases(tmp_path: Path) -> None:
    report, jobs = _run(
        tmp_path,
        f"  - {{name: phases, kind: jobs_csv, uri: jobs/, options: {PHASES_OPTIONS}}}\n",
        {"jobs/phases.csv": H200 / "phases.csv"},
    )
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    assert [j["job_id"] for j in jobs] == [f"job-00{i}" for i in range(7)]
    by_id = _by_id(jobs)
    assert by_id["job-005"]["state"] == "FAILED"
    assert by_id["job-005"]["state_raw"] == "failed: simulated NaN loss: aborting job"
    assert {j["state"] for j in jobs if j["job_id"] != "job-005"} == {"COMPLETED"}
    assert by_id["job-001"]["started_at"] == datetime(2026, 11, 30, 1, 43, 16, 673000)
    assert by_id["job-006"]["ended_at"] == datetime(2026, 11, 30, 1, 48, 10, 665000)
    assert by_id["job-003"]["tags"]["phase"] == "overprovisioned_small"
    assert {(tuple(j["hosts"]), j["gpus_requested"], j["scheduler"]) for j in jobs} == {
        (("h200-node",), 1, "csv")
    }


def test_jobs_csv_default_layout_and_state_map(tmp_path: Path) -> None:
    text = (
        "job_id,user,team,state,started_at,ended_at,hosts,gpus,gpu_indices,tags\n"
        'r1,ann,nlp,exit 0,2026-11-30 01:00:00,2026-11-30 02:00:00,"gpu[1-2]",16,"0,1","{""Project"": ""llm""}"\n'
        "r2,bob,,killed,2026-11-30 01:00:00,,g3,,,\n"
    )
    report, jobs = _run(
        tmp_path,
        "  - {name: j, kind: jobs_csv, uri: j/, options: {states: {exit 0: COMPLETED}, timezone: Asia/Tokyo}}\n",
        {"j/a.csv": text},
    )
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    r1, r2 = jobs
    assert (r1["state"], r1["hosts"], r1["gpus_requested"], r1["gpu_indices"]) == (
        "COMPLETED",
        ["gpu1", "gpu2"],
        16,
        [0, 1],
    )
    assert r1["started_at"] == datetime(2026, 11, 29, 16, 0) and (r1["team"], r1["project"]) == ("nlp", "llm")
    assert (r2["state"], r2["ended_at"], r2["hosts"]) == ("CANCELLED", None, ["g3"])


@pytest.mark.parametrize(
    ("row", "where", "problem"),
    [
        ("job-9,x,2026-11-30T01:00:00Z,2026-11-30T02:00:00Z,exploded,,", "bad.csv:9: column 'exit_status'", "unknown job state 'exploded'"),
        ("job-9,x,2026-11-31T01:00:00Z,2026-11-30T02:00:00Z,ok,,", "bad.csv:9: column 'start_ts'", "expected an ISO 8601 time"),
        (",x,2026-11-30T01:00:00Z,2026-11-30T02:00:00Z,ok,,", "bad.csv:9: column 'job_id'", "empty job id"),
    ],
)  # fmt: skip
def test_jobs_csv_bad_values_name_line_and_column(tmp_path: Path, row: str, where: str, problem: str) -> None:
    bad = (H200 / "phases.csv").read_text(encoding="utf-8") + row + "\n"
    report, jobs = _run(
        tmp_path,
        f"  - {{name: phases, kind: jobs_csv, uri: jobs/, options: {PHASES_OPTIONS}}}\n",
        {"jobs/bad.csv": bad, "jobs/good.csv": H200 / "phases.csv"},
    )
    outcome = {Path(o.uri).name: o for o in report.outcomes}
    assert outcome["good.csv"].status == "loaded" and len(jobs) == 7
    assert outcome["bad.csv"].status == "rejected"
    assert where in (outcome["bad.csv"].error or "") and problem in (outcome["bad.csv"].error or "")
