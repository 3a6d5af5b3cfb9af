"""The one resource every asset uses: the wastewatch configuration and its warehouse."""

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
from pydantic import PrivateAttr

from pipelines.config import CONFIG_ENV as CONFIG_ENV  # where the tests and the code server look
from pipelines.config import Config, find_config, load_config
from pipelines.instance import PID_TAG, run_tags
from pipelines.lock import DEFAULT_WAIT_S, writer_lock
from pipelines.warehouse import open_warehouse

# every asset that writes the DuckDB file runs in this pool; dagster.yaml limits it to one at a time
WAREHOUSE_POOL = "warehouse"

# the writable connection of the CLI command whose runs execute in this process (`lend_warehouse`)
_LENT: ContextVar[tuple[Path, duckdb.DuckDBPyConnection] | None] = ContextVar(
    "wastewatch_lent_warehouse", default=None
)


@contextmanager
def lend_warehouse(path: Path, con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Runs executed in-process inside this block use `con`, the calling command's writable connection to
    the warehouse at `path`, instead of opening their own (the command closes it, not the run)."""
    token = _LENT.set((path.resolve(), con))
    try:
        yield
    finally:
        _LENT.reset(token)


class WastewatchResource(dg.ConfigurableResource):
    """Where the configuration is: `config_path`, else $WASTEWATCH_CONFIG, else ./wastewatch.yaml.

    Read when a run starts, never when the code location loads. For a whole run (not a sensor's tick) the
    resource holds the warehouse's run-level lock (pipelines/lock.py), waiting up to `lock_wait_s` seconds
    for another writer; a run that cannot get it fails naming the holder's pid. Within a run the steps of
    one process share one connection, opened by the first step that asks and closed when the run ends:
    opening the warehouse (schema check, macros, catalogues) costs more than most steps. A run the CLI
    executes in-process borrows the command's own connection instead (`lend_warehouse`).
    """

    config_path: str = ""
    lock_wait_s: float = DEFAULT_WAIT_S
    _run_warehouse: ExitStack | None = PrivateAttr(default=None)
    _run_con: duckdb.DuckDBPyConnection | None = PrivateAttr(default=None)

    def resolved_path(self) -> Path:
        return Path(self.config_path) if self.config_path else find_config()[0]

    def load(self) -> Config:
        return load_config(self.resolved_path())

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator[Any]:
        with super().yield_for_execution(context) as value:
            if context.run is None:  # a sensor or schedule tick only reads
                yield value
                return
            instance, run_id = context.instance, context.run.run_id
            if instance is not None and PID_TAG not in context.run.tags:  # a run the daemon launched
                instance.add_run_tags(run_id, run_tags())
            log = context.log
            with (
                writer_lock(
                    self.load().warehouse_path, wait=self.lock_wait_s, notice=log.info if log else None
                ),
                ExitStack() as stack,
            ):
                value._run_warehouse = stack
                try:
                    yield value
                finally:
                    value._run_warehouse = value._run_con = None

    @contextmanager
    def warehouse(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection to the warehouse: the run's shared one (writable) in a run, else one of its own."""
        if self._run_warehouse is None:
            with open_warehouse(self.load(), read_only=read_only) as con:
                yield con
            return
        if self._run_con is None:
            config, lent = self.load(), _LENT.get()
            if lent is not None and lent[0] == config.warehouse_path.resolve():
                self._run_con = lent[1]
            else:
                self._run_con = self._run_warehouse.enter_context(open_warehouse(config))
        yield self._run_con


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"wastewatch": WastewatchResource()})
