-- grain: one row per sample day whose raw samples the retention dropped
-- depends_on: gpu_samples_pruned
-- The days the roll-up keeps as they are: never rolled up again, never removed.
select day from gpu_samples_pruned
