-- grain: one row per line of a training log: a step (or an interval of steps), a checkpoint save or a configuration
-- Written by the `train_log` reader (JSON lines or CSV with a column mapping); the `job_mfu` mart joins each
-- line to its job and measures MFU from the tokens between lines over the wall-clock time between them.
create table if not exists train_steps (
    ts timestamp not null,                -- UTC time the line was written (the end of its step or interval)
    host varchar,                         -- the host that wrote it (a column, else the source's `host` option)
    job_id varchar,                       -- the scheduler job it names (a column, else the `job_id` option)
    step bigint,                          -- the step (iteration) number the line ends at
    steps integer,                        -- steps since the previous line of the file (NULL: the first of a run)
    tokens double,                        -- tokens trained on since the previous line (the line's own work)
    tokens_from varchar,                  -- tokens_total | samples_total | tokens | samples | tokens_per_s
    step_s double,                        -- the log's own time per step in seconds (stalls may be left out)
    data_s double,                        -- seconds per step the log says it waited for input, when it says
    params double,                        -- the model's parameter count
    gpus integer,                         -- GPUs the run uses (a column or the `gpus` option), when known
    loss double,
    labels map(varchar, varchar),         -- the log's other columns, normalised keys
    source varchar not null,
    x_source_file varchar not null,
    x_file_id varchar not null,
    x_line bigint not null,               -- the line of the file (1 = the first line after a CSV header)
    event varchar default 'step',         -- step | checkpoint (a save the log reports) | config (the model's
                                          -- configuration as the log prints it)
    save_s double,                        -- checkpoint: seconds the save took, when the log says
    checkpoint_path varchar,              -- checkpoint: where it was saved, when the log says
    model varchar,                        -- config: the model's name or shape (layers, hidden size)
    global_batch double,                  -- config: samples per optimizer step over all GPUs
    seq_len double,                       -- the sequence length (a column, config line or the option)
    parallel varchar                      -- config: the parallel layout, e.g. tp=8,pp=4,cp=1,dp=16
);
