"""The `train_log` reader's checkpoint saves and model configuration, in the trainers' own log shapes
(tests/fixtures/telemetry/train_logs/README.md says where each shape comes from): each save lands as an
`event = 'checkpoint'` row with the seconds it took when the log says, each configuration as `event = 'config'`,
and neither counts tokens nor breaks the steps' intervals."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.ingest_run import ingest_project

LOGS = Path(__file__).parents[2] / "fixtures" / "telemetry" / "train_logs"
QUERY = (
    "select x_line, ts::varchar as ts, event, step, steps, tokens, save_s, checkpoint_path, model, global_batch, "
    "seq_len, parallel from train_steps order by x_line"
)


def _load(tmp_path: Path, name: str, options: str) -> list[dict]:
    report, got = ingest_project(
        tmp_path,
        f"  - {{name: log, kind: train_log, uri: landing/, options: {options}}}\n",
        {f"landing/{name}": LOGS / name},
        QUERY,
    )
    assert not report.rejected, [o.error for o in report.rejected]
    return got


def test_megatron_saves_take_the_slowest_ranks_timer_and_the_arguments_give_the_configuration(
    tmp_path: Path,
) -> None:
    got = _load(tmp_path, "megatron.log", "{params: 7e10, host: dgx-01}")
    [config] = [r for r in got if r["event"] == "config"]
    assert config["global_batch"] == 512 and config["seq_len"] == 4096
    assert config["parallel"] == "tp=8,pp=4,cp=1,dp=2"
    assert config["model"] == "layers=80,hidden=8192"
    assert config["ts"] == "2026-11-30 09:00:40"  # no time of its own: the first timed line's
    saves = [r for r in got if r["event"] == "checkpoint"]
    assert [(r["step"], r["save_s"], r["checkpoint_path"]) for r in saves] == [
        (20, pytest.approx(30.42136), "/checkpoints/gpt-run01"),
        (40, pytest.approx(29.1105), "/checkpoints/gpt-run01"),
    ]
    assert [r["ts"] for r in saves] == ["2026-11-30 09:01:20", "2026-11-30 09:03:11"]  # the line before
    assert all(r["tokens"] is None for r in saves + [config])
    steps = [r for r in got if r["event"] == "step"]
    # the steps still count their tokens from one step line to the next, across the saves between them
    assert [r["steps"] for r in steps] == [None, 10, 10, 10, 10]
    assert [r["tokens"] for r in steps[1:]] == [512 * 4096 * 10] * 4


def test_torchtitan_saves_say_their_seconds(tmp_path: Path) -> None:
    got = _load(tmp_path, "torchtitan.log", "{params: 8e9, gpus: 8, tokens_per_s_per: gpu}")
    saves = [r for r in got if r["event"] == "checkpoint"]
    assert [(r["ts"], r["save_s"]) for r in saves] == [
        ("2026-11-30 09:01:25.545", 5.53),
        ("2026-11-30 09:02:50.681", 5.12),
    ]
    steps = [r for r in got if r["event"] == "step"]
    assert [r["step"] for r in steps] == [10, 20, 30, 40]
    assert steps[1]["tokens"] == pytest.approx(6554 * 8 * 40)  # tps per GPU x GPUs x seconds since


def test_hugging_face_saves_have_a_time_and_step_but_no_duration(tmp_path: Path) -> None:
    # the log's steps come from its JSON history; this file holds only the text lines, so one step is added
    text = (LOGS / "hf_trainer.log").read_text() + "[2026-11-30 09:20:02] step: 1000 | tokens_per_s: 50000\n"
    report, got = ingest_project(
        tmp_path,
        "  - {name: log, kind: train_log, uri: landing/, options: {params: 7e9}}\n",
        {"landing/hf_trainer.log": text},
        QUERY,
    )
    assert not report.rejected, [o.error for o in report.rejected]
    [config] = [r for r in got if r["event"] == "config"]
    assert config["global_batch"] == 64 and config["parallel"] is None
    saves = [r for r in got if r["event"] == "checkpoint"]
    assert [(r["ts"], r["step"], r["save_s"], r["checkpoint_path"]) for r in saves] == [
        ("2026-11-30 09:10:00.512", 500, None, "out/llama-sft/checkpoint-500"),
        ("2026-11-30 09:20:01.007", 1000, None, "out/llama-sft/checkpoint-1000"),
    ]


def test_json_lines_give_saves_and_configuration_by_field(tmp_path: Path) -> None:
    text = (
        '{"ts": "2026-11-30T09:00:00Z", "model": "llama3-8b", "tp": 2, "pp": 1, "dp": 4, "seq_len": 8192}\n'
        '{"ts": "2026-11-30T09:00:10Z", "step": 1, "tokens": 65536}\n'
        '{"ts": "2026-11-30T09:00:20Z", "step": 2, "checkpoint_s": 12.5, "checkpoint_path": "s3://c/step-2"}\n'
        '{"ts": "2026-11-30T09:00:40Z", "step": 3, "tokens": 65536}\n'
    )
    report, got = ingest_project(
        tmp_path,
        "  - {name: log, kind: train_log, uri: landing/, options: {params: 8e9}}\n",
        {"landing/log.jsonl": text},
        QUERY,
    )
    assert not report.rejected, [o.error for o in report.rejected]
    assert [(r["event"], r["model"], r["parallel"], r["seq_len"]) for r in got if r["event"] == "config"] == [
        ("config", "llama3-8b", "tp=2,pp=1,dp=4", 8192)
    ]
    [save] = [r for r in got if r["event"] == "checkpoint"]
    assert (save["step"], save["save_s"], save["checkpoint_path"]) == (2, 12.5, "s3://c/step-2")
    assert [r["steps"] for r in got if r["event"] == "step"] == [None, 2]


def test_a_log_of_saves_alone_is_rejected_as_measuring_no_step(tmp_path: Path) -> None:
    report, got = ingest_project(
        tmp_path,
        "  - {name: log, kind: train_log, uri: landing/, options: {params: 8e9}}\n",
        {"landing/log.jsonl": '{"ts": "2026-11-30T09:00:20Z", "save_s": 12.5}\n'},
        "select count(*) as n from train_steps",
    )
    [outcome] = report.outcomes
    assert outcome.status == "rejected" and "no line carries tokens" in (outcome.error or "")
    assert got == [{"n": 0}]
