-- grain: one row
-- What a writable connect compares before skipping its schema check: the schema version, the recorded
-- digest(s) and billing_lines' stored columns (a load adds the columns a source fills, which then need their
-- comments and types from billing_columns). Fails on a file without these tables: then the check runs.
select
    (select max(version) from schema_version) as version,
    (select list(digest) from connect_digest) as digests,
    (select list(name || ' ' || type order by cid) from pragma_table_info('billing_lines')) as billing_lines
