-- schema version 3: billing restatements and reconciliation. The ledger records which delivery (manifest
-- version: CUR assemblyId, CUR 2.0 executionId, Azure export run) a file came with, what the file itself
-- holds (rows and billed/effective sums counted from its own columns) and the billing currencies of its
-- lines; billing lines keep the provider's line item id.
alter table ingest_files add column delivery_id varchar;
alter table ingest_files add column file_rows bigint;
alter table ingest_files add column file_billed_cost_sum decimal(18, 6);
alter table ingest_files add column file_effective_cost_sum decimal(18, 6);
alter table ingest_files add column currencies varchar;
alter table billing_line_items add column x_line_item_id varchar;
