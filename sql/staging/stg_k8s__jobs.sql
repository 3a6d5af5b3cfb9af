-- grain: one row per GPU pod of one `kubectl get pods -o json` file
-- depends_on: the relation `_src` (one row per pod, typed), built by
--             pipelines/ingest/readers/k8s_pods.py
-- Tags are the pod labels (normalised keys); team/project from them (config tag aliases).
with tagged as (
    select
        *,
        normalize_tags(tags_json) as tags
    from _src
)

select
    job_id,
    'kubernetes' as scheduler,
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
