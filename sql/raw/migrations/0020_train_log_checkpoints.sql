-- Version 20: a training log's checkpoint saves and model configuration land in train_steps beside its
-- steps, so checkpoint cadence advice (ADV003) measures the write time δ from the log and a run's model
-- configuration (model, global batch, sequence length, parallel layout) is known. Existing rows are steps.
alter table train_steps add column if not exists event varchar default 'step';
alter table train_steps add column if not exists save_s double;
alter table train_steps add column if not exists checkpoint_path varchar;
alter table train_steps add column if not exists model varchar;
alter table train_steps add column if not exists global_batch double;
alter table train_steps add column if not exists seq_len double;
alter table train_steps add column if not exists parallel varchar;
