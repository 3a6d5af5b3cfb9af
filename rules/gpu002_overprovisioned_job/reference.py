"""GPU002's reference tables: smaller GPUs with their list prices, and peak compute per GPU model.

They are the defaults of two GPU002 params (default factories: the files are read when the params are
first made, not when wastewatch imports its rules), so a deployment can replace them in
`wastewatch.yaml` and every finding records the table it was priced with. They are built from three
files:

- `list_prices.csv` (here): list prices of whole cloud instances, each row with its region, pricing
  (On-Demand Linux), currency, the month it was recorded and its source page;
- `pipelines/catalog/gpu_instance_types.csv`: each instance type's GPU model, GPUs and memory per GPU;
- `pipelines/catalog/gpu_peak_flops.csv`: peak dense tensor TFLOP/s per GPU model and the names
  (aliases) telemetry reports it under.

A smaller GPU's list price per GPU-hour is its instance's hourly price ÷ the instance's GPUs. The
instances priced are the 8-GPU sizes: their vCPUs and host memory per GPU are closest to the training
instances a job would move from, and they cost more per GPU than the 1-GPU sizes (the waste is not
overstated). Only GPUs with BF16 (Ampere and newer) are listed; older or unpriced GPUs (T4, V100, A10G
without a published tensor figure) can be added through the params.
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

HERE = Path(__file__).resolve().parent
LIST_PRICES = HERE / "list_prices.csv"
# pipelines/catalog beside rules/, in a checkout and in an installed wheel alike
CATALOG_DIR = HERE.parents[1] / "pipelines" / "catalog"


class SmallerGpu(BaseModel):
    """A GPU a job could move to, and its list price per GPU-hour (the bill's measured price only if higher)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu_model: str = Field(
        min_length=1, description="Model as gpu_instance_types names it (L4, A100; 'NVIDIA L4' is the L4)."
    )
    gpu_memory_gib: float = Field(gt=0, description="Memory per GPU as the provider states it.")
    price_per_gpu_hour: float = Field(gt=0, description="List price per GPU-hour.")
    currency: str = Field("USD", min_length=3, max_length=3)
    provider: str = Field(
        "AWS", min_length=1, description="The cloud the price is for (FOCUS provider name)."
    )
    price_note: str = Field("list price", description="Where the price comes from; quoted in the reason.")

    def __repr__(self) -> str:
        return f"{self.gpu_model} {self.gpu_memory_gib:g} GiB at {self.currency} {self.price_per_gpu_hour:g}/GPU-h"


class GpuPeak(BaseModel):
    """Peak dense tensor TFLOP/s of a GPU model, matched by its name or an alias."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu_model: str = Field(min_length=1)
    aliases: tuple[str, ...] = ()
    peak_tflops: float = Field(gt=0)

    def __repr__(self) -> str:
        return f"{self.gpu_model} {self.peak_tflops:g}"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


@cache
def default_smaller_gpus() -> tuple[SmallerGpu, ...]:
    """One row per priced instance type of `list_prices.csv`, its GPUs from the built-in catalogue."""
    types = {r["instance_type"]: r for r in _rows(CATALOG_DIR / "gpu_instance_types.csv")}
    out = []
    for row in _rows(LIST_PRICES):
        spec = types.get(row["instance_type"])
        if spec is None:
            raise ValueError(f"{LIST_PRICES.name}: {row['instance_type']} is not in gpu_instance_types.csv")
        gpus = int(spec["gpu_count"])
        price = float(row["price_per_hour"])
        out.append(
            SmallerGpu(
                gpu_model=spec["gpu_model"],
                gpu_memory_gib=float(spec["gpu_memory_gib"]),
                price_per_gpu_hour=round(price / gpus, 6),
                currency=row["currency"],
                provider=row["provider"],
                price_note=(
                    f"list price: {row['provider']} {row['region']} {row['pricing']} {row['instance_type']} "
                    f"{row['currency']} {price:g}/h ÷ {gpus} GPUs, {row['as_of']}"
                ),
            )
        )
    return tuple(out)


@cache
def default_gpu_peaks() -> tuple[GpuPeak, ...]:
    """Every model of the built-in peak-FLOP/s catalogue with its aliases."""
    return tuple(
        GpuPeak(
            gpu_model=r["gpu_model"],
            aliases=tuple(a.strip() for a in r["aliases"].split(";") if a.strip()),
            peak_tflops=float(r["peak_dense_tflops"]),
        )
        for r in _rows(CATALOG_DIR / "gpu_peak_flops.csv")
    )
