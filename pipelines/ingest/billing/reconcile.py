"""Reconciliation: a file's rows and billed/effective sums, computed from the file's own columns, must
equal what landed, or the file is rejected and the transaction rolls back. The file's side comes from
one aggregate pass over the file (`sets_and_sums`, which also fills the x_extra sets the staging SQL
reads, or `file_sums`), or from the insert's own scan of the file (`observe_start` ... `observe_end`),
which can keep the file's distinct tag texts too (`observed_tags`); a FOCUS CSV file's x_extra sets come
from its first lines (`sample_sets`), so it needs no pass at all.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from decimal import Decimal
from typing import Any

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.billing.landed import Landed
from pipelines.ingest.billing.lines import Spec
from pipelines.ingest.billing.relation import Relation
from pipelines.ingest.billing.sql_expr import file_params, src_cte
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, LoadResult, duckdb_problem, quote_ident
from pipelines.warehouse import one

FileSums = tuple[int, Decimal | None, Decimal | None]  # the file's rows, billed and effective cost


def reconciled(file: SourceFile, landed: Landed, file_side: FileSums) -> LoadResult:
    """The load's result when what landed equals what the file holds, else RejectedFile."""
    f_rows, f_billed, f_effective = file_side
    rows, billed, effective = landed.rows, landed.billed, landed.effective
    if (f_rows, quantized(f_billed), quantized(f_effective)) != (
        rows,
        quantized(billed),
        quantized(effective),
    ):
        raise RejectedFile(
            file.uri,
            "reconciliation failed: the file has "
            f"{f_rows:,} rows, billed {quantized(f_billed)}, effective {quantized(f_effective)}; landed {rows:,} rows, "
            f"billed {quantized(billed)}, effective {quantized(effective)}",
        )
    return LoadResult(
        rows=rows,
        billing_period=landed.period,
        billed_cost_sum=billed,
        effective_cost_sum=effective,
        file_rows=f_rows,
        file_billed_cost_sum=f_billed,
        file_effective_cost_sum=f_effective,
        currencies=landed.currencies,
    )


# the scale money is stored and summed at (DECIMAL(38, 12)): reconciliation compares sums exactly at it
MONEY_SCALE = Decimal("1e-12")


def quantized(v: Decimal | None) -> Decimal:
    """A money sum as reconciliation compares it: exactly, at the warehouse's 12 decimals, NULL as 0."""
    return (v if v is not None else Decimal(0)).quantize(MONEY_SCALE)


def file_sums(con: duckdb.DuckDBPyConnection, rel: Relation, spec: Spec, file: SourceFile) -> FileSums:
    """The file's rows and cost sums from a pass of their own, after the insert."""
    cte = src_cte(rel.from_clause, "null::bigint", spec.columns)
    billed, effective = spec.file_billed, spec.file_effective
    sql = f"{cte}select count(*), sum(({billed})::decimal(38, 12)), sum(({effective})::decimal(38, 12)) from _src"  # noqa: S608 - identifiers only
    used = file_params(rel, spec, sql)
    try:
        got = one(con, sql, used)
    except duckdb.Error as exc:
        raise RejectedFile(file.uri, f"cannot reconcile: {duckdb_problem(exc)}") from None
    assert got is not None
    return got[0], got[1], got[2]


