-- grain: one row per Slurm allocation of one sacct file (steps already folded in)
-- depends_on: the relation `_src` (one row per allocation, typed), built by
--             pipelines/ingest/readers/slurm_sacct.py
-- Tags from the job's Comment (normalised keys); team/project from those tags, else the reader's
-- fallback (Account / WCKey by the source's options).
with tagged as (
    select
        *,
        normalize_tags(tags_json) as tags
    from _src
)

select
    job_id,
    'slurm' as scheduler,
    cluster,
    job_name,
    coalesce(run_id, tag_lookup(tags, ['run_id'])) as run_id,
    user,
    account,
    coalesce(tag_lookup(tags, $team_keys), team) as team,
    coalesce(tag_lookup(tags, $project_keys), project) as project,
    partition,
    state,
    state_raw,
    exit_code,
    submitted_at,
    started_at,
    ended_at,
    gpus_requested,
    gpu_type,
    nodes,
    hosts,
    instance_ids,
    gpu_indices,
    tags,
    $source_name as source,
    $source_file as x_source_file,
    $file_id as x_file_id
from tagged
