-- schema version 8: billing content is loaded once across the warehouse, and money keeps the provider's
-- precision. The ledger names the original of a `duplicate` file (duplicate_of: a billing file with the same
-- bytes as one already loaded, in any source, name or period).
alter table ingest_files add column duplicate_of varchar;
-- Money is DECIMAL(38, 12): CUR states costs to 10 decimals, and rounding each line to 6 made a large bill's
-- sum drift from the file's. Existing values keep their digits; only loads from now on carry more. The
-- catalogue billing_columns never holds a row: it is dropped here and created again from sql/raw/ with
-- the new types (older warehouses may not have it yet). The optional money columns a source filled in
-- billing_lines (list_cost, contracted_cost, ...) may not exist, so a migration cannot name them: every
-- writable connection gives them billing_columns' type (pipelines/warehouse.py migrate()).
alter table ingest_files alter column billed_cost_sum type decimal(38, 12);
alter table ingest_files alter column effective_cost_sum type decimal(38, 12);
alter table ingest_files alter column file_billed_cost_sum type decimal(38, 12);
alter table ingest_files alter column file_effective_cost_sum type decimal(38, 12);
drop table if exists billing_columns;
alter table billing_lines alter column billed_cost type decimal(38, 12);
alter table billing_lines alter column effective_cost type decimal(38, 12);
