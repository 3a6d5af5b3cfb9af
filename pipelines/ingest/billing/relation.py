"""A billing file as DuckDB reads it (`Relation`): CSV (delimiter sniffed from the header, UTF-8 BOM,
literal NULLs, documented repairs of rows shorter than the header or a dialect DuckDB's strict check
refuses), Parquet (row numbers from the file) or NDJSON; `open_relation` describes it, or rejects it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.billing.decompress import open_text, text_size
from pipelines.ingest.billing.foreign import reject_json_array
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import duckdb_problem, quote_literal
from pipelines.ingest.sniff import csv_fields, encoding_problem, parquet_problem, text_problem
from pipelines.sources.options import BillingOptions

NULL_STRINGS = ("NULL", "null", "")
_LONG_LINE = re.compile(r"Maximum line size of (\d+) bytes exceeded\. Actual Size:\s*(\d+) bytes")
# CSV files above this size (uncompressed) get no x_source_row: numbering rows serialises the scan and
# materialises the file
ROW_NUMBER_LIMIT = 32 << 20


@dataclass
class Relation:
    """A file as DuckDB reads it: FROM clause (with $path bound), its columns and their types."""

    from_clause: str
    types: dict[str, str]
    params: dict[str, Any]
    fmt: str  # csv | parquet | json
    row_expr: str  # SQL for the 1-based data row (or null when the file is too large to number cheaply)
    numbered_from: str  # FROM clause that always yields `_n`, the 1-based data row (slow path)
    path: Path
    repairs: list[str] = field(default_factory=list)
    header_line: int = 1  # the file line of a CSV's header (after preamble lines it skips)

    def at(self, path: Path) -> Relation:
        """The same relation over another copy of the file (the decompressed one)."""
        return replace(self, params={**self.params, "path": str(path)}, path=path)

    def column(self, name: str) -> str | None:
        """The file's spelling of a column, matched ignoring case."""
        if name in self.types:
            return name
        lower = name.lower()
        return next((c for c in self.types if c.lower() == lower), None)


def _format_of(name: str) -> str:
    n = name.lower()
    if n.endswith(".gz"):
        n = n[:-3]
    if n.endswith(".parquet"):
        return "parquet"
    if n.endswith((".json", ".jsonl", ".ndjson")):
        return "json"
    return "csv"


def _named(delim: str) -> str:
    return {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}.get(delim, repr(delim))


