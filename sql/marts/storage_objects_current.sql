-- grain: one row per object (version) in the newest snapshot of each bucket or file-system root
-- depends_on: storage_objects, storage_snapshots, storage_patterns
-- The newest snapshot of a (store, bucket) replaces older ones, whichever reader took it (inventory, listing
-- or scan); delete markers are left out. Lineage from the config's patterns (storage_patterns): an object
-- under a `checkpoints:` pattern is a checkpoint file of that run (the first matching pattern wins);
-- otherwise an object under a `datasets:` root is a file of that dataset folder. Paths are matched on their
-- first segments (as deep as the deepest pattern) and how many segments they have, so each distinct head
-- (a run's or a dataset's folder) is matched once, not each file.
-- etag_parts: the part count of a multipart ETag (NULL for a single-part upload)
-- role: checkpoint | dataset | NULL (under no configured pattern)
with latest as (
    select
        arg_max(x_file_id, (inventory_at, x_file_id)) as x_file_id,
        store,
        bucket,
        arg_max(inventory_at, (inventory_at, x_file_id)) as inventory_at,
        arg_max(source, (inventory_at, x_file_id)) as source,
        arg_max(region_id, (inventory_at, x_file_id)) as region_id,
        arg_max(resource_id, (inventory_at, x_file_id)) as resource_id
    from storage_snapshots
    group by store, bucket
),

patterns as (
    select
        *,
        -- '/'-separated parts of a path the pattern looks at (its prefix's and its segments)
        len(string_split(prefix, '/')) - 1 + len(segments) as depth,
        kind = 'dataset' as is_dataset
    from storage_patterns
),

pattern_list as (
    select
        coalesce(list(p order by p.is_dataset, p.position), []) as all_patterns,
        coalesce(max(p.depth), 0) as head_parts
    from patterns as p
),

objects as not materialized (
    select
        o.* exclude (is_delete_marker, x_file_id),
        l.store,
        l.inventory_at,
        l.source,
        l.region_id,
        l.resource_id,
        case when l.store = 's3' then 's3://' || o.bucket || '/' else o.bucket || '/' end || o.key as uri,
        string_split(uri, '/') as uri_parts,
        -- the path's first segments (as many as the deepest pattern looks at) and how many there are,
        -- counting at most one more: all that matching needs, shared by every file of a folder
        array_to_string(uri_parts[1:(select head_parts from pattern_list)], '/') as head,
        least(len(uri_parts), (select head_parts from pattern_list) + 1) as head_len
    from storage_objects as o
    inner join latest as l on l.x_file_id = o.x_file_id
    where not coalesce(o.is_delete_marker, false)
),

heads as (
    select distinct store, head, head_len
    from objects
    where (select len(all_patterns) from pattern_list) > 0
),

candidates as (
    select
        h.store,
        h.head,
        h.head_len,
        list_transform(
            pl.all_patterns,
            lambda p: {
                'p': p,
                'parts': case
                    when p.store = h.store and starts_with(h.head || '/', p.prefix)
                        then string_split(substr(h.head, length(p.prefix) + 1), '/')
                end,
                -- segments after the pattern's prefix in the whole path (capped one above the head)
                'n': h.head_len - (len(string_split(p.prefix, '/')) - 1)
            }
        ) as tried
    from heads as h
    cross join pattern_list as pl
),

head_matches as (
    select
        store,
        head,
        head_len,
        list_filter(
            tried,
            lambda c: c.parts is not null
            and (
                case
                    when c.p.open_ended then c.n > len(c.p.segments)
                    else c.n = len(c.p.segments)
                end
            )
            and coalesce(
                list_bool_and(
                    list_transform(
                        c.p.segments,
                        lambda s, i: case
                            when s.exact then c.parts[i] = s.lit_prefix
                            else length(c.parts[i]) > length(s.lit_prefix) + length(s.lit_suffix)
                                and starts_with(c.parts[i], s.lit_prefix)
                                and ends_with(c.parts[i], s.lit_suffix)
                        end
                    )
                ),
                true
            )
        )[1] as m
    from candidates
),

lineage as (
    select
        store,
        head,
        head_len,
        m.p.kind as role,
        m.p.prefix || array_to_string(m.parts[1:coalesce(m.p.run_idx, m.p.dataset_idx)], '/') || '/'
            as folder,
        -- a placeholder's value: its segment without the literal text around it
        case when m.p.project_idx is not null then
            m.parts[m.p.project_idx][
                length(m.p.segments[m.p.project_idx].lit_prefix) + 1:
                length(m.parts[m.p.project_idx]) - length(m.p.segments[m.p.project_idx].lit_suffix)
            ]
        end as ckpt_project,
        case when m.p.run_idx is not null then
            m.parts[m.p.run_idx][
                length(m.p.segments[m.p.run_idx].lit_prefix) + 1:
                length(m.parts[m.p.run_idx]) - length(m.p.segments[m.p.run_idx].lit_suffix)
            ]
        end as run_id,
        case when m.p.step_idx is not null then
            try_cast(m.parts[m.p.step_idx][
                length(m.p.segments[m.p.step_idx].lit_prefix) + 1:
                length(m.parts[m.p.step_idx]) - length(m.p.segments[m.p.step_idx].lit_suffix)
            ] as bigint)
        end as pattern_step,
        case when m.p.metric_idx is not null then
            try_cast(m.parts[m.p.metric_idx][
                length(m.p.segments[m.p.metric_idx].lit_prefix) + 1:
                length(m.parts[m.p.metric_idx]) - length(m.p.segments[m.p.metric_idx].lit_suffix)
            ] as double)
        end as metric,
        m.p.metric_name as metric_name,
        m.p.step_idx is not null as step_in_pattern
    from head_matches
    where m is not null
),

classified as (
    select
        o.* exclude (uri_parts, head, head_len),
        l.role,
        l.ckpt_project,
        l.run_id,
        case when l.role = 'checkpoint' then l.folder end as run_prefix,
        case when l.role = 'dataset' then l.folder end as dataset,
        l.metric,
        l.metric_name,
        l.step_in_pattern,
        l.pattern_step
    from objects as o
    left join lineage as l on l.store = o.store and l.head = o.head and l.head_len = o.head_len
)

select
    store,
    bucket,
    key,
    version_id,
    is_latest,
    size_bytes,
    last_modified,
    etag,
    try_cast(nullif(regexp_extract(etag, '-([0-9]+)$', 1), '') as integer) as etag_parts,
    storage_class,
    encryption_status,
    checksum_algorithm,
    checksum_type,
    checksum,
    region_id,
    resource_id,
    inventory_date,
    inventory_at,
    source,
    role,
    ckpt_project,
    run_id,
    run_prefix,
    -- the step: from the pattern's {step}, else the first step-like number below the run's folder
    case
        when role <> 'checkpoint' then null
        when step_in_pattern then pattern_step
        else coalesce(
            try_cast(nullif(regexp_extract(
                substr(uri, length(run_prefix) + 1),
                '(?i)(?:global_step|step|iteration|iter)[-_ =]*([0-9]+)', 1
            ), '') as bigint),
            try_cast(nullif(regexp_extract(
                substr(uri, length(run_prefix) + 1), '(?i)(?:checkpoint|ckpt)[-_ =]*([0-9]+)', 1
            ), '') as bigint),
            try_cast(nullif(regexp_extract(
                substr(uri, length(run_prefix) + 1), '(?i)epoch[-_ =]*([0-9]+)', 1
            ), '') as bigint)
        )
    end as step,
    metric,
    metric_name,
    dataset
from classified
