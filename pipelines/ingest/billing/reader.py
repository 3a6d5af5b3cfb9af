"""The base of the billing readers (`BillingReader`): a delivery's planning and decompression, then each
file probed before the transaction and loaded in one pass inside it (its staging SQL, tag sets, the
insert, checks on what landed, reconciliation). A subclass names its staging SQL and maps a file's
columns onto it (`spec`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.billing.decompress import Prepared, gzip_problem, io_problem, nul_free
from pipelines.ingest.billing.deliveries import Delivery, plan_deliveries
from pipelines.ingest.billing.diagnose import LoadFailed
from pipelines.ingest.billing.landed import check_landed
from pipelines.ingest.billing.lines import Spec, insert_lines
from pipelines.ingest.billing.reconcile import (
    SAMPLE_LINES,
    FileSums,
    file_sums,
    known_signature,
    observe_end,
    observe_start,
    observed_cte,
    observed_tags,
    observer_function,
    reconciled,
    sample_sets,
    sets_and_sums,
    sets_signature,
)
from pipelines.ingest.billing.relation import Relation, open_relation
from pipelines.ingest.billing.sql_expr import file_params, src_cte
from pipelines.ingest.billing.tag_sets import store_file_tag_sets, store_tag_sets, tag_bind
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import DeliveryReader, LoadContext, LoadResult
from pipelines.ingest.sniff import nul_problem, open_bytes, refusal
from pipelines.sources.options import BillingOptions
from pipelines.warehouse import one, sql_text


class BillingReader(DeliveryReader):
    """Base of the billing readers: subclasses set staging/source_format and implement spec()."""

    staging = ""
    tag_sets = "stg_billing__tag_sets"  # the file's distinct tag sets (sql/staging)
    tag_sets_derived = False  # True when a set's raw text is derived from what its hash is of (GCP)
    source_format = ""
    # the date/time forms the format's exports write (docs/billing.md), as rejections name them
    timestamp_forms = (
        "an ISO 8601 date/time (UTC: 2024-09-01T00:00:00Z, 2024-09-01T00:00:00.000Z or 2024-09-01 00:00:00)"
    )
    date_forms = "a date (MM/DD/YYYY with a four-digit year, or YYYY-MM-DD)"

    # -- planning (the ingest loop calls these) ------------------------------------------------------
    def plan(
        self, files: list[SourceFile], read_text: Callable[[SourceFile], str], options: BillingOptions
    ) -> tuple[list[Delivery], list[str]]:
        return plan_deliveries(files, read_text, options)

    def prepare(
        self, files: list[SourceFile], workdir: Path, threads: int = 2, bounded: bool = False
    ) -> Prepared:
        """Start decompressing the delivery's .gz text files in the background (see Prepared). With a
        `memory_limit` set (`bounded`) they go into the run's cache on disk: two inflated parts held in
        memory were 0.8 GB (FOCUS) to 1.6 GB (CUR 2.0) on top of the limit, where the page cache of a file
        on disk is given back on demand. Without one, a part that fits half the free memory inflates into
        memory, which is faster (docs/scaling.md)."""
        return Prepared(files, workdir, threads, in_memory=False if bounded else None)

    # -- loading ---------------------------------------------------------------------------------------
    def options(self, ctx: LoadContext) -> BillingOptions:
        return ctx.source.options_as(BillingOptions)

    def spec(self, con: duckdb.DuckDBPyConnection, rel: Relation, file: SourceFile, ctx: LoadContext) -> Spec:
        raise NotImplementedError

    def relation(
        self, con: duckdb.DuckDBPyConnection, file: SourceFile, path: Path, ctx: LoadContext
    ) -> Relation:
        return open_relation(con, file, path, self.options(ctx))

    def probe(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> Relation:
        """Open the file and check its header (called before the transaction: a failed statement would
        abort it). A .gz is read as it is (DuckDB inflates only the sample it sniffs); when it cannot be
        opened, a damaged gzip stream is named as such. Raises RejectedFile."""
        path = file.local_path
        try:
            rel = self.relation(con, file, path, ctx)
        except Exception as exc:  # any reader error is this file's rejection (sniff.refusal)
            damaged = gzip_problem(path) if path.name.lower().endswith(".gz") else None
            if damaged is not None:
                raise RejectedFile(file.uri, f"cannot read: {io_problem(damaged)}") from None
            raise refusal(file.uri, exc, self.source_format) from None
        self.spec(con, rel, file, ctx)  # header problems (missing columns) surface here
        return rel

    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        rel = ctx.probe if isinstance(ctx.probe, Relation) else self.probe(con, file, ctx)
        if isinstance(ctx.prepared, Exception):
            raise RejectedFile(file.uri, f"cannot read: {io_problem(ctx.prepared)}")
        if ctx.prepared is not None:  # DuckDB reads the decompressed copy in parallel; the .gz on one thread
            rel = rel.at(ctx.prepared)
        # the probe sniffed the first bytes; NUL bytes further in are found here, or were looked for as
        # the part inflated
        if rel.fmt != "parquet" and not nul_free(rel.path):
            with open_bytes(rel.path) as text:
                nul = nul_problem(text)
            if nul is not None:
                raise RejectedFile(file.uri, nul[0], line=nul[1])
        spec = self._dated(self.spec(con, rel, file, ctx), ctx)
        cte = src_cte(rel.from_clause, rel.row_expr, spec.columns)
        stg = sql_text("staging", self.staging)
        bind = {
            **rel.params,
            **tag_bind(con, ctx.config.tags),
            **spec.bind,
            "source_name": ctx.source.name,
            "source_file": file.uri,
            "file_id": ctx.file_id,
            "loaded_at": ctx.loaded_at,
            "default_currency": ctx.config.currency,
            "source_format": self.source_format,
        }
        con.execute("set preserve_insertion_order = false")  # rows keep x_source_row; order is not needed
        file_side = None
        try:
            sample = self._lookups(con, rel, spec, cte)
            dedupe, observer, new_period, signature = self._observation(
                con, rel, spec, ctx, file, cte, stg, sample
            )
            bind["extra_per_line"] = not dedupe
            insert_cte = cte
            if observer is not None:  # the x_extra sets are known: the insert counts the file's lines itself
                insert_cte = observed_cte(cte, spec, new_period, observer_function(observer))
                bind["observe_token"] = observer
            elif self.presets and not self._sampled(rel):
                file_side = self._presets(con, rel, spec, cte, dedupe, signature)
            elif not self.presets:
                sets = f"{cte}{sql_text('staging', self.tag_sets)}"
                sets_params = file_params(rel, spec, sets)
                store_tag_sets(con, sets, sets_params, bind, file.uri, self.tag_sets_derived)
            used = {k: v for k, v in bind.items() if f"${k}" in insert_cte or f"${k}" in stg}
            query = f"{insert_cte}select * from (\n{stg}\n)"  # noqa: S608 - identifiers only, values are bound
            profile = insert_lines(con, query, used, spec.absent, profile=observer is not None)
            raws = None  # the file's distinct tag texts, when its own scan saw every line's
            if observer is not None:
                raws = observed_tags(observer)
                file_side = observe_end(observer, profile)
                raws = raws if file_side is not None else None
            if self.presets:
                store_file_tag_sets(
                    con, rel, spec, cte, self.tag_sets, bind, file.uri, ctx.file_id, raws, self.looks_up_tags
                )
        except duckdb.Error as exc:
            # the transaction is aborted now: the loop rolls back, then asks `explain` for the bad row
            observe_end(bind.get("observe_token"), None)
            raise LoadFailed(rel, spec, file, exc) from None
        except RejectedFile:  # a tag set clash: the transaction is still usable, the setting is put back
            observe_end(bind.get("observe_token"), None)
            con.execute("reset preserve_insertion_order")
            raise
        con.execute("reset preserve_insertion_order")
        # the same staging over the numbered file: run only to name data rows in an error message, when
        # the insert could not number them (CSV files over ROW_NUMBER_LIMIT)
        numbered = f"{src_cte(rel.numbered_from, '_n', spec.columns)}select * from (\n{stg}\n)"  # noqa: S608 - identifiers only
        staged = (numbered, {k: v for k, v in bind.items() if f"${k}" in numbered})
        result = self._after(con, rel, spec, file, ctx, file_side, staged)
        result.warnings.extend(rel.repairs)
        return result

    def _lookups(self, con: duckdb.DuckDBPyConnection, rel: Relation, spec: Spec, cte: str) -> str | None:
        """Before the insert: fill what the staging SQL looks values up in (FOCUS: lookups.py). Returns the
        temp table of the file's first lines it read them from (with `_x_extra`), for the x_extra sample
        to read instead of the file, or None."""
        return None

    def _dated(self, spec: Spec, ctx: LoadContext) -> Spec:
        """The spec with the source's date form bound (`$date_format`: the staging SQL's billing_ts and
        billing_date read only that form when it is set) and named in the date checks' messages."""
        fmt = self.options(ctx).date_format
        spec.bind["date_format"] = fmt
        for check in spec.checks:
            if check.kind in ("timestamp", "date"):
                own = self.timestamp_forms if check.kind == "timestamp" else self.date_forms
                check.expected = f"a date/time in options.date_format {fmt!r}" if fmt else own
        return spec

    # readers whose staging SQL reads the file's distinct x_extra sets (with dedupe_extra) from the temp
    # table `_billing_sets` that one aggregate pass over the file fills, together with the file-side
    # reconciliation sums. Their lines' tag set ids are tag_set_id() (MD5) of the raw tags, and the sets
    # are looked up after the insert (store_file_tag_sets): the file is read a third time, for its tags
    # alone, only when it has sets the warehouse does not know yet
    presets = False
    dedupe_extra = False
    # with dedupe_extra: decide per file from its first lines (`_extra_repeats`), for readers whose
    # x_extra columns may hold a value per line (FOCUS's x_ columns: Azure's x_BilledCostInUsd), as
    # grouping a file by a per-line value slows its whole load down; the staging SQL then builds x_extra
    # per line (`$extra_per_line`)
    sample_extra = False
    # whether the staging SQL looks a line's tag set id up in `_billing_tag_ids` (FOCUS: lookups.py), whose
    # texts then stand for a file's own when they cover its ids (store_file_tag_sets)
    looks_up_tags = False
    # what lines are grouped and joined back by: the x_extra STRUCT itself, not its hash() (not injective:
    # an empty MAP or LIST hashes like NULL, values shifting between two LIST fields hash alike, and text
    # collides as macro_tag_set_id.sql says)
    extra_key = "_x_extra"

    def _sampled(self, rel: Relation) -> bool:
        """Whether the file's x_extra sets come from its first lines (sample_sets) instead of a pass over
        the whole file: CSV files of readers that sample them anyway (`sample_extra`), as a pass would
        tokenise the file a second time; a Parquet pass reads just the few columns it needs."""
        return self.presets and self.dedupe_extra and self.sample_extra and rel.fmt == "csv"

    def _observation(
        self,
        con: duckdb.DuckDBPyConnection,
        rel: Relation,
        spec: Spec,
        ctx: LoadContext,
        file: SourceFile,
        cte: str,
        stg: str,
        sample: str | None = None,
    ) -> tuple[bool, int | None, bool, str | None]:
        """Before the insert: (whether x_extra is built per distinct combination, the token when the
        insert's own scan counts the file's lines, whether it also keeps their tag texts, the signature
        the pass keeps its sets under when there is one (sets_signature)). The scan is
        observed for CSV files only (a pass over Parquet reads just the few columns it sums, which costs
        less than observing the insert's scan does) once the x_extra sets are made: from the file's first
        lines (`_sampled`), else by an earlier file's pass. The tag texts are kept for the first file of
        a billing period, whose tag sets the warehouse mostly lacks (store_file_tag_sets then does not
        read the file again). `sample`: the file's first lines already read (`_lookups`)."""
        signature = sets_signature(rel, spec, ctx, file) if self.presets and rel.fmt == "csv" else None
        if len(re.findall(r"\b_src\b", re.sub(r"--[^\n]*", "", stg))) != 1:
            signature = None  # read twice, `_src` could be observed twice (see reconcile.py)
        if self._sampled(rel):
            new_period = signature is not None and known_signature(con) != signature
            dedupe = sample_sets(con, rel, spec, cte, self.extra_key, signature, sample)
            observer = observe_start(con, tags=new_period) if signature is not None else None
            return dedupe, observer, new_period and observer is not None, signature
        dedupe = self.dedupe_extra and (
            not self.sample_extra or self._extra_repeats(con, rel, spec, cte, sample)
        )
        if not (self.presets and dedupe and rel.fmt == "csv"):
            return dedupe, None, False, None
        if signature is not None and known_signature(con) == signature:
            return dedupe, observe_start(con), False, signature
        return dedupe, None, False, signature

    def _extra_repeats(
        self, con: duckdb.DuckDBPyConnection, rel: Relation, spec: Spec, cte: str, sample: str | None = None
    ) -> bool:
        """Whether the file's first 10,000 lines hold at most one x_extra combination per 10 lines (read
        from `sample` when those lines are there already)."""
        lines = sample or f"(select _x_extra from _src limit {SAMPLE_LINES})"  # noqa: S608 - identifiers only
        sql = f"{'' if sample else cte}select count(*), count(distinct hash(_x_extra)) from {lines}"  # noqa: S608 - identifiers only
        got = one(con, sql, file_params(rel, spec, sql))
        assert got is not None
        return got[1] * 10 <= max(got[0], 1)

    def _presets(
        self,
        con: duckdb.DuckDBPyConnection,
        rel: Relation,
        spec: Spec,
        cte: str,
        dedupe: bool,
        signature: str | None = None,
    ) -> FileSums:
        """The pass over the file before the insert: its x_extra sets and its own rows and sums."""
        # NULL of the key's type when x_extra is built per line (the staging SQL's join still binds)
        extra_h = (
            (self.extra_key if dedupe else f"case when false then {self.extra_key} end")
            if self.dedupe_extra
            else "null::ubigint"
        )
        extra_v = "any_value(_x_extra)" if dedupe else "null"
        return sets_and_sums(con, rel, spec, cte, extra_h, extra_v, signature)

    # -- after the insert: checks on what landed, then reconciliation with the file ---------------------
    def _after(
        self,
        con: duckdb.DuckDBPyConnection,
        rel: Relation,
        spec: Spec,
        file: SourceFile,
        ctx: LoadContext,
        file_side: FileSums | None = None,
        staged: tuple[str, dict[str, Any]] | None = None,
    ) -> LoadResult:
        landed = check_landed(con, rel, spec, file, ctx.file_id, staged, self.options(ctx).max_period_skew)
        if file_side is None:
            file_side = self._file_sums(con, rel, spec, file)
        return reconciled(file, landed, file_side)

    def _file_sums(
        self, con: duckdb.DuckDBPyConnection, rel: Relation, spec: Spec, file: SourceFile
    ) -> FileSums:
        return file_sums(con, rel, spec, file)
