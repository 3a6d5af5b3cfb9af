-- schema version 4: billing lines are stored in `billing_lines`, read through the view `billing_line_items`
-- (sql/raw/billing_line_items.sql; the view and `billing_columns` are created on connect like any new
-- object). The per-file lineage moves to the ledger it already duplicated; an upgraded warehouse keeps
-- every other column it had (a new one stores only the columns its sources fill).
alter table billing_line_items rename to billing_lines;
alter table billing_lines drop column x_source_name;
alter table billing_lines drop column x_source_format;
alter table billing_lines drop column x_source_file;
alter table billing_lines drop column x_loaded_at;
