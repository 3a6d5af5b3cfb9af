-- grain: one row per cloud instance type with GPUs (a built-in catalogue, reloaded by
--   the next writable connect after an edit)
create table if not exists gpu_instance_types (
    instance_type varchar primary key,
    provider varchar not null,
    gpu_model varchar not null,
    gpu_count integer not null,
    gpu_memory_gib double not null
);