def _sniff_delimiter(header: str) -> str:
    counts = {d: header.count(d) for d in (",", ";", "\t", "|")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else ","


def _short_rows(
    path: Path, delim: str, names: list[str] | None, skip: int = 0
) -> tuple[int, int, list[str]] | None:
    """(header fields, data fields, missing names) when every sampled data row is shorter than the header."""
    import csv

    try:
        with open_text(path) as f, csv_fields():
            for _ in range(skip):
                f.readline()
            reader = csv.reader(f, delimiter=delim)
            header = next(reader, [])
            lengths = {len(row) for _, row in zip(range(1000), reader, strict=False) if row}
    except csv.Error:  # a field past FIELD_LIMIT: not this repair's case; DuckDB's error says what it is
        return None
    header = names or header
    if len(lengths) != 1:
        return None
    (n,) = lengths
    if 0 < n < len(header):
        return len(header), n, header[n:]
    return None


def worded(problem: str) -> str:
    """DuckDB's problem, or what it means in our words with what to do (a line past its limit)."""
    long = _LONG_LINE.search(problem)
    if long is None:
        return problem
    return (
        f"a line of {int(long[2]):,} bytes, longer than the {int(long[1]):,} DuckDB reads: no billing export "
        "writes one (line breaks lost in a copy, or not a CSV?); export the file again"
    )


def read_header(path: Path, skip: int = 0) -> str:
    """The file's first line, or the line after `skip` preamble lines."""
    with open_text(path) as f:
        for _ in range(skip):
            f.readline()
        return f.readline().rstrip("\r\n")


def _probing(from_clause: str) -> str:
    """The FROM clause to describe a file with. A CSV's reader sniffs a 4 MB first buffer instead of its
    default 32 MB: a .gz part is inflated as far as that buffer before its header is known, and 4 MB is
    twice DuckDB's longest line (2 MB). The load reads with the defaults."""
    if from_clause.startswith("read_csv(") and from_clause.endswith(")"):
        return from_clause[:-1] + ", buffer_size = 4194304)"
    return from_clause


def open_relation(
    con: duckdb.DuckDBPyConnection,
    file: SourceFile,
    path: Path,
    options: BillingOptions,
    names: list[str] | None = None,
    skip: int = 0,
) -> Relation:
    """Describe the file; raise RejectedFile when DuckDB cannot read it at all. `skip`: preamble lines
    before a CSV's header (an Azure EA usage data extract's)."""
    fmt = _format_of(file.local_path.name)
    params: dict[str, Any] = {"path": str(path)}
    repairs: list[str] = []
    size = text_size(path)
    if size == 0:
        raise RejectedFile(file.uri, "file is empty (0 bytes); a billing export has at least a header line")
    if fmt == "parquet" and not path.name.lower().endswith(".gz"):
        problem = parquet_problem(path)  # NUL bytes, not Parquet, or cut short: said with what to do
        if problem is not None:
            raise RejectedFile(file.uri, problem)
    if fmt != "parquet":
        # not text, or not the text it is named as (the NUL bytes past the first ones: BillingReader.load)
        found = text_problem(path, options.delimiter, full=False)
        if found is not None:
            raise RejectedFile(file.uri, found[0], line=found[1])
    if fmt == "json":
        reject_json_array(file, path)
    if fmt == "parquet":
        # hive_partitioning off: a `BILLING_PERIOD=2026-11` folder is not a column of the file (FOCUS kept
        # it in every Parquet line's x_extra, and the same file as CSV had no such column)
        from_clause = "read_parquet($path, file_row_number = true, hive_partitioning = false)"
        row_expr = "(file_row_number + 1)"
        numbered = f"(select *, file_row_number + 1 as _n from {from_clause})"  # noqa: S608 - identifiers only
    elif fmt == "json":
        # hive_partitioning off: a file reads the same in its `billing_period=...` folder and as the
        # decompressed copy in the cache (the probe opens the first, the load the second)
        from_clause = (
            "read_json($path, format = 'newline_delimited', records = true, sample_size = -1, "
            "hive_partitioning = false)"
        )
        row_expr = "row_number() over ()"
        numbered = f"(select *, row_number() over () as _n from {from_clause})"  # noqa: S608 - identifiers only
    else:
        header = read_header(path, skip)
        delim = options.delimiter or _sniff_delimiter(header)
        if delim != "," and not options.delimiter:
            repairs.append(
                f"read as {'tab' if delim == chr(9) else repr(delim)}-separated (sniffed from the header)"
            )
        nulls = ", ".join(quote_literal(s) for s in NULL_STRINGS)
        extra, header_opt = "", "header = true"
        if names:  # the file's own header line is replaced (skipped), not merely renamed
            params["names"] = names
            extra, header_opt = ", names = $names", "header = false, skip = 1"
        elif skip:
            params["skip"] = skip
            header_opt = "header = true, skip = $skip"
        params["delim"] = delim
        from_clause = (
            f"read_csv($path, {header_opt}, all_varchar = true, delim = $delim, quote = '\"', escape = '\"', "
            f"nullstr = [{nulls}], strict_mode = true, hive_partitioning = false{extra})"
        )
        small = size <= ROW_NUMBER_LIMIT
        row_expr = "row_number() over ()" if small else "null::bigint"
        numbered = f"(select *, row_number() over () as _n from {from_clause})"  # noqa: S608 - identifiers only
    try:
        described = con.execute(f"describe select * from {_probing(from_clause)}", params).fetchall()  # noqa: S608 - identifiers only, values are bound
    except duckdb.Error as exc:
        if fmt != "csv":
            raise RejectedFile(file.uri, f"cannot read: {duckdb_problem(exc)}") from None
        text = encoding_problem(path)
        if text is not None:
            raise RejectedFile(file.uri, text[0], line=text[1]) from None
        short = _short_rows(path, params.get("delim", ","), names, skip)
        if short is not None:
            # documented repair: every data row lacks the header's last field(s); they are read as empty
            header_n, row_n, missing = short
            lenient = "strict_mode = false, null_padding = true, parallel = false"
            repairs.append(
                f"the header has {header_n} fields but the data rows {row_n}: the missing last field(s) "
                f"{', '.join(missing)} read as empty"
            )
        else:
            # documented repair: a file DuckDB's strict dialect check refuses is read leniently, one thread
            lenient = "strict_mode = false, parallel = false"
            repairs.append(f"read leniently (DuckDB's strict CSV check said: {duckdb_problem(exc)[:120]})")
        from_clause = from_clause.replace("strict_mode = true", lenient)
        numbered = numbered.replace("strict_mode = true", lenient)
        try:
            described = con.execute(f"describe select * from {_probing(from_clause)}", params).fetchall()  # noqa: S608 - identifiers only, values are bound
        except duckdb.Error as exc2:
            problem = duckdb_problem(exc2)
            if "sniffing" in problem:  # DuckDB's sniffer found no consistent dialect: say what it is
                problem = (
                    f"cannot find the CSV dialect: the header is {_named(params.get('delim', ','))}-separated "
                    "but the lines after it do not split into its columns (set options.delimiter if the file "
                    "uses another delimiter)"
                )
                raise RejectedFile(file.uri, problem, line=1 + skip) from None
            raise RejectedFile(file.uri, f"cannot read: {worded(problem)}") from None
    types = {r[0]: r[1] for r in described if not (fmt == "parquet" and r[0] == "file_row_number")}
    if fmt == "csv" and len(types) == 1 and not names:
        only = next(iter(types))
        raise RejectedFile(
            file.uri,
            f"cannot find the delimiter: expected , ; tab or | (the header has a single column {only[:60]!r}; "
            "set options.delimiter if the file uses another one)",
            line=1 + skip,
        )
    return Relation(from_clause, types, params, fmt, row_expr, numbered, path, repairs, 1 + skip)
