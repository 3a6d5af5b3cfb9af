-- grain: one row per object x part the transform's records name
-- depends_on: int_incremental_days, int_incremental_files, int_mart_inputs
-- What the transform recorded building in the warehouse (pipelines/warehouse.py, publish): each
-- day or month of a table kept up to date by day or month, each file of one kept by file, the inputs of each
-- mart built in full; a part written again carries a new built_at, so its token changes. part: the day (or
-- month) for int_incremental_days, 'files' and 'inputs' for the others.
select object, cast(day as varchar) as part, hash(concat_ws('|', fingerprint, built_at)) as token
from int_incremental_days
union all
select object, 'files', hash(string_agg(concat_ws('|', file_id, fingerprint, built_at), ',' order by file_id))
from int_incremental_files
group by object
union all
select mart, 'inputs', hash(concat_ws('|', fingerprint, built_at))
from int_mart_inputs
