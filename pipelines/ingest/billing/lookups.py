"""Values the FOCUS staging SQL looks up by a join instead of computing them on every line: a bill of
millions of lines holds a few thousand distinct tag texts and timestamps, and computing a tag set id (MD5)
or parsing a text timestamp strictly costs more per line than a hash join's probe (bench/README.md, issue
45 item 3). Two temp tables, filled from the file's first lines before its insert (`prepare_lookups`):

- `_billing_tag_ids` (k: a raw tag text, v: tag_set_id(k)), kept for the connection's whole run: each
  file adds the texts of its first lines that the table lacks;
- `_billing_calendar` (k: a timestamp's text, v: billing_ts(k), per: the billing period of v), made again
  for each file: every hour around the month of its first lines, in the text forms they show.

The first lines are read once, into the temp table `_billing_sample` (SAMPLE), which the reader's x_extra
sample reads too (reconcile.sample_sets, BillingReader._extra_repeats): each read of a CSV with a LIMIT
tokenises a buffer per thread.

A lookup's value is the same function of its key that the staging SQL computes for a line without one,
so a line's value does not depend on whether its text was looked up; a bad value is never a key, and it is
refused on its own line as before (the diagnosis of a failed insert reads the file, not these tables).
"""

from __future__ import annotations

import duckdb

from pipelines.ingest.billing.lines import Spec
from pipelines.ingest.billing.relation import Relation
from pipelines.ingest.billing.sql_expr import file_params
from pipelines.warehouse import one, sql_text

TAG_IDS = "_billing_tag_ids"
CALENDAR = "_billing_calendar"
# raw tag texts kept at most: past it the table starts again from the next file's first lines (each
# entry costs the join's hash table memory; a bill's distinct sets are a few thousand)
MAX_TAG_IDS = 200_000
SAMPLE_LINES = 10_000  # the first lines of a file the lookups are filled from
SAMPLE = "_billing_sample"  # those lines: the lookups' texts and the x_extra STRUCT (`_x_extra`)
# the `_src` columns holding a timestamp's text (NULL when the file types it): the calendar's keys
TEXT_TIMESTAMPS = (
    "_ts_billing_period_start",
    "_ts_billing_period_end",
    "_ts_charge_period_start",
    "_ts_charge_period_end",
)


def ensure_lookups(con: duckdb.DuckDBPyConnection) -> None:
    """Both tables, empty when the connection has none yet (a rolled-back transaction takes a table
    created in it along)."""
    con.execute(f"create temp table if not exists {TAG_IDS} (k varchar, v ubigint)")
    con.execute(f"create temp table if not exists {CALENDAR} (k varchar, v timestamp, per varchar)")


def prepare_lookups(con: duckdb.DuckDBPyConnection, rel: Relation, spec: Spec, cte: str) -> str:
    """Fill the lookups from the file's first lines (`cte`, the `_src` CTE of its insert). Runs in the
    load's transaction, before the insert. Returns SAMPLE, the table of those lines, left for the x_extra
    sample to read (it is made again for the next file)."""
    ensure_lookups(con)
    size = one(con, f"select count(*) from {TAG_IDS}")  # noqa: S608 - our constant
    if size is not None and size[0] > MAX_TAG_IDS:
        con.execute(f"delete from {TAG_IDS}")  # noqa: S608 - our constant
    # the first lines read once, into a small table both lookups read (a CSV read with a LIMIT still
    # tokenises a buffer per thread: each query over `_src` cost 0.2-0.3 s of wall time a part)
    texts = ", ".join(("_tags_raw", *TEXT_TIMESTAMPS, "_x_extra"))
    sample = f"create or replace temp table {SAMPLE} as\n{cte}select {texts} from _src limit {SAMPLE_LINES}"  # noqa: S608 - identifiers only
    con.execute(sample, file_params(rel, spec, sample))
    con.execute(f"insert into {TAG_IDS} by name\n{sql_text('staging', 'stg_focus__tag_ids')}")  # noqa: S608 - our SQL files
    if all(spec.columns.get(c, "null::varchar") == "null::varchar" for c in TEXT_TIMESTAMPS):
        con.execute(f"delete from {CALENDAR}")  # noqa: S608 - our constant
    else:
        calendar = sql_text("staging", "stg_focus__calendar")
        con.execute(
            f"create or replace temp table {CALENDAR} as\nselect * from (\n{calendar}\n)",  # noqa: S608 - our SQL files; values are bound
            {"date_format": spec.bind.get("date_format")},
        )
    return SAMPLE
