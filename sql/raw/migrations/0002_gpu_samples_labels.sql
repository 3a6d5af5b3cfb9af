-- schema version 2: gpu_samples carries what DCGM and Kubernetes telemetry says about a sample's owner
-- (pod, namespace, container, MIG instance, the scheduler job DCGM's hpc_job mapping names) and the
-- graphics-engine activity ratio; other labels are kept in a map.
alter table gpu_samples add column pod varchar;
alter table gpu_samples add column namespace varchar;
alter table gpu_samples add column container varchar;
alter table gpu_samples add column mig_profile varchar;
alter table gpu_samples add column mig_instance_id varchar;
alter table gpu_samples add column job_id varchar;
alter table gpu_samples add column gr_engine_active double;
alter table gpu_samples add column labels map(varchar, varchar);
