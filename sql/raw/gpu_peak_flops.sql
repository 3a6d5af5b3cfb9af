-- grain: one row per GPU model (a built-in catalogue, pipelines/catalog/gpu_peak_flops.csv, reloaded by the
--   next writable connect after an edit)
-- Peak dense (not sparse) tensor FLOP/s per GPU model, each row citing its datasheet; MFU divides by it.
create table if not exists gpu_peak_flops (
    gpu_model varchar primary key,
    aliases varchar[] not null,           -- other names of the model (lower case), as telemetry or a bill spells them
    vendor varchar not null,
    peak_dense_tflops double not null,    -- dense BF16 (FP16 where the GPU has no BF16) tensor TFLOP/s per GPU
    precision varchar not null,
    memory_gib double not null,
    source varchar not null,              -- the datasheet's figure, in words
    source_url varchar not null
);
