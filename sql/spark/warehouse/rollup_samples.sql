-- grain: one row per GPU per sample of the days to roll up, from the files Spark does not read itself
-- depends_on: gpu_samples
-- params: $days, $read (the file ids Spark reads where they lie)
-- Handed to Spark as Parquet (pipelines/transform/spark/handover.py): the samples of telemetry kinds Spark
-- has no reader for (DCGM, Prometheus JSON, metrics CSV, dmon), with the columns the roll-up reads; the
-- labels as DuckDB writes a MAP as text, which orders a GPU without a UUID or an index among its host's
-- others.
select
    ts,
    host,
    instance_id,
    gpu_uuid,
    gpu_index,
    gpu_model,
    util_pct,
    mem_util_pct,
    mem_used_mib,
    mem_total_mib,
    power_w,
    power_limit_w,
    sm_active,
    gr_engine_active,
    tensor_active,
    pod,
    namespace,
    container,
    mig_profile,
    mig_instance_id,
    job_id,
    labels::varchar as labels_text,
    x_source_file,
    x_file_id,
    x_sample_date
from gpu_samples
where list_contains($days, x_sample_date) and not list_contains($read, x_file_id)