def sets_and_sums(
    con: duckdb.DuckDBPyConnection,
    rel: Relation,
    spec: Spec,
    cte: str,
    key: str,
    extra: str,
    signature: str | None,
) -> FileSums:
    """One pass over the file before the insert: its x_extra sets (grouped by `key`, SQL over `_src`;
    `extra`, the set's value) into the temp table `_billing_sets` that the staging SQL reads, and its
    rows and cost sums. `signature` (sets_signature) is kept with the sets."""
    # g: 2 = an x_extra set, 3 = the file. The lines are grouped once by xh, a few groups, and the
    # grouping sets are taken over those: grouping sets over the lines themselves cost DuckDB a
    # materialised copy of the input. The tags are not read here: hashing and grouping them costs time on
    # every line, and the warehouse mostly knows the file's sets already (store_file_tag_sets)
    sql = (
        f"create or replace temp table _billing_sets as\n{cte}"  # noqa: S608 - identifiers only
        ", _groups as (\n"
        f"    select xh, {extra} as x_extra, count(*) as n,\n"
        f"        sum(({spec.file_billed})::decimal(38, 12)) as billed,\n"
        f"        sum(({spec.file_effective})::decimal(38, 12)) as effective\n"
        f"    from (select *, {key} as xh from _src)\n"
        "    group by xh\n"
        ")\n"
        "select 2 + grouping(xh) as g, xh, any_value(x_extra) as x_extra,\n"
        "    coalesce(sum(n), 0)::bigint as n, sum(billed) as billed, sum(effective) as effective\n"
        "from _groups group by grouping sets ((xh), ())"
    )
    con.execute(sql, file_params(rel, spec, sql))
    # what the sets' key is made of: the next file with the same can use them (known_signature)
    con.execute(
        "create or replace temp table _billing_sets_of as select $s::varchar as signature",
        {"s": signature},
    )
    got = one(con, "select n, billed, effective from _billing_sets where g = 3")
    assert got is not None
    return got[0], got[1], got[2]


SAMPLE_LINES = 10_000  # the first lines of a file whose x_extra combinations `sample_sets` reads


def sample_sets(
    con: duckdb.DuckDBPyConnection,
    rel: Relation,
    spec: Spec,
    cte: str,
    key: str,
    signature: str | None,
    sample: str | None = None,
) -> bool:
    """The x_extra sets of the file's first SAMPLE_LINES lines (grouped by `key`, SQL over `_src`) into
    `_billing_sets`, where sets_and_sums would read the whole file for them: a CSV file's lines are then
    counted and summed by the insert's own scan (observe_start) with no pass before it. Returns whether
    the combinations repeat (at most one per 10 lines); when they do not, the table is left empty and the
    staging SQL builds x_extra line by line. A line whose combination the sample lacks gets its x_extra
    built on its own line by the same SQL. `signature` (sets_signature) is kept with the sets. `sample`: a
    temp table already holding those lines' `_x_extra` (lookups.SAMPLE), read instead of the file."""
    lines = sample or f"(select _x_extra from _src limit {SAMPLE_LINES})"  # noqa: S608 - identifiers only
    sql = (
        f"create or replace temp table _billing_sets as\n{'' if sample else cte}"  # noqa: S608 - identifiers only
        f"select 2 as g, xh, any_value(_x_extra) as x_extra, count(*)::bigint as n,\n"
        "    null::decimal(38, 12) as billed, null::decimal(38, 12) as effective\n"
        f"from (select *, {key} as xh from (select _x_extra from {lines})) group by xh"
    )
    con.execute(sql, file_params(rel, spec, sql))
    got = one(con, "select count(*), coalesce(sum(n), 0) from _billing_sets")
    assert got is not None
    repeats = bool(got[0] * 10 <= max(got[1], 1))
    if not repeats:
        con.execute("delete from _billing_sets")
    con.execute(
        "create or replace temp table _billing_sets_of as select $s::varchar as signature",
        {"s": signature},
    )
    return repeats


# Reconciliation without a second pass: when a CSV file needs no pass for its x_extra sets (an earlier file
# of its billing period made them), `_src` hands every line to `_ww_observe`, a Python function DuckDB calls
# per chunk of lines, which adds up the lines and their billed and effective cost as the file states them.
# DuckDB may run a filter or a limit of the staging SQL below it, so the count is trusted only when the
# insert's profile shows one scan of the file, no filter pushed into it, that produced exactly the lines
# observed; otherwise (or without numpy, which DuckDB's arrow functions need) `file_sums` runs its pass.
# The staging SQL must read `_src` once: DuckDB can feed two readings from one scan, each observed below
# its own filter, and their counts could add up to the scan's by chance.

_OBSERVED: dict[int, list[Any]] = {}  # token -> [lines, billed sum, effective sum, distinct tag texts]
_OBSERVED_LOCK = threading.Lock()
_TOKENS = itertools.count(1)
_FILE_SCANS = ("READ_CSV", "READ_CSV_AUTO", "READ_PARQUET", "PARQUET_SCAN", "READ_JSON", "READ_NDJSON")


