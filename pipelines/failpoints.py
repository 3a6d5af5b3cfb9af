"""Named points where a crash test kills the process, to prove that every step recovers exactly.

`WASTEWATCH_FAILPOINT=<name>` (or `<name>:<n>` for its n-th pass) makes `failpoint(name)` send SIGKILL to
the running process, as a power cut or the OOM killer would, at a chosen place rather than after a timer, so
the test is deterministic. Unset (always, outside tests), a failpoint costs one environment lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "WASTEWATCH_FAILPOINT"

# every point, in the order a run passes them (tests/crash names them; docs/reliability.md lists them)
POINTS = (
    "lock.taken",  # the writer lock is held, nothing done yet
    "ingest.listed",  # a source's files are listed
    "ingest.rejection.before_commit",  # a bad file's rejection recorded in the ledger, not committed
    "ingest.batch.before_commit",  # a batch of telemetry or job files, not committed
    "ingest.batch.committed",
    "ingest.delivery.before_commit",  # a billing delivery: old period deleted, new lines in, not committed
    "ingest.delivery.committed",
    "ingest.snapshot.before_commit",  # a whole-source snapshot (inventory, listing), not committed
    "transform.mart.before_commit",  # a mart rebuilt, not committed
    "transform.mart.committed",
    "publish.updated",  # a private copy updated by what changed, not checkpointed
    "publish.copied",  # the readers' next copy complete beside the published one, not renamed
    "publish.replaced",
)

_passes: dict[str, int] = {}


def failpoint(name: str) -> None:
    """SIGKILL this process when WASTEWATCH_FAILPOINT names this point (and, with `:n`, its n-th pass)."""
    wanted = os.environ.get(ENV)
    if not wanted:
        return
    point, _, nth = wanted.partition(":")
    if point != name:
        return
    _passes[name] = _passes.get(name, 0) + 1
    if nth and _passes[name] != int(nth):
        return
    os.kill(os.getpid(), signal.SIGKILL)
