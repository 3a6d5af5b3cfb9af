-- grain: one row per configured checkpoint pattern or dataset root, in the order they are tried
-- depends_on: storage_patterns
-- Handed to Spark (the `storage_patterns` view of sql/spark/marts/storage_objects_current.sql): checkpoint
-- patterns first, each kind in the config's order, as the DuckDB mart lists them (`ord` keeps that order).
select
    row_number() over (order by kind = 'dataset', position)::integer as ord,
    kind,
    position,
    store,
    prefix,
    segments,
    open_ended,
    project_idx,
    run_idx,
    step_idx,
    metric_idx,
    metric_name,
    dataset_idx
from storage_patterns
order by ord
