-- grain: one row per job line of one generic job CSV
-- depends_on: the relation `_src` (one row per job, typed), built by pipelines/ingest/readers/jobs_csv.py
-- Tags normalised; team/project from their own columns, else from tags (config tag aliases).
with tagged as (
    select
        *,
        normalize_tags(tags_json) as tags
    from _src
)

select
    job_id,
    $scheduler as scheduler,
    cluster,
    job_name,
    coalesce(run_id, tag_lookup(tags, ['run_id'])) as run_id,
    user,
    account,
    coalesce(team, tag_lookup(tags, $team_keys)) as team,
    coalesce(project, tag_lookup(tags, $project_keys)) as project,
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
