-- grain: one row per distinct (resource labels, project labels) pair of one Google Cloud billing export file
-- depends_on: the file relation `_src` (`_labels_raw`/`_project_labels_raw` labels as JSON arrays or
--             Python-repr text), built by pipelines/ingest/readers/gcp.py
-- Resource labels win over project labels on the same key AFTER normalisation (a resource `Team=nlp`
-- beats a project `team=proj-team`): each side is normalised on its own, then the resource's map is laid
-- over the project's. The raw text keeps both sides' raw keys (the resource's value on an identical raw key).
select
    x_tag_set,
    nullif(json_merge_patch(coalesce(project_raw, '{}'), coalesce(resource_raw, '{}'))::varchar, '{}') as raw,
    -- the same from the file's other labels with this id (equal to raw unless two pairs collide)
    case
        when resource_raw is not distinct from resource_other and project_raw is not distinct from project_other
            then nullif(json_merge_patch(coalesce(project_raw, '{}'), coalesce(resource_raw, '{}'))::varchar, '{}')
        else coalesce(resource_other, '') || ' ' || coalesce(project_other, '')
    end as raw_other,
    case when cardinality(merged) > 0 then merged end as tags
from (
    select
        x_tag_set,
        resource_raw,
        project_raw,
        resource_other,
        project_other,
        map_concat(
            coalesce(normalize_tags(project_raw), map()::map(varchar, varchar)),
            coalesce(normalize_tags(resource_raw), map()::map(varchar, varchar))
        ) as merged
    from (
        select
            tag_set_id([to_json(_labels_raw)::varchar, to_json(_project_labels_raw)::varchar]) as x_tag_set,
            gcp_labels_json(min(_labels_raw)) as resource_raw,
            gcp_labels_json(min(_project_labels_raw)) as project_raw,
            gcp_labels_json(max(_labels_raw)) as resource_other,
            gcp_labels_json(max(_project_labels_raw)) as project_other
        from _src
        where _labels_raw is not null or _project_labels_raw is not null
        group by 1
    )
)
