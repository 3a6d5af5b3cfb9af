"""A small telemetry-only GPU trace in the shape of public production-cluster traces (Alibaba's PAI GPU
traces and their like): per pod, the GPU's duty cycle and memory in use, keyed by machine and pod, with no
GPU index or UUID, no bill and no price.

Each metric is its own single-metric CSV (`timestamp,machine,pod,value`, epoch seconds), as such traces
ship one table per measurement; memory is in GiB. Values are deterministic (a seeded generator), so tests
can assert on them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

DUTY_FILE = "gpu_duty_cycle.csv"
MEMORY_FILE = "gpu_memory_gib.csv"

# the two sources that read the trace: one fixed metric each (`metric`), memory scaled from GiB to MiB
SOURCES = """\
  - name: trace-duty
    kind: metrics_csv
    uri: {folder}/{duty}
    options: {{metric: util_pct, columns: {{ts: timestamp, host: machine}}}}
  - name: trace-memory
    kind: metrics_csv
    uri: {folder}/{memory}
    options:
      metric: gpu_mem_gib
      columns: {{ts: timestamp, host: machine}}
      metrics: {{gpu_mem_gib: {{column: mem_used_mib, scale: 1024}}}}
"""


@dataclass(frozen=True)
class Pod:
    machine: str
    pod: str
    busy: bool  # a working pod: duty cycle 60-95 %; else 0-3 % (allocated, doing nothing)


# three machines, six pods: most of the GPU time idle, as in the trace that prompted issue 18
PODS = (
    Pod("m-0012", "pai-a1b2-worker-0", busy=True),
    Pod("m-0012", "pai-a1b2-worker-1", busy=False),
    Pod("m-0347", "pai-c3d4-worker-0", busy=False),
    Pod("m-0981", "pai-e5f6-worker-0", busy=False),
    Pod("m-0981", "pai-e5f6-worker-1", busy=False),
    Pod("m-0981", "pai-e5f6-ps-0", busy=False),
)
START = datetime(2020, 3, 3, 8, 0, tzinfo=UTC)  # a Tuesday in ISO week 2020-W10
HOURS = 4
EVERY_S = 60


def write_trace(
    folder: Path, pods: tuple[Pod, ...] = PODS, start: datetime = START, hours: int = HOURS
) -> int:
    """Write the duty-cycle and memory files under `folder`; return the samples per pod."""
    rng = random.Random(20200303)
    folder.mkdir(parents=True, exist_ok=True)
    duty = ["timestamp,machine,pod,value"]
    memory = ["timestamp,machine,pod,value"]
    steps = hours * 3600 // EVERY_S
    for i in range(steps):
        ts = int((start + timedelta(seconds=i * EVERY_S)).timestamp())
        for p in pods:
            util = rng.uniform(60, 95) if p.busy else rng.uniform(0, 3)
            mem = rng.uniform(20, 30) if p.busy else rng.uniform(0.3, 1.0)
            duty.append(f"{ts},{p.machine},{p.pod},{util:.1f}")
            memory.append(f"{ts},{p.machine},{p.pod},{mem:.2f}")
    (folder / DUTY_FILE).write_text("\n".join(duty) + "\n", encoding="utf-8")
    (folder / MEMORY_FILE).write_text("\n".join(memory) + "\n", encoding="utf-8")
    return steps


def sources(folder: str) -> str:
    """The `sources:` entries (indented list items) that read a trace written to `folder`."""
    return SOURCES.format(folder=folder, duty=DUTY_FILE, memory=MEMORY_FILE)
