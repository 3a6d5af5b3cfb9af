"""The one resource every asset uses: the wastewatch configuration and its warehouse."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb

from pipelines.config import DEFAULT_CONFIG_NAME, Config, load_config
from pipelines.lock import DEFAULT_WAIT_S, writer_lock
from pipelines.warehouse import open_warehouse

# every asset that writes the DuckDB file runs in this pool; dagster.yaml limits it to one at a time
WAREHOUSE_POOL = "warehouse"
CONFIG_ENV = "WASTEWATCH_CONFIG"


class WastewatchResource(dg.ConfigurableResource):
    """Where the configuration is: `config_path`, else $WASTEWATCH_CONFIG, else ./wastewatch.yaml.

    Read when a run starts, never when the code location loads. For a whole run (not a sensor's tick) the
    resource holds the warehouse's run-level lock (pipelines/lock.py), waiting up to `lock_wait_s` seconds
    for another writer; a run that cannot get it fails naming the holder's pid.
    """

    config_path: str = ""
    lock_wait_s: float = DEFAULT_WAIT_S

    def resolved_path(self) -> Path:
        return Path(self.config_path or os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG_NAME)

    def load(self) -> Config:
        return load_config(self.resolved_path())

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator[Any]:
        with super().yield_for_execution(context) as value:
            if context.run is None:  # a sensor or schedule tick only reads
                yield value
                return
            log = context.log
            with writer_lock(
                self.load().warehouse_path, wait=self.lock_wait_s, notice=log.info if log else None
            ):
                yield value

    @contextmanager
    def warehouse(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        with open_warehouse(self.load(), read_only=read_only) as con:
            yield con


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"wastewatch": WastewatchResource()})
