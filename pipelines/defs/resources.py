"""The one resource every asset uses: the wastewatch configuration and its warehouse."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import duckdb

from pipelines.config import DEFAULT_CONFIG_NAME, Config, load_config
from pipelines.warehouse import open_warehouse

# every asset that writes the DuckDB file runs in this pool; dagster.yaml limits it to one at a time
WAREHOUSE_POOL = "warehouse"
CONFIG_ENV = "WASTEWATCH_CONFIG"


class WastewatchResource(dg.ConfigurableResource):
    """Where the configuration is: `config_path`, else $WASTEWATCH_CONFIG, else ./wastewatch.yaml.

    Read when a run starts, never when the code location loads.
    """

    config_path: str = ""

    def resolved_path(self) -> Path:
        return Path(self.config_path or os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG_NAME)

    def load(self) -> Config:
        return load_config(self.resolved_path())

    @contextmanager
    def warehouse(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        with open_warehouse(self.load(), read_only=read_only) as con:
            yield con


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"wastewatch": WastewatchResource()})
