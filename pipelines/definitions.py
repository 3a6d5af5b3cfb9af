"""The Dagster code location: everything under `pipelines/defs/` is loaded (as `dg dev` does).

Each module of `pipelines/defs/` that defines anything returns it from a `@dg.definitions` function, so the
CLI's in-process runs (pipelines/runner.py) build the same definitions by merging those functions'
(`cli_defs`), without what only the UI reads: the component library's JSON schemas `load_from_defs_folder`
adds to the code location's metadata, about 40 % of building the definitions.
tests/dagster/test_cli_defs.py checks that both give the same assets, checks, jobs, schedules, sensors
and resources.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import dagster as dg


@dg.definitions
def defs() -> dg.Definitions:
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)


def cli_defs() -> dg.Definitions:
    """What `defs` loads, merged from each `pipelines/defs/` module's `@dg.definitions` functions."""
    import pipelines.defs

    found: list[dg.Definitions] = []
    for module_info in pkgutil.walk_packages(pipelines.defs.__path__, "pipelines.defs."):
        module = importlib.import_module(module_info.name)
        found += [
            value()
            for value in vars(module).values()
            # what `@dg.definitions` made (the type of `defs` above), defined in this module
            if isinstance(value, type(defs))
            and getattr(getattr(value, "load_fn", None), "__module__", None) == module.__name__
        ]
    return dg.Definitions.merge(*found)
