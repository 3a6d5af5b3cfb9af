-- grain: one row per source line item
-- columns_from: billing_columns
-- Where billing_line_items' rows are stored (query the view `billing_line_items`, not this table). A
-- column of `billing_columns` is stored here only once a source fills it: the billing readers add the
-- columns their staging SQL produces before their first insert (ALTER TABLE ... ADD COLUMN), so a
-- warehouse of AWS bills never stores the FOCUS columns AWS cannot fill. DuckDB spends about as long
-- writing an all-NULL column as a filled one, and the per-file lineage (source, format, uri, load time)
-- lives once per file in `ingest_files` instead of once per line.
create table if not exists billing_lines (
    billed_cost decimal(38, 12) not null,  -- invoiced cost (see billing_columns)
    billing_currency varchar not null,    -- ISO 4217 currency of the line's costs
    charge_period_end timestamp not null,  -- UTC, exclusive end of the time the charge covers
    charge_period_start timestamp not null,  -- UTC, start of the time the charge covers
    effective_cost decimal(38, 12) not null,  -- amortised cost after all discounts
    x_file_id varchar not null,           -- the file in the ingestion ledger (ingest_files.file_id)
    x_source_row bigint,                  -- 1-based data row in the source file
    x_billing_period varchar              -- YYYY-MM of billing_period_start (partition key)
);
