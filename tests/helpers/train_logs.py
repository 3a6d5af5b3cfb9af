"""Training logs in the shapes the frameworks write them, for one run whose throughput is known exactly.

Every shape describes the same run: `PARAMS` parameters, `GPUS` GPUs, `SEQ` tokens per sample, `BATCH`
samples per step, one log line every `EVERY` steps and `SECONDS` wall-clock seconds, starting at `START`.
So 6 x PARAMS x tokens/s / (GPUS x 989.4e12) is `EXPECTED_MFU` whichever way the log counts its tokens. The
field names are the frameworks' own (docs/telemetry.md, "Training logs", cites where each comes from);
`SHAPES` maps a shape to (file name, text, the source's `options:` as YAML flow).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

PARAMS = 7_000_000_000
GPUS = 8
SEQ = 4096
BATCH = 64  # samples (sequences) per step, the global batch
EVERY = 10  # steps per log line
SECONDS = 40.0  # wall-clock seconds per log line (4 s a step)
LINES = 12
START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
H100_PEAK = 989.4e12
TOKENS_PER_S = BATCH * SEQ * EVERY / SECONDS
EXPECTED_MFU = 6 * PARAMS * TOKENS_PER_S / (GPUS * H100_PEAK)


def _times() -> list[datetime]:
    return [START + timedelta(seconds=SECONDS * i) for i in range(LINES)]


def megatron() -> str:
    """Megatron-LM's training_log line: `[time] iteration N/ M | consumed samples: ... | elapsed time per
    iteration (ms): ... | global batch size: ... | lm loss: ...` every log_interval iterations."""
    out = []
    for i, t in enumerate(_times()):
        it = EVERY * (i + 1)
        out.append(
            f" [{t:%Y-%m-%d %H:%M:%S}] iteration {it:8d}/  500000 | consumed samples: {it * BATCH:12d} | "
            f"elapsed time per iteration (ms): {SECONDS / EVERY * 1000:.1f} | throughput per GPU (TFLOP/s/GPU): "
            f"{EXPECTED_MFU * 989.4:.1f} | learning rate: 3.000000E-04 | global batch size: {BATCH:5d} | "
            "lm loss: 2.345600E+00 | loss scale: 1.0 | grad norm: 0.512 | number of skipped iterations:   0 | "
            "number of nan iterations:   0 |"
        )
    return "\n".join(["> building GPT model ...", *out]) + "\n"


def nemo() -> str:
    """NeMo's DLLogger JSON lines (`DLLL {...}`): timestamp, step, data.{global_step, consumed_samples,
    reduced_train_loss, 'train_step_timing in s'}; the first record is the run's parameters."""
    out = ['DLLL {"timestamp": "1764489600.0", "datetime": "x", "elapsedtime": "0", "type": "PARAMETER", '
           '"data": {"seq_length": 4096}}']  # fmt: skip
    for i, t in enumerate(_times()):
        step = EVERY * (i + 1)
        data = {
            "reduced_train_loss": 2.3,
            "lr": 0.0003,
            "global_step": float(step),
            "consumed_samples": float(step * BATCH),
            "train_step_timing in s": SECONDS / EVERY,
            "epoch": 0,
        }
        out.append(
            "DLLL "
            + json.dumps(
                {
                    "timestamp": f"{t.timestamp():.6f}",
                    "datetime": f"{t:%Y-%m-%d %H:%M:%S.%f}",
                    "elapsedtime": f"{SECONDS * i:.6f}",
                    "type": "LOG",
                    "step": step,
                    "data": data,
                }
            )
        )
    return "\n".join(out) + "\n"


def torchtitan() -> str:
    """torchtitan's metrics as a W&B history export: `_timestamp`, `_step`, `throughput(tps)` (tokens per
    second per GPU over the wall clock since the previous log), `tflops`, `mfu(%)`, `loss_metrics/...`."""
    out = []
    for i, t in enumerate(_times()):
        out.append(
            json.dumps(
                {
                    "_step": EVERY * (i + 1),
                    "_timestamp": t.timestamp(),
                    "loss_metrics/global_avg_loss": 2.3,
                    "throughput(tps)": TOKENS_PER_S / GPUS,
                    "tflops": EXPECTED_MFU * 989.4,
                    "mfu(%)": 100 * EXPECTED_MFU,
                    "time_metrics/end_to_end(s)": SECONDS / EVERY,
                    "time_metrics/data_loading(s)": 0.01,
                }
            )
        )
    return "\n".join(out) + "\n"


def deepspeed() -> str:
    """DeepSpeed's engine log: `[time] [INFO] [logging.py:96:log_dist] [Rank 0] step=N, skipped=0, lr=[...]`
    and the ThroughputTimer's `epoch=0/micro_step=M/global_step=N, RunningAvgSamplesPerSec=..., ...` every
    steps_per_print steps."""
    out = []
    per_s = BATCH * EVERY / SECONDS
    for i, t in enumerate(_times()):
        step = EVERY * (i + 1)
        stamp = f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}"
        out.append(
            f"[{stamp}] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, skipped=0, lr=[0.0003], "
            "mom=[(0.9, 0.95)]"
        )
        out.append(
            f"[{stamp}] [INFO] [timer.py:260:stop] epoch=0/micro_step={step * 4}/global_step={step}, "
            f"RunningAvgSamplesPerSec={per_s:.6f}, CurrSamplesPerSec={per_s:.6f}, MemAllocated=4.32GB, "
            "MaxMemAllocated=38.49GB"
        )
    return "\n".join(out) + "\n"


def hf_trainer() -> str:
    """Hugging Face Trainer's log records with `include_num_input_tokens_seen`, as a W&B export writes them:
    `_timestamp`, `train/global_step`, `train/num_input_tokens_seen` (cumulative), `train/loss`; an
    evaluation record in between, and the run's final summary (`train_runtime`,
    `train_samples_per_second`, `train_tokens_per_second`)."""
    out = []
    for i, t in enumerate(_times()):
        step = EVERY * (i + 1)
        out.append(
            json.dumps(
                {
                    "_timestamp": t.timestamp(),
                    "train/global_step": step,
                    "train/epoch": 0.01 * i,
                    "train/loss": 2.3,
                    "train/learning_rate": 0.0003,
                    "train/num_input_tokens_seen": step * BATCH * SEQ,
                }
            )
        )
        if i == 5:
            out.append(
                json.dumps({"_timestamp": t.timestamp() + 1, "eval/loss": 2.4, "train/global_step": step})
            )
    return "\n".join(out) + "\n"


SHAPES: dict[str, tuple[str, str, str]] = {
    "megatron": (
        "megatron.log",
        megatron(),
        f"{{params: {PARAMS}, gpus: {GPUS}, seq_len: {SEQ}, step_time_unit: ms, "
        "columns: {step_s: 'elapsed time per iteration (ms)'}}",
    ),
    "nemo": ("nemo_dllogger.json", nemo(), f"{{params: {PARAMS}, gpus: {GPUS}, seq_len: {SEQ}}}"),
    "torchtitan": (
        "torchtitan_wandb.jsonl",
        torchtitan(),
        f"{{params: {PARAMS}, gpus: {GPUS}, columns: {{tokens_per_s: 'throughput(tps)', step: _step}}, "
        "tokens_per_s_per: gpu}",
    ),
    "deepspeed": (
        "deepspeed.log",
        deepspeed(),
        f"{{params: {PARAMS}, gpus: {GPUS}, seq_len: {SEQ}, batch_size: {BATCH}, columns: {{step: global_step}}}}",
    ),
    "hf_trainer": ("hf_wandb.jsonl", hf_trainer(), f"{{params: {PARAMS}, gpus: {GPUS}}}"),
}