# distinct tag texts an observation keeps at most: past it, the file's new tag sets are read from the file
# again after the insert (a tag that varies per line would otherwise fill memory with every line's text)
MAX_OBSERVED_TAGS = 100_000


def _observe(row: Any, token: Any, billed: Any, effective: Any, tags: Any) -> Any:
    """Called by DuckDB (arrow arrays) for each chunk of a file's lines: adds them up, and keeps the
    distinct tag texts when the observation asked for them; returns `row`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not len(row):
        return row
    b, e = pc.sum(billed).as_py(), pc.sum(effective).as_py()
    seen = pc.unique(tags.cast(pa.string())) if tags.null_count < len(tags) else None
    with _OBSERVED_LOCK:
        acc = _OBSERVED.get(token[0].as_py())
        if acc is not None:
            acc[0] += len(row)
            acc[1] = b if acc[1] is None else acc[1] + (b or 0)
            acc[2] = e if acc[2] is None else acc[2] + (e or 0)
            if acc[3] is not None and seen is not None:
                kept = pc.unique(pa.concat_arrays([acc[3], seen])) if len(acc[3]) else seen
                acc[3] = kept if len(kept) <= MAX_OBSERVED_TAGS else None
    return row


def observe_start(con: duckdb.DuckDBPyConnection, tags: bool = False) -> int | None:
    """A token for one insert's observation, `_ww_observe` registered on `con`; None without numpy.
    `tags`: keep the distinct tag texts of the lines too (observed_tags)."""
    try:
        import numpy  # noqa: F401 - DuckDB's arrow functions need it
    except ImportError:  # pragma: no cover - numpy is a dependency
        return None
    name = _registered(con)
    token = next(_TOKENS)
    import pyarrow as pa

    with _OBSERVED_LOCK:
        _OBSERVED[token] = [0, None, None, pa.nulls(0, pa.string()) if tags else None]
        _FUNCTIONS[token] = name
    return token


_FUNCTIONS: dict[int, str] = {}  # token -> the name `_observe` is registered under on its connection


def observer_function(token: int) -> str:
    """The SQL name of the observing function for `token` (observed_cte's `function`)."""
    with _OBSERVED_LOCK:
        return _FUNCTIONS.get(token, "_ww_observe")


def _registered(con: duckdb.DuckDBPyConnection) -> str:
    """The name `_observe` is registered under on `con`, registering it when the catalog lacks it. A
    registration made in a transaction that rolled back leaves the catalog without the function while
    the connection still refuses the name: the next name (`_ww_observe_1`, ...) is taken then."""
    money = duckdb.decimal_type(38, 12)
    found = {
        r[0]
        for r in con.execute(
            "select function_name from duckdb_functions() where starts_with(function_name, '_ww_observe')"
        ).fetchall()
    }
    for n in range(1000):
        name = "_ww_observe" if n == 0 else f"_ww_observe_{n}"
        if name in found:
            return name
        try:
            con.create_function(
                name,
                _observe,
                ["BIGINT", "BIGINT", money, money, "VARCHAR"],
                "BIGINT",
                type="arrow",
                side_effects=True,  # never folded; still dropped with a column nothing uses (hence `_row`)
                null_handling="special",  # called for NULL rows too (the row number is NULL in large CSVs)
            )
        except duckdb.NotImplementedException:  # registered on this connection, not in its catalog
            continue
        return name
    raise RuntimeError("cannot register the observing function")


def observed_tags(token: int | None) -> list[str] | None:
    """The distinct tag texts the observation `token` kept (observe_start's `tags`), or None (not asked
    for, or more than MAX_OBSERVED_TAGS). Call before observe_end, and trust them only when it proves
    every line was observed."""
    if token is None:
        return None
    with _OBSERVED_LOCK:
        acc = _OBSERVED.get(token)
        kept = acc[3] if acc is not None else None
    return None if kept is None else [t for t in kept.to_pylist() if t is not None]


def observe_end(token: int | None, profile: str | None) -> tuple[int, Decimal | None, Decimal | None] | None:
    """The observed (lines, billed, effective) when the profile proves every line of the file was
    observed; None (run the pass) otherwise."""
    if token is None:
        return None
    with _OBSERVED_LOCK:
        rows, billed, effective, _ = _OBSERVED.pop(token, [None, None, None, None])
        _FUNCTIONS.pop(token, None)
    scanned = _scanned_lines(profile) if profile else None
    if rows is None or scanned is None or scanned != rows:
        return None
    return rows, billed, effective


def _scanned_lines(profile: str) -> int | None:
    """Lines the one scan of a file in a DuckDB profile produced; None when there is not exactly one
    such scan or a filter was pushed into it (its count would leave out the lines it dropped)."""
    try:
        tree = json.loads(profile)
    except ValueError:
        return None
    scans: list[dict[str, Any]] = []
    todo = list(tree.get("operator") or tree.get("children") or [])
    while todo:
        node = todo.pop()
        info = node.get("extra_info") or {}
        if str(info.get("Function", "")).upper() in _FILE_SCANS:
            scans.append(node)
        todo.extend(node.get("children") or [])
    if len(scans) != 1 or "Filters" in (scans[0].get("extra_info") or {}):
        return None
    rows = scans[0].get("intermediate_rows", scans[0].get("operator_cardinality"))
    return rows if isinstance(rows, int) else None


def observed_cte(cte: str, spec: Spec, tags: bool = False, function: str = "_ww_observe") -> str:
    """`_src` with every line passed through `_ww_observe` (its row number, which the staging SQL always
    writes: a column nothing uses would be dropped with its function); `tags`: with its raw tag text;
    `function`: the name it is registered under (observer_function). The columns of `spec.observed_types`
    are cast first, once: the observer sums the cast values and the staging SQL reads them."""
    head = "with _src as not materialized ("
    assert cte.startswith(head)
    file_cte = "with _src_file as not materialized (" + cte[len(head) :]
    billed, effective = spec.file_billed, spec.file_effective
    source = "_src_file"
    if spec.observed_types:
        casts = ", ".join(
            f"cast({quote_ident(c)} as {t}) as {quote_ident(c)}" for c, t in spec.observed_types.items()
        )
        file_cte = (
            f"{file_cte.rstrip()}\n, _src_typed as not materialized (\n"  # noqa: S608 - identifiers and types only
            f"    select * replace ({casts})\n    from _src_file\n)\n"
        )
        source = "_src_typed"
    return (
        f"{file_cte.rstrip()}\n, _src as not materialized (\n"  # noqa: S608 - identifiers only
        f"    select * replace ({function}(_row, $observe_token, ({billed})::decimal(38, 12), "
        f"({effective})::decimal(38, 12), {'_tags_raw::varchar' if tags else 'null::varchar'}) as _row)\n"
        f"    from {source}\n)\n"
    )


def sets_signature(rel: Relation, spec: Spec, ctx: LoadContext, file: SourceFile) -> str:
    """What a file's x_extra sets are keyed by (the `_x_extra` STRUCT's SQL over the file's columns and
    their types) and whose they are (the source's billing period, or the file when it has none). Files
    with the same signature share sets. Any STRUCT of the same type would give a line the right JSON
    (a set's JSON depends on its key alone), but another month's sets would leave most of a file's
    combinations to be built line by line, which costs more than the pass."""
    owner = [ctx.source.name, ctx.period or file.uri]
    text = json.dumps([owner, spec.columns.get("_x_extra"), sorted(rel.types.items())])
    return hashlib.sha1(text.encode()).hexdigest()


def known_signature(con: duckdb.DuckDBPyConnection) -> str | None:
    """The signature of the x_extra sets this connection holds (`_billing_sets`), if any."""
    found = one(
        con,
        "select count(*) from duckdb_tables() where temporary and table_name in ('_billing_sets', '_billing_sets_of')",
    )
    if not found or found[0] != 2:
        return None
    got = one(con, "select signature from _billing_sets_of")
    return got[0] if got else None
