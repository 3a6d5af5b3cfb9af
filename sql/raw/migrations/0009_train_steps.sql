-- schema version 9: training throughput logs land in train_steps (the `train_log` source kind), and the
-- peak dense FLOP/s catalogue is a table the MFU mart reads. Both are new tables: nothing existing changes.
create table if not exists train_steps (
    ts timestamp not null,
    host varchar,
    job_id varchar,
    step bigint,
    steps integer,
    tokens double,
    tokens_from varchar,
    step_s double,
    data_s double,
    params double,
    gpus integer,
    loss double,
    labels map(varchar, varchar),
    source varchar not null,
    x_source_file varchar not null,
    x_file_id varchar not null,
    x_line bigint not null
);
create table if not exists gpu_peak_flops (
    gpu_model varchar primary key,
    aliases varchar[] not null,
    vendor varchar not null,
    peak_dense_tflops double not null,
    precision varchar not null,
    memory_gib double not null,
    source varchar not null,
    source_url varchar not null
);
