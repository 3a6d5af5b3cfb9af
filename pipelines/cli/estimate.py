"""`wastewatch estimate`: what a training run will cost before it starts."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from pipelines.cli.common import Failure, ctx_config


class _Number(click.ParamType):
    """7e9, 7000000000, 7B, 2T, 1.5M: a count with an optional K/M/B/T suffix."""

    name = "number"
    SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        text = str(value).strip().replace("_", "").replace(",", "")
        scale = self.SUFFIX.get(text[-1:].lower(), 1.0) if text else 1.0
        try:
            number = float(text[:-1] if scale != 1.0 else text) * scale
        except ValueError:
            self.fail(f"{value!r} is not a number like 7e9 or 7B", param, ctx)
        if not math.isfinite(number) or number <= 0:
            self.fail(f"{value!r} must be a positive number", param, ctx)
        return number


class _Mfu(click.ParamType):
    """A share of the peak in (0, 1], or the word `measured`."""

    name = "MFU|measured"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float | str:
        if isinstance(value, float) or str(value).strip().lower() == "measured":
            return value if isinstance(value, float) else "measured"
        try:
            number = float(str(value))
        except ValueError:
            self.fail(f"{value!r} is neither a share of the peak like 0.4 nor 'measured'", param, ctx)
        if not 0 < number <= 1:
            self.fail(f"{value!r} must be in (0, 1], e.g. 0.4", param, ctx)
        return number


@click.command()
@click.option("--params", "n_params", type=_Number(), help="Model parameters, e.g. 7e9 or 7B.")
@click.option("--tokens", type=_Number(), help="Training tokens, e.g. 2e12 or 2T.")
@click.option("--gpu", help="GPU model, e.g. h100, a100, h200, b200, mi300x, l40s (see --list-gpus).")
@click.option("--gpus", type=click.IntRange(min=1), help="GPUs the run uses.")
@click.option("--mfu", type=_Mfu(), default="0.4", show_default=True,
              help="Model FLOPs utilisation: the share of the peak the run achieves, or 'measured': the median "
              "of comparable finished jobs' measured MFU (same GPU model, parameters within 2x).")  # fmt: skip
@click.option("--mfu-default", type=click.FloatRange(0, 1, min_open=True), default=0.4, show_default=True,
              help="The MFU `--mfu measured` falls back to when no comparable job was measured.")  # fmt: skip
@click.option("--price", type=click.FloatRange(0, min_open=True),
              help="Price per GPU-hour; default: measured from the warehouse for that GPU.")  # fmt: skip
@click.option("--mtbf-gpu-hours", type=click.FloatRange(0, min_open=True),
              help="GPU-hours per failure; default: measured in `jobs`, else a published figure.")  # fmt: skip
@click.option("--save-every", type=click.FloatRange(0, min_open=True),
              help="Checkpoint interval in hours; default: the Young/Daly optimum.")  # fmt: skip
@click.option("--keep", type=click.IntRange(min=0), default=5, show_default=True,
              help="Checkpoints retained (0 = all).")  # fmt: skip
@click.option("--ckpt-bytes-per-param", type=click.FloatRange(0, min_open=True), default=14.0, show_default=True,
              help="Checkpoint bytes per parameter (BF16 weights + FP32 master + Adam m, v).")  # fmt: skip
@click.option("--ckpt-write-gbps", type=click.FloatRange(0, min_open=True), default=10.0, show_default=True,
              help="Aggregate checkpoint write bandwidth, GB/s.")  # fmt: skip
@click.option("--restart-minutes", type=click.FloatRange(0), default=10.0, show_default=True,
              help="Time to restart the job after a failure.")  # fmt: skip
@click.option("--like", metavar="JOB_TYPE",
              help="A recurring job type as ADV003 names it: its measured failure rate and checkpoint write "
              "time are used (see `wastewatch advice`).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the estimate as JSON.")
@click.option("--list-gpus", is_flag=True, help="Print the table of peak dense FLOP/s per GPU model.")
@click.pass_context
def estimate(
    ctx: click.Context,
    n_params: float | None,
    tokens: float | None,
    gpu: str | None,
    gpus: int | None,
    mfu: float | str,
    mfu_default: float,
    price: float | None,
    mtbf_gpu_hours: float | None,
    save_every: float | None,
    keep: int,
    ckpt_bytes_per_param: float,
    ckpt_write_gbps: float,
    restart_minutes: float,
    like: str | None,
    as_json: bool,
    list_gpus: bool,
) -> None:
    """Estimate a training run: FLOPs, GPU-hours, wall time, cost, failures and checkpoints.

    e.g. wastewatch estimate --params 7e9 --tokens 2e12 --gpu h100 --gpus 512 --mfu 0.4
    """
    from pipelines.advice import estimate as est

    if list_gpus:
        click.echo(est.render_catalog(), nl=False)
        return
    missing = [
        f"--{n}"
        for n, v in (("params", n_params), ("tokens", tokens), ("gpu", gpu), ("gpus", gpus))
        if v is None
    ]
    if missing:
        raise click.UsageError(f"missing {', '.join(missing)}")
    assert n_params is not None and tokens is not None and gpu is not None and gpus is not None
    con = None
    currency, storage_price = "USD", est.DEFAULT_STORAGE_PRICE
    # the warehouse is optional here: it supplies the measured price and failure rate when it exists
    if ctx.obj["config_given"] or Path(ctx.obj["config_path"]).exists():
        from pipelines.warehouse import WarehouseError, connect

        config = ctx_config(ctx)
        currency = config.currency
        storage_price = float(config.prices.storage_gb_month.get("STANDARD", storage_price))
        path = config.published_path if config.published_path.exists() else config.warehouse_path
        if path.exists():
            try:
                con = connect(path, read_only=True)
            except WarehouseError as exc:
                click.echo(f"note: {exc}; estimating without the warehouse", err=True)
    try:
        result = est.estimate(
            n_params, tokens, gpu, gpus, mfu, price=price, con=con, currency=currency,
            mtbf_gpu_hours=mtbf_gpu_hours, ckpt_bytes_per_param=ckpt_bytes_per_param,
            ckpt_write_gbps=ckpt_write_gbps, save_every_hours=save_every, keep=keep or None,
            restart_minutes=restart_minutes, storage_price_gb_month=storage_price, mfu_default=mfu_default, like=like,
        )  # fmt: skip
    except est.EstimateError as exc:
        raise Failure(str(exc)) from None
    finally:
        if con is not None:
            con.close()
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
    else:
        click.echo(est.render_text(result), nl=False)
